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

/* start j on n of the usable GPUs: choose's answer when it is sound, else the lowest indices */
static void place(const struct dispatch_job *j, bool *usable, size_t ngpu, dispatch_choose_fn choose, void *arg,
		  struct dispatch_start *s)
{
	s->id = j->id;
	s->n = 0;
	unsigned want[64];
	if (choose && choose(arg, j, usable, ngpu, want) == 0) {
		unsigned taken = 0; /* cleared while checked: a GPU named twice fails too */
		while (taken < j->ngpus && want[taken] < ngpu && usable[want[taken]])
			usable[want[taken++]] = false;
		bool ok = taken == j->ngpus;
		for (unsigned k = 0; k < taken; k++)
			usable[want[k]] = true;
		for (size_t g = 0; ok && g < ngpu; g++) /* ascending */
			for (unsigned k = 0; k < j->ngpus; k++)
				if (want[k] == g) {
					s->gpus[s->n++] = (unsigned)g;
					break;
				}
		if (ok)
			return;
	}
	for (size_t g = 0; g < ngpu && s->n < j->ngpus; g++)
		if (usable[g])
			s->gpus[s->n++] = (unsigned)g;
}

size_t dispatch_plan(const struct dispatch_job *jobs, size_t n, const bool *is_free, size_t ngpu,
		     dispatch_choose_fn choose, void *arg, struct dispatch_start *out, size_t max, size_t *left)
{
	if (left) {
		*left = 0;
		for (size_t g = 0; g < ngpu; g++)
			*left += is_free[g];
	}
	if (!n || !ngpu)
		return 0;
	const struct dispatch_job **v = malloc(n * sizeof *v);
	bool *avail = malloc(ngpu * sizeof *avail), *usable = malloc(ngpu * sizeof *usable);
	if (!v || !avail || !usable) {
		free(v);
		free(avail);
		free(usable);
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
			for (size_t g = 0; g < ngpu; g++)
				usable[g] = can_use(j, g) && avail[g];
			place(j, usable, ngpu, choose, arg, s);
			for (unsigned x = 0; x < s->n; x++)
				avail[s->gpus[x]] = false;
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
	free(usable);
	return k;
}
