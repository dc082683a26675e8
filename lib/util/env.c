/*
 * env.c — see env.h.
 */
#include "util/env.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* does "NAME=value" e have the name of "NAME=..." or "NAME=" n? */
static bool same_name(const char *e, const char *n)
{
	size_t k = strcspn(n, "=");
	return strncmp(e, n, k) == 0 && e[k] == '=';
}

char **env_with(char *const *base, const char *const *drop, char *const *set)
{
	size_t nb = 0, ns = 0;
	while (base && base[nb])
		nb++;
	while (set && set[ns])
		ns++;
	char **v = calloc(nb + ns + 1, sizeof *v);
	if (!v)
		return NULL;
	size_t m = 0;
	for (size_t i = 0; i < nb; i++) {
		bool gone = false;
		for (size_t k = 0; drop && drop[k] && !gone; k++)
			gone = same_name(base[i], drop[k]);
		for (size_t k = 0; k < ns && !gone; k++)
			gone = same_name(base[i], set[k]);
		if (!gone)
			v[m++] = base[i];
	}
	for (size_t k = 0; k < ns; k++)
		v[m++] = set[k];
	v[m] = NULL;
	return v;
}
