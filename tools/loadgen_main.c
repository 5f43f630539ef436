/* nq-loadgen: many concurrent TLS clients against an nq-server, for benchmarks (scripts/bench-server.sh).
 * It lives in tools/ because it is no part of the server: it is a client of it, built from the
 * common library alone, speaking the protocol through nq/proto.h like every other peer.
 *
 * Each connection enrols (name lg-<run>-<i>), then loops: get_work, report every assignment at once
 * (pipelined), wait for the acks, repeat -- at once (a closed loop: the server's throughput), or
 * after --think MS (about; each pause is drawn from 0.5..1.5 x MS) for a paced load at which
 * latencies mean something. Results are fake but possible (c2 = c4 = c8 = 0, nodes = 1) unless
 * --solve is given, in which case each unit is really solved (only sensible for small N). With
 * --idle the connections only say hello and stay open (for memory measurements). With
 * --admin-token-file F one more connection, as the operator, asks for the status every
 * --status-ms MS (default 200) and times each answer. With --reconnect a connection that the
 * server closes or drops (a restart, `busy`) comes back as nq-client does: after a jittered
 * exponential backoff (0.5 s doubling to --backoff-max, +-25%), with the token it enrolled with;
 * it never gives up. It then prints "all N welcomed again at +S s (wall MS)" each time every
 * connection is back, and the summary the time each took to come back (scripts/bench-storm.sh);
 * --stop-after K ends the run when every connection has been welcomed K times.
 * Prints one summary line: connections, results acked, results/s, errors, and the latency of
 * get_work (request to work/no_work), result (to its ack) and status: p50, p99 and max in ms, of
 * the requests sent once every connection was welcomed.
 */
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "nq/addr.h"
#include "nq/conn.h"
#include "nq/files.h"
#include "nq/log.h"
#include "nq/opts.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "nq/solver.h"
#include "nq/tls.h"
#include "nq/unit.h"

typedef struct lg_s lg_t;

/* Latencies of one kind of request, in seconds (a growing array; a run keeps at most a few
 * hundred thousand). */
typedef struct lat_s {
  double *v;
  size_t n, cap;
} lat_t;

static void lat_add(lat_t *l, double x) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 1024;
    double *v = realloc(l->v, cap * sizeof *v);
    if (!v) return; /* a sample less; the run goes on */
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = x;
}

/* A request's latency, counted only when it was sent after every connection was welcomed: the
 * handshakes of hundreds of connections opening at once would otherwise queue the first requests
 * behind them and measure the start, not the steady state. */
static void lat_sample(lg_t *lg, lat_t *l, double sent);

static int dbl_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* "name_n=.. name_p50_ms=.. name_p99_ms=.. name_max_ms=.." (the nearest-rank percentiles). */
static void lat_print(const char *name, lat_t *l) {
  if (l->n == 0) {
    printf(" %s_n=0", name);
    return;
  }
  qsort(l->v, l->n, sizeof *l->v, dbl_cmp);
  size_t i50 = (l->n + 1) / 2, i99 = (size_t)(0.99 * (double)l->n + 0.999999);
  if (i50 < 1) i50 = 1;
  if (i99 < 1) i99 = 1;
  printf(" %s_n=%zu %s_p50_ms=%.2f %s_p99_ms=%.2f %s_max_ms=%.2f", name, l->n, name,
         1e3 * l->v[i50 - 1], name, 1e3 * l->v[i99 - 1], name, 1e3 * l->v[l->n - 1]);
}

#define LG_PIPE_MAX 256 /* results in flight on one connection (want's maximum) */

typedef struct lg_conn_s {
  lg_t *lg;
  nq_conn_t *c;
  uv_timer_t retry;
  int idx;
  int admin;    /* the status prober */
  int awaiting; /* acks outstanding */
  int welcomed;
  int done;
  double t_req;                 /* when the get_work (or status) in flight was sent */
  double t_res[LG_PIPE_MAX];    /* when each result in flight was sent: acks come in order */
  int res_head;
  char *token;                  /* --reconnect: the token it enrolled with */
  int timer_open;               /* retry is not closed */
  int attempt;                  /* --reconnect: failed attempts since it was last welcomed */
  int64_t retry_after;          /* the last `busy` asked for this wait (s); 0: none */
  double t_down;                /* when it lost a welcomed session (0: it has not) */
} lg_conn_t;

