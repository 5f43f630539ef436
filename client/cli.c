/* nq-client: the daemon context and the connection loop (see cli.h, docs/client.md).
 *
 * Connection states (cli_t.state):
 *   IDLE        not connected; the retry timer runs the next attempt (jittered backoff)
 *   CONNECTING  TCP + TLS handshake in progress
 *   HELLO       hello sent, waiting for welcome
 *   READY       welcome received: journal sent first, then get_work / progress / result
 * Work never waits on the connection: the worker keeps solving while we are disconnected, and a
 * finished result goes to the journal first and to the server when there is one.
 */
#include "cli.h"
#include "journal.h"
#include "worker.h"

#include "nq/addr.h"
#include "nq/conn.h"
#include "nq/files.h"
#include "nq/frame.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/tls.h"
#include "nq/unit.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { ST_IDLE = 0, ST_CONNECTING, ST_HELLO, ST_READY };

#define STOP_GRACE_MS 10000 /* most time spent waiting for acks after a stop request */
#define DEFAULT_RETRY_S 10
#define SHORT_UNIT_S 0.25 /* units faster than this get a deeper prefetch */
#define SHORT_PREFETCH 4

typedef struct cli_s {
  const cli_config_t *cfg;
  uv_loop_t loop;
  nq_tls_ctx_t *tls;
  cli_journal_t j;
  cli_worker_t worker;
  uv_timer_t retry_timer, progress_timer, stop_timer;
  uv_signal_t sigint, sigterm;
  nq_conn_t *conn;
  int state;
  char token[CLI_TOKEN_MAX];
  int enrolling;
  unsigned rng;
  int attempt;             /* reconnect attempts since the last welcome */
  int progress_interval;   /* seconds, from welcome */
  int max_outstanding;     /* from welcome */
  /* Work. */
  cli_assign_t *queue;     /* received, not started, in arrival order */
  size_t qlen, qcap;
  int running;
  cli_assign_t cur;        /* the running assignment */
  uint64_t cur_nodes, cur_nodes_sent;
  int cur_progressed;      /* a progress was sent for cur */
  int64_t *sent;           /* result ids sent on this connection and not answered yet */
  size_t nsent, capsent;
  int getwork_inflight;
  int nowork_wait;         /* after no_work (or nothing new): wait for the retry timer */
  long units_done;         /* units solved by this process */
  double last_seconds;     /* solve time of the last unit; -1 before the first */
  /* Ending. */
  int stopping;            /* signal: no new work, finish reporting, bye */
  int done;                /* the limit was reached or the job is done */
  int job_done;            /* the server says the job is finished */
  int token_stored;        /* cli->token came from STATE/token */
  int fatal;               /* exit code of a fatal condition, 0 if none */
  int finishing, released;
  int exit_code;
} cli_t;

static void cli_pump(cli_t *cli);
static void on_progress_timer(uv_timer_t *t);
static void cli_finish(cli_t *cli, int code);

/* ---- small helpers ---- */

static double jitter(cli_t *cli) {
  return 0.75 + 0.5 * ((double)rand_r(&cli->rng) / RAND_MAX); /* +-25% */
}

static int64_t *sent_find(cli_t *cli, int64_t id) {
  for (size_t i = 0; i < cli->nsent; i++)
    if (cli->sent[i] == id) return &cli->sent[i];
  return NULL;
}

static int sent_add(cli_t *cli, int64_t id) {
  if (sent_find(cli, id)) return 0;
  if (cli->nsent == cli->capsent) {
    size_t nc = cli->capsent ? cli->capsent * 2 : 8;
    int64_t *v = realloc(cli->sent, nc * sizeof *v);
    if (!v) return NQ_ENOMEM;
    cli->sent = v;
    cli->capsent = nc;
  }
  cli->sent[cli->nsent++] = id;
  return 0;
}

static int sent_take(cli_t *cli, int64_t id) {
  int64_t *p = sent_find(cli, id);
  if (!p) return 0;
  *p = cli->sent[--cli->nsent];
  return 1;
}

static int queue_has(cli_t *cli, int64_t id) {
  for (size_t i = 0; i < cli->qlen; i++)
    if (cli->queue[i].id == id) return 1;
  return 0;
}

static int queue_push(cli_t *cli, const cli_assign_t *a) {
  if (cli->qlen == cli->qcap) {
    size_t nc = cli->qcap ? cli->qcap * 2 : 8;
    cli_assign_t *v = realloc(cli->queue, nc * sizeof *v);
    if (!v) return NQ_ENOMEM;
    cli->queue = v;
    cli->qcap = nc;
  }
  cli->queue[cli->qlen++] = *a;
  return 0;
}

static int send_new(cli_t *cli, json_t *msg) {
  if (!cli->conn || nq_conn_state(cli->conn) != NQ_CONN_OPEN) {
    json_decref(msg);
    return NQ_ENOTOPEN;
  }
  int rc = nq_conn_send_new(cli->conn, msg);
  if (rc) nq_log(NQ_LOG_WARN, "send failed: %s", nq_strerror(rc));
  return rc;
}

