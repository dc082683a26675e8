/*
 * test-ckpt.c — lib/jobs/ckpt.c: commit, latest, list and prune, and what they
 * refuse (entries outside DIR, names that are ours, a real file at latest).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/gpu.h"
#include "jobs/ckpt.h"
#include "tmpdir.h"

static char dir[64];
static char err[512];

static int setup(void **state)
{
	(void)state;
	return tmpdir_make(dir, sizeof dir, "ckpt");
}

static int teardown(void **state)
{
	(void)state;
	return tmpdir_remove(dir);
}

static void make(const char *name, bool as_dir)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	if (as_dir) {
		assert_int_equal(mkdir(p, 0755), 0);
		strncat(p, "/weights", sizeof p - strlen(p) - 1);
	}
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(name, f);
	fclose(f);
}

static void commit(const char *name)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	if (ckpt_commit(dir, p, err, sizeof err) != GC_OK)
		fail_msg("commit %s: %s", name, err);
}

/* a pid that is gone: a child that has exited and been reaped */
static pid_t dead_pid(void)
{
	pid_t p = fork();
	assert_true(p >= 0);
	if (p == 0)
		_exit(0);
	assert_int_equal(waitpid(p, NULL, 0), p);
	return p;
}

static bool exists(const char *rel)
{
	char p[256];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s", dir, rel);
	return lstat(p, &st) == 0;
}

/* a commit's temporary marker (k = 0) or latest link (k = 1) of pid */
static void temp_name(char *buf, size_t len, int k, pid_t pid)
{
	if (k == 0)
		snprintf(buf, len, ".gpuctl/.step-1.done.%d", (int)pid);
	else
		snprintf(buf, len, ".latest.%d", (int)pid);
}

/* a commit killed mid-way leaves temporary files: the next commit removes those of dead pids
 * (issue 17, low); a live committer's and other names stay */
static void test_stale_temps(void **state)
{
	(void)state;
	make("step-1", true);
	commit("step-1");
	char dead[64], live[64], path[256];
	pid_t d = dead_pid();
	for (int k = 0; k < 2; k++) {
		temp_name(dead, sizeof dead, k, d);
		temp_name(live, sizeof live, k, getppid());
		const char *both[] = {dead, live};
		for (int w = 0; w < 2; w++) {
			snprintf(path, sizeof path, "%s/%s", dir, both[w]);
			FILE *f = fopen(path, "w");
			assert_non_null(f);
			fclose(f);
		}
	}
	make(".gpuctl/.keep.done.x", false);
	make("step-2", true);
	commit("step-2");
	for (int k = 0; k < 2; k++) {
		temp_name(dead, sizeof dead, k, d);
		temp_name(live, sizeof live, k, getppid());
		assert_false(exists(dead));
		assert_true(exists(live));
	}
	assert_true(exists(".gpuctl/.keep.done.x"));
}

static void test_commit_and_latest(void **state)
{
	(void)state;
	char out[512], link[256];
	assert_int_equal(ckpt_latest(dir, out, sizeof out, err, sizeof err), GC_ENOTFOUND);
	make("step-1", true);
	make("step-2.pt", false);
	commit("step-1");
	ssize_t n = readlink(strcat(strcpy(out, dir), "/latest"), link, sizeof link - 1);
	assert_true(n > 0);
	link[n] = '\0';
	assert_string_equal(link, "step-1");
	commit("step-2.pt");
	assert_int_equal(ckpt_latest(dir, out, sizeof out, err, sizeof err), GC_OK);
	assert_non_null(strstr(out, "/step-2.pt"));
	/* an uncommitted newer entry does not count */
	make("step-3", true);
	assert_int_equal(ckpt_latest(dir, out, sizeof out, err, sizeof err), GC_OK);
	assert_non_null(strstr(out, "/step-2.pt"));
	struct ckpt_entry *v;
	size_t cnt;
	assert_int_equal(ckpt_list(dir, &v, &cnt, err, sizeof err), GC_OK);
	assert_int_equal(cnt, 3);
	assert_string_equal(v[0].name, "step-2.pt");
	assert_true(v[0].complete);
	assert_false(v[0].is_dir);
	assert_string_equal(v[2].name, "step-3");
	assert_false(v[2].complete);
	free(v);
}

