/*
 * cmd-launch.c — `gpuctl launch`: multi-GPU torchrun on this node, or a
 * multi-node job through Slurm.
 *
 * On one node it is `gpuctl run` with torchrun in front: lease N GPUs (or
 * every free one), hold a rendezvous port no other launch can get, export
 * fail-fast defaults the user has not set, expand {gpus}-style placeholders
 * and run torchrun with --nproc_per_node = the GPUs leased.
 *
 * With --slurm it writes a batch script (requeue, signal forwarding, the
 * rendezvous on the allocation's first node) and submits it; the script
 * runs `gpuctl launch --slurm-step` on every node, which is the one-node
 * path with Slurm's node count, node rank and job id.
 */
#include "capture.h"
#include "jobs/launch.h"
#include "jobs/port.h"
#include "runjob.h"
#include "torchprobe.h"
#include "sigstop.h"
#include "opttab.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SLURM_TIMEOUT_MS 30000
#define PROBE_TIMEOUT_MS 10000

struct launch {
	char *const *launcher;       /* static */
	char **cmd;                  /* the user's SCRIPT ARGS, borrowed from argv */
	bool literal;                /* --no-placeholders */
	bool step;                   /* --slurm-step */
	const char *endpoint;        /* --rdzv-endpoint (step) */
	unsigned nnodes, node_rank;  /* step: from Slurm */
	char rdzv_id[64];
	struct port_hold *port;
	char **expanded;             /* cmd with placeholders expanded */
	char **argv;                 /* the launcher's full command line */
	char endpoint_buf[272];
	struct torchprobe probe;     /* the launcher's Python and PyTorch */
};

static long cpus_available(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		return CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? n : 1;
}

