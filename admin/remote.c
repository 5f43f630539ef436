/* nq-admin: remote mode -- one TLS session with nq-server per request (docs/protocol.md):
 * hello (role admin, the admin token), welcome, one `admin` request, its `admin_reply` or
 * `error`, bye. One request and one answer need no event loop: a socket with a deadline, OpenSSL
 * on it, and the wire's framing (nq/frame.h). Messages are built and read through nq/proto.h;
 * what arrives is dispatched by the table below. nq-admin links no libuv. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "nq/frame.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "nq/tls.h"

/* The whole session may take this long (connect + handshake + one request). */
#define REMOTE_TIMEOUT_MS 30000

typedef enum { SESS_HELLO = 0, SESS_REQUEST, SESS_DONE } sess_state_t;

typedef struct {
  const adm_backend_t *b;
  const nq_admin_req_t *req;
  json_t *data;             /* the answer, or NULL with ... */
  nq_proto_err_t *refusal;  /* ... the server's refusal of the request */
  sess_state_t state;
  int closing;   /* stop reading: answered, refused or failed */
  int rc;        /* 0 until something fails, or the final status */
  char err[2048];
  int fd;
  SSL *ssl;
  int64_t deadline; /* monotonic ms */
} sess_t;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fail(sess_t *s, int rc, const char *fmt, const char *a, const char *b) {
  s->closing = 1;
  if (s->rc != 0 || s->state == SESS_DONE) return; /* keep the first (root) cause */
  s->rc = rc;
  snprintf(s->err, sizeof s->err, fmt, a, b);
}

/* Wait until fd is ready for `events` or the session's deadline passes: 0, or NQ_EIO. */
static int wait_fd(sess_t *s, short events) {
  for (;;) {
    int64_t left = s->deadline - now_ms();
    if (left <= 0) return NQ_EIO;
    struct pollfd p = {.fd = s->fd, .events = events};
    int r = poll(&p, 1, (int)left);
    if (r > 0) return 0;
    if (r < 0 && errno != EINTR) return NQ_EIO;
  }
}

/* Drive one SSL call that may want to read or write: 1 (done, *n bytes), 0 (the peer closed),
 * or a negative code (NQ_ETLS, NQ_EIO on time-out). */
static int ssl_io(sess_t *s, int (*op)(SSL *, void *, size_t, size_t *), void *buf, size_t len,
                  size_t *n) {
  for (;;) {
    ERR_clear_error();
    if (op(s->ssl, buf, len, n) == 1) return 1;
    int e = SSL_get_error(s->ssl, 0);
    if (e == SSL_ERROR_ZERO_RETURN) return 0;
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return NQ_ETLS;
    if (wait_fd(s, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT) != 0) return NQ_EIO;
  }
}

static int op_read(SSL *ssl, void *buf, size_t len, size_t *n) {
  return SSL_read_ex(ssl, buf, len, n);
}
static int op_write(SSL *ssl, void *buf, size_t len, size_t *n) {
  return SSL_write_ex(ssl, buf, len, n);
}
static int op_connect(SSL *ssl, void *buf, size_t len, size_t *n) {
  (void)buf, (void)len, (void)n;
  return SSL_connect(ssl) == 1;
}

/* Frame and send one message (a new reference, consumed). */
static int send_msg(sess_t *s, json_t *msg) {
  uint8_t *out = NULL;
  size_t len = 0, n = 0;
  int rc = msg ? nq_frame_encode(msg, &out, &len) : NQ_ENOMEM;
  json_decref(msg);
  for (size_t off = 0; rc == 0 && off < len; off += n) {
    int r = ssl_io(s, op_write, out + off, len - off, &n);
    if (r != 1) rc = r ? r : NQ_EIO;
  }
  free(out);
  return rc;
}

static void send_hello(sess_t *s) {
  nq_hello_t h = {NQ_PROTO_VERSION, NQ_ROLE_ADMIN, s->b->token, NULL, NULL, NULL, 0,
                  "nq-admin " NQ_VERSION_STRING, NULL, 0, 0, 0, 0, NULL};
  if (send_msg(s, nq_hello_pack(&h)) != 0)
    fail(s, NQ_EPROTO, "%s: cannot send hello%s", s->b->desc, "");
}

