/* nq-server: the next job -- which job a server serves, and the switch to the next queued one
 * when a job is done (docs/operations.md, "The job queue"). Same loop, data directory,
 * port, certificates and owners: only the scheduler's job changes. */
#include "srv.h"
#include "store_queue.h"

#include <stdio.h>
#include <string.h>

#include "nq/log.h"
#include "nq/nq.h"

/* The progress line of a job's creation (millions of units take minutes): every 5 s, and the
 * last one. */
void srv_job_create_progress(const srv_job_progress_t *p, void *arg) {
  srv_t *s = arg;
  if (!p->done && p->seconds - s->create_logged < 5) return;
  s->create_logged = p->seconds;
  nq_log(NQ_LOG_INFO, "creating the job for N=%d: %llu units%s, about %.0f%% of the search "
         "tree, %.0f s", s->cfg.job.n, (unsigned long long)p->units, p->done ? " (all)" : "",
         100 * p->fraction, p->seconds);
}

srv_job_spec_t srv_job_spec_for(srv_t *s, const nq_jobopts_t *o) {
  srv_job_spec_t spec = {.job = *o, .progress = srv_job_create_progress, .progress_arg = s};
  spec.job.diverse_kernels = nq_jobopts_kernels_default(o->diverse_kernels, o->n);
  return spec;
}

/* The job a queue entry asks for, made (or resumed) now. A done job for the same N is archived
 * first, so that the entry is a new count (a re-count) rather than the old answer again; a
 * running one for N is resumed when its units match (srv_job_open refuses otherwise). */
static int open_entry(srv_t *s, const srv_queued_t *q, int64_t now, srv_job_t *job) {
  srv_job_t old;
  int rc = srv_job_find_n(s->store, q->opts.n, &old);
  if (rc == 0 && old.state == SRV_JOB_DONE) {
    if ((rc = srv_job_archive(s->store, old.id, 1, now)) != 0) return rc;
    nq_log(NQ_LOG_INFO, "job %lld (N=%d, done) archived: queued job %lld counts N=%d again",
           (long long)old.id, old.n, (long long)q->id, q->opts.n);
  } else if (rc != 0 && rc != NQ_ENOTFOUND) {
    return rc;
  }
  srv_job_spec_t spec = srv_job_spec_for(s, &q->opts);
  s->cfg.job.n = q->opts.n; /* the creation's progress lines name it */
  return srv_job_open(s->store, &spec, now, job);
}

/* The oldest queued entry's job, made now; entries that cannot start are marked failed (logged)
 * and the next one is tried. 0 and *job; NQ_ENOTFOUND when nothing is queued; NQ_EIO. */
static int open_next(srv_t *s, int64_t now, srv_job_t *job) {
  for (;;) {
    srv_queued_t q;
    int rc = srv_queue_next(s->store, &q);
    if (rc) return rc;
    if ((rc = open_entry(s, &q, now, job)) == 0) {
      if ((rc = srv_queue_mark(s->store, q.id, SRV_QUEUE_STARTED, job->id, NULL, now)) != 0)
        return rc;
      nq_log(NQ_LOG_INFO, "queued job %lld started: job %lld, N=%d, %lld units, quorum %d",
             (long long)q.id, (long long)job->id, job->n, (long long)job->units, job->quorum);
      return 0;
    }
    if (rc == NQ_EIO || rc == NQ_ENOMEM) return rc;
    char why[256];
    snprintf(why, sizeof why, "%s", srv_store_errmsg(s->store));
    nq_log(NQ_LOG_ERROR, "queued job %lld (N=%d) cannot start: %s; marked failed, the queue goes "
           "on", (long long)q.id, q.opts.n, why);
    if ((rc = srv_queue_mark(s->store, q.id, SRV_QUEUE_FAILED, 0, why, now)) != 0) return rc;
  }
}

static int owner_key_cb(const srv_owner_t *o, void *arg) {
  *(int *)arg += o->has_key && !o->banned;
  return 0;
}

/* A quorum by owner with no owner of its own can never verify a unit: everyone who enrols with
 * enrol.key is the owner `default`. Say so at start rather than let the job sit still. */
void srv_warn_one_owner(srv_t *s) {
  int keyed = 0;
  if (s->cfg.sched.quorum_distinct != SRV_DISTINCT_OWNER || s->sched.job.quorum < 2) return;
  if (srv_owner_list(s->store, owner_key_cb, &keyed) != 0 || keyed > 0) return;
  nq_log(NQ_LOG_WARN, "quorum %d by owner, but no owner has an enrolment key of its own: every "
         "client enrolled with enrol.key belongs to the owner `default`, so no unit can be "
         "verified. Add owners (nq-admin owner add NAME) or run with --quorum-distinct client",
         s->sched.job.quorum);
}

typedef struct newest_s {
  srv_job_t running, finished;
  int has_running, has_finished;
} newest_t;

