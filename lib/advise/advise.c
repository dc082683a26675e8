/*
 * advise.c — plans, times and ranks GPU setups for a workload (see
 * advise.h). The search is small per instance (tensor-parallel sizes ×
 * ZeRO stages × recomputation), so a 50 000-row catalog ranks in a few
 * tens of milliseconds: plans are cached per (GPU model, GPUs per node).
 */
#include "advise/advise.h"
#include "util/csv.h"
#include "util/errbuf.h"
#include "gpuctl/gpuctl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

double advise_default_mfu(const advise_req *r)
{
	if (r->model.kind == MEMMODEL_CNN)
		return ADVISE_MFU_CNN;
	switch (r->job.task) {
	case MEMMODEL_LORA: return ADVISE_MFU_LORA;
	case MEMMODEL_QLORA: return ADVISE_MFU_QLORA;
	case MEMMODEL_INFER: return ADVISE_MFU_PREFILL;
	case MEMMODEL_EMBED: return ADVISE_MFU_EMBED;
	default: return ADVISE_MFU_TRAIN;
	}
}

/* the precision tensor cores run at: fall back where the GPU lacks one (no bf16 on T4/V100) */
static int compute_prec(const spec_gpu *g, int prec, int task)
{
	if ((task == MEMMODEL_INFER || task == MEMMODEL_EMBED || task == MEMMODEL_QLORA) && prec == MEMMODEL_INT4)
		prec = MEMMODEL_BF16; /* 4-bit weights are dequantized and multiplied in 16 bits */
	if (task == MEMMODEL_QLORA || task == MEMMODEL_LORA)
		prec = prec == MEMMODEL_FP32 ? MEMMODEL_FP32 : MEMMODEL_BF16;
	static const int chain[][3] = {
		[MEMMODEL_FP32] = {MEMMODEL_FP32, MEMMODEL_FP32, MEMMODEL_FP32}, [MEMMODEL_BF16] = {MEMMODEL_BF16, MEMMODEL_FP16, MEMMODEL_FP32},
		[MEMMODEL_FP16] = {MEMMODEL_FP16, MEMMODEL_BF16, MEMMODEL_FP32}, [MEMMODEL_FP8] = {MEMMODEL_FP8, MEMMODEL_BF16, MEMMODEL_FP16},
		[MEMMODEL_INT8] = {MEMMODEL_INT8, MEMMODEL_FP16, MEMMODEL_BF16}, [MEMMODEL_INT4] = {MEMMODEL_BF16, MEMMODEL_FP16, MEMMODEL_FP32},
	};
	for (int i = 0; i < 3; i++)
		if (g->peak[chain[prec][i]] > 0)
			return chain[prec][i];
	return MEMMODEL_FP32;
}

double advise_hours(const advise_req *r, const spec_gpu *g, unsigned gpus, unsigned tp, int recompute,
		 const memmodel_mem *mem, int *cprec)
{
	int p = compute_prec(g, r->job.prec, r->job.task);
	if (cprec)
		*cprec = p;
	double peak = g->peak[p];
	if (peak <= 0 || gpus == 0)
		return INFINITY;
	double mfu = r->mfu > 0 ? r->mfu : advise_default_mfu(r);
	double n = r->model.active_params > 0 ? r->model.active_params : r->model.params;
	double secs;
	if (r->model.kind == MEMMODEL_CNN) {
		double f = 3 * r->model.flops_per_sample * r->tokens * (recompute == MEMMODEL_RC_FULL ? 4.0 / 3 : 1);
		secs = f / (gpus * peak * mfu);
	} else if (memmodel_trains(r->job.task)) {
		double k = r->job.task == MEMMODEL_TRAIN ? 6 : 4;
		if (recompute == MEMMODEL_RC_FULL)
			k += 2; /* the forward pass again */
		else if (recompute == MEMMODEL_RC_SELECTIVE)
			k *= 1.03;
		secs = k * n * r->tokens / (gpus * peak * mfu);
	} else if (r->job.task == MEMMODEL_EMBED) {
		secs = 2 * n * r->tokens / (gpus * peak * mfu);
	} else {
		unsigned out = r->output_len ? r->output_len : 1;
		unsigned seq = r->job.seq ? r->job.seq : r->model.seq;
		double prompt = seq > out ? seq - out : 0;
		double requests = r->tokens / out;
		double prefill = requests * prompt * 2 * n / (gpus * peak * mfu);
		double b = r->job.batch ? r->job.batch : 1;
		/* one decode step of a tensor-parallel group: its weights and the batch's KV cache */
		double bytes = mem->weights * tp + memmodel_kv_per_token(&r->model, r->job.kv_prec) * (prompt + out / 2.0) * b;
		double t_mem = bytes / (tp * g->bw * ADVISE_MBU_DECODE);
		double t_cmp = 2 * n * b / (tp * peak * mfu);
		double step = t_mem > t_cmp ? t_mem : t_cmp;
		double replicas = gpus / tp;
		secs = prefill + r->tokens / (replicas * b / step);
	}
	return secs / 3600;
}

