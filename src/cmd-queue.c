/*
 * cmd-queue.c — the job queue's client verbs: `gpuctl submit`, `queue`,
 * `show` and `cancel`. Each sends one JSON request line to gpuctld's Unix
 * socket and prints its answer; gpuctld knows the caller by SO_PEERCRED,
 * so nothing here can claim to be someone else.
 */
#include "cli.h"
#include "device/proc.h"
#include "jobs/joblog.h"
#include "jobs/gpuctld-ask.h"
#include "runjob.h"
#include "spot/spot.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <pwd.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Send req, read the answer. NULL after printing why (not reachable, bad answer). */
static json_t *ask(json_t *req)
{
	char err[1400];
	int reached;
	json_t *ans = gpuctld_ask(req, 0, &reached, err, sizeof err);
	if (!ans)
		cli_err("%s", err);
	return ans;
}

static int parse_id(const char *arg, long long *id);

/* a word of show/logs that starts with '-': a job id that cannot be, or an unknown option */
static int bad_word(const char *verb, const char *arg)
{
	long long id;
	if (arg[1] >= '0' && arg[1] <= '9')
		return parse_id(arg, &id);
	char hint[64];
	snprintf(hint, sizeof hint, "try 'gpuctl %s --help'", verb);
	cli_err("unknown option '%.*s' for %s (%s)", (int)strcspn(arg, "="), arg, verb, hint);
	return EXIT_USAGE;
}

static int parse_id(const char *arg, long long *id)
{
	char *end;
	errno = 0;
	*id = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || *id < 1) {
		cli_err("invalid job id '%s' (expected a number that gpuctl submit printed)", arg);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* submit's body: rj checks the run options, runopts collects them (both the caller's) */
