/* Tests for common/conn/conn.c, tls.c and certs.c: TLS connections on one libuv loop over loopback. */
#include "nq/certs.h"
#include "nq/conn.h"
#include "nq/frame.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/tls.h"
#include "testutil.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BIG_REPLY 60000 /* bytes of padding in a "big" reply */

typedef struct env_s env_t;

/* One end of a test connection (clients; server connections share env counters). */
typedef struct peer_s {
  env_t *env;
  nq_conn_t *conn;
  int opened, closed, errors, last_err, frames, error_frames;
  char last_code[64];
  char errstr[200];
  int64_t expect_seq; /* next echo sequence number expected */
  int goal;           /* frames to see before closing */
  void (*open_fn)(struct peer_s *p);
  void (*frame_fn)(struct peer_s *p, json_t *msg);
  void (*close_fn)(struct peer_s *p);
} peer_t;

struct env_s {
  uv_loop_t loop;
  uv_tcp_t listener;
  int listening;
  int port;
  char *dir;
  nq_tls_ctx_t *sctx, *cctx;
  nq_conn_opts_t sopts;
  int welcome; /* server greets every connection with a frame */
  /* server side */
  int s_accepted, s_opened, s_frames, s_errors, s_closed, s_last_err;
  char s_errstr[200];
  size_t s_max_queued;
  int s_burst_fail;
  const char *override_code; /* server on_error closes with this code itself */
  int fail_accepts;          /* make the next accepts fail (wrong context) */
  uv_timer_t hold_timer;     /* "hold": the server's input is held until this fires */
  int frames_at_hold;
  peer_t cl[3];
};

/* ---- server side ---- */

static void env_stop(env_t *e) {
  if (e->listening) {
    e->listening = 0;
    uv_close((uv_handle_t *)&e->listener, NULL);
  }
}

static json_t *big_msg(const char *type, int64_t seq, size_t pad) {
  char *s = malloc(pad + 1);
  memset(s, 'b', pad);
  s[pad] = '\0';
  json_t *m = json_pack("{s:s, s:I, s:s}", "type", type, "seq", (json_int_t)seq, "data", s);
  free(s);
  return m;
}

static void srv_open(nq_conn_t *c) {
  env_t *e = nq_conn_data(c);
  e->s_opened++;
  if (e->welcome)
    ck_assert_int_eq(nq_conn_send_new(c, json_pack("{s:s}", "type", "welcome")), 0);
}

/* 300 ms after "hold": the frames sent right behind it arrived long ago, yet none was delivered;
 * resuming delivers them (the client checks that every echo comes, in order). */
static void on_hold_timer(uv_timer_t *t) {
  nq_conn_t *c = t->data;
  env_t *e = nq_conn_data(c);
  ck_assert_int_eq(e->s_frames, e->frames_at_hold);
  nq_conn_hold(c, 0);
  uv_close((uv_handle_t *)t, NULL);
}

static void srv_frame(nq_conn_t *c, json_t *msg) {
  env_t *e = nq_conn_data(c);
  e->s_frames++;
  const char *type = "";
  nq_msg_get_str(msg, "type", &type);
  if (!strcmp(type, "big")) {
    int64_t seq = 0;
    nq_msg_get_int(msg, "seq", 0, INT64_MAX, &seq);
    ck_assert_int_eq(nq_conn_send_new(c, big_msg("big", seq, BIG_REPLY)), 0);
  } else if (!strcmp(type, "burst")) {
    /* Far more than the hard limit in one go: the connection must be failed. */
    for (int i = 0; i < 40; i++) {
      int r = nq_conn_send_new(c, big_msg("big", i, BIG_REPLY));
      if (r < 0) {
        e->s_burst_fail = r;
        ck_assert_int_eq(nq_conn_state(c), NQ_CONN_CLOSED);
        break;
      }
    }
  } else if (!strcmp(type, "hold")) {
    nq_conn_hold(c, 1);
    e->frames_at_hold = e->s_frames;
    uv_timer_init(&e->loop, &e->hold_timer);
    e->hold_timer.data = c;
    uv_timer_start(&e->hold_timer, on_hold_timer, 300, 0);
  } else {
    ck_assert_int_eq(nq_conn_send(c, msg), 0); /* echo */
  }
  if (nq_conn_queued(c) > e->s_max_queued) e->s_max_queued = nq_conn_queued(c);
}

static void srv_error(nq_conn_t *c, int status) {
  env_t *e = nq_conn_data(c);
  e->s_errors++;
  e->s_last_err = status;
  snprintf(e->s_errstr, sizeof e->s_errstr, "%s", nq_conn_errstr(c));
  /* No more frames once failed, but the owner may still choose the error frame. */
  ck_assert_int_eq(nq_conn_send_new(c, json_pack("{s:s}", "type", "x")), NQ_ENOTOPEN);
  if (e->override_code) nq_conn_close(c, e->override_code, "chosen by the owner");
}

