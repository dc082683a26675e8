/*
 * queue-client.h — the client side of gpuctld's queue socket: one JSON
 * request line, one JSON answer (docs/queue.md). gpuctld knows the caller
 * by SO_PEERCRED; a socket served by another user than root or the caller
 * is refused.
 */
#ifndef GPUCTL_QUEUE_CLIENT_H
#define GPUCTL_QUEUE_CLIENT_H

#include <jansson.h>
#include <stddef.h>

/* $GPUCTL_QUEUE_SOCKET, else /run/gpuctl/gpuctld.sock */
const char *queue_socket_path(void);
/*
 * Send req, read the answer (an object with "ok": true). NULL with the
 * reason in err when gpuctld cannot be reached (*reached 0), or answers
 * badly or refuses (*reached 1). timeout_ms > 0 bounds each send and read.
 */
json_t *queue_ask(json_t *req, int timeout_ms, int *reached, char *err, size_t errlen);

#endif