/* where a reduction's traffic is counted: the link inside a node and the network between nodes (0: not counted) */
struct ring {
	double link, net;       /* bytes/s per direction */
	unsigned dp_node, nodes, tp;
};

/*
 * Seconds of one reduction (a ring's all-reduce, or reduce-scatter and all-gather) of `bytes`, a whole
 * model's worth: each GPU moves 2(n-1)/n of its TP shard over the node's link; between nodes, each node's
 * whole share crosses its network 2(N-1)/N times (*between: that part).
 */
static double reduction_s(const struct ring *x, double bytes, double *between)
{
	double in = 0;
	*between = 0;
	if (x->dp_node > 1 && x->link > 0)
		in = 2.0 * (x->dp_node - 1) / x->dp_node * bytes / x->tp / x->link;
	if (x->nodes > 1 && x->net > 0)
		*between = 2.0 * (x->nodes - 1) / x->nodes * bytes / x->net;
	return in + *between;
}

double advise_comm_hours(const advise_req *r, const spec_gpu *g, unsigned gpus, unsigned per_node, unsigned tp,
			 int zero, int recompute, const memmodel_mem *m, double compute_h, double net_bps, bool gpu_net,
			 advise_comm *c)
{
	memset(c, 0, sizeof *c);
	int task = r->job.task;
	bool peft = task == MEMMODEL_LORA || task == MEMMODEL_QLORA;
	if (!memmodel_trains(task) || gpus == 0 || tp == 0 || !isfinite(compute_h))
		return 0;
	unsigned seq = r->job.seq ? r->job.seq : r->model.seq ? r->model.seq : 4096;
	unsigned batch = r->job.batch ? r->job.batch : 1;
	unsigned dp = gpus / tp;
	/* an optimizer step: micro-batches of --batch sequences per rank, accumulated to the global batch */
	double micro = r->model.kind == MEMMODEL_CNN ? (double)dp * batch : (double)dp * batch * seq;
	double global = r->global_batch > 0 ? r->global_batch : ADVISE_GLOBAL_BATCH;
	c->accum = r->model.kind == MEMMODEL_CNN || global <= micro ? 1 : ceil(global / micro);
	c->steps = r->tokens / (micro * c->accum);
	if (c->steps < 1)
		c->steps = 1;
	c->compute_s = compute_h * 3600 / c->steps;
	double micro_s = c->compute_s / c->accum;
	/* bytes per gradient value reduced: DeepSpeed, FSDP and Megatron reduce in 16 bits; PyTorch DDP under
	   autocast (the Trainer's ZeRO-0) reduces the fp32 gradients, as do fp32 runs and PEFT's fp32 adapters */
	bool hf = memmodel_framework_of(&r->model, &r->job) == MEMMODEL_FW_HF;
	double gb = peft || r->job.prec == MEMMODEL_FP32 || (hf && zero == 0 && !r->job.pure) ? 4 : 2;
	/*
	 * The default MFUs come from runs on NVLink nodes joined by GPU networks (docs/advise.md), whose
	 * communication they already hold: what is counted is what those runs did not have, traffic over PCIe
	 * inside a node and over an instance's plain network between nodes.
	 */
	bool pcie = g->link <= ADVISE_PCIE_LINK;
	unsigned here = gpus < per_node ? gpus : per_node;
	struct ring x = {.link = pcie ? g->link / 2 * ADVISE_LINK_EFF : 0, .net = gpu_net ? 0 : net_bps * ADVISE_LINK_EFF,
			 .dp_node = here / tp, .nodes = (gpus + per_node - 1) / per_node, .tp = tp};
	/* the parameters ZeRO-3 gathers: the whole model in 16 bits (LoRA: its frozen base; QLoRA: the 4-bit
	   base, which FSDP-QLoRA and ZeRO-3 shard and gather like any parameter) */
	double pbytes = task == MEMMODEL_QLORA ? 0.53 : 2, g_between, p_between;
	double one = reduction_s(&x, m->trainable * gb, &g_between), one_p = reduction_s(&x, r->model.params * pbytes,
											  &p_between);
	/*
	 * When, in reductions of the gradients (g) and of the parameters (p), per micro-batch and per step:
	 * ZeRO-0 and 1 keep whole gradients and reduce them once a step, behind the last micro-batch's backward
	 * pass; ZeRO-2 reduce-scatters them after every micro-batch (it keeps only its shard: half a reduction)
	 * and gathers the updated parameters once a step; ZeRO-3 also gathers the parameters for every
	 * micro-batch's forward and backward (an all-gather is half a reduction's traffic), prefetched through
	 * the whole micro-batch.
	 */
	double g_micro = zero >= 2 ? 0.5 : 0, p_micro = zero == 3 ? 1 : 0, g_step = zero == 3 ? 0 : zero == 2 ? 0.5 : 1;
	double per_micro = g_micro * one + p_micro * one_p, per_step = g_step * one;
	double bwd = (peft ? 0.5 : 2.0 / 3) * micro_s;
	double hide_micro = zero == 3 ? micro_s : bwd;
	double exposed_micro = per_micro > hide_micro ? per_micro - hide_micro : 0;
	double exposed_step = per_step > bwd ? per_step - bwd : 0;
	c->dp_s = per_micro * c->accum + per_step;
	c->dp_inter_s = (g_micro * g_between + p_micro * p_between) * c->accum + g_step * g_between;
	/* tensor parallelism: 2 all-reduces forward and 2 backward per layer (2 more with full recomputation) of
	   the activations, batch x seq x hidden in 16 bits, every micro-batch, not overlapped */
	if (tp > 1 && x.link > 0 && r->model.layers && r->model.hidden) {
		double ar = (4.0 + (recompute == MEMMODEL_RC_FULL ? 2 : 0)) * r->model.layers;
		c->tp_s = c->accum * ar * 2.0 * (tp - 1) / tp * (double)batch * seq * r->model.hidden * 2 / x.link;
	}
	c->exposed_s = exposed_micro * c->accum + exposed_step + c->tp_s;
	return c->exposed_s * c->steps / 3600;
}

