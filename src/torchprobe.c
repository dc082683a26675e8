/*
 * torchprobe.c — the launcher's Python and PyTorch, found on this machine
 * (see torchprobe.h). One interpreter start per call: cheap enough for
 * every launch, and nothing imports torch.
 */
#include "torchprobe.h"
#include "capture.h"
#include "cli.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *const torchprobe_torchrun[] = {"torchrun", NULL};
char *const torchprobe_python3[] = {"python3", "-m", "torch.distributed.run", NULL};
char *const torchprobe_python[] = {"python", "-m", "torch.distributed.run", NULL};

char *const *torchprobe_auto(bool python_only)
{
	if (!python_only && cli_on_path("torchrun"))
		return torchprobe_torchrun;
	if (cli_on_path("python3"))
		return torchprobe_python3;
	if (cli_on_path("python"))
		return torchprobe_python;
	return NULL;
}

void torchprobe_run(char *const *launcher, int timeout_ms, struct torchprobe *p)
{
	memset(p, 0, sizeof *p);
	p->rc = -3;
	p->t.major = p->t.minor = -1;
	snprintf(p->launcher, sizeof p->launcher, "%s", launcher[0]);
	if (launcher[1]) {
		/* "python3 -m torch.distributed.run": that Python, as execvp finds it */
		snprintf(p->python, sizeof p->python, "%s", launcher[0]);
		cli_find_on_path(launcher[0], p->launcher, sizeof p->launcher);
	} else {
		/* a script: its #! line names the Python */
		if (!strchr(launcher[0], '/') && !cli_find_on_path(launcher[0], p->launcher, sizeof p->launcher))
			return;
		char head[1024];
		int fd = open(p->launcher, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return;
		ssize_t n = read(fd, head, sizeof head);
		close(fd);
		if (n <= 0 || torchenv_script_python(head, (size_t)n, p->python, sizeof p->python, p->opt,
						     sizeof p->opt) != 0)
			return;
	}
	char *argv[] = {p->python, p->opt, "-c", (char *)TORCHENV_PROBE, NULL};
	if (!p->opt[0])
		memmove(&argv[1], &argv[2], 3 * sizeof argv[0]);
	p->rc = capture_run(argv, NULL, false, timeout_ms, &p->out, &p->why);
	p->known = p->rc == 0 && torchenv_parse(p->out, &p->t) == 0;
}

void torchprobe_release(struct torchprobe *p)
{
	free(p->out);
	p->out = NULL;
}