static void srv_close(nq_conn_t *c) {
  env_t *e = nq_conn_data(c);
  e->s_closed++;
}

static void on_connection(uv_stream_t *server, int status) {
  env_t *e = server->data;
  ck_assert_int_eq(status, 0);
  nq_conn_t *c;
  if (e->fail_accepts > 0) {
    e->fail_accepts--;
    ck_assert_int_eq(nq_conn_accept(&e->loop, server, e->cctx, &e->sopts, &c), NQ_EINVAL);
    return;
  }
  ck_assert_int_eq(nq_conn_accept(&e->loop, server, e->sctx, &e->sopts, &c), 0);
  ck_assert_ptr_nonnull(c);
  e->s_accepted++;
}

/* Fresh certificates, contexts and a listener on 127.0.0.1 (port chosen by the kernel). */
static void env_init(env_t *e) {
  memset(e, 0, sizeof *e);
  ck_assert_int_eq(uv_loop_init(&e->loop), 0);
  e->dir = tu_tmpdir("tls");
  ck_assert_ptr_nonnull(e->dir);
  ck_assert_int_eq(nq_certs_ensure(e->dir, NULL), 0);
  char cert[512], key[512], ca[512];
  snprintf(cert, sizeof cert, "%s/server.pem", e->dir);
  snprintf(key, sizeof key, "%s/server.key", e->dir);
  snprintf(ca, sizeof ca, "%s/ca.pem", e->dir);
  ck_assert_int_eq(nq_tls_ctx_server_new(cert, key, &e->sctx), 0);
  ck_assert_int_eq(nq_tls_ctx_client_new(ca, &e->cctx), 0);

  e->sopts.on_open = srv_open;
  e->sopts.on_frame = srv_frame;
  e->sopts.on_error = srv_error;
  e->sopts.on_close = srv_close;
  e->sopts.data = e;
  e->sopts.tag = "srv";

  struct sockaddr_in a;
  ck_assert_int_eq(uv_ip4_addr("127.0.0.1", 0, &a), 0);
  ck_assert_int_eq(uv_tcp_init(&e->loop, &e->listener), 0);
  e->listener.data = e;
  ck_assert_int_eq(uv_tcp_bind(&e->listener, (struct sockaddr *)&a, 0), 0);
  ck_assert_int_eq(uv_listen((uv_stream_t *)&e->listener, 16, on_connection), 0);
  int len = sizeof a;
  ck_assert_int_eq(uv_tcp_getsockname(&e->listener, (struct sockaddr *)&a, &len), 0);
  e->port = ntohs(a.sin_port);
  e->listening = 1;
}

