/*
 * test-lease.c — lib/jobs/lease.c: a lease is all-or-nothing, dies with its
 * holder (even SIGKILL), passes to an exec'd job, wakes a waiter through
 * inotify, and the queue is first come first served with dead waiters
 * skipped. Unsafe directories and planted symlinks are refused. What
 * another user could do to the files (a read lock, a claim-named file others
 * may write, a ticket that never takes its turn) does not hold or fool
 * anyone; tests/integration/seams.py does the rest with two real users.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "device/gpu.h"
#include "jobs/lease.h"
#include "tmpdir.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	return tmpdir_make(dir, sizeof dir, "lease");
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
	int rc = lease_dir_open(&d, dir, true, err, sizeof err);
	if (rc != GC_OK)
		fail_msg("lease_dir_open: %s", err);
	return d;
}

static struct lease_info me(const char *name)
{
	struct lease_info i;
	memset(&i, 0, sizeof i);
	i.pid = i.supervisor = getpid();
	i.uid = getuid();
	snprintf(i.user, sizeof i.user, "tester");
	i.since = time(NULL);
	snprintf(i.name, sizeof i.name, "%s", name);
	snprintf(i.command, sizeof i.command, "train.py --lr 3e-4");
	return i;
}

static const char *A = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
static const char *B = "GPU-bbbbbbbb-0000-0000-0000-000000000000";

static void test_all_or_nothing(void **state)
{
	(void)state;
	struct lease_dir *d = open_dir();
	struct lease *la = NULL, *lab = NULL;
	size_t busy = 99;
	char err[256];
	struct lease_info info = me("job-a");
	assert_int_equal(lease_try(d, &A, 1, &info, &la, &busy, err, sizeof err), GC_OK);
	struct lease_info seen;
	assert_int_equal(lease_peek(d, A, &seen), 1);
	assert_string_equal(seen.name, "job-a");
	assert_string_equal(seen.command, "train.py --lr 3e-4");
	assert_int_equal(seen.pid, getpid());
	/* {B, A}: A is held, so B must not stay locked either */
	const char *ba[] = {B, A};
	assert_int_equal(lease_try(d, ba, 2, &info, &lab, &busy, err, sizeof err), GC_EBUSY);
	assert_int_equal(busy, 1);
	assert_null(lab);
	assert_int_equal(lease_peek(d, B, NULL), 0);
	lease_release(la);
	assert_int_equal(lease_peek(d, A, NULL), 0);
	assert_int_equal(lease_try(d, ba, 2, &info, &lab, &busy, err, sizeof err), GC_OK);
	struct lease_entry *list = NULL;
	size_t n = 0;
	assert_int_equal(lease_list(d, &list, &n), GC_OK);
	assert_int_equal(n, 2);
	free(list);
	lease_release(lab);
	lease_dir_close(d);
}

static void test_sigkill_frees(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct lease_dir *d = open_dir();
		struct lease *l = NULL;
		size_t busy;
		char err[256];
		struct lease_info info = me("doomed");
		if (lease_try(d, &A, 1, &info, &l, &busy, err, sizeof err) != GC_OK)
			_exit(1);
		(void)write(p[1], "x", 1);
		pause();
		_exit(0);
	}
	char c;
	assert_int_equal(read(p[0], &c, 1), 1);
	struct lease_dir *d = open_dir();
	assert_int_equal(lease_peek(d, A, NULL), 1);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	assert_int_equal(lease_peek(d, A, NULL), 0);
	lease_dir_close(d);
	close(p[0]);
	close(p[1]);
}

