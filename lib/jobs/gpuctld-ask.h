/*
 * gpuctld-ask.h — the client side of gpuctld's queue socket: one JSON
 * request line, one JSON answer (docs/queue.md), for the queue verbs,
 * gpuctl top and usage, and advise --here (CLI and Python). gpuctld knows
 * the caller by SO_PEERCRED; a socket served by another user than root or
 * the caller is refused. Never prints.
 */
#ifndef GPUCTL_LIB_GPUCTLD_ASK_H
#define GPUCTL_LIB_GPUCTLD_ASK_H

#include <jansson.h>
#include <stddef.h>

/* $GPUCTL_QUEUE_SOCKET, else gpuctld's in authority mode (authority.h), else /run/gpuctl/gpuctld.sock */
const char *gpuctld_socket_path(void);
/*
 * Send req, read the answer (an object with "ok": true). NULL with the
 * reason in err when gpuctld cannot be reached (*reached 0), or answers
 * badly or refuses (*reached 1). timeout_ms > 0 bounds each send and read.
 */
json_t *gpuctld_ask(json_t *req, int timeout_ms, int *reached, char *err, size_t errlen);
/*
 * gpuctld_ask, and the bytes an answer with "rows_bytes" N is followed by (gpuctl queue's table):
 * *rows (malloc'd, NUL-terminated; NULL when the answer has none) and *rowslen.
 */
json_t *gpuctld_ask_rows(json_t *req, int timeout_ms, int *reached, char **rows, size_t *rowslen, char *err,
			 size_t errlen);

#endif