/* ---- reporting ---- */

static int send_result(cli_t *cli, const cli_result_t *r) {
  int rc = send_new(cli, cli_result_to_json(r));
  if (rc == 0) rc = sent_add(cli, r->id);
  return rc;
}

/* After welcome: everything in the journal goes out before any other request. */
static void send_journal(cli_t *cli) {
  cli_result_t *v = NULL;
  size_t n = 0, bad = 0;
  if (cli_journal_list(&cli->j, &v, &n, &bad) != 0) return;
  if (n) nq_log(NQ_LOG_INFO, "reporting %zu journalled result(s)", n);
  for (size_t i = 0; i < n && cli->state == ST_READY; i++) send_result(cli, &v[i]);
  free(v);
}

/* The server answered result `id` (ack or refusal): the journal entry has done its job. */
static void result_answered(cli_t *cli, int64_t id) {
  sent_take(cli, id);
  int rc = cli_journal_remove(&cli->j, id);
  if (rc && rc != NQ_ENOTFOUND)
    nq_log(NQ_LOG_WARN, "cannot remove journal entry %" PRId64 ": %s", id, nq_strerror(rc));
}

/* The job is finished: what we hold will never be needed, here or in a later run. */
static void job_finished(cli_t *cli) {
  cli->done = cli->job_done = 1;
  for (size_t i = 0; i < cli->qlen; i++) cli_assigned_remove(&cli->j, cli->queue[i].id);
  cli->qlen = 0;
  cli_worker_cancel(&cli->worker);
}

/* ---- the connection ---- */

static void schedule_reconnect(cli_t *cli);

static void on_open(nq_conn_t *c) {
  cli_t *cli = nq_conn_data(c);
  const cli_config_t *cfg = cli->cfg;
  json_t *h = json_pack("{s:s, s:i, s:s, s:s, s:i, s:s}", "type", "hello", "v",
                        NQ_PROTOCOL_VERSION, "role", "client", "solver", NQ_SOLVER_VERSION,
                        "threads", cfg->threads, "software", "nq-client " NQ_VERSION_STRING);
  if (!h) {
    nq_conn_close(c, NULL, NULL);
    return;
  }
  if (cli->enrolling) {
    char name[65];
    const char *nm = cfg->name;
    if (!nm) {
      char host[256];
      if (gethostname(host, sizeof host) != 0) strcpy(host, "client");
      host[sizeof host - 1] = '\0';
      size_t k = 0;
      for (const char *p = host; *p && k < 64; p++) {
        char ch = *p;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '.' || ch == '_' || ch == '-';
        name[k++] = ok ? ch : '-';
      }
      name[k] = '\0';
      nm = k ? name : "client";
    }
    json_object_set_new(h, "enrol", json_string(cfg->enrol));
    json_object_set_new(h, "name", json_string(nm));
  } else {
    json_object_set_new(h, "token", json_string(cli->token));
  }
  cli->state = ST_HELLO;
  nq_log(NQ_LOG_DEBUG, "connected to %s (%s), hello sent", nq_conn_peer(c),
         nq_conn_tls_version(c));
  send_new(cli, h);
}

static void on_error(nq_conn_t *c, int status) {
  cli_t *cli = nq_conn_data(c);
  const char *e = nq_conn_errstr(c);
  if (strstr(e, "certificate verify failed")) {
    nq_log(NQ_LOG_ERROR, "refusing server %s:%d: %s (CA %s)", cli->cfg->host, cli->cfg->port, e,
           cli->cfg->ca);
    if (!cli->fatal) cli->fatal = CLI_EXIT_TLS;
    return;
  }
  nq_log(cli->state == ST_READY ? NQ_LOG_WARN : NQ_LOG_INFO, "connection to %s:%d: %s",
         cli->cfg->host, cli->cfg->port, e[0] ? e : nq_strerror(status));
}

static void on_close(nq_conn_t *c) {
  cli_t *cli = nq_conn_data(c);
  if (cli->conn == c) cli->conn = NULL;
  int was_ready = cli->state == ST_READY;
  cli->state = ST_IDLE;
  cli->nsent = 0; /* unanswered results stay in the journal and go out again */
  cli->getwork_inflight = 0;
  cli->nowork_wait = 0;
  uv_timer_stop(&cli->progress_timer);
  if (cli->finishing) {
    cli_finish(cli, cli->exit_code);
    return;
  }
  if (cli->fatal) {
    cli_finish(cli, cli->fatal);
    return;
  }
  if (was_ready) nq_log(NQ_LOG_WARN, "disconnected from %s:%d", cli->cfg->host, cli->cfg->port);
  if (cli->stopping || cli->job_done) {
    cli_finish(cli, CLI_EXIT_OK); /* the journal keeps what was not acknowledged */
    return;
  }
  schedule_reconnect(cli);
}