struct lg_s {
  uv_loop_t *loop;
  nq_tls_ctx_t *tls;
  const char *host, *enrol, *admin_token;
  int port, nconns, want, seconds, solve, idle, think_ms, status_ms, reconnect;
  int stop_after, all_back; /* --stop-after K: stop once every connection was welcomed K times */
  double backoff_max;
  unsigned run, rng;
  lg_conn_t *conns;
  lg_conn_t prober;
  int open, welcomed, closed, stopping;
  uint64_t acks, errors, work_msgs, nowork;
  double t0, t_all_welcomed;
  lat_t lat_work, lat_result, lat_status, lat_back;
  uint64_t reconnects, busy;
  uv_timer_t stop_timer, report_timer;
};

static void lat_sample(lg_t *lg, lat_t *l, double sent) {
  if (lg->t_all_welcomed > 0 && sent >= lg->t_all_welcomed) lat_add(l, nq_now_mono() - sent);
}

static void lg_stop(lg_t *lg);

static void lg_get_work(lg_conn_t *lc) {
  nq_get_work_t g = {lc->lg->want};
  lc->t_req = nq_now_mono();
  nq_conn_send_new(lc->c, nq_get_work_pack(&g));
}

static void on_retry(uv_timer_t *t);

/* The next cycle: at once, or after a think time drawn from 0.5..1.5 x think_ms. */
static void lg_next(lg_conn_t *lc) {
  lg_t *lg = lc->lg;
  if (lg->stopping) return;
  if (lg->think_ms <= 0) {
    lg_get_work(lc);
    return;
  }
  uint64_t ms = (uint64_t)lg->think_ms / 2 + (uint64_t)(rand_r(&lg->rng) % (lg->think_ms + 1));
  uv_timer_start(&lc->retry, on_retry, ms, 0);
}

static void lg_status(lg_conn_t *lc) {
  nq_admin_req_t q = {.cmd = NQ_ADMIN_STATUS};
  lc->t_req = nq_now_mono();
  nq_conn_send_new(lc->c, nq_admin_req_pack(&q));
}

static void on_retry(uv_timer_t *t) {
  lg_conn_t *lc = t->data;
  if (!lc->c || lc->lg->stopping) return;
  if (lc->admin) lg_status(lc);
  else lg_get_work(lc);
}

static void lg_send_result(lg_conn_t *lc, const nq_assignment_t *a) {
  nq_result_t r = {a->id, "", {0, 0, 0, 0, 1}, 0.0, NQ_SOLVER_VERSION, ""};
  snprintf(r.unit, sizeof r.unit, "%s", a->unit);
  if (lc->lg->solve) {
    nq_unit_t u;
    if (nq_unit_parse(a->unit, &u, NULL, 0) != 0 || nq_fast_solve_unit(&u, &r.counts) != 0) {
      lc->lg->errors++;
      return;
    }
  }
  if (lc->awaiting < LG_PIPE_MAX && nq_conn_send_new(lc->c, nq_result_pack(&r)) == 0)
    lc->t_res[(lc->res_head + lc->awaiting++) % LG_PIPE_MAX] = nq_now_mono();
}

/* The answer to the oldest result in flight: its latency. */
static void result_answered(lg_conn_t *lc) {
  if (lc->awaiting <= 0) return;
  lat_sample(lc->lg, &lc->lg->lat_result, lc->t_res[lc->res_head]);
  lc->res_head = (lc->res_head + 1) % LG_PIPE_MAX;
  lc->awaiting--;
}

static void on_open(nq_conn_t *c) {
  lg_conn_t *lc = nq_conn_data(c);
  char name[64];
  snprintf(name, sizeof name, "lg-%u-%d", lc->lg->run, lc->idx);
  lc->lg->open++;
  nq_hello_t h = {NQ_PROTO_VERSION, NQ_ROLE_CLIENT, NULL, lc->lg->enrol, name,
                  NQ_SOLVER_VERSION, 0, "nq-loadgen " NQ_VERSION_STRING, NULL, 0, 0, 0, 0, NULL};
  if (lc->token) { /* back after a reconnect: log in, do not enrol again */
    h.token = lc->token;
    h.enrol = h.name = NULL;
  }
  if (lc->admin) {
    h.role = NQ_ROLE_ADMIN;
    h.token = lc->lg->admin_token;
    h.enrol = h.name = NULL;
  }
  nq_conn_send_new(c, nq_hello_pack(&h));
}

