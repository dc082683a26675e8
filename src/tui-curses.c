/*
 * tui-curses.c — the module gpuctl-tui.so: tui.h's calls on ncurses, for
 * `gpuctl top`, which loads it (cmd-top.c). Nothing else here.
 */
#include "tui.h"

static bool tui_open(void)
{
	if (!initscr())
		return false;
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
	return true;
}

static void tui_close(void)
{
	endwin();
}

static bool tui_colors(void)
{
	if (!has_colors())
		return false;
	start_color();
	use_default_colors();
	return true;
}

static void tui_pair(short n, short fg, short bg)
{
	init_pair(n, fg, bg);
}

static int tui_lines(void)
{
	return LINES;
}

static int tui_cols(void)
{
	return COLS;
}

static void tui_put(int y, int x, const char *s, int n, attr_t a)
{
	attron(a);
	if (n < 0)
		mvaddstr(y, x, s);
	else
		mvaddnstr(y, x, s, n);
	attroff(a);
}

static void tui_fill(int y, int x, int n, attr_t a)
{
	move(y, x);
	attron(a);
	hline(' ', n);
	attroff(a);
}

static void tui_erase(void)
{
	erase();
}

static void tui_clear(void)
{
	clear();
}

static void tui_refresh(void)
{
	refresh();
}

static int tui_key(int timeout_ms)
{
	timeout(timeout_ms);
	return getch();
}

const struct tui_ops *gpuctl_tui(void)
{
	static const struct tui_ops ops = {
		.abi = GPUCTL_TUI_ABI,
		.open = tui_open,
		.close = tui_close,
		.colors = tui_colors,
		.pair = tui_pair,
		.lines = tui_lines,
		.cols = tui_cols,
		.put = tui_put,
		.fill = tui_fill,
		.blank = tui_erase,
		.repaint = tui_clear,
		.show = tui_refresh,
		.key = tui_key,
	};
	return &ops;
}