static void test_inherited_by_job(void **state)
{
	(void)state;
	struct lease_dir *d = open_dir();
	struct lease *l = NULL;
	size_t busy;
	char err[256];
	struct lease_info info = me("job");
	assert_int_equal(lease_try(d, &A, 1, &info, &l, &busy, err, sizeof err), GC_OK);
	assert_int_equal(lease_inherit(l), GC_OK);
	pid_t job = fork();
	assert_true(job >= 0);
	if (job == 0) {
		execlp("sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	lease_set_pid(l, job, 0);
	/* the supervisor lets go; the job still runs on the GPU, so it stays leased */
	lease_release(l);
	struct lease_info seen;
	assert_int_equal(lease_peek(d, A, &seen), 1);
	assert_int_equal(seen.pid, job);
	kill(job, SIGKILL);
	waitpid(job, NULL, 0);
	assert_int_equal(lease_peek(d, A, NULL), 0);
	lease_dir_close(d);
}

/* files of the lease directory written long ago (their times set back an hour) */
static void age_files(struct lease_dir *d)
{
	DIR *files = opendir(lease_dir_path(d));
	assert_non_null(files);
	struct timespec old[2];
	clock_gettime(CLOCK_REALTIME, &old[0]);
	old[0].tv_sec -= 3600;
	old[1] = old[0];
	for (struct dirent *e; (e = readdir(files));)
		if (e->d_name[0] != '.')
			assert_int_equal(utimensat(dirfd(files), e->d_name, old, 0), 0);
	closedir(files);
}

/* lease_list keeps the records it read: one rewritten since (lease_set_pid, a job started
 * under the lease) is read again, and what it says is shown, not what it said */
static void test_list_reads_rewritten_record(void **state)
{
	(void)state;
	struct lease_dir *d = open_dir();
	struct lease *l = NULL;
	size_t busy;
	char err[256];
	struct lease_info info = me("job");
	assert_int_equal(lease_try(d, &A, 1, &info, &l, &busy, err, sizeof err), GC_OK);
	age_files(d); /* as if written long ago: its record is kept */
	struct lease_entry *list = NULL;
	size_t n = 0;
	for (int k = 0; k < 2; k++) { /* read, then kept */
		assert_int_equal(lease_list(d, &list, &n), GC_OK);
		assert_int_equal(n, 1);
		assert_int_equal(list[0].info.pid, getpid());
		assert_string_equal(list[0].info.name, "job");
		free(list);
	}
	pid_t job = fork();
	assert_true(job >= 0);
	if (job == 0) {
		execlp("sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	lease_set_pid(l, job, 0);
	assert_int_equal(lease_list(d, &list, &n), GC_OK);
	assert_int_equal(n, 1);
	assert_int_equal(list[0].info.pid, job);
	free(list);
	kill(job, SIGKILL);
	waitpid(job, NULL, 0);
	lease_release(l);
	lease_dir_close(d);
}

/* a command line that is not UTF-8, or is cut inside a character, still leases */
static void test_command_any_bytes(void **state)
{
	(void)state;
	struct lease_dir *d = open_dir();
	struct lease *l = NULL;
	size_t busy;
	char err[256];
	struct lease_info info = me("bytes");
	snprintf(info.command, sizeof info.command, "train.py \xff\xfe caf\xc3\xa9");
	assert_int_equal(lease_try(d, &A, 1, &info, &l, &busy, err, sizeof err), GC_OK);
	struct lease_info seen;
	assert_int_equal(lease_peek(d, A, &seen), 1);
	assert_string_equal(seen.command, "train.py ?? caf??");
	lease_release(l);
	memset(info.command, 0, sizeof info.command);
	snprintf(info.command, sizeof info.command, "x \xe6\xbc\xa2\xe6\xbc"); /* the second character cut */
	assert_int_equal(lease_try(d, &A, 1, &info, &l, &busy, err, sizeof err), GC_OK);
	assert_int_equal(lease_peek(d, A, &seen), 1);
	assert_string_equal(seen.command, "x \xe6\xbc\xa2");
	lease_release(l);
	lease_dir_close(d);
}

static void test_queue_fifo_and_stale(void **state)
{
	(void)state;
	struct lease_dir *d = open_dir();
	char err[256];
	struct lease_info info = me("q");
	/* a waiter that dies without leaving */
	pid_t dead = fork();
	assert_true(dead >= 0);
	if (dead == 0) {
		struct lease_dir *cd = open_dir();
		struct lease_ticket *t;
		_exit(lease_queue_join(cd, &info, &t, err, sizeof err) == GC_OK ? 0 : 1);
	}
	int st;
	waitpid(dead, &st, 0);
	assert_int_equal(WEXITSTATUS(st), 0);
	struct lease_ticket *t1, *t2;
	assert_int_equal(lease_queue_join(d, &info, &t1, err, sizeof err), GC_OK);
	assert_int_equal(lease_queue_join(d, &info, &t2, err, sizeof err), GC_OK);
	assert_true(lease_ticket_number(t1) <= lease_ticket_number(t2)); /* one clock tick: equal */
	struct lease_waiter *w;
	size_t n;
	assert_int_equal(lease_queue_list(d, &w, &n), GC_OK);
	assert_int_equal(n, 2); /* the dead waiter is not listed */
	assert_int_equal(w[0].ticket, lease_ticket_number(t1));
	free(w);
	assert_int_equal(lease_queue_is_head(d, t1, NULL, 0), 1); /* the dead one does not block */
	assert_int_equal(lease_queue_is_head(d, t2, NULL, 0), 0);
	lease_queue_leave(t1);
	assert_int_equal(lease_queue_is_head(d, t2, NULL, 0), 1);
	lease_queue_leave(t2);
	lease_dir_close(d);
}

/* a process of ours holds B for 100 ms and dies holding it; d waits (d must not hold B): 1 when
 * woken by the release, 0 when only the 5 s timeout came; fn runs while B is held */
static int wait_for_release(struct lease_dir *d, void (*fn)(struct lease_dir *d))
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct lease_dir *cd = open_dir();
		struct lease *l;
		size_t busy;
		char err[256];
		struct lease_info info = me("short");
		if (lease_try(cd, &B, 1, &info, &l, &busy, err, sizeof err) != GC_OK)
			_exit(1);
		(void)write(p[1], "x", 1);
		usleep(100000);
		_exit(0); /* dies holding it: the kernel's close wakes the waiter */
	}
	char c;
	assert_int_equal(read(p[0], &c, 1), 1);
	if (fn)
		fn(d);
	int woke = 0;
	while (lease_peek(d, B, NULL) == 1) {
		woke = lease_wait(d, 5000);
		assert_true(woke >= 0);
		if (woke == 0)
			break;
	}
	waitpid(child, NULL, 0);
	close(p[0]);
	close(p[1]);
	return woke;
}

static void in_line_behind_b(struct lease_dir *d)
{
	assert_int_equal(lease_peek(d, B, NULL), 1);
}

static void test_release_wakes_waiter(void **state)
{
	(void)state;
	struct lease_dir *d = open_dir();
	struct lease_ticket *t;
	char err[256];
	struct lease_info info = me("waiter");
	assert_int_equal(lease_queue_join(d, &info, &t, err, sizeof err), GC_OK);
	assert_int_equal(wait_for_release(d, in_line_behind_b), 1); /* woken by the release, not the timeout */
	assert_int_equal(lease_peek(d, B, NULL), 0);
	lease_queue_leave(t);
	lease_dir_close(d);
}

/* a job started (lease_unwatch) and failed: waiting again (a retry), it is woken by a release again */
static void test_unwatched_waiter_wakes_again(void **state)
{
	(void)state;
	struct lease_dir *d = open_dir();
	assert_int_equal(lease_wait(d, 1), 0); /* watching; nothing happened */
	lease_unwatch(d);
	assert_int_equal(wait_for_release(d, NULL), 1);
	lease_dir_close(d);
}

static void test_unsafe_places_refused(void **state)
{
	(void)state;
	char err[256] = "";
	struct lease_dir *d = NULL;
	/* writable by everyone without the sticky bit */
	char open_dir_path[96];
	snprintf(open_dir_path, sizeof open_dir_path, "%s/open", dir);
	assert_int_equal(mkdir(open_dir_path, 0700), 0);
	assert_int_equal(chmod(open_dir_path, 0777), 0);
	assert_int_equal(lease_dir_open(&d, open_dir_path, true, err, sizeof err), GC_EINVAL);
	assert_non_null(strstr(err, "sticky"));
	/* readers never create: a missing directory means nothing is leased */
	char missing[96];
	snprintf(missing, sizeof missing, "%s/not-yet", dir);
	assert_int_equal(lease_dir_open(&d, missing, false, err, sizeof err), GC_ENOTFOUND);
	assert_int_equal(access(missing, F_OK), -1);
	/* a state directory that cannot be created */
	assert_int_equal(lease_dir_open(&d, "/proc/gpuctl-no-such-dir", true, err, sizeof err), GC_EIO);
	assert_non_null(strstr(err, "/proc/gpuctl-no-such-dir"));
	/* a symlink planted where a claim goes is neither followed nor taken for a claim */
	d = open_dir();
	char link[128];
	snprintf(link, sizeof link, "%s/gpu-GPU-cccccccc.0123456789abcdef", dir);
	assert_int_equal(symlink("/etc/passwd", link), 0);
	const char *c = "GPU-cccccccc";
	struct lease *l = NULL;
	size_t busy;
	struct lease_info info = me("x");
	assert_int_equal(lease_peek(d, c, NULL), 0);
	assert_int_equal(lease_try(d, &c, 1, &info, &l, &busy, err, sizeof err), GC_OK);
	assert_int_equal(lease_peek(d, c, NULL), 1);
	lease_release(l);
	assert_int_equal(lease_peek(d, c, NULL), 0);
	/* a UUID cannot name a path */
	const char *evil = "../../etc/passwd";
	assert_int_equal(lease_try(d, &evil, 1, &info, &l, &busy, err, sizeof err), GC_EINVAL);
	assert_int_equal(lease_peek(d, evil, NULL), GC_EINVAL);
	lease_dir_close(d);
}

/* the name of the one visible file whose name starts with prefix, in dir */
static void find_file(const char *prefix, char *out, size_t len)
{
	DIR *dd = opendir(dir);
	assert_non_null(dd);
	out[0] = '\0';
	for (struct dirent *e; (e = readdir(dd));)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			snprintf(out, len, "%s/%s", dir, e->d_name);
	closedir(dd);
	assert_true(out[0] != '\0');
}

static void test_read_lock_neither_holds_nor_blocks(void **state)
{
	(void)state;
	struct lease_dir *d = open_dir();
	struct lease *l = NULL;
	size_t busy;
	char err[256], path[512];
	struct lease_info info = me("r");
	assert_int_equal(lease_try(d, &A, 1, &info, &l, &busy, err, sizeof err), GC_OK);
	find_file("gpu-GPU-aaaaaaaa", path, sizeof path);
	/* a reader that may not write can take a read lock only: on a live claim it fails */
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
	assert_int_equal(fcntl(fd, F_OFD_SETLK, &fl), -1);
	lease_release(l);
	/* once released, it holds a read lock on the old file: the GPU is free all the same */
	(void)fcntl(fd, F_OFD_SETLK, &fl);
	assert_int_equal(lease_peek(d, A, NULL), 0);
	assert_int_equal(lease_try(d, &A, 1, &info, &l, &busy, err, sizeof err), GC_OK);
	lease_release(l);
	close(fd);
	/* a claim-named file others may write to proves nothing, locked or not */
	char fake[160];
	snprintf(fake, sizeof fake, "%s/gpu-%s.00000000000000aa", dir, A);
	fd = open(fake, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0666), 0);
	fl.l_type = F_WRLCK;
	assert_int_equal(fcntl(fd, F_OFD_SETLK, &fl), 0);
	assert_int_equal(lease_peek(d, A, NULL), 0);
	close(fd);
	unlink(fake);
	lease_dir_close(d);
}

/* a process that sleeps until killed: the pid of a waiter asleep (not at work) */
static pid_t sleeper(void)
{
	pid_t p = fork();
	if (p == 0) {
		for (;;)
			pause();
	}
	assert_true(p > 0);
	return p;
}

static void test_idle_ticket_loses_its_place(void **state)
{
	(void)state;
	struct lease_dir *d = open_dir();
	char err[256];
	struct lease_info info = me("q");
	info.want = 1;
	struct lease_info idle = info; /* t1's process sleeps: it does not take its turn */
	idle.pid = idle.supervisor = sleeper();
	struct lease_ticket *t1, *t2;
	assert_int_equal(lease_queue_join(d, &idle, &t1, err, sizeof err), GC_OK);
	assert_int_equal(lease_queue_join(d, &info, &t2, err, sizeof err), GC_OK);
	const char *gpus[2] = {A, B};
	/* both GPUs held: t1 cannot go, so t2 waits for it however long */
	struct lease *l = NULL;
	size_t busy;
	assert_int_equal(lease_try(d, gpus, 2, &info, &l, &busy, err, sizeof err), GC_OK);
	assert_int_equal(lease_queue_is_head(d, t2, gpus, 2), 0);
	usleep((LEASE_IDLE_MS + 300) * 1000);
	assert_int_equal(lease_queue_is_head(d, t2, gpus, 2), 0);
	/* a GPU is free and t1 does not take it: after LEASE_IDLE_MS t2 goes first */
	lease_release(l);
	assert_int_equal(lease_queue_is_head(d, t2, gpus, 2), 0);
	usleep((LEASE_IDLE_MS / 2) * 1000);
	assert_int_equal(lease_queue_is_head(d, t2, gpus, 2), 0);
	usleep((LEASE_IDLE_MS / 2 + 300) * 1000);
	assert_int_equal(lease_queue_is_head(d, t2, gpus, 2), 1);
	/* a waiter that comes now, with GPUs free and t1 in line that long already, asleep: passes it
	 * at once (a release woke it; it has let them be) */
	struct lease_ticket *t3;
	assert_int_equal(lease_queue_join(d, &info, &t3, err, sizeof err), GC_OK);
	lease_queue_leave(t2);
	assert_int_equal(lease_queue_is_head(d, t3, gpus, 2), 1);
	/*
	 * a head at work (runnable; here this very process) keeps its place past LEASE_IDLE_MS, up to
	 * LEASE_ACTIVE_MAX_MS: on a loaded machine a woken waiter may wait that long for a CPU. And
	 * passing t1 took none of our user's other tickets with it: t4 still waits for t3.
	 */
	lease_queue_leave(t1);
	kill(idle.pid, SIGKILL);
	waitpid(idle.pid, NULL, 0);
	struct lease_ticket *t4;
	assert_int_equal(lease_queue_join(d, &info, &t4, err, sizeof err), GC_OK);
	assert_int_equal(lease_queue_is_head(d, t4, gpus, 2), 0);
	usleep((LEASE_IDLE_MS + 300) * 1000);
	assert_int_equal(lease_queue_is_head(d, t4, gpus, 2), 0);
	lease_queue_leave(t3);
	assert_int_equal(lease_queue_is_head(d, t4, gpus, 2), 1);
	lease_queue_leave(t4);
	lease_dir_close(d);
}

/* one user's tickets keep their order: an idle one of ours is passed alone, not with the others of ours */
static void test_own_idle_ticket_passed_alone(void **state)
{
	(void)state;
	struct lease_dir *d = open_dir();
	char err[256];
	struct lease_info info = me("q");
	info.want = 1;
	struct lease_info idle = info;
	idle.pid = idle.supervisor = sleeper();
	struct lease_info later = info; /* a second waiter of ours, asleep too, behind the idle one */
	later.pid = later.supervisor = sleeper();
	const char *gpus[2] = {A, B};
	struct lease *l = NULL;
	size_t busy;
	assert_int_equal(lease_try(d, gpus, 2, &info, &l, &busy, err, sizeof err), GC_OK);
	struct lease_ticket *t1, *t2, *t3;
	assert_int_equal(lease_queue_join(d, &idle, &t1, err, sizeof err), GC_OK);
	usleep(20000); /* distinct ctimes on file systems with a coarse clock */
	assert_int_equal(lease_queue_join(d, &later, &t2, err, sizeof err), GC_OK);
	usleep(20000);
	assert_int_equal(lease_queue_join(d, &info, &t3, err, sizeof err), GC_OK);
	assert_int_equal(lease_queue_is_head(d, t3, gpus, 2), 0);
	lease_release(l);
	assert_int_equal(lease_queue_is_head(d, t3, gpus, 2), 0);
	usleep((LEASE_IDLE_MS + 300) * 1000);
	/* t1 passed up its turn and is passed; t2 became first only now and gets its whole LEASE_IDLE_MS */
	assert_int_equal(lease_queue_is_head(d, t3, gpus, 2), 0);
	usleep((LEASE_IDLE_MS + 300) * 1000);
	assert_int_equal(lease_queue_is_head(d, t3, gpus, 2), 1);
	lease_queue_leave(t1);
	lease_queue_leave(t2);
	lease_queue_leave(t3);
	kill(idle.pid, SIGKILL);
	kill(later.pid, SIGKILL);
	waitpid(idle.pid, NULL, 0);
	waitpid(later.pid, NULL, 0);
	lease_dir_close(d);
}

/*
 * An old ticket that becomes first while we wait, with a GPU free (the one
 * before it took one of two freed at once), has just been woken with us: we
 * wait the whole LEASE_IDLE_MS for it, its age notwithstanding. (We passed it
 * at once, and under load jumped the whole queue of its user, ours included.)
 */
static void test_new_head_is_waited_for(void **state)
{
	(void)state;
	struct lease_dir *d = open_dir();
	char err[256];
	struct lease_info info = me("q");
	info.want = 1;
	const char *gpus[2] = {A, B};
	struct lease *l = NULL;
	size_t busy;
	assert_int_equal(lease_try(d, gpus, 2, &info, &l, &busy, err, sizeof err), GC_OK);
	struct lease_ticket *t1, *t2, *t3;
	assert_int_equal(lease_queue_join(d, &info, &t1, err, sizeof err), GC_OK);
	assert_int_equal(lease_queue_join(d, &info, &t2, err, sizeof err), GC_OK);
	assert_int_equal(lease_queue_join(d, &info, &t3, err, sizeof err), GC_OK);
	assert_int_equal(lease_queue_is_head(d, t3, gpus, 2), 0);
	usleep((LEASE_IDLE_MS + 300) * 1000);
	/* both GPUs free; t1 takes one and leaves the line: t2, old now, is first, the other GPU free */
	lease_release(l);
	assert_int_equal(lease_queue_is_head(d, t3, gpus, 2), 0);
	l = NULL;
	assert_int_equal(lease_try(d, gpus, 1, &info, &l, &busy, err, sizeof err), GC_OK);
	lease_queue_leave(t1);
	assert_int_equal(lease_queue_is_head(d, t3, gpus, 2), 0);
	usleep((LEASE_JOIN_GRACE_MS + 300) * 1000);
	assert_int_equal(lease_queue_is_head(d, t3, gpus, 2), 0);
	/* t2 takes it: t3 is first */
	struct lease *l2 = NULL;
	assert_int_equal(lease_try(d, gpus + 1, 1, &info, &l2, &busy, err, sizeof err), GC_OK);
	lease_queue_leave(t2);
	assert_int_equal(lease_queue_is_head(d, t3, gpus, 2), 1);
	lease_release(l2);
	lease_release(l);
	lease_queue_leave(t3);
	lease_dir_close(d);
}

/*
 * A ticket in line for LEASE_IDLE_MS already, whose process sleeps while GPUs
 * for it are free, is passed at once by a waiter that joins: a release would
 * have woken it. (One whose process is at work keeps its place, up to
 * LEASE_ACTIVE_MAX_MS: test_idle_ticket_loses_its_place.)
 */
static void test_sleeping_old_ticket_passed_at_once(void **state)
{
	(void)state;
	struct lease_dir *d = open_dir();
	char err[256];
	pid_t sleeper = fork();
	assert_true(sleeper >= 0);
	if (sleeper == 0) {
		pause();
		_exit(0);
	}
	struct lease_info info = me("q");
	info.want = 1;
	info.pid = sleeper;
	const char *gpus[2] = {A, B};
	struct lease *l = NULL;
	size_t busy;
	assert_int_equal(lease_try(d, gpus, 2, &info, &l, &busy, err, sizeof err), GC_OK);
	struct lease_ticket *t1, *t2;
	assert_int_equal(lease_queue_join(d, &info, &t1, err, sizeof err), GC_OK);
	usleep((LEASE_IDLE_MS + 300) * 1000);
	lease_release(l);
	info.pid = getpid();
	assert_int_equal(lease_queue_join(d, &info, &t2, err, sizeof err), GC_OK);
	assert_int_equal(lease_queue_is_head(d, t2, gpus, 2), 1);
	kill(sleeper, SIGKILL);
	waitpid(sleeper, NULL, 0);
	lease_queue_leave(t1);
	lease_queue_leave(t2);
	lease_dir_close(d);
}

/* two processes try for one GPU at once, again and again: never both get it */
static void test_race_never_both(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t kids[2];
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		assert_true(kids[k] >= 0);
		if (kids[k] == 0) {
			struct lease_dir *cd = open_dir();
			struct lease_info info = me("race");
			char err[256];
			int got = 0;
			for (int i = 0; i < 300; i++) {
				struct lease *l = NULL;
				size_t busy;
				if (lease_try(cd, &A, 1, &info, &l, &busy, err, sizeof err) == GC_OK) {
					got++;
					/* while we hold it, nobody else may: a second holder would show */
					char c = 'h';
					(void)write(p[1], &c, 1);
					usleep(50);
					c = 'r';
					(void)write(p[1], &c, 1);
					lease_release(l);
				}
			}
			_exit(got > 0 ? 0 : 1);
		}
	}
	close(p[1]);
	int holders = 0, most = 0, took = 0;
	char c;
	while (read(p[0], &c, 1) == 1) {
		holders += c == 'h' ? 1 : -1;
		took += c == 'h';
		if (holders > most)
			most = holders;
	}
	close(p[0]);
	for (int k = 0; k < 2; k++) {
		int st;
		waitpid(kids[k], &st, 0);
	}
	assert_true(took > 0);
	assert_int_equal(most, 1);
}