static void on_frame(nq_conn_t *c, json_t *msg);

static void cli_connect(cli_t *cli) {
  nq_conn_opts_t o;
  memset(&o, 0, sizeof o);
  o.on_open = on_open;
  o.on_frame = on_frame;
  o.on_error = on_error;
  o.on_close = on_close;
  o.data = cli;
  o.tag = "cli";
  cli->state = ST_CONNECTING;
  nq_log(NQ_LOG_DEBUG, "connecting to %s:%d", cli->cfg->host, cli->cfg->port);
  int rc = nq_conn_connect(&cli->loop, cli->cfg->host, cli->cfg->port, cli->tls, cli->cfg->host,
                           &o, &cli->conn);
  if (rc) {
    cli->conn = NULL;
    cli->state = ST_IDLE;
    nq_log(NQ_LOG_WARN, "cannot connect to %s:%d: %s", cli->cfg->host, cli->cfg->port,
           nq_strerror(rc));
    schedule_reconnect(cli);
  }
}

static void on_retry_timer(uv_timer_t *t) {
  cli_t *cli = t->data;
  if (cli->finishing) return;
  if (cli->state == ST_IDLE && !cli->conn) {
    cli_connect(cli);
  } else {
    cli->nowork_wait = 0;
    cli_pump(cli);
  }
}

/* Jittered exponential backoff: backoff_min doubling up to backoff_max, +-25%. */
static void schedule_reconnect(cli_t *cli) {
  const cli_config_t *cfg = cli->cfg;
  double d = cfg->backoff_min;
  for (int i = 0; i < cli->attempt && d < cfg->backoff_max; i++) d *= 2;
  if (d > cfg->backoff_max) d = cfg->backoff_max;
  d *= jitter(cli);
  cli->attempt++;
  nq_log(cli->attempt > 1 ? NQ_LOG_INFO : NQ_LOG_DEBUG, "reconnecting in %.1f s (attempt %d)", d,
         cli->attempt);
  uv_timer_start(&cli->retry_timer, on_retry_timer, (uint64_t)(d * 1000), 0);
}

/* ---- messages from the server ---- */

static int fatal_code_exit(const char *code) {
  if (!strcmp(code, "auth") || !strcmp(code, "banned")) return CLI_EXIT_AUTH;
  if (!strcmp(code, "version") || !strcmp(code, "bad_message") || !strcmp(code, "not_hello") ||
      !strcmp(code, "unknown_type") || !strcmp(code, "bad_json") || !strcmp(code, "bad_frame") ||
      !strcmp(code, "frame_too_big"))
    return CLI_EXIT_PROTO;
  return 0; /* shutdown, timeout, busy, internal, ...: try again later */
}

static void handle_error(cli_t *cli, json_t *msg) {
  const char *code = "?", *message = "";
  int fatal = 0;
  int64_t id = 0;
  nq_msg_opt_str(msg, "code", "?", &code);
  nq_msg_opt_str(msg, "message", "", &message);
  json_t *f = json_object_get(msg, "fatal");
  fatal = json_is_true(f);
  int has_id = nq_msg_opt_int(msg, "id", 0, INT64_MAX, 0, &id) == 0 && id > 0;
  if (fatal) {
    int ex = fatal_code_exit(code);
    if (ex) {
      const char *what = ex == CLI_EXIT_AUTH ? (cli->enrolling ? "enrolment refused"
                                                               : "authentication refused")
                                             : "protocol error";
      if (!strcmp(code, "banned")) what = "this client is banned";
      if (!strcmp(code, "version")) what = "protocol version mismatch";
      nq_log(NQ_LOG_ERROR, "%s: server says %s: %s", what, code, message);
      if (!strcmp(code, "auth") && cli->token_stored)
        nq_log(NQ_LOG_ERROR, "the token stored in %s/token was refused; remove that file to "
               "enrol again with --enrol", cli->j.dir);
      cli->fatal = ex;
    } else {
      nq_log(NQ_LOG_WARN, "server closed the session: %s: %s", code, message);
    }
    nq_conn_close(cli->conn, NULL, NULL);
    return;
  }
  if (has_id && sent_find(cli, id)) {
    /* A refused result will never be accepted: keeping it would only re-send it forever. */
    nq_log(NQ_LOG_WARN, "result %" PRId64 " refused: %s (%s); dropped from the journal", id, code,
           message);
    result_answered(cli, id);
    cli_pump(cli);
    return;
  }
  if (has_id && cli->running && cli->cur.id == id) {
    nq_log(NQ_LOG_WARN, "lease of assignment %" PRId64 " not extended: %s (%s)", id, code,
           message);
    return;
  }
  nq_log(NQ_LOG_WARN, "server error %s: %s", code, message);
}