/* Run to completion; every handle must be closed so the loop closes cleanly. */
static void env_run_and_close(env_t *e) {
  uv_run(&e->loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(e->listening, 0);
  ck_assert_int_eq(uv_loop_close(&e->loop), 0);
  nq_tls_ctx_free(e->sctx);
  nq_tls_ctx_free(e->cctx);
  tu_rmtree(e->dir);
  free(e->dir);
}

/* ---- client side ---- */

static void cl_open(nq_conn_t *c) {
  peer_t *p = nq_conn_data(c);
  p->opened++;
  ck_assert_str_ne(nq_conn_tls_version(c), "");
  if (p->open_fn) p->open_fn(p);
}

static void cl_frame(nq_conn_t *c, json_t *msg) {
  peer_t *p = nq_conn_data(c);
  p->frames++;
  const char *type = "";
  nq_msg_get_str(msg, "type", &type);
  if (!strcmp(type, "error")) {
    const char *code = "";
    int fatal = 0;
    ck_assert_int_eq(nq_msg_get_str(msg, "code", &code), 0);
    ck_assert_int_eq(nq_msg_get_bool(msg, "fatal", &fatal), 0);
    ck_assert_int_eq(fatal, 1);
    snprintf(p->last_code, sizeof p->last_code, "%s", code);
    p->error_frames++;
    return;
  }
  if (p->frame_fn) p->frame_fn(p, msg);
}

static void cl_error(nq_conn_t *c, int status) {
  peer_t *p = nq_conn_data(c);
  p->errors++;
  p->last_err = status;
  snprintf(p->errstr, sizeof p->errstr, "%s", nq_conn_errstr(c));
}

static void cl_close(nq_conn_t *c) {
  peer_t *p = nq_conn_data(c);
  p->closed++;
  p->conn = NULL;
  if (p->close_fn) p->close_fn(p);
  else env_stop(p->env);
}

static void client_start_ex(env_t *e, peer_t *p, const char *host, const char *hostname,
                            nq_tls_ctx_t *ctx, int port) {
  p->env = e;
  nq_conn_opts_t o;
  memset(&o, 0, sizeof o);
  o.on_open = cl_open;
  o.on_frame = cl_frame;
  o.on_error = cl_error;
  o.on_close = cl_close;
  o.data = p;
  o.tag = "cli";
  ck_assert_int_eq(nq_conn_connect(&e->loop, host, port, ctx, hostname, &o, &p->conn), 0);
  ck_assert_ptr_nonnull(p->conn);
}

static void client_start(env_t *e, peer_t *p, const char *hostname) {
  client_start_ex(e, p, "127.0.0.1", hostname, e->cctx, e->port);
}

static void send_ping(peer_t *p, int64_t seq) {
  ck_assert_int_eq(nq_conn_send_new(p->conn, json_pack("{s:s, s:I}", "type", "ping", "seq",
                                                       (json_int_t)seq)),
                   0);
}

/* ---- exchange: handshake, welcome, one ping, 500 pipelined, one near-64 KiB frame ---- */

#define PIPELINED 500

static void ex_open(peer_t *p) {
  send_ping(p, 0);
}

static void ex_frame(peer_t *p, json_t *msg) {
  const char *type;
  ck_assert_int_eq(nq_msg_get_str(msg, "type", &type), 0);
  if (!strcmp(type, "welcome")) {
    ck_assert_int_eq(p->frames, 1); /* the server's greeting comes first */
    return;
  }
  int64_t seq;
  ck_assert_int_eq(nq_msg_get_int(msg, "seq", 0, INT64_MAX, &seq), 0);
  ck_assert_int_eq(seq, p->expect_seq); /* in order */
  p->expect_seq++;
  if (seq == 0) {
    for (int64_t i = 1; i <= PIPELINED; i++) send_ping(p, i);
  } else if (seq == PIPELINED) {
    /* The largest frame that fits: pad so the payload is just under NQ_FRAME_MAX. */
    json_t *m = big_msg("blob", PIPELINED + 1, NQ_FRAME_MAX - 64);
    ck_assert_int_eq(nq_conn_send(p->conn, m), 0);
    json_decref(m);
  } else if (seq == PIPELINED + 1) {
    const char *data;
    ck_assert_int_eq(nq_msg_get_str(msg, "data", &data), 0);
    ck_assert_uint_eq(strlen(data), NQ_FRAME_MAX - 64);
    /* Too big to encode: refused locally, connection stays up. */
    json_t *m = big_msg("blob", 0, NQ_FRAME_MAX);
    ck_assert_int_eq(nq_conn_send(p->conn, m), NQ_ETOOBIG);
    json_decref(m);
    ck_assert_int_eq(nq_conn_state(p->conn), NQ_CONN_OPEN);
    nq_conn_close(p->conn, NULL, NULL);
    ck_assert_int_eq(nq_conn_send_new(p->conn, json_pack("{s:s}", "type", "late")), NQ_ENOTOPEN);
  }
}

START_TEST(exchange) {
  env_t e;
  env_init(&e);
  e.welcome = 1;
  peer_t *p = &e.cl[0];
  p->open_fn = ex_open;
  p->frame_fn = ex_frame;
  client_start(&e, p, "localhost");
  env_run_and_close(&e);
  ck_assert_int_eq(p->opened, 1);
  ck_assert_int_eq(p->errors, 0);
  ck_assert_int_eq(p->closed, 1);
  ck_assert_int_eq(p->expect_seq, PIPELINED + 2);
  ck_assert_int_eq(p->frames, PIPELINED + 3); /* welcome + echoes */
  ck_assert_int_eq(e.s_accepted, 1);
  ck_assert_int_eq(e.s_opened, 1);
  ck_assert_int_eq(e.s_frames, PIPELINED + 2);
  ck_assert_int_eq(e.s_errors, 0);
  ck_assert_int_eq(e.s_closed, 1);
}
END_TEST

/* ---- name resolution path, and an IP literal as the verified identity ---- */

static void one_ping_open(peer_t *p) {
  send_ping(p, 0);
}

static void one_ping_frame(peer_t *p, json_t *msg) {
  (void)msg;
  nq_conn_close(p->conn, NULL, NULL);
}

static void both_closed(peer_t *p) {
  if (p->env->cl[0].closed && p->env->cl[1].closed) env_stop(p->env);
}

START_TEST(resolve_and_ip_identity) {
  env_t e;
  env_init(&e);
  peer_t *a = &e.cl[0], *b = &e.cl[1];
  a->open_fn = b->open_fn = one_ping_open;
  a->frame_fn = b->frame_fn = one_ping_frame;
  a->close_fn = b->close_fn = both_closed;
  client_start_ex(&e, a, "localhost", "localhost", e.cctx, e.port); /* via getaddrinfo */
  client_start_ex(&e, b, "127.0.0.1", "127.0.0.1", e.cctx, e.port); /* IP SAN check */
  env_run_and_close(&e);
  ck_assert_int_eq(a->opened + b->opened, 2);
  ck_assert_int_eq(a->errors + b->errors, 0);
  ck_assert_int_eq(e.s_frames, 2);
  ck_assert_int_eq(e.s_closed, 2);
}
END_TEST

/* TLS 1.2 still works (with the restricted ECDHE + AEAD suite list), and is what is used. */
static void tls12_open(peer_t *p) {
  ck_assert_str_eq(nq_conn_tls_version(p->conn), "TLSv1.2");
  send_ping(p, 0);
}

START_TEST(tls12_works) {
  env_t e;
  env_init(&e);
  ck_assert_int_eq(SSL_CTX_set_max_proto_version(nq_tls_ctx_ssl(e.cctx), TLS1_2_VERSION), 1);
  peer_t *p = &e.cl[0];
  p->open_fn = tls12_open;
  p->frame_fn = one_ping_frame;
  client_start(&e, p, "localhost");
  env_run_and_close(&e);
  ck_assert_int_eq(p->opened, 1);
  ck_assert_int_eq(p->errors, 0);
  ck_assert_int_eq(e.s_frames, 1);
}
END_TEST

/* ---- verification failures ---- */

static void must_not_open(peer_t *p) {
  ck_abort_msg("handshake should have failed");
}

START_TEST(wrong_hostname_rejected) {
  env_t e;
  env_init(&e);
  peer_t *p = &e.cl[0];
  p->open_fn = must_not_open;
  client_start(&e, p, "wrong.example.org");
  env_run_and_close(&e);
  ck_assert_int_eq(p->opened, 0);
  ck_assert_int_eq(p->errors, 1);
  ck_assert_int_eq(p->last_err, NQ_ETLS);
  ck_assert_msg(strstr(p->errstr, "verify") != NULL, "errstr: %s", p->errstr);
  ck_assert_int_eq(p->closed, 1);
  /* The server saw the client's alert and cleaned up. */
  ck_assert_int_eq(e.s_opened, 0);
  ck_assert_int_eq(e.s_errors, 1);
  ck_assert_int_eq(e.s_last_err, NQ_ETLS);
  ck_assert_int_eq(e.s_closed, 1);
}
END_TEST

START_TEST(wrong_ip_rejected) {
  env_t e;
  env_init(&e);
  peer_t *p = &e.cl[0];
  p->open_fn = must_not_open;
  client_start(&e, p, "10.9.8.7");
  env_run_and_close(&e);
  ck_assert_int_eq(p->errors, 1);
  ck_assert_int_eq(p->last_err, NQ_ETLS);
  ck_assert_int_eq(e.s_closed, 1);
}
END_TEST

START_TEST(other_ca_rejected) {
  env_t e;
  env_init(&e);
  char *other = tu_tmpdir("tls-other");
  ck_assert_int_eq(nq_certs_ensure(other, NULL), 0);
  char ca[512];
  snprintf(ca, sizeof ca, "%s/ca.pem", other);
  nq_tls_ctx_t *octx;
  ck_assert_int_eq(nq_tls_ctx_client_new(ca, &octx), 0);
  peer_t *p = &e.cl[0];
  p->open_fn = must_not_open;
  client_start_ex(&e, p, "127.0.0.1", "localhost", octx, e.port);
  nq_tls_ctx_free(octx); /* the connection keeps its own reference */
  env_run_and_close(&e);
  ck_assert_int_eq(p->opened, 0);
  ck_assert_int_eq(p->errors, 1);
  ck_assert_int_eq(p->last_err, NQ_ETLS);
  ck_assert_msg(strstr(p->errstr, "verify") != NULL, "errstr: %s", p->errstr);
  ck_assert_int_eq(e.s_closed, 1);
  tu_rmtree(other);
  free(other);
}
END_TEST

/* ---- raw TCP peers: plaintext and silence ---- */

typedef struct {
  uv_tcp_t tcp;
  uv_connect_t creq;
  uv_write_t wreq;
  const char *send; /* NULL: send nothing */
  size_t got;
  int eof;
  char buf[4096];
  void (*done)(void *arg);
  void *arg;
} raw_t;

static void raw_closed(uv_handle_t *h) {
  raw_t *r = h->data;
  if (r->done) r->done(r->arg);
}

static void raw_alloc(uv_handle_t *h, size_t n, uv_buf_t *b) {
  raw_t *r = h->data;
  *b = uv_buf_init(r->buf, sizeof r->buf);
}

static void raw_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  raw_t *r = s->data;
  if (n > 0) r->got += (size_t)n;
  if (n < 0) {
    r->eof = 1;
    uv_close((uv_handle_t *)s, raw_closed);
  }
}

