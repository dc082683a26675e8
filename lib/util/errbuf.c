/*
 * errbuf.c — see errbuf.h.
 */
#include "util/errbuf.h"

#include <stdarg.h>
#include <stdio.h>

void errbuf_set(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void errbuf_log(void (*log)(void *arg, const char *line), void *arg, const char *fmt, ...)
{
	if (!log)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	log(arg, line);
}
