/*
 * grow.c — room for one more element in a doubling array (grow.h).
 */
#include "util/grow.h"

#include <stdint.h>
#include <stdlib.h>

void *grow(void *v, size_t *cap, size_t n, size_t size, size_t first)
{
	if (n < *cap)
		return v;
	size_t c = *cap ? *cap * 2 : first;
	if (!size || c > SIZE_MAX / size)
		return NULL;
	void *p = realloc(v, c * size);
	if (p)
		*cap = c;
	return p;
}