static void test_refusals(void **state)
{
	(void)state;
	make("ok", true);
	assert_int_equal(ckpt_commit(dir, "/etc/passwd", err, sizeof err), GC_EINVAL);
	/* a bare name is taken inside DIR */
	assert_int_equal(ckpt_commit(dir, "ok", err, sizeof err), GC_OK);
	assert_int_equal(ckpt_commit(dir, "missing", err, sizeof err), GC_ENOTFOUND);
	char p[256];
	snprintf(p, sizeof p, "%s/missing", dir);
	assert_int_equal(ckpt_commit(dir, p, err, sizeof err), GC_ENOTFOUND);
	snprintf(p, sizeof p, "%s/.hidden", dir);
	assert_int_equal(ckpt_commit(dir, p, err, sizeof err), GC_EINVAL);
	snprintf(p, sizeof p, "%s/latest", dir);
	assert_int_equal(ckpt_commit(dir, p, err, sizeof err), GC_EINVAL);
	/* a real directory at latest is the user's: not replaced */
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/ok", dir);
	assert_int_equal(ckpt_commit(dir, p, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "not a symlink"));
	/* a symlink is not a checkpoint */
	snprintf(p, sizeof p, "%s/link", dir);
	assert_int_equal(symlink("/etc", p), 0);
	assert_int_equal(ckpt_commit(dir, p, err, sizeof err), GC_EINVAL);
	assert_int_equal(ckpt_commit("/nonexistent-dir", "x", err, sizeof err), GC_EIO);
}

static void test_prune(void **state)
{
	(void)state;
	char names[5][16];
	for (int i = 0; i < 5; i++) {
		snprintf(names[i], sizeof names[i], "s%d", i);
		make(names[i], true);
		commit(names[i]);
	}
	make("in-progress", true);
	/* a symlink out of DIR must never be followed by prune */
	char p[256];
	snprintf(p, sizeof p, "%s/s0/escape", dir);
	assert_int_equal(symlink("/etc", p), 0);
	size_t removed = 99;
	assert_int_equal(ckpt_prune(dir, 0, &removed, err, sizeof err), GC_EINVAL);
	assert_int_equal(ckpt_prune(dir, 2, &removed, err, sizeof err), GC_OK);
	assert_int_equal(removed, 3);
	assert_int_equal(access("/etc/passwd", F_OK), 0);
	struct ckpt_entry *v;
	size_t cnt;
	assert_int_equal(ckpt_list(dir, &v, &cnt, err, sizeof err), GC_OK);
	assert_int_equal(cnt, 3);
	assert_string_equal(v[0].name, "s4");
	assert_string_equal(v[1].name, "s3");
	assert_string_equal(v[2].name, "in-progress");
	free(v);
	assert_int_equal(ckpt_prune(dir, 1, &removed, err, sizeof err), GC_OK);
	assert_int_equal(removed, 1);
	char out[512];
	assert_int_equal(ckpt_latest(dir, out, sizeof out, err, sizeof err), GC_OK);
	assert_non_null(strstr(out, "/s4"));
}

/* what a prune killed half-way leaves (its renamed-away entry, the marker) goes with the next prune */
static void test_prune_after_killed_prune(void **state)
{
	(void)state;
	make("s0", true);
	commit("s0");
	make("s1", false);
	commit("s1");
	char from[256], to[256];
	snprintf(from, sizeof from, "%s/s0", dir);
	snprintf(to, sizeof to, "%s/.gpuctl-pruned.s0.4242", dir);
	assert_int_equal(rename(from, to), 0); /* killed after the rename, before the marker went */
	struct ckpt_entry *v;
	size_t cnt;
	assert_int_equal(ckpt_list(dir, &v, &cnt, err, sizeof err), GC_OK);
	assert_int_equal(cnt, 1); /* neither complete nor uncommitted: gone from the listing */
	free(v);
	size_t removed = 99;
	assert_int_equal(ckpt_prune(dir, 1, &removed, err, sizeof err), GC_OK);
	assert_int_equal(removed, 0);
	assert_int_equal(access(to, F_OK), -1);
	snprintf(to, sizeof to, "%s/.gpuctl/s0.done", dir);
	assert_int_equal(access(to, F_OK), -1);
	snprintf(to, sizeof to, "%s/.gpuctl/s1.done", dir);
	assert_int_equal(access(to, F_OK), 0);
	/* and a prune leaves nothing of what it deleted: no entry, no trash, no marker */
	make("s2", false);
	commit("s2");
	assert_int_equal(ckpt_prune(dir, 1, &removed, err, sizeof err), GC_OK);
	assert_int_equal(removed, 1);
	int n = 0;
	DIR *d = opendir(dir);
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	assert_int_equal(n, 3); /* s2, latest, .gpuctl */
	assert_int_equal(access(to, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_commit_and_latest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prune, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prune_after_killed_prune, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_temps, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
