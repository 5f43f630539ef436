/* nq-client: the daemon context and the connection loop (see cli.h, docs/client.md).
 *
 * Connection states (cli_t.state, cli_state_t):
 *   IDLE        not connected; the retry timer runs the next attempt (jittered backoff)
 *   CONNECTING  TCP + TLS handshake in progress
 *   HELLO       hello sent, waiting for welcome
 *   READY       welcome received: journal sent first, then get_work / progress / result
 *   DONE        left for good (cli_t.reason says why)
 * Leaving (cli_t.reason, cli_reason_t) is one value, not a set of flags: NONE while running; a
 * draining reason (LIMIT, JOB_DONE, STOPPED) takes no new work and finishes reporting; any other
 * closes at once. cli_t.life says how far the leaving has got (closing, released).
 * Work never waits on the connection: the worker keeps solving while we are disconnected, and a
 * finished result goes to the journal first and to the server when there is one.
 * Messages are built and read only through nq/proto.h; what the server sends is dispatched by the
 * table of on_frame.
 */
#include "cli.h"
#include "fault.h"
#include "journal.h"
#include "status.h"
#include "worker.h"

#include "nq/sys.h"
#include "nq/addr.h"
#include "nq/conn.h"
#include "nq/files.h"
#include "nq/gpu.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "nq/solver.h"
#include "nq/tls.h"
#include "nq/unit.h"

#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STOP_GRACE_MS 1500 /* most time a stop waits for the solver and the acks: exit in 2 s */
#define STOP_JOIN_MS 250   /* then the solver thread gets this long before it is left alone */
#define DEFAULT_RETRY_S 10
#define SHORT_UNIT_S 0.25 /* units faster than this get a deeper prefetch */
#define SHORT_PREFETCH 6
#define PROGRESS_INTERVAL_MAX 86400 /* a longer one from the server is clamped to a day */
#define UNIT_LINE_S 60 /* a unit that took longer gets its own INFO line */
/* Lazy records: while connected, a unit that solves in under LAZY_S seconds leaves no
 * file behind unless something goes wrong. Its assignment is not written to assigned/ (after a
 * crash the server re-sends the lease at the first get_work), and its result stays in memory
 * until the ack; a result not acknowledged within LAZY_MS, or any held at a disconnect or a stop,
 * is written to the journal as before. A crash (SIGKILL, power loss) loses at most 1.25 x LAZY_MS
 * of sub-second results, which the server's leases bring back: solving one again costs less than
 * the files did (five system calls and an ext4 create and unlink a unit, docs/performance.md). */
#define LAZY_S 1.0
#define LAZY_MS 1000
#define WAIT_MAX_S 120 /* between jobs, the poll's backoff stops here (under the server's idle
                          timeout, 300 s by default, so the session stays open) */

/* How far leaving has got, once a reason is set. */
typedef enum {
  LIFE_RUNNING = 0, /* working, or draining (reason set, finishing the reports) */
  LIFE_CLOSING,     /* cli_finish ran: the connection closes, then the handles */
  LIFE_RELEASED     /* every handle is closing; the state is DONE */
} cli_life_t;

/* A lane: one solver worker and the unit it runs. The CPU threads are one lane and each GPU is
 * a lane of its own (docs/gpu.md): each takes its own units from the queue and reports them, so
 * a device's results are the device's alone and the CPU's the CPU's. */
typedef struct cli_lane_s {
  cli_t *cli;
  int index;
  cli_worker_t worker;
  uv_timer_t progress_timer, ckpt_timer;
  int running;             /* the worker holds cur */
  cli_assign_t cur;        /* the running assignment */
  uint64_t cur_nodes, cur_nodes_sent;
  double cur_fraction, cur_seconds; /* from the worker: share done, solve time (all runs) */
  int cur_progressed;      /* a progress was sent for cur */
  int cur_drop;            /* the server no longer needs cur: stop it and forget it */
  uint32_t cur_saved;      /* finished tasks in cur's last checkpoint file */
  int cur_ckpt;            /* cur may have a checkpoint file (resumed from one, or saved) */
  int has_next;            /* next is handed to the worker, to start when cur is done */
  cli_assign_t next;       /* (fresh from the server: no file, no checkpoint) */
} cli_lane_t;

/* A result not written to the journal (lazy records): sent, awaiting its ack. */
typedef struct cli_held_s {
  nq_result_t r;
  uint64_t at;             /* uv_now when it was solved */
} cli_held_t;

#define CLI_LANES_MAX (1 + CLI_GPUS_MAX)

struct cli_s {
  const cli_config_t *cfg;
  uv_loop_t *loop;
  nq_tls_ctx_t *tls;
  cli_journal_t j;
  cli_lane_t lanes[CLI_LANES_MAX];
  int nlanes;              /* lanes started (their handles exist) */
  nq_throttle_t *throttle; /* the solver threads' priority, CPU limit and pause file */
  nq_gpu_t *gpus[CLI_GPUS_MAX]; /* the devices that passed their self-test (--gpu) */
  int ngpus;
  uv_timer_t retry_timer, stop_timer, status_timer;
  uv_signal_t sigint, sigterm;
  uv_async_t stop_async;   /* the system's stop events that are not signals (nq_sys_on_stop) */
  nq_conn_t *conn;
  cli_state_t state;
  cli_reason_t reason;
  cli_life_t life;
  char token[CLI_TOKEN_MAX];
  int enrolling;           /* hello carries the enrolment key (no token yet) */
  int joining;             /* --join and no token yet: the first frame is a signup */
  char ticket[NQ_PROTO_TICKET_MAX + 1]; /* a pending sign-up's ticket (STATE/signup.ticket) */
  int64_t news_seen;       /* the newest news item logged (STATE/news.seen) */
  int token_stored;        /* cli->token came from STATE/token */
  unsigned rng;
  int attempt;             /* reconnect attempts since the last welcome */
  int64_t retry_after;     /* the server's `busy` (or a sign-up's refusal) asked for this wait
                              (s) before the next attempt; 0: none, the backoff decides */
  int retry_busy;          /* that wait came from `busy`: the server is full */
  int progress_interval;   /* seconds, from welcome */
  int paused_told;         /* the pause state the server was last told (tell_pause) */
  double paused_told_at;   /* ... when (monotonic s) */
  int max_outstanding;     /* from welcome */
  /* Work. */
  cli_assign_t *queue;     /* received, not started, in arrival order */
  size_t qlen, qcap;
  int64_t *sent;           /* result ids sent on this connection and not answered yet */
  size_t nsent, capsent;
  cli_held_t *held;        /* results kept in memory only (lazy records), oldest first */
  size_t nheld, capheld;
  uv_timer_t lazy_timer;   /* writes the held results LAZY_MS old to the journal */
  long journal_n;          /* result files in the journal as far as we know (-1: unknown) */
  int getwork_inflight;
  int nowork_wait;         /* after no_work (or nothing new): wait for the retry timer */
  int wait_s;              /* no job runs on the server: the poll interval now (0: a job runs) */
  long units_done;         /* units solved by this process */
  long units_resumed;      /* ... of which resumed from a checkpoint */
  double last_seconds;     /* solve time of the last unit; -1 before the first */
  /* What the volunteer is told (status.h, the INFO summary) */
  cli_status_t st;         /* kept between writes: the welcome's news, the last contact */
  int status_warned;       /* a failed write of it was logged */
  double down_since;       /* monotonic time the server went out of reach; 0: it is not */
  int down_warned;         /* the WARN for it was logged */
  uint64_t nodes_done;     /* of the units this process solved */
  double seconds_done;
  double summary_at;       /* monotonic time of the last summary */
  long sum_units;          /* since then */
  uint64_t sum_nodes;
  double sum_seconds;
};

static void cli_pump(cli_t *cli);
static void on_progress_timer(uv_timer_t *t);
static void send_progress(cli_lane_t *ln);

/* The lane running assignment id, or NULL. */
static cli_lane_t *lane_of(cli_t *cli, int64_t id) {
  for (int i = 0; i < cli->nlanes; i++)
    if (cli->lanes[i].running && cli->lanes[i].cur.id == id) return &cli->lanes[i];
  return NULL;
}

/* The lane whose worker holds assignment id as its next unit, or NULL. */
static cli_lane_t *lane_next_of(cli_t *cli, int64_t id) {
  for (int i = 0; i < cli->nlanes; i++)
    if (cli->lanes[i].has_next && cli->lanes[i].next.id == id) return &cli->lanes[i];
  return NULL;
}

/* How many lanes run a unit. */
static int lanes_running(const cli_t *cli) {
  int n = 0;
  for (int i = 0; i < cli->nlanes; i++) n += cli->lanes[i].running + cli->lanes[i].has_next;
  return n;
}

static int queue_push_front(cli_t *cli, const cli_assign_t *a);
static void lane_promote(cli_lane_t *ln);

/* Take the lane's next unit back from its worker if it has not started: to the front of the
 * queue, or forgotten once the job is over. 1 if it was taken back. */
static int lane_unqueue(cli_lane_t *ln) {
  cli_t *cli = ln->cli;
  if (!ln->has_next || !cli_worker_unqueue(&ln->worker, ln->next.id)) return 0;
  ln->has_next = 0;
  if (cli->reason == CLI_REASON_JOB_DONE) { /* written at a disconnect, perhaps */
    if (ln->next.on_disk) cli_assigned_remove(&cli->j, ln->next.id);
    return 1;
  }
  queue_push_front(cli, &ln->next); /* out of memory: the server re-sends it */
  return 1;
}

static void lanes_cancel(cli_t *cli) {
  for (int i = 0; i < cli->nlanes; i++) {
    lane_unqueue(&cli->lanes[i]); /* first: once cur is done the worker would start it */
    cli_worker_cancel(&cli->lanes[i].worker, -1);
  }
}
static void cli_finish(cli_t *cli);

/* ---- names ---- */

