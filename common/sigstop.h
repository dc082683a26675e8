/*
 * sigstop.h — the stop signals a front end waits on (SIGINT, SIGTERM, ...):
 * one catcher for gpuctl's verbs and gpuctld, which each had their own. A
 * helper of the programs (common/, beside progerr.c), not of the library:
 * the library installs no signal handler (tests/docs/check-errors.py).
 * The handler only records the signal; the waiting code looks at
 * sigstop_last (and passes &sigstop_last as a job's `stop`). Handlers are
 * installed without SA_RESTART, so a slow system call returns EINTR.
 */
#ifndef GPUCTL_SIGSTOP_H
#define GPUCTL_SIGSTOP_H

#include <signal.h>
#include <stddef.h>

/* the stop signal caught last; 0 while none has come */
extern volatile sig_atomic_t sigstop_last;

/* catch each of the n signals sigs[] into sigstop_last */
void sigstop_catch(const int *sigs, size_t n);

#endif
