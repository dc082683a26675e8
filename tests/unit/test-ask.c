/*
 * test-ask.c — the two clients of gpuctld's socket, over one set of socket
 * parts (lib/jobs/authority.c): gpuctld_ask (the queue socket:
 * lib/jobs/gpuctld-ask.c) and authority_connect / authority_call (authority
 * mode). Each keeps its own messages, its own bound on an answer and its own
 * rule of whom to trust: the queue socket may be served by root or the
 * caller, the authority socket by root alone. The servers are children of
 * the test, on sockets in a scratch directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jobs/authority.h"
#include "jobs/gpuctld-ask.h"
#include "tmpdir.h"

#define NOBODY 65534

static char dir[64], sock[100];
static pid_t server = -1; /* the one running, if any */

static int setup(void **state)
{
	(void)state;
	if (tmpdir_make(dir, sizeof dir, "ask") < 0 || chmod(dir, 0777) < 0)
		return -1;
	snprintf(sock, sizeof sock, "%s/q.sock", dir);
	return setenv("GPUCTL_QUEUE_SOCKET", sock, 1);
}

static int teardown(void **state)
{
	(void)state;
	return tmpdir_remove(dir);
}

/*
 * A server on sock in a child, `server` (as uid `as` when not -1): for each connection
 * it reads the request line, appends it to DIR/got, then writes answer
 * (alen bytes) and closes; with alen 0 it closes without a word, with answer
 * NULL it says nothing and keeps the connection until it is killed.
 */
static void serve(const char *answer, size_t alen, int as)
{
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	unlink(sock);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		if (as >= 0 && (setgid((gid_t)as) < 0 || setuid((uid_t)as) < 0))
			_exit(3);
		/* gone with the test, even one that fails halfway (set after setuid, which clears it) */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() == 1)
			_exit(7);
		signal(SIGPIPE, SIG_IGN); /* a client that went without its answer */
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
		int l = socket(AF_UNIX, SOCK_STREAM, 0);
		if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 8) < 0)
			_exit(4);
		(void)chmod(sock, 0777);
		if (write(ready[1], "x", 1) != 1)
			_exit(5);
		for (;;) {
			int c = accept(l, NULL, NULL);
			if (c < 0)
				_exit(6);
			char line[4096];
			size_t n = 0;
			while (n < sizeof line && read(c, line + n, 1) == 1 && line[n++] != '\n')
				;
			char got[128];
			snprintf(got, sizeof got, "%s/got", dir);
			FILE *f = fopen(got, "a");
			if (f) {
				fwrite(line, 1, n, f);
				fclose(f);
			}
			if (!answer)
				pause();
			for (size_t off = 0; off < alen;) {
				ssize_t w = write(c, answer + off, alen - off);
				if (w <= 0)
					break;
				off += (size_t)w;
			}
			close(c);
		}
	}
	close(ready[1]);
	server = pid;
	char x;
	assert_int_equal(read(ready[0], &x, 1), 1);
	close(ready[0]);
}

/* the server gone, with its socket and what it was sent */
static void stop(void)
{
	char path[128];
	if (server > 0) {
		kill(server, SIGKILL);
		waitpid(server, NULL, 0);
	}
	server = -1;
	unlink(sock);
	snprintf(path, sizeof path, "%s/got", dir);
	unlink(path);
}

/* after each test, passed or failed */
static int stop_server(void **state)
{
	(void)state;
	stop();
	return 0;
}

/* what the servers were sent, all of it ("" when nothing) */
static const char *got(void)
{
	static char buf[4096];
	char path[128];
	snprintf(path, sizeof path, "%s/got", dir);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	unlink(path);
	return buf;
}

/* gpuctld_ask's answer to {"op":"x"}, with 1 s a send or read; *reached and err as it left them */
static json_t *ask(int *reached, char *err, size_t errlen)
{
	json_t *req = json_pack("{s:s}", "op", "x");
	*reached = -1;
	json_t *ans = gpuctld_ask(req, 1000, reached, err, errlen);
	json_decref(req);
	return ans;
}

/* {"ok": true, "pad": "xxx..."} of about `size` bytes, and its line's end */
static char *big_answer(size_t size, size_t *len)
{
	char *s = malloc(size + 64);
	assert_non_null(s);
	int h = snprintf(s, 64, "{\"ok\": true, \"pad\": \"");
	memset(s + h, 'x', size);
	memcpy(s + h + size, "\"}\n", 4);
	*len = (size_t)h + size + 3;
	return s;
}

