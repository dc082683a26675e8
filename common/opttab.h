/*
 * opttab.h — declarative option tables (git's parse-options is the model):
 * one table says each option's name, value, range and help line; from it
 * come getopt_long's table, the parsing with the errors worded alike, the
 * --help text (which completion and the docs test read: no second list to
 * drift), and the keys of a configuration file. gpuctld, gpuctl advise and
 * gpuctl launch use it.
 *
 * An entry stores its value at an offset into the caller's settings struct
 * (OPT_AT), so a table is static const and --help needs no instance.
 */
#ifndef GPUCTL_OPTTAB_H
#define GPUCTL_OPTTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct option;

enum opt_type {
	OPT_END = 0,
	OPT_SECTION,  /* --help only: a heading line ("" for a blank line) */
	OPT_NOTE,     /* --help only: a line of text at the options' indent */
	OPT_FLAG,     /* no value: the bool at .off is set true (false with OPT_NEG) */
	OPT_STRING,   /* the value itself, a const char * at .off (borrowed from argv or the file) */
	OPT_DURATION, /* "90", "30s", "5m", "2h", "1d": milliseconds (seconds with OPT_SECONDS) */
	OPT_COUNT,    /* a whole number from .min to .max */
	OPT_SIZE,     /* "64KiB", "1G": bytes from .min to .max (.max 0: no bound) */
	OPT_CALLBACK, /* .cb decides, and stores what it likes */
	OPT_CALLER,   /* given back to the caller's loop as .val (optparse_next) */
};

/* .flags */
enum {
	OPT_ZERO = 1 << 0,    /* "0" is taken, and means 0 (off, no cap), whatever .min */
	OPT_OFF = 1 << 1,     /* "off" likewise */
	OPT_NEG = 1 << 2,     /* OPT_FLAG: sets false */
	OPT_NOCONF = 1 << 3,  /* not a configuration file key (--config, --help) */
	OPT_SECONDS = 1 << 4, /* OPT_DURATION: stored in whole seconds */
	OPT_OPTARG = 1 << 5,  /* the value is optional (--name=VALUE only) */
	OPT_VALUE = 1 << 6,   /* OPT_CALLBACK/OPT_CALLER: takes a value (.arg names it) */
	OPT_HIDDEN = 1 << 7,  /* taken, not in --help (an option said to be another command's) */
};

struct opt {
	enum opt_type type;
	const char *name;  /* the long name, without dashes */
	const char *arg;   /* the value's name in --help ("DUR"); NULL for none */
	const char *help;  /* what it does, defaults included; wrapped by opt_help */
	size_t off, size;  /* where the value goes in the settings, and its width (OPT_AT) */
	long long min, max;
	const char *accepted; /* a bad value's message: "invalid --NAME 'V' (ACCEPTED)" */
	unsigned flags;
	int shortopt;      /* -n, or 0 */
	int val;           /* OPT_CALLER: what optparse_next returns */
	/* OPT_CALLBACK: EXIT_OK, or an exit code after one error line */
	int (*cb)(const struct opt *o, const char *arg, void *settings);
};

/* where a settings field is, and how wide */
#define OPT_AT(type, field) .off = offsetof(type, field), .size = sizeof(((type *)0)->field)

/* Store v in the integer at o->off in settings (o->size wide). */
void opt_store(const struct opt *o, void *settings, long long v);
/* Apply one option with its value (NULL for a flag): EXIT_OK, or EXIT_USAGE after one error line. */
int opt_apply(const struct opt *o, const char *arg, void *settings);
/* The entry named name (no dashes), or NULL; sections and notes are no entries. */
const struct opt *opt_find(const struct opt *tab, const char *name);
/* Does the entry take a value? */
bool opt_takes_value(const struct opt *o);
/* The table's entries before its OPT_END, sections and notes included. */
size_t opt_count(const struct opt *tab);

/*
 * --help from a table: the usage line (synopsis, or one generated as
 * "usage: PROG [--name ARG] ...", wrapped), the text, then a line per
 * option, "  -s, --name ARG  help" with the help wrapped under itself.
 */
void opt_synopsis(FILE *f, const char *prog, const struct opt *tab);
void opt_help(FILE *f, const struct opt *tab);

/* Walking argv over a table and the caller's own getopt entries (a shared table, such as run's). */
struct optparse {
	const struct opt *tab;
	struct option *lo; /* getopt_long's table: the entries', then extra's */
	char *shorts;
	size_t ntab;
};
/*
 * extra: getopt entries given back as they are (NULL: none); shorts:
 * their short options, as getopt's optstring ("n:"); stop_at_operand: "+"
 * (what follows the command's operands is the job's). GC_OK or GC_ENOMEM.
 */
int optparse_init(struct optparse *p, const struct opt *tab, const struct option *extra, const char *shorts,
		  bool stop_at_operand);
/*
 * The next option: -1 at the end (optind at the first operand); '?' or
 * ':' for an unknown option or a missing value (cli_bad_option words
 * them); else *o is the table's entry (its .val for OPT_CALLER, 0 for
 * others) or NULL and the return is extra's value; *arg its value.
 */
int optparse_next(struct optparse *p, int argc, char **argv, const struct opt **o, const char **arg);
void optparse_free(struct optparse *p);

#endif
