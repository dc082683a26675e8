/*
 * slurm.c — the checks of `gpuctl slurm doctor` (see slurm.h).
 *
 * Why gres.conf matters: Slurm sets CUDA_VISIBLE_DEVICES for a job only
 * when it knows which device file each GPU is (File= or AutoDetect); with
 * Count= alone every job sees every GPU of the node and two jobs land on
 * the same one.
 */
#include "diagnose/slurm.h"
#include "util/errbuf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static struct doctor_check *add(struct doctor_report *r, const char *id, enum doctor_status st)
{
	struct doctor_check *p = realloc(r->checks, (r->n + 1) * sizeof *p);
	if (!p)
		return NULL;
	r->checks = p;
	struct doctor_check *c = &p[r->n++];
	memset(c, 0, sizeof *c);
	snprintf(c->id, sizeof c->id, "%s", id);
	c->status = st;
	return c;
}

/* the first line of s, without its newline */
static void first_line(const char *s, char *buf, size_t len)
{
	size_t n = s ? strcspn(s, "\n") : 0;
	if (n >= len)
		n = len - 1;
	if (n)
		memcpy(buf, s, n);
	buf[n] = '\0';
}

/* the value of key= in one gres.conf line (keys are case-insensitive), or NULL */
static bool has_key(const char *line, const char *key, char *val, size_t len)
{
	size_t kl = strlen(key);
	for (const char *p = line; *p;) {
		while (*p && isspace((unsigned char)*p))
			p++;
		const char *w = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		if ((size_t)(p - w) > kl && strncasecmp(w, key, kl) == 0 && w[kl] == '=') {
			size_t n = (size_t)(p - w) - kl - 1;
			if (n >= len)
				n = len - 1;
			memcpy(val, w + kl + 1, n);
			val[n] = '\0';
			return true;
		}
	}
	return false;
}

int slurm_gres_sets_devices(const char *text, char *out, size_t len)
{
	int verdict = -1;
	bool autodetect = false;
	if (len)
		out[0] = '\0';
	for (const char *p = text; p && *p;) {
		size_t n = strcspn(p, "\n");
		char line[512], v[128];
		size_t k = n < sizeof line - 1 ? n : sizeof line - 1;
		memcpy(line, p, k);
		line[k] = '\0';
		p += n + (p[n] == '\n');
		line[strcspn(line, "#")] = '\0';
		if (has_key(line, "AutoDetect", v, sizeof v) && strcasecmp(v, "off") != 0 &&
		    !has_key(line, "Name", v, sizeof v))
			autodetect = true; /* a global AutoDetect= line */
		if (!has_key(line, "Name", v, sizeof v) || strcasecmp(v, "gpu") != 0)
			continue;
		char *s = line;
		while (isspace((unsigned char)*s))
			s++;
		if (verdict < 0 && len)
			snprintf(out, len, "%s", s);
		if (has_key(line, "File", v, sizeof v) ||
		    (has_key(line, "AutoDetect", v, sizeof v) && strcasecmp(v, "off") != 0))
			verdict = 1;
		else if (verdict < 0)
			verdict = 0;
	}
	if (verdict == 0 && autodetect)
		verdict = 1;
	return verdict;
}

/* sinfo -h -o '%P|%G|%D|%a' → "gpu* (2 nodes, gpu:4)" for partitions with GPUs */
static void gpu_partitions(const char *out, char *buf, size_t len, size_t *with, size_t *without)
{
	size_t off = 0;
	*with = *without = 0;
	buf[0] = '\0';
	for (const char *p = out; p && *p;) {
		size_t n = strcspn(p, "\n");
		char line[512];
		size_t k = n < sizeof line - 1 ? n : sizeof line - 1;
		memcpy(line, p, k);
		line[k] = '\0';
		p += n + (p[n] == '\n');
		char *f[4] = {line, NULL, NULL, NULL};
		for (int i = 1; i < 4 && f[i - 1]; i++)
			if ((f[i] = strchr(f[i - 1], '|')))
				*f[i]++ = '\0';
		if (!f[3])
			continue;
		if (!strstr(f[1], "gpu")) {
			(*without)++;
			continue;
		}
		(*with)++;
		long nodes = strtol(f[2], NULL, 10);
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s (%ld node%s, %s%s%s)", off ? "; " : "",
						f[0], nodes, nodes == 1 ? "" : "s", f[1],
						strcmp(f[3], "up") ? ", " : "", strcmp(f[3], "up") ? f[3] : "");
	}
}

