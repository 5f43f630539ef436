/* nq: TLS connections over libuv with OpenSSL memory BIOs, carrying JSON frames.
 *
 * Data path:  socket --uv_read--> rbio --SSL_read--> framebuf --pop--> on_frame
 *             nq_conn_send --encode--> SSL_write --> wbio --uv_write--> socket
 * See conn.h for the life cycle and the callback contract, docs/tls.md for the reasons.
 */
#include "nq/conn.h"
#include "nq/frame.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "nq/tls.h"

#include <arpa/inet.h>
#include <assert.h>
#include <limits.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>

struct nq_conn_s {
  uv_tcp_t tcp;
  uv_timer_t timer; /* handshake deadline, then idle check, then linger deadline */
  uv_connect_t connect_req;
  uv_shutdown_t shutdown_req;
  uv_getaddrinfo_t gai_req;
  uv_loop_t *loop;
  nq_conn_opts_t opts;
  nq_conn_state_t state;
  SSL *ssl;  /* owns rbio and wbio */
  BIO *rbio; /* ciphertext from the peer, fed by the read callback */
  BIO *wbio; /* ciphertext for the peer, drained by conn_flush */
  nq_framebuf_t in;
  size_t queued;    /* bytes in uv_write requests not completed yet */
  uint64_t last_rx; /* uv_now() of the last read, for the idle check */
  int open_handles; /* tcp + timer until their close callbacks ran */
  unsigned notify : 1;        /* the owner has the connection: callbacks may run */
  unsigned reading : 1;
  unsigned paused : 1;        /* reading stopped because of queued output */
  unsigned held : 1;          /* reading stopped because the owner asked (nq_conn_hold) */
  unsigned eof : 1;           /* the peer's FIN (or a read error) was seen */
  unsigned shutdown_done : 1; /* our FIN went out after all queued writes */
  unsigned gai_pending : 1;   /* a getaddrinfo request is outstanding */
  unsigned ssl_fatal : 1;     /* OpenSSL failed: SSL_shutdown must not be called */
  unsigned failed : 1;        /* conn_fail ran: on_error is (being) called, no more sends */
  unsigned heard : 1;         /* at least one byte came from the peer */
  unsigned answered : 1;      /* at least one byte went to the peer (a server: a whole
                                 ClientHello came, and its handshake answer went out) */
  struct sockaddr_storage peer_sa; /* ss_family 0 until known */
  char peer[80];
  char errstr[320]; /* room for a hostname mismatch and the certificate's names */
};

/* Socket reads and TLS plaintext go through buffers that live only during one callback: an
 * idle connection (most of them) then holds no read buffer at all. */
#define CONN_RBUF 16384

typedef struct {
  uv_write_t req;
  nq_conn_t *conn;
  size_t len;
  char data[]; /* the ciphertext; must live until the write callback */
} conn_wreq_t;

enum { FAIL_GRACEFUL = 0, FAIL_ABORT = 1 };

static void conn_process_input(nq_conn_t *c);
static void on_timer(uv_timer_t *t);

