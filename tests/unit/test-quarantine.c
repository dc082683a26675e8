/*
 * test-quarantine.c — quarantine marks (lib/jobs/quarantine.c): set, read,
 * list, clear; a mark of another user, a writable one, a link or a FIFO is
 * not believed; a name squatted by another user does not stop root; only
 * the owner of the state directory (or root) manages marks; and what select
 * and job_acquire make of a marked GPU.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/gpu.h"
#include "jobs/job.h"
#include "jobs/lease.h"
#include "jobs/quarantine.h"
#include "jobs/select.h"
#include "tmpdir.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	return tmpdir_make(dir, sizeof dir, "quarantine");
}

static int teardown(void **state)
{
	(void)state;
	return tmpdir_remove(dir);
}

static struct lease_dir *open_dir(void)
{
	struct lease_dir *d = NULL;
	char err[256] = "";
	if (lease_dir_open(&d, dir, true, err, sizeof err) != GC_OK)
		fail_msg("lease_dir_open: %s", err);
	return d;
}

static const char *A = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
static const char *B = "GPU-bbbbbbbb-0000-0000-0000-000000000000";

static void mark(struct lease_dir *d, const char *uuid, const char *reason, uint64_t xid, const char *detail)
{
	struct quarantine_info q = {.gpu = 3, .xid = xid};
	snprintf(q.uuid, sizeof q.uuid, "%s", uuid);
	snprintf(q.reason, sizeof q.reason, "%s", reason);
	snprintf(q.detail, sizeof q.detail, "%s", detail);
	char err[256] = "";
	if (quarantine_set(d, &q, err, sizeof err) != GC_OK)
		fail_msg("quarantine_set: %s", err);
}

static void test_set_get_list_clear(void **state)
{
	(void)state;
	struct lease_dir *d = open_dir();
	struct quarantine_info q;
	assert_int_equal(quarantine_get(d, A, &q), 0);
	mark(d, A, "xid", 79, "Xid 79 (fell off the bus)\x1b[31m");
	assert_int_equal(quarantine_get(d, A, &q), 1);
	assert_string_equal(q.uuid, A);
	assert_string_equal(q.reason, "xid");
	assert_int_equal(q.xid, 79);
	assert_int_equal(q.gpu, 3);
	assert_int_equal(q.uid, geteuid());
	/* words for a terminal: no escape sequence survives */
	assert_null(strchr(q.detail, '\x1b'));
	assert_non_null(strstr(q.detail, "Xid 79"));
	const char *both[3] = {A, NULL, B};
	bool marked[3];
	assert_int_equal(quarantine_marked(d, both, 3, marked), GC_OK);
	assert_true(marked[0]);
	assert_false(marked[1]);
	assert_false(marked[2]);
	mark(d, B, "admin", 0, "fan noise");
	struct quarantine_info *v = NULL;
	size_t n = 0;
	assert_int_equal(quarantine_list(d, &v, &n), GC_OK);
	assert_int_equal(n, 2);
	free(v);
	char err[256];
	assert_int_equal(quarantine_clear(d, A, err, sizeof err), 1);
	assert_int_equal(quarantine_clear(d, A, err, sizeof err), 0);
	assert_int_equal(quarantine_get(d, A, NULL), 0);
	assert_int_equal(quarantine_get(d, B, NULL), 1);
	/* a name that is no UUID is never a mark */
	assert_int_equal(quarantine_get(d, "../etc/passwd", NULL), 0);
	assert_int_equal(quarantine_get(d, "", NULL), 0);
	lease_dir_close(d);
}