static void test_ask_answers(void **state)
{
	(void)state;
	char err[1400], want[1400];
	int reached;
	/* an answer, to the request sent as one line */
	const char ok[] = "{\"ok\": true, \"n\": 7}\n";
	serve(ok, sizeof ok - 1, -1);
	json_t *ans = ask(&reached, err, sizeof err);
	assert_non_null(ans);
	assert_int_equal(reached, 1);
	assert_int_equal(json_integer_value(json_object_get(ans, "n")), 7);
	json_decref(ans);
	assert_string_equal(got(), "{\"op\":\"x\"}\n");
	stop();
	/* a refusal: gpuctld's error text, made safe for a terminal */
	const char no[] = "{\"ok\": false, \"error\": \"no \\u001b[31mjob\"}\n";
	serve(no, sizeof no - 1, -1);
	assert_null(ask(&reached, err, sizeof err));
	assert_int_equal(reached, 1);
	assert_string_equal(err, "no ?[31mjob");
	stop();
	/* no word, then silence: no answer either way, but reached */
	snprintf(want, sizeof want, "gpuctld at '%s' gave no answer (it may have stopped)", sock);
	serve("", 0, -1);
	assert_null(ask(&reached, err, sizeof err));
	assert_int_equal(reached, 1);
	assert_string_equal(err, want);
	assert_string_equal(got(), "{\"op\":\"x\"}\n");
	stop();
	serve(NULL, 0, -1);
	assert_null(ask(&reached, err, sizeof err));
	assert_int_equal(reached, 1);
	assert_string_equal(err, want);
	assert_string_equal(got(), "{\"op\":\"x\"}\n");
	stop();
	/* the queue's bound is 16 MiB (the authority socket's is 4): 6 MiB is an answer, 17 is not */
	size_t len;
	char *a = big_answer(6u << 20, &len);
	serve(a, len, -1);
	ans = ask(&reached, err, sizeof err);
	assert_non_null(ans);
	assert_int_equal(strlen(json_string_value(json_object_get(ans, "pad"))), 6u << 20);
	json_decref(ans);
	stop();
	free(a);
	a = big_answer(17u << 20, &len);
	serve(a, len, -1);
	assert_null(ask(&reached, err, sizeof err));
	assert_int_equal(reached, 1);
	assert_string_equal(err, want);
	stop();
	free(a);
}

/* the bytes an answer with "rows_bytes" is followed by (gpuctl queue's table): all of them, and only
 * them; fewer than it says, or a size that is none, is an error, never a short table */
static void test_ask_rows(void **state)
{
	(void)state;
	char err[1400], want[1400], *rows;
	size_t len;
	int reached;
	json_t *req = json_pack("{s:s}", "op", "list");
	const char two[] = "{\"ok\": true, \"rows_bytes\": 8, \"next\": 2}\n1\ta\n2\tb\nextra";
	serve(two, sizeof two - 1, -1);
	json_t *ans = gpuctld_ask_rows(req, 1000, &reached, &rows, &len, err, sizeof err);
	assert_non_null(ans);
	assert_int_equal(json_integer_value(json_object_get(ans, "next")), 2);
	assert_int_equal(len, 8);
	assert_string_equal(rows, "1\ta\n2\tb\n");
	json_decref(ans);
	free(rows);
	/* gpuctld_ask takes the line alone */
	ans = gpuctld_ask(req, 1000, &reached, err, sizeof err);
	assert_non_null(ans);
	json_decref(ans);
	stop();
	const char cut[] = "{\"ok\": true, \"rows_bytes\": 100}\n1\ta\n";
	serve(cut, sizeof cut - 1, -1);
	snprintf(want, sizeof want, "gpuctld at '%s' cut its answer short (it may have stopped)", sock);
	assert_null(gpuctld_ask_rows(req, 1000, &reached, &rows, &len, err, sizeof err));
	assert_null(rows);
	assert_int_equal(len, 0);
	assert_string_equal(err, want);
	stop();
	const char *bad[] = {"{\"ok\": true, \"rows_bytes\": -1}\n", "{\"ok\": true, \"rows_bytes\": \"8\"}\n",
			     "{\"ok\": true, \"rows_bytes\": 99999999999}\n"};
	snprintf(want, sizeof want, "gpuctld at '%s' gave a bad answer (rows_bytes is not a size up to 16777216 bytes)",
		 sock);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		serve(bad[i], strlen(bad[i]), -1);
		assert_null(gpuctld_ask_rows(req, 1000, &reached, &rows, &len, err, sizeof err));
		assert_null(rows);
		assert_string_equal(err, want);
		stop();
	}
	json_decref(req);
}

static void test_ask_unreached(void **state)
{
	(void)state;
	char err[1400], want[1400];
	int reached;
	snprintf(want, sizeof want, "cannot reach gpuctld at '%s': No such file or directory (is gpuctld running "
		 "with its queue? GPUCTL_QUEUE_SOCKET names another socket)", sock);
	assert_null(ask(&reached, err, sizeof err));
	assert_int_equal(reached, 0);
	assert_string_equal(err, want);
	/* a path no socket address holds */
	char lng[200];
	memset(lng, 'a', sizeof lng - 1);
	lng[0] = '/';
	lng[sizeof lng - 1] = '\0';
	setenv("GPUCTL_QUEUE_SOCKET", lng, 1);
	assert_null(ask(&reached, err, sizeof err));
	setenv("GPUCTL_QUEUE_SOCKET", sock, 1);
	assert_int_equal(reached, 0);
	snprintf(want, sizeof want, "invalid queue socket '%s'", lng);
	assert_string_equal(err, want);
}

