/*
 * test-advise.c — lib/advise/advise.c's planner on small in-memory catalogs: a
 * CPU-offload plan must fit the instance's host memory (MemoryGiB, with
 * DeepSpeed's 1.5x buffer factor), and rows that differ only in host
 * memory are planned apart; ZeRO-3 spans instances only over a GPU network
 * between them (data/fabrics.csv).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "advise/advise.h"
#include "advise/catalog.h"
#include "advise/here.h"
#include "advise/specs.h"
#include "tmpdir.h"

static spec_gpu *gpus;
static size_t ngpus;
static memmodel_model *models;
static size_t nmodels;

static int setup(void **state)
{
	(void)state;
	char path[4096], err[512];
	const char *src = getenv("GPUCTL_SRCDIR");
	snprintf(path, sizeof path, "%s/data/gpus.csv", src ? src : ".");
	if (specs_load_gpus(path, &gpus, &ngpus, err, sizeof err))
		fail_msg("%s", err);
	snprintf(path, sizeof path, "%s/data/models.csv", src ? src : ".");
	if (specs_load_models(path, &models, &nmodels, err, sizeof err))
		fail_msg("%s", err);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(gpus);
	free(models);
	return 0;
}

/* a request as gpuctl advise builds it: the task's defaults, everything else chosen */
static advise_req request(const char *model, int task)
{
	advise_req r;
	memset(&r, 0, sizeof r);
	const memmodel_model *m = specs_model_find(models, nmodels, model);
	assert_non_null(m);
	r.model = *m;
	r.job = (memmodel_job){.task = task, .prec = MEMMODEL_BF16, .kv_prec = MEMMODEL_BF16, .optim = MEMMODEL_ADAMW, .dp = 1, .tp = 1,
			 .seq = 4096, .batch = 1, .lora_rank = 16, .lora_targets = MEMMODEL_LT_ALL};
	r.tokens = 1e9;
	r.output_len = 256;
	r.max_gpus = 64;
	r.headroom = 0.10;
	r.zero = -1;
	r.recompute = -1;
	r.offload = -1;
	return r;
}