/* a file under a mark's name that someone else could have written is no mark */
static void test_untrusted_marks_ignored(void **state)
{
	(void)state;
	struct lease_dir *d = open_dir();
	char path[PATH_MAX];
	/* group-writable */
	snprintf(path, sizeof path, "%s/quarantine.%s", dir, A);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0664);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{}", 2), 2);
	assert_int_equal(fchmod(fd, 0664), 0);
	close(fd);
	assert_int_equal(quarantine_get(d, A, NULL), 0);
	unlink(path);
	/* a symbolic link to a real mark */
	mark(d, B, "admin", 0, "x");
	char target[PATH_MAX];
	snprintf(target, sizeof target, "%s/quarantine.%s", dir, B);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(quarantine_get(d, A, NULL), 0);
	unlink(path);
	/* a FIFO: not waited on, not a mark */
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(quarantine_get(d, A, NULL), 0);
	unlink(path);
	/* another user's (root can hand a file to nobody) */
	if (geteuid() == 0) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "{}", 2), 2);
		assert_int_equal(fchown(fd, 65534, 65534), 0);
		close(fd);
		assert_int_equal(quarantine_get(d, A, NULL), 0);
		/* and a clear of it removes nothing: it is not a mark */
		char err[256];
		assert_int_equal(quarantine_clear(d, A, err, sizeof err), 0);
		assert_int_equal(access(path, F_OK), 0);
		/* root marks the GPU all the same: the squatter is moved aside */
		mark(d, A, "xid", 48, "Xid 48");
		assert_int_equal(quarantine_get(d, A, NULL), 1);
		unlink(path);
		/* a directory squatting the name (a rename cannot replace it) */
		assert_int_equal(mkdir(path, 0755), 0);
		char inner[PATH_MAX + 8];
		snprintf(inner, sizeof inner, "%s/x", path);
		assert_int_equal(mkdir(inner, 0755), 0);
		assert_int_equal(chown(path, 65534, 65534), 0);
		mark(d, A, "xid", 48, "Xid 48");
		assert_int_equal(quarantine_get(d, A, NULL), 1);
	}
	lease_dir_close(d);
}

/* in a state directory of root's, another user may neither set nor clear a mark */
static void test_only_the_owner_manages(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	struct lease_dir *d = open_dir();
	mark(d, A, "xid", 79, "Xid 79");
	assert_int_equal(chmod(dir, 01777), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
			_exit(10);
		struct lease_dir *od = NULL;
		char err[256];
		if (lease_dir_open(&od, dir, false, err, sizeof err) != GC_OK)
			_exit(11);
		/* root's mark holds for everyone */
		if (quarantine_get(od, A, NULL) != 1)
			_exit(12);
		if (quarantine_may_manage(od, err, sizeof err) || !strstr(err, "only root"))
			_exit(13);
		if (quarantine_clear(od, A, err, sizeof err) != GC_ENOPERM)
			_exit(14);
		struct quarantine_info q = {.gpu = -1};
		snprintf(q.uuid, sizeof q.uuid, "%s", B);
		if (quarantine_set(od, &q, err, sizeof err) != GC_ENOPERM)
			_exit(15);
		/* a file of its own under a mark's name fools nobody, itself included */
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/quarantine.%s", dir, B);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0)
			_exit(16);
		close(fd);
		lease_dir_close(od);
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(quarantine_get(d, A, NULL), 1);
	assert_int_equal(quarantine_get(d, B, NULL), 0);
	lease_dir_close(d);
}

/* select: a quarantined GPU is not eligible, and says why; it could still fit later */
static void test_select_quarantined(void **state)
{
	(void)state;
	gc_snapshot s;
	memset(&s, 0, sizeof s);
	gc_gpu g[2];
	memset(g, 0, sizeof g);
	for (int i = 0; i < 2; i++) {
		g[i].index = (unsigned)i;
		g[i].st[GC_V_PROCS] = GC_ST_OK;
		g[i].st[GC_V_MEM_TOTAL] = g[i].st[GC_V_MEM_FREE] = GC_ST_OK;
		g[i].mem_total = g[i].mem_free = 80ull << 30;
	}
	s.gpus = g;
	s.ngpus = 2;
	bool q[2] = {false, true};
	struct select_request r = {.n = 1, .max_util = -1, .quarantined = q};
	enum select_why why[2];
	assert_int_equal(select_eligible(&s, &r, NULL, why), 1);
	assert_int_equal(why[0], SELECT_OK);
	assert_int_equal(why[1], SELECT_QUARANTINED);
	assert_string_equal(select_why_text(SELECT_QUARANTINED), "quarantined");
	assert_int_equal(select_could(&s, 1, &r), SELECT_OK);
	r.n = 2;
	unsigned out[2];
	assert_int_equal(select_pick(&s, &r, NULL, out), GC_ENOTNOW);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_set_get_list_clear, setup, teardown),
		cmocka_unit_test_setup_teardown(test_untrusted_marks_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_only_the_owner_manages, setup, teardown),
		cmocka_unit_test(test_select_quarantined),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