static bool in_list(const char *list, const char *s)
{
	return !list || !*list || csv_in_list(list, ',', s);
}

/*
 * The fastest plan on `gpus` GPUs of g with at most `per_node` in one node
 * (tensor parallelism stays inside a node). An offload plan must also fit
 * `host`, the host memory of one node in bytes (0: unknown, so none does).
 * ZeRO-3 spans nodes only with `fabric`, a GPU network between them.
 * Returns false when nothing fits.
 */
static bool best_plan(const advise_req *r, const spec_gpu *g, unsigned gpus, unsigned per_node, bool allow_offload,
		      double host, bool fabric, double net_bps, advise_plan *best)
{
	bool found = false;
	double usable = g->mem * (1 - r->headroom);
	bool train = memmodel_trains(r->job.task);
	bool cnn = r->model.kind == MEMMODEL_CNN;
	/* PEFT's LoRA and QLoRA under Hugging Face's Trainer have no tensor parallelism: data-parallel plans only */
	bool peft = r->job.task == MEMMODEL_LORA || r->job.task == MEMMODEL_QLORA;
	bool no_tp = cnn || (peft && memmodel_framework_of(&r->model, &r->job) == MEMMODEL_FW_HF);
	for (unsigned tp = 1; tp <= per_node && tp <= gpus; tp *= 2) {
		if (per_node % tp || gpus % tp || (no_tp && tp > 1))
			continue;
		if (r->tp && tp != r->tp)
			continue;
		if (!train && r->model.heads && r->model.heads % tp)
			continue;
		for (int zero = 0; zero <= (train ? 3 : 0); zero++) {
			if (r->zero >= 0 && train && zero != r->zero)
				continue;
			/* parameters gathered over the network in every micro-batch: not over plain Ethernet */
			if (zero == 3 && gpus > per_node && !fabric)
				continue;
			for (int rc = 0; rc <= (train ? 2 : 0); rc++) {
				if (r->recompute >= 0 && train && rc != r->recompute)
					continue;
				for (int off = 0; off <= (train ? 1 : 0); off++) {
					if (off && !allow_offload)
						continue;
					if (r->offload == 1 && !off && train)
						continue;
					memmodel_job j = r->job;
					j.tp = tp;
					j.dp = gpus / tp;
					j.zero = zero;
					j.recompute = rc;
					j.offload = off;
					memmodel_mem m;
					if (memmodel_estimate(&r->model, &j, &m, NULL, 0) != 0 || m.total > usable)
						continue;
					/* every GPU of a node offloads its own share to the node's memory */
					double host_need = off ? m.cpu * (gpus < per_node ? gpus : per_node) * ADVISE_HOST_BUFFER
							       : 0;
					if (off && !(host_need <= host))
						continue;
					int cp;
					double ch = advise_hours(r, g, gpus, tp, rc, &m, &cp);
					if (!isfinite(ch))
						continue;
					advise_comm comm;
					double xh = advise_comm_hours(r, g, gpus, per_node, tp, zero, rc, &m, ch, net_bps, fabric,
								      &comm);
					double h = ch + xh;
					/* offload costs time we do not model: only when nothing else fits. Plans
					   within 5 % of each other count as equal, and the loops go from simple to
					   complex (less tensor parallelism, lower ZeRO stage, less recomputation):
					   the first such plan stays */
					if (found && (best->offload < off ||
						      (best->offload == off && h >= best->hours * 0.95)))
						continue;
					found = true;
					memset(best, 0, sizeof *best);
					best->gpu = g;
					best->gpus = gpus;
					best->tp = tp;
					best->dp = gpus / tp;
					best->zero = zero;
					best->recompute = rc;
					best->offload = off;
					best->compute_prec = cp;
					best->mem = m;
					best->usable = usable;
					best->host_need = host_need;
					best->hours = h;
					best->compute_h = ch;
					best->comm_h = xh;
					best->comm = comm;
				}
			}
		}
	}
	return found;
}

