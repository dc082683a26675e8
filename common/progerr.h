/*
 * progerr.h — what gpuctl's programs (gpuctl, gpuctld) share and the
 * library must not do: exit codes, error lines on stderr, option errors
 * worded alike, option values parsed with a message. The stop-signal
 * catcher (sigstop.h) lives beside it.
 */
#ifndef GPUCTL_PROGERR_H
#define GPUCTL_PROGERR_H

/* Exit codes: stable, documented in docs/exit-codes.md and gpuctl(1). */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,      /* any other failure */
	EXIT_USAGE = 2,     /* bad command line: option, field, -i value */
	EXIT_NODRIVER = 3,  /* no NVIDIA driver: library not found or driver not loaded */
	EXIT_MISMATCH = 4,  /* driver/library version mismatch (upgraded without reboot) */
	EXIT_GPULOST = 5,   /* a GPU was lost (fell off the bus) while sampling */
	EXIT_NODEVICE = 6,  /* the driver works but there is no GPU ("No devices were found", as nvidia-smi's 6) */
};

/* the name error lines start with: "gpuctl", or "gpuctld" in the daemon */
extern const char *cli_prog;
/* when set, cli_err names it after the program: "gpuctld: /etc/gpuctl/gpuctld.conf:3: ..." */
extern const char *cli_where;
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* exit code for a GC_E* error */
int cli_exit_code(int gc_err);

/* Parse seconds ("1", "0.5") for --loop; prints the error. */
int cli_parse_interval(const char *opt, const char *arg, double *out);
/* Parse a duration ("90" seconds, "30s", "5m", "2h", "1d") into ms; prints the error. */
int cli_parse_duration(const char *opt, const char *arg, long long *ms);
/* Parse a positive count; prints the error. */
int cli_parse_count(const char *opt, const char *arg, long *out);

/*
 * A command's option errors, worded alike everywhere, each with the hint
 * "try 'gpuctl CMD --help'"; both return EXIT_USAGE. cli_bad_option takes
 * getopt_long's answer (':' for an option missing its value, run with
 * opterr = 0); cli_extra_arg an operand CMD does not take.
 */
int cli_bad_option(const char *cmd, int c, char *const argv[]);
int cli_extra_arg(const char *cmd, const char *arg);

#endif