static void handle_welcome(cli_t *cli, json_t *msg) {
  int64_t v = 0, pi = 60, mo = 16;
  const char *client = "?", *state = "running";
  json_t *job = json_object_get(msg, "job");
  int64_t jn = 0;
  if (nq_msg_get_int(msg, "v", 0, INT32_MAX, &v) || v != NQ_PROTOCOL_VERSION) {
    nq_log(NQ_LOG_ERROR, "protocol version mismatch: server speaks %" PRId64 ", we speak %d", v,
           NQ_PROTOCOL_VERSION);
    cli->fatal = CLI_EXIT_PROTO;
    nq_conn_close(cli->conn, NULL, NULL);
    return;
  }
  nq_msg_opt_int(msg, "progress_interval", 1, 86400, 60, &pi);
  nq_msg_opt_int(msg, "max_outstanding", 1, 256, 16, &mo);
  nq_msg_opt_str(msg, "client", "?", &client);
  if (json_is_object(job)) {
    nq_msg_opt_int(job, "n", 0, 64, 0, &jn);
    nq_msg_opt_str(job, "state", "running", &state);
  }
  if (cli->enrolling) {
    const char *tok = NULL;
    if (nq_msg_get_str(msg, "token", &tok) || !*tok || strlen(tok) >= sizeof cli->token) {
      nq_log(NQ_LOG_ERROR, "enrolment: the server sent no usable token");
      cli->fatal = CLI_EXIT_PROTO;
      nq_conn_close(cli->conn, NULL, NULL);
      return;
    }
    strcpy(cli->token, tok);
    if (cli_token_store(&cli->j, tok) != 0) {
      nq_log(NQ_LOG_ERROR, "enrolled as %s but cannot store the token in %s", client,
             cli->j.dir);
      cli->fatal = CLI_EXIT_SETUP;
      nq_conn_close(cli->conn, NULL, NULL);
      return;
    }
    cli->enrolling = 0;
    nq_log(NQ_LOG_INFO, "enrolled as %s; token stored in %s/token", client, cli->j.dir);
  }
  cli->state = ST_READY;
  cli->attempt = 0;
  cli->progress_interval = (int)pi;
  cli->max_outstanding = (int)mo;
  nq_log(NQ_LOG_INFO, "session open as %s: job N=%" PRId64 " %s, progress every %d s", client,
         jn, state, cli->progress_interval);
  uint64_t idle = (uint64_t)(pi * 3 > 180 ? pi * 3 : 180) * 1000;
  nq_conn_set_idle_timeout(cli->conn, idle);
  if (cli->running) { /* a unit that ran on while we were away: report at the new pace */
    uint64_t ms = (uint64_t)pi * 1000;
    uv_timer_start(&cli->progress_timer, on_progress_timer, ms, ms);
  }
  send_journal(cli);
  if (!strcmp(state, "done")) {
    nq_log(NQ_LOG_INFO, "the job is done; nothing to do");
    job_finished(cli);
  }
  cli_pump(cli);
}

static void handle_work(cli_t *cli, json_t *msg) {
  cli->getwork_inflight = 0;
  json_t *arr = json_object_get(msg, "assignments");
  if (!json_is_array(arr)) {
    nq_log(NQ_LOG_WARN, "work without assignments");
    return;
  }
  size_t i, fresh = 0;
  json_t *a;
  json_array_foreach(arr, i, a) {
    cli_assign_t as;
    memset(&as, 0, sizeof as);
    const char *unit;
    if (nq_msg_get_int(a, "id", 1, INT64_MAX, &as.id) || nq_msg_get_str(a, "unit", &unit) ||
        strlen(unit) >= sizeof as.unit) {
      nq_log(NQ_LOG_WARN, "malformed assignment ignored");
      continue;
    }
    int64_t lease = -1;
    nq_msg_opt_int(a, "deadline", 0, INT64_MAX, 0, &as.deadline);
    nq_msg_opt_int(a, "lease", 0, 86400 * 366, -1, &lease);
    if (lease >= 0) as.deadline = (int64_t)time(NULL) + lease;
    strcpy(as.unit, unit);
    /* The server re-sends what we hold; never run one twice. */
    if ((cli->running && cli->cur.id == as.id) || queue_has(cli, as.id) ||
        sent_find(cli, as.id) || cli_journal_has(&cli->j, as.id))
      continue;
    if (cli->stopping || cli->done) continue;
    if (cli_assigned_put(&cli->j, &as) != 0)
      nq_log(NQ_LOG_WARN, "cannot record assignment %" PRId64 " on disk", as.id);
    if (queue_push(cli, &as) != 0) continue;
    fresh++;
    nq_log(NQ_LOG_DEBUG, "assignment %" PRId64 ": %s", as.id, as.unit);
  }
  if (!fresh) {
    /* Only re-sent assignments: there is nothing new now, so do not ask again at once. */
    cli->nowork_wait = 1;
    uv_timer_start(&cli->retry_timer, on_retry_timer, DEFAULT_RETRY_S * 1000, 0);
  }
  cli_pump(cli);
}

