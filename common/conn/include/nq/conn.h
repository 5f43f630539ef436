/* nq: one TLS connection on a libuv loop, carrying length-prefixed JSON frames (frame.h).
 *
 * TLS runs over OpenSSL memory BIOs: ciphertext read from the socket is pushed into the read
 * BIO, and whatever OpenSSL writes to the write BIO is handed to uv_write. Nothing ever blocks
 * and everything happens on the loop thread; no function here may be called from another thread.
 *
 * Life cycle (state):
 *   CONNECTING  client only: resolving the host and connecting TCP
 *   HANDSHAKE   TLS handshake in progress (bounded by the handshake timeout)
 *   OPEN        frames flow; on_open has been called
 *   CLOSING     no more frames either way; flushing, close_notify sent, waiting for the peer's
 *               FIN (bounded by the linger timeout) so a final error frame is not lost to a RST
 *   CLOSED      handles are closing; on_close comes next, then the memory is freed
 *
 * Callback contract, for a connection that nq_conn_accept/nq_conn_connect returned with 0:
 *   - on_open once, if the handshake completes (the client side has verified the server).
 *   - on_frame for each complete frame, in order. `msg` is borrowed: it is released when the
 *     callback returns, so json_incref it to keep it.
 *   - on_error at most once, with a negative NQ_E* status, when the connection fails (connect
 *     failure, TLS error, bad frame, timeout, peer not draining...); nq_conn_errstr() says more.
 *     From on_error on, nq_conn_send returns NQ_ENOTOPEN; calling nq_conn_close inside on_error
 *     picks the error frame sent (if the failure allows one), otherwise the layer's default is
 *     used. The connection is closing when it returns. A peer closing cleanly is not an error.
 *   - on_close exactly once, last. After it returns the nq_conn_t is freed; the owner releases
 *     its per-connection state there (and not in on_error).
 * Any callback may call nq_conn_send or nq_conn_close on its connection. on_error may also run
 * from inside nq_conn_send when a send proves fatal (see there).
 * If accept/connect returns an error, no callback is ever called for that attempt.
 *
 * Programs using this must ignore SIGPIPE: libuv writes with write(2), and a peer that resets
 * the connection would otherwise kill the process.
 */
#ifndef NQ_CONN_H
#define NQ_CONN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "nq/frame.h"
#include "nq/proto.h"
#include "nq/tls.h"

#define NQ_CONN_STATE_MAP(X)                                                                     \
  X(CONNECTING, "connecting")                                                                    \
  X(HANDSHAKE, "handshake")                                                                      \
  X(OPEN, "open")                                                                                \
  X(CLOSING, "closing")                                                                          \
  X(CLOSED, "closed")
typedef enum {
#define NQ_CONN_ENUM_ONE(e, name) NQ_CONN_##e,
  NQ_CONN_STATE_MAP(NQ_CONN_ENUM_ONE)
#undef NQ_CONN_ENUM_ONE
} nq_conn_state_t;

/* Error frames this layer sends by itself: bad_frame, frame_too_big, bad_json (frame.h) and
 * timeout (idle), all fatal (proto.h's codes). */

/* Defaults used for a zero field in nq_conn_opts_t. */
#define NQ_CONN_HANDSHAKE_TIMEOUT_MS 10000
#define NQ_CONN_LINGER_MS 2000
#define NQ_CONN_HIGH_WATER (1u << 20)
#define NQ_CONN_HARD_LIMIT (8u << 20)

typedef struct nq_conn_s nq_conn_t;

typedef struct nq_conn_opts_s {
  void (*on_open)(nq_conn_t *c);
  void (*on_frame)(nq_conn_t *c, json_t *msg);
  void (*on_error)(nq_conn_t *c, int status);
  void (*on_close)(nq_conn_t *c);
  void *data;                    /* the owner's pointer, see nq_conn_data() */
  uint64_t handshake_timeout_ms; /* connect + handshake must finish within this; 0: default */
  uint64_t idle_timeout_ms;      /* close when nothing arrives for this long; 0: never */
  uint64_t linger_ms;            /* most time spent in CLOSING; 0: default */
  size_t high_water;             /* stop reading while more output is queued; 0: default */
  size_t hard_limit;             /* fail the connection past this much queued output; 0: def. */
  int sock_buf;                  /* the socket's kernel send and receive buffer sizes (bytes,
                                    as SO_SNDBUF/SO_RCVBUF: Linux doubles them); 0: the
                                    kernel's default, auto-tuned up to its maximum */
  const char *tag;               /* label for log lines, e.g. "srv"; must outlive the conn */
} nq_conn_opts_t;

/* Accept a pending connection on a listening `server` stream (call from its connection
 * callback) and start the server-side handshake. `opts` is copied. Returns 0 and *out (out may
 * be NULL), or NQ_EINVAL (not a server context), NQ_EIO (accept failed), NQ_ENOMEM, NQ_ETLS; on
 * error the pending connection is still taken off the listen queue and closed, so the
 * listener keeps working. */
