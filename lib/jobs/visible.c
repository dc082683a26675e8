/*
 * visible.c — CUDA_VISIBLE_DEVICES (see visible.h), following the CUDA
 * Programming Guide's "CUDA Environment Variables" and the MPS/MIG guides:
 *  - unset: all devices; set to "": none;
 *  - entries are integer indices or GPU UUIDs as nvidia-smi prints them,
 *    "GPU-" plus any prefix that identifies one GPU, or MIG devices
 *    ("MIG-GPU-<uuid>/<gi>/<ci>", "MIG-<uuid>");
 *  - devices are enumerated in the order of the list, and parsing stops at
 *    the first invalid entry ("0,2,-1,1" shows devices 0 and 2 only);
 *  - one form per list: an entry of another form is invalid;
 *  - a device listed twice makes the whole list invalid (no device).
 * Whitespace is not trimmed: " 1" is not an index here.
 */
#include "jobs/visible.h"
#include "gpuctl/gpuctl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *visible_stop_reason(enum visible_stop s)
{
	switch (s) {
	case VISIBLE_STOP_NONE: return "the whole list is used";
	case VISIBLE_STOP_SYNTAX: return "not an index, a GPU UUID or a MIG device";
	case VISIBLE_STOP_RANGE: return "no GPU has that index";
	case VISIBLE_STOP_NOMATCH: return "no GPU has that UUID";
	case VISIBLE_STOP_AMBIGUOUS: return "the UUID prefix matches more than one GPU";
	case VISIBLE_STOP_MIXED: return "indices, GPU UUIDs and MIG devices cannot be mixed";
	case VISIBLE_STOP_DUPLICATE: return "a device is listed twice, which makes the whole list invalid";
	case VISIBLE_STOP_TOO_MANY: return "too many entries";
	}
	return "unknown";
}

static enum visible_form form_of(const char *tok)
{
	if (strncmp(tok, "MIG-", 4) == 0)
		return VISIBLE_MIG;
	if (strncasecmp(tok, "GPU-", 4) == 0)
		return VISIBLE_UUID;
	if (*tok == '-' || *tok == '+' || isdigit((unsigned char)*tok))
		return VISIBLE_INDEX;
	return VISIBLE_NONE;
}