/* plans are the same for every row with the same GPU model, count, host memory and fabric: cache them */
struct cache_ent {
	const spec_gpu *g;
	unsigned count;
	double host;
	bool fabric;
	double net;
	bool ok;
	int why;
	advise_plan plan;
	unsigned nodes;
};

enum { WHY_NOFIT, WHY_NO_HOST, WHY_HOST_SMALL, WHY_NO_FABRIC };

/*
 * The plan for instances of `count` GPUs g with `host` bytes of memory each
 * (0: unknown) and, if `fabric`, a GPU network between them: the fewest
 * nodes that fit without offload, else with it. When none fits, *why says
 * whether only the network or the host memory was missing.
 */
static bool plan_for(const advise_req *r, const spec_gpu *g, unsigned count, double host, bool fabric, double net,
		     advise_plan *p, unsigned *nodes, int *why)
{
	bool train = memmodel_trains(r->job.task);
	unsigned max_nodes = train ? (r->max_gpus >= count ? r->max_gpus / count : 0) : (r->max_gpus >= count);
	*why = WHY_NOFIT;
	for (int pass = 0; pass < 2; pass++) {
		bool off = pass == 1;
		if (off && r->offload == 0)
			break;
		if (!off && r->offload == 1)
			continue;
		for (unsigned k = 1; k <= max_nodes; k++) {
			if (!best_plan(r, g, k * count, count, off || r->offload == 1, host, fabric, net, p))
				continue;
			/* more nodes only when the deadline asks for them */
			while (r->deadline_h > 0 && p->hours > r->deadline_h && k < max_nodes) {
				advise_plan q;
				if (!best_plan(r, g, (k + 1) * count, count, off || r->offload == 1, host, fabric, net, &q))
					break;
				*p = q;
				k++;
			}
			/* and more nodes when they make the job cheaper: room for less recomputation (full
			   recomputation costs 8·N FLOPs per token, selective 6.18·N) or for no offload */
			for (unsigned k2 = k + 1; k2 <= max_nodes && (p->recompute == MEMMODEL_RC_FULL || p->offload);
			     k2++) {
				advise_plan q;
				if (best_plan(r, g, k2 * count, count, off || r->offload == 1, host, fabric, net, &q) &&
				    q.hours * k2 < p->hours * k * 0.95 && (r->deadline_h <= 0 || q.hours <= r->deadline_h)) {
					*p = q;
					k = k2;
				}
			}
			*nodes = k;
			return true;
		}
	}
	/* what was missing: a GPU network between the nodes, or memory enough on the host? */
	advise_plan q;
	for (unsigned k = 2; train && !fabric && k <= max_nodes && *why == WHY_NOFIT; k++)
		if (best_plan(r, g, k * count, count, r->offload != 0, host, true, net, &q))
			*why = WHY_NO_FABRIC;
	for (unsigned k = 1; train && r->offload != 0 && k <= max_nodes && *why == WHY_NOFIT; k++)
		if (best_plan(r, g, k * count, count, true, INFINITY, fabric, net, &q) && q.offload)
			*why = host > 0 ? WHY_HOST_SMALL : WHY_NO_HOST;
	return false;
}