static void handle_no_work(cli_t *cli, json_t *msg) {
  cli->getwork_inflight = 0;
  const char *reason = "?";
  int64_t after = DEFAULT_RETRY_S;
  nq_msg_opt_str(msg, "reason", "?", &reason);
  nq_msg_opt_int(msg, "retry_after", 0, 86400, DEFAULT_RETRY_S, &after);
  if (!strcmp(reason, "done")) {
    nq_log(NQ_LOG_INFO, "the job is done (%ld unit(s) solved here)", cli->units_done);
    job_finished(cli);
    cli_pump(cli);
    return;
  }
  if (after < 1) after = 1;
  if (after > 60) after = 60;
  nq_log(NQ_LOG_DEBUG, "no work (%s), asking again in %" PRId64 " s", reason, after);
  cli->nowork_wait = 1;
  uv_timer_start(&cli->retry_timer, on_retry_timer, (uint64_t)after * 1000, 0);
  cli_pump(cli);
}

static void handle_ack(cli_t *cli, json_t *msg) {
  int64_t id;
  const char *status = "?";
  if (nq_msg_get_int(msg, "id", 1, INT64_MAX, &id)) {
    nq_log(NQ_LOG_WARN, "ack without id");
    return;
  }
  nq_msg_opt_str(msg, "status", "?", &status);
  nq_log(NQ_LOG_INFO, "ack %" PRId64 ": %s", id, status);
  result_answered(cli, id);
  cli_pump(cli);
}

static void on_frame(nq_conn_t *c, json_t *msg) {
  cli_t *cli = nq_conn_data(c);
  const char *type = "";
  nq_msg_get_str(msg, "type", &type);
  if (!strcmp(type, "error")) {
    handle_error(cli, msg);
  } else if (cli->state == ST_HELLO) {
    if (!strcmp(type, "welcome")) {
      handle_welcome(cli, msg);
    } else {
      nq_log(NQ_LOG_WARN, "unexpected %s before welcome", type);
      nq_conn_close(c, "unknown_type", "expected welcome");
    }
  } else if (!strcmp(type, "work")) {
    handle_work(cli, msg);
  } else if (!strcmp(type, "no_work")) {
    handle_no_work(cli, msg);
  } else if (!strcmp(type, "ack")) {
    handle_ack(cli, msg);
  } else if (!strcmp(type, "lease")) {
    nq_log(NQ_LOG_DEBUG, "lease extended");
  } else if (!strcmp(type, "bye")) {
    nq_log(NQ_LOG_INFO, "server said bye");
    nq_conn_close(c, NULL, NULL);
  } else {
    nq_log(NQ_LOG_WARN, "unexpected message type '%s'", type);
  }
}

/* ---- progress ---- */

static void on_progress_timer(uv_timer_t *t) {
  cli_t *cli = t->data;
  /* The first progress of a unit goes out even without new nodes: it turns the lease sized for
   * the queue into a full one (or revives it if the unit waited in the queue past its deadline). */
  if (cli->state != ST_READY || !cli->running ||
      (cli->cur_progressed && cli->cur_nodes == cli->cur_nodes_sent))
    return;
  json_t *m = json_pack("{s:s, s:I, s:I}", "type", "progress", "id", (json_int_t)cli->cur.id,
                        "nodes", (json_int_t)cli->cur_nodes);
  if (send_new(cli, m) == 0) {
    cli->cur_nodes_sent = cli->cur_nodes;
    cli->cur_progressed = 1;
  }
}

/* ---- the worker ---- */

static void unit_finished(cli_t *cli, const cli_worker_event_t *ev) {
  cli_assign_t a = cli->cur;
  cli->running = 0;
  uv_timer_stop(&cli->progress_timer);
  if (ev->status == NQ_ECANCELED) {
    nq_log(NQ_LOG_INFO, "unit %s (id %" PRId64 ") cancelled", a.unit, a.id);
    /* Kept in assigned/ for a later run, unless the job is over. */
    if (cli->job_done) cli_assigned_remove(&cli->j, a.id);
    return;
  }
  if (ev->status != 0) {
    nq_log(NQ_LOG_ERROR, "unit %s (id %" PRId64 ") failed: %s", a.unit, a.id,
           nq_strerror(ev->status));
    cli_assigned_remove(&cli->j, a.id);
    return;
  }
  cli_result_t r;
  memset(&r, 0, sizeof r);
  r.id = a.id;
  strcpy(r.unit, a.unit);
  r.counts = ev->counts;
  r.seconds = ev->seconds;
  snprintf(r.solver, sizeof r.solver, "%s", NQ_SOLVER_VERSION);
  if (cli->cfg->fault_lie) r.counts.c8 += 1; /* test-only fault injection */
  double rate = ev->seconds > 0 ? (double)ev->counts.nodes / ev->seconds : 0;
  nq_log(NQ_LOG_INFO,
         "unit %s (id %" PRId64 ") done: c2=%" PRIu64 " c4=%" PRIu64 " c8=%" PRIu64
         " nodes=%" PRIu64 " in %.2f s (%.3g nodes/s)%s",
         r.unit, r.id, r.counts.c2, r.counts.c4, r.counts.c8, r.counts.nodes, r.seconds, rate,
         cli->cfg->fault_lie ? " [FAULT lie]" : "");
  /* Journal first: once it is on disk, neither a crash nor a lost connection can lose it. */
  if (cli_journal_put(&cli->j, &r) != 0)
    nq_log(NQ_LOG_ERROR, "journal write failed for id %" PRId64 "; sending anyway", r.id);
  cli_assigned_remove(&cli->j, a.id);
  cli->units_done++;
  cli->last_seconds = ev->seconds;
  cli->nowork_wait = 0; /* a free worker is worth one immediate get_work */
  if (cli->state == ST_READY) send_result(cli, &r);
}

