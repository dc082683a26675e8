/*
 * opttab.c — declarative option tables (opttab.h): parsing, the errors,
 * the --help text and getopt_long's table, all from the one table.
 */
#include "opttab.h"

#include "gpuctl/gpuctl.h"
#include "progerr.h"
#include "util/units.h"

#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HELP_WIDTH 100 /* columns of --help */
#define HELP_COL 24    /* where an option's help starts */
#define VAL_BASE 1000  /* getopt's value for the table's entry i: VAL_BASE + i */

static bool is_option(const struct opt *o)
{
	return o->type != OPT_SECTION && o->type != OPT_NOTE;
}

bool opt_takes_value(const struct opt *o)
{
	switch (o->type) {
	case OPT_FLAG: return false;
	case OPT_CALLBACK:
	case OPT_CALLER: return (o->flags & (OPT_VALUE | OPT_OPTARG)) != 0;
	default: return is_option(o);
	}
}

size_t opt_count(const struct opt *tab)
{
	size_t n = 0;
	while (tab[n].type != OPT_END)
		n++;
	return n;
}

const struct opt *opt_find(const struct opt *tab, const char *name)
{
	for (const struct opt *o = tab; o->type != OPT_END; o++)
		if (is_option(o) && strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

void opt_store(const struct opt *o, void *settings, long long v)
{
	char *at = (char *)settings + o->off;
	switch (o->size) {
	case 1: { int8_t x = (int8_t)v; memcpy(at, &x, 1); break; }
	case 2: { int16_t x = (int16_t)v; memcpy(at, &x, 2); break; }
	case 4: { int32_t x = (int32_t)v; memcpy(at, &x, 4); break; }
	default: { int64_t x = (int64_t)v; memcpy(at, &x, 8); break; }
	}
}

static int bad(const struct opt *o, const char *arg)
{
	cli_err("invalid --%s '%s' (%s)", o->name, arg, o->accepted ? o->accepted : "see --help");
	return EXIT_USAGE;
}

/* a whole number from o->min to o->max */
static int parse_count(const struct opt *o, const char *arg, long long *v)
{
	char *end;
	errno = 0;
	*v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || *v < o->min || *v > o->max) {
		if (o->accepted)
			return bad(o, arg);
		cli_err("invalid --%s '%s' (expected a whole number from %lld to %lld)", o->name, arg, o->min, o->max);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int opt_apply(const struct opt *o, const char *arg, void *settings)
{
	char err[300], name[80];
	long long v = 0;
	if (arg && (((o->flags & OPT_ZERO) && strcmp(arg, "0") == 0) || ((o->flags & OPT_OFF) && strcmp(arg, "off") == 0))) {
		opt_store(o, settings, 0);
		return EXIT_OK;
	}
	switch (o->type) {
	case OPT_FLAG: {
		bool b = !(o->flags & OPT_NEG);
		memcpy((char *)settings + o->off, &b, sizeof b);
		return EXIT_OK;
	}
	case OPT_STRING:
		memcpy((char *)settings + o->off, &arg, sizeof arg);
		return EXIT_OK;
	case OPT_DURATION:
		snprintf(name, sizeof name, "--%s", o->name);
		if (units_parse_duration(name, arg, &v, err, sizeof err) != GC_OK) {
			cli_err("%s", err);
			return EXIT_USAGE;
		}
		if (v < o->min || (o->max && v > o->max))
			return bad(o, arg);
		opt_store(o, settings, (o->flags & OPT_SECONDS) ? v / 1000 : v);
		return EXIT_OK;
	case OPT_COUNT:
		if (parse_count(o, arg, &v))
			return EXIT_USAGE;
		opt_store(o, settings, v);
		return EXIT_OK;
	case OPT_SIZE: {
		uint64_t bytes;
		if (units_parse_size(arg, &bytes, err, sizeof err) != GC_OK || bytes > INT64_MAX ||
		    (long long)bytes < o->min || (o->max && (long long)bytes > o->max))
			return bad(o, arg);
		opt_store(o, settings, (long long)bytes);
		return EXIT_OK;
	}
	case OPT_CALLBACK: return o->cb(o, arg, settings);
	default: return EXIT_OK; /* OPT_CALLER: the caller's */
	}
}

/* print text wrapped at HELP_WIDTH, its first line from column col (already there), the rest at indent */
static void wrap(FILE *f, const char *text, int col, int indent)
{
	const char *p = text;
	while (*p) {
		/* a line: as many words as fit, or one word that does not */
		int room = HELP_WIDTH - col;
		const char *end = p, *cut = NULL;
		while (*end && *end != '\n' && end - p <= room) {
			if (*end == ' ')
				cut = end;
			end++;
		}
		if (!*end || *end == '\n' || !cut) {
			if (*end && *end != '\n' && !cut) /* one long word: to its end */
				end += strcspn(end, " \n");
			cut = end;
		}
		fprintf(f, "%.*s\n", (int)(cut - p), p);
		p = cut;
		if (*p == ' ' || *p == '\n')
			p++;
		if (*p)
			fprintf(f, "%*s", indent, "");
		col = indent;
	}
}

void opt_synopsis(FILE *f, const char *prog, const struct opt *tab)
{
	char head[128];
	int indent = snprintf(head, sizeof head, "usage: %s", prog) + 1;
	fputs(head, f);
	int col = indent - 1;
	for (const struct opt *o = tab; o->type != OPT_END; o++) {
		if (!is_option(o) || (o->flags & OPT_HIDDEN))
			continue;
		char item[160];
		int n = opt_takes_value(o) ? snprintf(item, sizeof item, (o->flags & OPT_OPTARG) ? "[--%s[=%s]]" : "[--%s %s]",
						       o->name, o->arg ? o->arg : "VALUE")
					   : snprintf(item, sizeof item, "[--%s]", o->name);
		if (col + 1 + n > HELP_WIDTH && col > indent) {
			fprintf(f, "\n%*s", indent - 1, "");
			col = indent - 1;
		}
		fprintf(f, " %s", item);
		col += 1 + n;
	}
	fputc('\n', f);
}

void opt_help(FILE *f, const struct opt *tab)
{
	/* "  -n, --name", and "      --name" beside it; "  --name" in a table without short options */
	bool any_short = false;
	for (const struct opt *o = tab; o->type != OPT_END; o++)
		any_short |= is_option(o) && o->shortopt;
	for (const struct opt *o = tab; o->type != OPT_END; o++) {
		if (o->type == OPT_SECTION) {
			fprintf(f, "%s\n", o->help);
			continue;
		}
		if (o->type == OPT_NOTE) {
			fputs("  ", f);
			wrap(f, o->help, 2, 2);
			continue;
		}
		if (o->flags & OPT_HIDDEN)
			continue;
		char left[160];
		int n = o->shortopt ? snprintf(left, sizeof left, "  -%c, --%s", o->shortopt, o->name)
				    : snprintf(left, sizeof left, "%s--%s", any_short ? "      " : "  ", o->name);
		if (opt_takes_value(o))
			n += snprintf(left + n, sizeof left - (size_t)n, (o->flags & OPT_OPTARG) ? "[=%s]" : " %s",
				      o->arg ? o->arg : "VALUE");
		fputs(left, f);
		if (n + 2 > HELP_COL) {
			fputs("  ", f);
			wrap(f, o->help ? o->help : "", n + 2, HELP_COL);
		} else {
			fprintf(f, "%*s", HELP_COL - n, "");
			wrap(f, o->help ? o->help : "", HELP_COL, HELP_COL);
		}
	}
}

int optparse_init(struct optparse *p, const struct opt *tab, const struct option *extra, const char *shorts,
		  bool stop_at_operand)
{
	memset(p, 0, sizeof *p);
	size_t n = opt_count(tab), nextra = 0, nshort = 0;
	for (; extra && extra[nextra].name; nextra++)
		;
	p->tab = tab;
	p->ntab = n;
	p->lo = calloc(n + nextra + 1, sizeof *p->lo);
	p->shorts = malloc(3 * n + (shorts ? strlen(shorts) : 0) + 3);
	if (!p->lo || !p->shorts) {
		optparse_free(p);
		return GC_ENOMEM;
	}
	size_t k = 0;
	if (stop_at_operand)
		p->shorts[nshort++] = '+';
	p->shorts[nshort++] = ':';
	for (size_t i = 0; i < n; i++) {
		const struct opt *o = &tab[i];
		if (!is_option(o))
			continue;
		bool val = opt_takes_value(o);
		p->lo[k++] = (struct option){o->name, !val ? no_argument : (o->flags & OPT_OPTARG) ? optional_argument
										      : required_argument,
					     NULL, o->shortopt ? o->shortopt : VAL_BASE + (int)i};
		if (o->shortopt) {
			p->shorts[nshort++] = (char)o->shortopt;
			if (val)
				p->shorts[nshort++] = ':';
		}
	}
	for (size_t i = 0; i < nextra; i++)
		p->lo[k++] = extra[i];
	p->shorts[nshort] = '\0';
	if (shorts)
		strcat(p->shorts, shorts);
	opterr = 0;
	return GC_OK;
}

int optparse_next(struct optparse *p, int argc, char **argv, const struct opt **o, const char **arg)
{
	int c = getopt_long(argc, argv, p->shorts, p->lo, NULL);
	*o = NULL;
	*arg = optarg;
	if (c == -1 || c == '?' || c == ':')
		return c;
	if (c >= VAL_BASE && (size_t)(c - VAL_BASE) < p->ntab)
		*o = &p->tab[c - VAL_BASE];
	for (size_t i = 0; !*o && c < 256 && i < p->ntab; i++)
		if (p->tab[i].shortopt == c && is_option(&p->tab[i]))
			*o = &p->tab[i];
	if (!*o)
		return c;
	return (*o)->type == OPT_CALLER ? (*o)->val : 0;
}

void optparse_free(struct optparse *p)
{
	free(p->lo);
	free(p->shorts);
	p->lo = NULL;
	p->shorts = NULL;
}