#if defined(__GNUC__)
__attribute__((format(NQ_PRINTF, 3, 4)))
#endif
static void conn_log(const nq_conn_t *c, int level, const char *fmt, ...) {
  if (!nq_log_enabled(level)) return;
  char msg[NQ_LOG_LINE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *tag = c->opts.tag;
  nq_log(level, "%s%s%s: %s", tag ? tag : "", tag ? " " : "", c->peer[0] ? c->peer : "-", msg);
}

/* ---- teardown ---- */

/* The memory goes only when every handle's close callback has run and no request is pending:
 * libuv may still hold pointers into the struct until then. */
static void conn_maybe_free(nq_conn_t *c) {
  if (c->open_handles > 0 || c->gai_pending) return;
  assert(c->state == NQ_CONN_CLOSED); /* handles are closed only by conn_close_handles */
  if (c->notify && c->opts.on_close) c->opts.on_close(c);
  SSL_free(c->ssl);
  nq_framebuf_free(&c->in);
  free(c);
}

static void on_handle_closed(uv_handle_t *h) {
  nq_conn_t *c = h->data;
  assert(c->open_handles > 0);
  if (--c->open_handles == 0) conn_maybe_free(c);
}

/* Final step of every close: libuv cancels the pending requests (their callbacks see
 * UV_ECANCELED and must not touch anything but the conn's counters) and then calls
 * on_handle_closed for each handle; the last one frees the connection. */
static void conn_close_handles(nq_conn_t *c) {
  if (c->state == NQ_CONN_CLOSED) return;
  c->state = NQ_CONN_CLOSED;
  c->reading = 0;
  if (c->gai_pending) uv_cancel((uv_req_t *)&c->gai_req);
  uv_close((uv_handle_t *)&c->timer, on_handle_closed);
  uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
}

/* ---- I/O helpers ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)h;
  (void)suggested;
  /* Freed by on_read, which always follows; a NULL base makes libuv report UV_ENOBUFS. */
  char *b = malloc(CONN_RBUF);
  *buf = uv_buf_init(b, b ? CONN_RBUF : 0);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static int conn_read_start(nq_conn_t *c) {
  if (c->reading || c->eof) return 0;
  int r = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
  if (r == 0) c->reading = 1;
  return r;
}

static void conn_read_stop(nq_conn_t *c) {
  if (!c->reading) return;
  uv_read_stop((uv_stream_t *)&c->tcp);
  c->reading = 0;
}

/* Input is stalled while our output has not drained (paused) or the owner holds it (held). */
static int conn_stalled(const nq_conn_t *c) {
  return c->paused || c->held;
}

#if defined(__GNUC__)
__attribute__((format(NQ_PRINTF, 5, 6)))
#endif
static void conn_fail(nq_conn_t *c, int status, int how, const char *frame_code,
                      const char *fmt, ...);

/* Deliver the frames left buffered while input was stalled, then read again. */
static void conn_resume(nq_conn_t *c) {
  if (c->state != NQ_CONN_OPEN || conn_stalled(c)) return;
  conn_process_input(c);
  if (c->state == NQ_CONN_OPEN && !conn_stalled(c) && conn_read_start(c) < 0)
    conn_fail(c, NQ_EIO, FAIL_ABORT, NULL, "read start failed");
}

static void on_write(uv_write_t *req, int status) {
  conn_wreq_t *w = req->data;
  nq_conn_t *c = w->conn;
  assert(c->queued >= w->len);
  c->queued -= w->len;
  free(w);
  if (c->state == NQ_CONN_CLOSED) return;
  if (status < 0) {
    if (c->state == NQ_CONN_CLOSING) conn_close_handles(c);
    else conn_fail(c, NQ_EIO, FAIL_ABORT, NULL, "write: %s", uv_strerror(status));
    return;
  }
  /* Resume at half the high-water mark rather than at it, so a busy peer does not flip us
   * between reading and not reading on every write. An owner's hold outlasts the drain. */
  if (c->paused && c->queued <= c->opts.high_water / 2) {
    c->paused = 0;
    conn_resume(c);
  }
}

/* Hand everything OpenSSL has written to wbio to libuv, one request per call, keeping the
 * ciphertext alive in the request until on_write. Returns 0 or a negative libuv error. */
static int conn_flush(nq_conn_t *c) {
  size_t pending;
  while ((pending = BIO_ctrl_pending(c->wbio)) > 0) {
    if (pending > INT_MAX) pending = INT_MAX;
    conn_wreq_t *w = malloc(sizeof *w + pending);
    if (!w) return UV_ENOMEM;
    int n = BIO_read(c->wbio, w->data, (int)pending);
    if (n <= 0) {
      free(w);
      return UV_EIO;
    }
    w->conn = c;
    w->len = (size_t)n;
    w->req.data = w;
    uv_buf_t b = uv_buf_init(w->data, (unsigned)n);
    int r = uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_write);
    if (r < 0) {
      free(w);
      return r;
    }
    c->queued += (size_t)n;
    c->answered = 1;
  }
  return 0;
}

/* ---- closing ---- */

static void on_shutdown(uv_shutdown_t *req, int status) {
  nq_conn_t *c = req->data;
  if (status == UV_ECANCELED || c->state == NQ_CONN_CLOSED) return;
  c->shutdown_done = 1;
  /* Close once both directions are done. Closing with unread input would make the kernel send
   * a RST, which can destroy our last frame before the peer reads it. */
  if (status < 0 || c->eof) conn_close_handles(c);
}

/* Enter CLOSING: everything queued (error frame, close_notify) goes out, then our FIN; we then
 * read and discard until the peer's FIN, or until the linger timeout. */