static int choose_launcher(const char *arg, struct launch *L)
{
	bool py = strcmp(arg, "python") == 0;
	if (strcmp(arg, "torchrun") == 0) {
		L->launcher = torchprobe_torchrun;
	} else if (strcmp(arg, "auto") == 0 || py) {
		if (!(L->launcher = torchprobe_auto(py))) {
			cli_err("neither %spython3 nor python is on PATH (install PyTorch, or activate its environment)",
				py ? "" : "torchrun, ");
			return EXIT_FAIL;
		}
	} else {
		cli_err("invalid --launcher '%s' (expected auto, torchrun or python)", arg);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/*
 * The launcher's PyTorch, asked once before the job starts (one Python start, no torch import):
 * what its torchrun parses and whether it knows expandable_segments. Says once what it works around.
 */
static void probe_launcher(struct launch *L)
{
	torchprobe_run(L->launcher, PROBE_TIMEOUT_MS, &L->probe);
	const struct torchenv *t = &L->probe.t;
	if (L->probe.known && torchenv_std_bug(t))
		cli_err("PyTorch %s on Python %d.%d (%s): its torchrun dies at start with the default --redirects 0 "
			"--tee 0 (fixed in PyTorch 2.0); working around it with --redirects=1 --tee=1, so each "
			"process's stdout reaches this terminal through torchrun, its lines prefixed with the rank",
			t->version, t->py_major, t->py_minor, L->probe.python);
}

static void launch_free(struct launch *L)
{
	launch_argv_free(L->expanded);
	launch_argv_free(L->argv);
	port_release(L->port);
	torchprobe_release(&L->probe);
	L->expanded = L->argv = NULL;
	L->port = NULL;
}

/* placeholders: every argument, or a copy as given with --no-placeholders */
static int expand_all(struct launch *L, const struct launch_vars *v)
{
	size_t n = 0;
	while (L->cmd[n])
		n++;
	L->expanded = calloc(n + 1, sizeof *L->expanded);
	if (!L->expanded) {
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	for (size_t i = 0; i < n; i++) {
		char err[512];
		if (L->literal) {
			L->expanded[i] = strdup(L->cmd[i]);
		} else if (launch_expand(L->cmd[i], v, &L->expanded[i], err, sizeof err) < 0) {
			cli_err("%s", err);
			return EXIT_USAGE;
		}
		if (!L->expanded[i]) {
			cli_err("out of memory");
			return EXIT_FAIL;
		}
	}
	return EXIT_OK;
}

/* runjob's ready(): the GPUs are chosen; build torchrun's command and environment */
static int launch_ready(struct runjob *j, const unsigned *chosen, struct lease_dir *d)
{
	(void)chosen;
	struct launch *L = j->arg;
	unsigned gpus = j->r.jg.sel.n;
	int rc;
	if (!L->step) {
		char err[512];
		int port;
		/* a dry run holds nothing, but still names a port free now */
		int pr = port_reserve(j->dry_run ? NULL : d, &port, &L->port, err, sizeof err);
		if (pr != GC_OK) {
			cli_err("%s", err);
			return EXIT_FAIL;
		}
		snprintf(L->endpoint_buf, sizeof L->endpoint_buf, "127.0.0.1:%d", port);
		L->endpoint = L->endpoint_buf;
		L->nnodes = 1;
		L->node_rank = 0;
		if (!j->jo.sv.run_id[0])
			supervise_new_run_id(j->jo.sv.run_id);
		snprintf(L->rdzv_id, sizeof L->rdzv_id, "%s", j->jo.sv.run_id);
	}
	struct launch_vars v = {.gpus = gpus, .nodes = L->nnodes, .world_size = (int64_t)gpus * L->nnodes};
	if ((rc = expand_all(L, &v)))
		return rc;
	struct launch_torchrun t = {
		.nnodes = L->nnodes, .nproc_per_node = gpus, .node_rank = L->node_rank, .node_rank_opt = L->step,
		.endpoint = L->endpoint, .rdzv_id = L->rdzv_id,
		.std_workaround = L->probe.known && torchenv_std_bug(&L->probe.t),
	};
	if (!(L->argv = launch_torchrun_argv(L->launcher, &t, L->expanded))) {
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	struct launch_default def[8];
	size_t nd = launch_defaults(gpus, cpus_available(), L->probe.known ? &L->probe.t : NULL, def,
				    sizeof def / sizeof def[0]);
	for (size_t i = 0; i < nd; i++) {
		/* the user's own setting wins, even an empty one; the old NCCL_ name counts too */
		if (getenv(def[i].name) ||
		    (strcmp(def[i].name, "TORCH_NCCL_ASYNC_ERROR_HANDLING") == 0 && getenv("NCCL_ASYNC_ERROR_HANDLING")))
			continue;
		if ((rc = runjob_setenv(j, def[i].name, def[i].value)))
			return rc;
	}
	j->jo.sv.argv = L->argv;
	return EXIT_OK;
}

/* ---- Slurm ---------------------------------------------------------------- */

/* "train.py" → "train": a job name Slurm shows as it is */
static void job_name_from(const char *script, char *buf, size_t len)
{
	const char *base = strrchr(script, '/');
	base = base ? base + 1 : script;
	size_t n = strlen(base);
	if (n > 3 && strcmp(base + n - 3, ".py") == 0)
		n -= 3;
	size_t k = 0;
	for (size_t i = 0; i < n && k + 1 < len && k < 64; i++) {
		char c = base[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '_' || c == '-' || c == '.' || c == '+';
		buf[k++] = ok ? c : '_';
	}
	if (k == 0)
		snprintf(buf, len, "gpuctl");
	else
		buf[k] = '\0';
}

/* "JobState=RUNNING" → "RUNNING" in a `scontrol show job -o` line */
static bool field(const char *line, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);
	for (const char *p = line; (p = strstr(p, key)); p += kl) {
		if ((p != line && p[-1] != ' ') || p[kl] != '=')
			continue;
		const char *v = p + kl + 1;
		size_t n = strcspn(v, " \n");
		if (n >= len)
			n = len - 1;
		memcpy(buf, v, n);
		buf[n] = '\0';
		return true;
	}
	return false;
}


static bool terminal_state(const char *s)
{
	static const char *const done[] = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
					   "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED"};
	for (size_t i = 0; i < sizeof done / sizeof done[0]; i++)
		if (strcmp(s, done[i]) == 0)
			return true;
	return false;
}

/* copy what the output file has gained since *off to stdout */
static void drain_output(const char *path, off_t *off)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && st.st_size < *off)
		*off = 0; /* truncated: start again */
	if (fseeko(f, *off, SEEK_SET) == 0) {
		char buf[65536];
		size_t n;
		while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
			fwrite(buf, 1, n, stdout);
			*off += (off_t)n;
		}
		fflush(stdout);
	}
	fclose(f);
}