static void on_worker_event(cli_worker_t *w) {
  cli_t *cli = w->data;
  cli_worker_event_t ev;
  while (cli_worker_poll(w, &ev) != CLI_WEV_NONE) {
    if (ev.kind == CLI_WEV_PROGRESS) {
      if (cli->running && ev.id == cli->cur.id) cli->cur_nodes = ev.counts.nodes;
    } else if (cli->running && ev.id == cli->cur.id) {
      unit_finished(cli, &ev);
    }
  }
  if (!cli->finishing) cli_pump(cli);
}

/* When to send a unit's first progress: half way to its lease's end (the server sizes a lease from
 * the expected solve time, so it may be much shorter than the progress interval), at least 1 s
 * from now and at most one interval; a unit without a known deadline waits one interval. */
static uint64_t first_progress_ms(const cli_assign_t *a, uint64_t interval_ms) {
  if (a->deadline <= 0) return interval_ms;
  int64_t left = a->deadline - (int64_t)time(NULL);
  uint64_t ms = left > 2 ? (uint64_t)left * 500 : 1000;
  return ms < interval_ms ? ms : interval_ms;
}

/* Start the next queued unit if the worker is free. */
static void start_next(cli_t *cli) {
  while (!cli->running && cli->qlen > 0 && !cli->stopping && !cli->done) {
    cli_assign_t a = cli->queue[0];
    memmove(cli->queue, cli->queue + 1, (cli->qlen - 1) * sizeof *cli->queue);
    cli->qlen--;
    nq_unit_t u;
    char err[160];
    if (nq_unit_parse(a.unit, &u, err, sizeof err) != 0) {
      nq_log(NQ_LOG_ERROR, "assignment %" PRId64 ": bad unit '%s': %s; skipped", a.id, a.unit,
             err);
      cli_assigned_remove(&cli->j, a.id);
      continue;
    }
    if (cli_worker_submit(&cli->worker, a.id, &u) != 0) {
      /* The previous unit's DONE is still in flight: put it back and wait for it. */
      memmove(cli->queue + 1, cli->queue, cli->qlen * sizeof *cli->queue);
      cli->queue[0] = a;
      cli->qlen++;
      return;
    }
    cli->running = 1;
    cli->cur = a;
    cli->cur_nodes = cli->cur_nodes_sent = 0;
    cli->cur_progressed = 0;
    nq_log(NQ_LOG_INFO, "unit %s (id %" PRId64 ") started on %d thread(s)", a.unit, a.id,
           cli->cfg->threads);
    uint64_t ms = (uint64_t)(cli->progress_interval > 0 ? cli->progress_interval : 60) * 1000;
    uv_timer_start(&cli->progress_timer, on_progress_timer, first_progress_ms(&a, ms), ms);
  }
}

/* ---- the scheduler of this client: what to do next ---- */

static void cli_pump(cli_t *cli) {
  if (cli->finishing) return;
  const cli_config_t *cfg = cli->cfg;
  long limit = cfg->max_units;
  if (limit > 0 && cli->units_done >= limit && !cli->done) {
    nq_log(NQ_LOG_INFO, "%ld unit(s) solved: limit reached", cli->units_done);
    cli->done = 1;
  }
  start_next(cli);

  if (cli->stopping || cli->done) {
    /* Leave once every result of ours has an answer, or at once without a connection when
     * stopping (the journal keeps the rest). After --max-units we wait for the server to take
     * what the journal holds, reconnecting if need be. */
    if (cli->running) return;
    if (cli->state == ST_READY) {
      if (cli->nsent == 0) cli_finish(cli, CLI_EXIT_OK);
    } else if (cli->stopping) {
      cli_finish(cli, CLI_EXIT_OK);
    } else {
      size_t n = 0;
      cli_result_t *v = NULL;
      if (cli_journal_list(&cli->j, &v, &n, NULL) == 0 && n == 0) cli_finish(cli, CLI_EXIT_OK);
      free(v);
    }
    return;
  }

  if (cli->state != ST_READY || cli->getwork_inflight || cli->nowork_wait) return;
  long held = (long)cli->qlen + cli->running;
  /* Prefetch one unit; when units take less than a round trip plus the server's commit, the
   * solver would idle between them, so hold a few more. */
  long prefetch = cfg->prefetch > 0 ? cfg->prefetch : 0;
  if (cli->last_seconds >= 0 && cli->last_seconds < SHORT_UNIT_S && prefetch < SHORT_PREFETCH)
    prefetch = SHORT_PREFETCH;
  long target = 1 + prefetch;
  if (target > cli->max_outstanding) target = cli->max_outstanding;
  if (limit > 0 && target > limit - cli->units_done) target = limit - cli->units_done;
  if (held >= target) return;
  /* want counts what we hold: the server re-sends held assignments first (docs/protocol.md). */
  json_t *m = json_pack("{s:s, s:i}", "type", "get_work", "want", (int)target);
  if (send_new(cli, m) == 0) cli->getwork_inflight = 1;
}