static void conn_begin_linger(nq_conn_t *c) {
  nq_conn_state_t prev = c->state;
  if (prev >= NQ_CONN_CLOSING) return;
  c->state = NQ_CONN_CLOSING;
  if (prev == NQ_CONN_CONNECTING) {
    conn_close_handles(c);
    return;
  }
  c->paused = 0;
  c->held = 0;
  uv_timer_start(&c->timer, on_timer, c->opts.linger_ms, 0);
  c->shutdown_req.data = c;
  if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) < 0 ||
      conn_read_start(c) < 0)
    conn_close_handles(c);
}

void nq_conn_close(nq_conn_t *c, const char *err_code, const char *message) {
  nq_error_msg_t em = {nq_errcode_parse(err_code ? err_code : ""), err_code, message, 1, -1, 0, 0};
  nq_conn_close_error(c, err_code ? &em : NULL);
}

void nq_conn_close_error(nq_conn_t *c, const nq_error_msg_t *em) {
  if (!c || c->state >= NQ_CONN_CLOSING) return;
  if (c->state == NQ_CONN_OPEN) {
    if (em && !c->ssl_fatal) {
      json_t *e = nq_error_pack(em);
      uint8_t *buf = NULL;
      size_t len = 0;
      /* Best effort: if the frame cannot be built, closing is still right. */
      if (e && nq_frame_encode(e, &buf, &len) == 0) {
        ERR_clear_error();
        if (SSL_write(c->ssl, buf, (int)len) <= 0) c->ssl_fatal = 1;
      }
      free(buf);
      json_decref(e);
    }
    if (!c->ssl_fatal) {
      ERR_clear_error();
      SSL_shutdown(c->ssl); /* queues close_notify; we do not wait for the peer's */
    }
    ERR_clear_error();
  }
  /* In HANDSHAKE this still sends what OpenSSL queued, e.g. the alert of a failed handshake. */
  if (conn_flush(c) < 0) {
    conn_close_handles(c);
    return;
  }
  conn_begin_linger(c);
}

void nq_conn_abort(nq_conn_t *c) {
  if (c) conn_close_handles(c);
}

static void conn_fail(nq_conn_t *c, int status, int how, const char *frame_code,
                      const char *fmt, ...) {
  /* `failed` keeps a send from inside on_error from failing (and calling on_error) again. */
  if (c->state >= NQ_CONN_CLOSING || c->failed) return;
  c->failed = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->errstr, sizeof c->errstr, fmt, ap);
  va_end(ap);
  conn_log(c, NQ_LOG_DEBUG, "failed (%s): %s", nq_strerror(status), c->errstr);
  if (c->notify && c->opts.on_error) c->opts.on_error(c, status);
  if (c->state >= NQ_CONN_CLOSING) return; /* the owner closed it in on_error */
  if (how == FAIL_ABORT) conn_close_handles(c);
  else nq_conn_close(c, frame_code, c->errstr);
}

/* ---- timers ---- */

static void on_timer(uv_timer_t *t) {
  nq_conn_t *c = t->data;
  uint64_t idle = c->opts.idle_timeout_ms;
  switch (c->state) {
  case NQ_CONN_CONNECTING:
    conn_fail(c, NQ_EIO, FAIL_ABORT, NULL, "connect timeout (%llu ms)",
              (unsigned long long)c->opts.handshake_timeout_ms);
    break;
  case NQ_CONN_HANDSHAKE:
    conn_fail(c, NQ_ETLS, FAIL_GRACEFUL, NULL, "handshake timeout (%llu ms)",
              (unsigned long long)c->opts.handshake_timeout_ms);
    break;
  case NQ_CONN_OPEN: {
    if (!idle) break;
    /* One timer per connection re-armed lazily: reads only stamp last_rx, which is far cheaper
     * than restarting the timer on every read. */
    uint64_t since = uv_now(c->loop) - c->last_rx;
    if (since < idle) {
      uv_timer_start(t, on_timer, idle - since, 0);
      break;
    }
    if (c->paused)
      conn_fail(c, NQ_EIO, FAIL_ABORT, NULL, "peer not reading (%zu bytes queued)", c->queued);
    else
      conn_fail(c, NQ_EIO, FAIL_GRACEFUL, nq_errcode_name(NQ_ERR_TIMEOUT), "idle for %llu ms",
                (unsigned long long)since);
    break;
  }
  case NQ_CONN_CLOSING:
    conn_log(c, NQ_LOG_DEBUG, "linger timeout, closing");
    conn_close_handles(c);
    break;
  case NQ_CONN_CLOSED:
    break;
  }
}

