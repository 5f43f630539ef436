/* nq-client: the lanes room (lanes.h): the solver workers, the units they run, their progress
 * and checkpoints, the queue they take units from and the assignments an earlier run left. It
 * calls the reporting room (a finished unit's result) and the context's verbs, nothing above. */
#include "lanes.h"
#include "fault.h"
#include "report.h"

#include "nq/checkpoint.h"
#include "nq/gpu.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/unit.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNIT_LINE_S 60 /* a unit that took longer gets its own INFO line */

static void lane_promote(cli_lane_t *ln);

/* ---- the lanes' queue ---- */

/* Take the lane's next unit back from its worker if it has not started: to the front of the
 * queue, or forgotten once the job is over. 1 if it was taken back. */
int cli_lane_unqueue(cli_lane_t *ln) {
  cli_t *cli = ln->cli;
  if (!ln->has_next || !cli_worker_unqueue(&ln->worker, ln->next.id)) return 0;
  ln->has_next = 0;
  if (cli->reason == CLI_REASON_JOB_DONE) { /* written at a disconnect, perhaps */
    if (ln->next.on_disk) cli_assigned_remove(&cli->j, ln->next.id);
    return 1;
  }
  cli_queue_push_front(cli, &ln->next); /* out of memory: the server re-sends it */
  return 1;
}

void cli_lanes_cancel(cli_t *cli) {
  for (int i = 0; i < cli->nlanes; i++) {
    cli_lane_unqueue(&cli->lanes[i]); /* first: once cur is done the worker would start it */
    cli_worker_cancel(&cli->lanes[i].worker, -1);
  }
}

/* The job is finished: what we hold will never be needed, here or in a later run. */
void cli_job_finished(cli_t *cli) {
  cli_leave(cli, CLI_REASON_JOB_DONE);
  for (size_t i = 0; i < cli->qlen; i++)
    if (cli->queue[i].on_disk) cli_assigned_remove(&cli->j, cli->queue[i].id);
  cli->qlen = 0;
  int64_t *ids = NULL;
  size_t n = 0;
  if (cli_ckpt_list(&cli->j, &ids, &n) == 0)
    for (size_t i = 0; i < n; i++)
      if (!cli_lane_of(cli, ids[i])) cli_ckpt_remove(&cli->j, ids[i]);
  free(ids);
  cli_lanes_cancel(cli);
}
/* ---- progress ---- */

/* progress {id, nodes, fraction, seconds} for the lane's running unit, now. */
void cli_lane_progress(cli_lane_t *ln) {
  cli_t *cli = ln->cli;
  if (cli->state != CLI_STATE_READY || !ln->running) return;
  nq_progress_t p = {.id = ln->cur.id, .has_nodes = 1, .nodes = ln->cur_nodes,
                     .has_fraction = 1, .fraction = ln->cur_fraction, .has_seconds = 1,
                     .seconds = ln->cur_seconds, .paused = nq_throttle_paused(cli->throttle)};
  if (cli_send(cli, nq_progress_pack(&p)) == 0) {
    ln->cur_nodes_sent = ln->cur_nodes;
    ln->cur_progressed = 1;
  }
}

static void on_progress_timer(uv_timer_t *t) {
  cli_lane_t *ln = t->data;
  /* The first progress of a unit goes out even without new nodes: it turns the lease sized for
   * the queue into a full one (or revives it if the unit waited in the queue past its deadline). */
  if (!ln->cur_progressed || ln->cur_nodes != ln->cur_nodes_sent) cli_lane_progress(ln);
}

void cli_lanes_pace(cli_t *cli, int interval_s) {
  uint64_t ms = (uint64_t)interval_s * 1000;
  for (int i = 0; i < cli->nlanes; i++)
    if (cli->lanes[i].running)
      uv_timer_start(&cli->lanes[i].progress_timer, on_progress_timer, ms, ms);
}

/* ---- checkpoints ---- */

/* Save what is finished of the lane's running unit, if anything new is
 * (STATE/checkpoint/<id>.ckpt). */
void cli_lane_checkpoint(cli_lane_t *ln) {
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
  cli_lane_checkpoint(t->data);
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
  if (!cli_lazy(cli, r.seconds) || cli_held_add(cli, &r) != 0) cli_report_journal(cli, &r);
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
  if (cli->state == CLI_STATE_READY) cli_report_send(cli, &r);
}

void cli_lanes_poll(cli_lane_t *ln) {
  cli_worker_t *w = &ln->worker;
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
      cli_queue_push_front(cli, &a); /* room: it was just taken */
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
      cli_leave(cli, CLI_REASON_FAILURE);
      return;
    }
    lane_began(ln, &a, resumed, resume != NULL);
  }
}

/* Every free lane takes the next queued unit (the devices' lanes first: they are the fastest). */
void cli_lanes_start(cli_t *cli) {
  /* Every idle lane gets a unit before any lane gets one ahead: a next unit is bound to its
   * lane, and a lane holding two while another holds none would starve it. */
  for (int i = cli->nlanes - 1; i >= 0; i--) start_lane(&cli->lanes[i], 0);
  for (int i = cli->nlanes - 1; i >= 0; i--) start_lane(&cli->lanes[i], 1);
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
  if (cli_assigned_put(&cli->j, &a) == 0 && cli_queue_push(cli, &a) == 0)
    nq_log(NQ_LOG_INFO, "assignment %" PRId64 " (%s) rebuilt from its checkpoint", id, a.unit);
}

/* Assignments received by an earlier run and not finished go to the front of the queue, with
 * their checkpoints; checkpoints of finished units are removed. */
void cli_lanes_load(cli_t *cli) {
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
      cli_queue_push(cli, &v[i]);
    }
  }
  if (cli_ckpt_list(&cli->j, &ids, &nc) == 0) {
    for (size_t i = 0; i < nc; i++) {
      if (cli_journal_has(&cli->j, ids[i])) cli_ckpt_remove(&cli->j, ids[i]);
      else if (!cli_queue_find(cli, ids[i])) adopt_checkpoint(cli, ids[i]);
    }
  }
  if (cli->qlen)
    nq_log(NQ_LOG_INFO, "resuming %zu assignment(s) from %s (%zu checkpoint(s))", cli->qlen,
           cli->j.dir, nc);
  free(v);
  free(ids);
}
/* The lanes: the CPU's (with --threads > 0), then one for each device, each with its worker
 * thread and its timers. A lane whose worker cannot start is not counted. */
int cli_lanes_init(cli_t *cli, void (*on_event)(cli_worker_t *w)) {
  int cpu = cli->cfg->threads > 0, n = cpu + cli->ngpus;
  for (int i = 0; i < n; i++) {
    cli_lane_t *ln = &cli->lanes[i];
    ln->cli = cli;
    ln->index = i;
    int rc = i < cpu ? cli_worker_init(&ln->worker, cli->loop, cli->cfg->threads, NULL, 0,
                                       cli->throttle, on_event, ln)
                     : cli_worker_init(&ln->worker, cli->loop, 0, &cli->gpus[i - cpu], 1,
                                       cli->throttle, on_event, ln);
    if (rc) return rc;
    uv_timer_init(cli->loop, &ln->progress_timer);
    uv_timer_init(cli->loop, &ln->ckpt_timer);
    ln->progress_timer.data = ln->ckpt_timer.data = ln;
    cli->nlanes++;
  }
  return 0;
}