static void raw_written(uv_write_t *w, int status) {}

static void raw_connected(uv_connect_t *req, int status) {
  raw_t *r = req->data;
  ck_assert_int_eq(status, 0);
  if (r->send) {
    uv_buf_t b = uv_buf_init((char *)r->send, (unsigned)strlen(r->send));
    ck_assert_int_eq(uv_write(&r->wreq, (uv_stream_t *)&r->tcp, &b, 1, raw_written), 0);
  }
  ck_assert_int_eq(uv_read_start((uv_stream_t *)&r->tcp, raw_alloc, raw_read), 0);
}

static void raw_start(env_t *e, raw_t *r) {
  struct sockaddr_in a;
  uv_ip4_addr("127.0.0.1", e->port, &a);
  ck_assert_int_eq(uv_tcp_init(&e->loop, &r->tcp), 0);
  r->tcp.data = r;
  r->creq.data = r;
  ck_assert_int_eq(uv_tcp_connect(&r->creq, &r->tcp, (struct sockaddr *)&a, raw_connected), 0);
}

/* After the plaintext peer is gone, a real client must still be served. */
static void plaintext_then_tls(void *arg) {
  env_t *e = arg;
  peer_t *p = &e->cl[0];
  p->open_fn = one_ping_open;
  p->frame_fn = one_ping_frame;
  client_start(e, p, "localhost");
}

