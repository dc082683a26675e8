/*
 * enforce.h — gpuctld's lease enforcement (docs/policy.md): a compute
 * process on a GPU that another user leased (or, with `enforce-unleased`, on
 * a GPU nobody leased) is a violation. Mode `warn` logs it once and counts it
 * (gpuctl_policy_violations_total{user}) and tells the offender and the
 * holder on their terminals (tell.h); `kill` also sends it SIGTERM, then
 * SIGKILL after the grace. Never a process of the lease holder's user, never
 * root's unless `enforce-root`, never one gpuctld cannot map to a user (in
 * another PID namespace: reported as such). Pure policy over a sample and its
 * lease holders; the signals go through a pidfd, so a pid reused between the
 * sample and the signal is never hit.
 */
#ifndef GPUCTL_DAEMON_ENFORCE_H
#define GPUCTL_DAEMON_ENFORCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device/gpu.h"
#include "jobs/lease.h"

enum enforce_mode { ENFORCE_OFF, ENFORCE_WARN, ENFORCE_KILL };

struct enforce_opts {
	enum enforce_mode mode;
	long long grace_ms;     /* SIGTERM to SIGKILL */
	bool root;              /* root's processes too */
	bool unleased;          /* all GPU work must be leased: a process on a GPU nobody leased violates */
	struct notify *notify;  /* borrowed: policy.violation events, or NULL */
};

/* --enforce's value: off, warn, kill. 0, or -1 with a message in err. */
int enforce_parse_mode(const char *arg, enum enforce_mode *out, char *err, size_t errlen);

struct enforce;

/* NULL when out of memory. */
struct enforce *enforce_new(const struct enforce_opts *o);
void enforce_free(struct enforce *e);

/*
 * After each sample (the sampler's thread): holder[ngpus] is each GPU's lease
 * holder or NULL; now_ms a monotonic clock. Logs and counts each new
 * violation, signals in kill mode.
 */
void enforce_sample(struct enforce *e, const gc_snapshot *snap, const struct lease_info *const *holder,
		    int64_t now_ms);

/* Violations counted so far, by user: the i-th (i < n) user and count; false past the end. */
bool enforce_count(const struct enforce *e, size_t i, const char **user, uint64_t *count);
#endif
