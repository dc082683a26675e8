/*
 * gpuctld.c — the gpuctl daemon: samples every GPU on an interval, keeps a
 * bounded history, and serves Prometheus metrics, a JSON API and a live
 * dashboard over HTTP (docs/daemon.md). Runs in the foreground (systemd
 * Type=simple, contrib/gpuctld.service) and logs to stderr.
 */
#include "config.h"
#include "progerr.h"
#include "opttab.h"
#include "sigstop.h"
#include "enforce.h"
#include "health.h"
#include "http.h"
#include "notify.h"
#include "price.h"
#include "reclaim.h"
#include "queue/queue.h"
#include "jobs/authority.h"
#include "jobs/joblog.h"
#include "util/slurp.h"
#include "util/units.h"
#include "sampler.h"

#include <grp.h>
#include <pwd.h>
#include <limits.h>
#include <sys/stat.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_DB_DIR "/var/lib/gpuctl"
#define DEFAULT_DB DEFAULT_DB_DIR "/queue.db"
#define DEFAULT_SOCKET_DIR "/run/gpuctl"
#define DEFAULT_SOCKET DEFAULT_SOCKET_DIR "/gpuctld.sock"

/* EXIT_OK when the directory that would hold PATH exists, else one line and EXIT_USAGE:
 * gpuctld never makes the parents of a path it was given */
