/*
 * cmd-explain.c — `gpuctl explain [FILE|-] [--json]`: the known failures in
 * a log, each with what happened, its numbers, the likely cause and the fix.
 * Exit 0 when something was found, 1 when nothing matched (like grep),
 * 2 for a bad command line or an input that cannot be read.
 */
#include "cli.h"
#include "diagnose/explain.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void print_value(const struct explain_value *v)
{
	char b[160];
	explain_value_text(v, b, sizeof b);
	fputs(b, stdout);
}

static void text(const char *name, const struct explain_result *r)
{
	if (r->n == 0) {
		printf("%s: no known failure found in %llu line%s%s\n", name, (unsigned long long)r->lines,
		       r->lines == 1 ? "" : "s", r->binary ? " (the input holds NUL bytes; read as text)" : "");
		return;
	}
	printf("%s: %zu known failure%s in %llu lines%s\n", name, r->n, r->n == 1 ? "" : "s",
	       (unsigned long long)r->lines, r->binary ? " (the input holds NUL bytes; read as text)" : "");
	for (size_t i = 0; i < r->n; i++) {
		const struct explain_finding *f = &r->findings[i];
		char rk[160];
		explain_ranks_said(f, rk, sizeof rk);
		printf("\n[%zu] %s%s%s\n    line %llu%s", i + 1, f->title, rk,
		       r->n > 1 && i == r->root ? " (the root cause: the others follow from it)" : "",
		       (unsigned long long)f->first_line, f->count > 1 ? "" : "\n");
		if (f->count > 1)
			printf(" (and %u more line%s)\n", f->count - 1, f->count > 2 ? "s" : "");
		printf("    %s\n", f->line);
		if (f->nvalues) {
			printf("    numbers: ");
			for (size_t k = 0; k < f->nvalues; k++) {
				if (k)
					printf(", ");
				print_value(&f->values[k]);
			}
			putchar('\n');
		}
		printf("    cause: %s\n    fix: %s\n", f->cause, f->fix);
	}
}

static int json(const char *name, const struct explain_result *r)
{
	char *s = explain_result_json(name, r);
	if (!s) {
		cli_err("out of memory");
		return EXIT_FAIL;
	}
	puts(s);
	free(s);
	return EXIT_OK;
}

int cmd_explain(const struct cli_global *g, int argc, char **argv)
{
	(void)g;
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool as_json = false;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': as_json = true; break;
		case 'h':
			printf("usage: gpuctl explain [FILE|-] [--json]\n\n"
			       "Name the known failures in a log (stdin without FILE or with -): what happened,\n"
			       "the numbers, the likely cause, the fix. Exit 0: found some; 1: none; 2: error.\n");
			return EXIT_OK;
		default:
			return cli_bad_option("explain", c, argv);
		}
	}
	if (argc - optind > 1) {
		cli_err("explain reads one log at a time (got %d files)", argc - optind);
		return EXIT_USAGE;
	}
	const char *path = optind < argc ? argv[optind] : "-";
	char dir[4200], err[512];
	if (cli_signatures_dir(dir, sizeof dir, false) < 0)
		return EXIT_FAIL;
	struct explain_db *db;
	if (explain_db_load(&db, dir, err, sizeof err) != GC_OK) {
		cli_err("%s", err);
		return EXIT_FAIL;
	}
	int fd = STDIN_FILENO;
	if (strcmp(path, "-") != 0) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		struct stat st;
		if (fd < 0) {
			cli_err("cannot open '%s': %s", path, strerror(errno));
			explain_db_free(db);
			return EXIT_USAGE;
		}
		if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
			cli_err("cannot explain '%s': it is a directory (give a log file, or - for stdin)", path);
			close(fd);
			explain_db_free(db);
			return EXIT_USAGE;
		}
	}
	struct explain_result r;
	int rc = explain_scan_fd(db, fd, &r, err, sizeof err);
	if (fd != STDIN_FILENO)
		close(fd);
	const char *name = strcmp(path, "-") == 0 ? "stdin" : path;
	if (rc != GC_OK) {
		cli_err("cannot read '%s': %s", name, err);
		rc = EXIT_USAGE;
	} else {
		rc = as_json ? json(name, &r) : (text(name, &r), EXIT_OK);
		if (rc == EXIT_OK && r.n == 0)
			rc = EXIT_FAIL; /* nothing matched: like grep */
	}
	explain_result_free(&r);
	explain_db_free(db);
	return rc;
}
