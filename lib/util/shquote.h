/*
 * shquote.h — write a string so that a POSIX shell reads it back as one
 * word, byte for byte: as it is when it holds only characters no shell
 * treats specially, else in single quotes (a quote inside as '\'').
 * Used for --dry-run output and for generated batch scripts.
 */
#ifndef GPUCTL_LIB_SHQUOTE_H
#define GPUCTL_LIB_SHQUOTE_H
#include <stdio.h>

/* Write s (borrowed) to f as one shell word. */
void shquote(FILE *f, const char *s);
#endif