static int submit(int argc, char **argv, struct runjob *rj, json_t *runopts)
{
	static const struct option opts[] = {
		{"name", required_argument, NULL, 'N'},
		{"priority", required_argument, NULL, 'p'},
		{"after", required_argument, NULL, 'a'},
		{"model", required_argument, NULL, 'm'},
		{"min-free-mem", required_argument, NULL, 'M'},
		/* gpuctl run's supervisor options, checked here and passed on (gpuctld checks them again) */
		JOB_SUPERVISOR_OPTIONS,
		{"requeue", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	long prio = 0;
	struct job_gpus asked;
	job_gpus_init(&asked);
	bool requeue = false;
	int li = -1;
	const char *name = NULL, *after = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:n:h", opts, &li)) != -1) {
		if (job_is_supervisor_option(c)) {
			/* checked in the form the queue stores it, by the code gpuctld checks it with */
			char *o = NULL;
			if (li < 0 || asprintf(&o, "--%s%s%s", opts[li].name, optarg ? "=" : "", optarg ? optarg : "") < 0) {
				cli_err("out of memory");
				return EXIT_FAIL;
			}
			/* rj->jo borrows the option's value (--cloud's, --checkpoint-dir's): from runopts, which outlives it */
			json_t *js = json_string(o);
			free(o);
			if (!js || json_array_append_new(runopts, js) < 0) {
				cli_err("option '%s' is not UTF-8 text, which the queue stores", opts[li].name);
				return EXIT_USAGE;
			}
			char why[400];
			if (job_queued_option(&rj->jo, json_string_value(js), why, sizeof why) != GC_OK) {
				cli_err("%s", why);
				return EXIT_USAGE;
			}
			li = -1;
			continue;
		}
		li = -1;
		switch (c) {
		case 'n':
		case 'm':
		case 'M': {
			/* by the rules gpuctl run takes them with (lib/jobs/job-opts.c) */
			char why[300];
			if (job_gpu_option(&asked, c, optarg, why, sizeof why) != GC_OK) {
				cli_err("%s", why);
				return EXIT_USAGE;
			}
			break;
		}
		case 'N': name = optarg; break;
		case 'q': requeue = true; break;
		case 'p': {
			char *end;
			errno = 0;
			prio = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || prio < -1000 || prio > 1000) {
				cli_err("invalid --priority '%s' (expected a whole number from -1000 to 1000)", optarg);
				return EXIT_USAGE;
			}
			break;
		}
		case 'a':
			if (!*optarg || strspn(optarg, "0123456789,") != strlen(optarg)) {
				cli_err("invalid --after '%s' (expected job ids separated by commas)", optarg);
				return EXIT_USAGE;
			}
			after = optarg;
			break;

		case 'h':
			printf("usage: gpuctl submit [-n N] [--model GLOB] [--min-free-mem SIZE] [--name NAME] [--priority P]\n"
			       "                     [--after JOB[,JOB]] [--requeue] [run options] -- CMD [ARGS...]\n\n"
			       "Queue CMD with gpuctld; it runs as you, in this directory, with this environment,\n"
			       "once N GPUs are free (and the --after jobs have succeeded). Prints the job id.\n"
			       "--requeue: if its gpuctl run is found gone after a gpuctld restart, queue it again.\n"
			       "Run options, as for gpuctl run: --spot --cloud --poll --grace --on-notice --ack\n"
			       "--on-warning --restart --max-restarts --backoff --checkpoint-dir --hang-timeout\n"
			       "--no-explain --retry-on --bigger.\n");
			return EXIT_OK;
		default:
			return cli_bad_option("submit", c, argv);
		}
	}
	if (rj->jo.no_explain && rj->jo.retry_on) {
		cli_err("--retry-on retries by the class the failure is explained as: not with --no-explain");
		return EXIT_USAGE;
	}
	if (job_retry_listed(&rj->jo, "oom-too-big") || rj->jo.bigger) {
		cli_err("--retry-on oom-too-big and --bigger are gpuctl run's: gpuctld does not move a queued job to bigger "
			"GPUs");
		return EXIT_USAGE;
	}
	enum spot_cloud cloud;
	bool autodetect;
	if (spot_parse_cloud(rj->jo.cloud_arg, &cloud, &autodetect) < 0) {
		cli_err("invalid --cloud '%s' (expected aws, gcp, azure, none or auto)", rj->jo.cloud_arg);
		return EXIT_USAGE;
	}
	if (optind >= argc) {
		cli_err("submit needs a command: gpuctl submit [options] -- CMD [ARGS...]");
		return EXIT_USAGE;
	}
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd)) {
		cli_err("cannot read the current directory: %s", strerror(errno));
		return EXIT_FAIL;
	}
	json_t *av = json_array(), *ev = json_array();
	for (int i = optind; i < argc; i++)
		if (json_array_append_new(av, json_string(argv[i])) < 0) {
			cli_err("argument %d is not UTF-8 text, which the queue stores", i - optind + 1);
			json_decref(av);
			json_decref(ev);
			return EXIT_USAGE;
		}
	for (char **e = environ; e && *e; e++)
		json_array_append_new(ev, json_string(*e)); /* a variable that is not UTF-8 is left out */
	json_t *req = json_pack("{s:s, s:I, s:I, s:o, s:o, s:s}", "op", "submit", "gpus", (json_int_t)asked.sel.n,
				"priority", (json_int_t)prio, "argv", av, "env", ev, "cwd", cwd);
	if (name)
		json_object_set_new(req, "name", json_string(name));
	if (after)
		json_object_set_new(req, "after", json_string(after));
	if (asked.sel.model)
		json_object_set_new(req, "model", json_string(asked.sel.model));
	if (asked.sel.min_free_mem)
		json_object_set_new(req, "min_free_mem", json_integer((json_int_t)asked.sel.min_free_mem));
	if (json_array_size(runopts))
		json_object_set(req, "run", runopts);
	if (requeue)
		json_object_set_new(req, "requeue", json_true());
	json_t *ans = ask(req);
	json_decref(req);
	if (!ans)
		return EXIT_FAIL;
	printf("%lld\n", (long long)json_integer_value(json_object_get(ans, "id")));
	json_decref(ans);
	return EXIT_OK;
}