static int parent_dir_exists(const char *opt, const char *path)
{
	char dir[PATH_MAX];
	if (!*path || snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) {
		cli_err("invalid %s '%s' (expected a path)", opt, path);
		return EXIT_USAGE;
	}
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		dir[--n] = '\0';
	char *slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	struct stat st;
	const char *why = stat(dir, &st) < 0 ? (errno == ENOENT ? "does not exist" : strerror(errno))
			  : !S_ISDIR(st.st_mode) ? "is not a directory"
						 : NULL;
	if (why) {
		cli_err("invalid %s '%s': its directory '%s' %s", opt, path, dir, why);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}


/* everything the options set */
struct settings {
	struct sampler_opts so;
	struct http_opts ho;
	struct queue_opts qo;
	struct health_opts hlo;
	struct enforce_opts eo;
	struct notify_opts no;
	struct reclaim_opts ro;
	const char *price_cloud;       /* --gpu-hour-price auto|aws|gcp|azure, or NULL */
	bool queue_on;
	bool authority;
	const char *authority_dir;
	const char *config;            /* --config */
	bool check_only;               /* --check-config */
};

/* a lib parser's verdict (one line in herr) as an exit code */
static int said(int rc, const char *herr)
{
	if (rc < 0)
		cli_err("%s", herr);
	return rc < 0 ? EXIT_USAGE : EXIT_OK;
}

#define ST(o) ((struct settings *)(o))

static int set_labels(const struct opt *o, const char *arg, void *st)
{
	if (strcmp(arg, "dcgm") != 0 && strcmp(arg, "snake") != 0) {
		cli_err("invalid --labels '%s' (expected dcgm or snake)", arg);
		return EXIT_USAGE;
	}
	ST(st)->so.snake_labels = strcmp(arg, "snake") == 0;
	return EXIT_OK;
}

static int set_authority_dir(const struct opt *o, const char *arg, void *st)
{
	if (arg[0] != '/') {
		cli_err("invalid --authority-dir '%s' (expected an absolute path, e.g. /run/gpuctld: clients look there)", arg);
		return EXIT_USAGE;
	}
	ST(st)->authority_dir = arg;
	return EXIT_OK;
}

static int set_admin_group(const struct opt *o, const char *arg, void *st)
{
	struct group gr, *res = NULL;
	char buf[4096];
	if (getgrnam_r(arg, &gr, buf, sizeof buf, &res) != 0 || !res) {
		cli_err("invalid --admin-group '%s' (no such group)", arg);
		return EXIT_USAGE;
	}
	ST(st)->qo.admin_gid = gr.gr_gid;
	return EXIT_OK;
}

static int set_quarantine(const struct opt *o, const char *arg, void *st)
{
	char herr[256];
	return said(health_parse_faults(arg, &ST(st)->hlo, herr, sizeof herr), herr);
}

static int set_quarantine_xids(const struct opt *o, const char *arg, void *st)
{
	char herr[256];
	return said(health_parse_xids(arg, &ST(st)->hlo, herr, sizeof herr), herr);
}

static int set_enforce(const struct opt *o, const char *arg, void *st)
{
	char herr[256];
	return said(enforce_parse_mode(arg, &ST(st)->eo.mode, herr, sizeof herr), herr);
}

static int set_webhook(const struct opt *o, const char *arg, void *st)
{
	char herr[256];
	ST(st)->no.webhook = arg;
	return said(notify_check_url(arg, herr, sizeof herr), herr);
}

static int set_webhook_format(const struct opt *o, const char *arg, void *st)
{
	char herr[256];
	return said(notify_parse_format(arg, &ST(st)->no.slack, herr, sizeof herr), herr);
}

static int set_reclaim_signal(const struct opt *o, const char *arg, void *st)
{
	char herr[256];
	return said(reclaim_parse_signal(arg, &ST(st)->ro.signal, herr, sizeof herr), herr);
}

/* a misspelt name would leave that user's leases reclaimable: every name must exist */
static int set_reclaim_exempt(const struct opt *o, const char *arg, void *st)
{
	char name[256], buf[4096];
	struct passwd pw, *res;
	for (const char *p = arg;;) {
		size_t l = strcspn(p, ",");
		if (l == 0 || l >= sizeof name) {
			cli_err("invalid --reclaim-exempt '%s' (expected user names separated by commas, e.g. alice,bob)", arg);
			return EXIT_USAGE;
		}
		memcpy(name, p, l);
		name[l] = '\0';
		if (getpwnam_r(name, &pw, buf, sizeof buf, &res) != 0 || !res) {
			cli_err("invalid --reclaim-exempt '%s' (no such user '%s')", arg, name);
			return EXIT_USAGE;
		}
		if (!p[l])
			break;
		p += l + 1;
	}
	ST(st)->ro.exempt = arg;
	return EXIT_OK;
}

static int set_price(const struct opt *o, const char *arg, void *st)
{
	ST(st)->price_cloud = NULL;
	if (price_is_cloud(arg)) {
		ST(st)->price_cloud = arg;
		return EXIT_OK;
	}
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (end == arg || *end || errno || !(v >= 0) || v > 1e6) {
		cli_err("invalid --gpu-hour-price '%s' (expected a price in dollars, e.g. 2.5, or auto, aws, gcp, azure: "
			"the cloud instance's)", arg);
		return EXIT_USAGE;
	}
	ST(st)->qo.gpu_hour_price = v;
	return EXIT_OK;
}

static int set_notify_command(const struct opt *o, const char *arg, void *st)
{
	struct stat sb;
	if (arg[0] != '/' || stat(arg, &sb) != 0 || !S_ISREG(sb.st_mode) || access(arg, X_OK) != 0) {
		cli_err("invalid --notify-command '%s' (expected the absolute path of an executable)", arg);
		return EXIT_USAGE;
	}
	ST(st)->no.command = arg;
	return EXIT_OK;
}

#define AT(field) OPT_AT(struct settings, field)
#define FLAG(n, field, h) {OPT_FLAG, n, .help = h, AT(field)}
#define STR(n, a, field, h) {OPT_STRING, n, a, h, AT(field)}
#define CALL(n, a, fn, h) {OPT_CALLBACK, n, a, h, .cb = fn, .flags = OPT_VALUE}

/* gpuctld's options: the command line, the configuration file's keys and --help (gpuctld(8)) */
static const struct opt options[] = {
	{OPT_SECTION, .help = "Sample every GPU and serve, over HTTP:\n"
			      "  /                 a live dashboard\n"
			      "  /metrics          Prometheus metrics (dcgm-exporter's names, and gpuctl_*)\n"
			      "  /api/v1/gpus      the newest sample as JSON\n"
			      "  /api/v1/history   the history as JSON (?seconds=N for the last N seconds)\n"
			      "and run gpuctl submit's queue.\n"},
	STR("sim", "FILE", so.sim, "a simulated node instead of the driver (also $GPUCTL_SIM)"),
	STR("listen", "ADDR:PORT", ho.listen, "where to listen (default 127.0.0.1:9400; port 0: any free port)"),
	FLAG("allow-remote", ho.allow_remote, "allow a --listen address other than loopback"),
	{OPT_DURATION, "interval", "DUR", "time between samples (default 1s; 0.1s to 1h)", AT(so.interval_ms),
	 .min = 100, .max = 3600000, .accepted = "between 0.1s and 1h"},
	{OPT_DURATION, "history", "DUR", "how much history to keep (default 1h; at most 100000 samples)",
	 AT(so.history_ms)},
	{OPT_COUNT, "max-connections", "N", "connections served at once (default 256)", AT(ho.max_connections),
	 .min = 1, .max = 65536},
	{OPT_COUNT, "max-per-client", "N",
	 "connections one local user (by uid) or one remote address may hold (default 32)", AT(ho.per_client),
	 .min = 1, .max = 65536},
	{OPT_DURATION, "timeout", "DUR",
	 "cut off a request not answered this long after it began, however slowly the client sends it (default 10s)",
	 AT(ho.timeout_s), .min = 1000, .max = 3600000, .accepted = "between 1s and 1h", .flags = OPT_SECONDS},
	{OPT_COUNT, "threads", "N", "request threads (default: the number of CPUs, at most 8)", AT(ho.threads),
	 .min = 1, .max = 64},
	CALL("labels", "dcgm|snake",
	     set_labels, "dcgm (default): dcgm-exporter's modelName label; snake: model_name, which promtool check "
			 "metrics does not flag"),
	{OPT_SECTION, .help = "\nThe queue:"},
	{OPT_FLAG, "no-queue", .help = "no job queue (metrics and dashboard only)", AT(queue_on), .flags = OPT_NEG},
	FLAG("authority", authority, "authority mode, for a shared machine: gpuctld alone grants leases, ports and "
				     "places in line (docs/security.md); needs root and the queue"),
	CALL("authority-dir", "DIR", set_authority_dir,
	     "its socket and marker (default /run/gpuctld; clients read GPUCTL_AUTHORITY_DIR)"),
	STR("queue-db", "FILE", qo.db, "the queue (default /var/lib/gpuctl/queue.db)"),
	STR("queue-socket", "PATH", qo.socket,
	    "where gpuctl submit/queue/show/cancel connect (default /run/gpuctl/gpuctld.sock)"),
	STR("log-dir", "DIR", qo.log_dir, "job logs, DIR/ID.log (default /var/lib/gpuctl/logs)"),
	{OPT_DURATION, "log-keep", "DUR", "remove a job's log this long after it ended (default 30d; 0: never)",
	 AT(qo.log_keep_ms), .flags = OPT_ZERO},
	{OPT_SIZE, "log-max-size", "SIZE",
	 "a job's log is cut, its oldest output first, to stay under SIZE; the log says how much was cut (default "
	 "1GiB; at least 64KiB; 0: no cap)",
	 AT(qo.log_max), .min = JOBLOG_MIN, .accepted = "a size of at least 64KiB, e.g. 1G, or 0 for no cap",
	 .flags = OPT_ZERO},
	{OPT_SIZE, "log-user-max", "SIZE",
	 "one user's logs in all: over it, the logs of that user's ended jobs are removed, the oldest ended first "
	 "(default 10GiB; 0: no limit)",
	 AT(qo.log_user_max), .min = JOBLOG_MIN, .accepted = "a size of at least 64KiB, e.g. 10G, or 0 for no limit",
	 .flags = OPT_ZERO},
	{OPT_DURATION, "job-keep", "DUR",
	 "forget a job (its record and log) this long after it ended (default 90d; 0: never)", AT(qo.job_keep_ms),
	 .flags = OPT_ZERO},
	CALL("admin-group", "GROUP", set_admin_group, "members may see and cancel every job (root always may)"),
	{OPT_COUNT, "max-queued", "N",
	 "queued jobs one user may have (default 10000; 0: no limit; not root or the admin group)", AT(qo.max_queued),
	 .min = 1, .max = 100000000, .flags = OPT_ZERO},
	{OPT_SIZE, "max-job-bytes", "SIZE",
	 "a job's command line and environment, as kept (default 256KiB; 0: no limit; a request is at most 1MiB "
	 "in any case)",
	 AT(qo.max_job_bytes), .min = 4096, .max = 1 << 20,
	 .accepted = "a size from 4KiB to 1MiB, e.g. 256KiB, or 0", .flags = OPT_ZERO},
	{OPT_DURATION, "fair-share-half-life", "DUR",
	 "among jobs of equal priority, users with less GPU time first, that time decaying by half each DUR "
	 "(default 0: off, first come first served)",
	 AT(qo.fair_half_life_ms), .flags = OPT_ZERO | OPT_OFF},
	CALL("gpu-hour-price", "USD", set_price,
	     "what a GPU-hour costs, for gpuctl usage (default 0: no cost shown); auto, aws, gcp, azure: this cloud "
	     "instance's, from gpuctl advise's price snapshot"),
	{OPT_SECTION, .help = "\nPolicies (docs/policy.md):"},
	CALL("quarantine", "LIST", set_quarantine,
	     "faults that take a GPU out of service until 'gpuctl quarantine clear': xid,ecc,remap,lost (default: "
	     "all), or off"),
	CALL("quarantine-xids", "LIST", set_quarantine_xids,
	     "the Xids that quarantine: reset (default: those that need a GPU reset, 46,48,62,64,74,79,95,109,110,119,120,136,140,143,154,155,156,158,168,171,172), "
	     "all, or numbers (48,79)"),
	CALL("enforce", "MODE", set_enforce,
	     "a process on a GPU another user leased: off (default), warn (log and count it), kill (SIGTERM, SIGKILL "
	     "after --enforce-grace)"),
	{OPT_DURATION, "enforce-grace", "DUR", "from SIGTERM to SIGKILL (default 10s)", AT(eo.grace_ms)},
	FLAG("enforce-root", eo.root, "root's processes too (default: reported, never signalled)"),
	FLAG("enforce-unleased", eo.unleased,
	     "all GPU work must be leased: a process on a GPU nobody leased is one too"),
	{OPT_DURATION, "reclaim-after", "DUR",
	 "a lease whose GPUs stay idle this long is reclaimed: notified, then a --reclaim-grace apart the "
	 "checkpoint signal, SIGTERM, SIGKILL (default off)",
	 AT(ro.after_ms), .flags = OPT_ZERO | OPT_OFF},
	{OPT_DURATION, "reclaim-grace", "DUR", "between those steps (default 5m)", AT(ro.grace_ms)},
	CALL("reclaim-signal", "SIG", set_reclaim_signal, "the checkpoint signal to the job (default USR1)"),
	{OPT_COUNT, "reclaim-util", "PCT", "idle: utilization and memory activity at most PCT % (default 5)",
	 AT(ro.util), .min = 0, .max = 100, .accepted = "a percentage, 0 to 100"},
	CALL("reclaim-exempt", "USERS", set_reclaim_exempt, "users whose leases are never reclaimed (alice,bob)"),
	{OPT_SECTION, .help = "\nNotifications (docs/policy.md):"},
	CALL("webhook", "URL", set_webhook,
	     "POST each event (job started, ended, failed; GPU quarantined, freed; policy violation) as JSON to URL"),
	CALL("webhook-format", "F", set_webhook_format, "json (default) or slack ({\"text\": ...})"),
	{OPT_DURATION, "webhook-timeout", "DUR", "each POST's limit (default 5s; one retry); also --notify-command's",
	 AT(no.timeout_ms), .min = 100, .max = 600000, .accepted = "between 0.1s and 10m"},
	CALL("notify-command", "PATH", set_notify_command,
	     "run PATH for each event, the JSON on its stdin, GPUCTL_EVENT its name"),
	{OPT_SECTION, .help = "\nThis command line:"},
	{OPT_STRING, "config", "FILE",
	 "read 'key = value' lines, keys being these options without the dashes, before the command line (default "
	 "$GPUCTLD_CONFIG, else /etc/gpuctl/gpuctld.conf if it exists)",
	 AT(config), .flags = OPT_NOCONF},
	{OPT_FLAG, "check-config", .help = "read the configuration and the command line, say whether they are good "
					   "(exit 0, or 2 with the error), and start nothing",
	 AT(check_only), .flags = OPT_NOCONF},
	{OPT_CALLER, "version", .help = "print gpuctld's version", .val = 'V', .flags = OPT_NOCONF},
	{OPT_CALLER, "help", .help = "print this help", .val = 'h', .flags = OPT_NOCONF},
	{OPT_END},
};

#define DEFAULT_CONFIG "/etc/gpuctl/gpuctld.conf"
#define CONFIG_MAX (1024 * 1024) /* bytes */

/* the configuration file's text: the values applied point into it for as long as gpuctld runs */
static char *config_text;

/*
 * Apply the configuration file: a line "key = value" is the option --key
 * value (a flag: key = yes or no), blank lines and lines starting with # are
 * skipped. The command line comes after it, so its options win. A missing
 * default file is no error.
 */
static int read_config(const char *path, bool named, bool from_env, struct settings *st)
{
	size_t len = 0;
	char err[PATH_MAX + 256];
	int src = slurp(path, CONFIG_MAX, &config_text, &len, err, sizeof err);
	if (src == GC_ENOTFOUND && !named)
		return EXIT_OK;
	if (src != GC_OK) {
		cli_err("cannot read the configuration file%s: %s", from_env ? " (GPUCTLD_CONFIG)" : "", err);
		return EXIT_USAGE;
	}
	if (strlen(config_text) != len) {
		cli_err("invalid configuration file '%s': it holds a NUL byte (expected text)", path);
		return EXIT_USAGE;
	}
	char where[PATH_MAX + 32];
	int rc = EXIT_OK;
	unsigned lineno = 0;
	for (char *line = config_text, *next; rc == EXIT_OK && line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		snprintf(where, sizeof where, "%s:%u", path, lineno);
		cli_where = where;
		char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		char *e = p + strlen(p);
		while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			*--e = '\0';
		if (!*p || *p == '#')
			continue;
		char *eq = strchr(p, '=');
		if (!eq) {
			cli_err("expected 'key = value', got '%.60s'", p);
			rc = EXIT_USAGE;
			break;
		}
		char *k = eq;
		while (k > p && (k[-1] == ' ' || k[-1] == '\t'))
			k--;
		*k = '\0';
		char *v = eq + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		size_t vl = strlen(v);
		if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
			v[vl - 1] = '\0';
			v++;
		}
		const struct opt *o = opt_find(options, p);
		if (!o || (o->flags & OPT_NOCONF)) {
			cli_err("unknown key '%.60s' (keys are gpuctld's long options without the dashes; see "
				"gpuctld(8))", p);
			rc = EXIT_USAGE;
			break;
		}
		if (!opt_takes_value(o)) {
			bool yes = !strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1");
			bool no = !strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0");
			if (!yes && !no) {
				cli_err("invalid %s '%.60s' (expected yes or no)", p, v);
				rc = EXIT_USAGE;
				break;
			}
			if (yes)
				rc = opt_apply(o, NULL, st);
		} else {
			rc = opt_apply(o, v, st);
		}
	}
	cli_where = NULL;
	return rc;
}

