/* nq-admin: remote mode -- one TLS session with nq-server per request (docs/protocol.md):
 * hello (role admin, the admin token), welcome, one `admin` request, its `admin_reply` or
 * `error`, bye. A private libuv loop runs until the connection has closed. Messages are built and
 * read through nq/proto.h; what arrives is dispatched by the table below. */
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "admin.h"
#include "nq/conn.h"
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
  int opened;
  int rc;        /* 0 until something fails, or the final status */
  char err[2048];
  nq_conn_t *conn;
  uv_timer_t timer;
} sess_t;

static void fail(sess_t *s, int rc, const char *fmt, const char *a, const char *b) {
  if (s->rc != 0 || s->state == SESS_DONE) return; /* keep the first (root) cause */
  s->rc = rc;
  snprintf(s->err, sizeof s->err, fmt, a, b);
}

static void on_open(nq_conn_t *c) {
  sess_t *s = nq_conn_data(c);
  s->opened = 1;
  nq_hello_t h = {NQ_PROTO_VERSION, NQ_ROLE_ADMIN, s->b->token, NULL, NULL, NULL, 0,
                  "nq-admin " NQ_VERSION_STRING, NULL, 0, 0, 0, 0};
  if (nq_conn_send_new(c, nq_hello_pack(&h)) != 0) {
    fail(s, NQ_EPROTO, "%s: cannot send hello%s", s->b->desc, "");
    nq_conn_close(c, NULL, NULL);
  }
}

static void on_welcome(sess_t *s, const json_t *msg) {
  nq_welcome_t w;
  nq_proto_err_t perr;
  if (s->state != SESS_HELLO || nq_welcome_parse(msg, &w, &perr) != 0) {
    fail(s, NQ_EPROTO, "%s sent an unusable welcome (%s)", s->b->desc,
         s->state != SESS_HELLO ? "a second one" : perr.message);
    nq_conn_close(s->conn, NULL, NULL);
    return;
  }
  s->state = SESS_REQUEST;
  if (nq_conn_send_new(s->conn, nq_admin_req_pack(s->req)) != 0) {
    fail(s, NQ_EPROTO, "%s: cannot send the request%s", s->b->desc, "");
    nq_conn_close(s->conn, NULL, NULL);
  }
}

static void on_admin_reply(sess_t *s, const json_t *msg) {
  nq_admin_reply_t rep;
  nq_proto_err_t perr;
  if (s->state != SESS_REQUEST || nq_admin_reply_parse(msg, &rep, &perr) != 0) {
    fail(s, NQ_EPROTO, "%s sent an unusable admin_reply (%s)", s->b->desc,
         s->state != SESS_REQUEST ? "before the request" : perr.message);
    nq_conn_close(s->conn, NULL, NULL);
    return;
  }
  s->data = json_incref(rep.data);
  s->state = SESS_DONE;
  nq_conn_send_new(s->conn, nq_bye_pack());
  nq_conn_close(s->conn, NULL, NULL);
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
  } else {
    snprintf(what, sizeof what, "%s: %s", e.name, e.message);
    fail(s, NQ_EPROTO, "%s closed the session (%s)", s->b->desc, what);
  }
  nq_conn_close(s->conn, NULL, NULL);
}

/* What the server may send an admin session. */
static void (*const handlers[NQ_MSG_COUNT])(sess_t *s, const json_t *msg) = {
    [NQ_MSG_WELCOME] = on_welcome,
    [NQ_MSG_ADMIN_REPLY] = on_admin_reply,
    [NQ_MSG_ERROR] = on_error_msg,
};

static void on_frame(nq_conn_t *c, json_t *msg) {
  sess_t *s = nq_conn_data(c);
  const char *name;
  nq_msg_type_t t = nq_msg_type(msg, &name);
  if (handlers[t]) {
    handlers[t](s, msg);
    return;
  }
  fail(s, NQ_EPROTO, "%s sent an unexpected '%s' frame", s->b->desc, name ? name : "");
  nq_conn_close(c, NULL, NULL);
}

static void on_error(nq_conn_t *c, int status) {
  sess_t *s = nq_conn_data(c);
  if (!s->opened)
    fail(s, status == NQ_ETLS ? NQ_ETLS : NQ_EIO, "cannot reach %s: %s", s->b->desc,
         nq_conn_errstr(c)[0] ? nq_conn_errstr(c) : nq_strerror(status));
  else
    fail(s, NQ_EPROTO, "connection to %s failed: %s", s->b->desc,
         nq_conn_errstr(c)[0] ? nq_conn_errstr(c) : nq_strerror(status));
}

static void on_close(nq_conn_t *c) {
  sess_t *s = nq_conn_data(c);
  s->conn = NULL;
  if (s->state != SESS_DONE)
    fail(s, NQ_EPROTO, "%s closed the connection before answering%s", s->b->desc, "");
  uv_timer_stop(&s->timer);
  uv_close((uv_handle_t *)&s->timer, NULL);
}

static void on_timeout(uv_timer_t *t) {
  sess_t *s = t->data;
  fail(s, NQ_EIO, "%s did not answer within %s", s->b->desc, "30 s");
  if (s->conn) nq_conn_abort(s->conn);
}

int adm_remote_call(const adm_backend_t *b, const nq_admin_req_t *req, json_t **data,
                    nq_proto_err_t *refusal, char *err, size_t errlen) {
  uv_loop_t loop;
  nq_tls_ctx_t *ctx = NULL;
  sess_t s;
  int rc;
  memset(&s, 0, sizeof s);
  s.b = b;
  s.req = req;
  s.refusal = refusal;
  *data = NULL;
  if (uv_loop_init(&loop) != 0) {
    snprintf(err, errlen, "cannot start an event loop");
    return NQ_EIO;
  }
  if ((rc = nq_tls_ctx_client_new(b->ca, &ctx)) != 0) {
    char tls[256];
    snprintf(err, errlen, "cannot load the CA certificate %s: %s %s", b->ca,
             rc == NQ_EINVAL ? "not a PEM certificate file" : nq_strerror(rc),
             nq_tls_errors(tls, sizeof tls));
    goto out;
  }
  nq_conn_opts_t opts = {.on_open = on_open, .on_frame = on_frame, .on_error = on_error,
                         .on_close = on_close, .data = &s, .tag = "admin"};
  uv_timer_init(&loop, &s.timer);
  s.timer.data = &s;
  rc = nq_conn_connect(&loop, b->host, b->port, ctx, b->hostname, &opts, &s.conn);
  if (rc != 0) {
    snprintf(err, errlen, "cannot connect to %s: %s", b->desc, nq_strerror(rc));
    uv_close((uv_handle_t *)&s.timer, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    goto out;
  }
  uv_timer_start(&s.timer, on_timeout, REMOTE_TIMEOUT_MS, 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  rc = s.rc;
  if (rc == 0 && s.state != SESS_DONE) rc = NQ_EPROTO, snprintf(s.err, sizeof s.err, "no answer");
  if (rc != 0) {
    snprintf(err, errlen, "%s", s.err);
    json_decref(s.data);
  } else {
    *data = s.data;
  }
out:
  nq_tls_ctx_free(ctx);
  if (uv_loop_close(&loop) != 0) {
    uv_run(&loop, UV_RUN_DEFAULT); /* a handle still closing: let it finish */
    uv_loop_close(&loop);
  }
  return rc;
}