static void test_offload_fits_host(void **state)
{
	(void)state;
	/* a 13B full fine-tune on one 80 GB GPU fits only with its optimizer and gradients offloaded
	   (182 GB, 273 GB with the buffers): 64 GiB is too little, 1024 GiB enough, no MemoryGiB unknown */
	const char *t = "InstanceType,AcceleratorName,AcceleratorCount,MemoryGiB,Price,Region\n"
			"small-host,A100-80GB,1,64,3.00,r1\n"
			"big-host,A100-80GB,1,1024,4.00,r1\n"
			"no-host,A100-80GB,1,,2.00,r1\n"
			"mid-host,A100-80GB,1,200,3.50,r1\n";
	catalog c = {0};
	char err[256];
	assert_int_equal(catalog_load_buf(&c, t, strlen(t), "t.csv", "aws", err, sizeof err), 0);
	advise_req r = request("llama-2-13b", MEMMODEL_TRAIN);
	r.max_gpus = 1;
	advise_plan *p = NULL;
	size_t n = 0;
	advise_need need;
	advise_skipped sk;
	assert_int_equal(advise_rank(&r, gpus, ngpus, &c, &p, &n, &need, &sk, err, sizeof err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(p[0].row->instance, "big-host");
	assert_true(p[0].offload);
	/* what the node needs: every GPU's offloaded share, x1.5 */
	assert_true(fabs(p[0].host_need - p[0].mem.cpu * 1 * ADVISE_HOST_BUFFER) < 1);
	assert_true(p[0].host_need <= 1024.0 * 1024 * 1024 * 1024);
	assert_true(p[0].host_need > 200.0 * 1024 * 1024 * 1024);
	assert_int_equal(sk.no_host_mem, 1);
	assert_int_equal(sk.host_too_small, 2);
	assert_int_equal(sk.unknown_gpus, 0);
	free(p);

	/* --no-offload: nothing fits, and no row is blamed on its host memory */
	r.offload = 0;
	assert_int_equal(advise_rank(&r, gpus, ngpus, &c, &p, &n, &need, &sk, err, sizeof err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(sk.no_host_mem + sk.host_too_small, 0);
	free(p);
	catalog_free(&c);
}

static void test_offload_per_node(void **state)
{
	(void)state;
	/* eight GPUs in a node offload eight shares into one host: a host big enough for one GPU's
	   share is not enough for the node's */
	const char *t = "InstanceType,AcceleratorName,AcceleratorCount,MemoryGiB,Price,Region\n"
			"eight,A100-80GB,8,400,30.00,r1\n"
			"eight-big,A100-80GB,8,4000,40.00,r1\n";
	catalog c = {0};
	char err[256];
	assert_int_equal(catalog_load_buf(&c, t, strlen(t), "t.csv", "aws", err, sizeof err), 0);
	advise_req r = request("llama-2-70b", MEMMODEL_TRAIN);
	r.max_gpus = 8;
	r.offload = 1;
	advise_plan *p = NULL;
	size_t n = 0;
	advise_need need;
	advise_skipped sk;
	assert_int_equal(advise_rank(&r, gpus, ngpus, &c, &p, &n, &need, &sk, err, sizeof err), 0);
	for (size_t i = 0; i < n; i++) {
		assert_true(p[i].offload);
		double host = p[i].row->mem_gib * 1024 * 1024 * 1024;
		assert_true(p[i].mem.cpu * p[i].row->count * ADVISE_HOST_BUFFER <= host);
	}
	assert_int_equal(n, 1);
	assert_string_equal(p[0].row->instance, "eight-big");
	free(p);
	catalog_free(&c);
}

static void test_zero3_needs_fabric(void **state)
{
	(void)state;
	spec_fabric fab[] = {{.cloud = "aws", .instance = "p5.48xlarge", .fabric = "EFA", .gbps = 3200}};
	const char *t = "InstanceType,AcceleratorName,AcceleratorCount,MemoryGiB,Price,Region\n"
			"P5.48XLARGE,H100,8,2048,55.04,r1\n"
			"h100-ethernet,H100,8,2048,54.00,r1\n";
	catalog c = {0};
	char err[256];
	assert_int_equal(catalog_load_buf(&c, t, strlen(t), "t.csv", "aws", err, sizeof err), 0);
	advise_req r = request("llama-2-70b", MEMMODEL_TRAIN);
	r.fabrics = fab;
	r.nfabrics = 1;
	advise_plan *p = NULL;
	size_t n = 0;
	advise_need need;
	advise_skipped sk;
	/* chosen freely: both rows get a plan, and no plan shards parameters over plain Ethernet */
	assert_int_equal(advise_rank(&r, gpus, ngpus, &c, &p, &n, &need, &sk, err, sizeof err), 0);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++) {
		bool ethernet = strcmp(p[i].row->instance, "h100-ethernet") == 0;
		assert_true(ethernet ? p[i].fabric == NULL : p[i].fabric == &fab[0]); /* matched ignoring case */
		if (ethernet)
			assert_false(p[i].nodes > 1 && p[i].zero == 3);
	}
	free(p);
	/* ZeRO-3 without offload needs more than one node of 80 GB GPUs: only the fabric row */
	r.zero = 3;
	r.offload = 0;
	assert_int_equal(advise_rank(&r, gpus, ngpus, &c, &p, &n, &need, &sk, err, sizeof err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(p[0].row->instance, "P5.48XLARGE");
	assert_true(p[0].nodes > 1 && p[0].zero == 3);
	assert_int_equal(sk.no_fabric, 1);
	free(p);
	/* with no fabric known at all, nothing fits, and both rows are counted for it */
	r.nfabrics = 0;
	assert_int_equal(advise_rank(&r, gpus, ngpus, &c, &p, &n, &need, &sk, err, sizeof err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(sk.no_fabric, 2);
	free(p);
	catalog_free(&c);
}

/*
 * The communication model (issue 37): a 7B full fine-tune's gradients over a
 * plain 2.5 Gbps network between one-GPU VMs are timed, ring volume and
 * overlap as advise_comm_hours says; over NVLink, or a GPU network between
 * nodes, they are in the MFU and add nothing; over PCIe inside a node they
 * are timed again.
 */
static void test_comm_model(void **state)
{
	(void)state;
	advise_req r = request("llama-2-7b", MEMMODEL_TRAIN);
	const spec_gpu *l40s = specs_gpu_for(gpus, ngpus, "L40S"), *h100 = specs_gpu_for(gpus, ngpus, "H100");
	assert_non_null(l40s);
	assert_non_null(h100);
	memmodel_job j = r.job;
	j.dp = 7;
	j.zero = 1;
	memmodel_mem m;
	assert_int_equal(memmodel_estimate(&r.model, &j, &m, NULL, 0), 0);
	advise_comm c;
	double net = 2.5e9 / 8, compute_h = 10;
	double h = advise_comm_hours(&r, l40s, 7, 1, 1, 1, MEMMODEL_RC_SELECTIVE, &m, compute_h, net, false, &c);
	/* a step: 1M tokens (the default global batch) in micro-batches of 7 x 4096 */
	assert_float_equal(c.accum, ceil(1048576.0 / (7 * 4096)), 1e-9);
	assert_float_equal(c.steps, r.tokens / (7.0 * 4096 * c.accum), 1e-6);
	/* ZeRO-1 under the Trainer's DeepSpeed: bf16 gradients, one reduction a step, all of it between nodes */
	double want = 2.0 * 6 / 7 * m.trainable * 2 / (net * ADVISE_LINK_EFF);
	assert_float_equal(c.dp_s, want, want * 1e-9);
	assert_float_equal(c.dp_inter_s, want, want * 1e-9);
	/* hidden behind the last micro-batch's backward pass (2/3 of its compute) only */
	double micro = c.compute_s / c.accum;
	assert_float_equal(c.exposed_s, want - 2.0 / 3 * micro, want * 1e-9);
	assert_float_equal(h, c.exposed_s * c.steps / 3600, 1e-9);
	assert_true(h > 1);
	/* the same over a GPU network, or on one NVLink node: nothing added */
	assert_float_equal(advise_comm_hours(&r, l40s, 7, 1, 1, 1, 0, &m, compute_h, net, true, &c), 0, 0);
	assert_float_equal(advise_comm_hours(&r, h100, 8, 8, 1, 1, 0, &m, compute_h, 0, false, &c), 0, 0);
	assert_float_equal(c.dp_s, 0, 0);
	/* eight L40S on PCIe in one node: the ring inside it is timed */
	advise_comm_hours(&r, l40s, 8, 8, 1, 1, 0, &m, compute_h, 0, false, &c);
	want = 2.0 * 7 / 8 * m.trainable * 2 / (l40s->link / 2 * ADVISE_LINK_EFF);
	assert_float_equal(c.dp_s, want, want * 1e-9);
	assert_float_equal(c.dp_inter_s, 0, 0);
	/* ZeRO-3 over a plain network: parameters gathered every micro-batch, hidden behind it at most */
	double h3 = advise_comm_hours(&r, l40s, 7, 1, 1, 3, 0, &m, compute_h, net, false, &c);
	want = 1.5 * 2.0 * 6 / 7 * m.trainable * 2 / (net * ADVISE_LINK_EFF);
	assert_float_equal(c.dp_s, want * c.accum, want * c.accum * 1e-9);
	assert_true(h3 > h);
	/* inference: none */
	r.job.task = MEMMODEL_INFER;
	assert_float_equal(advise_comm_hours(&r, l40s, 7, 1, 1, 0, 0, &m, compute_h, net, false, &c), 0, 0);
}

/* a plan's hours are its compute and the communication it does not hide; a plain network between one-GPU
 * VMs is no longer ranked as if it were NVLink */
static void test_comm_in_the_ranking(void **state)
{
	(void)state;
	spec_fabric net[] = {{.cloud = "aws", .instance = "one-l40s", .fabric = "ENA (TCP)", .gbps = 2.5, .plain = true}};
	const char *t = "InstanceType,AcceleratorName,AcceleratorCount,MemoryGiB,Price,Region\n"
			"one-l40s,L40S,1,128,1.00,r1\n";
	catalog c = {0};
	char err[256];
	assert_int_equal(catalog_load_buf(&c, t, strlen(t), "t.csv", "aws", err, sizeof err), 0);
	advise_req r = request("llama-2-7b", MEMMODEL_TRAIN);
	r.fabrics = net;
	r.nfabrics = 1;
	advise_plan *p = NULL;
	size_t n = 0;
	advise_need need;
	advise_skipped sk;
	assert_int_equal(advise_rank(&r, gpus, ngpus, &c, &p, &n, &need, &sk, err, sizeof err), 0);
	assert_int_equal(n, 1);
	assert_true(p[0].nodes > 1);
	assert_true(p[0].fabric == NULL); /* a plain network: no ZeRO-3 across it */
	assert_true(p[0].zero < 3);
	assert_false(p[0].net_assumed);
	assert_float_equal(p[0].net_gbps, 2.5, 1e-9);
	assert_true(p[0].comm_h > 0);
	assert_float_equal(p[0].hours, p[0].compute_h + p[0].comm_h, 1e-9);
	free(p);
	/* an instance data/fabrics.csv does not list: 10 Gbps assumed, and said */
	r.nfabrics = 0;
	assert_int_equal(advise_rank(&r, gpus, ngpus, &c, &p, &n, &need, &sk, err, sizeof err), 0);
	assert_int_equal(n, 1);
	assert_true(p[0].net_assumed);
	assert_float_equal(p[0].net_gbps, ADVISE_NET_DEFAULT_GBPS, 1e-9);
	free(p);
	catalog_free(&c);
}

/* QLoRA under Hugging Face (PEFT, the Trainer) is data-parallel: no plan splits the model with TP (issue 37) */
static void test_peft_under_hf_never_tp(void **state)
{
	(void)state;
	const char *t = "InstanceType,AcceleratorName,AcceleratorCount,MemoryGiB,Price,Region\n"
			"g2,A100-80GB,2,340,8.3,r1\ng4,A100-80GB,4,680,16.6,r1\ng8,A100-80GB,8,1360,33.2,r1\n";
	catalog c = {0};
	char err[256];
	assert_int_equal(catalog_load_buf(&c, t, strlen(t), "t.csv", "aws", err, sizeof err), 0);
	for (int fw = MEMMODEL_FW_AUTO; fw <= MEMMODEL_FW_MEGATRON; fw++) {
		advise_req r = request("llama-2-70b", MEMMODEL_QLORA);
		r.job.framework = fw;
		advise_plan *p = NULL;
		size_t n = 0, tp2 = 0;
		advise_need need;
		advise_skipped sk;
		assert_int_equal(advise_rank(&r, gpus, ngpus, &c, &p, &n, &need, &sk, err, sizeof err), 0);
		assert_true(n > 0);
		for (size_t i = 0; i < n; i++)
			tp2 += p[i].tp > 1;
		if (fw == MEMMODEL_FW_MEGATRON)
			assert_true(tp2 > 0); /* Megatron's own PEFT splits the model where that is cheaper */
		else
			assert_int_equal(tp2, 0);
		free(p);
	}
	catalog_free(&c);
}

/*
 * The fewest nodes that fit are not always the cheapest: a 70B pretraining on
 * A100-40GB fits 5 nodes only with full recomputation (8·N FLOPs per token);
 * 6 nodes fit with selective (6.18·N), fewer GPU-hours, a lower total.
 */
static void test_more_nodes_when_cheaper(void **state)
{
	(void)state;
	spec_fabric fab[] = {{.cloud = "aws", .instance = "p4d.24xlarge", .fabric = "EFA", .gbps = 400}};
	const char *t = "InstanceType,AcceleratorName,AcceleratorCount,MemoryGiB,Price,Region\n"
			"p4d.24xlarge,A100,8,1152,21.96,r1\n";
	catalog c = {0};
	char err[256];
	assert_int_equal(catalog_load_buf(&c, t, strlen(t), "t.csv", "aws", err, sizeof err), 0);
	advise_req r = request("llama-2-70b", MEMMODEL_TRAIN);
	r.fabrics = fab;
	r.nfabrics = 1;
	r.tokens = 2e12;
	advise_plan *p = NULL;
	size_t n = 0;
	advise_need need;
	advise_skipped sk;
	assert_int_equal(advise_rank(&r, gpus, ngpus, &c, &p, &n, &need, &sk, err, sizeof err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].recompute, MEMMODEL_RC_SELECTIVE);
	double chosen = p[0].hours * p[0].gpus;
	unsigned nodes = p[0].nodes;
	free(p);
	/* with full recomputation forced, fewer nodes fit, and it costs more GPU-hours */
	r.recompute = MEMMODEL_RC_FULL;
	assert_int_equal(advise_rank(&r, gpus, ngpus, &c, &p, &n, &need, &sk, err, sizeof err), 0);
	assert_int_equal(n, 1);
	assert_true(p[0].nodes < nodes);
	assert_true(p[0].hours * p[0].gpus > chosen * 1.2);
	free(p);
	/* capped below what selective needs, full recomputation is what fits */
	r.recompute = -1;
	r.max_gpus = (nodes - 1) * 8;
	assert_int_equal(advise_rank(&r, gpus, ngpus, &c, &p, &n, &need, &sk, err, sizeof err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(p[0].recompute, MEMMODEL_RC_FULL);
	free(p);
	catalog_free(&c);
}

static void test_fabrics_file(void **state)
{
	(void)state;
	char path[4096], err[512];
	const char *src = getenv("GPUCTL_SRCDIR");
	snprintf(path, sizeof path, "%s/data/fabrics.csv", src ? src : ".");
	spec_fabric *f = NULL;
	size_t n = 0;
	if (specs_load_fabrics(path, &f, &n, err, sizeof err))
		fail_msg("%s", err);
	assert_true(n >= 7);
	const spec_fabric *x = specs_fabric_for(f, n, "P5.48xlarge");
	assert_non_null(x);
	assert_true(x->gbps == 3200);
	assert_false(x->plain);
	assert_non_null(specs_fabric_for(f, n, "Standard_ND96asr_v4"));
	/* g5.48xlarge: its plain network only (100 Gbps, EFA without GPUDirect) */
	x = specs_fabric_for(f, n, "g5.48xlarge");
	assert_non_null(x);
	assert_true(x->plain && x->gbps == 100);
	for (size_t i = 0; i < n; i++)
		assert_true(f[i].instance[0] && f[i].fabric[0] && f[i].gbps > 0);
	free(f);
	/* a bad row names the file and line */
	char dir[64];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "advise"), 0);
	snprintf(path, sizeof path, "%s/fabrics.csv", dir);
	FILE *tf = fopen(path, "w");
	assert_non_null(tf);
	fputs("cloud,instance,fabric,gbps,source\naws,x,EFA,fast,s\n", tf);
	fclose(tf);
	assert_true(specs_load_fabrics(path, &f, &n, err, sizeof err) < 0);
	assert_non_null(strstr(err, "fabrics.csv: line 2: "));
	assert_non_null(strstr(err, "'fast'"));
	/* gpu_network is yes or no */
	tf = fopen(path, "w");
	assert_non_null(tf);
	fputs("cloud,instance,fabric,gbps,source,gpu_network\naws,x,EFA,100,s,maybe\n", tf);
	fclose(tf);
	assert_true(specs_load_fabrics(path, &f, &n, err, sizeof err) < 0);
	assert_non_null(strstr(err, "gpu_network 'maybe' (expected yes or no)"));
	tmpdir_remove(dir);
}

/* a bad table names its file and why, whole, and gives no rows: a CSV error after good rows, a
 * missing column, an empty file, a bad row, in each loader */
static void test_specs_errors(void **state)
{
	(void)state;
	char dir[64], path[256], err[512], want[512];
	assert_int_equal(tmpdir_make(dir, sizeof dir, "specs"), 0);
	static const struct {
		const char *file, *text, *why; /* why: err after "DIR/FILE: " */
	} cases[] = {
		{"gpus.csv", "name,accelerator_names,memory_gb,mem_bw_gbs\nA,a,80,2000\nB,\"b,80,2000\n",
		 "line 3: a quoted field is never closed"},
		{"gpus.csv", "name,accelerator_names,memory_gb\n", "no column 'mem_bw_gbs' in the header"},
		{"gpus.csv", "# only a comment\n", "empty file"},
		{"gpus.csv", "name,accelerator_names,memory_gb,mem_bw_gbs\nA,a,80,2000\nB,b,0,2000\n",
		 "line 3: a GPU needs a name, memory_gb and mem_bw_gbs"},
		{"models.csv", "name,kind,params\nm,decoder,7B\nn,decoder,7B,\"\n",
		 "line 3: a quoted field is never closed"},
		{"models.csv", "name,kind,params\nm,decoder,7B\nn,rnn,7B\n",
		 "line 3: a model needs a name and a kind (decoder, encoder, cnn)"},
		{"fabrics.csv", "instance,fabric\nx,EFA\ny,\"EFA\"z\n", "line 3: text after a closing quote"},
		{"nvml.csv", "nvml,gpu\n*A100*,A100\n*H100*,\"H100\n", "line 3: a quoted field is never closed"},
		{"nvml.csv", "nvml,gpu\n*A100*,A100\n*H100*,\n", "line 3: a row needs a driver's name pattern and a GPU"},
		{"sky.csv", "gpu\nA100\n", "no column 'skypilot' in the header"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_int_equal(tmpdir_write(dir, cases[i].file, cases[i].text), 0);
		snprintf(path, sizeof path, "%s/%s", dir, cases[i].file);
		spec_gpu *g = NULL;
		memmodel_model *m = NULL;
		spec_fabric *f = NULL;
		spec_sky *t = NULL;
		size_t n = 99;
		int rc;
		if (strcmp(cases[i].file, "gpus.csv") == 0)
			rc = specs_load_gpus(path, &g, &n, err, sizeof err);
		else if (strcmp(cases[i].file, "models.csv") == 0)
			rc = specs_load_models(path, &m, &n, err, sizeof err);
		else if (strcmp(cases[i].file, "fabrics.csv") == 0)
			rc = specs_load_fabrics(path, &f, &n, err, sizeof err);
		else if (strcmp(cases[i].file, "nvml.csv") == 0)
			rc = specs_load_nvml(path, &t, &n, err, sizeof err);
		else
			rc = specs_load_sky(path, &t, &n, err, sizeof err);
		bool rows = g || m || f || t;
		snprintf(want, sizeof want, "%s: %s", path, cases[i].why);
		if (rc != GC_EINVAL || strcmp(err, want) != 0 || rows || n)
			fail_msg("case %zu: rc %d, %zu rows, '%s'; expected GC_EINVAL, none, '%s'", i, rc, n, err, want);
	}
	tmpdir_remove(dir);
}

/* the driver's names map to gpus.csv rows by data/nvml-gpus.csv, the specific patterns first */
static void test_nvml_names(void **state)
{
	(void)state;
	char path[4096], err[512];
	const char *src = getenv("GPUCTL_SRCDIR");
	snprintf(path, sizeof path, "%s/data/nvml-gpus.csv", src ? src : ".");
	spec_sky *t = NULL;
	size_t n = 0;
	if (specs_load_nvml(path, &t, &n, err, sizeof err))
		fail_msg("%s", err);
	static const char *const pairs[][2] = {
		{"NVIDIA H100 80GB HBM3", "H100"}, {"NVIDIA H100 PCIe", "H100-PCIe"}, {"NVIDIA H100 NVL", "H100-NVL"},
		{"NVIDIA A100-SXM4-80GB", "A100-80GB"}, {"NVIDIA A100 80GB PCIe", "A100-80GB-PCIe"},
		{"NVIDIA A100-SXM4-40GB", "A100-40GB"}, {"NVIDIA A10G", "A10G"}, {"NVIDIA A10", "A10"},
		{"NVIDIA L4", "L4"}, {"NVIDIA L40S", "L40S"}, {"Tesla T4", "T4"}, {"Tesla V100-SXM2-16GB", "V100-16GB"},
		{"Tesla V100-PCIE-32GB", "V100-32GB"}, {"NVIDIA H200", "H200"}, {"NVIDIA L40", "L40"},
		{"NVIDIA RTX A6000", "RTX-A6000"}, {"NVIDIA RTX 6000 Ada Generation", "RTX-6000-Ada"},
		{"NVIDIA GeForce RTX 4090", "RTX-4090"}, {"NVIDIA GeForce RTX 3090 Ti", "RTX-3090"},
	};
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		const spec_gpu *g = specs_gpu_for_nvml(t, n, gpus, ngpus, pairs[i][0]);
		if (!g || strcmp(g->name, pairs[i][1]) != 0)
			fail_msg("'%s' planned as %s, expected %s", pairs[i][0], g ? g->name : "nothing", pairs[i][1]);
	}
	/* an A40, a Turing Quadro RTX 6000, an RTX A4000: not in the table, not planned as something else */
	assert_null(specs_gpu_for_nvml(t, n, gpus, ngpus, "NVIDIA A40"));
	assert_null(specs_gpu_for_nvml(t, n, gpus, ngpus, "Quadro RTX 6000"));
	assert_null(specs_gpu_for_nvml(t, n, gpus, ngpus, "NVIDIA RTX A4000"));
	free(t);
}

/* the fewest of this machine's GPUs that hold the workload, on one node */
static void test_here_plan(void **state)
{
	(void)state;
	char err[256];
	struct here_machine m = {.gpu = specs_gpu_for(gpus, ngpus, "H100"), .ngpus = 8, .host_gib = 1024, .price = 2.5};
	cat_row row;
	advise_plan p;
	bool found;
	/* Llama-2-7B inference: one GPU; priced at $2.50 per GPU-hour */
	advise_req r = request("llama-2-7b", MEMMODEL_INFER);
	assert_int_equal(here_plan(&r, &m, gpus, ngpus, &row, &p, &found, err, sizeof err), 0);
	assert_true(found);
	assert_int_equal(p.gpus, 1);
	assert_int_equal(p.nodes, 1);
	assert_true(fabs(p.price_h - 2.5) < 1e-9);
	/* 70B inference in bf16 (140 GB of weights): two H100s */
	r = request("llama-2-70b", MEMMODEL_INFER);
	assert_int_equal(here_plan(&r, &m, gpus, ngpus, &row, &p, &found, err, sizeof err), 0);
	assert_true(found);
	assert_int_equal(p.gpus, 2);
	assert_true(p.mem.total <= p.usable);
	/* on two L4s it does not fit; no price configured: none shown */
	struct here_machine l4 = {.gpu = specs_gpu_for(gpus, ngpus, "L4"), .ngpus = 2, .host_gib = 64, .price = -1};
	assert_int_equal(here_plan(&r, &l4, gpus, ngpus, &row, &p, &found, err, sizeof err), 0);
	assert_false(found);
	r = request("llama-2-7b", MEMMODEL_INFER);
	assert_int_equal(here_plan(&r, &l4, gpus, ngpus, &row, &p, &found, err, sizeof err), 0);
	assert_true(found);
	assert_true(p.price_h < 0 && p.cost < 0);
	/* a GPU not in the table: nothing is planned */
	struct here_machine unknown = {.gpu = NULL, .ngpus = 4};
	assert_int_equal(here_plan(&r, &unknown, gpus, ngpus, &row, &p, &found, err, sizeof err), 0);
	assert_false(found);
}

/* the queue's wait, first come first served, from a typical runtime */
static void test_here_wait(void **state)
{
	(void)state;
	const double hour = 3600e3;
	const int64_t now = 100 * 3600000LL;
	/* free now, nothing queued */
	assert_int_equal(here_wait_ms(2, 2, 8, NULL, 0, NULL, 0, 0, now), 0);
	/* free now but a job is queued ahead (it takes them): cannot tell without a runtime */
	unsigned q1[] = {2};
	assert_int_equal(here_wait_ms(2, 2, 8, NULL, 0, q1, 1, 0, now), -1);
	/* 8 GPUs: a 6-GPU job started 20 min ago, 2 free; a 2-GPU job queued ahead takes them; ours (2)
	   waits for the 6-GPU job, typical runtime 1 h: 40 min */
	struct here_job run[] = {{.ngpus = 6, .started_ms = now - 20 * 60000}};
	assert_int_equal(here_wait_ms(2, 2, 8, run, 1, q1, 1, hour, now), 40 * 60000);
	/* nothing ahead: the 2 free GPUs are ours now */
	assert_int_equal(here_wait_ms(2, 2, 8, run, 1, NULL, 0, hour, now), 0);
	/* a job past the typical runtime is given half of it more */
	struct here_job late[] = {{.ngpus = 8, .started_ms = now - 2 * 3600000LL}};
	assert_int_equal(here_wait_ms(4, 0, 8, late, 1, NULL, 0, hour, now), 30 * 60000);
	/* behind an 8-GPU job: it starts when the running one ends, ours an hour after that */
	unsigned q8[] = {8};
	assert_int_equal(here_wait_ms(1, 0, 8, late, 1, q8, 1, hour, now), 90 * 60000);
	/* GPUs held by what is not a queued job (interactive leases) never come back: unknown */
	assert_int_equal(here_wait_ms(4, 0, 8, NULL, 0, NULL, 0, hour, now), -1);
	/* more than the machine has: never */
	assert_int_equal(here_wait_ms(9, 8, 8, NULL, 0, NULL, 0, hour, now), -1);
	/* a queued job that could never start is no one's obstacle */
	unsigned q9[] = {9};
	assert_int_equal(here_wait_ms(2, 2, 8, NULL, 0, q9, 1, hour, now), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offload_fits_host),
		cmocka_unit_test(test_offload_per_node),
		cmocka_unit_test(test_zero3_needs_fabric),
		cmocka_unit_test(test_more_nodes_when_cheaper),
		cmocka_unit_test(test_peft_under_hf_never_tp),
		cmocka_unit_test(test_comm_model),
		cmocka_unit_test(test_comm_in_the_ranking),
		cmocka_unit_test(test_fabrics_file),
		cmocka_unit_test(test_specs_errors),
		cmocka_unit_test(test_nvml_names),
		cmocka_unit_test(test_here_plan),
		cmocka_unit_test(test_here_wait),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
