/*
 * env.h — a child's environment made from ours without touching ours (a
 * library never calls setenv): the entries of a base array, less some
 * names, plus new "NAME=value" strings.
 */
#ifndef GPUCTL_LIB_ENV_H
#define GPUCTL_LIB_ENV_H

/*
 * A new NULL-terminated array: base's entries (borrowed) except those
 * whose name is in drop ("NAME=" prefixes, NULL-terminated; NULL: none) or
 * is set by an entry of set, then set's entries (borrowed, NULL-terminated;
 * NULL: none). Free only the array. NULL when out of memory.
 */
char **env_with(char *const *base, const char *const *drop, char *const *set);

#endif