/* a socket served by another user: the queue client sends it nothing, nor does the authority client;
 * the queue client of that user does */
static void test_other_users_socket(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	char err[1400], want[1400];
	int reached;
	const char ok[] = "{\"ok\": true}\n";
	serve(ok, sizeof ok - 1, NOBODY);
	assert_null(ask(&reached, err, sizeof err));
	assert_int_equal(reached, 0);
	snprintf(want, sizeof want, "refusing the queue socket '%s': it is served by uid %d, not by root or you "
		 "(another user's program, not gpuctld?)", sock, NOBODY);
	assert_string_equal(err, want);
	assert_int_equal(authority_connect(sock, 0, NULL, err, sizeof err), GC_EINVAL);
	snprintf(want, sizeof want, "refusing gpuctld's socket '%s': the process behind it is not root's", sock);
	assert_string_equal(err, want);
	json_t *ans = NULL;
	assert_int_equal(authority_call(sock, json_pack("{s:s}", "op", "x"), &ans, err, sizeof err), GC_EINVAL);
	assert_null(ans);
	assert_string_equal(got(), "");
	/* the same socket, to its own user: the queue client's, not the authority's (exit 0: as said) */
	pid_t c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		if (setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(3);
		json_t *a = ask(&reached, err, sizeof err);
		int fd = authority_connect(sock, 0, NULL, err, sizeof err);
		_exit(!a || reached != 1 ? 4 : fd != GC_EINVAL ? 5 : 0);
	}
	int st;
	assert_int_equal(waitpid(c, &st, 0), c);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_string_equal(got(), "{\"op\":\"x\"}\n");
	stop();
}

static int waits;
static void count_wait(void *arg, const char *path)
{
	(void)arg;
	(void)path;
	waits++;
}

static void test_authority(void **state)
{
	(void)state;
	char err[1400], want[1400];
	authority_on_wait(count_wait, NULL);
	/* nobody there: one try, or a wait said once, then the authority's message */
	snprintf(want, sizeof want, "gpuctld is not answering at '%s' (authority mode: GPUs are leased only "
		 "through it; ask the administrator to start it)", sock);
	waits = 0;
	assert_int_equal(authority_connect(sock, 0, NULL, err, sizeof err), GC_ETIMEDOUT);
	assert_string_equal(err, want);
	assert_int_equal(waits, 0);
	assert_int_equal(authority_connect(sock, 300, NULL, err, sizeof err), GC_ETIMEDOUT);
	assert_string_equal(err, want);
	assert_int_equal(waits, 1);
	/* a stop while it waits */
	static const volatile int stopped = 1;
	assert_int_equal(authority_connect(sock, 300, &stopped, err, sizeof err), GC_ECANCELED);
	assert_string_equal(err, "stopped while waiting for gpuctld");
	authority_on_wait(NULL, NULL);
	/* what waiting cannot mend: a path too long, a file where a directory should be */
	char lng[200];
	memset(lng, 'a', sizeof lng - 1);
	lng[0] = '/';
	lng[sizeof lng - 1] = '\0';
	assert_int_equal(authority_connect(lng, 0, NULL, err, sizeof err), GC_EINVAL);
	snprintf(want, sizeof want, "gpuctld's socket path '%.200s' is too long", lng);
	assert_string_equal(err, want);
	char file[128], under[160];
	snprintf(file, sizeof file, "%s/file", dir);
	assert_int_equal(tmpdir_write(dir, "file", ""), 0);
	snprintf(under, sizeof under, "%s/gpuctld.sock", file);
	assert_int_equal(authority_connect(under, 5000, NULL, err, sizeof err), GC_EIO);
	snprintf(want, sizeof want, "cannot connect to gpuctld at '%s': Not a directory", under);
	assert_string_equal(err, want);
	/* root's own server (this test's, when it runs as root): one call, one answer line, 4 MiB at most */
	if (geteuid() != 0)
		return;
	const char ok[] = "{\"ok\": true, \"n\": 3}\n";
	serve(ok, sizeof ok - 1, -1);
	json_t *ans = NULL;
	assert_int_equal(authority_call(sock, json_pack("{s:s}", "op", "x"), &ans, err, sizeof err), GC_OK);
	assert_int_equal(json_integer_value(json_object_get(ans, "n")), 3);
	assert_int_equal(authority_answer_rc(ans, err, sizeof err), GC_OK);
	json_decref(ans);
	assert_string_equal(got(), "{\"op\":\"x\"}\n");
	stop();
	size_t len;
	char *a = big_answer(5u << 20, &len);
	serve(a, len, -1);
	assert_int_equal(authority_call(sock, json_pack("{s:s}", "op", "x"), &ans, err, sizeof err), GC_EIO);
	assert_null(ans);
	assert_string_equal(err, "gpuctld's answer is too long");
	stop();
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_ask_answers, stop_server),
		cmocka_unit_test_teardown(test_ask_rows, stop_server),
		cmocka_unit_test_teardown(test_ask_unreached, stop_server),
		cmocka_unit_test_teardown(test_other_users_socket, stop_server),
		cmocka_unit_test_teardown(test_authority, stop_server),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