START_TEST(plaintext_refused) {
  env_t e;
  env_init(&e);
  raw_t r;
  memset(&r, 0, sizeof r);
  r.send = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
  r.done = plaintext_then_tls;
  r.arg = &e;
  raw_start(&e, &r);
  env_run_and_close(&e);
  ck_assert_int_eq(r.eof, 1); /* the server closed on the plaintext peer */
  ck_assert_int_eq(e.s_accepted, 2);
  ck_assert_int_eq(e.s_errors, 1);
  ck_assert_int_eq(e.s_last_err, NQ_ETLS);
  ck_assert_msg(strstr(e.s_errstr, "handshake") != NULL, "errstr: %s", e.s_errstr);
  ck_assert_int_eq(e.s_opened, 1);
  ck_assert_int_eq(e.s_closed, 2);
  ck_assert_int_eq(e.cl[0].opened, 1);
  ck_assert_int_eq(e.cl[0].errors, 0);
  ck_assert_int_eq(e.s_frames, 1);
}
END_TEST

static void stop_env(void *arg) {
  env_stop(arg);
}

START_TEST(handshake_timeout) {
  env_t e;
  env_init(&e);
  e.sopts.handshake_timeout_ms = 150;
  raw_t r;
  memset(&r, 0, sizeof r);
  r.done = stop_env;
  r.arg = &e;
  raw_start(&e, &r);
  uint64_t t0 = uv_now(&e.loop);
  env_run_and_close(&e);
  ck_assert_int_eq(r.eof, 1);
  ck_assert_int_eq(e.s_errors, 1);
  ck_assert_int_eq(e.s_last_err, NQ_ETLS);
  ck_assert_msg(strstr(e.s_errstr, "timeout") != NULL, "errstr: %s", e.s_errstr);
  ck_assert_int_eq(e.s_closed, 1);
  ck_assert_uint_ge(uv_now(&e.loop) - t0, 140);
}
END_TEST

/* A failed accept must not stall the listener (libuv stops watching it otherwise). */
static void retry_after_refusal(peer_t *p) {
  peer_t *q = &p->env->cl[1];
  q->open_fn = one_ping_open;
  q->frame_fn = one_ping_frame;
  client_start(p->env, q, "localhost");
}

START_TEST(failed_accept_keeps_listening) {
  env_t e;
  env_init(&e);
  e.fail_accepts = 1;
  peer_t *p = &e.cl[0];
  p->open_fn = must_not_open;
  p->close_fn = retry_after_refusal;
  client_start(&e, p, "localhost");
  env_run_and_close(&e);
  ck_assert_int_eq(p->errors, 1);
  ck_assert_int_eq(e.cl[1].opened, 1);
  ck_assert_int_eq(e.cl[1].errors, 0);
  ck_assert_int_eq(e.s_accepted, 1);
  ck_assert_int_eq(e.s_frames, 1);
}
END_TEST

/* ---- idle timeout: the server says why, then closes ---- */

START_TEST(idle_timeout) {
  env_t e;
  env_init(&e);
  e.sopts.idle_timeout_ms = 150;
  peer_t *p = &e.cl[0];
  client_start(&e, p, "localhost"); /* opens, then says nothing */
  env_run_and_close(&e);
  ck_assert_int_eq(p->opened, 1);
  ck_assert_int_eq(p->error_frames, 1);
  ck_assert_str_eq(p->last_code, nq_errcode_name(NQ_ERR_TIMEOUT));
  ck_assert_int_eq(p->errors, 0); /* a clean close by the server is not a client error */
  ck_assert_int_eq(p->closed, 1);
  ck_assert_int_eq(e.s_errors, 1);
  ck_assert_int_eq(e.s_last_err, NQ_EIO);
  ck_assert_int_eq(e.s_closed, 1);
}
END_TEST

