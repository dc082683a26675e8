/*
 * progerr.c — what gpuctl's programs (gpuctl, gpuctld) share and the
 * library must not do (see progerr.h): error lines, exit codes, option
 * values parsed with a message.
 */
#include "progerr.h"

#include "gpuctl/gpuctl.h"
#include "util/units.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *cli_prog = "gpuctl";
const char *cli_where;

void cli_err(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "%s: ", cli_prog);
	if (cli_where)
		fprintf(stderr, "%s: ", cli_where);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* "try 'gpuctl ls --help'", or "try 'gpuctld --help'" for a program's own options */
static void help_hint(char *buf, size_t len, const char *cmd)
{
	if (strcmp(cmd, cli_prog) == 0)
		snprintf(buf, len, "try '%s --help'", cmd);
	else
		snprintf(buf, len, "try 'gpuctl %s --help'", cmd);
}

int cli_bad_option(const char *cmd, int c, char *const argv[])
{
	char hint[96], opt[64];
	help_hint(hint, sizeof hint, cmd);
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	/* an unknown short option sets optopt, and optind may not have moved past its word
	 * ("-Zi 0", "-1"); an unknown long option sets it to 0; keep only "--name" of "--name=v" */
	if (c != ':' && optopt > 0 && optopt < 128 && strncmp(arg, "--", 2) != 0)
		snprintf(opt, sizeof opt, "-%c", optopt);
	else
		snprintf(opt, sizeof opt, "%.*s", (int)strcspn(arg, "="), arg);
	if (c == ':')
		cli_err("option '%s' needs a value (%s)", opt, hint);
	else if (strncmp(arg, "--", 2) == 0 && strchr(arg, '=') && optopt != 0)
		/* "--json=x": a known option given a value it does not take (getopt sets optopt to its
		 * value, which is no option's name: "-j" would be wrong) */
		cli_err("option '%.*s' takes no value (%s)", (int)strcspn(arg, "="), arg, hint);
	else
		cli_err("unknown option '%s' for %s (%s)", opt, cmd, hint);
	return EXIT_USAGE;
}

int cli_extra_arg(const char *cmd, const char *arg)
{
	char hint[96];
	help_hint(hint, sizeof hint, cmd);
	cli_err("unexpected argument '%s' for %s (%s)", arg, cmd, hint);
	return EXIT_USAGE;
}

int cli_exit_code(int e)
{
	switch (e) {
	case GC_OK: return EXIT_OK;
	case GC_ENOLIB:
	case GC_ENODRIVER: return EXIT_NODRIVER;
	case GC_EMISMATCH: return EXIT_MISMATCH;
	case GC_EGPULOST: return EXIT_GPULOST;
	case GC_EINVAL:
	case GC_ESIM: return EXIT_USAGE; /* the node file named by --sim is bad input */
	default: return EXIT_FAIL;
	}
}

/* a units.c parser's verdict as the CLI reports it */
static int parsed(int rc, const char *err)
{
	if (rc == GC_OK)
		return EXIT_OK;
	cli_err("%s", err);
	return EXIT_USAGE;
}

int cli_parse_interval(const char *opt, const char *arg, double *out)
{
	char err[300];
	return parsed(units_parse_interval(opt, arg, out, err, sizeof err), err);
}

int cli_parse_duration(const char *opt, const char *arg, long long *ms)
{
	char err[300];
	return parsed(units_parse_duration(opt, arg, ms, err, sizeof err), err);
}

int cli_parse_count(const char *opt, const char *arg, long *out)
{
	char err[300];
	return parsed(units_parse_count(opt, arg, out, err, sizeof err), err);
}

