/*
 * cli.c — helpers shared by the gpuctl verbs (see cli.h). The one place
 * that turns a libgpuctl error into a line on stderr and an exit code.
 */
#include "config.h"
#include "cli.h"
#include "sigstop.h"

#include "util/datadir.h"
#include "device/proc.h"
#include "jobs/select.h"
#include "util/units.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *cli_optional_next(char *arg, int argc, char **argv)
{
	if (arg || optind >= argc)
		return arg;
	const char *w = argv[optind];
	if ((w[0] >= '0' && w[0] <= '9') || (w[0] == '.' && w[1] >= '0' && w[1] <= '9'))
		return argv[optind++];
	return NULL;
}

const char *cli_safe(char *buf, size_t len, const char *s)
{
	proc_sanitize(buf, len, s ? s : "", s ? strlen(s) : 0);
	return buf;
}

int cli_open(const struct cli_global *g, gc_ctx **ctx)
{
	gc_open_opts o = {.library = NULL, .sim_node = g->sim};
	int rc = gc_ctx_open(ctx, &o);
	if (rc == GC_OK)
		return EXIT_OK;
	const char *msg = gc_ctx_errmsg(*ctx);
	if (!msg || !*msg)
		msg = gc_strerror(rc);
	if ((rc == GC_ENOLIB || rc == GC_ENODRIVER) && !g->sim)
		cli_err("%s; to try gpuctl without a GPU, run it against a simulated node: "
			"gpuctl --sim FILE ...", msg);
	else
		cli_err("%s", msg);
	gc_ctx_free(*ctx);
	*ctx = NULL;
	return cli_exit_code(rc);
}

/* Parse "[domain:]bus:device[.function]" in hex into one comparable number. */
int cli_select(const char *opt, const char *spec, const gc_snapshot *snap, bool *which)
{
	char err[600];
	int rc = select_parse_ids(opt, spec, snap, which, err, sizeof err);
	if (rc == GC_OK)
		return EXIT_OK;
	cli_err("%s", err);
	return rc == GC_ENOMEM ? EXIT_FAIL : EXIT_USAGE;
}

int cli_select_gpus(gc_ctx *ctx, const char *spec, gc_snapshot *snap, bool **which)
{
	size_t n = gc_ctx_count(ctx);
	*which = calloc(n ? n : 1, sizeof **which);
	if (!*which) {
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	if (!spec) {
		for (size_t i = 0; i < n; i++)
			(*which)[i] = true;
		return EXIT_OK;
	}
	/* UUIDs and bus ids are cached by the backend: one NVML call each, once */
	int rc = gc_ctx_sample(ctx, snap, GC_BIT(GC_V_UUID) | GC_BIT(GC_V_PCI), NULL, false);
	if (rc != GC_OK) {
		cli_err("cannot read GPU ids: %s", gc_ctx_errmsg(ctx));
		return cli_exit_code(rc);
	}
	return cli_select("-i", spec, snap, *which);
}

int cli_check_lost(const gc_snapshot *snap, const bool *which, bool *reported, bool quiet)
{
	int rc = EXIT_OK;
	for (size_t i = 0; i < snap->ngpus; i++) {
		if (!which[i] || !snap->gpus[i].lost)
			continue;
		rc = EXIT_GPULOST;
		if (!*reported && !quiet)
			cli_err("GPU %zu is lost (fell off the bus or needs a reset)", i);
		*reported = true;
	}
	return rc;
}

void cli_catch_stop(void)
{
	static const int sigs[] = {SIGINT, SIGTERM};
	sigstop_catch(sigs, sizeof sigs / sizeof sigs[0]);
}

int cli_stop_signal(void)
{
	return sigstop_last;
}

bool cli_interrupted(void)
{
	return sigstop_last != 0;
}

int cli_loop(double interval, long count, int (*tick)(void *arg, long n), void *arg)
{
	if (interval <= 0)
		return tick(arg, 0);
	cli_catch_stop();
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	time_t step_s = (time_t)interval;
	long step_ns = (long)((interval - (double)step_s) * 1e9);
	int last = 0;
	for (long n = 0; !sigstop_last; n++) {
		int rc = tick(arg, n);
		if (rc != 0 && rc != EXIT_GPULOST)
			return rc;
		if (rc)
			last = rc;
		if (count && n + 1 >= count)
			break;
		next.tv_sec += step_s;
		next.tv_nsec += step_ns;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		/* if a sample overran its slot, do not try to catch up */
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
			next = now;
		while (!sigstop_last && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	return last;
}

int cli_parse_color(const char *arg, enum cli_color *out)
{
	if (!arg || strcmp(arg, "auto") == 0)
		*out = COLOR_AUTO;
	else if (strcmp(arg, "always") == 0)
		*out = COLOR_ALWAYS;
	else if (strcmp(arg, "never") == 0)
		*out = COLOR_NEVER;
	else {
		cli_err("invalid --color value '%s' (expected auto, always or never)", arg);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

bool cli_use_color(enum cli_color c, FILE *f)
{
	if (c == COLOR_ALWAYS)
		return true;
	if (c == COLOR_NEVER)
		return false;
	const char *nc = getenv("NO_COLOR");
	if (nc && *nc)
		return false;
	const char *term = getenv("TERM");
	if (term && strcmp(term, "dumb") == 0)
		return false;
	return isatty(fileno(f)) != 0;
}

unsigned long long cli_mib(uint64_t bytes)
{
	return (unsigned long long)(bytes / 1048576ULL + (bytes % 1048576ULL != 0));
}

int cli_data_file(const char *name, char *buf, size_t len)
{
	char err[PATH_MAX + 100];
	if (datadir_file(name, buf, len, err, sizeof err) == GC_OK)
		return 0;
	cli_err("%s", err);
	return -1;
}

int cli_signatures_dir(char *buf, size_t len, bool quiet)
{
	char err[PATH_MAX + 100];
	if (datadir_signatures(buf, len, err, sizeof err) == GC_OK)
		return 0;
	if (!quiet)
		cli_err("%s", err);
	return -1;
}

bool cli_find_on_path(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		return false;
	size_t nl = strlen(name);
	for (const char *p = path;;) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		if (n > 0 && n + nl + 2 <= len) {
			memcpy(buf, p, n);
			buf[n] = '/';
			memcpy(buf + n + 1, name, nl + 1);
			struct stat st;
			if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
				return true;
		}
		if (!colon)
			return false;
		p = colon + 1;
	}
}

bool cli_on_path(const char *name)
{
	char buf[PATH_MAX];
	return cli_find_on_path(name, buf, sizeof buf);
}

void cli_global_init(struct cli_global *g)
{
	const char *env = getenv("GPUCTL_SIM");
	*g = (struct cli_global){.sim = env && *env ? env : NULL, .prog = "gpuctl"};
}

int cli_export_sim(const struct cli_global *g)
{
	if (g->sim && setenv("GPUCTL_SIM_NODE", g->sim, 1) != 0) {
		cli_err("cannot set GPUCTL_SIM_NODE: %s", strerror(errno));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int cli_put_json(const json_t *doc)
{
	char *s = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII) : NULL;
	if (!s) {
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	puts(s);
	free(s);
	return EXIT_OK;
}
