/*
 * test-explain.c — lib/diagnose/explain.c: cleaning lines, loading signature files
 * (and refusing bad ones), values and line numbers across block boundaries,
 * lines longer than the matcher's window and the read buffer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "device/gpu.h"
#include "diagnose/explain.h"

static struct explain_db *db;

static int load(void **state)
{
	(void)state;
	char err[512];
	return explain_db_load(&db, GPUCTL_SRC_DATADIR "/signatures", err, sizeof err);
}

static int unload(void **state)
{
	(void)state;
	explain_db_free(db);
	return 0;
}

static void test_clean_line(void **state)
{
	(void)state;
	char out[128];
	const char in[] = "\033[1;31mRuntime\033[0mError\r: x\033]0;title\007y\033(Bz";
	explain_clean_line(in, sizeof in - 1, out);
	assert_string_equal(out, "RuntimeError: xyz");
}

static const struct explain_finding *find(const struct explain_result *r, const char *id)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->findings[i].id, id) == 0)
			return &r->findings[i];
	return NULL;
}

static double num(const struct explain_finding *f, const char *name)
{
	for (size_t i = 0; i < f->nvalues; i++)
		if (strcmp(f->values[i].name, name) == 0 && f->values[i].is_num)
			return f->values[i].num;
	fail_msg("no value %s", name);
	return -1;
}

static void test_old_oom_format(void **state)
{
	(void)state;
	const char *log = "x\nRuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total "
			  "capacity; 14.29 GiB already allocated; 5.19 MiB free; 14.65 GiB reserved in total by "
			  "PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb\n";
	struct explain_result r;
	explain_scan_buf(db, log, strlen(log), &r);
	const struct explain_finding *f = find(&r, "pytorch-oom");
	assert_non_null(f);
	assert_int_equal(f->first_line, 2);
	assert_true(num(f, "requested_mib") == 20.0);
	assert_true(num(f, "reserved_unallocated_mib") > 368 && num(f, "reserved_unallocated_mib") < 369);
	explain_result_free(&r);
}

static void test_block_boundaries_and_line_numbers(void **state)
{
	(void)state;
	/* failures at the first line, across a 1 MiB read boundary, at the end without a newline */
	char path[] = "/tmp/gpuctl-explain-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *xid = "NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus.\n";
	const char *filler = "INFO step 12345 loss 0.1234 lr 3e-4 nothing to see here at all\n"; /* 64 bytes */
	assert_int_equal(write(fd, xid, strlen(xid)), (ssize_t)strlen(xid));
	size_t written = strlen(xid);
	unsigned long lines = 1;
	while (written + 64 < (1u << 20) - 20) {
		assert_int_equal(write(fd, filler, 64), 64);
		written += 64;
		lines++;
	}
	assert_int_equal(write(fd, xid, strlen(xid)), (ssize_t)strlen(xid)); /* straddles 1 MiB */
	lines++;
	unsigned long second = lines;
	const char *last = "RuntimeError: CUDA error: an illegal memory access was encountered";
	assert_int_equal(write(fd, last, strlen(last)), (ssize_t)strlen(last));
	lines++;
	lseek(fd, 0, SEEK_SET);
	struct explain_result r;
	char err[256];
	assert_int_equal(explain_scan_fd(db, fd, &r, err, sizeof err), GC_OK);
	close(fd);
	unlink(path);
	assert_int_equal(r.lines, lines);
	const struct explain_finding *f = find(&r, "xid");
	assert_non_null(f);
	assert_int_equal(f->count, 2);
	assert_int_equal(f->first_line, 1);
	const struct explain_finding *g = find(&r, "illegal-memory-access");
	assert_non_null(g);
	assert_int_equal(g->first_line, lines);
	assert_true(second > 1);
	explain_result_free(&r);
}