/* ---- stopping ---- */

static void on_close_noop(uv_handle_t *h) {
  (void)h;
}

/* Close every handle we own (the loop then runs dry and cli_run returns). */
static void cli_release(cli_t *cli) {
  if (cli->released) return;
  cli->released = 1;
  uv_timer_stop(&cli->retry_timer);
  uv_timer_stop(&cli->progress_timer);
  uv_timer_stop(&cli->stop_timer);
  uv_close((uv_handle_t *)&cli->retry_timer, on_close_noop);
  uv_close((uv_handle_t *)&cli->progress_timer, on_close_noop);
  uv_close((uv_handle_t *)&cli->stop_timer, on_close_noop);
  uv_close((uv_handle_t *)&cli->sigint, on_close_noop);
  uv_close((uv_handle_t *)&cli->sigterm, on_close_noop);
  cli_worker_stop(&cli->worker);
}

/* End the session with `code`: bye if we are in one, close, then release. Re-entered from
 * on_close once the connection is gone. */
static void cli_finish(cli_t *cli, int code) {
  if (!cli->finishing) {
    cli->finishing = 1;
    cli->exit_code = code;
    cli_worker_cancel(&cli->worker);
    uv_timer_stop(&cli->retry_timer);
    uv_timer_stop(&cli->progress_timer);
  }
  if (cli->conn) {
    if (cli->state == ST_READY) send_new(cli, json_pack("{s:s}", "type", "bye"));
    nq_conn_close(cli->conn, NULL, NULL);
    return; /* on_close comes back here */
  }
  cli_release(cli);
}

static void on_stop_timer(uv_timer_t *t) {
  cli_t *cli = t->data;
  if (cli->running)
    nq_log(NQ_LOG_WARN, "the running unit did not stop in time");
  else
    nq_log(NQ_LOG_WARN, "no answer for %zu result(s); they stay in the journal", cli->nsent);
  cli_finish(cli, CLI_EXIT_OK);
}

static void on_signal(uv_signal_t *s, int signum) {
  cli_t *cli = s->data;
  if (cli->stopping || cli->finishing) {
    nq_log(NQ_LOG_WARN, "second signal: leaving now");
    if (cli->conn) nq_conn_abort(cli->conn);
    cli_finish(cli, cli->finishing ? cli->exit_code : CLI_EXIT_OK);
    return;
  }
  nq_log(NQ_LOG_INFO, "%s: stopping (finishing reports, then bye)",
         signum == SIGINT ? "SIGINT" : "SIGTERM");
  cli->stopping = 1;
  cli_worker_cancel(&cli->worker);
  uv_timer_stop(&cli->retry_timer);
  uv_timer_start(&cli->stop_timer, on_stop_timer, STOP_GRACE_MS, 0);
  cli_pump(cli);
}

/* ---- setup ---- */

void cli_config_default(cli_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  cfg->threads = n > 0 ? (n > 1024 ? 1024 : (int)n) : 1;
  cfg->backoff_min = 0.5;
  cfg->backoff_max = 60;
  cfg->prefetch = 1;
  const char *home = getenv("HOME");
  static char state[4096];
  if (nq_path_join(state, sizeof state, home && *home ? home : ".", ".nq-client") != 0)
    snprintf(state, sizeof state, "./.nq-client"); /* $HOME absurdly long: use the cwd */
  cfg->state = state;
}

int cli_parse_server(const char *s, cli_config_t *cfg) {
  return nq_hostport_parse(s, cfg->host, sizeof cfg->host, &cfg->port, 0);
}