const char *cli_state_name(cli_state_t s) {
  static const char *const names[] = {"idle", "connecting", "hello", "ready", "done"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

const char *cli_reason_name(cli_reason_t r) {
  static const char *const names[] = {"none",    "limit", "job_done", "stopped",
                                      "protocol", "version", "auth",   "banned",
                                      "cert",    "setup", "failure"};
  return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "?";
}

int cli_reason_exit(cli_reason_t r) {
  switch (r) {
  case CLI_REASON_PROTOCOL: return CLI_EXIT_PROTO;
  case CLI_REASON_VERSION: return CLI_EXIT_UPGRADE;
  case CLI_REASON_AUTH:
  case CLI_REASON_BANNED: return CLI_EXIT_AUTH;
  case CLI_REASON_CERT: return CLI_EXIT_TLS;
  case CLI_REASON_SETUP: return CLI_EXIT_SETUP;
  case CLI_REASON_FAILURE: return CLI_EXIT_FAIL;
  default: return CLI_EXIT_OK;
  }
}

cli_state_t cli_state(const cli_t *cli) {
  return cli->state;
}

long cli_units_resumed(const cli_t *cli) {
  return cli->units_resumed;
}

cli_reason_t cli_reason(const cli_t *cli) {
  return cli->reason;
}

/* ---- state ---- */

static void set_state(cli_t *cli, cli_state_t to) {
  cli_state_t from = cli->state;
  if (from == to) return;
  assert(from != CLI_STATE_DONE); /* DONE is final */
  cli->state = to;
  if (cli->cfg->on_state) cli->cfg->on_state(cli->cfg->observer, from, to);
}

/* A reason to leave: kept if it is stronger than the one we have (cli.h). */
static void leave(cli_t *cli, cli_reason_t why) {
  if (why > cli->reason) cli->reason = why;
}

/* ---- small helpers ---- */

/* What the last connection attempt or session came to (status.h: last_outcome). */
static void outcome(cli_t *cli, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cli->st.last_outcome, sizeof cli->st.last_outcome, fmt, ap);
  va_end(ap);
}

/* A connection attempt failed: the first failure of an outage is logged at INFO, the next ones
 * at DEBUG (the backoff makes them up to one a minute), and an outage longer than
 * unreachable_warn_seconds once at WARN. Returns the level for the caller's own line. */
static int out_of_reach(cli_t *cli, const char *why) {
  double now = nq_now_mono();
  int first = cli->down_since == 0;
  if (first) {
    cli->down_since = now;
    cli->st.down_since = (int64_t)time(NULL);
  }
  outcome(cli, "%s", why);
  if (!cli->down_warned && now - cli->down_since >= cli->cfg->unreachable_warn_seconds) {
    cli->down_warned = 1;
    nq_log(NQ_LOG_WARN, "server %s:%d out of reach for %.0f s (%s); solving goes on, results "
           "wait in the journal", cli->cfg->host, cli->cfg->port, now - cli->down_since, why);
  }
  return first ? NQ_LOG_INFO : NQ_LOG_DEBUG;
}

/* The server answered (welcome): the end of an outage. */
static void in_reach(cli_t *cli) {
  if (cli->down_warned)
    nq_log(NQ_LOG_INFO, "server %s:%d reachable again after %.0f s", cli->cfg->host,
           cli->cfg->port, nq_now_mono() - cli->down_since);
  cli->down_since = 0;
  cli->down_warned = 0;
  cli->st.down_since = 0;
}

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

static cli_assign_t *queue_find(cli_t *cli, int64_t id) {
  for (size_t i = 0; i < cli->qlen; i++)
    if (cli->queue[i].id == id) return &cli->queue[i];
  return NULL;
}

/* 1 if assignment id is queued; the server re-sent it, so it is confirmed as still ours. */
static int queue_confirm(cli_t *cli, int64_t id) {
  cli_assign_t *a = queue_find(cli, id);
  if (a) a->unconfirmed = 0;
  return a != NULL;
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

/* Put a back at the front of the queue (it was taken from there, or handed to a worker). */
static int queue_push_front(cli_t *cli, const cli_assign_t *a) {
  int rc = queue_push(cli, a);
  if (rc) return rc;
  memmove(cli->queue + 1, cli->queue, (cli->qlen - 1) * sizeof *cli->queue);
  cli->queue[0] = *a;
  return 0;
}

/* Send a packed message (consumed; NULL means packing failed). */
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

static int send_result(cli_t *cli, const nq_result_t *r) {
  int rc = send_new(cli, nq_result_pack(r));
  if (rc == 0) rc = sent_add(cli, r->id);
  return rc;
}

/* ---- lazy records (LAZY_S) ---- */

/* Whether a unit that solves in `seconds` leaves its files out: only while connected. */
static int lazy(const cli_t *cli, double seconds) {
  return cli->state == CLI_STATE_READY && seconds >= 0 && seconds < LAZY_S;
}

static cli_held_t *held_find(cli_t *cli, int64_t id) {
  for (size_t i = 0; i < cli->nheld; i++)
    if (cli->held[i].r.id == id) return &cli->held[i];
  return NULL;
}

static void on_lazy_timer(uv_timer_t *t);

static int held_add(cli_t *cli, const nq_result_t *r) {
  if (cli->nheld == cli->capheld) {
    size_t nc = cli->capheld ? cli->capheld * 2 : 8;
    cli_held_t *v = realloc(cli->held, nc * sizeof *v);
    if (!v) return NQ_ENOMEM;
    cli->held = v;
    cli->capheld = nc;
  }
  cli->held[cli->nheld++] = (cli_held_t){*r, uv_now(cli->loop)};
  if (!uv_is_active((uv_handle_t *)&cli->lazy_timer))
    uv_timer_start(&cli->lazy_timer, on_lazy_timer, LAZY_MS, LAZY_MS / 4);
  return 0;
}

/* 1 if result id was held (and is no more). */
static int held_take(cli_t *cli, int64_t id) {
  cli_held_t *h = held_find(cli, id);
  if (!h) return 0;
  memmove(h, h + 1, (size_t)(cli->held + cli->nheld - (h + 1)) * sizeof *h);
  cli->nheld--;
  return 1;
}

static void journal_write(cli_t *cli, const nq_result_t *r) {
  if (cli_journal_put(&cli->j, r) != 0)
    nq_log(NQ_LOG_ERROR, "journal write failed for id %" PRId64 "; sending anyway", r->id);
  else if (cli->journal_n >= 0)
    cli->journal_n++;
}

/* Write the held results at least `age` ms old (0: all) to the journal. */
static void held_flush(cli_t *cli, uint64_t age) {
  uint64_t now = uv_now(cli->loop);
  size_t k = 0;
  while (k < cli->nheld && now - cli->held[k].at >= age) journal_write(cli, &cli->held[k++].r);
  if (k > 0) { /* (held may be NULL when nothing was ever held) */
    memmove(cli->held, cli->held + k, (cli->nheld - k) * sizeof *cli->held);
    cli->nheld -= k;
  }
  if (!cli->nheld) uv_timer_stop(&cli->lazy_timer);
}

static void on_lazy_timer(uv_timer_t *t) {
  held_flush(t->data, LAZY_MS);
}

/* Write what only memory holds: the results, and the assignments of units still ours (a
 * disconnect, a stop). */
static void persist_held(cli_t *cli) {
  held_flush(cli, 0);
  if (cli->reason == CLI_REASON_JOB_DONE) return;
  for (size_t i = 0; i < cli->qlen; i++)
    if (!cli->queue[i].on_disk && cli_assigned_put(&cli->j, &cli->queue[i]) == 0)
      cli->queue[i].on_disk = 1;
  for (int i = 0; i < cli->nlanes; i++) {
    cli_lane_t *ln = &cli->lanes[i];
    if (ln->running && !ln->cur_drop && !ln->cur.on_disk &&
        cli_assigned_put(&cli->j, &ln->cur) == 0)
      ln->cur.on_disk = 1;
    if (ln->has_next && !ln->next.on_disk && cli_assigned_put(&cli->j, &ln->next) == 0)
      ln->next.on_disk = 1;
  }
}

/* After welcome: everything in the journal goes out before any other request. */
static void send_journal(cli_t *cli) {
  nq_result_t *v = NULL;
  size_t n = 0, bad = 0;
  if (cli_journal_list(&cli->j, &v, &n, &bad) != 0) return;
  cli->journal_n = (long)n;
  if (n) nq_log(NQ_LOG_INFO, "reporting %zu journalled result(s)", n);
  for (size_t i = 0; i < n && cli->state == CLI_STATE_READY; i++) send_result(cli, &v[i]);
  free(v);
}

/* The server answered result `id` (ack or refusal): the journal entry has done its job. */
static void result_answered(cli_t *cli, int64_t id) {
  sent_take(cli, id);
  if (held_take(cli, id)) return; /* never written */
  int rc = cli_journal_remove(&cli->j, id);
  if (rc && rc != NQ_ENOTFOUND)
    nq_log(NQ_LOG_WARN, "cannot remove journal entry %" PRId64 ": %s", id, nq_strerror(rc));
  if (rc == 0 && cli->journal_n > 0) cli->journal_n--;
  cli_ckpt_remove(&cli->j, id); /* normally gone when the result was journalled */
}

/* The job is finished: what we hold will never be needed, here or in a later run. */
static void job_finished(cli_t *cli) {
  leave(cli, CLI_REASON_JOB_DONE);
  for (size_t i = 0; i < cli->qlen; i++)
    if (cli->queue[i].on_disk) cli_assigned_remove(&cli->j, cli->queue[i].id);
  cli->qlen = 0;
  int64_t *ids = NULL;
  size_t n = 0;
  if (cli_ckpt_list(&cli->j, &ids, &n) == 0)
    for (size_t i = 0; i < n; i++)
      if (!lane_of(cli, ids[i])) cli_ckpt_remove(&cli->j, ids[i]);
  free(ids);
  lanes_cancel(cli);
}

/* ---- the connection ---- */

static void schedule_reconnect(cli_t *cli);

/* The enrolment name: --name, else the host name made valid ([A-Za-z0-9._-], 64 at most). */
static const char *enrol_name(const cli_config_t *cfg, char name[NQ_PROTO_NAME_MAX + 1]) {
  if (cfg->name) return cfg->name;
  char host[256];
  if (gethostname(host, sizeof host) != 0) strcpy(host, "client");
  host[sizeof host - 1] = '\0';
  size_t k = 0;
  for (const char *p = host; *p && k < NQ_PROTO_NAME_MAX; p++) {
    char one[2] = {*p, '\0'};
    name[k++] = nq_proto_name_valid(one) ? *p : '-';
  }
  name[k] = '\0';
  return k ? name : "client";
}

static void on_open(nq_conn_t *c) {
  cli_t *cli = nq_conn_data(c);
  const cli_config_t *cfg = cli->cfg;
  char name[NQ_PROTO_NAME_MAX + 1];
  /* hello.threads is 1..1024: a client of devices alone says 1 (its one worker). */
  /* wait: told `waiting` rather than `done` between jobs, unless --exit-when-done. */
  nq_hello_t h = {NQ_PROTO_VERSION, NQ_ROLE_CLIENT, NULL, NULL, NULL, NQ_SOLVER_VERSION,
                  cfg->threads > 0 ? cfg->threads : 1, "nq-client " NQ_VERSION_STRING,
                  cfg->public_name, 0, 0, 0, !cfg->exit_when_done};
  set_state(cli, CLI_STATE_HELLO);
  if (cli->joining) {
    nq_signup_t su = {NQ_PROTO_VERSION, enrol_name(cfg, name), cfg->public_name, cfg->team,
                      "nq-client " NQ_VERSION_STRING, cli->ticket[0] ? cli->ticket : NULL};
    nq_log(NQ_LOG_DEBUG, "connected to %s (%s), signup sent", nq_conn_peer(c),
           nq_conn_tls_version(c));
    if (send_new(cli, nq_signup_pack(&su)) != 0) nq_conn_close(c, NULL, NULL);
    return;
  }
  if (cli->enrolling) {
    h.enrol = cfg->enrol;
    h.name = enrol_name(cfg, name);
  } else {
    h.token = cli->token;
  }
  nq_log(NQ_LOG_DEBUG, "connected to %s (%s), hello sent", nq_conn_peer(c),
         nq_conn_tls_version(c));
  if (send_new(cli, nq_hello_pack(&h)) != 0) nq_conn_close(c, NULL, NULL);
}

static void on_error(nq_conn_t *c, int status) {
  cli_t *cli = nq_conn_data(c);
  const char *e = nq_conn_errstr(c);
  if (strstr(e, "hostname mismatch") || strstr(e, "IP address mismatch")) {
    nq_log(NQ_LOG_ERROR, "refusing server %s:%d: its certificate is not made out to the name "
           "'%s' (%s); dial one of the names it lists, or have the operator add this one "
           "(nq-server --hostname %s, then a restart re-issues the certificate)", cli->cfg->host,
           cli->cfg->port, cli->cfg->host, e, cli->cfg->host);
    leave(cli, CLI_REASON_CERT);
    return;
  }
  if (strstr(e, "certificate verify failed")) {
    nq_log(NQ_LOG_ERROR, "refusing server %s:%d: %s (%s%s)%s", cli->cfg->host, cli->cfg->port, e,
           cli->cfg->ca ? "CA " : "the system's trust store",
           cli->cfg->ca ? cli->cfg->ca : "",
           cli->cfg->ca ? "" : "; a server with a certificate of its own private CA needs "
                               "--ca with the ca.pem its operator hands out");
    leave(cli, CLI_REASON_CERT);
    return;
  }
  if (strncmp(e, "resolve ", 8) == 0) {
    /* A name that does not resolve is a typo or a DNS outage: say it loudly; the reconnect
     * backoff (up to backoff_max) keeps the retries, and these lines, rare. */
    out_of_reach(cli, e);
    nq_log(NQ_LOG_ERROR, "cannot resolve the server name '%s' (%s); check --server; retrying "
           "with backoff", cli->cfg->host, e);
    return;
  }
  const char *why = e[0] ? e : nq_strerror(status);
  int level = cli->state == CLI_STATE_READY ? NQ_LOG_WARN : out_of_reach(cli, why);
  nq_log(level, "connection to %s:%d: %s", cli->cfg->host, cli->cfg->port, why);
}

static void on_close(nq_conn_t *c) {
  cli_t *cli = nq_conn_data(c);
  if (cli->conn == c) cli->conn = NULL;
  int was_ready = cli->state == CLI_STATE_READY;
  persist_held(cli); /* from here on the journal and assigned/ hold everything again */
  set_state(cli, CLI_STATE_IDLE);
  cli->nsent = 0; /* unanswered results stay in the journal and go out again */
  cli->getwork_inflight = 0;
  cli->nowork_wait = 0;
  for (int i = 0; i < cli->nlanes; i++) uv_timer_stop(&cli->lanes[i].progress_timer);
  /* Closing, a reason that closes at once, a stop or the end of the job: leave now (the journal
   * keeps what was not acknowledged). Only a reached limit reconnects, to deliver its results. */
  if (cli->life == LIFE_CLOSING ||
      (cli->reason != CLI_REASON_NONE && cli->reason != CLI_REASON_LIMIT)) {
    cli_finish(cli);
    return;
  }
  if (was_ready) {
    nq_log(NQ_LOG_WARN, "disconnected from %s:%d", cli->cfg->host, cli->cfg->port);
    outcome(cli, "disconnected");
  }
  schedule_reconnect(cli);
}

static void on_frame(nq_conn_t *c, json_t *msg);

static void cli_connect(cli_t *cli) {
  nq_conn_opts_t o = {.on_open = on_open, .on_frame = on_frame, .on_error = on_error,
                      .on_close = on_close, .data = cli, .tag = "cli"};
  set_state(cli, CLI_STATE_CONNECTING);
  nq_log(NQ_LOG_DEBUG, "connecting to %s:%d", cli->cfg->host, cli->cfg->port);
  int rc = nq_conn_connect(cli->loop, cli->cfg->host, cli->cfg->port, cli->tls, cli->cfg->host,
                           &o, &cli->conn);
  if (rc) {
    cli->conn = NULL;
    set_state(cli, CLI_STATE_IDLE);
    nq_log(out_of_reach(cli, nq_strerror(rc)), "cannot connect to %s:%d: %s", cli->cfg->host,
           cli->cfg->port, nq_strerror(rc));
    schedule_reconnect(cli);
  }
}

static void on_retry_timer(uv_timer_t *t) {
  cli_t *cli = t->data;
  if (cli->life != LIFE_RUNNING) return;
  if (cli->state == CLI_STATE_IDLE && !cli->conn) {
    cli_connect(cli);
  } else {
    cli->nowork_wait = 0;
    cli_pump(cli);
  }
}

/* Jittered exponential backoff: backoff_min doubling up to backoff_max, +-25%. A server that
 * answered `busy` with retry_after R is given R to 1.5 R instead, when that is longer: the spread
 * keeps a full server's refused clients from coming back together. */
static void schedule_reconnect(cli_t *cli) {
  const cli_config_t *cfg = cli->cfg;
  double d = cfg->backoff_min;
  for (int i = 0; i < cli->attempt && d < cfg->backoff_max; i++) d *= 2;
  if (d > cfg->backoff_max) d = cfg->backoff_max;
  d *= jitter(cli);
  double asked = (double)cli->retry_after * (jitter(cli) + 0.25); /* R .. 1.5 R */
  cli->retry_after = 0;
  if (asked > d) {
    d = asked;
    nq_log(NQ_LOG_INFO, "%sreconnecting in %.1f s, as it asked", cli->retry_busy ?
           "the server is full; " : "the server asked for a wait; ", d);
  }
  cli->retry_busy = 0;
  cli->attempt++;
  nq_log(NQ_LOG_DEBUG, "reconnecting in %.1f s (attempt %d)", d, cli->attempt);
  uv_timer_start(&cli->retry_timer, on_retry_timer, (uint64_t)(d * 1000), 0);
}

/* A message from the server that its parser refused: the server speaks another protocol version
 * or broke this one. Either way waiting and reconnecting would not help. */
static void server_broke_protocol(cli_t *cli, const char *what, const nq_proto_err_t *err) {
  if (err->code == NQ_ERR_VERSION)
    nq_log(NQ_LOG_ERROR, "protocol version mismatch: %s", err->message);
  else
    nq_log(NQ_LOG_ERROR, "protocol error: the server sent a malformed %s: %s", what,
           err->message);
  leave(cli, err->code == NQ_ERR_VERSION ? CLI_REASON_VERSION : CLI_REASON_PROTOCOL);
  nq_conn_close(cli->conn, nq_errcode_name(err->code), err->message);
}

/* ---- messages from the server ---- */

/* The reason a fatal error from the server gives us to leave; NONE: try again later (shutdown,
 * timeout, busy, internal, or a code we do not know). */
static cli_reason_t fatal_code_reason(nq_errcode_t code) {
  switch (code) {
  case NQ_ERR_AUTH:
  case NQ_ERR_SIGNUP_CLOSED:
  case NQ_ERR_SIGNUP_REJECTED:
  case NQ_ERR_EXISTS:    /* a sign-up's public name is taken */
  case NQ_ERR_NOT_FOUND: /* a sign-up's team does not exist */
  case NQ_ERR_ENROL_CLOSED: return CLI_REASON_AUTH; /* rate_limited: retried after the backoff */
  case NQ_ERR_BANNED: return CLI_REASON_BANNED;
  case NQ_ERR_VERSION:
  case NQ_ERR_UPGRADE_REQUIRED: return CLI_REASON_VERSION;
  case NQ_ERR_BAD_MESSAGE:
  case NQ_ERR_NOT_HELLO:
  case NQ_ERR_UNKNOWN_TYPE:
  case NQ_ERR_BAD_JSON:
  case NQ_ERR_BAD_FRAME:
  case NQ_ERR_FRAME_TOO_BIG: return CLI_REASON_PROTOCOL;
  default: return CLI_REASON_NONE;
  }
}

static void join_forget_ticket(cli_t *cli);

static void handle_error(cli_t *cli, const json_t *msg) {
  nq_error_msg_t e;
  nq_proto_err_t err;
  if (nq_error_parse(msg, &e, &err) != 0) {
    server_broke_protocol(cli, "error", &err);
    return;
  }
  if (e.fatal) {
    cli_reason_t why = fatal_code_reason(e.code);
    if (why != CLI_REASON_NONE) {
      const char *what = why == CLI_REASON_AUTH    ? (cli->joining     ? "sign-up refused"
                                                      : cli->enrolling ? "enrolment refused"
                                                                       : "authentication refused")
                         : why == CLI_REASON_BANNED  ? "this client is banned"
                         : why == CLI_REASON_VERSION ? "protocol version mismatch"
                                                     : "protocol error";
      if (e.code == NQ_ERR_UPGRADE_REQUIRED)
        nq_log(NQ_LOG_ERROR, "upgrade required: this nq-client %s speaks protocol %d..%d and the "
               "server needs %lld or newer; install a newer nq-client (server says: %s)",
               NQ_VERSION_STRING, NQ_PROTO_VERSION_MIN, NQ_PROTO_VERSION_MAX,
               (long long)e.min_version, e.message);
      else
        nq_log(NQ_LOG_ERROR, "%s: server says %s: %s", what, e.name, e.message);
      if (e.code == NQ_ERR_AUTH && cli->token_stored)
        nq_log(NQ_LOG_ERROR, "the token stored in %s/token was refused; remove that file to "
               "enrol again with --enrol", cli->j.dir);
      if (e.code == NQ_ERR_SIGNUP_REJECTED) join_forget_ticket(cli);
      leave(cli, why);
    } else if (e.code == NQ_ERR_RATE_LIMITED && cli->joining) {
      /* The sign-up limits say when to come back: the message names the time. */
      nq_log(NQ_LOG_ERROR, "sign-up refused for now: %s", e.message);
      cli->retry_after = e.retry_after;
    } else {
      nq_log(NQ_LOG_WARN, "server closed the session: %s: %s", e.name, e.message);
      if (e.code == NQ_ERR_BUSY) cli->retry_after = e.retry_after, cli->retry_busy = 1;
    }
    nq_conn_close(cli->conn, NULL, NULL);
    return;
  }
  if (e.id > 0 && sent_find(cli, e.id)) {
    /* A refused result will never be accepted: keeping it would only re-send it forever. */
    nq_log(NQ_LOG_WARN, "result %" PRId64 " refused: %s (%s); dropped from the journal", e.id,
           e.name, e.message);
    result_answered(cli, e.id);
    cli_pump(cli);
    return;
  }
  cli_lane_t *ln = e.id > 0 ? lane_of(cli, e.id) : NULL;
  if (ln) {
    if (e.code == NQ_ERR_UNKNOWN_ASSIGNMENT) {
      /* Decided, or not ours any more: its result could only be late. Stop and forget it. */
      nq_log(NQ_LOG_WARN, "assignment %" PRId64 " is no longer needed (%s: %s): unit %s dropped",
             e.id, e.name, e.message, ln->cur.unit);
      ln->cur_drop = 1;
      cli_worker_cancel(&ln->worker, e.id);
    } else {
      /* lease_expired: another client has the unit too, but ours is still taken until it is
       * decided, so it is worth finishing (a resumed unit is often most of the way). */
      nq_log(NQ_LOG_INFO, "lease of assignment %" PRId64 " not extended (%s: %s); finishing "
             "unit %s anyway", e.id, e.name, e.message, ln->cur.unit);
      ln->cur.unconfirmed = 0;
    }
    return;
  }
  nq_log(NQ_LOG_WARN, "server error %s: %s", e.name, e.message);
}

/* No job runs on the server (welcome or no_work `waiting`): ask again later, the interval doubling
 * from the server's retry_after up to WAIT_MAX_S, with the session kept open. The next job's work
 * comes with the answer to a get_work, as any work does. */
static void job_waiting(cli_t *cli, int64_t retry_after) {
  int first = cli->wait_s == 0;
  int64_t s = first ? retry_after : 2 * (int64_t)cli->wait_s;
  cli->wait_s = (int)(s < 1 ? 1 : s > WAIT_MAX_S ? WAIT_MAX_S : s);
  nq_log(first ? NQ_LOG_INFO : NQ_LOG_DEBUG, "no job runs on the server now (%ld unit(s) solved "
         "here so far); waiting for the next one, asking again in %d s", cli->units_done,
         cli->wait_s);
  cli->nowork_wait = 1;
  uv_timer_start(&cli->retry_timer, on_retry_timer, (uint64_t)cli->wait_s * 1000, 0);
}

/* ---- joining (--join) ---- */

#define OWNER_KEY_FILE "owner.key"
#define TICKET_FILE "signup.ticket"

static void join_forget_ticket(cli_t *cli) {
  char path[4096];
  cli->ticket[0] = '\0';
  if (nq_path_join(path, sizeof path, cli->j.dir, TICKET_FILE) == 0) unlink(path);
}

/* A file of one secret line in the state folder, 0600. */
static int join_write(cli_t *cli, const char *name, const char *secret) {
  char line[256];
  int n = snprintf(line, sizeof line, "%s\n", secret);
  int rc = n > 0 && (size_t)n < sizeof line
               ? nq_file_replace(cli->j.dir, name, line, (size_t)n, 0600) : NQ_EINVAL;
  memset(line, 0, sizeof line);
  return rc;
}

/* Joined: the token is this machine's, the owner key is the volunteer's (printed once, kept in
 * the state folder); then hello with the token on this connection. */
static void joined(cli_t *cli, const nq_signup_reply_t *r) {
  const cli_config_t *cfg = cli->cfg;
  if (strlen(r->token) >= sizeof cli->token || cli_token_store(&cli->j, r->token) != 0 ||
      join_write(cli, OWNER_KEY_FILE, r->owner_key) != 0) {
    nq_log(NQ_LOG_ERROR, "joined as owner %s but cannot store the keys in %s", r->owner,
           cli->j.dir);
    leave(cli, CLI_REASON_SETUP);
    nq_conn_close(cli->conn, NULL, NULL);
    return;
  }
  strcpy(cli->token, r->token);
  join_forget_ticket(cli);
  cli->joining = 0;
  nq_log(NQ_LOG_INFO, "joined %s:%d as owner %s%s%s, this machine as client %s; token stored "
         "in %s/token, owner key in %s/%s", cfg->host, cfg->port, r->owner,
         cfg->public_name ? ", shown as " : " (anonymous)", cfg->public_name ? cfg->public_name : "",
         r->client, cli->j.dir, cli->j.dir, OWNER_KEY_FILE);
  /* Printed once, to the terminal of whoever ran --join: the key enrols more machines. */
  printf("You joined %s:%d as owner %s. Your owner key (also in %s/%s, mode 0600; keep it "
         "private):\n  %s\nTo add a second machine under the same owner, copy that file to it "
         "and run:\n  nq-client --server %s:%d --enrol-file owner.key --name OTHER-NAME%s%s\n",
         cfg->host, cfg->port, r->owner, cli->j.dir, OWNER_KEY_FILE, r->owner_key, cfg->host,
         cfg->port, cfg->ca ? " --ca " : "", cfg->ca ? cfg->ca : "");
  fflush(stdout);
  nq_hello_t h = {NQ_PROTO_VERSION, NQ_ROLE_CLIENT, cli->token, NULL, NULL, NQ_SOLVER_VERSION,
                  cfg->threads > 0 ? cfg->threads : 1, "nq-client " NQ_VERSION_STRING,
                  cfg->public_name, 0, 0, 0, !cfg->exit_when_done};
  if (send_new(cli, nq_hello_pack(&h)) != 0) nq_conn_close(cli->conn, NULL, NULL);
}

static void handle_signup_reply(cli_t *cli, const json_t *msg) {
  nq_signup_reply_t r;
  nq_proto_err_t err;
  if (!cli->joining) {
    nq_log(NQ_LOG_WARN, "unexpected signup_reply");
    nq_conn_close(cli->conn, nq_errcode_name(NQ_ERR_UNKNOWN_TYPE), "expected welcome");
    return;
  }
  if (nq_signup_reply_parse(msg, &r, &err) != 0) {
    server_broke_protocol(cli, "signup_reply", &err);
    return;
  }
  if (r.state == NQ_SIGNUP_JOINED) {
    joined(cli, &r);
    return;
  }
  if (r.ticket) {
    snprintf(cli->ticket, sizeof cli->ticket, "%s", r.ticket);
    if (join_write(cli, TICKET_FILE, r.ticket) != 0)
      nq_log(NQ_LOG_WARN, "cannot keep the sign-up ticket in %s: a restart asks anew",
             cli->j.dir);
  }
  nq_log(r.ticket ? NQ_LOG_INFO : NQ_LOG_DEBUG, "sign-up request %lld waits for the operator's "
         "approval (nq-admin owner approve %lld); asking again every %lld s",
         (long long)r.request, (long long)r.request, (long long)r.retry_after);
  outcome(cli, "sign-up waiting for approval");
  cli->retry_after = r.retry_after;
  cli->attempt = 0;
  nq_conn_close(cli->conn, NULL, NULL);
}

/* ---- news ---- */

#define NEWS_FILE "news.seen"

/* Log each item not logged before, oldest first, once per state folder. */
static void news_log(cli_t *cli, const nq_news_t *n) {
  int64_t top = cli->news_seen;
  for (int i = n->n - 1; i >= 0; i--) {
    const nq_news_item_t *it = &n->items[i];
    if (it->id <= cli->news_seen) continue;
    char when[32];
    time_t t = (time_t)it->at;
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime_r(&t, &tm));
    nq_log(NQ_LOG_INFO, "news from the project (%s): %s", when, it->text);
    if (it->id > top) top = it->id;
  }
  if (top == cli->news_seen) return;
  cli->news_seen = top;
  char line[32];
  int len = snprintf(line, sizeof line, "%lld\n", (long long)top);
  if (nq_file_replace_volatile(cli->j.dir, NEWS_FILE, line, (size_t)len, 0644) != 0)
    nq_log(NQ_LOG_DEBUG, "cannot keep %s/%s: news may be logged again", cli->j.dir, NEWS_FILE);
}

static void news_load(cli_t *cli) {
  char path[4096], line[32];
  if (nq_path_join(path, sizeof path, cli->j.dir, NEWS_FILE) == 0 &&
      nq_file_read_line(path, line, sizeof line) == 0)
    cli->news_seen = strtoll(line, NULL, 10);
}

static void handle_news(cli_t *cli, const json_t *msg) {
  nq_news_t n;
  nq_proto_err_t err;
  if (nq_news_parse(msg, &n, &err) != 0) {
    server_broke_protocol(cli, "news", &err);
    return;
  }
  news_log(cli, &n);
}

static void handle_welcome(cli_t *cli, const json_t *msg) {
  nq_welcome_t w;
  nq_proto_err_t err;
  if (nq_welcome_parse(msg, &w, &err) != 0) {
    server_broke_protocol(cli, "welcome", &err);
    return;
  }
  const char *client = w.client ? w.client : "?";
  if (cli->enrolling) {
    if (!w.token || !*w.token || strlen(w.token) >= sizeof cli->token) {
      nq_log(NQ_LOG_ERROR, "enrolment: the server sent no usable token");
      leave(cli, CLI_REASON_PROTOCOL);
      nq_conn_close(cli->conn, NULL, NULL);
      return;
    }
    strcpy(cli->token, w.token);
    if (cli_token_store(&cli->j, w.token) != 0) {
      nq_log(NQ_LOG_ERROR, "enrolled as %s but cannot store the token in %s", client,
             cli->j.dir);
      leave(cli, CLI_REASON_SETUP);
      nq_conn_close(cli->conn, NULL, NULL);
      return;
    }
    cli->enrolling = 0;
    nq_log(NQ_LOG_INFO, "enrolled as %s; token stored in %s/token", client, cli->j.dir);
  }
  int pi = w.progress_interval > PROGRESS_INTERVAL_MAX ? PROGRESS_INTERVAL_MAX
                                                       : w.progress_interval;
  set_state(cli, CLI_STATE_READY);
  cli->attempt = 0;
  cli->progress_interval = pi;
  cli->paused_told = 0; /* a new session: a pause is told again (tell_pause) */
  cli->paused_told_at = 0;
  cli->max_outstanding = w.max_outstanding;
  nq_log(NQ_LOG_INFO, "session open as %s: job N=%d %s, progress every %d s", client, w.job_n,
         w.job_state == NQ_JOB_DONE ? "done" : w.job_state == NQ_JOB_WAITING ? "done (waiting "
         "for the next job)" : "running", pi);
  in_reach(cli);
  outcome(cli, "session open");
  snprintf(cli->st.client, sizeof cli->st.client, "%s", client);
  cli->st.job_n = w.job_n;
  /* What the volunteer is told: the public name, the page, the credit (optional fields). */
  if (w.shown_as) snprintf(cli->st.shown_as, sizeof cli->st.shown_as, "%s", w.shown_as);
  if (w.page) snprintf(cli->st.page, sizeof cli->st.page, "%s", w.page);
  if (w.credit) {
    snprintf(cli->st.credit, sizeof cli->st.credit, "%s", w.credit);
    cli->st.has_credit = 1;
    cli->st.credit_at = (int64_t)time(NULL);
  }
  if (w.evidence_key)
    nq_log(NQ_LOG_INFO, "the server signs its evidence with key %s (nq-verify FILE --key %s)",
           w.evidence_key, w.evidence_key);
  news_log(cli, &w.news);
  if (w.shown_as || w.credit)
    nq_log(NQ_LOG_INFO, "credited as %s%s%s, credit %s nodes", w.shown_as ? w.shown_as : "?",
           w.page ? " on " : "", w.page ? w.page : "", w.credit ? w.credit : "?");
  uint64_t idle = (uint64_t)(pi * 3 > 180 ? pi * 3 : 180) * 1000;
  nq_conn_set_idle_timeout(cli->conn, idle);
  for (int i = 0; i < cli->nlanes; i++) { /* units that ran on while we were away */
    cli_lane_t *ln = &cli->lanes[i];
    if (!ln->running) continue;
    uint64_t ms = (uint64_t)pi * 1000; /* report at the new pace */
    uv_timer_start(&ln->progress_timer, on_progress_timer, ms, ms);
  }
  send_journal(cli);
  for (int i = 0; i < cli->nlanes; i++) /* do we still hold them? */
    if (cli->lanes[i].running && cli->lanes[i].cur.unconfirmed) send_progress(&cli->lanes[i]);
  if (w.job_state == NQ_JOB_DONE) {
    nq_log(NQ_LOG_INFO, "the job is done; nothing to do");
    job_finished(cli);
  } else if (w.job_state == NQ_JOB_WAITING) {
    job_waiting(cli, DEFAULT_RETRY_S);
  }
  cli_pump(cli);
}

/* The server named a kernel this machine cannot run (kernel-diverse verification): say so, and
 * the server leases the unit elsewhere; nothing of it is kept here. */
static void refuse_kernel(cli_t *cli, const cli_assign_t *a) {
  char msg[96];
  snprintf(msg, sizeof msg, "this machine cannot run kernel %s", a->kernel);
  nq_error_msg_t e = {.code = NQ_ERR_NO_KERNEL, .message = msg, .id = a->id};
  nq_log(NQ_LOG_INFO, "assignment %" PRId64 " (%s) names kernel %s, which this machine lacks: "
         "refused", a->id, a->unit, a->kernel);
  send_new(cli, nq_error_pack(&e));
}

static void handle_work(cli_t *cli, const json_t *msg) {
  nq_work_t w;
  nq_proto_err_t err;
  if (nq_work_parse(msg, &w, &err) != 0) {
    server_broke_protocol(cli, "work", &err);
    return;
  }
  cli->getwork_inflight = 0;
  size_t fresh = 0;
  int64_t now = (int64_t)time(NULL);
  for (int i = 0; i < w.n; i++) {
    cli_assign_t as;
    memset(&as, 0, sizeof as);
    as.id = w.a[i].id;
    snprintf(as.unit, sizeof as.unit, "%s", w.a[i].unit);
    snprintf(as.kernel, sizeof as.kernel, "%s", w.a[i].kernel ? w.a[i].kernel : "");
    /* On our clock: the lease counts from receipt, so clock skew does not matter. */
    as.deadline = now + w.a[i].lease;
    /* The server re-sends what we hold (so we still hold it); never run one twice. */
    cli_lane_t *held = lane_of(cli, as.id);
    if (held) held->cur.unconfirmed = 0;
    if (held || lane_next_of(cli, as.id) || queue_confirm(cli, as.id) ||
        sent_find(cli, as.id) || held_find(cli, as.id) ||
        (cli->journal_n != 0 && cli_journal_has(&cli->j, as.id)))
      continue;
    if (cli->reason != CLI_REASON_NONE) continue;
    if (as.kernel[0] && !cli_kernel_can_run(as.kernel)) {
      refuse_kernel(cli, &as);
      continue;
    }
    /* Recorded unless the units are short (lazy records): the server re-sends what we hold. */
    if (lazy(cli, cli->last_seconds))
      ;
    else if (cli_assigned_put(&cli->j, &as) != 0)
      nq_log(NQ_LOG_WARN, "cannot record assignment %" PRId64 " on disk", as.id);
    else
      as.on_disk = 1;
    if (queue_push(cli, &as) != 0) continue;
    fresh++;
    nq_log(NQ_LOG_DEBUG, "assignment %" PRId64 ": %s", as.id, as.unit);
    cli->st.job_n = atoi(as.unit); /* a unit's text begins with its N: the job may have changed */
  }
  if (fresh && cli->wait_s) {
    nq_log(NQ_LOG_INFO, "work again: job N=%d", cli->st.job_n);
    cli->wait_s = 0;
  }
  if (!fresh) {
    /* Only re-sent assignments: there is nothing new now, so do not ask again at once. */
    cli->nowork_wait = 1;
    uv_timer_start(&cli->retry_timer, on_retry_timer, DEFAULT_RETRY_S * 1000, 0);
  }
  cli_pump(cli);
}

static void handle_no_work(cli_t *cli, const json_t *msg) {
  nq_no_work_t nw;
  nq_proto_err_t err;
  if (nq_no_work_parse(msg, &nw, &err) != 0) {
    server_broke_protocol(cli, "no_work", &err);
    return;
  }
  cli->getwork_inflight = 0;
  if (nw.reason == NQ_NOWORK_DONE) {
    nq_log(NQ_LOG_INFO, "the job is done (%ld unit(s) solved here)", cli->units_done);
    job_finished(cli);
    cli_pump(cli);
    return;
  }
  if (nw.reason == NQ_NOWORK_WAITING) {
    job_waiting(cli, nw.retry_after);
    cli_pump(cli);
    return;
  }
  int64_t after = nw.retry_after < 1 ? 1 : nw.retry_after > 60 ? 60 : nw.retry_after;
  nq_log(NQ_LOG_DEBUG, "no work (%s), asking again in %" PRId64 " s",
         nq_nowork_reason_name(nw.reason), after);
  cli->nowork_wait = 1;
  uv_timer_start(&cli->retry_timer, on_retry_timer, (uint64_t)after * 1000, 0);
  cli_pump(cli);
}

static void handle_ack(cli_t *cli, const json_t *msg) {
  nq_ack_t a;
  nq_proto_err_t err;
  if (nq_ack_parse(msg, &a, &err) != 0) {
    server_broke_protocol(cli, "ack", &err);
    return;
  }
  nq_log(a.status == NQ_ACK_ACCEPTED ? NQ_LOG_DEBUG : NQ_LOG_INFO, "ack %" PRId64 ": %s", a.id,
         nq_ack_status_name(a.status));
  result_answered(cli, a.id);
  cli_pump(cli);
}

static void handle_lease(cli_t *cli, const json_t *msg) {
  nq_lease_t l;
  nq_proto_err_t err;
  if (nq_lease_parse(msg, &l, &err) != 0) {
    server_broke_protocol(cli, "lease", &err);
    return;
  }
  nq_log(NQ_LOG_DEBUG, "lease of %" PRId64 " extended", l.id);
}

static void handle_bye(cli_t *cli, const json_t *msg) {
  (void)msg;
  nq_log(NQ_LOG_INFO, "server said bye");
  nq_conn_close(cli->conn, NULL, NULL);
}

/* What the server may send a client session, and in which state: before welcome (HELLO) only
 * welcome or an error; then (READY) the answers to our requests, bye and errors. */
enum { IN_HELLO = 1, IN_READY = 2 };
static const struct {
  int when;
  void (*fn)(cli_t *cli, const json_t *msg);
} handlers[NQ_MSG_COUNT] = {
    [NQ_MSG_ERROR] = {IN_HELLO | IN_READY, handle_error},
    [NQ_MSG_WELCOME] = {IN_HELLO, handle_welcome},
    [NQ_MSG_SIGNUP_REPLY] = {IN_HELLO, handle_signup_reply},
    [NQ_MSG_NEWS] = {IN_READY, handle_news},
    [NQ_MSG_WORK] = {IN_READY, handle_work},
    [NQ_MSG_NO_WORK] = {IN_READY, handle_no_work},
    [NQ_MSG_ACK] = {IN_READY, handle_ack},
    [NQ_MSG_LEASE] = {IN_READY, handle_lease},
    [NQ_MSG_BYE] = {IN_READY, handle_bye},
};

static void on_frame(nq_conn_t *c, json_t *msg) {
  cli_t *cli = nq_conn_data(c);
  const char *name;
  nq_msg_type_t t = nq_msg_type(msg, &name);
  cli->st.last_contact = (int64_t)time(NULL);
  int when = cli->state == CLI_STATE_HELLO ? IN_HELLO : IN_READY;
  if (handlers[t].fn && (handlers[t].when & when)) {
    handlers[t].fn(cli, msg);
  } else if (when == IN_HELLO) {
    nq_log(NQ_LOG_WARN, "unexpected %s before welcome", name ? name : "message");
    nq_conn_close(c, nq_errcode_name(NQ_ERR_UNKNOWN_TYPE), "expected welcome");
  } else {
    /* Ignored: a newer server may send something informative we do not know yet. */
    nq_log(NQ_LOG_WARN, "unexpected message type '%s'", name ? name : "");
  }
}

/* ---- progress ---- */

/* progress {id, nodes, fraction, seconds} for the lane's running unit, now. */
static void send_progress(cli_lane_t *ln) {
  cli_t *cli = ln->cli;
  if (cli->state != CLI_STATE_READY || !ln->running) return;
  nq_progress_t p = {.id = ln->cur.id, .has_nodes = 1, .nodes = ln->cur_nodes,
                     .has_fraction = 1, .fraction = ln->cur_fraction, .has_seconds = 1,
                     .seconds = ln->cur_seconds, .paused = nq_throttle_paused(cli->throttle)};
  if (send_new(cli, nq_progress_pack(&p)) == 0) {
    ln->cur_nodes_sent = ln->cur_nodes;
    ln->cur_progressed = 1;
  }
}

static void on_progress_timer(uv_timer_t *t) {
  cli_lane_t *ln = t->data;
  /* The first progress of a unit goes out even without new nodes: it turns the lease sized for
   * the queue into a full one (or revives it if the unit waited in the queue past its deadline). */
  if (!ln->cur_progressed || ln->cur_nodes != ln->cur_nodes_sent) send_progress(ln);
}

/* ---- checkpoints ---- */

/* Save what is finished of the lane's running unit, if anything new is
 * (STATE/checkpoint/<id>.ckpt). */
static void save_checkpoint(cli_lane_t *ln) {
  nq_ckpt_t c;
  if (!ln->running || cli_worker_snapshot(&ln->worker, ln->cur.id, &c) != 0) return;
  if (c.ndone > 0 && c.ndone != ln->cur_saved) {
    int rc = cli_ckpt_put(&ln->cli->j, ln->cur.id, &c);
    if (rc == 0) ln->cur_saved = c.ndone, ln->cur_ckpt = 1;
    /* a unit long enough to checkpoint is recorded like any other */
    if (rc == 0 && !ln->cur.on_disk && cli_assigned_put(&ln->cli->j, &ln->cur) == 0)
      ln->cur.on_disk = 1;
    nq_log(rc ? NQ_LOG_WARN : NQ_LOG_DEBUG, "checkpoint of %s (id %" PRId64 "): %u of %u tasks%s",
           ln->cur.unit, ln->cur.id, c.ndone, c.ntasks, rc ? ": cannot be written" : "");
  }
  nq_ckpt_free(&c);
}

static void on_ckpt_timer(uv_timer_t *t) {
  save_checkpoint(t->data);
}

/* The checkpoint to resume assignment a from, or NULL: a file that is not a valid checkpoint is
 * reported and set aside (the unit then starts from zero). */
static nq_ckpt_t *load_checkpoint(cli_t *cli, const cli_assign_t *a) {
  nq_ckpt_t *c = malloc(sizeof *c);
  char err[NQ_CKPT_ERR_MAX] = "";
  int rc = c ? cli_ckpt_get(&cli->j, a->id, c, err, sizeof err) : NQ_ENOMEM;
  if (rc == 0) return c;
  if (rc != NQ_ENOTFOUND) {
    nq_log(NQ_LOG_WARN, "checkpoint of assignment %" PRId64 " refused (%s): unit %s restarts "
           "from zero", a->id, err[0] ? err : nq_strerror(rc), a->unit);
    cli_ckpt_set_aside(&cli->j, a->id);
  }
  free(c);
  return NULL;
}

/* ---- what the volunteer is told: the status file and the summary ---- */

static void fill_status(cli_t *cli, int stopped) {
  cli_status_t *s = &cli->st;
  const cli_config_t *cfg = cli->cfg;
  s->pid = (int64_t)getpid();
  s->updated = (int64_t)time(NULL);
  s->stopped = stopped;
  snprintf(s->version, sizeof s->version, "%s", NQ_VERSION_STRING);
  snprintf(s->kernel, sizeof s->kernel, "%s", nq_fast_kernel_in_use());
  snprintf(s->server, sizeof s->server, strchr(cfg->host, ':') ? "[%s]:%d" : "%s:%d", cfg->host,
           cfg->port);
  snprintf(s->conn, sizeof s->conn, "%s", cli_state_name(cli->state));
  s->threads = cfg->threads;
  snprintf(s->priority, sizeof s->priority, "%s", nq_priority_name(cfg->priority));
  s->cpu_limit = cfg->cpu_limit;
  s->paused = nq_throttle_paused(cli->throttle);
  nq_throttle_pause_reason(cli->throttle, s->pause_reason, sizeof s->pause_reason);
  s->units_done = cli->units_done;
  s->nodes_done = cli->nodes_done;
  s->solve_seconds = cli->seconds_done;
  s->queued = (int)cli->qlen;
  /* The unit shown is the first lane's that runs one (the CPU's before the devices'). */
  const cli_lane_t *ln = NULL;
  for (int i = 0; i < cli->nlanes && !ln; i++)
    if (cli->lanes[i].running) ln = &cli->lanes[i];
  s->running = ln != NULL;
  snprintf(s->unit, sizeof s->unit, "%s", ln ? ln->cur.unit : "");
  s->unit_id = ln ? ln->cur.id : 0;
  s->fraction = ln ? ln->cur_fraction : 0;
  s->nodes = ln ? ln->cur_nodes : 0;
  s->seconds = ln ? ln->cur_seconds : 0;
  nq_ckpt_t c; /* live figures where the worker has them (the progress events stop in a pause) */
  if (ln && cli_worker_snapshot((cli_worker_t *)&ln->worker, ln->cur.id, &c) == 0) {
    s->fraction = nq_ckpt_fraction(&c, 0);
    s->nodes = c.sum.nodes;
    s->seconds = c.seconds;
    nq_ckpt_free(&c);
  }
}

/* STATE/status.json for `nq-client status` (status.h); a failure is said once. */
static void write_status(cli_t *cli, int stopped) {
  fill_status(cli, stopped);
  int rc = cli_status_write(cli->j.dir, &cli->st);
  if (rc && !cli->status_warned)
    nq_log(NQ_LOG_WARN, "cannot write %s/%s: %s", cli->j.dir, CLI_STATUS_FILE, nq_strerror(rc));
  cli->status_warned |= rc != 0;
}

/* At INFO, every summary_seconds: what was solved since the last summary (the units' own lines
 * are at DEBUG). Nothing solved, nothing said. */
static void log_summary(cli_t *cli) {
  double now = nq_now_mono();
  if (now - cli->summary_at < cli->cfg->summary_seconds) return;
  if (cli->sum_units > 0)
    nq_log(NQ_LOG_INFO, "%ld unit(s) solved in the last %.0f s: %" PRIu64 " nodes in %.1f s of "
           "solving (%.3g nodes/s); %ld unit(s) in all", cli->sum_units, now - cli->summary_at,
           cli->sum_nodes, cli->sum_seconds,
           cli->sum_seconds > 0 ? (double)cli->sum_nodes / cli->sum_seconds : 0.0,
           cli->units_done);
  cli->summary_at = now;
  cli->sum_units = 0;
  cli->sum_nodes = 0;
  cli->sum_seconds = 0;
}

/* The server hears of a pause (docs/protocol.md, `paused` in progress): when the solver pauses
 * or resumes, and every progress interval while it stays paused, one progress on a held
 * assignment (a running unit's, else the next queued one's) says so; the server then keeps every
 * lease of this client alive instead of letting it lapse. On resume the client asks for work. */
static void tell_pause(cli_t *cli) {
  int paused = nq_throttle_paused(cli->throttle);
  double now = nq_now_mono(), every = cli->progress_interval > 0 ? cli->progress_interval : 60;
  if (cli->state != CLI_STATE_READY) return;
  if (paused == cli->paused_told && (!paused || now - cli->paused_told_at < every)) {
    /* A pause that began and ended between two ticks (one the session opened in, say) was
     * never told; the work it held back is asked for now. */
    if (!paused) cli_pump(cli);
    return;
  }
  int64_t id = -1;
  cli_lane_t *run = NULL;
  for (int i = 0; i < cli->nlanes && !run; i++)
    if (cli->lanes[i].running) run = &cli->lanes[i];
  if (run) id = run->cur.id;
  else if (cli->qlen > 0) id = cli->queue[0].id;
  if (id >= 0) {
    if (run) {
      send_progress(run);
    } else {
      nq_progress_t p = {.id = id, .paused = paused};
      if (send_new(cli, nq_progress_pack(&p)) != 0) return;
    }
  }
  cli->paused_told = paused;
  cli->paused_told_at = now;
  if (!paused) cli_pump(cli);
}

static void on_status_timer(uv_timer_t *t) {
  cli_t *cli = t->data;
  tell_pause(cli);
  write_status(cli, 0);
  log_summary(cli);
}

/* ---- the worker ---- */

/* A unit the worker stopped (a stop request, the end of the job, or the server no longer needs
 * it): what it finished is checkpointed for a later run, unless nobody needs it any more. */
static void unit_stopped(cli_lane_t *ln, const cli_assign_t *a, const cli_worker_event_t *ev) {
  cli_t *cli = ln->cli;
  if (ln->cur_drop || cli->reason == CLI_REASON_JOB_DONE) {
    if (a->on_disk) cli_assigned_remove(&cli->j, a->id);
    if (ln->cur_ckpt) cli_ckpt_remove(&cli->j, a->id);
    nq_log(NQ_LOG_INFO, "unit %s (id %" PRId64 ") stopped and forgotten", a->unit, a->id);
    return;
  }
  int rc = 0;
  if (ev->has_ckpt && ev->ckpt.ndone > 0 && ev->ckpt.ndone != ln->cur_saved)
    rc = cli_ckpt_put(&cli->j, a->id, &ev->ckpt);
  if (!a->on_disk && cli_assigned_put(&cli->j, a) != 0) rc = rc ? rc : NQ_EIO;
  nq_log(rc ? NQ_LOG_WARN : NQ_LOG_INFO,
         "unit %s (id %" PRId64 ") stopped at %.1f%% (%u of %u tasks)%s; assignment kept in %s",
         a->unit, a->id, 100.0 * ev->fraction, ev->has_ckpt ? ev->ckpt.ndone : 0,
         ev->has_ckpt ? ev->ckpt.ntasks : 0,
         rc ? ", checkpoint NOT written" : ev->has_ckpt && ev->ckpt.ndone ? ", checkpointed" : "",
         cli->j.dir);
}

static void unit_finished(cli_lane_t *ln, cli_worker_event_t *ev) {
  cli_t *cli = ln->cli;
  cli_assign_t a = ln->cur;
  ln->running = 0;
  uv_timer_stop(&ln->progress_timer);
  uv_timer_stop(&ln->ckpt_timer);
  if (ev->status == NQ_ECANCELED) {
    unit_stopped(ln, &a, ev);
    if (ev->has_ckpt) nq_ckpt_free(&ev->ckpt);
    return;
  }
  if (ev->has_ckpt) nq_ckpt_free(&ev->ckpt);
  if (ev->status != 0) {
    nq_log(NQ_LOG_ERROR, "unit %s (id %" PRId64 ") failed: %s", a.unit, a.id,
           nq_strerror(ev->status));
    if (a.on_disk) cli_assigned_remove(&cli->j, a.id);
    if (ln->cur_ckpt) cli_ckpt_remove(&cli->j, a.id);
    return;
  }
  nq_result_t r;
  memset(&r, 0, sizeof r);
  r.id = a.id;
  strcpy(r.unit, a.unit);
  r.counts = ev->counts;
  r.seconds = ev->seconds;
  snprintf(r.solver, sizeof r.solver, "%s", NQ_SOLVER_VERSION);
  snprintf(r.backend, sizeof r.backend, "%s", ev->backend);
  if (cli->cfg->fault_lie) r.counts.c8 += 1; /* test-only fault injection */
  cli_fault_kernel(r.backend, &r.counts);     /* nq-client-test only (fault.h) */
  double rate = ev->seconds > 0 ? (double)ev->counts.nodes / ev->seconds : 0;
  char resumed[64] = "";
  if (ev->resumed > 0) {
    snprintf(resumed, sizeof resumed, " (resumed at %u of %u tasks)", ev->resumed, ev->ntasks);
    cli->units_resumed++;
  }
  /* One line per unit only at DEBUG (small units make thousands a minute), unless it took long:
   * the INFO summary (log_summary) says the rest. */
  nq_log(ev->seconds > UNIT_LINE_S ? NQ_LOG_INFO : NQ_LOG_DEBUG,
         "unit %s (id %" PRId64 ") done: c2=%" PRIu64 " c4=%" PRIu64 " c8=%" PRIu64
         " nodes=%" PRIu64 " in %.2f s (%.3g nodes/s)%s%s",
         r.unit, r.id, r.counts.c2, r.counts.c4, r.counts.c8, r.counts.nodes, r.seconds, rate,
         resumed, cli->cfg->fault_lie ? " [FAULT lie]" : "");
  /* Journal first: once it is on disk, neither a crash nor a lost connection can lose it. A
   * short unit's result is held in memory instead (lazy records): it reaches the journal only if
   * its ack is late, or at a disconnect or a stop. */
  if (!lazy(cli, r.seconds) || held_add(cli, &r) != 0) journal_write(cli, &r);
  if (a.on_disk) cli_assigned_remove(&cli->j, a.id);
  if (ln->cur_ckpt) cli_ckpt_remove(&cli->j, a.id); /* the journal holds the whole answer now */
  cli->units_done++;
  cli->nodes_done += r.counts.nodes;
  cli->seconds_done += ev->seconds;
  cli->sum_units++;
  cli->sum_nodes += r.counts.nodes;
  cli->sum_seconds += ev->seconds;
  cli->last_seconds = ev->seconds;
  cli->nowork_wait = 0; /* a free worker is worth one immediate get_work */
  if (cli->state == CLI_STATE_READY) send_result(cli, &r);
}

static void on_worker_event(cli_worker_t *w) {
  cli_lane_t *ln = w->data;
  cli_t *cli = ln->cli;
  cli_worker_event_t ev;
  while (cli_worker_poll(w, &ev) != CLI_WEV_NONE) {
    if (ev.kind == CLI_WEV_PROGRESS) {
      if (ln->running && ev.id == ln->cur.id) {
        ln->cur_nodes = ev.counts.nodes;
        ln->cur_fraction = ev.fraction;
        ln->cur_seconds = ev.seconds;
      }
    } else if (ln->running && ev.id == ln->cur.id) {
      unit_finished(ln, &ev);
      lane_promote(ln); /* the worker went on to it when cur was done */
    } else if (ev.has_ckpt) {
      nq_ckpt_free(&ev.ckpt);
    }
  }
  if (cli->life == LIFE_RUNNING) cli_pump(cli);
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

/* "the CPU (N threads)" or "GPU opencl:NAME": what a lane solves on. */
static const char *lane_name(const cli_lane_t *ln) {
  static char buf[CLI_LANES_MAX][200];
  const cli_t *cli = ln->cli;
  int g = ln->index - (cli->cfg->threads > 0);
  if (g < 0)
    snprintf(buf[ln->index], sizeof buf[0], "the CPU (%d thread(s), %s)", cli->cfg->threads,
             nq_fast_kernel_in_use());
  else
    snprintf(buf[ln->index], sizeof buf[0], "GPU %s", nq_gpu_label(cli->gpus[g]));
  return buf[ln->index];
}

/* The lane's bookkeeping for unit a, which its worker has started (or starts next). */
static void lane_began(cli_lane_t *ln, const cli_assign_t *a, uint32_t resumed, int ckpt) {
  cli_t *cli = ln->cli;
  ln->running = 1;
  ln->cur = *a;
  ln->cur_nodes = ln->cur_nodes_sent = 0;
  ln->cur_fraction = ln->cur_seconds = 0;
  ln->cur_progressed = ln->cur_drop = 0;
  ln->cur_saved = resumed;
  ln->cur_ckpt = ckpt;
  if (nq_log_enabled(NQ_LOG_DEBUG))
    nq_log(NQ_LOG_DEBUG, "unit %s (id %" PRId64 ") started on %s%s", a->unit, a->id,
           lane_name(ln), nq_throttle_paused(cli->throttle) ? " (paused)" : "");
  uint64_t ms = (uint64_t)(cli->progress_interval > 0 ? cli->progress_interval : 60) * 1000;
  /* A unit from an earlier run may have been decided or reissued meanwhile: ask at once. */
  uv_timer_start(&ln->progress_timer, on_progress_timer,
                 a->unconfirmed && cli->state == CLI_STATE_READY ? 0 : first_progress_ms(a, ms),
                 ms);
  uint64_t cms = (uint64_t)(cli->cfg->checkpoint_seconds * 1000);
  if (cms < 10) cms = 10;
  uv_timer_start(&ln->ckpt_timer, on_ckpt_timer, cms, cms);
}

/* The worker has polled out cur's DONE and gone on to the next unit it held. */
static void lane_promote(cli_lane_t *ln) {
  if (ln->running || !ln->has_next) return;
  ln->has_next = 0;
  lane_began(ln, &ln->next, 0, 0);
}

/* Start the next queued unit on the lane if its worker is free; with `ahead`, while it solves
 * one, hand it a fresh one to go on with (cli_worker_submit_next). */
static void start_lane(cli_lane_t *ln, int ahead) {
  cli_t *cli = ln->cli;
  while ((!ln->running || (ahead && !ln->has_next)) && cli->qlen > 0 &&
         cli->reason == CLI_REASON_NONE) {
    cli_assign_t a = cli->queue[0];
    /* Only a fresh assignment (no file, so no checkpoint) goes next: one recorded on disk may
     * have a checkpoint to load, and waits for a free worker. */
    if (ln->running && a.on_disk) return;
    memmove(cli->queue, cli->queue + 1, (cli->qlen - 1) * sizeof *cli->queue);
    cli->qlen--;
    nq_unit_t u;
    char err[160];
    if (nq_unit_parse(a.unit, &u, err, sizeof err) != 0) {
      nq_log(NQ_LOG_ERROR, "assignment %" PRId64 ": bad unit '%s': %s; skipped", a.id, a.unit,
             err);
      if (a.on_disk) cli_assigned_remove(&cli->j, a.id);
      continue;
    }
    int busy = cli_worker_busy(&ln->worker);
    if (ln->running ? cli_worker_submit_next(&ln->worker, a.id, &u, a.kernel) != 0 : busy) {
      /* A DONE is still in flight (or two units are held): put it back and wait for it. */
      queue_push_front(cli, &a); /* room: it was just taken */
      return;
    }
    if (ln->running) {
      ln->next = a;
      ln->has_next = 1;
      continue;
    }
    /* Only an assignment recorded on disk can have a checkpoint: a fresh one has none. */
    nq_ckpt_t *resume = a.on_disk ? load_checkpoint(cli, &a) : NULL;
    uint32_t resumed = resume ? resume->ndone : 0; /* the worker owns resume once submitted */
    if (cli_worker_submit_kernel(&ln->worker, a.id, &u, resume, a.kernel) != 0) {
      /* not busy: not started */
      nq_log(NQ_LOG_ERROR, "the solver thread is gone; assignment %" PRId64 " kept", a.id);
      if (resume) nq_ckpt_free(resume);
      free(resume);
      leave(cli, CLI_REASON_FAILURE);
      return;
    }
    lane_began(ln, &a, resumed, resume != NULL);
  }
}

/* Every free lane takes the next queued unit (the devices' lanes first: they are the fastest). */
static void start_next(cli_t *cli) {
  /* Every idle lane gets a unit before any lane gets one ahead: a next unit is bound to its
   * lane, and a lane holding two while another holds none would starve it. */
  for (int i = cli->nlanes - 1; i >= 0; i--) start_lane(&cli->lanes[i], 0);
  for (int i = cli->nlanes - 1; i >= 0; i--) start_lane(&cli->lanes[i], 1);
}

/* ---- the scheduler of this client: what to do next ---- */

/* Draining (a reason that finishes the reports): leave once every result of ours has an answer,
 * or at once without a connection when stopped (the journal keeps the rest). After a reached
 * limit or the end of the job we wait for the server to take what the journal holds,
 * reconnecting if need be. */
static void drain(cli_t *cli) {
  if (lanes_running(cli)) return;
  if (cli->state == CLI_STATE_READY) {
    if (cli->nsent == 0) cli_finish(cli);
  } else if (cli->reason == CLI_REASON_STOPPED) {
    cli_finish(cli);
  } else {
    size_t n = 0;
    nq_result_t *v = NULL;
    if (cli_journal_list(&cli->j, &v, &n, NULL) == 0 && n == 0) cli_finish(cli);
    free(v);
  }
}

static void cli_pump(cli_t *cli) {
  if (cli->life != LIFE_RUNNING) return;
  const cli_config_t *cfg = cli->cfg;
  long limit = cfg->max_units;
  if (limit > 0 && cli->units_done >= limit && cli->reason == CLI_REASON_NONE) {
    nq_log(NQ_LOG_INFO, "%ld unit(s) solved: limit reached", cli->units_done);
    leave(cli, CLI_REASON_LIMIT);
  }
  start_next(cli);
  if (cli->reason != CLI_REASON_NONE) {
    drain(cli);
    return;
  }
  if (cli->state != CLI_STATE_READY || cli->getwork_inflight || cli->nowork_wait) return;
  /* Paused: no new units (what it holds the server keeps for it: tell_pause). */
  if (nq_throttle_paused(cli->throttle)) return;
  long held = (long)cli->qlen + lanes_running(cli);
  /* A unit for every lane, and a prefetch of one; when units take less than a round trip plus
   * the server's commit, the solver would idle between them, so hold a few more. */
  long prefetch = cfg->prefetch > 0 ? cfg->prefetch : 0;
  int short_units = cli->last_seconds >= 0 && cli->last_seconds < SHORT_UNIT_S;
  if (short_units && prefetch < SHORT_PREFETCH) prefetch = SHORT_PREFETCH;
  long target = cli->nlanes + prefetch;
  if (target > cli->max_outstanding) target = cli->max_outstanding;
  if (limit > 0 && target > limit - cli->units_done) target = limit - cli->units_done;
  /* Short units: ask again only once half of what we hold is gone, for several at once. Each
   * `work` repeats every assignment we hold, so asking per unit cost a round trip and the
   * parsing of `target` assignments a unit; half a queue of short units still covers
   * many round trips. */
  long low = short_units ? target / 2 : target - 1;
  if (held > low) return;
  /* want counts what we hold: the server re-sends held assignments first (docs/protocol.md). */
  nq_get_work_t g = {(int)target};
  if (send_new(cli, nq_get_work_pack(&g)) == 0) cli->getwork_inflight = 1;
}

/* ---- stopping ---- */

/* Close every handle we own; the loop then runs dry (cli_run) and the state is DONE. */
static void cli_release(cli_t *cli) {
  if (cli->life == LIFE_RELEASED) return;
  assert(!cli->conn); /* the connection closes first: its on_close brings us here */
  cli->life = LIFE_RELEASED;
  uv_timer_stop(&cli->retry_timer);
  uv_timer_stop(&cli->stop_timer);
  uv_timer_stop(&cli->status_timer);
  persist_held(cli); /* normally done at the disconnect already */
  uv_close((uv_handle_t *)&cli->retry_timer, NULL);
  uv_close((uv_handle_t *)&cli->stop_timer, NULL);
  uv_close((uv_handle_t *)&cli->status_timer, NULL);
  uv_close((uv_handle_t *)&cli->lazy_timer, NULL);
  for (int i = 0; i < cli->nlanes; i++) {
    uv_timer_stop(&cli->lanes[i].progress_timer);
    uv_timer_stop(&cli->lanes[i].ckpt_timer);
    uv_close((uv_handle_t *)&cli->lanes[i].progress_timer, NULL);
    uv_close((uv_handle_t *)&cli->lanes[i].ckpt_timer, NULL);
  }
  if (cli->cfg->handle_signals) {
    nq_sys_on_stop(NULL, NULL, 0);
    uv_close((uv_handle_t *)&cli->sigint, NULL);
    uv_close((uv_handle_t *)&cli->sigterm, NULL);
    uv_close((uv_handle_t *)&cli->stop_async, NULL);
  }
  /* A task of a big unit may run for a while yet: it is not waited for (the stop request already
   * checkpointed what was finished); the thread finishes it alone while the process exits. */
  for (int i = 0; i < cli->nlanes; i++) {
    if (cli_worker_stop(&cli->lanes[i].worker, STOP_JOIN_MS)) continue;
    nq_log(NQ_LOG_WARN, "the solver was still in a task; leaving without it (the checkpoint "
           "has what was finished)");
    cli->throttle = NULL; /* the thread still uses it; the process is about to exit */
    cli->ngpus = 0;       /* and its devices */
  }
  log_summary(cli);
  for (int i = 0; i < cli->nlanes; i++) cli->lanes[i].running = 0;
  set_state(cli, CLI_STATE_DONE);
  write_status(cli, 1);
}

/* End the session for cli->reason: bye if we are in one, close, then release. Re-entered from
 * on_close once the connection is gone. */
static void cli_finish(cli_t *cli) {
  if (cli->life == LIFE_RUNNING) {
    cli->life = LIFE_CLOSING;
    lanes_cancel(cli);
    uv_timer_stop(&cli->retry_timer);
    for (int i = 0; i < cli->nlanes; i++) uv_timer_stop(&cli->lanes[i].progress_timer);
  }
  if (cli->conn) {
    if (cli->state == CLI_STATE_READY) send_new(cli, nq_bye_pack());
    nq_conn_close(cli->conn, NULL, NULL);
    return; /* on_close comes back here */
  }
  cli_release(cli);
}

static void on_stop_timer(uv_timer_t *t) {
  cli_t *cli = t->data;
  if (lanes_running(cli))
    nq_log(NQ_LOG_WARN, "the running unit did not stop in time; its checkpoint has what was "
           "finished at the stop request");
  else
    nq_log(NQ_LOG_WARN, "no answer for %zu result(s); they stay in the journal", cli->nsent);
  cli_finish(cli);
}

void cli_stop(cli_t *cli) {
  if (cli->life == LIFE_RELEASED) return;
  if (cli->reason == CLI_REASON_STOPPED || cli->life == LIFE_CLOSING) {
    nq_log(NQ_LOG_WARN, "second stop request: leaving now");
    if (cli->conn) nq_conn_abort(cli->conn);
    cli_finish(cli);
    return;
  }
  leave(cli, CLI_REASON_STOPPED);
  /* Checkpoint first: whatever happens next (a slow task, a SIGKILL), this much is kept. Then
   * the server hears how far the unit got, and the solver stops taking tasks. */
  for (int i = 0; i < cli->nlanes; i++) {
    save_checkpoint(&cli->lanes[i]);
    send_progress(&cli->lanes[i]);
    lane_unqueue(&cli->lanes[i]);
    cli_worker_cancel(&cli->lanes[i].worker, -1);
    uv_timer_stop(&cli->lanes[i].ckpt_timer);
  }
  persist_held(cli); /* what only memory held (lazy records) is on disk before any SIGKILL */
  uv_timer_stop(&cli->retry_timer);
  uv_timer_start(&cli->stop_timer, on_stop_timer, STOP_GRACE_MS, 0);
  cli_pump(cli);
}

static void on_stop_event(cli_t *cli, const char *what) {
  if (cli->reason != CLI_REASON_STOPPED && cli->life == LIFE_RUNNING)
    nq_log(NQ_LOG_INFO, "%s: stopping (checkpoint, finishing reports, then bye)", what);
  cli_stop(cli);
}

static void on_signal(uv_signal_t *s, int signum) {
  on_stop_event(s->data, signum == SIGINT ? "SIGINT" : "SIGTERM");
}

/* Windows: a console's close, Ctrl-Break, log-off and shutdown (nq/sys.h), as SIGTERM. */
static void on_stop_async(uv_async_t *a) { on_stop_event(a->data, "stop event"); }
static void stop_from_system(void *arg) { uv_async_send(arg); }

/* ---- setup ---- */

void cli_config_default(cli_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  int n = nq_sys_ncpu();
  cfg->threads = n > 1024 ? 1024 : n;
  cfg->gpu = "auto";
  cfg->backoff_min = 0.5;
  cfg->backoff_max = 60;
  cfg->prefetch = 1;
  cfg->checkpoint_seconds = 60;
  cfg->handle_signals = 1;
  cfg->priority = NQ_PRIO_IDLE;
  cfg->cpu_limit = 100;
  cfg->summary_seconds = 60;
  cfg->unreachable_warn_seconds = 180;
  static char state[4096];
  nq_sys_state_dir("nq-client", state, sizeof state); /* $HOME/.nq-client, %LOCALAPPDATA%\\nq-client */
  cfg->state = state;
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
    if (cfg->enrol || cfg->join)
      nq_log(NQ_LOG_INFO, "already %s: using the token in %s", cfg->join ? "joined" : "enrolled",
             cli->j.dir);
    return 0;
  }
  if (rc != NQ_ENOTFOUND) {
    nq_log(NQ_LOG_ERROR, "cannot read %s/token: %s", cli->j.dir, nq_strerror(rc));
    return rc;
  }
  if (cfg->join) {
    char path[4096];
    cli->joining = 1;
    if (nq_path_join(path, sizeof path, cli->j.dir, TICKET_FILE) == 0 &&
        nq_file_read_line(path, cli->ticket, sizeof cli->ticket) == 0)
      nq_log(NQ_LOG_INFO, "asking about the sign-up request whose ticket is in %s", path);
    else
      cli->ticket[0] = '\0';
    return 0;
  }
  if (!cfg->enrol) {
    nq_log(NQ_LOG_ERROR, "no token: give --token, or --enrol KEY once, or --join (state dir %s)",
           cli->j.dir);
    return NQ_EAUTH;
  }
  cli->enrolling = 1;
  return 0;
}

/* A checkpoint without its assigned/ entry (set aside as corrupt, say) still names its unit: the
 * assignment is rebuilt from it (its lease unknown) rather than its work thrown away. */
static void adopt_checkpoint(cli_t *cli, int64_t id) {
  nq_ckpt_t c;
  char err[NQ_CKPT_ERR_MAX] = "";
  int rc = cli_ckpt_get(&cli->j, id, &c, err, sizeof err);
  if (rc == 0 && c.subject.whole) rc = NQ_EINVAL, snprintf(err, sizeof err, "not a unit");
  if (rc != 0) {
    nq_log(NQ_LOG_WARN, "checkpoint of assignment %" PRId64 " refused (%s); set aside", id,
           err[0] ? err : nq_strerror(rc));
    cli_ckpt_set_aside(&cli->j, id);
    if (rc == 0) nq_ckpt_free(&c);
    return;
  }
  cli_assign_t a = {.id = id, .deadline = 0, .unconfirmed = 1, .on_disk = 1};
  nq_subject_str(&c.subject, a.unit, sizeof a.unit);
  nq_ckpt_free(&c);
  if (cli_assigned_put(&cli->j, &a) == 0 && queue_push(cli, &a) == 0)
    nq_log(NQ_LOG_INFO, "assignment %" PRId64 " (%s) rebuilt from its checkpoint", id, a.unit);
}

/* Assignments received by an earlier run and not finished go to the front of the queue, with
 * their checkpoints; checkpoints of finished units are removed. */
static void load_assigned(cli_t *cli) {
  cli_assign_t *v = NULL;
  int64_t *ids = NULL;
  size_t n = 0, nc = 0;
  if (cli_assigned_list(&cli->j, &v, &n, NULL) == 0) {
    for (size_t i = 0; i < n; i++) {
      if (cli_journal_has(&cli->j, v[i].id)) { /* finished, the removal did not happen */
        cli_assigned_remove(&cli->j, v[i].id);
        continue;
      }
      v[i].unconfirmed = 1;
      v[i].on_disk = 1;
      queue_push(cli, &v[i]);
    }
  }
  if (cli_ckpt_list(&cli->j, &ids, &nc) == 0) {
    for (size_t i = 0; i < nc; i++) {
      if (cli_journal_has(&cli->j, ids[i])) cli_ckpt_remove(&cli->j, ids[i]);
      else if (!queue_find(cli, ids[i])) adopt_checkpoint(cli, ids[i]);
    }
  }
  if (cli->qlen)
    nq_log(NQ_LOG_INFO, "resuming %zu assignment(s) from %s (%zu checkpoint(s))", cli->qlen,
           cli->j.dir, nc);
  free(v);
  free(ids);
}

static void cli_release_memory(cli_t *cli) {
  for (int i = 0; i < cli->ngpus; i++) nq_gpu_close(cli->gpus[i]);
  nq_throttle_free(cli->throttle);
  cli_journal_close(&cli->j);
  nq_tls_ctx_free(cli->tls);
  free(cli->queue);
  free(cli->sent);
  free(cli->held);
  free(cli);
}

/* The lanes: the CPU's (with --threads > 0), then one for each device, each with its worker
 * thread and its timers. A lane whose worker cannot start is not counted. */
static int start_lanes(cli_t *cli) {
  int cpu = cli->cfg->threads > 0, n = cpu + cli->ngpus;
  for (int i = 0; i < n; i++) {
    cli_lane_t *ln = &cli->lanes[i];
    ln->cli = cli;
    ln->index = i;
    int rc = i < cpu ? cli_worker_init(&ln->worker, cli->loop, cli->cfg->threads, NULL, 0,
                                       cli->throttle, on_worker_event, ln)
                     : cli_worker_init(&ln->worker, cli->loop, 0, &cli->gpus[i - cpu], 1,
                                       cli->throttle, on_worker_event, ln);
    if (rc) return rc;
    uv_timer_init(cli->loop, &ln->progress_timer);
    uv_timer_init(cli->loop, &ln->ckpt_timer);
    ln->progress_timer.data = ln->ckpt_timer.data = ln;
    cli->nlanes++;
  }
  return 0;
}

static int start(const cli_config_t *cfg, uv_loop_t *loop, cli_t **out);

/* SIGINT and SIGTERM are blocked while the client starts: between taking the state directory's
 * lock and the loop's signal handles lies the devices' probe (an OpenCL loader may take a second
 * on a busy machine), and a SIGTERM there used to kill the client outright (exit 143). Blocked,
 * it waits, and the handles take it as soon as they exist: the client stops cleanly. The threads
 * made meanwhile (solver, a device driver's) keep them blocked, so the signals always
 * reach the loop's thread. */
int cli_start(const cli_config_t *cfg, uv_loop_t *loop, cli_t **out) {
  sigset_t stop, old;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  if (cfg->handle_signals) pthread_sigmask(SIG_BLOCK, &stop, &old);
  int rc = start(cfg, loop, out);
  if (cfg->handle_signals) pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

static int start(const cli_config_t *cfg, uv_loop_t *loop, cli_t **out) {
  *out = NULL;
  cli_t *cli = calloc(1, sizeof *cli);
  if (!cli) return CLI_EXIT_FAIL;
  cli->cfg = cfg;
  cli->loop = loop;
  cli->rng = (unsigned)time(NULL) ^ ((unsigned)getpid() << 8);
  cli->progress_interval = 60;
  cli->max_outstanding = 16;
  cli->last_seconds = -1;
  int rc = nq_tls_ctx_client_new(cfg->ca, &cli->tls);
  if (rc) {
    /* The TLS layer has said why (missing, unreadable, not PEM, refused by OpenSSL). */
    nq_log(NQ_LOG_ERROR, "cannot load CA file %s: %s", cfg->ca ? cfg->ca : "(system)",
           rc == NQ_EINVAL ? "not a PEM certificate file" : nq_strerror(rc));
    free(cli);
    return CLI_EXIT_SETUP;
  }
  if (cli_journal_open(cfg->state, &cli->j) != 0 || pick_credentials(cli) != 0) {
    cli_release_memory(cli);
    return CLI_EXIT_SETUP;
  }
  news_load(cli);
  /* The devices first: each passes its self-test before it takes work, or is refused by name
   * (nq_gpu_open_spec logs it) and the CPU goes on without it. */
  char gerr[512];
  const char *gspec = cfg->gpu ? cfg->gpu : "auto";
  nq_gpu_opts_t gopts = {0};
  cli_fault_gpu(&gopts); /* nq-client-test's injected device faults; nothing in nq-client */
  if (nq_gpu_open_spec(gspec, &gopts, cli->gpus, CLI_GPUS_MAX, &cli->ngpus, gerr, sizeof gerr) != 0 ||
      (cfg->threads == 0 && cli->ngpus == 0)) {
    if (cli->ngpus == 0 && cfg->threads == 0)
      snprintf(gerr, sizeof gerr, "--threads 0 needs an OpenCL device that passes its self-test, "
               "and none did (--gpu %s; nq-solve --gpu-list shows the devices)", gspec);
    nq_log(NQ_LOG_ERROR, "%s", gerr);
    cli_release_memory(cli);
    return CLI_EXIT_SETUP;
  }
  /* From here on the handles exist: a failure ends the daemon through the normal release. */
  uv_timer_init(loop, &cli->retry_timer);
  uv_timer_init(loop, &cli->stop_timer);
  uv_timer_init(loop, &cli->status_timer);
  uv_timer_init(loop, &cli->lazy_timer);
  cli->retry_timer.data = cli->stop_timer.data = cli->status_timer.data = cli;
  cli->lazy_timer.data = cli;
  cli->journal_n = -1; /* unknown until the first welcome's listing */
  if (cfg->handle_signals) {
    uv_signal_init(loop, &cli->sigint);
    uv_signal_init(loop, &cli->sigterm);
    cli->sigint.data = cli->sigterm.data = cli;
    uv_signal_start(&cli->sigint, on_signal, SIGINT);
    uv_signal_start(&cli->sigterm, on_signal, SIGTERM);
    uv_async_init(loop, &cli->stop_async, on_stop_async);
    cli->stop_async.data = cli;
    /* The system waits this long for the checkpoint and the exit before it ends the process. */
    nq_sys_on_stop(stop_from_system, &cli->stop_async, STOP_GRACE_MS + STOP_JOIN_MS);
  }
  *out = cli;
  nq_throttle_cfg_t tc = {.priority = cfg->priority,
                          .cpu_limit = cfg->cpu_limit,
                          .pause_file = cfg->pause_file,
                          .pause_on_battery = cfg->pause_on_battery,
                          .power_dir = cfg->power_dir,
                          .pause_window = cfg->pause_window,
                          .pause_from = cfg->pause_from,
                          .pause_to = cfg->pause_to};
  if (nq_throttle_new(&tc, &cli->throttle) != 0 || start_lanes(cli) != 0) {
    nq_log(NQ_LOG_ERROR, "cannot start the solver thread");
    leave(cli, CLI_REASON_FAILURE);
    cli_finish(cli);
    return 0;
  }
  nq_log(NQ_LOG_INFO, "nq-client %s: server %s:%d, %d thread(s) (kernel %s) and %d GPU(s) at %s "
         "priority, CPU limit %d%%, state %s%s", NQ_VERSION_STRING, cfg->host, cfg->port,
         cfg->threads, nq_fast_kernel_in_use(), cli->ngpus,
         nq_priority_name(cfg->priority), cfg->cpu_limit, cfg->state,
         cfg->fault_lie ? ", FAULT INJECTION lie (test only)" : "");
  if (cli_fault_describe()) nq_log(NQ_LOG_WARN, "%s", cli_fault_describe());
  /* What an earlier run heard from the server stays known until this one hears it again. */
  cli_status_t prev;
  if (cli_status_read(cli->j.dir, &prev, NULL, 0) == 0) {
    memcpy(cli->st.client, prev.client, sizeof prev.client);
    memcpy(cli->st.shown_as, prev.shown_as, sizeof prev.shown_as);
    memcpy(cli->st.page, prev.page, sizeof prev.page);
    cli->st.has_credit = prev.has_credit;
    memcpy(cli->st.credit, prev.credit, sizeof prev.credit);
    cli->st.credit_at = prev.credit_at;
    cli->st.last_contact = prev.last_contact;
    memcpy(cli->st.last_outcome, prev.last_outcome, sizeof prev.last_outcome);
  }
  cli->summary_at = nq_now_mono();
  load_assigned(cli);
  start_next(cli); /* resumed units run while we connect */
  write_status(cli, 0);
  double sp = CLI_STATUS_SECONDS; /* a shorter summary interval is kept too */
  if (cfg->summary_seconds > 0 && cfg->summary_seconds < sp) sp = cfg->summary_seconds;
  uv_timer_start(&cli->status_timer, on_status_timer, (uint64_t)(sp * 1000),
                 (uint64_t)(sp * 1000));
  cli_connect(cli);
  return 0;
}

void cli_free(cli_t *cli) {
  if (!cli) return;
  assert(cli->state == CLI_STATE_DONE);
  cli_release_memory(cli);
}

int cli_run(const cli_config_t *cfg) {
  uv_loop_t loop;
  if (uv_loop_init(&loop) != 0) return CLI_EXIT_FAIL;
  cli_t *cli = NULL;
  int code = cli_start(cfg, &loop, &cli);
  if (cli) {
    uv_run(&loop, UV_RUN_DEFAULT);
    code = cli_reason_exit(cli_reason(cli));
    cli_free(cli);
  }
  if (uv_loop_close(&loop) != 0) nq_log(NQ_LOG_WARN, "loop closed with handles open");
  return code;
}