static void conn_arm_idle(nq_conn_t *c) {
  c->last_rx = uv_now(c->loop);
  if (c->opts.idle_timeout_ms) uv_timer_start(&c->timer, on_timer, c->opts.idle_timeout_ms, 0);
  else uv_timer_stop(&c->timer);
}

/* ---- TLS ---- */

static void conn_frame_error(nq_conn_t *c, int r) {
  const char *code = nq_framebuf_errcode(&c->in);
  if (r == NQ_ENOMEM || !code)
    conn_fail(c, r, FAIL_ABORT, NULL, "frame buffer: %s", nq_strerror(r));
  else if (r == NQ_ETOOBIG)
    conn_fail(c, r, FAIL_GRACEFUL, code, "frame longer than %d bytes", NQ_FRAME_MAX);
  else if (c->in.errcode == NQ_ERR_BAD_FRAME)
    conn_fail(c, r, FAIL_GRACEFUL, code, "frame of length 0");
  else
    conn_fail(c, r, FAIL_GRACEFUL, code,
              "payload is not a UTF-8 JSON object (unique keys, depth <= %d)", NQ_FRAME_MAX_DEPTH);
}

/* Decrypt everything available and deliver complete frames. Following the memory-BIO rules,
 * SSL_read is called until it wants more input and nothing is pending inside OpenSSL; but while
 * paused we stop before decrypting more, so unread input stays bounded by what is in rbio. */
static void conn_process_input(nq_conn_t *c) {
  for (;;) {
    while (c->state == NQ_CONN_OPEN && !conn_stalled(c)) {
      json_t *msg;
      int r = nq_framebuf_pop(&c->in, &msg);
      if (r == NQ_EAGAIN) break;
      if (r < 0) {
        conn_frame_error(c, r);
        return;
      }
      if (c->opts.on_frame) c->opts.on_frame(c, msg);
      json_decref(msg);
    }
    if (c->state != NQ_CONN_OPEN || conn_stalled(c)) return;

    char plain[CONN_RBUF];
    ERR_clear_error();
    int n = SSL_read(c->ssl, plain, (int)sizeof plain);
    if (n > 0) {
      int r = nq_framebuf_append(&c->in, plain, (size_t)n);
      if (r < 0) {
        conn_frame_error(c, r);
        return;
      }
      continue;
    }
    int err = SSL_get_error(c->ssl, n);
    if (err == SSL_ERROR_WANT_READ) {
      if (SSL_pending(c->ssl) > 0) continue;
      break;
    }
    if (err == SSL_ERROR_ZERO_RETURN) {
      conn_log(c, NQ_LOG_DEBUG, "peer sent close_notify");
      nq_conn_close(c, NULL, NULL);
      return;
    }
    char e[160];
    c->ssl_fatal = 1;
    nq_tls_errors(e, sizeof e);
    conn_fail(c, NQ_ETLS, FAIL_GRACEFUL, NULL, "TLS read: %s", e[0] ? e : "error");
    return;
  }
  /* Reading can make OpenSSL write (alerts, TLS 1.3 key-update replies). */
  int r = conn_flush(c);
  if (r < 0) conn_fail(c, NQ_EIO, FAIL_ABORT, NULL, "write: %s", uv_strerror(r));
}

static void conn_handshake(nq_conn_t *c) {
  ERR_clear_error();
  int r = SSL_do_handshake(c->ssl);
  if (r == 1) {
    c->state = NQ_CONN_OPEN;
    conn_arm_idle(c);
    int fr = conn_flush(c);
    if (fr < 0) {
      conn_fail(c, NQ_EIO, FAIL_ABORT, NULL, "write: %s", uv_strerror(fr));
      return;
    }
    conn_log(c, NQ_LOG_DEBUG, "handshake done: %s %s", SSL_get_version(c->ssl),
             SSL_get_cipher_name(c->ssl));
    if (c->opts.on_open) c->opts.on_open(c);
    /* Application data may have arrived together with the last handshake message. */
    if (c->state == NQ_CONN_OPEN) conn_process_input(c);
    return;
  }
  int err = SSL_get_error(c->ssl, r);
  if (err == SSL_ERROR_WANT_READ) {
    int fr = conn_flush(c); /* our next handshake flight */
    if (fr < 0) conn_fail(c, NQ_EIO, FAIL_ABORT, NULL, "write: %s", uv_strerror(fr));
    return;
  }
  char e[300];
  nq_tls_handshake_error(c->ssl, e, sizeof e);
  c->ssl_fatal = 1;
  /* Graceful: the alert OpenSSL queued tells the peer why, which beats a bare reset. */
  conn_fail(c, NQ_ETLS, FAIL_GRACEFUL, NULL, "handshake failed: %s", e[0] ? e : "error");
}

