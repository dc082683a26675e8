/*
 * tui.h — the terminal calls `gpuctl top` makes, served by the module
 * gpuctl-tui.so (tui-curses.c), which alone links ncurses: every other verb
 * starts without loading ncurses and its terminfo library (0.2 ms of each
 * start, bench/lease.sh). cmd-top.c includes <curses.h> for its constants
 * (A_*, KEY_*, COLOR_*) only.
 */
#ifndef GPUCTL_TUI_H
#define GPUCTL_TUI_H

#include <curses.h>
#include <stdbool.h>

#define GPUCTL_TUI_ABI 1
#define GPUCTL_TUI_MODULE "gpuctl-tui.so"
#define GPUCTL_TUI_ENTRY "gpuctl_tui"

struct tui_ops {
	int abi;                     /* GPUCTL_TUI_ABI */
	/* initscr, cbreak, noecho, keypad, no cursor, a short Esc delay; false: no terminal */
	bool (*open)(void);
	void (*close)(void);         /* endwin (also from a crash's signal handler) */
	/* colours, on the terminal's own background: false when it has none */
	bool (*colors)(void);
	void (*pair)(short n, short fg, short bg);
	int (*lines)(void);
	int (*cols)(void);
	void (*put)(int y, int x, const char *s, int n, attr_t a); /* n bytes at most; n < 0: all */
	void (*fill)(int y, int x, int n, attr_t a);               /* n blanks */
	void (*blank)(void);         /* erase */
	void (*repaint)(void);       /* clear: all of it redrawn next */
	void (*show)(void);          /* refresh */
	int (*key)(int timeout_ms);  /* a key, KEY_RESIZE, or ERR when none came */
};

/* the module's one export */
typedef const struct tui_ops *(*tui_entry_fn)(void);
const struct tui_ops *gpuctl_tui(void);

#endif
