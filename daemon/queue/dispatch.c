/*
 * dispatch.c — the queue's dispatch policy (see dispatch.h).
 */
#include "dispatch.h"

#include <stdlib.h>
#include <string.h>

static int order(const void *a, const void *b)
{
	const struct dispatch_job *x = *(const struct dispatch_job *const *)a, *y = *(const struct dispatch_job *const *)b;
	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	if (x->share != y->share)
		return x->share < y->share ? -1 : 1;
	if (x->arrival != y->arrival)
		return x->arrival < y->arrival ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static bool can_use(const struct dispatch_job *j, size_t g)
{
	return !j->eligible || j->eligible[g];
}

size_t dispatch_plan(const struct dispatch_job *jobs, size_t n, const bool *is_free, size_t ngpu,
		  struct dispatch_start *out, size_t max, size_t *left)
{
	if (left) {
		*left = 0;
		for (size_t g = 0; g < ngpu; g++)
			*left += is_free[g];
	}
	if (!n || !ngpu)
		return 0;
	const struct dispatch_job **v = malloc(n * sizeof *v);
	bool *avail = malloc(ngpu * sizeof *avail);
	if (!v || !avail) {
		free(v);
		free(avail);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = &jobs[i];
	qsort(v, n, sizeof *v, order);
	memcpy(avail, is_free, ngpu * sizeof *avail);
	size_t k = 0;
	for (size_t i = 0; i < n && k < max; i++) {
		const struct dispatch_job *j = v[i];
		size_t possible = 0, now = 0, own = 0;
		for (size_t g = 0; g < ngpu; g++) {
			possible += can_use(j, g);
			now += can_use(j, g) && avail[g];
			own += can_use(j, g) && j->own && j->own[g];
		}
		if (j->ngpus == 0 || j->ngpus > possible || j->ngpus > 64)
			continue; /* can never run: not ours to hold GPUs for */
		if (now >= j->ngpus) {
			struct dispatch_start *s = &out[k++];
			s->id = j->id;
			s->n = 0;
			for (size_t g = 0; g < ngpu && s->n < j->ngpus; g++)
				if (can_use(j, g) && avail[g]) {
					avail[g] = false;
					s->gpus[s->n++] = (unsigned)g;
				}
			continue;
		}
		/* one that will not wait, or that waits on GPUs its own user holds, holds nothing */
		if (j->nowait || j->ngpus > possible - own)
			continue;
		/* blocked: the free GPUs it could use are held for it, from now on */
		for (size_t g = 0; g < ngpu; g++)
			if (can_use(j, g))
				avail[g] = false;
	}
	if (left) {
		*left = 0;
		for (size_t g = 0; g < ngpu; g++)
			*left += avail[g];
	}
	free(v);
	free(avail);
	return k;
}
