/*
 * cmd-usage.c — `gpuctl usage`: GPU-hours per user, GPU or day, as gpuctld
 * recorded them (every lease, interactive or queued), with the idle hours
 * held and a cost; a team's `sreport` (docs/policy.md).
 */
#include "cli.h"
#include "jobs/gpuctld-ask.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuctl usage [--since DUR] [--by user|gpu|day] [--json]\n"
		   "\n"
		   "GPU-hours held, per user (or GPU, or UTC day), as gpuctld recorded them: every\n"
		   "lease of a GPU, gpuctl run, pick --lease, Python and queued jobs alike; the\n"
		   "hours those GPUs sat idle; and the cost at gpuctld's --gpu-hour-price.\n"
		   "\n"
		   "  --since DUR         this far back (default 7d; 0: everything recorded)\n"
		   "  --by user|gpu|day   one row per user (default), GPU or UTC day\n"
		   "  --json              the answer as JSON (schema gpuctl.usage/1)\n");
}

int cmd_usage(const struct cli_global *g, int argc, char **argv)
{
	(void)g;
	static const struct option opts[] = {
		{"since", required_argument, NULL, 's'},
		{"by", required_argument, NULL, 'b'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	long long since = 7LL * 86400000;
	const char *by = "user";
	bool json = false;
	int c, rc;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (strcmp(optarg, "0") == 0)
				since = 0;
			else if ((rc = cli_parse_duration("--since", optarg, &since)))
				return rc;
			break;
		case 'b':
			if (strcmp(optarg, "user") && strcmp(optarg, "gpu") && strcmp(optarg, "day")) {
				cli_err("invalid --by '%s' (expected user, gpu or day)", optarg);
				return EXIT_USAGE;
			}
			by = optarg;
			break;
		case 'j': json = true; break;
		case 'h': usage(stdout); return EXIT_OK;
		default: return cli_bad_option("usage", c, argv);
		}
	}
	if (optind < argc)
		return cli_extra_arg("usage", argv[optind]);
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	long long now = (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
	json_t *req = json_pack("{s:s, s:s, s:I}", "op", "usage", "by", by, "since_ms",
				(json_int_t)(since && since < now ? now - since : 0));
	char err[1400];
	int reached;
	json_t *ans = req ? gpuctld_ask(req, 0, &reached, err, sizeof err) : NULL;
	json_decref(req);
	if (!ans) {
		cli_err("%s", req ? err : "out of memory");
		return EXIT_FAIL;
	}
	if (!json_is_true(json_object_get(ans, "ok"))) {
		const char *e = json_string_value(json_object_get(ans, "error"));
		cli_err("gpuctld: %s", e ? e : "a bad answer");
		json_decref(ans);
		return EXIT_FAIL;
	}
	if (json) {
		json_object_del(ans, "ok");
		json_object_set_new(ans, "schema", json_string("gpuctl.usage/1"));
		rc = cli_put_json(ans);
		json_decref(ans);
		return rc;
	}
	bool cost = json_object_get(ans, "price_per_gpu_hour") != NULL;
	const char *head = strcmp(by, "user") == 0 ? "USER" : strcmp(by, "gpu") == 0 ? "GPU" : "DAY (UTC)";
	printf("%-20s %12s %12s%s\n", head, "GPU-HOURS", "IDLE-HOURS", cost ? "         COST" : "");
	json_t *rows = json_object_get(ans, "rows"), *r;
	size_t i;
	json_array_foreach(rows, i, r) {
		char key[64];
		cli_safe(key, sizeof key, json_string_value(json_object_get(r, "key")));
		printf("%-20s %12.3f %12.3f", key, json_real_value(json_object_get(r, "gpu_hours")),
		       json_real_value(json_object_get(r, "idle_gpu_hours")));
		if (cost)
			printf(" %12.2f", json_real_value(json_object_get(r, "cost")));
		putchar('\n');
	}
	json_t *tot = json_object_get(ans, "total");
	printf("%-20s %12.3f %12.3f", "total", json_real_value(json_object_get(tot, "gpu_hours")),
	       json_real_value(json_object_get(tot, "idle_gpu_hours")));
	if (cost)
		printf(" %12.2f", json_real_value(json_object_get(tot, "cost")));
	putchar('\n');
	json_decref(ans);
	return EXIT_OK;
}
