/*
 * torchprobe.h — which launcher `gpuctl launch` runs (torchrun, else
 * python3 -m torch.distributed.run), which Python that is, and what it
 * has: that Python is run once with TORCHENV_PROBE (lib/jobs/torchenv.h), which
 * finds PyTorch's version without importing it. Shared by launch, which
 * adapts torchrun's options and defaults to it, and doctor, which reports it.
 */
#ifndef GPUCTL_TORCHPROBE_H
#define GPUCTL_TORCHPROBE_H
#include <limits.h>
#include <stdbool.h>

#include "jobs/torchenv.h"

/* the launchers: static, NULL-terminated */
extern char *const torchprobe_torchrun[];
extern char *const torchprobe_python3[];
extern char *const torchprobe_python[];

/*
 * The launcher "auto" picks: torchrun on PATH, else python3 (or python)
 * -m torch.distributed.run; with python_only, only the latter. NULL when
 * none is on PATH.
 */
char *const *torchprobe_auto(bool python_only);

struct torchprobe {
	char launcher[PATH_MAX];  /* where the launcher's first word is: "/usr/bin/torchrun", "python3" */
	char python[PATH_MAX];    /* its Python: from torchrun's #! line, or the launcher's; "" not known */
	char opt[64];             /* the option on the #! line ("-s"), passed to the probe too; "" none */
	int rc;                   /* the probe's exit status; CAPTURE_NOT_RUN / CAPTURE_TIMEOUT; -3 not run */
	int why;                  /* errno when CAPTURE_NOT_RUN */
	char *out;                /* what the probe printed (owned; NULL when not run) */
	bool known;               /* t was read from the probe */
	struct torchenv t;
};

/*
 * Find launcher's Python (launcher borrowed, e.g. torchprobe_torchrun) and
 * run the probe with it, at most timeout_ms. Never fails: what could not be
 * found is left unknown (see the fields). Release with torchprobe_release.
 */
void torchprobe_run(char *const *launcher, int timeout_ms, struct torchprobe *p);
void torchprobe_release(struct torchprobe *p);
#endif