int cmd_submit(const struct cli_global *g, int argc, char **argv)
{
	(void)g;
	struct runjob rj;
	runjob_init(&rj);
	json_t *runopts = json_array();
	int rc = runopts ? submit(argc, argv, &rj, runopts) : EXIT_FAIL;
	json_decref(runopts);
	runjob_release(&rj);
	return rc;
}

/* "10:02:11" today, else "2026-11-23 10:02:11", local time */
static void local_time(long long ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000), now = time(NULL);
	struct tm tm, today;
	localtime_r(&t, &tm);
	localtime_r(&now, &today);
	bool same_day = tm.tm_year == today.tm_year && tm.tm_yday == today.tm_yday;
	strftime(buf, len, same_day ? "%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &tm);
}

/* "45s", "3m12s", "2h05m", "3d04h" */
static void duration_text(long long ms, char *buf, size_t len)
{
	long long s = ms < 0 ? 0 : (ms + 500) / 1000;
	if (s < 60)
		snprintf(buf, len, "%llds", s);
	else if (s < 3600)
		snprintf(buf, len, "%lldm%02llds", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, len, "%lldh%02lldm", s / 3600, s % 3600 / 60);
	else
		snprintf(buf, len, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
}

/* show's times: when it was submitted, started and ended, and how long it waited and ran */
static void print_times(json_t *j)
{
	long long sub = json_integer_value(json_object_get(j, "submitted_ms"));
	long long start = json_integer_value(json_object_get(j, "started_ms"));
	long long end = json_integer_value(json_object_get(j, "ended_ms"));
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	long long now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	char when[40], dur[32];
	if (sub > 0) {
		local_time(sub, when, sizeof when);
		duration_text((start > 0 ? start : end > 0 ? end : now) - sub, dur, sizeof dur);
		printf("%-14s %s, waited %s%s\n", "submitted", when, dur, start > 0 || end > 0 ? "" : " so far");
	}
	if (start > 0) {
		local_time(start, when, sizeof when);
		duration_text((end > 0 ? end : now) - start, dur, sizeof dur);
		printf("%-14s %s, ran %s%s\n", "started", when, dur, end > 0 ? "" : " so far");
	}
	if (end > 0) {
		local_time(end, when, sizeof when);
		printf("%-14s %s\n", "ended", when);
	}
}

/* [0, 3] as "0,3" */
static void gpu_list_text(json_t *a, char *buf, size_t len)
{
	size_t i, off = 0;
	json_t *v;
	buf[0] = '\0';
	json_array_foreach(a, i, v) {
		int w = snprintf(buf + off, len - off, "%s%lld", i ? "," : "", (long long)json_integer_value(v));
		if (w < 0 || (size_t)w >= len - off)
			break;
		off += (size_t)w;
	}
}

#define LINE_FORMAT "%-6s %-12s %-9s %-6s %-12s %-14s %s\n" /* gpuctl queue's table */

static void print_job_line(json_t *j)
{
	char cmd[61] = "";
	size_t off = 0, i;
	json_t *a;
	json_array_foreach(json_object_get(j, "argv"), i, a) {
		off += (size_t)snprintf(cmd + off, off < sizeof cmd ? sizeof cmd - off : 0, "%s%s", i ? " " : "",
					json_string_value(a));
		if (off >= sizeof cmd)
			break;
	}
	/* root sees every user's jobs: what they named them never reaches the terminal raw */
	char safe_cmd[sizeof cmd], user[64], name[128];
	const char *nm = json_string_value(json_object_get(j, "name"));
	/* the GPUs it runs on, or (as squeue's NODELIST(REASON)) why it waits */
	char gpus[64] = "";
	const char *pending = json_string_value(json_object_get(j, "pending"));
	if (pending)
		snprintf(gpus, sizeof gpus, "(%s)", pending);
	else
		gpu_list_text(json_object_get(j, "gpus"), gpus, sizeof gpus);
	char id[24], ngpus[24];
	snprintf(id, sizeof id, "%lld", (long long)json_integer_value(json_object_get(j, "id")));
	snprintf(ngpus, sizeof ngpus, "%lld", (long long)json_integer_value(json_object_get(j, "gpus_requested")));
	printf(LINE_FORMAT, id, cli_safe(user, sizeof user, json_string_value(json_object_get(j, "user"))),
	       json_string_value(json_object_get(j, "state")), ngpus, *gpus ? gpus : "-",
	       nm && *nm ? cli_safe(name, sizeof name, nm) : "-", cli_safe(safe_cmd, sizeof safe_cmd, cmd));
}

static void print_header(void)
{
	printf(LINE_FORMAT, "ID", "USER", "STATE", "NGPU", "GPUS(REASON)", "NAME", "COMMAND");
}

/* one of gpuctld's rows (see op_list): id, user, state, GPUs requested, GPUs or (reason), name,
 * command, apart by tabs; sanitised again here, as every text from another user is */
static void print_row(const char *r, size_t len)
{
	char f[7][256];
	size_t k = 0;
	for (const char *p = r, *end = r + len; k < 7; k++) {
		const char *tab = k < 6 ? memchr(p, '\t', (size_t)(end - p)) : NULL;
		size_t fl = tab ? (size_t)(tab - p) : (size_t)(end - p);
		proc_sanitize(f[k], sizeof f[k], p, fl);
		p = tab ? tab + 1 : end;
	}
	printf(LINE_FORMAT, f[0], f[1], f[2], f[3], *f[4] ? f[4] : "-", *f[5] ? f[5] : "-", f[6]);
}

int cmd_queue(const struct cli_global *g, int argc, char **argv)
{
	(void)g;
	static const struct option opts[] = {
		{"all", no_argument, NULL, 'a'},
		{"json", no_argument, NULL, 'j'},
		{"user", required_argument, NULL, 'u'},
		{"state", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const char *const states[] = {"queued", "running", "done", "failed", "cancelled", "lost"};
	bool all = false, json = false;
	const char *state = NULL;
	long long uid = -1;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ahu:t:", opts, NULL)) != -1) {
		switch (c) {
		case 'a': all = true; break;
		case 'j': json = true; break;
		case 'u': {
			/* a name, or a number as squeue takes it */
			struct passwd pw, *res = NULL;
			char buf[4096], *end;
			if (getpwnam_r(optarg, &pw, buf, sizeof buf, &res) == 0 && res) {
				uid = pw.pw_uid;
			} else {
				errno = 0;
				uid = strtoll(optarg, &end, 10);
				if (!*optarg || *end || errno || uid < 0 || uid > UINT32_MAX) {
					cli_err("invalid --user '%s' (no such user; expected a user name or uid)", optarg);
					return EXIT_USAGE;
				}
			}
			break;
		}
		case 't':
			state = NULL;
			for (size_t i = 0; i < sizeof states / sizeof states[0]; i++)
				if (strcmp(optarg, states[i]) == 0)
					state = states[i];
			if (!state) {
				cli_err("invalid --state '%s' (expected queued, running, done, failed, cancelled or lost)",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			printf("usage: gpuctl queue [--all] [--user USER] [--state STATE] [--json]\n\n"
			       "Your queued and running jobs (root and the admin group: everyone's), a page at a time.\n"
			       "  -a, --all          ended jobs too\n"
			       "  -u, --user USER    only USER's (a name or uid; others than you: root and the admin group)\n"
			       "  -t, --state STATE  only those in STATE: queued, running, done, failed, cancelled or lost\n"
			       "      --json         the list as JSON (schema gpuctl.queue/1)\n");
			return EXIT_OK;
		default:
			return cli_bad_option("queue", c, argv);
		}
	}
	if (optind < argc)
		return cli_extra_arg("queue", argv[optind]);
	/* a page at a time (gpuctld answers a few hundred jobs at most): the whole list, however long;
	 * the table is printed as the pages come, as squeue does, so its first line is there at once */
	json_t *jobs = json_array();
	size_t shown = 0;
	int rc = EXIT_OK;
	for (json_int_t from = 0;;) {
		/* the table as gpuctld's rows of text after its answer (a gpuctld before them answers
		 * jobs: printed as such) */
		json_t *req = json_pack("{s:s, s:b, s:I, s:b}", "op", "list", "all", all, "from", from, "table", !json);
		if (req && state)
			json_object_set_new(req, "state", json_string(state));
		if (req && uid >= 0)
			json_object_set_new(req, "uid", json_integer((json_int_t)uid));
		char err[1400], *rows = NULL;
		size_t len = 0;
		int reached;
		json_t *ans = gpuctld_ask_rows(req, 0, &reached, &rows, &len, err, sizeof err);
		json_decref(req);
		if (!ans) {
			cli_err("%s", err);
			json_decref(jobs);
			return EXIT_FAIL;
		}
		json_t *page = json_object_get(ans, "jobs");
		if (json) {
			json_array_extend(jobs, page);
		} else if (rows) {
			for (const char *r = rows, *end = rows + len; r < end;) {
				const char *nl = memchr(r, '\n', (size_t)(end - r));
				size_t rl = nl ? (size_t)(nl - r) : (size_t)(end - r);
				if (!shown++)
					print_header();
				print_row(r, rl);
				r += rl + 1;
			}
		} else {
			size_t i;
			json_t *j;
			json_array_foreach(page, i, j) {
				if (!shown++)
					print_header();
				print_job_line(j);
			}
		}
		json_int_t next = json_integer_value(json_object_get(ans, "next"));
		json_decref(ans);
		free(rows);
		if (next <= from)
			break;
		from = next;
	}
	if (json) {
		json_t *out = json_pack("{s:s, s:O}", "schema", "gpuctl.queue/1", "jobs", jobs);
		rc = cli_put_json(out);
		json_decref(out);
	} else if (!shown) {
		printf("no job %s\n", state || uid >= 0 ? "matches" : all ? "in the queue's history" : "queued or running");
	}
	json_decref(jobs);
	return fflush(stdout) == 0 ? rc : EXIT_FAIL;
}

/* whether job's log at path was cut (joblog.h): true with what its first line says */
static bool log_cut(const char *path, uint64_t *cut, char *limit, size_t limlen)
{
	int fd = path && *path ? open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
	if (fd < 0)
		return false;
	char head[JOBLOG_MARK_MAX];
	ssize_t n = pread(fd, head, sizeof head, 0);
	close(fd);
	size_t mlen;
	return n > 0 && joblog_parse_mark(head, (size_t)n, cut, &mlen, limit, limlen);
}

int cmd_show(const struct cli_global *g, int argc, char **argv)
{
	(void)g;
	bool json = false;
	const char *id_arg = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("usage: gpuctl show JOB [--json]\n");
			return EXIT_OK;
		} else if (argv[i][0] == '-')
			return bad_word("show", argv[i]);
		else if (id_arg)
			return cli_extra_arg("show", argv[i]);
		else
			id_arg = argv[i];
	}
	long long id;
	int rc;
	if (!id_arg) {
		cli_err("show needs a job id: gpuctl show JOB");
		return EXIT_USAGE;
	}
	if ((rc = parse_id(id_arg, &id)))
		return rc;
	json_t *req = json_pack("{s:s, s:I}", "op", "show", "id", (json_int_t)id);
	json_t *ans = ask(req);
	json_decref(req);
	if (!ans)
		return EXIT_FAIL;
	int out = EXIT_OK;
	uint64_t cut = 0;
	char limit[32] = "";
	bool was_cut = log_cut(json_string_value(json_object_get(ans, "log")), &cut, limit, sizeof limit);
	if (json) {
		if (was_cut)
			json_object_set_new(ans, "log_cut", json_pack("{s:I, s:s}", "bytes", (json_int_t)cut, "limit", limit));
		out = cli_put_json(ans);
	} else {
		json_t *j = json_object_get(ans, "job");
		const char *k;
		json_t *v;
		char safe[8192];
		json_object_foreach(j, k, v) {
			size_t kl = strlen(k);
			if (kl > 3 && strcmp(k + kl - 3, "_ms") == 0)
				continue; /* the times, in words below */
			if (strcmp(k, "pending") == 0 || strcmp(k, "diagnosis") == 0)
				continue; /* pending_reason says it in full; the diagnosis in its own lines below */
			char *t = NULL;
			if (strcmp(k, "gpus") == 0) {
				gpu_list_text(v, safe, sizeof safe);
				printf("%-14s %s\n", k, *safe ? safe : "-");
				continue;
			}
			if (!json_is_string(v))
				t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			printf("%-14s %s\n", k, cli_safe(safe, sizeof safe, t ? t : json_string_value(v)));
			free(t);
		}
		print_times(j);
		/* why it failed, as gpuctl explain read its log: class, what, the fix */
		json_t *d = json_object_get(j, "diagnosis");
		for (size_t i = 0; i < json_array_size(d); i++) {
			json_t *f = json_array_get(d, i);
			char c[128], t[512];
			cli_safe(c, sizeof c, json_string_value(json_object_get(f, "class")));
			cli_safe(t, sizeof t, json_string_value(json_object_get(f, "title")));
			printf("%-14s [%s] %s\n", i ? "" : "diagnosis", c, t);
			printf("%-14s fix: %s\n", "", cli_safe(safe, sizeof safe, json_string_value(json_object_get(f, "fix"))));
		}
		printf("%-14s %s\n", "log", cli_safe(safe, sizeof safe, json_string_value(json_object_get(ans, "log"))));
		if (was_cut)
			printf("%-14s %llu bytes of output cut, the oldest first: the log is kept under %s (gpuctld "
			       "--log-max-size)\n", "log cut", (unsigned long long)cut, cli_safe(safe, sizeof safe, limit));
	}
	json_decref(ans);
	return out;
}

int cmd_cancel(const struct cli_global *g, int argc, char **argv)
{
	(void)g;
	if (argc < 2) {
		cli_err("cancel needs job ids: gpuctl cancel JOB [JOB...]");
		return EXIT_USAGE;
	}
	long long ids[256];
	int n = 0, rc;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("usage: gpuctl cancel JOB [JOB...]\n");
			return EXIT_OK;
		}
		if (n == 256) {
			cli_err("at most 256 jobs at once");
			return EXIT_USAGE;
		}
		if ((rc = parse_id(argv[i], &ids[n++])))
			return rc;
	}
	rc = EXIT_OK;
	for (int i = 0; i < n; i++) {
		json_t *req = json_pack("{s:s, s:I}", "op", "cancel", "id", (json_int_t)ids[i]);
		json_t *ans = ask(req);
		json_decref(req);
		if (!ans) {
			rc = EXIT_FAIL;
			continue;
		}
		printf("job %lld: %s\n", ids[i], json_string_value(json_object_get(ans, "state")));
		json_decref(ans);
	}
	return rc;
}