static void conn_on_read(nq_conn_t *c, ssize_t nread, const uv_buf_t *buf) {
  uv_stream_t *s = (uv_stream_t *)&c->tcp;
  if (nread == 0) return;
  if (nread < 0) {
    /* libuv stops reading by itself on EOF; on other errors we stop before closing anyway. */
    c->eof = 1;
    c->reading = 0;
    if (nread != UV_EOF) uv_read_stop(s);
    switch (c->state) {
    case NQ_CONN_CLOSING:
      if (nread != UV_EOF || c->shutdown_done) conn_close_handles(c);
      break;
    case NQ_CONN_HANDSHAKE:
      if (nread == UV_EOF)
        conn_fail(c, NQ_ETLS, FAIL_GRACEFUL, NULL, "peer closed during handshake");
      else
        conn_fail(c, NQ_ETLS, FAIL_ABORT, NULL, "read: %s", uv_strerror((int)nread));
      break;
    case NQ_CONN_OPEN:
      if (nread == UV_EOF) {
        /* Without close_notify; frames are self-delimiting, so at most a partial frame is lost,
         * which is the same as the peer never having sent it. */
        conn_log(c, NQ_LOG_DEBUG, "peer closed without close_notify");
        nq_conn_close(c, NULL, NULL);
      } else {
        conn_fail(c, NQ_EIO, FAIL_ABORT, NULL, "read: %s", uv_strerror((int)nread));
      }
      break;
    default:
      break;
    }
    return;
  }
  if (c->state != NQ_CONN_HANDSHAKE && c->state != NQ_CONN_OPEN) return; /* lingering */
  c->last_rx = uv_now(c->loop);
  c->heard = 1;
  if (BIO_write(c->rbio, buf->base, (int)nread) != (int)nread) {
    conn_fail(c, NQ_ENOMEM, FAIL_ABORT, NULL, "out of memory");
    return;
  }
  if (c->state == NQ_CONN_HANDSHAKE) conn_handshake(c);
  else conn_process_input(c);
  /* Bytes that arrived with the read that stalled input wait in rbio; stop asking for more. */
  if (c->state == NQ_CONN_OPEN && conn_stalled(c)) conn_read_stop(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  conn_on_read(s->data, nread, buf);
  free(buf->base);
}

/* ---- construction ---- */

static void conn_set_peer(nq_conn_t *c) {
  struct sockaddr_storage ss;
  int len = sizeof ss;
  char ip[INET6_ADDRSTRLEN] = "";
  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) != 0) return;
  c->peer_sa = ss;
  if (ss.ss_family == AF_INET) {
    struct sockaddr_in *a = (struct sockaddr_in *)&ss;
    uv_ip4_name(a, ip, sizeof ip);
    snprintf(c->peer, sizeof c->peer, "%s:%d", ip, ntohs(a->sin_port));
  } else if (ss.ss_family == AF_INET6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
    uv_ip6_name(a, ip, sizeof ip);
    snprintf(c->peer, sizeof c->peer, "[%s]:%d", ip, ntohs(a->sin6_port));
  }
}

static void conn_tune_tcp(nq_conn_t *c) {
  /* Frames are small request/response messages: Nagle would only add latency. Keepalive
   * notices peers that vanished without a FIN even when no idle timeout is set. */
  uv_tcp_nodelay(&c->tcp, 1);
  uv_tcp_keepalive(&c->tcp, 1, 60);
  /* A fixed size turns the kernel's auto-tuning off: a peer that sends without reading can then
   * pin only this much kernel memory on each side, rather than megabytes. */
  if (c->opts.sock_buf > 0) {
    int v = c->opts.sock_buf;
    uv_send_buffer_size((uv_handle_t *)&c->tcp, &v);
    v = c->opts.sock_buf;
    uv_recv_buffer_size((uv_handle_t *)&c->tcp, &v);
  }
}