/* ---- a bad frame closes that connection only ---- */

static void bystander_frame(peer_t *p, json_t *msg) {
  int64_t seq;
  ck_assert_int_eq(nq_msg_get_int(msg, "seq", 0, 100, &seq), 0);
  if (seq < 10) send_ping(p, seq + 1);
  else nq_conn_close(p->conn, NULL, NULL);
}

static void offender_closed(peer_t *p) {
  /* The offender is gone; the other client must still be served. */
  ck_assert_int_eq(nq_conn_state(p->env->cl[1].conn), NQ_CONN_OPEN);
  send_ping(&p->env->cl[1], 0);
}

static void bystander_closed(peer_t *p) {
  env_stop(p->env);
}

static void send_oversize(peer_t *p) {
  /* Header claiming 70000 bytes plus some payload; nq_conn_send would refuse to build this. */
  uint8_t raw[4 + 100];
  uint32_t n = 70000;
  raw[0] = (uint8_t)(n >> 24);
  raw[1] = (uint8_t)(n >> 16);
  raw[2] = (uint8_t)(n >> 8);
  raw[3] = (uint8_t)n;
  memset(raw + 4, '{', 100);
  ck_assert_int_eq(nq_conn_send_raw(p->conn, raw, sizeof raw), 0);
}

/* The offender (cl[0]) connects only once the bystander is up, so both connections coexist; once
 * open it sends with open_fn. */
static void offender_start(peer_t *b, void (*open_fn)(peer_t *p)) {
  peer_t *a = &b->env->cl[0];
  a->open_fn = open_fn;
  a->close_fn = offender_closed;
  client_start(b->env, a, "localhost");
}

/* The bystander (cl[1]), which starts the offender with start once it is up; the loop is run to
 * its end and closed. */
static void offender_run(env_t *e, void (*start)(peer_t *b)) {
  env_init(e);
  peer_t *b = &e->cl[1];
  b->open_fn = start;
  b->frame_fn = bystander_frame;
  b->close_fn = bystander_closed;
  client_start(e, b, "localhost");
  env_run_and_close(e);
}

static void start_oversize(peer_t *b) { offender_start(b, send_oversize); }

START_TEST(oversized_frame_closes_only_offender) {
  env_t e;
  offender_run(&e, start_oversize);
  peer_t *b = &e.cl[1];
  peer_t *a = &e.cl[0];
  ck_assert_int_eq(a->opened, 1);
  ck_assert_int_eq(a->frames, 1);
  ck_assert_int_eq(a->error_frames, 1);
  ck_assert_str_eq(a->last_code, nq_errcode_name(NQ_ERR_FRAME_TOO_BIG));
  ck_assert_int_eq(a->closed, 1);
  ck_assert_int_eq(b->errors, 0);
  ck_assert_int_eq(b->frames, 11);
  ck_assert_int_eq(e.s_errors, 1);
  ck_assert_int_eq(e.s_last_err, NQ_ETOOBIG);
  ck_assert_int_eq(e.s_closed, 2);
}
END_TEST

static void send_bad_json(peer_t *p) {
  const char raw[] = "\0\0\0\x07{\"a\":1}\0\0\0\x02[]";
  ck_assert_int_eq(nq_conn_send_raw(p->conn, raw, sizeof raw - 1), 0);
}

static void start_bad_json(peer_t *b) { offender_start(b, send_bad_json); }

START_TEST(bad_json_closes_only_offender) {
  env_t e;
  offender_run(&e, start_bad_json);
  peer_t *b = &e.cl[1];
  peer_t *a = &e.cl[0];
  ck_assert_int_eq(a->frames, 2); /* the echo of the good frame, then the error */
  ck_assert_int_eq(a->error_frames, 1);
  ck_assert_str_eq(a->last_code, nq_errcode_name(NQ_ERR_BAD_JSON));
  ck_assert_int_eq(b->frames, 11);
  ck_assert_int_eq(e.s_errors, 1);
  ck_assert_int_eq(e.s_last_err, NQ_EPROTO);
  ck_assert_int_eq(e.s_frames, 1 + 11);
}
END_TEST

static void send_zero_length(peer_t *p) {
  ck_assert_int_eq(nq_conn_send_raw(p->conn, "\0\0\0\0", 4), 0);
}

