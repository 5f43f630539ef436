/* nq-admin: remote mode -- one TLS session with nq-server per request (docs/protocol.md):
 * hello (role admin, the admin token), welcome, one `admin` request, its `admin_reply` or
 * `error`, bye. A private libuv loop runs until the connection has closed. */
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "admin.h"
#include "nq/conn.h"
#include "nq/frame.h"
#include "nq/nq.h"
#include "nq/tls.h"

/* The whole session may take this long (connect + handshake + one request). */
#define REMOTE_TIMEOUT_MS 30000

typedef enum { SESS_HELLO = 0, SESS_REQUEST, SESS_DONE } sess_state_t;

typedef struct {
  const adm_backend_t *b;
  const json_t *req;
  json_t *reply;
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
  json_t *hello = json_pack("{s:s, s:i, s:s, s:s, s:s}", "type", "hello", "v",
                            NQ_PROTOCOL_VERSION, "role", "admin", "token", s->b->token,
                            "software", "nq-admin " NQ_VERSION_STRING);
  if (nq_conn_send_new(c, hello) != 0) {
    fail(s, NQ_EPROTO, "%s: cannot send hello%s", s->b->desc, "");
    nq_conn_close(c, NULL, NULL);
  }
}

static void on_frame(nq_conn_t *c, json_t *msg) {
  sess_t *s = nq_conn_data(c);
  const char *type = adm_str(msg, "type");
  if (!strcmp(type, "error")) {
    const char *code = adm_str(msg, "code");
    if (!strcmp(code, "auth"))
      fail(s, NQ_EAUTH, "%s refused the admin token (auth: %s); check --token / admin.token",
           s->b->desc, adm_str(msg, "message"));
    else if (s->state == SESS_REQUEST && !json_is_true(json_object_get(msg, "fatal"))) {
      s->reply = json_incref(msg); /* a refusal of the request: the caller reports it */
      s->state = SESS_DONE;
    } else {
      char what[300];
      snprintf(what, sizeof what, "%s: %s", code, adm_str(msg, "message"));
      fail(s, NQ_EPROTO, "%s closed the session (%s)", s->b->desc, what);
    }
    nq_conn_close(c, NULL, NULL);
    return;
  }
  if (s->state == SESS_HELLO && !strcmp(type, "welcome")) {
    s->state = SESS_REQUEST;
    if (nq_conn_send(c, s->req) != 0) {
      fail(s, NQ_EPROTO, "%s: cannot send the request%s", s->b->desc, "");
      nq_conn_close(c, NULL, NULL);
    }
    return;
  }
  if (s->state == SESS_REQUEST && !strcmp(type, "admin_reply")) {
    s->reply = json_incref(msg);
    s->state = SESS_DONE;
    nq_conn_send_new(c, json_pack("{s:s}", "type", "bye"));
    nq_conn_close(c, NULL, NULL);
    return;
  }
  fail(s, NQ_EPROTO, "%s sent an unexpected '%s' frame", s->b->desc, type);
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

int adm_remote_call(const adm_backend_t *b, const json_t *req, json_t **reply, char *err,
                    size_t errlen) {
  uv_loop_t loop;
  nq_tls_ctx_t *ctx = NULL;
  sess_t s;
  int rc;
  memset(&s, 0, sizeof s);
  s.b = b;
  s.req = req;
  *reply = NULL;
  if (uv_loop_init(&loop) != 0) {
    snprintf(err, errlen, "cannot start an event loop");
    return NQ_EIO;
  }
  if ((rc = nq_tls_ctx_client_new(b->ca, &ctx)) != 0) {
    char tls[256];
    snprintf(err, errlen, "cannot load the CA certificate %s: %s %s", b->ca, nq_strerror(rc),
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
  if (rc == 0 && !s.reply) rc = NQ_EPROTO, snprintf(s.err, sizeof s.err, "no answer");
  if (rc != 0) {
    snprintf(err, errlen, "%s", s.err);
    json_decref(s.reply);
  } else {
    *reply = s.reply;
  }
out:
  nq_tls_ctx_free(ctx);
  if (uv_loop_close(&loop) != 0) {
    uv_run(&loop, UV_RUN_DEFAULT); /* a handle still closing: let it finish */
    uv_loop_close(&loop);
  }
  return rc;
}