/* Allocate a connection with its SSL object and initialised handles (state CONNECTING,
 * notify off). Past the point where the handles exist, a failed construction must end with
 * conn_close_handles(), which frees it without calling the owner. */
static int conn_new(uv_loop_t *loop, nq_tls_ctx_t *ctx, const nq_conn_opts_t *opts,
                    nq_conn_t **out) {
  *out = NULL;
  nq_conn_t *c = calloc(1, sizeof *c);
  if (!c) return NQ_ENOMEM;
  if (opts) c->opts = *opts;
  if (!c->opts.handshake_timeout_ms) c->opts.handshake_timeout_ms = NQ_CONN_HANDSHAKE_TIMEOUT_MS;
  if (!c->opts.linger_ms) c->opts.linger_ms = NQ_CONN_LINGER_MS;
  if (!c->opts.high_water) c->opts.high_water = NQ_CONN_HIGH_WATER;
  if (!c->opts.hard_limit) c->opts.hard_limit = NQ_CONN_HARD_LIMIT;
  if (c->opts.hard_limit < c->opts.high_water) c->opts.hard_limit = c->opts.high_water;
  c->loop = loop;
  c->state = NQ_CONN_CONNECTING;
  nq_framebuf_init(&c->in);

  int r = NQ_ETLS;
  ERR_clear_error();
  c->ssl = SSL_new(nq_tls_ctx_ssl(ctx));
  if (!c->ssl) goto fail;
  c->rbio = BIO_new(BIO_s_mem());
  c->wbio = BIO_new(BIO_s_mem());
  if (!c->rbio || !c->wbio) {
    BIO_free(c->rbio);
    BIO_free(c->wbio);
    r = NQ_ENOMEM;
    goto fail;
  }
  /* An empty read BIO means "no data yet, retry", never end-of-file: EOF comes from the socket. */
  BIO_set_mem_eof_return(c->rbio, -1);
  BIO_set_mem_eof_return(c->wbio, -1);
  SSL_set_bio(c->ssl, c->rbio, c->wbio);

  r = NQ_EIO;
  if (uv_tcp_init(loop, &c->tcp) != 0) goto fail;
  c->tcp.data = c;
  c->open_handles = 1;
  if (uv_timer_init(loop, &c->timer) != 0) {
    /* Cannot happen with libuv today; handled so the tcp handle is not leaked if it ever does. */
    c->state = NQ_CONN_CLOSED;
    uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
    return NQ_EIO;
  }
  c->timer.data = c;
  c->open_handles = 2;
  *out = c;
  return 0;
fail:
  ERR_clear_error();
  SSL_free(c->ssl);
  free(c);
  return r;
}

static void on_reject_closed(uv_handle_t *h) {
  free(h);
}

/* Accept and immediately close the pending connection. libuv stops watching a listener whose
 * connection callback did not call uv_accept, so a connection we cannot serve must still be
 * taken off the queue, or the whole server would stop accepting. */
static void conn_reject_pending(uv_loop_t *loop, uv_stream_t *server) {
  uv_tcp_t *t = malloc(sizeof *t);
  if (!t) return;
  if (uv_tcp_init(loop, t) != 0) {
    free(t);
    return;
  }
  uv_accept(server, (uv_stream_t *)t);
  uv_close((uv_handle_t *)t, on_reject_closed);
}

int nq_conn_accept(uv_loop_t *loop, uv_stream_t *server, nq_tls_ctx_t *ctx,
                   const nq_conn_opts_t *opts, nq_conn_t **out) {
  if (out) *out = NULL;
  if (!loop || !server) return NQ_EINVAL;
  nq_conn_t *c;
  int r = nq_tls_ctx_is_server(ctx) ? conn_new(loop, ctx, opts, &c) : NQ_EINVAL;
  if (r < 0) {
    conn_reject_pending(loop, server);
    return r;
  }
  if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
    conn_close_handles(c);
    return NQ_EIO;
  }
  conn_set_peer(c);
  conn_tune_tcp(c);
  SSL_set_accept_state(c->ssl);
  c->state = NQ_CONN_HANDSHAKE;
  uv_timer_start(&c->timer, on_timer, c->opts.handshake_timeout_ms, 0);
  if (conn_read_start(c) < 0) {
    conn_close_handles(c);
    return NQ_EIO;
  }
  c->notify = 1;
  conn_log(c, NQ_LOG_DEBUG, "accepted");
  if (out) *out = c;
  return 0;
}

