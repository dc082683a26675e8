/*
 * cmd-spot.c — `gpuctl spot`: watch this cloud VM's metadata service for
 * spot preemption and maintenance notices and print one line per notice
 * (or JSON Lines), so that a shell script — or a person — can see what the
 * supervisor of `gpuctl run` would react to.
 */
#include "cli.h"
#include "spot/spot.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

static void iso_ms(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void print_event(const struct spot_event *ev, bool json)
{
	char when[32], deadline[32];
	iso_ms(ev->notice_ms, when, sizeof when);
	iso_ms(ev->deadline_ms, deadline, sizeof deadline);
	if (json) {
		json_t *o = json_pack("{s:s, s:I, s:s, s:s, s:s, s:o, s:o, s:o, s:s}", "time", when,
				      "time_ms", (json_int_t)ev->notice_ms, "cloud", spot_cloud_name(ev->cloud),
				      "kind", spot_kind_name(ev->kind), "action", ev->action,
				      "deadline", ev->deadline_ms ? json_string(deadline) : json_null(),
				      "deadline_ms", ev->deadline_ms ? json_integer(ev->deadline_ms) : json_null(),
				      "id", ev->id[0] ? json_string(ev->id) : json_null(), "detail", ev->detail);
		char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
		if (s)
			printf("%s\n", s);
		free(s);
		json_decref(o);
	} else {
		printf("%s %s %s action=%s", when, spot_cloud_name(ev->cloud), spot_kind_name(ev->kind),
		       ev->action);
		if (ev->deadline_ms)
			printf(" deadline=%s", deadline);
		if (ev->id[0])
			printf(" id=%s", ev->id);
		if (ev->kind == SPOT_ERROR) {
			fputs(" detail=\"", stdout);
			for (const char *p = ev->detail; *p; p++)
				if (*p == '"' || *p == '\\')
					printf("\\%c", *p);
				else if ((unsigned char)*p >= ' ')
					putchar(*p);
			putchar('"');
		}
		putchar('\n');
	}
	fflush(stdout);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuctl spot [--cloud aws|gcp|azure|auto] [--poll SEC] [--once] [--json] [--ack]\n\n"
		   "Watch the cloud's metadata service for spot preemption and maintenance notices and\n"
		   "print one line per notice. --cloud auto (the default) tells the cloud from the\n"
		   "machine's DMI data; --poll is the AWS and Azure poll interval (default 0.4; GCP long-\n"
		   "polls); --once exits after the first preemption notice; --ack approves Azure events\n"
		   "at once. $GPUCTL_METADATA_URL overrides the metadata service's address.\n");
}

int cmd_spot(const struct cli_global *g, int argc, char **argv)
{
	(void)g;
	static const struct option opts[] = {
		{"cloud", required_argument, NULL, 'c'},
		{"poll", required_argument, NULL, 'p'},
		{"once", no_argument, NULL, '1'},
		{"json", no_argument, NULL, 'j'},
		{"ack", no_argument, NULL, 'a'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	enum spot_cloud cloud = SPOT_NONE;
	bool autodetect = true, once = false, json = false, ack = false;
	double poll_s = SPOT_POLL_MS / 1000.0;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (spot_parse_cloud(optarg, &cloud, &autodetect) != 0 || (!autodetect && cloud == SPOT_NONE)) {
				cli_err("invalid --cloud value '%s' (expected aws, gcp, azure or auto)", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'p':
			if (cli_parse_interval("--poll", optarg, &poll_s) != EXIT_OK)
				return EXIT_USAGE;
			break;
		case '1': once = true; break;
		case 'j': json = true; break;
		case 'a': ack = true; break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		default:
			return cli_bad_option("spot", c, argv);
		}
	}
	if (optind < argc)
		return cli_extra_arg("spot", argv[optind]);
	if (autodetect) {
		cloud = spot_detect(NULL);
		if (cloud == SPOT_NONE) {
			cli_err("no cloud detected from /sys/class/dmi/id (use --cloud aws|gcp|azure)");
			return EXIT_USAGE;
		}
	}

	/* signals arrive through a signalfd; blocked first, so the watcher thread inherits the mask */
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, &old) < 0) {
		cli_err("cannot block signals: %s", strerror(errno));
		return EXIT_FAIL;
	}
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		cli_err("cannot create a signalfd: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &old, NULL);
		return EXIT_FAIL;
	}
	struct spot_opts o = {.poll_ms = (int)(poll_s * 1000 + 0.5)};
	if (o.poll_ms < 1)
		o.poll_ms = 1;
	struct spot_watcher *w = NULL;
	char err[512] = "";
	int rc = spot_watch_start(&w, cloud, &o, err, sizeof err);
	if (rc != 0) {
		cli_err("cannot watch %s spot notices: %s", spot_cloud_name(cloud), err[0] ? err : gc_strerror(rc));
		close(sfd);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return rc == GC_EINVAL ? EXIT_USAGE : EXIT_FAIL;
	}
	int status = EXIT_OK;
	bool done = false;
	while (!done) {
		struct pollfd p[2] = {{.fd = spot_watch_fd(w), .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			cli_err("poll: %s", strerror(errno));
			status = EXIT_FAIL;
			break;
		}
		if (p[1].revents)
			break; /* SIGINT or SIGTERM: a clean stop */
		struct spot_event ev;
		while (!done && spot_watch_next(w, &ev) == 1) {
			print_event(&ev, json);
			if (ack && ev.id[0] && ev.kind != SPOT_ERROR &&
			    spot_watch_ack(w, &ev, err, sizeof err) != 0)
				cli_err("cannot approve %s event '%s': %s", spot_cloud_name(ev.cloud), ev.id, err);
			if (once && ev.kind == SPOT_PREEMPT)
				done = true;
		}
	}
	spot_watch_stop(w);
	/* take the signal that stopped us, so unblocking does not deliver it */
	struct signalfd_siginfo si;
	while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
		;
	close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return status;
}