/* --follow: the job's state changes on stderr and its output on stdout, until it ends */
static int follow(const char *id)
{
	static const int sigs[] = {SIGINT, SIGTERM};
	sigstop_catch(sigs, sizeof sigs / sizeof sigs[0]);
	char last[64] = "", out_path[4096] = "";
	long restarts = 0;
	off_t off = 0;
	int gone = 0;
	for (;;) {
		char *const argv[] = {"scontrol", "show", "job", "-o", (char *)id, NULL};
		char *out = NULL;
		int why;
		int st = capture_run(argv, NULL, true, SLURM_TIMEOUT_MS, &out, &why);
		char state[64] = "", reason[128] = "", rc_text[32] = "", cnt[32] = "";
		if (st == 0 && out && field(out, "JobState", state, sizeof state)) {
			gone = 0;
			field(out, "Reason", reason, sizeof reason);
			field(out, "ExitCode", rc_text, sizeof rc_text);
			if (field(out, "StdOut", out_path, sizeof out_path) && out_path[0] != '/')
				out_path[0] = '\0';
			if (field(out, "Restarts", cnt, sizeof cnt))
				restarts = strtol(cnt, NULL, 10);
		} else if (++gone >= 3) {
			free(out);
			cli_err("job %s: cannot read its state from scontrol any more; not following it", id);
			return EXIT_FAIL;
		}
		free(out);
		if (out_path[0])
			drain_output(out_path, &off);
		if (state[0] && strcmp(state, last) != 0) {
			if (strcmp(reason, "None") != 0 && reason[0])
				cli_err("job %s: %s (%s)%s", id, state, reason, restarts ? ", requeued" : "");
			else
				cli_err("job %s: %s", id, state);
			snprintf(last, sizeof last, "%s", state);
		}
		if (state[0] && terminal_state(state)) {
			if (out_path[0])
				drain_output(out_path, &off);
			/* ExitCode=A:B: the script's status A, or the signal B that ended it */
			int a = 0, b = 0;
			if (sscanf(rc_text, "%d:%d", &a, &b) != 2)
				return strcmp(state, "COMPLETED") == 0 ? EXIT_OK : EXIT_FAIL;
			if (b)
				return 128 + b;
			return a ? a : (strcmp(state, "COMPLETED") == 0 ? EXIT_OK : EXIT_FAIL);
		}
		for (int t = 0; t < 10 && !sigstop_last; t++)
			poll(NULL, 0, 100);
		if (sigstop_last) {
			cli_err("no longer following job %s; it goes on (scancel %s stops it)", id, id);
			return 128 + sigstop_last;
		}
	}
}

struct slurm_opts {
	unsigned nodes, gpus_per_node, cpus_per_task, max_requeues;
	const char *partition, *time, *account, *job_name, *output;
	bool follow, gpus_given;
	char *step_opts[40];         /* borrowed strings or owned (owned[] says) */
	bool owned[40];
	size_t n_step;
};