int slurm_run(const struct slurm_env *e, struct doctor_report *r)
{
	struct doctor_check *c;
	char line[400];
	/* the client */
	bool present = !(e->missing && *e->missing), client = present && e->version_rc == 0;
	if (!(c = add(r, "slurm.client", client ? DOCTOR_OK : DOCTOR_FAIL)))
		return GC_ENOMEM;
	if (client) {
		first_line(e->version, line, sizeof line);
		snprintf(c->found, sizeof c->found, "%s (sinfo, sbatch, srun, scontrol)", line);
	} else if (present) {
		first_line(e->version, line, sizeof line);
		snprintf(c->found, sizeof c->found, "sinfo --version failed: %s", line[0] ? line : "no message");
		snprintf(c->fix, sizeof c->fix, "the client cannot find its configuration: set SLURM_CONF, or "
			 "install /etc/slurm/slurm.conf from the cluster");
	} else {
		snprintf(c->found, sizeof c->found, "not found on PATH: %s", e->missing);
		snprintf(c->fix, sizeof c->fix, "install the Slurm client (Debian: apt-get install slurm-client) "
			 "or load your site's Slurm module");
	}
	/* the controller */
	bool up = e->ping_rc == 0 && e->ping_out && strstr(e->ping_out, " is UP");
	if (!(c = add(r, "slurm.controller", e->ping_rc == -1 && !present ? DOCTOR_SKIP : up ? DOCTOR_OK : DOCTOR_FAIL)))
		return GC_ENOMEM;
	first_line(e->ping_out, line, sizeof line);
	if (c->status == DOCTOR_SKIP)
		snprintf(c->found, sizeof c->found, "no scontrol to ask");
	else if (up)
		snprintf(c->found, sizeof c->found, "%s", line);
	else {
		snprintf(c->found, sizeof c->found, "%s", e->ping_rc == -2 ? "scontrol ping did not answer in time"
							: line[0] ? line : "scontrol ping failed");
		snprintf(c->fix, sizeof c->fix, "start slurmctld, or point SLURM_CONF (or /etc/slurm/slurm.conf) "
			 "at the cluster's configuration");
	}
	/* partitions with GPUs */
	size_t with = 0, without = 0;
	char parts[sizeof c->found];
	if (e->sinfo_rc == 0)
		gpu_partitions(e->sinfo_out, parts, sizeof parts, &with, &without);
	if (!(c = add(r, "slurm.gpu_partitions", e->sinfo_rc != 0 ? DOCTOR_SKIP : with ? DOCTOR_OK : DOCTOR_WARN)))
		return GC_ENOMEM;
	if (e->sinfo_rc != 0)
		snprintf(c->found, sizeof c->found, "sinfo could not list partitions");
	else if (with)
		snprintf(c->found, sizeof c->found, "%s", parts);
	else {
		snprintf(c->found, sizeof c->found, "none of %zu partition%s offers GRES gpu", without,
			 without == 1 ? "" : "s");
		snprintf(c->fix, sizeof c->fix, "set GresTypes=gpu and Gres=gpu:N on the NodeName lines of slurm.conf");
	}
	/* this node's gres.conf */
	int v = e->gres_conf ? slurm_gres_sets_devices(e->gres_conf, line, sizeof line) : -2;
	enum doctor_status st = !e->gres_path ? DOCTOR_SKIP : v == 1 ? DOCTOR_OK : DOCTOR_WARN;
	if (!(c = add(r, "slurm.gres_conf", st)))
		return GC_ENOMEM;
	if (!e->gres_path) {
		snprintf(c->found, sizeof c->found, "the configuration's location is unknown");
	} else if (v == 1) {
		snprintf(c->found, sizeof c->found, "%.200s: '%.200s': Slurm sets CUDA_VISIBLE_DEVICES", e->gres_path, line);
	} else if (v == 0) {
		snprintf(c->found, sizeof c->found, "%.180s: '%.180s' has no File=: Slurm does not set "
			 "CUDA_VISIBLE_DEVICES, every job sees every GPU", e->gres_path, line);
		snprintf(c->fix, sizeof c->fix, "add File=/dev/nvidia[0-N] to the Name=gpu line (or AutoDetect=nvml)");
	} else if (v == -1) {
		snprintf(c->found, sizeof c->found, "%.300s names no gpu: this node offers no GPUs to Slurm", e->gres_path);
		snprintf(c->fix, sizeof c->fix, "on a GPU node add 'Name=gpu File=/dev/nvidia[0-N]'");
	} else {
		snprintf(c->found, sizeof c->found, "no readable %.300s on this node (fine on a login node)", e->gres_path);
		snprintf(c->fix, sizeof c->fix, "on a GPU node create it with 'Name=gpu File=/dev/nvidia[0-N]'");
	}
	return GC_OK;
}
