/* nq-client: the reporting room (report.h): the results sent and not answered yet, the results
 * held in memory only (lazy records, LAZY_S in ctx.h), the journal, and what the volunteer is told
 * (the status file, the INFO summary). It calls only the context's verbs (ctx.c) and the
 * journal. */
#include "report.h"

#include "nq/log.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/sys.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- results sent on this connection, not answered yet ---- */

int64_t *cli_sent_find(cli_t *cli, int64_t id) {
  for (size_t i = 0; i < cli->nsent; i++)
    if (cli->sent[i] == id) return &cli->sent[i];
  return NULL;
}

static int sent_add(cli_t *cli, int64_t id) {
  if (cli_sent_find(cli, id)) return 0;
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
  int64_t *p = cli_sent_find(cli, id);
  if (!p) return 0;
  *p = cli->sent[--cli->nsent];
  return 1;
}
/* ---- sending ---- */

int cli_report_send(cli_t *cli, const nq_result_t *r) {
  int rc = cli_send(cli, nq_result_pack(r));
  if (rc == 0) rc = sent_add(cli, r->id);
  return rc;
}

/* ---- lazy records (LAZY_S) ---- */

/* Whether a unit that solves in `seconds` leaves its files out: only while connected. */
int cli_lazy(const cli_t *cli, double seconds) {
  return cli->state == CLI_STATE_READY && seconds >= 0 && seconds < LAZY_S;
}

cli_held_t *cli_held_find(cli_t *cli, int64_t id) {
  for (size_t i = 0; i < cli->nheld; i++)
    if (cli->held[i].r.id == id) return &cli->held[i];
  return NULL;
}

static void on_lazy_timer(uv_timer_t *t);

int cli_held_add(cli_t *cli, const nq_result_t *r) {
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
  cli_held_t *h = cli_held_find(cli, id);
  if (!h) return 0;
  memmove(h, h + 1, (size_t)(cli->held + cli->nheld - (h + 1)) * sizeof *h);
  cli->nheld--;
  return 1;
}

void cli_report_journal(cli_t *cli, const nq_result_t *r) {
  if (cli_journal_put(&cli->j, r) != 0)
    nq_log(NQ_LOG_ERROR, "journal write failed for id %" PRId64 "; sending anyway", r->id);
  else if (cli->journal_n >= 0)
    cli->journal_n++;
}

/* Write the held results at least `age` ms old (0: all) to the journal. */
static void held_flush(cli_t *cli, uint64_t age) {
  uint64_t now = uv_now(cli->loop);
  size_t k = 0;
  while (k < cli->nheld && now - cli->held[k].at >= age)
    cli_report_journal(cli, &cli->held[k++].r);
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
void cli_report_persist(cli_t *cli) {
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
void cli_report_send_journal(cli_t *cli) {
  nq_result_t *v = NULL;
  size_t n = 0, bad = 0;
  if (cli_journal_list(&cli->j, &v, &n, &bad) != 0) return;
  cli->journal_n = (long)n;
  if (n) nq_log(NQ_LOG_INFO, "reporting %zu journalled result(s)", n);
  for (size_t i = 0; i < n && cli->state == CLI_STATE_READY; i++) cli_report_send(cli, &v[i]);
  free(v);
}

/* The server answered result `id` (ack or refusal): the journal entry has done its job. */
void cli_report_answered(cli_t *cli, int64_t id) {
  sent_take(cli, id);
  if (held_take(cli, id)) return; /* never written */
  int rc = cli_journal_remove(&cli->j, id);
  if (rc && rc != NQ_ENOTFOUND)
    nq_log(NQ_LOG_WARN, "cannot remove journal entry %" PRId64 ": %s", id, nq_strerror(rc));
  if (rc == 0 && cli->journal_n > 0) cli->journal_n--;
  cli_ckpt_remove(&cli->j, id); /* normally gone when the result was journalled */
}

/* ---- what the volunteer is told: the status file and the summary ---- */

static void fill_status(cli_t *cli, int stopped) {
  cli_status_t *s = &cli->st;
  const cli_config_t *cfg = cli->cfg;
  s->pid = (int64_t)getpid();
  s->updated = (int64_t)time(NULL);
  s->stopped = stopped;
  /* Why it left (`nq-client status`): the reason's name, and its words. */
  snprintf(s->exit_reason, sizeof s->exit_reason, "%s",
           stopped ? cli_reason_name(cli->reason) : "");
  snprintf(s->exit_why, sizeof s->exit_why, "%s",
           !stopped ? "" : cli->exit_why[0] ? cli->exit_why : cli_reason_text(cli->reason));
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
void cli_report_status(cli_t *cli, int stopped) {
  fill_status(cli, stopped);
  int rc = cli_status_write(cli->j.dir, &cli->st);
  if (rc && !cli->status_warned)
    nq_log(NQ_LOG_WARN, "cannot write %s/%s: %s", cli->j.dir, CLI_STATUS_FILE, nq_strerror(rc));
  cli->status_warned |= rc != 0;
}

/* At INFO, every summary_seconds: what was solved since the last summary (the units' own lines
 * are at DEBUG). Nothing solved, nothing said. */
void cli_report_summary(cli_t *cli) {
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