static void on_welcome(sess_t *s, const json_t *msg) {
  nq_welcome_t w;
  nq_proto_err_t perr;
  if (s->state != SESS_HELLO || nq_welcome_parse(msg, &w, &perr) != 0) {
    fail(s, NQ_EPROTO, "%s sent an unusable welcome (%s)", s->b->desc,
         s->state != SESS_HELLO ? "a second one" : perr.message);
    return;
  }
  s->state = SESS_REQUEST;
  if (send_msg(s, nq_admin_req_pack(s->req)) != 0)
    fail(s, NQ_EPROTO, "%s: cannot send the request%s", s->b->desc, "");
}

static void on_admin_reply(sess_t *s, const json_t *msg) {
  nq_admin_reply_t rep;
  nq_proto_err_t perr;
  if (s->state != SESS_REQUEST || nq_admin_reply_parse(msg, &rep, &perr) != 0) {
    fail(s, NQ_EPROTO, "%s sent an unusable admin_reply (%s)", s->b->desc,
         s->state != SESS_REQUEST ? "before the request" : perr.message);
    return;
  }
  s->data = json_incref(rep.data);
  s->state = SESS_DONE;
  s->closing = 1;
  send_msg(s, nq_bye_pack()); /* a courtesy: the answer is in */
}

static void on_error_msg(sess_t *s, const json_t *msg) {
  nq_error_msg_t e;
  nq_proto_err_t perr;
  char what[300];
  if (nq_error_parse(msg, &e, &perr) != 0) {
    fail(s, NQ_EPROTO, "%s sent a malformed error (%s)", s->b->desc, perr.message);
  } else if (e.code == NQ_ERR_AUTH) {
    fail(s, NQ_EAUTH, "%s refused the admin token (auth: %s); check --token / admin.token",
         s->b->desc, e.message);
  } else if (s->state == SESS_REQUEST && !e.fatal) {
    /* A refusal of the request: the caller reports it. */
    s->refusal->code = e.code;
    s->refusal->fatal = 0;
    s->refusal->id = e.id;
    snprintf(s->refusal->message, sizeof s->refusal->message, "%s", e.message);
    s->state = SESS_DONE;
    s->closing = 1;
  } else {
    snprintf(what, sizeof what, "%s: %s", e.name, e.message);
    fail(s, NQ_EPROTO, "%s closed the session (%s)", s->b->desc, what);
  }
}

/* What the server may send an admin session. */
static void (*const handlers[NQ_MSG_COUNT])(sess_t *s, const json_t *msg) = {
    [NQ_MSG_WELCOME] = on_welcome,
    [NQ_MSG_ADMIN_REPLY] = on_admin_reply,
    [NQ_MSG_ERROR] = on_error_msg,
};

static void on_frame(sess_t *s, json_t *msg) {
  const char *name;
  nq_msg_type_t t = nq_msg_type(msg, &name);
  if (handlers[t]) handlers[t](s, msg);
  else fail(s, NQ_EPROTO, "%s sent an unexpected '%s' frame", s->b->desc, name ? name : "");
}

/* Read and dispatch frames until the session is answered, refused or failed. */
static void run_session(sess_t *s) {
  nq_framebuf_t fb;
  uint8_t buf[16384];
  nq_framebuf_init(&fb);
  send_hello(s);
  while (!s->closing) {
    size_t n = 0;
    int r = ssl_io(s, op_read, buf, sizeof buf, &n);
    if (r == NQ_EIO && now_ms() >= s->deadline) {
      fail(s, NQ_EIO, "%s did not answer within %s", s->b->desc, "30 s");
      break;
    }
    if (r != 1) {
      char tls[256];
      if (r == 0) fail(s, NQ_EPROTO, "%s closed the connection before answering%s", s->b->desc, "");
      else fail(s, NQ_EPROTO, "connection to %s failed: %s", s->b->desc,
                nq_tls_errors(tls, sizeof tls)[0] ? tls : nq_strerror(r));
      break;
    }
    if (nq_framebuf_append(&fb, buf, n) != 0) {
      fail(s, NQ_EPROTO, "%s sent a frame over the limit%s", s->b->desc, "");
      break;
    }
    json_t *msg;
    int pr;
    while (!s->closing && (pr = nq_framebuf_pop(&fb, &msg)) == 0) {
      on_frame(s, msg);
      json_decref(msg);
    }
    if (!s->closing && pr != NQ_EAGAIN)
      fail(s, NQ_EPROTO, "%s sent a bad frame (%s)", s->b->desc, nq_framebuf_errcode(&fb));
  }
  nq_framebuf_free(&fb);
}