START_TEST(owner_picks_error_code) {
  env_t e;
  env_init(&e);
  e.override_code = "custom_code";
  peer_t *p = &e.cl[0];
  p->open_fn = send_zero_length;
  client_start(&e, p, "localhost");
  env_run_and_close(&e);
  ck_assert_int_eq(e.s_errors, 1);
  ck_assert_int_eq(e.s_last_err, NQ_EPROTO);
  ck_assert_int_eq(p->error_frames, 1);
  ck_assert_str_eq(p->last_code, "custom_code");
  ck_assert_int_eq(p->closed, 1);
}
END_TEST

/* ---- backpressure ---- */

#define BIG_REQS 64

static void bp_open(peer_t *p) {
  for (int i = 0; i < BIG_REQS; i++)
    ck_assert_int_eq(nq_conn_send_new(p->conn, json_pack("{s:s, s:i}", "type", "big", "seq", i)),
                     0);
}

static void bp_frame(peer_t *p, json_t *msg) {
  int64_t seq;
  ck_assert_int_eq(nq_msg_get_int(msg, "seq", 0, INT64_MAX, &seq), 0);
  ck_assert_int_eq(seq, p->expect_seq);
  p->expect_seq++;
  if (p->expect_seq == BIG_REQS) nq_conn_close(p->conn, NULL, NULL);
}

START_TEST(backpressure_pauses_and_resumes) {
  env_t e;
  env_init(&e);
  e.sopts.high_water = 100 * 1000;
  e.sopts.hard_limit = 400 * 1000;
  peer_t *p = &e.cl[0];
  p->open_fn = bp_open;
  p->frame_fn = bp_frame;
  client_start(&e, p, "localhost");
  env_run_and_close(&e);
  /* Every request was answered, in order, although the replies (3.8 MB) far exceed the hard
   * limit: the server stopped taking requests while its output was queued. */
  ck_assert_int_eq(p->expect_seq, BIG_REQS);
  ck_assert_int_eq(e.s_frames, BIG_REQS);
  ck_assert_int_eq(e.s_errors, 0);
  ck_assert_uint_gt(e.s_max_queued, 100 * 1000);
  ck_assert_uint_le(e.s_max_queued, 400 * 1000);
}
END_TEST

static void burst_open(peer_t *p) {
  ck_assert_int_eq(nq_conn_send_new(p->conn, json_pack("{s:s}", "type", "burst")), 0);
}

START_TEST(hard_limit_fails_connection) {
  env_t e;
  env_init(&e);
  e.sopts.high_water = 64 * 1024;
  e.sopts.hard_limit = 256 * 1024;
  peer_t *p = &e.cl[0];
  p->open_fn = burst_open;
  client_start(&e, p, "localhost");
  env_run_and_close(&e);
  ck_assert_int_eq(e.s_burst_fail, NQ_ETOOBIG);
  ck_assert_int_eq(e.s_errors, 1);
  ck_assert_int_eq(e.s_last_err, NQ_ETOOBIG);
  ck_assert_int_eq(e.s_closed, 1);
  ck_assert_int_eq(p->closed, 1);
}
END_TEST

#define HOLD_PINGS 5

static void hold_open(peer_t *p) {
  ck_assert_int_eq(nq_conn_send_new(p->conn, json_pack("{s:s}", "type", "hold")), 0);
  for (int i = 0; i < HOLD_PINGS; i++)
    ck_assert_int_eq(nq_conn_send_new(p->conn, json_pack("{s:s, s:i}", "type", "ping", "seq", i)),
                     0);
}

static void hold_frame(peer_t *p, json_t *msg) {
  int64_t seq;
  ck_assert_int_eq(nq_msg_get_int(msg, "seq", 0, INT64_MAX, &seq), 0);
  ck_assert_int_eq(seq, p->expect_seq);
  if (++p->expect_seq == HOLD_PINGS) nq_conn_close(p->conn, NULL, NULL);
}

START_TEST(owner_holds_input) {
  env_t e;
  env_init(&e);
  peer_t *p = &e.cl[0];
  p->open_fn = hold_open;
  p->frame_fn = hold_frame;
  client_start(&e, p, "localhost");
  env_run_and_close(&e);
  ck_assert_int_eq(p->expect_seq, HOLD_PINGS);
  ck_assert_int_eq(e.s_frames, 1 + HOLD_PINGS);
  ck_assert_int_eq(e.s_errors, 0);
}
END_TEST

/* ---- connect failures ---- */

START_TEST(connect_refused) {
  env_t e;
  env_init(&e);
  env_stop(&e);
  int port = tu_free_port();
  ck_assert_int_gt(port, 0);
  peer_t *p = &e.cl[0];
  p->open_fn = must_not_open;
  p->close_fn = NULL;
  client_start_ex(&e, p, "127.0.0.1", "localhost", e.cctx, port);
  env_run_and_close(&e);
  ck_assert_int_eq(p->errors, 1);
  ck_assert_int_eq(p->last_err, NQ_EIO);
  ck_assert_int_eq(p->closed, 1);
}
END_TEST