static int newest_cb(const srv_job_t *j, void *arg) {
  newest_t *w = arg;
  if (j->state == SRV_JOB_RUNNING) w->running = *j, w->has_running = 1;
  else if (srv_job_is_done(j)) w->finished = *j, w->has_finished = 1;
  return 0;
}

int srv_next_running(srv_t *s, srv_job_t *job) {
  newest_t w;
  memset(&w, 0, sizeof w);
  int rc = srv_job_list(s->store, newest_cb, &w);
  if (rc == 0 && !w.has_running) rc = NQ_ENOTFOUND;
  if (rc == 0) *job = w.running;
  return rc;
}

int srv_next_pick(srv_t *s, int64_t now, srv_job_t *job, char *errbuf, size_t errlen) {
  newest_t w;
  memset(&w, 0, sizeof w);
  int rc = srv_job_list(s->store, newest_cb, &w);
  if (rc == 0 && (w.has_running || w.has_finished)) {
    /* A finished job is served as done: srv_init then starts the next queued one, if any. */
    *job = w.has_running ? w.running : w.finished;
    return 0;
  }
  if (rc == 0 && (rc = open_next(s, now, job)) == NQ_ENOTFOUND)
    return nq_errorf(errbuf, errlen, NQ_ERANGE, "no job in %s to serve: give --n N (or queue "
                     "one: nq-admin --data %s job add N)", s->dd.dir, s->dd.dir);
  if (rc) snprintf(errbuf, errlen, "picking the job: %s", srv_store_errmsg(s->store));
  return rc;
}

/* Every client session asks for work now (an unsolicited no_work none_pending with retry_after 1):
 * those waiting between jobs would otherwise only ask at their next poll. */
static void wake_clients(srv_t *s) {
  nq_no_work_t nw = {1, NQ_NOWORK_NONE_PENDING};
  json_t *m = nq_no_work_pack(&nw);
  if (!m) return;
  int n = 0;
  for (srv_conn_t *sc = s->conns; sc; sc = sc->next)
    if (sc->conn && sc->state == SRV_CONN_CLIENT && nq_conn_send(sc->conn, m) == 0) n++;
  json_decref(m);
  if (n) nq_log(NQ_LOG_INFO, "told %d connected client(s) to ask for the new job's work", n);
}

int srv_next_start(srv_t *s, int64_t now, int force) {
  if (s->stopping || (!s->job_done && !force) || srv_store_in_tx(s->store)) return 0;
  srv_job_t prev = s->sched.job, job;
  int rc = open_next(s, now, &job);
  if (rc == NQ_ENOTFOUND) {
    s->cfg.job.n = prev.n;
    return 0;
  }
  if (rc) {
    s->cfg.job.n = prev.n;
    nq_log(NQ_LOG_ERROR, "starting the next queued job: %s", srv_store_errmsg(s->store));
    return rc;
  }
  int64_t spot = 0, released = 0;
  if (srv_job_spot_pending(s->store, prev.id, &spot) == 0 && spot > 0)
    nq_log(NQ_LOG_INFO, "%lld spot check(s) of job %lld (N=%d) are no longer handed out",
           (long long)spot, (long long)prev.id, prev.n);
  if (srv_job_release_leases(s->store, &prev, &released) != 0)
    nq_log(NQ_LOG_ERROR, "releasing the leases of job %lld: %s", (long long)prev.id,
           srv_store_errmsg(s->store));
  else if (released > 0)
    nq_log(NQ_LOG_INFO, "%lld lease(s) on job %lld (N=%d) released", (long long)released,
           (long long)prev.id, prev.n);
  int64_t dropped = 0;
  int finished = 0;
  /* Only spot checks held it (every unit verified): it finishes with its totals, without them. */
  if (!s->job_done && srv_sched_set_aside(&s->sched, now, &dropped, &finished) != 0)
    nq_log(NQ_LOG_ERROR, "finishing job %lld: %s", (long long)prev.id, srv_store_errmsg(s->store));
  if (finished)
    nq_log(NQ_LOG_WARN, "job %lld (N=%d) finished at the operator's word (job next --force): every "
           "unit was verified; %lld spot check(s) dropped", (long long)prev.id, prev.n,
           (long long)dropped);
  else if (!s->job_done)
    nq_log(NQ_LOG_WARN, "job %lld (N=%d) set aside at the operator's word (job next --force): it "
           "stays running in the store with its verified counts and resumes when N=%d is queued "
           "again", (long long)prev.id, prev.n, prev.n);
  nq_log(NQ_LOG_INFO, "job %lld (N=%d) follows job %lld (N=%d) in the same data directory",
         (long long)job.id, job.n, (long long)prev.id, prev.n);
  s->sched.job = job;
  s->cfg.job.n = job.n;
  s->job_done = 0;
  srv_warn_one_owner(s);
  wake_clients(s);
  return srv_job_is_done(&job) ? SRV_NEXT_DONE : 1;
}