static int step_opt(struct slurm_opts *s, const char *name, const char *arg)
{
	/* room is kept for "-n", the count and the NULL that slurm_submit adds */
	if (s->n_step + 4 > sizeof s->step_opts / sizeof s->step_opts[0]) {
		cli_err("too many options for --slurm");
		return EXIT_USAGE;
	}
	char *v;
	if (arg) {
		size_t n = strlen(name) + strlen(arg) + 4;
		if ((v = malloc(n)))
			snprintf(v, n, "--%s=%s", name, arg);
	} else {
		size_t n = strlen(name) + 3;
		if ((v = malloc(n)))
			snprintf(v, n, "--%s", name);
	}
	if (!v) {
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	s->owned[s->n_step] = true;
	s->step_opts[s->n_step++] = v;
	return EXIT_OK;
}

static int sbatch_value(const char *opt, const char *v)
{
	if (!launch_sbatch_value_ok(v)) {
		cli_err("invalid %s '%s' (expected 1 to 200 characters without blanks, quotes, # or \\)", opt, v);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static int slurm_submit(struct slurm_opts *s, char **cmd, bool dry_run)
{
	char self[PATH_MAX], name[80], out_default[PATH_MAX + 32], cwd[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		cli_err("cannot find the gpuctl binary (/proc/self/exe): %s", strerror(errno));
		return EXIT_FAIL;
	}
	self[n] = '\0';
	if (!s->job_name) {
		job_name_from(cmd[0], name, sizeof name);
		s->job_name = name;
	}
	if (!s->output) {
		if (!getcwd(cwd, sizeof cwd)) {
			cli_err("cannot read the current directory: %s", strerror(errno));
			return EXIT_FAIL;
		}
		snprintf(out_default, sizeof out_default, "%s/slurm-%%j.out", cwd);
		if (!launch_sbatch_value_ok(out_default)) {
			cli_err("the current directory '%s' cannot be written on an #SBATCH line; give --output", cwd);
			return EXIT_USAGE;
		}
		s->output = out_default;
	}
	char gpn[16];
	snprintf(gpn, sizeof gpn, "%u", s->gpus_per_node);
	s->step_opts[s->n_step++] = "-n";
	s->step_opts[s->n_step++] = gpn;
	s->step_opts[s->n_step] = NULL;
	struct launch_slurm ls = {
		.nodes = s->nodes, .gpus_per_node = s->gpus_per_node, .cpus_per_task = s->cpus_per_task,
		.partition = s->partition, .time = s->time, .account = s->account,
		.job_name = s->job_name, .output = s->output, .max_requeues = s->max_requeues,
		.signal_secs = 120, .gpuctl = self, .step_opts = s->step_opts, .cmd = cmd,
	};
	char *script = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&script, &len);
	int bad = !f || launch_slurm_script(f, &ls) < 0;
	if (f && fclose(f) != 0)
		bad = 1;
	s->n_step -= 2;
	if (bad) {
		free(script);
		cli_err("cannot write the batch script");
		return EXIT_FAIL;
	}
	if (dry_run) {
		fputs(script, stdout);
		free(script);
		return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL;
	}
	char *const argv[] = {"sbatch", "--parsable", NULL};
	char *out = NULL;
	int why = 0;
	int st = capture_run(argv, script, true, SLURM_TIMEOUT_MS, &out, &why);
	free(script);
	if (st == CAPTURE_NOT_RUN) {
		free(out);
		cli_err("cannot run sbatch: %s (is the Slurm client installed? see gpuctl slurm doctor)", strerror(why));
		return EXIT_FAIL;
	}
	/* --parsable: "ID" or "ID;CLUSTER" on the last line; warnings may come first */
	char id[32] = "";
	char *line = out ? out : "";
	for (char *p = line, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		size_t k = nl ? (size_t)(nl - p) : strlen(p);
		size_t digits = strspn(p, "0123456789");
		if (digits > 0 && digits < sizeof id && (digits == k || p[digits] == ';')) {
			memcpy(id, p, digits);
			id[digits] = '\0';
		}
		if (!nl)
			break;
	}
	if (st != 0 || !id[0]) {
		char *msg = out ? out : "";
		msg[strcspn(msg, "\n")] = '\0';
		if (st == CAPTURE_TIMEOUT)
			cli_err("sbatch did not answer within %d s", SLURM_TIMEOUT_MS / 1000);
		else
			cli_err("sbatch failed (status %d): %s", st, *msg ? msg : "no message");
		free(out);
		return EXIT_FAIL;
	}
	free(out);
	if (!s->follow) {
		printf("%s\n", id);
		return fflush(stdout) == 0 ? EXIT_OK : EXIT_FAIL;
	}
	cli_err("submitted job %s: %u node%s x %u GPU%s", id, s->nodes, s->nodes == 1 ? "" : "s",
		s->gpus_per_node, s->gpus_per_node == 1 ? "" : "s");
	return follow(id);
}

/* a whole number from a scheduler's environment: opt runs inside `where`, which sets name */
static int launch_env(const char *opt, const char *where, const char *name, long lo, long *out)
{
	const char *v = getenv(name);
	char *end;
	if (!v || !*v) {
		cli_err("%s runs inside a %s, but %s is not set", opt, where, name);
		return EXIT_USAGE;
	}
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno || *end || n < lo || n > 1000000) {
		cli_err("invalid %s='%s' in the environment (expected a whole number from %ld)", name, v, lo);
		return EXIT_USAGE;
	}
	*out = n;
	return EXIT_OK;
}

/* after a notice stopped this node's part: ask Slurm to run the job again */
static int step_requeue(void)
{
	long count = 0, max = 3;
	const char *r = getenv("SLURM_RESTART_COUNT"), *m = getenv("GPUCTL_MAX_REQUEUES");
	if (r)
		count = strtol(r, NULL, 10);
	if (m)
		max = strtol(m, NULL, 10);
	if (count >= max) {
		cli_err("job %s was requeued %ld times already (--max-restarts %ld): not again",
			getenv("SLURM_JOB_ID"), count, max);
		return EXIT_FAIL;
	}
	char *const argv[] = {"scontrol", "requeue", getenv("SLURM_JOB_ID"), NULL};
	char *out = NULL;
	int why;
	int st = capture_run(argv, NULL, true, SLURM_TIMEOUT_MS, &out, &why);
	if (st != 0)
		cli_err("scontrol requeue %s failed: %s", getenv("SLURM_JOB_ID"),
			st == CAPTURE_NOT_RUN ? strerror(why) : out ? out : "no message");
	free(out);
	return st == 0 ? LAUNCH_EXIT_REQUEUE : EXIT_FAIL;
}

/* --slurm: the batch script for sbatch, after its options' checks; an exit code */
static int launch_slurm(struct slurm_opts *s, const struct runjob *j, const struct launch *L, const char *refused)
{
	int rc = EXIT_OK;
	if (j->r.jg.n_given && !j->r.jg.n_auto) {
		if (s->gpus_given && s->gpus_per_node != j->r.jg.sel.n) {
			cli_err("give either -n or --gpus-per-node, not both");
			return EXIT_USAGE;
		}
		s->gpus_per_node = j->r.jg.sel.n;
		s->gpus_given = true;
	}
	s->max_requeues = j->jo.sv.max_restarts;
	if (L->step) {
		cli_err("give either --slurm or --slurm-step, not both");
		return EXIT_USAGE;
	}
	if (refused) {
		cli_err("--%s does not apply with --slurm: Slurm chooses the nodes and GPUs and requeues the job "
			"(use --gpus-per-node, --partition, --max-restarts)", refused);
		return EXIT_USAGE;
	}
	if (!s->gpus_given) {
		cli_err("--slurm needs --gpus-per-node G (or -n G): how many GPUs on each node");
		return EXIT_USAGE;
	}
	if (s->follow && j->dry_run) {
		cli_err("give either --dry-run or --follow, not both");
		return EXIT_USAGE;
	}
	if ((s->partition && (rc = sbatch_value("--partition", s->partition))) ||
	    (s->time && (rc = sbatch_value("--time", s->time))) ||
	    (s->account && (rc = sbatch_value("--account", s->account))) ||
	    (s->job_name && (rc = sbatch_value("--job-name", s->job_name))) ||
	    (s->output && (rc = sbatch_value("--output", s->output))))
		return rc;
	return slurm_submit(s, L->cmd, j->dry_run);
}

/*
 * --sky-step: a node of a SkyPilot task (gpuctl advise --emit skypilot's
 * multi-node run line): its node count, rank and head from SkyPilot's
 * environment, every node's torchrun meeting at the head (--rdzv-endpoint
 * overrides it). An exit code.
 */
static int sky_step_env(struct launch *L, struct runjob *j)
{
	static const char where[] = "SkyPilot task (gpuctl advise --emit skypilot writes one)";
	long nn, rank;
	int rc;
	const char *ips = getenv("SKYPILOT_NODE_IPS"), *task = getenv("SKYPILOT_TASK_ID");
	if (j->r.jg.n_auto) {
		cli_err("--sky-step needs -n G: the GPUs SkyPilot gave each node (\"$SKYPILOT_NUM_GPUS_PER_NODE\")");
		return EXIT_USAGE;
	}
	if ((rc = launch_env("--sky-step", where, "SKYPILOT_NUM_NODES", 1, &nn)) ||
	    (rc = launch_env("--sky-step", where, "SKYPILOT_NODE_RANK", 0, &rank)))
		return rc;
	size_t skip = ips ? strspn(ips, " \t\n") : 0, hl = ips ? strcspn(ips + skip, " \t\n") : 0;
	if (!L->endpoint && (!hl || hl > 253)) {
		cli_err("--sky-step needs the head node's address: SKYPILOT_NODE_IPS is %s (or give --rdzv-endpoint "
			"HOST:PORT)", ips ? "not an address list" : "not set");
		return EXIT_USAGE;
	}
	if (!L->endpoint) {
		snprintf(L->endpoint_buf, sizeof L->endpoint_buf, "%.*s:29500", (int)hl, ips + skip);
		L->endpoint = L->endpoint_buf;
	}
	L->nnodes = (unsigned)nn;
	L->node_rank = (unsigned)rank;
	/* the rendezvous id: SkyPilot's task id (the same on every node), in safe characters */
	char id[48];
	snprintf(id, sizeof id, "%s", task && *task ? task : "sky");
	for (char *k = id; *k; k++)
		if (!isalnum((unsigned char)*k) && *k != '-' && *k != '_')
			*k = '-';
	snprintf(L->rdzv_id, sizeof L->rdzv_id, "%s", id);
	snprintf(j->jo.sv.run_id, sizeof j->jo.sv.run_id, "sky-%.28s", id);
	/* every node must start again together: SkyPilot's job recovery relaunches them all */
	j->jo.sv.restart = SUPERVISE_RESTART_NEVER;
	return EXIT_OK;
}

/* --slurm-step: this node's part of a Slurm job, from Slurm's environment. An exit code. */
static int slurm_step_env(struct launch *L, struct runjob *j)
{
	static const char where[] = "Slurm job step (gpuctl launch --slurm submits one)";
	long nn, rank, jobid;
	int rc;
	if (!L->endpoint || !*L->endpoint) {
		cli_err("--slurm-step needs --rdzv-endpoint HOST:PORT");
		return EXIT_USAGE;
	}
	if (j->r.jg.n_auto) {
		cli_err("--slurm-step needs -n G: the GPUs Slurm gave each node");
		return EXIT_USAGE;
	}
	if ((rc = launch_env("--slurm-step", where, "SLURM_JOB_ID", 1, &jobid)) ||
	    (rc = launch_env("--slurm-step", where, "SLURM_NNODES", 1, &nn)) ||
	    (rc = launch_env("--slurm-step", where, "SLURM_NODEID", 0, &rank)))
		return rc;
	L->nnodes = (unsigned)nn;
	L->node_rank = (unsigned)rank;
	snprintf(L->rdzv_id, sizeof L->rdzv_id, "%ld", jobid);
	snprintf(j->jo.sv.run_id, sizeof j->jo.sv.run_id, "slurm-%ld", jobid);
	/* every node must restart together: that is Slurm's requeue, not a local restart */
	j->jo.sv.restart = SUPERVISE_RESTART_NEVER;
	return EXIT_OK;
}

/* what launch's own options set (run's, RUNJOB_LONG_OPTIONS, go to the runjob) */
struct launch_cli {
	struct slurm_opts s;         /* --slurm's and the step's options, stored there by the table */
	struct launch L;             /* --no-placeholders, --slurm-step, --rdzv-endpoint */
	const char *launcher;
	bool dry_run, slurm, sky_step;
};

#define AT(f) OPT_AT(struct launch_cli, f)
static const struct opt launch_options[] = {
	{OPT_NOTE, .help = "-n auto|N: the GPUs on this node, every free one (the default) or N"},
	{OPT_STRING, "launcher", "L", "auto (torchrun, else python3 -m torch.distributed.run), torchrun or python",
	 AT(launcher)},
	{OPT_FLAG, "no-placeholders", .help = "pass {gpus}, {nodes}, {world_size}, {32*gpus} unexpanded", AT(L.literal)},
	{OPT_FLAG, "dry-run", .help = "print the environment and command (or the batch script), run nothing", AT(dry_run)},
	{OPT_NOTE, .help = "the filters and run options of gpuctl run (--min-free-mem, --model, --wait, --spot, "
			   "--restart, --checkpoint-dir, --hang-timeout, ...) work the same; see gpuctl-run(1)"},
	{OPT_SECTION, .help = "\nWith --slurm:"},
	{OPT_FLAG, "slurm", .help = "submit a multi-node Slurm job (sbatch) that does the same on every node", AT(slurm)},
	{OPT_COUNT, "nodes", "N", "nodes (default 1)", AT(s.nodes), .min = 1, .max = 4096},
	{OPT_COUNT, "gpus-per-node", "G", "GPUs on each node (required; or -n G)", AT(s.gpus_per_node), .min = 1, .max = 4096},
	{OPT_STRING, "partition", "P", "sbatch's --partition", AT(s.partition)},
	{OPT_STRING, "time", "T", "sbatch's --time", AT(s.time)},
	{OPT_COUNT, "cpus-per-task", "C", "sbatch's --cpus-per-task", AT(s.cpus_per_task), .min = 1, .max = 4096},
	{OPT_STRING, "account", "A", "sbatch's --account", AT(s.account)},
	{OPT_STRING, "job-name", "NAME", "sbatch's --job-name", AT(s.job_name)},
	{OPT_STRING, "output", "PATH", "the job's output (default: slurm-%j.out in this directory)", AT(s.output)},
	{OPT_FLAG, "follow", .help = "after submitting, show the job's state and output until it ends", AT(s.follow)},
	{OPT_NOTE, .help = "--max-restarts K (run's) requeues after a notice or the time limit at most K times "
			   "(default 3)"},
	{OPT_SECTION, .help = "In the batch script --slurm writes (not for use by hand):"},
	{OPT_FLAG, "slurm-step", .help = "this node's part of the job: node count, rank and job id from Slurm",
	 AT(L.step)},
	{OPT_STRING, "rdzv-endpoint", "HOST:PORT", "where every node's torchrun meets (with --slurm-step)", AT(L.endpoint)},
	{OPT_SECTION, .help = "In a SkyPilot task advise --emit skypilot writes (not for use by hand):"},
	{OPT_FLAG, "sky-step", .help = "this node's part: node count, rank and head from SKYPILOT_NUM_NODES, "
				       "SKYPILOT_NODE_RANK and SKYPILOT_NODE_IPS (head:29500 unless --rdzv-endpoint)",
	 AT(sky_step)},
	{OPT_SECTION, .help = ""},
	{OPT_CALLER, "help", .help = "print this help", .val = 'h', .shortopt = 'h'},
	{OPT_END},
};

static void usage(void)
{
	printf("usage: gpuctl launch [-n auto|N] [filters] [run options] [--launcher L] [--dry-run] -- SCRIPT [ARGS...]\n"
	       "       gpuctl launch --sky (--model NAME | --params N) [advise options] [--dry-run] -- CMD [ARGS...]\n"
	       "       gpuctl launch --slurm --gpus-per-node G [--nodes N] [--partition P] [--time T]\n"
	       "                     [--cpus-per-task C] [--account A] [--dry-run | --follow] -- SCRIPT [ARGS...]\n"
	       "\n"
	       "Run SCRIPT with torchrun on leased GPUs, one process per GPU; or, with --slurm,\n"
	       "submit a multi-node Slurm job that does the same on every node.\n\n");
	opt_help(stdout, launch_options);
	printf("\nPlaceholders in ARGS: {gpus} (per node), {nodes}, {world_size} and products with\n"
	       "whole numbers such as {32*gpus}; other braces pass through unchanged.\n");
}

/* the long name of run's option c (RUNJOB_LONG_OPTIONS), or NULL */
static const char *run_option_name(const struct option *run, int c)
{
	for (; run->name; run++)
		if (run->val == c)
			return run->name;
	return NULL;
}

int cmd_launch(const struct cli_global *g, int argc, char **argv)
{
	/* --sky (before the command): advise's plans handed to SkyPilot, another set of options */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--sky") == 0)
			return cmd_advise_sky(g, argc, argv);
	static const struct option run_options[] = {RUNJOB_LONG_OPTIONS, {NULL, 0, NULL, 0}};
	/* run options a node's step takes over from the command line; the rest is Slurm's */
	static const char step_pass[] = {'S', 'C', 'P', 'G', 'K', 'T', 'O', 'A', 'N', 'W'};
	static const char slurm_refuse[] = {'g', 'M', 'U', 'm', 'x', 's', 'I', 'w', 'R', 'B'};
	struct runjob j;
	struct launch_cli lc = {.s = {.nodes = 1, .max_requeues = 3}, .launcher = "auto"};
	struct slurm_opts *s = &lc.s;
	struct launch *L = &lc.L;
	const char *refused = NULL, *arg;
	const struct opt *o;
	struct optparse op;
	int c, rc = EXIT_OK;
	runjob_init(&j);
	j.r.jg.allow_auto = true;
	j.arg = L;
	j.ready = launch_ready;
	if (optparse_init(&op, launch_options, run_options, "n:", true) != GC_OK) {
		cli_err("out of memory");
		rc = EXIT_FAIL;
		goto out;
	}
	optind = 1;
	while (rc == EXIT_OK && (c = optparse_next(&op, argc, argv, &o, &arg)) != -1) {
		if (c == 'h') {
			usage();
			rc = -1;
		} else if (o) {
			rc = opt_apply(o, arg, &lc);
		} else if (c == '?' || c == ':') {
			rc = cli_bad_option("launch", c, argv);
		} else {
			const char *name = run_option_name(run_options, c);
			if (name && memchr(slurm_refuse, c, sizeof slurm_refuse) && !refused)
				refused = name;
			if (name && memchr(step_pass, c, sizeof step_pass) && (rc = step_opt(s, name, arg)))
				break;
			if (c == 'w')
				arg = cli_optional_next(optarg, argc, argv); /* --wait 5m */
			rc = runjob_option(&j, c, arg);
			if (rc < 0) /* not run's: none is left */
				rc = cli_bad_option("launch", c, argv);
		}
	}
	optparse_free(&op);
	if (rc) {
		rc = rc < 0 ? EXIT_OK : rc;
		goto out;
	}
	/* what the table's entries imply */
	j.dry_run = lc.dry_run;
	L->step |= lc.sky_step;
	s->gpus_given = s->gpus_per_node > 0;
	if ((strcmp(lc.launcher, "auto") != 0 && (rc = step_opt(s, "launcher", lc.launcher))) ||
	    (L->literal && (rc = step_opt(s, "no-placeholders", NULL))))
		goto out;
	if (optind >= argc) {
		cli_err("launch needs a script: gpuctl launch [options] -- SCRIPT [ARGS...]");
		rc = EXIT_USAGE;
		goto out;
	}
	L->cmd = argv + optind;
	if (lc.slurm) {
		rc = launch_slurm(s, &j, L, refused);
		goto out;
	}
	if (s->nodes != 1 || s->partition || s->time || s->account || s->cpus_per_task || s->follow ||
	    s->job_name || s->output) {
		cli_err("--nodes, --partition, --time, --account, --cpus-per-task, --job-name, --output and "
			"--follow need --slurm");
		rc = EXIT_USAGE;
		goto out;
	}
	if (s->gpus_given) {
		cli_err("--gpus-per-node needs --slurm (on this node, use -n)");
		rc = EXIT_USAGE;
		goto out;
	}
	if (!j.r.jg.n_given && !j.r.jg.gpus_spec) /* every free GPU unless told otherwise */
		request_option(&j.r, 'n', "auto");
	if ((rc = choose_launcher(lc.launcher, L)))
		goto out;
	if ((lc.sky_step && (rc = sky_step_env(L, &j))) || (!lc.sky_step && L->step && (rc = slurm_step_env(L, &j))))
		goto out;
	probe_launcher(L);
	/* a stop (notice, hang, --grace) goes to torchrun's workers, not to its agent, which would
	   SIGKILL them 30 s later (docs/launch.md) */
	j.jo.sv.spare_leader = true;
	rc = runjob_exec(&j, g, L->cmd);
	if (L->step && j.ran && j.end == SUPERVISE_END_PREEMPTED)
		rc = step_requeue();
out:
	for (size_t i = 0; i < s->n_step; i++)
		if (s->owned[i])
			free(s->step_opts[i]);
	launch_free(L);
	runjob_release(&j);
	return rc;
}
