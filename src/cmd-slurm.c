/*
 * cmd-slurm.c — `gpuctl slurm doctor [--json]`: is this machine ready for
 * gpuctl launch --slurm? Asks the Slurm client (sinfo, scontrol), reads this
 * node's gres.conf, and prints the checks of lib/diagnose/slurm.c as doctor does.
 */
#include "capture.h"
#include "cli.h"
#include "diagnose/slurm.h"
#include "util/slurp.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define SLURM_ASK_MS 10000

/* what a Slurm command printed (NULL when it did not run); its status in *rc */
static char *ask(char *const argv[], int *rc)
{
	char *out = NULL;
	int why;
	*rc = capture_run(argv, NULL, true, SLURM_ASK_MS, &out, &why);
	return out;
}

/* "SLURM_CONF = /etc/slurm/slurm.conf" in `scontrol show config` */
static void conf_path(const char *config, char *buf, size_t len)
{
	buf[0] = '\0';
	for (const char *p = config; p && (p = strstr(p, "SLURM_CONF")); p++) {
		if (p != config && p[-1] != '\n')
			continue;
		const char *eq = strchr(p, '=');
		const char *nl = strchr(p, '\n');
		if (!eq || (nl && nl < eq))
			continue;
		eq++;
		while (*eq == ' ')
			eq++;
		size_t n = strcspn(eq, " \n");
		if (n && n < len) {
			memcpy(buf, eq, n);
			buf[n] = '\0';
		}
		return;
	}
}

static int doctor(bool json)
{
	static const char *const tools[] = {"sinfo", "sbatch", "srun", "scontrol"};
	char missing[64] = "";
	for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
		if (!cli_on_path(tools[i]))
			snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s",
				 missing[0] ? ", " : "", tools[i]);
	struct slurm_env e = {.missing = missing, .ping_rc = -1, .sinfo_rc = -1};
	char *const v[] = {"sinfo", "--version", NULL};
	char *const ping[] = {"scontrol", "ping", NULL};
	char *const parts[] = {"sinfo", "-h", "-o", "%P|%G|%D|%a", NULL};
	char *const show[] = {"scontrol", "show", "config", NULL};
	int rc, src;
	char *version = ask(v, &e.version_rc);
	e.version = version;
	char *ping_out = NULL, *sinfo_out = NULL, *config = NULL, *gres = NULL;
	if (cli_on_path("scontrol")) {
		ping_out = ask(ping, &e.ping_rc);
		e.ping_out = ping_out;
		config = ask(show, &src);
	}
	if (e.version_rc == 0) {
		sinfo_out = ask(parts, &e.sinfo_rc);
		e.sinfo_out = sinfo_out;
	}
	/* the configuration scontrol names, else where Slurm looks by default */
	char conf[4096], gres_path[4200];
	conf_path(config, conf, sizeof conf);
	if (!conf[0]) {
		const char *env = getenv("SLURM_CONF");
		snprintf(conf, sizeof conf, "%s", env && *env ? env : "/etc/slurm/slurm.conf");
	}
	char *slash = strrchr(conf, '/');
	if (slash)
		snprintf(gres_path, sizeof gres_path, "%.*s/gres.conf", (int)(slash - conf), conf);
	else
		snprintf(gres_path, sizeof gres_path, "gres.conf");
	e.gres_path = gres_path;
	size_t len;
	char err[256];
	if (slurp(gres_path, 1u << 20, &gres, &len, err, sizeof err) == 0)
		e.gres_conf = gres;
	struct doctor_report r = {0};
	if (slurm_run(&e, &r) != GC_OK) {
		cli_err("out of memory");
		rc = EXIT_FAIL;
	} else {
		rc = cli_print_checks(&r, json, "gpuctl.slurm-doctor/1", "slurm doctor");
	}
	doctor_report_free(&r);
	free(version);
	free(ping_out);
	free(sinfo_out);
	free(config);
	free(gres);
	return rc;
}

int cmd_slurm(const struct cli_global *g, int argc, char **argv)
{
	(void)g;
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		FILE *f = argc < 2 ? stderr : stdout;
		fprintf(f, "usage: gpuctl slurm doctor [--json]\n\n"
			   "Check that this machine can submit GPU jobs with gpuctl launch --slurm: the Slurm\n"
			   "client, the controller, partitions with GPUs, and this node's gres.conf.\n");
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	if (strcmp(argv[1], "doctor") != 0) {
		cli_err("unknown slurm command '%s' (expected doctor)", argv[1]);
		return EXIT_USAGE;
	}
	bool json = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc - 1, argv + 1, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'h':
			printf("usage: gpuctl slurm doctor [--json]\n");
			return EXIT_OK;
		default:
			return cli_bad_option("slurm doctor", c, argv + 1);
		}
	}
	if (optind < argc - 1)
		return cli_extra_arg("slurm doctor", argv[optind + 1]);
	return doctor(json);
}