int nq_conn_accept(uv_loop_t *loop, uv_stream_t *server, nq_tls_ctx_t *ctx,
                   const nq_conn_opts_t *opts, nq_conn_t **out);

/* Connect to host:port (an IP literal, or a name resolved asynchronously; IPv4 addresses are
 * preferred and only the first one is tried) and run the client handshake, verifying the server
 * certificate for `hostname` (a DNS name, also sent as SNI, or an IP literal matched against
 * IP SubjectAltNames). Success is on_open; failure is on_error then on_close. Returns 0 and
 * *out, or NQ_EINVAL/NQ_EIO/NQ_ENOMEM/NQ_ETLS with no callbacks to come. */
int nq_conn_connect(uv_loop_t *loop, const char *host, int port, nq_tls_ctx_t *ctx,
                    const char *hostname, const nq_conn_opts_t *opts, nq_conn_t **out);

/* Encode `msg` as a frame, encrypt it and queue it for writing; msg is borrowed. Returns 0;
 * NQ_ENOTOPEN if the connection is not OPEN; NQ_EINVAL/NQ_EPROTO/NQ_ETOOBIG if msg cannot be
 * encoded (nothing sent, the connection stays up). Fatal outcomes close the connection and call
 * on_error before returning: NQ_ETOOBIG when queued output passes the hard limit (the peer is
 * not reading), NQ_ETLS or NQ_EIO when encryption or the write fails. */
int nq_conn_send(nq_conn_t *c, const json_t *msg);
/* Same, but takes ownership of msg (which may be NULL: NQ_ENOMEM), as json_object_set_new. */
int nq_conn_send_new(nq_conn_t *c, json_t *msg);
/* Send raw plaintext through TLS without framing; for tests and diagnostics only. */
int nq_conn_send_raw(nq_conn_t *c, const void *data, size_t len);

/* Close the connection. If it is OPEN and err_code (a protocol error code's name, nq_errcode_name)
 * is not NULL, first send that fatal error frame with `message`; then close_notify, then a
 * graceful TCP close. Idempotent; on_close follows asynchronously. No on_error for this. */
void nq_conn_close(nq_conn_t *c, const char *err_code, const char *message);
/* Same with a whole error frame (e.g. `busy` with retry_after); em->fatal should be 1. NULL: no
 * frame. */
void nq_conn_close_error(nq_conn_t *c, const nq_error_msg_t *em);

/* Drop the connection at once: no error frame, no close_notify, queued output discarded. */
void nq_conn_abort(nq_conn_t *c);

void *nq_conn_data(const nq_conn_t *c);
void nq_conn_set_data(nq_conn_t *c, void *data);
nq_conn_state_t nq_conn_state(const nq_conn_t *c);
const char *nq_conn_state_name(nq_conn_state_t s);
/* "ip:port" of the peer ("" until known). */
const char *nq_conn_peer(const nq_conn_t *c);
/* Why the connection failed ("" if it has not). */
const char *nq_conn_errstr(const nq_conn_t *c);
/* 1 once at least one byte came from the peer, read or still waiting in the kernel (a silent TCP
 * connection is 0). */
int nq_conn_heard(const nq_conn_t *c);
/* 1 once this side has sent a byte: on a server, a complete ClientHello came and the handshake
 * answered it. */
int nq_conn_answered(const nq_conn_t *c);
/* 1 once bytes from the peer were read (heard without being read: they wait in the kernel, the
 * owner has not got to the connection yet -- in a burst of hundreds, the last ClientHello is read
 * well after its connection was accepted). A server reads a whole ClientHello and answers it at
 * once, so a peer read from and not answered has sent part of a hello and stopped. */
int nq_conn_read_any(const nq_conn_t *c);
/* Ciphertext bytes handed to libuv whose write has not completed yet. */
size_t nq_conn_queued(const nq_conn_t *c);
/* Stop (on = 1) or resume (on = 0) taking input, whatever the output queue: no reads and no
 * on_frame until resumed, frames already buffered stay buffered. The owner uses it to bound the
 * requests of one peer it has not answered yet. Resuming delivers the buffered frames at once,
 * from inside this call (unless output is still over the high-water mark: then when it drains),
 * so call it where on_frame may run. No effect once the connection is closing. */
void nq_conn_hold(nq_conn_t *c, int on);
/* The peer's address (accepted connections: from accept on; outgoing: once connected).
 * Returns 0, or NQ_ENOTFOUND when it is not known. */
int nq_conn_peer_addr(const nq_conn_t *c, struct sockaddr_storage *out);
/* Change the idle timeout from now on (0: never), e.g. longer once a peer has authenticated. */
void nq_conn_set_idle_timeout(nq_conn_t *c, uint64_t ms);
/* The negotiated protocol, e.g. "TLSv1.3" ("" before the handshake completes). */
const char *nq_conn_tls_version(const nq_conn_t *c);

#endif