/* GPU whose UUID starts with `prefix` (len bytes; a full UUID is its own prefix); -1 none, -2 several */
static int match_uuid(const char *prefix, size_t len, const char *const *uuids, size_t ngpus)
{
	if (len <= 4)
		return -1; /* "GPU-" alone identifies nothing */
	int found = -1;
	for (size_t i = 0; i < ngpus; i++) {
		if (!uuids[i] || strncasecmp(uuids[i], prefix, len) != 0)
			continue;
		if (found >= 0)
			return -2;
		found = (int)i;
	}
	return found;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* One entry of the given form: its GPU (NVML index, or -1) or a stop code. */
static enum visible_stop entry(const char *tok, enum visible_form form, const char *const *uuids,
			       size_t ngpus, int *gpu)
{
	*gpu = -1;
	switch (form) {
	case VISIBLE_INDEX: {
		if (*tok == '-')
			return all_digits(tok + 1) ? VISIBLE_STOP_RANGE : VISIBLE_STOP_SYNTAX;
		if (*tok == '+')
			tok++;
		if (!all_digits(tok))
			return VISIBLE_STOP_SYNTAX;
		errno = 0;
		unsigned long v = strtoul(tok, NULL, 10);
		if (errno || v >= ngpus)
			return VISIBLE_STOP_RANGE;
		*gpu = (int)v;
		return VISIBLE_STOP_NONE;
	}
	case VISIBLE_UUID: {
		int m = match_uuid(tok, strlen(tok), uuids, ngpus);
		if (m == -2)
			return VISIBLE_STOP_AMBIGUOUS;
		if (m < 0)
			return VISIBLE_STOP_NOMATCH;
		*gpu = m;
		return VISIBLE_STOP_NONE;
	}
	case VISIBLE_MIG: {
		const char *rest = tok + 4;
		if (strncasecmp(rest, "GPU-", 4) == 0) {
			/* MIG-GPU-<uuid>/<gi>/<ci>: the parent GPU is known */
			const char *s1 = strchr(rest, '/');
			const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
			if (!s1 || !s2 || strchr(s2 + 1, '/'))
				return VISIBLE_STOP_SYNTAX;
			char gi[16], ci[16];
			size_t lg = (size_t)(s2 - s1 - 1), lc = strlen(s2 + 1);
			if (lg == 0 || lc == 0 || lg >= sizeof gi || lc >= sizeof ci)
				return VISIBLE_STOP_SYNTAX;
			memcpy(gi, s1 + 1, lg);
			gi[lg] = '\0';
			memcpy(ci, s2 + 1, lc + 1);
			if (!all_digits(gi) || !all_digits(ci))
				return VISIBLE_STOP_SYNTAX;
			int m = match_uuid(rest, (size_t)(s1 - rest), uuids, ngpus);
			if (m == -2)
				return VISIBLE_STOP_AMBIGUOUS;
			if (m < 0)
				return VISIBLE_STOP_NOMATCH;
			*gpu = m;
			return VISIBLE_STOP_NONE;
		}
		/* MIG-<uuid>: a MIG device's own UUID; its parent needs MIG enumeration */
		for (const char *p = rest; *p; p++)
			if (!isxdigit((unsigned char)*p) && *p != '-')
				return VISIBLE_STOP_SYNTAX;
		return strlen(rest) >= 8 ? VISIBLE_STOP_NONE : VISIBLE_STOP_SYNTAX;
	}
	default:
		return VISIBLE_STOP_SYNTAX;
	}
}

void visible_parse(const char *value, const char *const *uuids, size_t ngpus, struct visible *out)
{
	memset(out, 0, sizeof *out);
	if (!value) {
		out->form = VISIBLE_ALL;
		return;
	}
	out->form = VISIBLE_NONE;
	if (!*value)
		return;
	enum visible_form form = VISIBLE_NONE;
	size_t pos = 0;
	const char *p = value;
	for (;; pos++) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char tok[sizeof out->e[0].id];
		enum visible_stop stop = VISIBLE_STOP_NONE;
		int gpu = -1;
		if (out->n == VISIBLE_MAX) {
			stop = VISIBLE_STOP_TOO_MANY;
		} else if (len >= sizeof tok) {
			stop = VISIBLE_STOP_SYNTAX;
		} else {
			memcpy(tok, p, len);
			tok[len] = '\0';
			enum visible_form f = form_of(tok);
			if (f == VISIBLE_NONE)
				stop = VISIBLE_STOP_SYNTAX;
			else if (form != VISIBLE_NONE && f != form)
				stop = VISIBLE_STOP_MIXED;
			else
				stop = entry(tok, f, uuids, ngpus, &gpu);
			if (stop == VISIBLE_STOP_NONE) {
				form = f;
				for (size_t i = 0; i < out->n; i++) {
					bool same = gpu >= 0 && f != VISIBLE_MIG ? out->e[i].gpu == gpu
										: strcmp(out->e[i].id, tok) == 0;
					if (same)
						stop = VISIBLE_STOP_DUPLICATE;
				}
			}
		}
		if (stop != VISIBLE_STOP_NONE) {
			out->stop = stop;
			out->stop_at = pos;
			if (stop == VISIBLE_STOP_DUPLICATE)
				out->n = 0;
			break;
		}
		out->e[out->n].gpu = gpu;
		memcpy(out->e[out->n].id, tok, len + 1);
		out->n++;
		if (!comma)
			break;
		p = comma + 1;
	}
	out->form = out->n ? form : VISIBLE_NONE;
}

bool visible_has(const struct visible *v, int gpu)
{
	if (v->form == VISIBLE_ALL)
		return gpu >= 0;
	for (size_t i = 0; i < v->n; i++)
		if (v->e[i].gpu == gpu)
			return true;
	return false;
}

int visible_render(enum visible_form form, const char *const *uuids, size_t ngpus,
		   const unsigned *gpus, size_t n, char *buf, size_t len)
{
	if (len == 0 || (form != VISIBLE_INDEX && form != VISIBLE_UUID))
		return GC_EINVAL;
	size_t off = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (gpus[i] >= ngpus || (form == VISIBLE_UUID && !uuids[gpus[i]]))
			return GC_EINVAL;
		int w = form == VISIBLE_INDEX
				? snprintf(buf + off, len - off, "%s%u", i ? "," : "", gpus[i])
				: snprintf(buf + off, len - off, "%s%s", i ? "," : "", uuids[gpus[i]]);
		if (w < 0 || (size_t)w >= len - off)
			return GC_EINVAL;
		off += (size_t)w;
	}
	return 0;
}

enum visible_form visible_child_form(const struct visible *parent, bool want_uuid)
{
	if (want_uuid || (parent && parent->form == VISIBLE_UUID))
		return VISIBLE_UUID;
	return VISIBLE_INDEX;
}
