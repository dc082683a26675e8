/*
 * shquote.c — one shell word for any string (see shquote.h). Single quotes
 * are the only quoting in which nothing is special — not $, `, \, ! or a
 * newline — so everything else can stay as it is.
 */
#include "util/shquote.h"

#include <string.h>

void shquote(FILE *f, const char *s)
{
	static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				   "0123456789_@%+=:,./-";
	if (*s && strspn(s, safe) == strlen(s)) {
		fputs(s, f);
		return;
	}
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}