/* a temporary file holding buf[len]; its fd, at offset 0 */
static int temp_log(const char *buf, size_t len)
{
	char path[] = "/tmp/gpuctl-explain-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(fd, buf + off, len - off);
		assert_true(n > 0);
		off += (size_t)n;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* both scans of buf[len] with signatures d: the same findings, lines and first lines */
/* a and b found the same: ids, counts and first lines, in order */
static void same_findings(const struct explain_result *a, const struct explain_result *b)
{
	assert_int_equal(a->lines, b->lines);
	assert_int_equal(a->n, b->n);
	for (size_t i = 0; i < a->n; i++) {
		assert_string_equal(a->findings[i].id, b->findings[i].id);
		assert_int_equal(a->findings[i].count, b->findings[i].count);
		assert_int_equal(a->findings[i].first_line, b->findings[i].first_line);
	}
}

static void scan_both_with(const struct explain_db *d, const char *buf, size_t len, struct explain_result *r)
{
	struct explain_result b;
	explain_scan_buf(d, buf, len, &b);
	int fd = temp_log(buf, len);
	char err[256];
	assert_int_equal(explain_scan_fd(d, fd, r, err, sizeof err), GC_OK);
	close(fd);
	same_findings(r, &b);
	explain_result_free(&b);
	/* and every line tried against every signature, without the scanner, finds the same (where no line
	 * is longer than half the matcher's window: a longer one is matched in windows around each trigger
	 * by the scanner, in fixed windows without it, and a window is one finding) */
	size_t longest = 0;
	for (size_t i = 0, at = 0; i <= len; i++)
		if (i == len || buf[i] == '\n' || buf[i] == '\r') {
			longest = i - at > longest ? i - at : longest;
			at = i + 1;
		}
	if (longest > (32u << 10))
		return;
	explain_scan_buf_slow(d, buf, len, &b);
	same_findings(r, &b);
	explain_result_free(&b);
}

static void scan_both(const char *buf, size_t len, struct explain_result *r)
{
	scan_both_with(db, buf, len, r);
}

static void test_error_after_a_long_line(void **state)
{
	(void)state;
	/* one line of 300 kB with no CR (a progress bar written without one, a JSON
	 * record), the error at its end: past the matcher's 64 kB window */
	const char *err = "RuntimeError: CUDA error: an illegal memory access was encountered";
	size_t fill = 300000, len = 0;
	char *buf = malloc(fill + 200);
	len += (size_t)sprintf(buf, "step 1 ok\n");
	for (size_t i = 0; i < fill; i++)
		buf[len++] = "0123456789 loss=0.25 "[i % 21];
	len += (size_t)sprintf(buf + len, " %s\nstep 2\n", err);
	struct explain_result r;
	scan_both(buf, len, &r);
	const struct explain_finding *f = find(&r, "illegal-memory-access");
	assert_non_null(f);
	assert_int_equal(f->first_line, 2);
	assert_int_equal(f->count, 1);
	assert_non_null(strstr(f->line, "illegal memory access"));
	assert_int_equal(r.lines, 3);
	explain_result_free(&r);
	free(buf);
}

static void test_error_across_read_buffers_in_one_line(void **state)
{
	(void)state;
	/* 3 MB without a newline or a CR, failures straddling the 1 MiB reads and at
	 * the very end: every one found, on line 1, counted once */
	const char *err = " RuntimeError: CUDA error: device-side assert triggered ";
	size_t cap = 3u << 20, len = 0;
	char *buf = malloc(cap + 100);
	while (len < cap) {
		size_t at = len;
		if ((at >= (1u << 20) - 30 && at < (1u << 20) - 20) || (at >= (2u << 20) + 5 && at < (2u << 20) + 15)) {
			memcpy(buf + len, err, strlen(err));
			len += strlen(err);
		} else {
			buf[len++] = "abcdefghij"[at % 10];
		}
	}
	memcpy(buf + len, err, strlen(err));
	len += strlen(err);
	struct explain_result r;
	scan_both(buf, len, &r);
	const struct explain_finding *f = find(&r, "device-side-assert");
	assert_non_null(f);
	assert_int_equal(f->first_line, 1);
	assert_int_equal(f->count, 1);
	assert_int_equal(r.lines, 1);
	explain_result_free(&r);
	/* only the straddling one: found too */
	memset(buf, 'x', cap);
	memcpy(buf + (1u << 20) - 25, err, strlen(err));
	scan_both(buf, cap, &r);
	assert_non_null(find(&r, "device-side-assert"));
	explain_result_free(&r);
	free(buf);
}

static void test_error_glued_to_a_tqdm_bar(void **state)
{
	(void)state;
	/* tqdm writing to a file: one line of 20000 CR-separated updates (1.3 MB),
	 * the traceback's last line glued to the last update, then more lines */
	size_t cap = 2u << 20, len = 0;
	char *buf = malloc(cap);
	len += (size_t)sprintf(buf, "loading\nready\n");
	for (int i = 0; i < 20000; i++)
		len += (size_t)sprintf(buf + len, "\rEpoch 1:  %2d%%|#####     | %d/40000 [01:%02d<56:09,  2.12s/it, loss=1.488]",
				       i / 400, i, i % 60);
	len += (size_t)sprintf(buf + len, "RuntimeError: CUDA error: device-side assert triggered\n"
				       "Epoch 1:  50%%|#####     | 20000/40000\rRuntimeError: CUDA error: device-side assert triggered\r\n"
				       "done\n");
	struct explain_result r;
	scan_both(buf, len, &r);
	const struct explain_finding *f = find(&r, "device-side-assert");
	assert_non_null(f);
	assert_int_equal(f->first_line, 3);
	assert_int_equal(f->count, 2); /* lines 3 and 4 */
	assert_int_equal(r.lines, 5);
	/* the line shown is the piece that failed, not 1.3 MB of progress */
	assert_true(strncmp(f->line, "Epoch 1:  49%", 13) == 0);
	explain_result_free(&r);
	free(buf);
}

static const struct explain_value *value(const struct explain_finding *f, const char *name)
{
	for (size_t i = 0; i < f->nvalues; i++)
		if (strcmp(f->values[i].name, name) == 0)
			return &f->values[i];
	return NULL;
}

/* a signature directory holding one file with `json`; loads it into *out */
static int load_sigs(const char *json, struct explain_db **out, char *dir, char *err, size_t errlen)
{
	strcpy(dir, "/tmp/gpuctl-sigs-XXXXXX");
	assert_non_null(mkdtemp(dir));
	char p[128];
	snprintf(p, sizeof p, "%s/a.json", dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(json, f);
	fclose(f);
	int rc = explain_db_load(out, dir, err, errlen);
	unlink(p);
	rmdir(dir);
	return rc;
}

static void test_notes_unless_and_types(void **state)
{
	(void)state;
	const char *sigs =
		"{\"signatures\": ["
		" {\"id\": \"gpu-named\", \"note\": true, \"trigger\": \"The GPU \","
		"  \"regex\": \"The GPU ([0-9a-f:.]+)\", \"values\": {\"pci\": [1, \"str\"]}},"
		" {\"id\": \"limit\", \"note\": true, \"trigger\": \"Limit:\", \"regex\": \"Limit: +([0-9]+)\","
		"  \"values\": {\"limit_mib\": [1, \"bytes\"]}},"
		" {\"id\": \"fell\", \"title\": \"t\", \"trigger\": \"fell off\", \"context\": {\"pci\": 2}},"
		" {\"id\": \"boom\", \"title\": \"t\", \"trigger\": \"boom\", \"unless\": \"harmless boom\","
		"  \"context\": {\"limit_mib\": 5}},"
		" {\"id\": \"old\", \"title\": \"t\", \"trigger\": \"too old\","
		"  \"regex\": \"found version ([0-9]+)\", \"cause\": \"up to {driver_cuda} ({found_version}), {nope}\","
		"  \"values\": {\"found_version\": [1, \"int\"], \"driver_cuda\": [1, \"cudaver\"]}}"
		"]}";
	struct explain_db *d;
	char dir[64], err[512];
	assert_int_equal(load_sigs(sigs, &d, dir, err, sizeof err), GC_OK);
	const char *log = "The GPU 0000:3b:00.0 is named\n"   /* 1: a note */
			  "x\n"
			  "it fell off\n"                    /* 3: takes the note of line 1 */
			  "a harmless boom\n"                /* 4: not a match */
			  "Limit:      10737418240\n"        /* 5 */
			  "then boom\n"                      /* 6: boom, with limit_mib */
			  "driver too old (found version 11040)\n";
	struct explain_result r;
	explain_scan_buf(d, log, strlen(log), &r);
	assert_int_equal(r.n, 3);
	const struct explain_finding *f = find(&r, "fell");
	assert_non_null(f);
	assert_non_null(value(f, "pci"));
	assert_string_equal(value(f, "pci")->str, "0000:3b:00.0");
	assert_null(find(&r, "gpu-named")); /* a note is no finding */
	f = find(&r, "boom");
	assert_non_null(f);
	assert_int_equal(f->first_line, 6);
	assert_int_equal(f->count, 1);
	assert_true(value(f, "limit_mib") && value(f, "limit_mib")->num == 10240.0);
	f = find(&r, "old");
	assert_non_null(f);
	assert_string_equal(value(f, "driver_cuda")->str, "11.4");
	assert_true(value(f, "found_version")->num == 11040.0);
	assert_string_equal(f->cause, "up to 11.4 (11040), unknown");
	explain_result_free(&r);
	/* a note too far back is not taken */
	log = "The GPU 0000:3b:00.0 is named\nx\ny\nit fell off\n";
	explain_scan_buf(d, log, strlen(log), &r);
	f = find(&r, "fell");
	assert_non_null(f);
	assert_null(value(f, "pci"));
	explain_result_free(&r);
	explain_db_free(d);

	/* a key the loader does not know (gateway, which it no longer needs); a note without values */
	assert_int_equal(load_sigs("{\"signatures\": [{\"id\": \"x\", \"title\": \"t\", \"trigger\": \"abc\","
				   " \"gateway\": \"xyz\"}]}", &d, dir, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "x: unknown key 'gateway'"));
	assert_int_equal(load_sigs("{\"signatures\": [{\"id\": \"x\", \"note\": true, \"trigger\": \"abc\"}]}",
				   &d, dir, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "note"));
}

static void test_triggers_in_one_pass(void **state)
{
	(void)state;
	/* every trigger in one pass of the scanner: overlapping ones, one inside
	 * another's text, at the very start and end, near misses */
	const char *sigs =
		"{\"signatures\": ["
		" {\"id\": \"a\", \"title\": \"t\", \"trigger\": \"alpha-bravo-charlie\"},"
		" {\"id\": \"b\", \"title\": \"t\", \"trigger\": \"bravo-charlie-delta\"},"
		" {\"id\": \"z\", \"title\": \"t\", \"trigger\": \"zulu zulu zulu\"},"
		" {\"id\": \"x\", \"title\": \"t\", \"trigger\": \"xx-yy-zz-ww\"},"
		" {\"id\": \"q\", \"title\": \"t\", \"trigger\": \"Q!\"}"
		"]}";
	struct explain_db *d;
	char dir[64], err[512];
	assert_int_equal(load_sigs(sigs, &d, dir, err, sizeof err), GC_OK);
	const char *log = "alpha-bravo-charlie-delta\n"     /* 1: a (a line is one finding: the first signature) */
			  "zulu zulu zulu zulu Q!\n"         /* 2: z */
			  "xx-yy-zz-wxx-yy-zz-w alpha-bravo-charli\n" /* 3: near misses */
			  "bravo-charlie-delt bravo-charlie-delta\n"  /* 4: b */
			  "tail xx-yy-zz-ww\n"               /* 5: x */
			  "zulu \x1b[31mzulu\x1b[0m zulu\n"   /* 6: z, its trigger split by escape codes */
			  "\x1b[1mQ\x1b[0m! xx-yy-\x1b[2Kzz-ww\n" /* 7: x (before q in the file), split */
			  "Q! bravo-charlie-delta"; /* 8: b, at the very end */
	assert_true(explain_db_fast(d)); /* libvectorscan is a build dependency: the scanner is there */
	struct explain_result r;
	scan_both_with(d, log, strlen(log), &r);
	assert_int_equal(r.n, 4);
	static const struct { const char *id; unsigned count, first; } want[] = {
		{"a", 1, 1}, {"b", 2, 4}, {"z", 2, 2}, {"x", 2, 5}};
	assert_null(find(&r, "q")); /* on lines that an earlier signature took */
	for (size_t i = 0; i < 4; i++) {
		const struct explain_finding *f = find(&r, want[i].id);
		assert_non_null(f);
		assert_int_equal(f->count, want[i].count);
		assert_int_equal(f->first_line, want[i].first);
	}
	explain_result_free(&r);
	/* every alignment: the window moves in steps, a match may start anywhere */
	for (int pad = 0; pad < 40; pad++) {
		char buf[200];
		int n = snprintf(buf, sizeof buf, "%.*s%s%.*s\n", pad, "zzzz-zzzz-zzzz-zzzz-zzzz-zzzz-zzzz-zzzz-zzzz",
				 pad % 2 ? "zulu zulu zulu" : "bravo-charlie-delta", pad % 7, "charlie");
		explain_scan_buf(d, buf, (size_t)n, &r);
		assert_int_equal(r.n, 1);
		assert_string_equal(r.findings[0].id, pad % 2 ? "z" : "b");
		explain_result_free(&r);
	}
	explain_db_free(d);
}

/* the root cause: not a timeout or a peer gone away that an earlier rank's failure brings about; a hardware Xid first */
static void test_root_cause(void **state)
{
	(void)state;
	static const struct {
		const char *log, *root;
	} cases[] = {
		/* rank 0 times out (the watchdog's line comes first), rank 3 ran out of memory */
		{"[rank0]:[E ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective operation timeout: "
		 "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600051 milliseconds before timing out.\n"
		 "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total "
		 "capacity of 79.10 GiB of which 1.00 GiB is free.\n",
		 "pytorch-oom"},
		/* NCCL's word that the remote peer went away, then that peer's own failure */
		{"host:1:2 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer host-b<51159>\n"
		 "host-b:3:4 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n",
		 "cuda-error-oom"},
		/* the application's illegal address, and the driver's Xid 79 (the GPU fell off the bus) after it */
		{"RuntimeError: CUDA error: an illegal memory access was encountered\n"
		 "NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n",
		 "xid"},
		/* an Xid of the application's (13) is no hardware fault: the first finding stays the root */
		{"RuntimeError: CUDA error: an illegal memory access was encountered\n"
		 "NVRM: Xid (PCI:0000:18:00): 13, pid=1234, name=python, Graphics Exception\n",
		 "illegal-memory-access"},
		/* timeouts only: the first */
		{"[rank1]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 1] Heartbeat monitor timed out! Process will be "
		 "terminated after dumping debug info.\n",
		 "nccl-watchdog-timeout"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct explain_result r;
		scan_both(cases[i].log, strlen(cases[i].log), &r);
		assert_true(r.n >= 1);
		assert_true(r.root < r.n);
		assert_string_equal(r.findings[r.root].id, cases[i].root);
		explain_result_free(&r);
	}
}

/* deep in a line longer than the matcher's window, a trigger that holds another (which ends first) */
static void test_nested_triggers_in_a_long_line(void **state)
{
	(void)state;
	size_t pad = 70000, n = pad + 200;
	char *buf = malloc(n);
	assert_non_null(buf);
	memset(buf, 'x', pad);
	int k = snprintf(buf + pad, n - pad, " Out of memory: Killed process 1817 (python)\nKilled\n");
	struct explain_result r;
	scan_both(buf, pad + (size_t)k, &r);
	const struct explain_finding *f = find(&r, "host-oom");
	assert_non_null(f);
	assert_int_equal(f->first_line, 1);
	assert_int_equal(f->count, 2);
	explain_result_free(&r);
	free(buf);
	/* the input the fuzzer found: the same findings, on the same lines, as without the scanner */
	size_t len = 0;
	char *crash = NULL;
	FILE *in = fopen(GPUCTL_SRC_DATADIR "/../tests/fuzz/corpus/explain/long-line-nested-triggers.log", "rb");
	assert_non_null(in);
	assert_non_null(crash = malloc(1 << 18));
	len = fread(crash, 1, 1 << 18, in);
	fclose(in);
	scan_both(crash, len, &r);
	assert_non_null(find(&r, "host-oom"));
	explain_result_free(&r);
	free(crash);
}

/* one finding per GPU: an Xid code on four GPUs is four findings, an OOM on two GPUs two; the same GPU again counts */
static void test_findings_per_gpu(void **state)
{
	(void)state;
	const char *log =
		"NVRM: Xid (PCI:0000:18:00): 45, pid=11, name=python, Ch 00000008\n"
		"NVRM: Xid (PCI:0000:2a:00): 45, pid=12, name=python, Ch 00000008\n"
		"NVRM: Xid (PCI:0000:3b:00): 45, pid=13, name=python, Ch 00000008\n"
		"NVRM: Xid (PCI:0000:dc:00): 45, pid=14, name=python, Ch 00000008\n"
		"NVRM: Xid (PCI:0000:dc:00): 45, pid=14, name=python, Ch 00000010\n"
		"[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
		"capacity of 79.10 GiB of which 1.00 GiB is free.\n"
		"[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
		"capacity of 79.10 GiB of which 1.00 GiB is free.\n"
		"[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
		"capacity of 79.10 GiB of which 1.00 GiB is free.\n";
	struct explain_result r;
	scan_both(log, strlen(log), &r);
	assert_int_equal(r.n, 6);
	static const char *const pci[] = {"0000:18:00", "0000:2a:00", "0000:3b:00", "0000:dc:00"};
	for (size_t i = 0; i < 4; i++) {
		assert_string_equal(r.findings[i].id, "xid");
		assert_string_equal(value(&r.findings[i], "pci")->str, pci[i]);
		assert_int_equal(r.findings[i].count, i == 3 ? 2 : 1);
	}
	for (size_t i = 4; i < 6; i++) {
		assert_string_equal(r.findings[i].id, "pytorch-oom");
		assert_true(value(&r.findings[i], "gpu")->num == (double)(i - 4));
		assert_int_equal(r.findings[i].count, i == 5 ? 2 : 1);
	}
	explain_result_free(&r);
}

/* an OOM's numbers checked: others' memory inferred without a "Process N has" line; numbers no GPU shows flagged */
static void test_oom_numbers_checked(void **state)
{
	(void)state;
	/* 79.15 GiB, 1.25 free, PyTorch holds 9.80 + 0.40: 67.7 GiB are someone else's */
	const char *log = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
			  "capacity of 79.15 GiB of which 1.25 GiB is free. Of the allocated memory 9.80 GiB is allocated "
			  "by PyTorch, and 409.60 MiB is reserved by PyTorch but unallocated.\n";
	struct explain_result r;
	scan_both(log, strlen(log), &r);
	assert_int_equal(r.n, 1);
	assert_string_equal(value(&r.findings[0], "verdict")->str, "other-process");
	assert_string_equal(value(&r.findings[0], "other_processes")->str, "inferred");
	assert_true(fabs(value(&r.findings[0], "other_processes_mib")->num - 69324.8) < 1);
	assert_null(value(&r.findings[0], "numbers"));
	explain_result_free(&r);
	/* a context's few hundred MiB are not someone else's: the old format, 1.2 GiB beyond PyTorch's reserve */
	log = "RuntimeError: CUDA out of memory. Tried to allocate 50.00 MiB (GPU 0; 15.78 GiB total capacity; 14.21 GiB "
	      "already allocated; 27.19 MiB free; 14.56 GiB reserved in total by PyTorch)\n";
	scan_both(log, strlen(log), &r);
	assert_string_equal(value(&r.findings[0], "verdict")->str, "fragmentation");
	assert_null(value(&r.findings[0], "other_processes"));
	explain_result_free(&r);
	/* 14 GiB allocated on an 8 GiB card */
	log = "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 8.00 GiB total capacity; 13.98 GiB "
	      "already allocated; 0 bytes free; 14.02 GiB reserved in total by PyTorch)\n";
	scan_both(log, strlen(log), &r);
	assert_string_equal(value(&r.findings[0], "numbers")->str, "impossible");
	assert_non_null(strstr(r.findings[0].cause, "cannot all be true (14316 MiB allocated on a GPU of 8192 MiB)"));
	explain_result_free(&r);
}

/* a long line full of escape codes: the escapes mark the windows that hold them, a split trigger is still found */
static void test_escapes_in_a_long_line(void **state)
{
	(void)state;
	size_t reps = 40000, n = reps * 8 + 200;
	char *buf = malloc(n);
	assert_non_null(buf);
	size_t at = 0;
	for (size_t i = 0; i < reps; i++) {
		memcpy(buf + at, "xxx\x1b[0m ", 8);
		at += 8;
	}
	at += (size_t)snprintf(buf + at, n - at, "CUDA error: an illegal \x1b[31mmemory access\x1b[0m was encountered\n");
	struct explain_result r;
	scan_both(buf, at, &r);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.findings[0].id, "illegal-memory-access");
	assert_int_equal(r.findings[0].first_line, 1);
	explain_result_free(&r);
	free(buf);
}

/* "match": the line must match the ERE too */
static void test_match_key(void **state)
{
	(void)state;
	struct explain_db *d;
	char dir[64], err[512];
	assert_int_equal(load_sigs("{\"signatures\": [{\"id\": \"killed\", \"title\": \"t\", \"trigger\": \"Killed\","
				   " \"match\": \"^Killed$\"}]}", &d, dir, err, sizeof err), GC_OK);
	const char *log = "Killed 3 zombie workers\nKilled\n";
	struct explain_result r;
	explain_scan_buf(d, log, strlen(log), &r);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.findings[0].first_line, 2);
	assert_int_equal(r.findings[0].count, 1);
	explain_result_free(&r);
	explain_db_free(d);
	assert_int_equal(load_sigs("{\"signatures\": [{\"id\": \"x\", \"title\": \"t\", \"trigger\": \"a\","
				   " \"match\": \"(\"}]}", &d, dir, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "bad match"));
}

static void test_bad_signature_files(void **state)
{
	(void)state;
	char dir[] = "/tmp/gpuctl-sigs-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char p[128], err[512];
	struct explain_db *bad;
	snprintf(p, sizeof p, "%s/a.json", dir);
	FILE *f = fopen(p, "w");
	fputs("{\"signatures\": [{\"id\": \"x\", \"title\": \"t\", \"trigger\": \"T\", \"regex\": \"(\"}]}", f);
	fclose(f);
	assert_int_equal(explain_db_load(&bad, dir, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "bad regex"));
	f = fopen(p, "w");
	fputs("{\"signatures\": [{\"id\": \"x\", \"title\": \"t\", \"trigger\": \"T\", \"regex\": \"(a)\", "
	      "\"values\": {\"v\": [2, \"int\"]}}]}", f);
	fclose(f);
	assert_int_equal(explain_db_load(&bad, dir, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "group"));
	f = fopen(p, "w");
	fputs("{\"signatures\": [ not json", f);
	fclose(f);
	assert_int_equal(explain_db_load(&bad, dir, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "line 1"));
	unlink(p);
	assert_int_equal(explain_db_load(&bad, dir, err, sizeof err), GC_ENOTFOUND);
	rmdir(dir);
	assert_int_equal(explain_db_load(&bad, "/nonexistent-sigs", err, sizeof err), GC_EIO);
}

/* where a line came from: the rank tags and times of the launchers and loggers, behind any prefix */
static void test_origin(void **state)
{
	(void)state;
	static const struct {
		const char *line;
		int rank;
		enum explain_time_kind kind;
		double time; /* seconds on its kind's clock; ignored for NONE */
	} t[] = {
		{"[rank3]: RuntimeError: CUDA error: device-side assert triggered", 3, EXPLAIN_TIME_NONE, 0},
		{"[rank2]:[E424 01:17:25.031978332 ProcessGroupNCCL.cpp:1515] [PG 0 Rank 2] Watchdog", 2, EXPLAIN_TIME_GLOG,
		 (3 * 31 + 23) * 86400.0 + 1 * 3600 + 17 * 60 + 25.031978332},
		{"[default5]:torch.OutOfMemoryError: CUDA out of memory.", 5, EXPLAIN_TIME_NONE, 0},
		{"12: RuntimeError: NCCL error", 12, EXPLAIN_TIME_NONE, 0},
		{"[1,6]<stderr>:RuntimeError: CUDA error", 6, EXPLAIN_TIME_NONE, 0},
		{"2024-09-02T14:03:16.25Z stderr F [rank5]: RuntimeError: CUDA error", 5, EXPLAIN_TIME_CIVIL,
		 1725285796.25},
		{"2024-09-02T16:03:16+02:00 [rank5]: x", 5, EXPLAIN_TIME_CIVIL, 1725285796},
		{"[2024-06-14 11:02:49,301] [INFO] [train.py:61:main] rank=0", -1, EXPLAIN_TIME_CIVIL, 1718362969.301},
		{"2022-10-25 21:52:08.138224: W external/org_tensorflow/tensorflow/tsl/framework/bfc_allocator.cc", -1,
		 EXPLAIN_TIME_CIVIL, 1666734728.138224},
		{"May  1 01:17:25 gpu-node-1 python[4242]: [rank7]: RuntimeError", 7, EXPLAIN_TIME_SYSLOG,
		 (4 * 31 + 0) * 86400.0 + 1 * 3600 + 17 * 60 + 25},
		{"Sep 12 10:00:01 node kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1", -1, EXPLAIN_TIME_SYSLOG,
		 (8 * 31 + 11) * 86400.0 + 10 * 3600 + 1},
		{"[74785.660366] NVRM: Xid (PCI:0000:3b:00): 79", -1, EXPLAIN_TIME_BOOT, 74785.660366},
		{"[Wed May  1 01:17:25 2024] NVRM: Xid", -1, EXPLAIN_TIME_CIVIL, 1714526245},
		{"worker-1: [rank9]: torch.OutOfMemoryError", 9, EXPLAIN_TIME_NONE, 0},
		{"[E ProcessGroupNCCL.cpp:737] [Rank 3] Watchdog caught collective operation timeout", 3, EXPLAIN_TIME_NONE, 0},
		{"RuntimeError: CUDA error: an illegal memory access was encountered", -1, EXPLAIN_TIME_NONE, 0},
		/* not tags: a clock without a date, a bracket that holds more than a time, a rank in a word */
		{"12:30 lunch", -1, EXPLAIN_TIME_NONE, 0},
		{"[2024-06-14 11:02:49 and more] x", -1, EXPLAIN_TIME_NONE, 0},
		{"see the [rankings]: list", -1, EXPLAIN_TIME_NONE, 0},
		{"FrankRank 4] no", -1, EXPLAIN_TIME_NONE, 0},
		{"", -1, EXPLAIN_TIME_NONE, 0},
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct explain_origin o;
		explain_origin(t[i].line, &o);
		if (o.rank != t[i].rank || o.time_kind != t[i].kind ||
		    (t[i].kind != EXPLAIN_TIME_NONE && fabs(o.time - t[i].time) > 1e-3))
			fail_msg("'%s': rank %d, time kind %d, time %.6f; expected %d, %d, %.6f", t[i].line, o.rank,
				 (int)o.time_kind, o.time, t[i].rank, (int)t[i].kind, t[i].time);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_line),
		cmocka_unit_test(test_old_oom_format),
		cmocka_unit_test(test_block_boundaries_and_line_numbers),
		cmocka_unit_test(test_error_after_a_long_line),
		cmocka_unit_test(test_error_across_read_buffers_in_one_line),
		cmocka_unit_test(test_error_glued_to_a_tqdm_bar),
		cmocka_unit_test(test_notes_unless_and_types),
		cmocka_unit_test(test_triggers_in_one_pass),
		cmocka_unit_test(test_root_cause),
		cmocka_unit_test(test_findings_per_gpu),
		cmocka_unit_test(test_oom_numbers_checked),
		cmocka_unit_test(test_nested_triggers_in_a_long_line),
		cmocka_unit_test(test_escapes_in_a_long_line),
		cmocka_unit_test(test_match_key),
		cmocka_unit_test(test_bad_signature_files),
		cmocka_unit_test(test_origin),
	};
	return cmocka_run_group_tests(tests, load, unload);
}