int main(int argc, char **argv)
{
	cli_prog = "gpuctld";
	const char *env = getenv("GPUCTL_SIM");
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct settings st = {
		.so = {.sim = env && *env ? env : NULL, .interval_ms = 1000, .history_ms = 3600000},
		.ho = {
			.listen = "127.0.0.1:9400", .max_connections = 256, .per_client = 32, .timeout_s = 10,
			.threads = cpus < 1 ? 1 : cpus > 8 ? 8 : (unsigned)cpus,
		},
		.qo = {
			.db = DEFAULT_DB, .socket = NULL, .log_dir = DEFAULT_DB_DIR "/logs",
			.log_keep_ms = 30 * 86400000LL, .log_max = 1ULL << 30, .log_user_max = 10ULL << 30,
			.admin_gid = (gid_t)-1, .max_queued = 10000,
			.max_job_bytes = 256 * 1024, .job_keep_ms = 90 * 86400000LL,
		},
		.hlo = {.faults = HEALTH_ALL},
		.eo = {.mode = ENFORCE_OFF, .grace_ms = 10000},
		.no = {.timeout_ms = 5000},
		.ro = {.after_ms = 0, .grace_ms = 300000, .signal = SIGUSR1, .util = 5},
		.queue_on = true,
	};
	char herr[256];
	(void)health_parse_xids("reset", &st.hlo, herr, sizeof herr);
	int c, rc;
	const struct opt *o;
	const char *arg;
	struct optparse op;
	if (optparse_init(&op, options, NULL, NULL, false) != GC_OK) {
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	/* the configuration file first (--config, else $GPUCTLD_CONFIG, else the default one), then the
	 * command line; a file named either way must exist */
	const char *config = DEFAULT_CONFIG, *cenv = getenv("GPUCTLD_CONFIG");
	bool named = false, from_env = false;
	if (cenv && *cenv) {
		config = cenv;
		named = from_env = true;
	}
	while ((c = optparse_next(&op, argc, argv, &o, &arg)) != -1 && c != 'h' && c != 'V' && c != '?' && c != ':') {
		if (o && strcmp(o->name, "config") == 0) {
			config = arg;
			named = true;
			from_env = false;
		}
	}
	if (c != 'h' && c != 'V' && c != '?' && c != ':' && (rc = read_config(config, named, from_env, &st))) {
		optparse_free(&op);
		return rc;
	}
	optind = 0;
	while ((c = optparse_next(&op, argc, argv, &o, &arg)) != -1) {
		rc = c == 'V' ? (printf("gpuctld %s\n", GPUCTL_VERSION), EXIT_OK)
		     : c == 'h' ? (opt_synopsis(stdout, "gpuctld", options), putchar('\n'), opt_help(stdout, options), EXIT_OK)
		     : !o	? cli_bad_option("gpuctld", c, argv)
				: opt_apply(o, arg, &st);
		if (rc || c == 'V' || c == 'h') {
			optparse_free(&op);
			return rc;
		}
	}
	optparse_free(&op);
	bool check_only = st.check_only, socket_given = st.qo.socket != NULL;
	if (!socket_given)
		st.qo.socket = DEFAULT_SOCKET;
	struct sampler_opts so = st.so;
	struct http_opts ho = st.ho;
	struct queue_opts qo = st.qo;
	bool queue_on = st.queue_on;
	if (optind < argc)
		return cli_extra_arg("gpuctld", argv[optind]);
	if (so.history_ms / so.interval_ms > 100000) {
		cli_err("--history holds at most 100000 samples (%lld at this --interval); shorten it or sample less often",
			(long long)(so.history_ms / so.interval_ms));
		return EXIT_USAGE;
	}
	if (!queue_on && (qo.fair_half_life_ms > 0 || qo.gpu_hour_price > 0 || st.price_cloud))
		/* accounting and fair share live in the queue's database: said, not silently dropped */
		fprintf(stderr, "gpuctld: warning: %s has no effect with --no-queue (accounting and fair share are the "
			"queue's)\n", qo.fair_half_life_ms > 0 ? "--fair-share-half-life" : "--gpu-hour-price");
	char auth_sock[PATH_MAX];
	if (st.authority) {
		/* its socket is in a directory of root's alone, where clients look for it (authority.h) */
		const char *dir = st.authority_dir ? st.authority_dir : AUTHORITY_DIR;
		if (!queue_on) {
			cli_err("--authority needs the queue: it grants leases in one line with queued jobs (drop --no-queue)");
			return EXIT_USAGE;
		}
		if (snprintf(auth_sock, sizeof auth_sock, "%s/%s", dir, AUTHORITY_SOCKET) >= 100) {
			cli_err("invalid --authority-dir '%s': too long a path for a socket", dir);
			return EXIT_USAGE;
		}
		if (socket_given && strcmp(qo.socket, auth_sock) != 0) {
			cli_err("--queue-socket with --authority: the socket is '%s' (set --authority-dir instead)", auth_sock);
			return EXIT_USAGE;
		}
		if (!check_only && geteuid() != 0) {
			cli_err("--authority needs root: only root's gpuctld is believed by clients");
			return EXIT_USAGE;
		}
		qo.socket = auth_sock;
		qo.authority_dir = dir;
	} else if (st.authority_dir && strcmp(st.authority_dir, AUTHORITY_DIR) != 0) {
		/* said, not silently dropped */
		fprintf(stderr, "gpuctld: warning: --authority-dir has no effect without --authority\n");
	}
	/* what start would refuse as a mistake of the command line, --check-config refuses too */
	char lerr[512];
	if (http_check_listen(&ho, lerr, sizeof lerr) < 0) {
		cli_err("%s", lerr);
		return EXIT_USAGE;
	}
	if (queue_on && ((strcmp(qo.db, DEFAULT_DB) != 0 && (rc = parent_dir_exists("--queue-db", qo.db))) ||
			 (!qo.authority_dir && strcmp(qo.socket, DEFAULT_SOCKET) != 0 &&
			  (rc = parent_dir_exists("--queue-socket", qo.socket))) ||
			 (strcmp(qo.log_dir, DEFAULT_DB_DIR "/logs") != 0 && (rc = parent_dir_exists("--log-dir", qo.log_dir)))))
		return rc;
	if (check_only) {
		/* the file and the command line parsed: say what was read, start nothing */
		printf("gpuctld: configuration OK (%s%s)\n", named || access(config, F_OK) == 0 ? config : "no file, ",
		       named || access(config, F_OK) == 0 ? "" : "defaults and the command line");
		return EXIT_OK;
	}
	char runner_path[PATH_MAX + 32];
	if (queue_on) {
		/* the job runner beside gpuctld (the build tree), else the installed one */
		char self[PATH_MAX];
		ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
		self[sl > 0 ? sl : 0] = '\0';
		char *slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
		snprintf(runner_path, sizeof runner_path, "%s/gpuctld-runner", self);
		if (!slash || access(runner_path, X_OK) != 0)
			snprintf(runner_path, sizeof runner_path, "%s", GPUCTL_LIBEXECDIR "/gpuctld-runner");
		qo.runner = runner_path;
	}
	/* jobs run in their own directories: they need the node file by its absolute path */
	char simabs[PATH_MAX];
	qo.sim = so.sim && realpath(so.sim, simabs) ? simabs : so.sim;
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	so.hostname = host;

	/* stop cleanly on TERM/INT; the sampler and server threads must not take them */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	signal(SIGPIPE, SIG_IGN);

	char err[512], url[128] = "";
	struct sampler *s = NULL;
	struct http *h = NULL;
	struct health *hl = NULL;
	struct notify *nt = NULL;
	struct enforce *ef = NULL;
	struct reclaim *rc_ = NULL;
	struct queue *q = NULL;
	/* --gpu-hour-price auto: the cloud instance's price, from advise's catalog */
	char price_desc[300] = "";
	if (queue_on && st.price_cloud) {
		double p;
		if (price_find(st.price_cloud, &p, price_desc, sizeof price_desc, err, sizeof err) == 0) {
			qo.gpu_hour_price = p;
			qo.price_source = price_desc;
			fprintf(stderr, "gpuctld: a GPU-hour costs $%.4g: %s\n", p, price_desc);
		} else {
			fprintf(stderr, "gpuctld: --gpu-hour-price %s: %s; gpuctl usage shows no cost\n", st.price_cloud, err);
		}
	}
	/*
	 * First take everything that another gpuctld or another program may hold:
	 * the queue's locks, its socket, the listen address. Only then does anything
	 * act (enforcement, reclaim, quarantine, dispatch, notifications): a gpuctld
	 * that cannot start has signalled, marked and started nothing.
	 */
	rc = EXIT_FAIL;
	if (queue_on) {
		/* the default places, /var/lib/gpuctl for the database and logs and /run/gpuctl for the
		 * socket, are made when missing; a directory named on the command line must exist */
		if (strcmp(qo.db, DEFAULT_DB) == 0)
			(void)mkdir(DEFAULT_DB_DIR, 0711);
		if (strcmp(qo.socket, DEFAULT_SOCKET) == 0 && mkdir(DEFAULT_SOCKET_DIR, 0700) == 0)
			(void)chmod(DEFAULT_SOCKET_DIR, 01777); /* shared with gpuctl's leases, like /tmp */
		struct stat ads;
		if (qo.authority_dir && (mkdir(qo.authority_dir, 0755) == 0 || errno == EEXIST) &&
		    (lstat(qo.authority_dir, &ads) < 0 || !S_ISDIR(ads.st_mode) || ads.st_uid != 0 ||
		     (ads.st_mode & (S_IWGRP | S_IWOTH)))) {
			cli_err("invalid --authority-dir '%s': it must be a directory of root's, writable by root alone",
				qo.authority_dir);
			return EXIT_USAGE;
		}
		if (qo.authority_dir && access(qo.authority_dir, W_OK) < 0) {
			cli_err("cannot use --authority-dir '%s': %s", qo.authority_dir, strerror(errno));
			return EXIT_FAIL;
		}
		int drc;
		if ((drc = parent_dir_exists("--queue-db", qo.db)) || (drc = parent_dir_exists("--queue-socket", qo.socket)) ||
		    (drc = parent_dir_exists("--log-dir", qo.log_dir)))
			return drc;
		if (queue_open(&q, &qo, err, sizeof err) < 0) {
			cli_err("%s", err);
			return EXIT_FAIL;
		}
	}
	bool bad_usage = false;
	if (http_open(&h, &ho, url, sizeof url, &bad_usage, err, sizeof err) < 0) {
		cli_err("%s", err);
		rc = bad_usage ? EXIT_USAGE : EXIT_FAIL;
		goto out;
	}
	/* held: now the parts that act */
	st.no.hostname = host;
	if (notify_start(&nt, &st.no, err, sizeof err) < 0) {
		cli_err("%s", err);
		goto out;
	}
	st.hlo.sim = so.sim;
	st.hlo.notify = st.eo.notify = st.ro.notify = so.notify = nt;
	ef = enforce_new(&st.eo);
	rc_ = st.ro.after_ms > 0 ? reclaim_new(&st.ro) : NULL;
	so.reclaim = rc_;
	int gr = ef && (rc_ || !st.ro.after_ms) ? health_start(&hl, &st.hlo, err, sizeof err) : GC_ENOMEM;
	if (gr == GC_ENOMEM)
		snprintf(err, sizeof err, "out of memory");
	if (gr == GC_OK) {
		so.health = hl;
		so.enforce = ef;
		gr = sampler_start(&s, &so, err, sizeof err);
	}
	if (gr != GC_OK) {
		cli_err("%s", err);
		rc = cli_exit_code(gr) == EXIT_OK ? EXIT_FAIL : cli_exit_code(gr);
		goto out;
	}
	if (http_serve(h, s, q, err, sizeof err) < 0 || (q && queue_run(q, s, nt, err, sizeof err) < 0)) {
		cli_err("%s", err);
		goto out;
	}
	static const int stop_sigs[] = {SIGTERM, SIGINT, SIGHUP};
	sigstop_catch(stop_sigs, sizeof stop_sigs / sizeof stop_sigs[0]);
	fprintf(stderr, "gpuctld: listening on %s (%zu GPU%s, a sample every %d ms, %lld s of history)\n", url,
		sampler_ngpus(s), sampler_ngpus(s) == 1 ? "" : "s", so.interval_ms,
		(long long)(so.history_ms / 1000));
	if (q)
		fprintf(stderr, "gpuctld: queue on %s (%s; jobs run by %s)\n", qo.socket, qo.db, qo.runner);
	if (qo.authority_dir)
		fprintf(stderr, "gpuctld: authority mode: every lease, port and place in line is granted here (marker %s/%s)\n",
			qo.authority_dir, AUTHORITY_MARKER);
	while (!sigstop_last)
		sigsuspend(&old);
	fprintf(stderr, "gpuctld: stopping (signal %d)\n", (int)sigstop_last);
	rc = EXIT_OK;
out:
	http_stop(h);
	queue_stop(q);
	sampler_stop(s);
	health_stop(hl);
	enforce_free(ef);
	reclaim_free(rc_);
	notify_stop(nt);
	return rc;
}