static int by_cost(const void *a, const void *b)
{
	const advise_plan *x = a, *y = b;
	if (x->rank_cost != y->rank_cost)
		return x->rank_cost < y->rank_cost ? -1 : 1;
	if (x->hours != y->hours)
		return x->hours < y->hours ? -1 : 1;
	int c = strcmp(x->row->instance, y->row->instance);
	return c ? c : strcmp(x->row->region, y->row->region);
}

static void smallest_need(const advise_req *r, const spec_gpu *gpus, size_t ngpus, advise_need *need)
{
	memset(need, 0, sizeof *need);
	double best = INFINITY;
	for (size_t i = 0; i < ngpus; i++) {
		for (unsigned n = 1; n <= 4096; n *= 2) {
			advise_plan p;
			/* no instance here: the host memory is what the plan needs */
			if (!best_plan(r, &gpus[i], n, n < 8 ? n : 8, r->offload != 0, INFINITY, true, ADVISE_NET_DEFAULT_GBPS * 1e9 / 8, &p))
				continue;
			double total = n * gpus[i].mem;
			if (total < best) {
				best = total;
				need->gpu = &gpus[i];
				need->gpus = n;
				need->mem = p.mem;
				need->zero = p.zero;
				need->recompute = p.recompute;
				need->tp = p.tp;
				need->offload = p.offload;
				need->host_need = p.host_need;
			}
			break;
		}
	}
}