static void on_connect(uv_connect_t *req, int status) {
  nq_conn_t *c = req->data;
  if (status == UV_ECANCELED || c->state != NQ_CONN_CONNECTING) return;
  if (status < 0) {
    conn_fail(c, NQ_EIO, FAIL_ABORT, NULL, "connect %s: %s", c->peer, uv_strerror(status));
    return;
  }
  conn_set_peer(c);
  conn_tune_tcp(c);
  c->state = NQ_CONN_HANDSHAKE;
  if (conn_read_start(c) < 0) {
    conn_fail(c, NQ_EIO, FAIL_ABORT, NULL, "read start failed");
    return;
  }
  conn_handshake(c); /* sends the ClientHello */
}

static int conn_start_connect(nq_conn_t *c, const struct sockaddr *addr) {
  c->connect_req.data = c;
  return uv_tcp_connect(&c->connect_req, &c->tcp, addr, on_connect);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res) {
  nq_conn_t *c = req->data;
  c->gai_pending = 0;
  if (c->state == NQ_CONN_CLOSED) {
    if (res) uv_freeaddrinfo(res);
    conn_maybe_free(c);
    return;
  }
  if (status < 0) {
    if (res) uv_freeaddrinfo(res);
    conn_fail(c, NQ_EIO, FAIL_ABORT, NULL, "resolve %s: %s", c->peer, uv_strerror(status));
    return;
  }
  /* Prefer IPv4: servers commonly listen on 0.0.0.0 only, while "localhost" may resolve to ::1
   * first. Only one address is tried; the caller's reconnect logic covers the rest. */
  struct addrinfo *pick = res;
  for (struct addrinfo *a = res; a; a = a->ai_next)
    if (a->ai_family == AF_INET) {
      pick = a;
      break;
    }
  int r = conn_start_connect(c, pick->ai_addr);
  uv_freeaddrinfo(res);
  if (r < 0) conn_fail(c, NQ_EIO, FAIL_ABORT, NULL, "connect %s: %s", c->peer, uv_strerror(r));
}


int nq_conn_connect(uv_loop_t *loop, const char *host, int port, nq_tls_ctx_t *ctx,
                    const char *hostname, const nq_conn_opts_t *opts, nq_conn_t **out) {
  if (out) *out = NULL;
  if (!loop || !host || !*host || !ctx || nq_tls_ctx_is_server(ctx) || !hostname ||
      !*hostname || strlen(hostname) > 253 || port < 1 || port > 65535)
    return NQ_EINVAL;
  nq_conn_t *c;
  int r = conn_new(loop, ctx, opts, &c);
  if (r < 0) return r;
  snprintf(c->peer, sizeof c->peer, "%s:%d", host, port);
  r = nq_tls_pin_peer(c->ssl, hostname);
  if (r < 0) goto fail;
  SSL_set_connect_state(c->ssl);

  struct sockaddr_storage ss;
  if (uv_ip4_addr(host, port, (struct sockaddr_in *)&ss) == 0 ||
      uv_ip6_addr(host, port, (struct sockaddr_in6 *)&ss) == 0) {
    if (conn_start_connect(c, (struct sockaddr *)&ss) < 0) {
      r = NQ_EIO;
      goto fail;
    }
  } else {
    char ps[8];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    c->gai_req.data = c;
    if (uv_getaddrinfo(loop, &c->gai_req, on_resolved, host, ps, &hints) < 0) {
      r = NQ_EIO;
      goto fail;
    }
    c->gai_pending = 1;
  }
  uv_timer_start(&c->timer, on_timer, c->opts.handshake_timeout_ms, 0);
  c->notify = 1;
  if (out) *out = c;
  return 0;
fail:
  ERR_clear_error();
  conn_close_handles(c);
  return r;
}

/* ---- sending ---- */

