/*
 * sigstop.c — one catcher for the stop signals (sigstop.h).
 */
#include "sigstop.h"

#include <string.h>

volatile sig_atomic_t sigstop_last;

static void on_stop(int sig)
{
	sigstop_last = sig;
}

void sigstop_catch(const int *sigs, size_t n)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < n; i++)
		sigaction(sigs[i], &sa, NULL);
}