/* Pick the credentials: --token, else the stored token, else enrol with --enrol. */
static int pick_credentials(cli_t *cli) {
  const cli_config_t *cfg = cli->cfg;
  if (cfg->token) {
    if (strlen(cfg->token) >= sizeof cli->token) return NQ_EINVAL;
    strcpy(cli->token, cfg->token);
    return 0;
  }
  int rc = cli_token_load(&cli->j, cli->token, sizeof cli->token);
  if (rc == 0) {
    cli->token_stored = 1;
    if (cfg->enrol) nq_log(NQ_LOG_INFO, "already enrolled: using the token in %s", cli->j.dir);
    return 0;
  }
  if (rc != NQ_ENOTFOUND) {
    nq_log(NQ_LOG_ERROR, "cannot read %s/token: %s", cli->j.dir, nq_strerror(rc));
    return rc;
  }
  if (!cfg->enrol) {
    nq_log(NQ_LOG_ERROR, "no token: give --token, or --enrol KEY once (state dir %s)",
           cli->j.dir);
    return NQ_EAUTH;
  }
  cli->enrolling = 1;
  return 0;
}

/* Assignments received by an earlier run and not finished go to the front of the queue. */
static void load_assigned(cli_t *cli) {
  cli_assign_t *v = NULL;
  size_t n = 0;
  if (cli_assigned_list(&cli->j, &v, &n, NULL) != 0) return;
  for (size_t i = 0; i < n; i++) {
    if (cli_journal_has(&cli->j, v[i].id)) { /* finished, the removal did not happen */
      cli_assigned_remove(&cli->j, v[i].id);
      continue;
    }
    queue_push(cli, &v[i]);
  }
  if (cli->qlen) nq_log(NQ_LOG_INFO, "resuming %zu assignment(s) from %s", cli->qlen, cli->j.dir);
  free(v);
}

int cli_run(const cli_config_t *cfg) {
  cli_t *cli = calloc(1, sizeof *cli);
  if (!cli) return CLI_EXIT_FAIL;
  cli->cfg = cfg;
  cli->rng = (unsigned)time(NULL) ^ ((unsigned)getpid() << 8);
  cli->progress_interval = 60;
  cli->max_outstanding = 16;
  cli->last_seconds = -1;
  int code = CLI_EXIT_SETUP, loop_ok = 0, journal_ok = 0;
  int rc = nq_tls_ctx_client_new(cfg->ca, &cli->tls);
  if (rc) {
    char e[200];
    nq_tls_errors(e, sizeof e);
    nq_log(NQ_LOG_ERROR, "cannot load CA file %s: %s%s%s", cfg->ca, nq_strerror(rc),
           e[0] ? ": " : "", e);
    goto out;
  }
  if (cli_journal_open(cfg->state, &cli->j) != 0) goto out;
  journal_ok = 1;
  if (pick_credentials(cli) != 0) goto out;
  code = CLI_EXIT_FAIL;
  if (uv_loop_init(&cli->loop) != 0) goto out;
  loop_ok = 1;
  uv_timer_init(&cli->loop, &cli->retry_timer);
  uv_timer_init(&cli->loop, &cli->progress_timer);
  uv_timer_init(&cli->loop, &cli->stop_timer);
  cli->retry_timer.data = cli->progress_timer.data = cli->stop_timer.data = cli;
  uv_signal_init(&cli->loop, &cli->sigint);
  uv_signal_init(&cli->loop, &cli->sigterm);
  cli->sigint.data = cli->sigterm.data = cli;
  uv_signal_start(&cli->sigint, on_signal, SIGINT);
  uv_signal_start(&cli->sigterm, on_signal, SIGTERM);
  if (cli_worker_init(&cli->worker, &cli->loop, cfg->threads, on_worker_event, cli) != 0) {
    nq_log(NQ_LOG_ERROR, "cannot start the solver thread");
    cli->released = 1;
    uv_close((uv_handle_t *)&cli->retry_timer, NULL);
    uv_close((uv_handle_t *)&cli->progress_timer, NULL);
    uv_close((uv_handle_t *)&cli->stop_timer, NULL);
    uv_close((uv_handle_t *)&cli->sigint, NULL);
    uv_close((uv_handle_t *)&cli->sigterm, NULL);
    uv_run(&cli->loop, UV_RUN_DEFAULT);
    goto out;
  }
  nq_log(NQ_LOG_INFO, "nq-client %s: server %s:%d, %d thread(s), state %s%s", NQ_VERSION_STRING,
         cfg->host, cfg->port, cfg->threads, cfg->state,
         cfg->fault_lie ? ", FAULT INJECTION lie (test only)" : "");
  load_assigned(cli);
  start_next(cli); /* resumed units run while we connect */
  cli_connect(cli);
  uv_run(&cli->loop, UV_RUN_DEFAULT);
  code = cli->exit_code;
out:
  if (loop_ok && uv_loop_close(&cli->loop) != 0) {
    nq_log(NQ_LOG_WARN, "loop closed with handles open");
  }
  if (journal_ok) cli_journal_close(&cli->j);
  nq_tls_ctx_free(cli->tls);
  free(cli->queue);
  free(cli->sent);
  free(cli);
  return code;
}