/* one job's record, or NULL after printing why */
static json_t *job_of(long long id, char *log, size_t loglen)
{
	json_t *req = json_pack("{s:s, s:I}", "op", "show", "id", (json_int_t)id);
	json_t *ans = ask(req);
	json_decref(req);
	if (!ans)
		return NULL;
	if (log)
		snprintf(log, loglen, "%s", json_string_value(json_object_get(ans, "log")));
	json_t *j = json_incref(json_object_get(ans, "job"));
	json_decref(ans);
	return j;
}

static bool final_state(const char *s)
{
	return s && strcmp(s, "queued") != 0 && strcmp(s, "running") != 0;
}

static void nap(void)
{
	nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
}

int cmd_wait(const struct cli_global *g, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) /* waiting for free GPUs, not for jobs */
		if (strncmp(argv[i], "--free", 6) == 0 && (argv[i][6] == '\0' || argv[i][6] == '='))
			return cmd_wait_free(g, argc, argv);
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		FILE *f = argc < 2 ? stderr : stdout;
		fprintf(f, "usage: gpuctl wait JOB [JOB...]\n       gpuctl wait --free N [filters] [--timeout DUR]\n\n"
			   "Wait until the jobs have ended; print \"ID STATE EXIT\" for each; exit with the last one's "
			   "exit code (1 when it was cancelled or lost).\n"
			   "With --free: wait until N GPUs that fit are free, print them (gpuctl wait --free N --help).\n");
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	long long id;
	int rc = EXIT_OK;
	for (int i = 1; i < argc; i++)
		if ((rc = parse_id(argv[i], &id)))
			return rc;
	for (int i = 1; i < argc; i++) {
		parse_id(argv[i], &id);
		json_t *j;
		while ((j = job_of(id, NULL, 0)) && !final_state(json_string_value(json_object_get(j, "state")))) {
			json_decref(j);
			nap();
			if (cli_interrupted())
				return 130;
		}
		if (!j)
			return EXIT_FAIL;
		const char *st = json_string_value(json_object_get(j, "state"));
		json_t *code = json_object_get(j, "exit_code");
		if (code)
			printf("%lld %s %lld\n", id, st, (long long)json_integer_value(code));
		else
			printf("%lld %s -\n", id, st);
		rc = strcmp(st, "done") == 0 ? EXIT_OK
		     : code && strcmp(st, "failed") == 0 ? (int)json_integer_value(code) : EXIT_FAIL;
		json_decref(j);
	}
	fflush(stdout);
	return rc;
}