/*
 * A holder's record rewritten after it won (lease_set_pid, at each job start) moves its
 * claim's ctime past a newcomer's: the newcomer must still go. The holder rewrites its
 * record without pause while another process tries to take the GPU, many times.
 */
static void test_rewritten_holder_still_holds(void **state)
{
	(void)state;
	int ready[2], stop[2];
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(stop), 0);
	pid_t holder = fork();
	assert_true(holder >= 0);
	if (holder == 0) {
		close(ready[0]);
		close(stop[1]);
		struct lease_dir *hd = open_dir();
		struct lease_info info = me("holder");
		char err[256];
		struct lease *l = NULL;
		size_t busy;
		if (lease_try(hd, &A, 1, &info, &l, &busy, err, sizeof err) != GC_OK)
			_exit(2);
		(void)write(ready[1], "r", 1);
		fcntl(stop[0], F_SETFL, O_NONBLOCK);
		char c;
		for (pid_t pid = 1000;; pid++) {
			lease_set_pid(l, pid, 0);
			if (read(stop[0], &c, 1) >= 0 || errno != EAGAIN)
				break;
		}
		lease_release(l);
		_exit(0);
	}
	close(ready[1]);
	close(stop[0]);
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	struct lease_dir *d = open_dir();
	struct lease_info info = me("newcomer");
	char err[256];
	int took = 0;
	for (int i = 0; i < 2000; i++) {
		struct lease *l = NULL;
		size_t busy;
		if (lease_try(d, &A, 1, &info, &l, &busy, err, sizeof err) == GC_OK) {
			took++;
			lease_release(l);
		}
	}
	(void)write(stop[1], "s", 1);
	int st;
	waitpid(holder, &st, 0);
	lease_dir_close(d);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(took, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_all_or_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sigkill_frees, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inherited_by_job, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_reads_rewritten_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_command_any_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_fifo_and_stale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_release_wakes_waiter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unwatched_waiter_wakes_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unsafe_places_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_lock_neither_holds_nor_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_ticket_loses_its_place, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_idle_ticket_passed_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_head_is_waited_for, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sleeping_old_ticket_passed_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_race_never_both, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rewritten_holder_still_holds, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
