/* nq: a wake channel from any thread to a libuv loop, with no lock and no busy mark: the sender
 * writes a few bytes, the loop's poll handle sees them readable. Linux: one eventfd; elsewhere
 * on POSIX a pipe; Windows: a connected pair of loopback TCP sockets (libuv polls sockets only
 * there). Both ends are non-blocking, and writing to one whose reader is gone is harmless, so a
 * thread that outlives the loop's handle may still send.
 */
#ifndef NQ_WAKE_H
#define NQ_WAKE_H

#include <uv.h>

typedef struct nq_wake_s {
  uv_os_sock_t rd, wr; /* the same eventfd on Linux */
  int open;
} nq_wake_t;

/* Open the channel. 0 or NQ_EIO. */
int nq_wake_open(nq_wake_t *w);

/* Wake the reader (any thread). A full channel already holds a wake: nothing is lost. */
void nq_wake_send(nq_wake_t *w);

/* The loop's side: poll the read end (uv_poll_init or, on Windows, uv_poll_init_socket). */
int nq_wake_poll_init(uv_loop_t *loop, uv_poll_t *p, nq_wake_t *w);

/* Read every wake sent so far (the loop, in its poll callback). */
void nq_wake_drain(nq_wake_t *w);

/* Close both ends (after the poll handle is closed, and no thread sends any more). */
void nq_wake_close(nq_wake_t *w);

#endif