/* A message the parser refused, or one we did not expect: counted, and the first few logged. */
static void lg_error(lg_conn_t *lc, const char *what, const char *code, const char *message) {
  if (++lc->lg->errors <= 5)
    nq_log(NQ_LOG_WARN, "conn %d: %s %s: %s", lc->idx, what, code, message);
}

static void on_welcome(lg_conn_t *lc, const json_t *m) {
  lg_t *lg = lc->lg;
  nq_welcome_t w;
  nq_proto_err_t err;
  if (nq_welcome_parse(m, &w, &err) != 0) {
    lg_error(lc, "welcome", nq_errcode_name(err.code), err.message);
    nq_conn_close(lc->c, NULL, NULL);
    return;
  }
  lc->welcomed = 1;
  if (lc->admin) {
    lg_status(lc);
    return;
  }
  if (lg->reconnect && w.token && !lc->token) lc->token = strdup(w.token);
  lc->attempt = 0;
  if (lc->t_down > 0) {
    lat_add(&lg->lat_back, nq_now_mono() - lc->t_down);
    lc->t_down = 0;
  }
  if (++lg->welcomed == lg->nconns) {
    lg->t_all_welcomed = nq_now_mono();
    if (lg->reconnect) { /* the storm benchmark waits for this line */
      uv_timeval64_t tv;
      uv_gettimeofday(&tv);
      printf("all %d welcomed again at +%.3f s (wall %lld ms)\n", lg->nconns,
             lg->t_all_welcomed - lg->t0, (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000);
      fflush(stdout);
    }
    if (lg->stop_after > 0 && ++lg->all_back >= lg->stop_after) lg_stop(lg);
  }
  if (!lg->idle) lg_next(lc);
}

static void on_admin_reply(lg_conn_t *lc, const json_t *m) {
  (void)m;
  lat_sample(lc->lg, &lc->lg->lat_status, lc->t_req);
  if (!lc->lg->stopping) uv_timer_start(&lc->retry, on_retry, (uint64_t)lc->lg->status_ms, 0);
}

static void on_work(lg_conn_t *lc, const json_t *m) {
  nq_work_t w;
  nq_proto_err_t err;
  lc->lg->work_msgs++;
  lat_sample(lc->lg, &lc->lg->lat_work, lc->t_req);
  if (nq_work_parse(m, &w, &err) != 0) {
    lg_error(lc, "work", nq_errcode_name(err.code), err.message);
    w.n = 0;
  }
  for (int i = 0; i < w.n; i++) lg_send_result(lc, &w.a[i]);
  if (lc->awaiting == 0) uv_timer_start(&lc->retry, on_retry, 100, 0);
}

static void on_ack(lg_conn_t *lc, const json_t *m) {
  nq_ack_t a;
  nq_proto_err_t err;
  lg_t *lg = lc->lg;
  if (nq_ack_parse(m, &a, &err) != 0) lg_error(lc, "ack", nq_errcode_name(err.code), err.message);
  else lg->acks++;
  result_answered(lc);
  if (lc->awaiting == 0) lg_next(lc);
}

static void on_no_work(lg_conn_t *lc, const json_t *m) {
  nq_no_work_t nw;
  nq_proto_err_t err;
  lc->lg->nowork++;
  lat_sample(lc->lg, &lc->lg->lat_work, lc->t_req);
  if (nq_no_work_parse(m, &nw, &err) != 0) {
    lg_error(lc, "no_work", nq_errcode_name(err.code), err.message);
    nw.reason = NQ_NOWORK_NONE_PENDING;
  }
  if (nw.reason == NQ_NOWORK_DONE) {
    lc->done = 1;
    nq_conn_close(lc->c, NULL, NULL);
  } else {
    uv_timer_start(&lc->retry, on_retry, 200, 0);
  }
}

static void on_error_msg(lg_conn_t *lc, const json_t *m) {
  nq_error_msg_t e;
  nq_proto_err_t err;
  if (nq_error_parse(m, &e, &err) != 0) {
    lg_error(lc, "error", nq_errcode_name(err.code), err.message);
    return;
  }
  lg_error(lc, "error", e.name, e.message);
  if (e.code == NQ_ERR_BUSY) {
    lc->lg->busy++;
    lc->retry_after = e.retry_after;
  }
  if (lc->awaiting > 0 && !e.fatal) {
    result_answered(lc);
    if (lc->awaiting == 0) lg_next(lc);
  }
}

/* What the server may send a load-generating client. */
static void (*const handlers[NQ_MSG_COUNT])(lg_conn_t *lc, const json_t *m) = {
    [NQ_MSG_WELCOME] = on_welcome, [NQ_MSG_WORK] = on_work,     [NQ_MSG_ACK] = on_ack,
    [NQ_MSG_NO_WORK] = on_no_work, [NQ_MSG_ERROR] = on_error_msg,
    [NQ_MSG_ADMIN_REPLY] = on_admin_reply,
};

static void on_frame(nq_conn_t *c, json_t *m) {
  lg_conn_t *lc = nq_conn_data(c);
  const char *name;
  nq_msg_type_t t = nq_msg_type(m, &name);
  if (handlers[t]) handlers[t](lc, m);
  else lg_error(lc, name ? name : "?", "unexpected", "message");
}

static void on_error(nq_conn_t *c, int status) {
  lg_conn_t *lc = nq_conn_data(c);
  (void)status;
  if (!lc->lg->stopping && ++lc->lg->errors <= 5)
    nq_log(NQ_LOG_WARN, "conn %d: %s", lc->idx, nq_conn_errstr(c));
}

static void lg_reconnect(uv_timer_t *t);

static void on_close(nq_conn_t *c) {
  lg_conn_t *lc = nq_conn_data(c);
  lg_t *lg = lc->lg;
  lc->c = NULL;
  if (lc->welcomed && !lc->admin) {
    lc->welcomed = 0;
    lg->welcomed--;
    if (lc->t_down == 0) lc->t_down = nq_now_mono();
  }
  if (lg->reconnect && !lg->stopping && !lc->done && !lc->admin) {
    /* As nq-client: 0.5 s doubling up to the maximum, +-25%; after `busy`, at least the
     * server's retry_after R (R .. 1.5 R). */
    double d = 0.5;
    for (int i = 0; i < lc->attempt && d < lg->backoff_max; i++) d *= 2;
    if (d > lg->backoff_max) d = lg->backoff_max;
    d *= 0.75 + 0.5 * (double)(rand_r(&lg->rng) % 10001) / 10000.0;
    double asked = (double)lc->retry_after * (1 + 0.5 * (double)(rand_r(&lg->rng) % 10001) / 10000.0);
    lc->retry_after = 0;
    if (asked > d) d = asked;
    lc->attempt++;
    uv_timer_stop(&lc->retry);
    uv_timer_start(&lc->retry, lg_reconnect, (uint64_t)(d * 1000), 0);
    return;
  }
  if (!lc->admin) lg->closed++;
  lc->timer_open = 0;
  uv_close((uv_handle_t *)&lc->retry, NULL);
}

static void lg_stop(lg_t *lg) {
  if (lg->stopping) return;
  lg->stopping = 1;
  for (int i = 0; i < lg->nconns; i++) {
    lg_conn_t *lc = &lg->conns[i];
    if (lc->c) {
      nq_conn_close(lc->c, NULL, NULL);
    } else if (lc->timer_open) { /* waiting to reconnect */
      lc->timer_open = 0;
      uv_close((uv_handle_t *)&lc->retry, NULL);
    }
  }
  if (lg->prober.c) nq_conn_close(lg->prober.c, NULL, NULL);
  uv_close((uv_handle_t *)&lg->stop_timer, NULL);
  uv_close((uv_handle_t *)&lg->report_timer, NULL);
}

static void on_stop(uv_timer_t *t) {
  lg_stop(t->data);
}

/* Stop early when every connection has finished (job done) or failed. */
static void on_report(uv_timer_t *t) {
  lg_t *lg = t->data;
  if (lg->closed == lg->nconns) lg_stop(lg);
}

/* Open one connection (client i, or the status prober); 0 or -1. */
static int lg_connect(lg_t *lg, lg_conn_t *lc, int idx, int admin) {
  lc->lg = lg;
  lc->idx = idx;
  lc->admin = admin;
  if (!lc->timer_open) {
    uv_timer_init(lg->loop, &lc->retry);
    lc->retry.data = lc;
    lc->timer_open = 1;
  }
  nq_conn_opts_t co = {.on_open = on_open, .on_frame = on_frame, .on_error = on_error,
                       .on_close = on_close, .data = lc, .handshake_timeout_ms = 30000};
  if (nq_conn_connect(lg->loop, lg->host, lg->port, lg->tls, lg->host, &co, &lc->c) == 0)
    return 0;
  lg->errors++;
  if (!admin) lg->closed++;
  lc->timer_open = 0;
  uv_close((uv_handle_t *)&lc->retry, NULL);
  return -1;
}

/* --reconnect: the backoff is over; try again (a failure to even start is one more attempt). */
static void lg_reconnect(uv_timer_t *t) {
  lg_conn_t *lc = t->data;
  lg_t *lg = lc->lg;
  if (lg->stopping) return;
  lg->reconnects++;
  nq_conn_opts_t co = {.on_open = on_open, .on_frame = on_frame, .on_error = on_error,
                       .on_close = on_close, .data = lc, .handshake_timeout_ms = 30000};
  if (nq_conn_connect(lg->loop, lg->host, lg->port, lg->tls, lg->host, &co, &lc->c) != 0) {
    lc->attempt++;
    uv_timer_start(&lc->retry, lg_reconnect, (uint64_t)(lg->backoff_max * 1000), 0);
  }
}

/* --enrol-file, --admin-token-file: the first line of the file, kept here. */
static int read_first_line(const char *v, const char **dst, char *buf, size_t size, char *err,
                           size_t len) {
  if (nq_file_read_line(v, buf, size) != 0)
    return nq_errorf(err, len, NQ_EINVAL, "cannot read %s", v);
  *dst = buf;
  return 0;
}

static int set_enrol_file(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  static char key[256];
  return read_first_line(v, &((lg_t *)base)->enrol, key, sizeof key, err, len);
}

static int set_token_file(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  static char token[256];
  return read_first_line(v, &((lg_t *)base)->admin_token, token, sizeof token, err, len);
}

#define L_INT(nm, field, a, l, h, d, hlp)                                                        \
  {NQ_OPT_INT, nm, .off = offsetof(lg_t, field), .arg = a, .lo = l, .hi = h, .def = d, .help = hlp}
#define L_FLAG(nm, field, hlp) {NQ_OPT_FLAG, nm, .off = offsetof(lg_t, field), .help = hlp}

/* Where --server and --ca go before they are checked. */
typedef struct lg_args_s {
  const char *server, *ca;
} lg_args_t;

static const nq_opt_t lg_args_table[] = {
    {NQ_OPT_STRING, "server", .off = offsetof(lg_args_t, server), .arg = "HOST:PORT",
     .help = "the server to load"},
    {NQ_OPT_STRING, "ca", .off = offsetof(lg_args_t, ca), .arg = "CA.pem",
     .help = "the CA of the server's certificate"},
    {NQ_OPT_END}};

static const nq_opt_t lg_table[] = {
    {NQ_OPT_STRING, "enrol", .off = offsetof(lg_t, enrol), .arg = "KEY",
     .help = "the enrolment key each connection enrols with"},
    {NQ_OPT_STRING, "enrol-file", .arg = "FILE", .set = set_enrol_file,
     .help = "the same, from the first line of FILE"},
    L_INT("conns", nconns, "N", 1, 100000, "100", "simulated clients, one connection each"),
    L_INT("seconds", seconds, "S", 1, 86400, "10", "how long the load runs"),
    L_INT("want", want, "K", 1, LG_PIPE_MAX, "8", "assignments each client asks for at once"),
    L_INT("think", think_ms, "MS", 0, 3600000, "0", "a client's pause before each result"),
    L_FLAG("solve", solve, "solve the units for real (else fake results)"),
    L_FLAG("idle", idle, "connect, log in and stay silent"),
    {NQ_OPT_STRING, "admin-token-file", .arg = "F", .set = set_token_file,
     .help = "also ask the server's status over an admin connection, timing it"},
    L_INT("status-ms", status_ms, "MS", 1, 3600000, "200", "the status prober's period"),
    L_FLAG("reconnect", reconnect, "a closed connection comes back after a backoff"),
    {NQ_OPT_DOUBLE, "backoff-max", .off = offsetof(lg_t, backoff_max), .arg = "S", .dlo = 0.5,
     .dhi = 3600, .def = "60", .help = "--reconnect: the longest backoff"},
    L_INT("stop-after", stop_after, "K", 0, 1000000, "0",
          "--reconnect: stop once every connection was welcomed K times (0: after --seconds)"),
    {NQ_OPT_END}};

int main(int argc, char **argv) {
  lg_t lg;
  lg_args_t args = {0};
  memset(&lg, 0, sizeof lg);
  nq_opts_t opts = {
      .prog = "nq-loadgen",
      .summary = "load generator for nq-server",
      .usage = "nq-loadgen --server HOST:PORT --ca CA.pem (--enrol KEY | --enrol-file FILE)\n"
               "                  [--conns 100] [--seconds 10] [--want 8] [--think MS] [--solve]\n"
               "                  [--idle] [--admin-token-file F [--status-ms 200]]\n"
               "                  [--reconnect [--backoff-max 60] [--stop-after K]]",
      .version = nq_print_version,
      .group = {{lg_args_table, &args}, {lg_table, &lg}}};
  int rc = nq_opts_main(&opts, argc, argv, 2);
  if (rc >= 0) return rc;
  char host[NQ_HOST_MAX];
  if (!args.server || nq_hostport_parse(args.server, host, sizeof host, &lg.port, 0) != 0 ||
      !args.ca || !lg.enrol || opts.optind < argc) {
    nq_opts_help(&opts, stderr);
    return 2;
  }
  const char *ca = args.ca;
  lg.host = host;
  nq_log_init("nq-loadgen", NQ_LOG_WARN);
  signal(SIGPIPE, SIG_IGN);
  lg.run = (unsigned)uv_hrtime() % 1000000u;
  lg.rng = lg.run;

  uv_loop_t loop;
  uv_loop_init(&loop);
  lg.loop = &loop;
  if (nq_tls_ctx_client_new(ca, &lg.tls) != 0) {
    fprintf(stderr, "nq-loadgen: cannot load %s\n", ca);
    return 1;
  }
  lg.conns = calloc((size_t)lg.nconns, sizeof *lg.conns);
  if (!lg.conns) return 1;
  lg.t0 = nq_now_mono();
  for (int i = 0; i < lg.nconns; i++) lg_connect(&lg, &lg.conns[i], i, 0);
  if (lg.admin_token) lg_connect(&lg, &lg.prober, -1, 1);
  uv_timer_init(&loop, &lg.stop_timer);
  lg.stop_timer.data = &lg;
  uv_timer_start(&lg.stop_timer, on_stop, (uint64_t)lg.seconds * 1000, 0);
  uv_timer_init(&loop, &lg.report_timer);
  lg.report_timer.data = &lg;
  uv_timer_start(&lg.report_timer, on_report, 200, 200);
  uv_run(&loop, UV_RUN_DEFAULT);
  double t1 = nq_now_mono();
  double span = t1 - (lg.t_all_welcomed > 0 ? lg.t_all_welcomed : lg.t0);
  printf("conns=%d welcomed=%d acks=%llu seconds=%.2f results_per_s=%.0f work_msgs=%llu "
         "no_work=%llu errors=%llu",
         lg.nconns, lg.welcomed, (unsigned long long)lg.acks, span,
         span > 0 ? (double)lg.acks / span : 0.0, (unsigned long long)lg.work_msgs,
         (unsigned long long)lg.nowork, (unsigned long long)lg.errors);
  lat_print("get_work", &lg.lat_work);
  lat_print("result", &lg.lat_result);
  if (lg.admin_token) lat_print("status", &lg.lat_status);
  if (lg.reconnect) {
    printf(" reconnects=%llu busy=%llu", (unsigned long long)lg.reconnects,
           (unsigned long long)lg.busy);
    lat_print("back", &lg.lat_back);
  }
  printf("\n");
  for (int i = 0; i < lg.nconns; i++) free(lg.conns[i].token);
  free(lg.lat_back.v);
  free(lg.lat_work.v);
  free(lg.lat_result.v);
  free(lg.lat_status.v);
  free(lg.conns);
  nq_tls_ctx_free(lg.tls);
  rc = uv_loop_close(&loop);
  return rc == 0 && lg.errors == 0 ? 0 : 1;
}