static int conn_send_plain(nq_conn_t *c, const void *data, size_t len) {
  if (len > INT_MAX) return NQ_ETOOBIG;
  ERR_clear_error();
  int n = SSL_write(c->ssl, data, (int)len);
  if (n <= 0) {
    char e[160];
    c->ssl_fatal = 1;
    nq_tls_errors(e, sizeof e);
    conn_fail(c, NQ_ETLS, FAIL_ABORT, NULL, "TLS write: %s", e[0] ? e : "error");
    return NQ_ETLS;
  }
  int r = conn_flush(c);
  if (r < 0) {
    conn_fail(c, NQ_EIO, FAIL_ABORT, NULL, "write: %s", uv_strerror(r));
    return NQ_EIO;
  }
  if (c->queued > c->opts.hard_limit) {
    conn_fail(c, NQ_ETOOBIG, FAIL_ABORT, NULL, "peer not reading: %zu bytes queued", c->queued);
    return NQ_ETOOBIG;
  }
  /* Backpressure: a peer that does not read our replies gets no more of its requests read. */
  if (c->queued > c->opts.high_water && !c->paused) {
    c->paused = 1;
    conn_read_stop(c);
  }
  return 0;
}

int nq_conn_send(nq_conn_t *c, const json_t *msg) {
  if (!c || !msg) return NQ_EINVAL;
  if (c->state != NQ_CONN_OPEN || c->failed) return NQ_ENOTOPEN;
  uint8_t *buf;
  size_t len;
  int r = nq_frame_encode(msg, &buf, &len);
  if (r < 0) return r;
  r = conn_send_plain(c, buf, len);
  free(buf);
  return r;
}

int nq_conn_send_new(nq_conn_t *c, json_t *msg) {
  if (!msg) return NQ_ENOMEM;
  int r = nq_conn_send(c, msg);
  json_decref(msg);
  return r;
}

int nq_conn_send_raw(nq_conn_t *c, const void *data, size_t len) {
  if (!c || (!data && len)) return NQ_EINVAL;
  if (c->state != NQ_CONN_OPEN || c->failed) return NQ_ENOTOPEN;
  if (len == 0) return 0;
  return conn_send_plain(c, data, len);
}

/* ---- accessors ---- */

void *nq_conn_data(const nq_conn_t *c) {
  return c->opts.data;
}

void nq_conn_set_data(nq_conn_t *c, void *data) {
  c->opts.data = data;
}

nq_conn_state_t nq_conn_state(const nq_conn_t *c) {
  return c->state;
}

const char *nq_conn_state_name(nq_conn_state_t s) {
#define CONN_STATE_NAME(e, name) name,
  static const char *const names[] = {NQ_CONN_STATE_MAP(CONN_STATE_NAME)};
#undef CONN_STATE_NAME
  return (unsigned)s < sizeof names / sizeof *names ? names[s] : "?";
}

const char *nq_conn_peer(const nq_conn_t *c) {
  return c->peer;
}

const char *nq_conn_errstr(const nq_conn_t *c) {
  return c->errstr;
}

int nq_conn_answered(const nq_conn_t *c) { return c->answered; }

int nq_conn_heard(const nq_conn_t *c) {
  if (c->heard) return 1;
  /* Bytes may wait in the kernel, not read yet: a peer accepted in the same burst as many others
   * has had no read callback. */
  uv_os_fd_t fd;
  char b;
  if (uv_fileno((const uv_handle_t *)&c->tcp, &fd) != 0) return 0;
  return recv((uv_os_sock_t)(uintptr_t)fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

int nq_conn_read_any(const nq_conn_t *c) { return c->heard; }

size_t nq_conn_queued(const nq_conn_t *c) {
  return c->queued;
}

void nq_conn_hold(nq_conn_t *c, int on) {
  if (!c || c->state >= NQ_CONN_CLOSING) return;
  if (on) {
    if (c->held) return;
    c->held = 1;
    conn_read_stop(c);
    return;
  }
  if (!c->held) return;
  c->held = 0;
  conn_resume(c);
}

int nq_conn_peer_addr(const nq_conn_t *c, struct sockaddr_storage *out) {
  if (!c->peer_sa.ss_family) return NQ_ENOTFOUND;
  *out = c->peer_sa;
  return 0;
}

void nq_conn_set_idle_timeout(nq_conn_t *c, uint64_t ms) {
  c->opts.idle_timeout_ms = ms;
  if (c->state == NQ_CONN_OPEN) conn_arm_idle(c);
}

const char *nq_conn_tls_version(const nq_conn_t *c) {
  return SSL_is_init_finished(c->ssl) ? SSL_get_version(c->ssl) : "";
}
