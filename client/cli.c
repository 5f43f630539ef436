/* nq-client: the daemon's conductor (see cli.h, ctx.h for its rooms, docs/client.md).
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
 *
 * Every event of the loop enters here -- the connection's callbacks, the solver workers', the
 * timers, the signals -- is handed to its room (session.c, lanes.c, report.c), and then the
 * client's own scheduler (cli_pump) decides what comes next: start units, ask for work, leave.
 */
#include "cli.h"
#include "ctx.h"
#include "fault.h"
#include "lanes.h"
#include "report.h"
#include "session.h"

#include "nq/sys.h"
#include "nq/addr.h"
#include "nq/conn.h"
#include "nq/gpu.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "nq/solver.h"
#include "nq/tls.h"

#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STOP_GRACE_MS 1500 /* most time a stop waits for the solver and the acks: exit in 2 s */
#define STOP_JOIN_MS 250   /* then the solver thread gets this long before it is left alone */
#define SHORT_UNIT_S 0.25 /* units faster than this get a deeper prefetch */
#define SHORT_PREFETCH 6

static void cli_pump(cli_t *cli);
static void cli_finish(cli_t *cli);

cli_state_t cli_state(const cli_t *cli) {
  return cli->state;
}

long cli_units_resumed(const cli_t *cli) {
  return cli->units_resumed;
}

cli_reason_t cli_reason(const cli_t *cli) {
  return cli->reason;
}

/* ---- the loop's events, each handed to its room, then the scheduler ---- */

static void on_open(nq_conn_t *c) {
  cli_session_open(nq_conn_data(c), c);
}

static void on_error(nq_conn_t *c, int status) {
  cli_session_error(nq_conn_data(c), c, status);
}

static void on_close(nq_conn_t *c) {
  cli_t *cli = nq_conn_data(c);
  if (cli->conn == c) cli->conn = NULL;
  if (cli_session_closed(cli)) cli_finish(cli);
}

static void on_frame(nq_conn_t *c, json_t *msg) {
  cli_t *cli = nq_conn_data(c);
  if (cli_session_frame(cli, msg)) cli_pump(cli);
}

static void on_worker_event(cli_worker_t *w) {
  cli_lane_t *ln = w->data;
  cli_lanes_poll(ln);
  if (ln->cli->life == LIFE_RUNNING) cli_pump(ln->cli);
}

static void cli_connect(cli_t *cli) {
  nq_conn_opts_t o = {.on_open = on_open, .on_frame = on_frame, .on_error = on_error,
                      .on_close = on_close, .data = cli, .tag = "cli"};
  cli_set_state(cli, CLI_STATE_CONNECTING);
  nq_log(NQ_LOG_DEBUG, "connecting to %s:%d", cli->cfg->host, cli->cfg->port);
  int rc = nq_conn_connect(cli->loop, cli->cfg->host, cli->cfg->port, cli->tls, cli->cfg->host,
                           &o, &cli->conn);
  if (rc) {
    cli->conn = NULL;
    cli_set_state(cli, CLI_STATE_IDLE);
    nq_log(cli_session_out_of_reach(cli, nq_strerror(rc)), "cannot connect to %s:%d: %s",
           cli->cfg->host, cli->cfg->port, nq_strerror(rc));
    cli_session_reconnect(cli);
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
      cli_lane_progress(run);
    } else {
      nq_progress_t p = {.id = id, .paused = paused};
      if (cli_send(cli, nq_progress_pack(&p)) != 0) return;
    }
  }
  cli->paused_told = paused;
  cli->paused_told_at = now;
  if (!paused) cli_pump(cli);
}

static void on_status_timer(uv_timer_t *t) {
  cli_t *cli = t->data;
  tell_pause(cli);
  cli_report_status(cli, 0);
  cli_report_summary(cli);
}
/* ---- the scheduler of this client: what to do next ---- */

/* Draining (a reason that finishes the reports): leave once every result of ours has an answer,
 * or at once without a connection when stopped (the journal keeps the rest). After a reached
 * limit or the end of the job we wait for the server to take what the journal holds,
 * reconnecting if need be. */
static void drain(cli_t *cli) {
  if (cli_lanes_running(cli)) return;
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
    cli_leave_why(cli, CLI_REASON_LIMIT, "%ld unit(s) solved: the --once or --max-units limit",
                  cli->units_done);
  }
  cli_lanes_start(cli);
  if (cli->reason != CLI_REASON_NONE) {
    drain(cli);
    return;
  }
  if (cli->state != CLI_STATE_READY || cli->getwork_inflight || cli->nowork_wait) return;
  /* Paused: no new units (what it holds the server keeps for it: tell_pause). */
  if (nq_throttle_paused(cli->throttle)) return;
  long held = (long)cli->qlen + cli_lanes_running(cli);
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
  if (cli_send(cli, nq_get_work_pack(&g)) == 0) cli->getwork_inflight = 1;
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
  cli_report_persist(cli); /* normally done at the disconnect already */
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
  cli_report_summary(cli);
  for (int i = 0; i < cli->nlanes; i++) cli->lanes[i].running = 0;
  cli_set_state(cli, CLI_STATE_DONE);
  cli_report_status(cli, 1);
}

/* End the session for cli->reason: bye if we are in one, close, then release. Re-entered from
 * on_close once the connection is gone. */
static void cli_finish(cli_t *cli) {
  if (cli->life == LIFE_RUNNING) {
    cli->life = LIFE_CLOSING;
    cli_lanes_cancel(cli);
    uv_timer_stop(&cli->retry_timer);
    for (int i = 0; i < cli->nlanes; i++) uv_timer_stop(&cli->lanes[i].progress_timer);
  }
  if (cli->conn) {
    if (cli->state == CLI_STATE_READY) cli_send(cli, nq_bye_pack());
    nq_conn_close(cli->conn, NULL, NULL);
    return; /* on_close comes back here */
  }
  cli_release(cli);
}

static void on_stop_timer(uv_timer_t *t) {
  cli_t *cli = t->data;
  if (cli_lanes_running(cli))
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
  cli_leave(cli, CLI_REASON_STOPPED);
  /* Checkpoint first: whatever happens next (a slow task, a SIGKILL), this much is kept. Then
   * the server hears how far the unit got, and the solver stops taking tasks. */
  for (int i = 0; i < cli->nlanes; i++) {
    cli_lane_checkpoint(&cli->lanes[i]);
    cli_lane_progress(&cli->lanes[i]);
    cli_lane_unqueue(&cli->lanes[i]);
    cli_worker_cancel(&cli->lanes[i].worker, -1);
    uv_timer_stop(&cli->lanes[i].ckpt_timer);
  }
  cli_report_persist(cli); /* what only memory held (lazy records) is on disk before any SIGKILL */
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
  if (cli_journal_open(cfg->state, &cli->j) != 0 || cli_session_credentials(cli) != 0) {
    cli_release_memory(cli);
    return CLI_EXIT_SETUP;
  }
  cli_session_news_load(cli);
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
  cli->retry_cb = on_retry_timer;
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
  if (nq_throttle_new(&tc, &cli->throttle) != 0 || cli_lanes_init(cli, on_worker_event) != 0) {
    nq_log(NQ_LOG_ERROR, "cannot start the solver thread");
    cli_leave(cli, CLI_REASON_FAILURE);
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
  cli_lanes_load(cli);
  cli_lanes_start(cli); /* resumed units run while we connect */
  cli_report_status(cli, 0);
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