static void put_out(void *arg, const char *b, size_t n)
{
	(void)arg;
	fwrite(b, 1, n, stdout);
}

int cmd_logs(const struct cli_global *g, int argc, char **argv)
{
	(void)g;
	bool follow = false;
	const char *id_arg = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--follow") == 0)
			follow = true;
		else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("usage: gpuctl logs [-f] JOB\n\nA job's output.\n"
			       "  -f, --follow   follow it until the job ends\n");
			return EXIT_OK;
		} else if (argv[i][0] == '-')
			return bad_word("logs", argv[i]);
		else if (id_arg)
			return cli_extra_arg("logs", argv[i]);
		else
			id_arg = argv[i];
	}
	long long id;
	int rc;
	if (!id_arg) {
		cli_err("logs needs a job id: gpuctl logs [-f] JOB");
		return EXIT_USAGE;
	}
	if ((rc = parse_id(id_arg, &id)))
		return rc;
	char path[4300];
	json_t *j = job_of(id, path, sizeof path);
	if (!j)
		return EXIT_FAIL;
	bool done = final_state(json_string_value(json_object_get(j, "state")));
	json_decref(j);
	/* read by its place in the whole output: a capped log that is cut meanwhile is followed on (joblog.h) */
	int fd = -1;
	struct joblog_pos pos = {0};
	for (;;) {
		if (fd < 0 && (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 && errno != ENOENT) {
			cli_err("cannot read the log of job %lld '%s': %s", id, path, strerror(errno));
			return EXIT_FAIL;
		}
		if (fd >= 0) {
			if (joblog_read(fd, &pos, put_out, NULL) < 0) {
				cli_err("cannot read the log of job %lld '%s': %s", id, path, strerror(errno));
				close(fd);
				return EXIT_FAIL;
			}
			fflush(stdout);
		}
		if (!follow || done)
			break;
		nap();
		if (cli_interrupted())
			break;
		if (!(j = job_of(id, NULL, 0)))
			break;
		/* one more read after the end: what it wrote last */
		done = final_state(json_string_value(json_object_get(j, "state")));
		json_decref(j);
	}
	if (fd >= 0) {
		close(fd);
	} else if (done) {
		cli_err("job %lld has no log: it ended, and gpuctld removed its log (--log-keep, --log-user-max) or could "
			"not create it", id);
		return EXIT_FAIL;
	} else if (!follow) {
		cli_err("job %lld has no log yet (it has not started)", id);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}
