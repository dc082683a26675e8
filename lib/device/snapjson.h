/*
 * snapjson.h — the snapshot JSON (docs/json.md) with room for more: the
 * daemon adds each GPU's lease and the sample's age to the same document
 * without parsing it back. gc_snapshot_json is this with no extras.
 */
#ifndef GPUCTL_LIB_SNAPJSON_H
#define GPUCTL_LIB_SNAPJSON_H

#include "device/gpu.h"
#include "util/jsonw.h"

struct snapjson_extra {
	void (*gpu)(struct jw *w, const gc_gpu *g, void *arg); /* more members at the end of each GPU */
	void (*top)(struct jw *w, void *arg);                  /* more members at the end of the document */
	void *arg;
};

/* As gc_snapshot_json, calling x's hooks (x may be NULL). Caller frees. */
char *snapjson_render(const gc_snapshot *snap, const bool *which, const char *hostname, bool pretty,
		      const struct snapjson_extra *x);
/* The same document written to out as it is made (jsonw_init_file): 0, or -1 (see jsonw_finish_file). */
int snapjson_write(FILE *out, const gc_snapshot *snap, const bool *which, const char *hostname, bool pretty);
#endif