/* A TCP connection to host:port that completes before the deadline: 0 with s->fd, or NQ_EIO and
 * why in s->err. Every address the name resolves to is tried in turn. */
static int dial(sess_t *s) {
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC}, *res, *ai;
  char port[16], why[256] = "no address";
  snprintf(port, sizeof port, "%d", s->b->port);
  int g = getaddrinfo(s->b->host, port, &hints, &res);
  if (g != 0) {
    snprintf(s->err, sizeof s->err, "cannot connect to %s: %s", s->b->desc, gai_strerror(g));
    return NQ_EIO;
  }
  for (ai = res; ai; ai = ai->ai_next) {
    s->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s->fd < 0) continue;
    int r = connect(s->fd, ai->ai_addr, ai->ai_addrlen), e = 0;
    socklen_t el = sizeof e;
    if (r != 0 && errno == EINPROGRESS && wait_fd(s, POLLOUT) == 0 &&
        getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &e, &el) == 0 && e == 0)
      r = 0;
    else if (r != 0)
      snprintf(why, sizeof why, "%s", strerror(e ? e : errno == EINPROGRESS ? ETIMEDOUT : errno));
    if (r == 0) break;
    close(s->fd);
    s->fd = -1;
  }
  freeaddrinfo(res);
  if (s->fd >= 0) return 0;
  snprintf(s->err, sizeof s->err, "cannot reach %s: %s", s->b->desc, why);
  return NQ_EIO;
}

int adm_remote_call(const adm_backend_t *b, const nq_admin_req_t *req, json_t **data,
                    nq_proto_err_t *refusal, char *err, size_t errlen) {
  nq_tls_ctx_t *ctx = NULL;
  sess_t s;
  int rc;
  memset(&s, 0, sizeof s);
  s.b = b;
  s.req = req;
  s.refusal = refusal;
  s.fd = -1;
  s.deadline = now_ms() + REMOTE_TIMEOUT_MS;
  *data = NULL;
  if ((rc = nq_tls_ctx_client_new(b->ca, &ctx)) != 0) {
    char tls[256];
    snprintf(err, errlen, "cannot load the CA certificate %s: %s %s", b->ca,
             rc == NQ_EINVAL ? "not a PEM certificate file" : nq_strerror(rc),
             nq_tls_errors(tls, sizeof tls));
    return rc;
  }
  if ((rc = dial(&s)) != 0) goto out;
  if (!(s.ssl = SSL_new(nq_tls_ctx_ssl(ctx))) || !SSL_set_fd(s.ssl, s.fd) ||
      nq_tls_pin_peer(s.ssl, b->hostname) != 0) {
    char tls[256];
    snprintf(s.err, sizeof s.err, "cannot set up TLS: %s", nq_tls_errors(tls, sizeof tls));
    rc = NQ_ETLS;
    goto out;
  }
  int hr = ssl_io(&s, op_connect, NULL, 0, NULL);
  if (hr != 1) {
    char e[300];
    if (hr == NQ_EIO) snprintf(e, sizeof e, "no TLS handshake within 30 s");
    else if (!nq_tls_handshake_error(s.ssl, e, sizeof e)[0]) snprintf(e, sizeof e, "closed");
    snprintf(s.err, sizeof s.err, "cannot reach %s: handshake failed: %s", b->desc, e);
    rc = hr == NQ_EIO ? NQ_EIO : NQ_ETLS;
    goto out;
  }
  run_session(&s);
  rc = s.rc;
  if (rc == 0 && s.state != SESS_DONE) rc = NQ_EPROTO, snprintf(s.err, sizeof s.err, "no answer");
  if (s.rc == 0) { /* close_notify, best effort: the answer is in either way */
    ERR_clear_error();
    SSL_shutdown(s.ssl);
  }
out:
  if (rc != 0) {
    snprintf(err, errlen, "%s", s.err);
    json_decref(s.data);
  } else {
    *data = s.data;
  }
  SSL_free(s.ssl);
  if (s.fd >= 0) close(s.fd);
  nq_tls_ctx_free(ctx);
  return rc;
}