int advise_rank(const advise_req *r, const spec_gpu *gpus, size_t ngpus, const catalog *cat, advise_plan **out,
	     size_t *n, advise_need *need, advise_skipped *skipped, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	memset(skipped, 0, sizeof *skipped);
	memset(need, 0, sizeof *need);
	memmodel_mem probe;
	memmodel_job j = r->job;
	j.dp = j.tp = 1;
	if (memmodel_estimate(&r->model, &j, &probe, err, errlen) != 0)
		return GC_EINVAL;
	if (r->tokens <= 0) {
		errbuf_set(err, errlen, "the amount of work (--tokens) must be positive");
		return GC_EINVAL;
	}
	struct cache_ent *cache = NULL;
	size_t ncache = 0;
	advise_plan *plans = NULL;
	size_t np = 0, cap = 0;
	for (size_t i = 0; i < cat->n; i++) {
		const cat_row *row = &cat->rows[i];
		if (!in_list(r->clouds, row->cloud) || !in_list(r->regions, row->region))
			continue;
		double price = r->spot ? row->spot : row->price;
		if (price < 0)
			continue;
		const spec_gpu *g = specs_gpu_for(gpus, ngpus, row->acc);
		if (!g) {
			skipped->unknown_gpus++;
			continue;
		}
		if (row->count > r->max_gpus)
			continue;
		/* MemoryGiB is GiB (SkyPilot's catalogs); 0: the row does not say */
		double host = row->mem_gib * 1024.0 * 1024 * 1024;
		/* the instance's network: a GPU network (ZeRO-3 may span instances) or its plain one; unknown:
		   ADVISE_NET_DEFAULT_GBPS, said with the plan */
		const spec_fabric *net_row = specs_fabric_for(r->fabrics, r->nfabrics, row->instance);
		const spec_fabric *fab = net_row && !net_row->plain ? net_row : NULL;
		bool assumed = !net_row || !(net_row->gbps > 0);
		double net = (assumed ? ADVISE_NET_DEFAULT_GBPS : net_row->gbps) * 1e9 / 8;
		struct cache_ent *ce = NULL;
		for (size_t k = 0; k < ncache; k++)
			if (cache[k].g == g && cache[k].count == row->count && cache[k].host == host &&
			    cache[k].fabric == (fab != NULL) && cache[k].net == net)
				ce = &cache[k];
		if (!ce) {
			struct cache_ent *nc = realloc(cache, (ncache + 1) * sizeof *nc);
			if (!nc)
				goto nomem;
			cache = nc;
			ce = &cache[ncache++];
			memset(ce, 0, sizeof *ce);
			ce->g = g;
			ce->count = row->count;
			ce->host = host;
			ce->fabric = fab != NULL;
			ce->net = net;
			ce->ok = plan_for(r, g, row->count, host, fab != NULL, net, &ce->plan, &ce->nodes, &ce->why);
		}
		if (!ce->ok) {
			if (ce->why == WHY_NO_HOST)
				skipped->no_host_mem++;
			else if (ce->why == WHY_HOST_SMALL)
				skipped->host_too_small++;
			else if (ce->why == WHY_NO_FABRIC)
				skipped->no_fabric++;
			continue;
		}
		advise_plan p = ce->plan;
		p.row = row;
		p.fabric = fab;
		p.nodes = ce->nodes;
		p.net_gbps = p.nodes > 1 ? net * 8 / 1e9 : 0;
		p.net_assumed = p.nodes > 1 && assumed;
		p.price_h = row->price >= 0 ? row->price * p.nodes : -1;
		p.spot_h = row->spot >= 0 ? row->spot * p.nodes : -1;
		p.cost = p.price_h >= 0 ? p.price_h * p.hours : -1;
		p.spot_cost = p.spot_h >= 0 ? p.spot_h * p.hours : -1;
		p.rank_cost = r->spot ? p.spot_cost : p.cost;
		if (r->budget > 0 && p.rank_cost > r->budget)
			continue;
		if (r->deadline_h > 0 && p.hours > r->deadline_h)
			continue;
		if (np == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			advise_plan *nx = realloc(plans, ncap * sizeof *nx);
			if (!nx)
				goto nomem;
			plans = nx;
			cap = ncap;
		}
		plans[np++] = p;
	}
	free(cache);
	if (np)
		qsort(plans, np, sizeof *plans, by_cost);
	else
		smallest_need(r, gpus, ngpus, need);
	*out = plans;
	*n = np;
	return 0;
nomem:
	free(cache);
	free(plans);
	errbuf_set(err, errlen, "out of memory");
	return GC_ENOMEM;
}

void advise_fmt_hours(char *buf, size_t len, double h)
{
	if (h < 1.0 / 60)
		snprintf(buf, len, "%.0f s", h * 3600);
	else if (h < 1)
		snprintf(buf, len, "%.0f min", h * 60);
	else if (h < 48)
		snprintf(buf, len, "%.1f h", h);
	else
		snprintf(buf, len, "%.1f days", h / 24);
}

void advise_fmt_money(char *buf, size_t len, double v)
{
	if (v < 0)
		snprintf(buf, len, "-");
	else if (v < 10)
		snprintf(buf, len, "$%.2f", v);
	else
		snprintf(buf, len, "$%.0f", v);
}