START_TEST(api_misuse) {
  env_t e;
  env_init(&e);
  nq_conn_t *c = (nq_conn_t *)1;
  nq_conn_opts_t o;
  memset(&o, 0, sizeof o);
  /* A server context cannot connect, a client context cannot accept; bad ports, no name. */
  ck_assert_int_eq(nq_conn_connect(&e.loop, "127.0.0.1", e.port, e.sctx, "localhost", &o, &c),
                   NQ_EINVAL);
  ck_assert_ptr_null(c);
  ck_assert_int_eq(nq_conn_connect(&e.loop, "127.0.0.1", 0, e.cctx, "localhost", &o, &c),
                   NQ_EINVAL);
  ck_assert_int_eq(nq_conn_connect(&e.loop, "127.0.0.1", e.port, e.cctx, "", &o, &c), NQ_EINVAL);
  ck_assert_int_eq(nq_conn_connect(&e.loop, "127.0.0.1", e.port, e.cctx, NULL, &o, &c),
                   NQ_EINVAL);
  ck_assert_int_eq(nq_conn_accept(&e.loop, (uv_stream_t *)&e.listener, e.cctx, &o, &c),
                   NQ_EINVAL);
  /* Context errors. */
  nq_tls_ctx_t *x = (nq_tls_ctx_t *)1;
  char cert[512], key[512];
  snprintf(cert, sizeof cert, "%s/server.pem", e.dir);
  snprintf(key, sizeof key, "%s/ca.key", e.dir);
  ck_assert_int_eq(nq_tls_ctx_server_new("/nonexistent/cert.pem", key, &x), NQ_EIO);
  ck_assert_ptr_null(x);
  ck_assert_int_eq(nq_tls_ctx_server_new(cert, key, &x), NQ_ETLS); /* key of another cert */
  ck_assert_int_eq(nq_tls_ctx_client_new("/nonexistent/ca.pem", &x), NQ_ENOTFOUND);
  ck_assert_ptr_null(x);
  /* A CA file that is not PEM says so: a key, a text file, an empty file, a DER certificate. */
  ck_assert_int_eq(nq_tls_ctx_client_new(key, &x), NQ_EINVAL);
  char odd[512];
  snprintf(odd, sizeof odd, "%s/odd.pem", e.dir);
  static const char *const bodies[] = {"hello\n", "", "\x30\x82\x01\x0a"};
  for (int i = 0; i < 3; i++) {
    FILE *f = fopen(odd, "wb");
    ck_assert_ptr_nonnull(f);
    fwrite(bodies[i], 1, strlen(bodies[i]), f);
    fclose(f);
    ck_assert_int_eq(nq_tls_ctx_client_new(odd, &x), NQ_EINVAL);
  }
  ck_assert_int_eq(nq_tls_ctx_client_new(e.dir, &x), NQ_EIO); /* a directory */
  ck_assert_int_eq(nq_tls_ctx_client_new(NULL, &x), 0); /* system trust store */
  ck_assert(!nq_tls_ctx_is_server(x));
  nq_tls_ctx_free(x);
  env_stop(&e);
  env_run_and_close(&e);
}
END_TEST

static Suite *tls_suite(void) {
  Suite *s = suite_create("tls");
  TCase *tc = tcase_create("conn");
  tcase_set_timeout(tc, 15);
  tcase_add_test(tc, exchange);
  tcase_add_test(tc, resolve_and_ip_identity);
  tcase_add_test(tc, tls12_works);
  tcase_add_test(tc, wrong_hostname_rejected);
  tcase_add_test(tc, wrong_ip_rejected);
  tcase_add_test(tc, other_ca_rejected);
  tcase_add_test(tc, plaintext_refused);
  tcase_add_test(tc, handshake_timeout);
  tcase_add_test(tc, failed_accept_keeps_listening);
  tcase_add_test(tc, idle_timeout);
  tcase_add_test(tc, oversized_frame_closes_only_offender);
  tcase_add_test(tc, bad_json_closes_only_offender);
  tcase_add_test(tc, owner_picks_error_code);
  tcase_add_test(tc, backpressure_pauses_and_resumes);
  tcase_add_test(tc, hard_limit_fails_connection);
  tcase_add_test(tc, owner_holds_input);
  tcase_add_test(tc, connect_refused);
  tcase_add_test(tc, api_misuse);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  /* libuv writes with write(2): a peer that resets would otherwise kill the test with SIGPIPE. */
  signal(SIGPIPE, SIG_IGN);
  nq_log_init("test_tls", NQ_LOG_WARN);
  return tu_run_suite(tls_suite());
}
