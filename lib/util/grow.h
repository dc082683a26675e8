/*
 * grow.h — room for one more element in an array that doubles: the one way
 * lib/, the daemon and the CLI grow their lists of n elements with room for
 * *cap.
 */
#ifndef GPUCTL_LIB_GROW_H
#define GPUCTL_LIB_GROW_H

#include <stddef.h>

/*
 * v (n elements of `size` bytes, room for *cap) with room for n + 1: v itself
 * when it has it, else v reallocated to twice *cap (`first` when 0), *cap
 * updated. NULL when out of memory: v is then untouched, and still the
 * caller's to free.
 */
void *grow(void *v, size_t *cap, size_t n, size_t size, size_t first);

#endif
