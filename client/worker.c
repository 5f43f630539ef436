/* nq-client: the solver thread (see worker.h). */
#include "worker.h"

#include "nq/log.h"
#include "nq/nq.h"
#include "nq/solver_pool.h"
#include "nq/wake.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The thread's side. Everything below `lock` is guarded by it. */
struct cli_worker_shared_s {
  nq_wake_t wake;      /* written by the thread to wake the loop, read by the loop */
  int threads;
  nq_gpu_t *gpus[CLI_GPUS_MAX]; /* borrowed */
  int ngpus;
  nq_throttle_t *throttle; /* borrowed */
  volatile int cancel; /* handed to nq_solve_opts_t.cancel */
  pthread_mutex_t lock;
  pthread_cond_t cond;   /* a job, or quit */
  pthread_cond_t exited_cond;
  int notify_pending; /* the loop has been woken and has not looked yet: no second wake */
  int quit, exited, orphan;
  int has_job, running;
  int64_t job_id;
  nq_unit_t job_unit;
  nq_ckpt_t *job_resume;
  char job_kernel[NQ_KERNEL_NAME_MAX]; /* "" the fast kernel in use; else the one named */
  int has_next;          /* the unit to start as soon as the job is done (no checkpoint) */
  int64_t next_id;
  nq_unit_t next_unit;
  char next_kernel[NQ_KERNEL_NAME_MAX];
  nq_run_t *run;         /* the running unit's run, while it runs */
  int progress_new;
  cli_worker_event_t progress;
  int ndone;             /* DONE events not polled yet, oldest first (at most one a unit held) */
  cli_worker_event_t done[2];
};

/* Tell the loop; the lock is held. Returns 1 when the caller must wake it (wake_loop) once the
 * lock is released: one wake until the loop has looked (cli_worker_poll clears the flag). */
static int notify_locked(cli_worker_shared_t *sh) {
  if (sh->notify_pending || sh->quit) return 0;
  sh->notify_pending = 1;
  return 1;
}

/* Wake the loop: one write to the fd its poll handle watches, without any lock held. A plain
 * write has no busy mark for the loop to spin on (uv_async_send has: a solver thread at idle
 * priority preempted inside it once made the loop spin for 69% of a client's time,
 * docs/performance.md), so the idle thread writes it itself and no thread sits in between. The
 * fd outlives every write: cli_worker_stop closes it only after the thread is joined. */
static void wake_loop(cli_worker_shared_t *sh) { nq_wake_send(&sh->wake); }

/* Units the loop has handed over and not yet polled the DONE of; the lock is held. */
static int held_locked(const cli_worker_shared_t *sh) {
  return sh->has_job + sh->running + sh->has_next + sh->ndone;
}

/* Where the run stands, as a PROGRESS event; the lock is held. */
static void post_progress_locked(cli_worker_shared_t *sh, int64_t id) {
  nq_run_status_t st;
  nq_run_status(sh->run, &st);
  memset(&sh->progress, 0, sizeof sh->progress);
  sh->progress.kind = CLI_WEV_PROGRESS;
  sh->progress.id = id;
  sh->progress.counts.nodes = st.nodes;
  sh->progress.fraction = nq_run_fraction(sh->run, 0);
  sh->progress.seconds = st.seconds;
  sh->progress_new = 1;
}

/* Called by the solver pool's threads a few times a second (no lock of the run held). */
static void on_progress(uint64_t nodes, void *arg) {
  cli_worker_shared_t *sh = arg;
  (void)nodes;
  int wake = 0;
  pthread_mutex_lock(&sh->lock);
  if (sh->run) {
    post_progress_locked(sh, sh->job_id);
    wake = notify_locked(sh);
  }
  pthread_mutex_unlock(&sh->lock);
  if (wake) wake_loop(sh);
}

/* Set up the run of one unit; a refused checkpoint is reported and the unit starts from zero. */
static int make_run(int64_t id, const nq_unit_t *u, nq_ckpt_t *resume, nq_run_t **run) {
  nq_subject_t s;
  char why[NQ_CKPT_ERR_MAX], text[NQ_UNIT_TEXT_MAX];
  int rc = nq_subject_unit(&s, u);
  if (rc == 0) rc = nq_run_new(&s, resume, run, why, sizeof why);
  nq_subject_str(&s, text, sizeof text);
  if (rc == 0 && resume && why[0]) {
    nq_log(NQ_LOG_WARN, "checkpoint of assignment %lld refused (%s): unit %s restarts from zero",
           (long long)id, why, text);
  } else if (rc == 0 && resume) {
    nq_run_status_t st;
    nq_run_status(*run, &st);
    nq_log(NQ_LOG_INFO, "unit %s (id %lld) resumed from its checkpoint: %u of %u tasks done, "
           "%.1f s spent before", text, (long long)id, st.ndone, st.ntasks, st.seconds);
  }
  return rc;
}

/* Solve one unit; the lock is not held. Fills the DONE event (except kind/id). */
static void solve_one(cli_worker_shared_t *sh, int64_t id, const nq_unit_t *u, nq_ckpt_t *resume,
                      const char *kernel, cli_worker_event_t *done) {
  nq_run_t *run = NULL;
  int rc = make_run(id, u, resume, &run);
  if (rc == 0 && kernel[0]) rc = nq_run_set_kernel(run, kernel);
  int from_ckpt = resume != NULL;
  if (resume) {
    nq_ckpt_free(resume);
    free(resume);
  }
  if (rc) {
    done->status = rc;
    nq_run_free(run);
    return;
  }
  int wake = 0;
  pthread_mutex_lock(&sh->lock);
  sh->run = run;
  if (from_ckpt) { /* where a resumed unit starts from; a fresh one says nothing yet */
    post_progress_locked(sh, id);
    wake = notify_locked(sh);
  }
  pthread_mutex_unlock(&sh->lock);
  if (wake) wake_loop(sh);
  nq_solve_opts_t opts = {sh->threads, on_progress, sh, &sh->cancel, sh->throttle, sh->gpus,
                          sh->ngpus};
  uint64_t before[CLI_GPUS_MAX];
  for (int i = 0; i < sh->ngpus; i++) {
    double secs;
    nq_gpu_rate(sh->gpus[i], &before[i], &secs);
  }
  rc = nq_run_solve(run, &opts, &done->counts);
  /* A solve that stopped because we asked it to is cancelled, whatever code the pool uses. */
  if (rc != 0 && __atomic_load_n(&sh->cancel, __ATOMIC_RELAXED)) rc = NQ_ECANCELED;
  if (rc == NQ_ECANCELED) done->has_ckpt = nq_run_snapshot(run, &done->ckpt) == 0;
  nq_run_status_t st;
  nq_run_status(run, &st);
  done->status = rc;
  done->seconds = st.seconds;
  done->resumed = st.resumed;
  done->ntasks = st.ntasks;
  done->fraction = nq_run_fraction(run, 0);
  if (kernel[0]) /* the named kernel solved every task (nq_run_set_kernel) */
    snprintf(done->backend, sizeof done->backend, "%s", kernel);
  else
    nq_backend_label(sh->gpus, sh->ngpus, before, (st.engines & NQ_ENGINE_CPU) != 0,
                     done->backend, sizeof done->backend);
  pthread_mutex_lock(&sh->lock);
  sh->run = NULL; /* no snapshot can reach it any more */
  pthread_mutex_unlock(&sh->lock);
  nq_run_free(run);
}

static void shared_free(cli_worker_shared_t *sh) {
  if (sh->job_resume) {
    nq_ckpt_free(sh->job_resume);
    free(sh->job_resume);
  }
  for (int i = 0; i < sh->ndone; i++)
    if (sh->done[i].has_ckpt) nq_ckpt_free(&sh->done[i].ckpt);
  nq_wake_close(&sh->wake);
  pthread_cond_destroy(&sh->exited_cond);
  pthread_cond_destroy(&sh->cond);
  pthread_mutex_destroy(&sh->lock);
  free(sh);
}

static void *worker_main(void *arg) {
  cli_worker_shared_t *sh = arg;
  pthread_mutex_lock(&sh->lock);
  for (;;) {
    while (!sh->quit && !sh->has_job) pthread_cond_wait(&sh->cond, &sh->lock);
    if (sh->quit) break;
    nq_unit_t u = sh->job_unit;
    int64_t id = sh->job_id;
    nq_ckpt_t *resume = sh->job_resume;
    char kernel[NQ_KERNEL_NAME_MAX];
    memcpy(kernel, sh->job_kernel, sizeof kernel);
    sh->job_resume = NULL;
    sh->has_job = 0;
    sh->running = 1;
    pthread_mutex_unlock(&sh->lock);

    cli_worker_event_t done;
    memset(&done, 0, sizeof done);
    solve_one(sh, id, &u, resume, kernel, &done);
    done.kind = CLI_WEV_DONE;
    done.id = id;

    pthread_mutex_lock(&sh->lock);
    sh->running = 0;
    sh->done[sh->ndone++] = done; /* room: a unit is submitted only while fewer than 2 are held */
    sh->progress_new = 0;
    if (sh->has_next && !sh->quit) { /* the next unit starts at once: no wait for the loop */
      __atomic_store_n(&sh->cancel, 0, __ATOMIC_RELAXED);
      sh->job_id = sh->next_id;
      sh->job_unit = sh->next_unit;
      sh->job_resume = NULL;
      memcpy(sh->job_kernel, sh->next_kernel, sizeof sh->job_kernel);
      sh->has_job = 1;
      sh->has_next = 0;
    }
    if (notify_locked(sh)) {
      pthread_mutex_unlock(&sh->lock);
      wake_loop(sh);
      pthread_mutex_lock(&sh->lock);
    }
  }
  sh->exited = 1;
  int orphan = sh->orphan;
  pthread_cond_broadcast(&sh->exited_cond);
  pthread_mutex_unlock(&sh->lock);
  if (orphan) shared_free(sh); /* the loop has let go of it */
  return NULL;
}

/* The loop's side of a wake: drain the fd, let the thread wake us again, then look. */
static void on_wake(uv_poll_t *p, int status, int events) {
  cli_worker_t *w = p->data;
  (void)status;
  (void)events;
  cli_worker_shared_t *sh = w->sh;
  if (!sh) return;
  nq_wake_drain(&sh->wake);
  pthread_mutex_lock(&sh->lock);
  sh->notify_pending = 0;
  pthread_mutex_unlock(&sh->lock);
  if (w->on_event) w->on_event(w);
}

int cli_worker_init(cli_worker_t *w, uv_loop_t *loop, int threads, nq_gpu_t *const *gpus,
                    int ngpus, nq_throttle_t *throttle, void (*on_event)(cli_worker_t *w),
                    void *data) {
  memset(w, 0, sizeof *w);
  w->on_event = on_event;
  w->data = data;
  cli_worker_shared_t *sh = calloc(1, sizeof *sh);
  if (!sh) return NQ_ENOMEM;
  sh->ngpus = ngpus < 0 ? 0 : ngpus > CLI_GPUS_MAX ? CLI_GPUS_MAX : ngpus;
  for (int i = 0; i < sh->ngpus; i++) sh->gpus[i] = gpus[i];
  sh->threads = threads < 1 && !sh->ngpus ? 1 : threads < 0 ? 0 : threads;
  sh->throttle = throttle;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  int ok = pthread_mutex_init(&sh->lock, NULL) == 0;
  ok = ok && pthread_cond_init(&sh->cond, NULL) == 0;
  ok = ok && pthread_cond_init(&sh->exited_cond, &ca) == 0;
  pthread_condattr_destroy(&ca);
  if (!ok) {
    free(sh); /* glibc's mutexes and condition variables hold no resources of their own */
    return NQ_ENOMEM;
  }
  if (nq_wake_open(&sh->wake) != 0 || nq_wake_poll_init(loop, &w->wake, &sh->wake) != 0) {
    shared_free(sh);
    return NQ_EIO;
  }
  w->wake.data = w;
  w->sh = sh;
  if (uv_poll_start(&w->wake, UV_READABLE, on_wake) != 0 ||
      pthread_create(&w->thread, NULL, worker_main, sh) != 0) {
    w->sh = NULL;
    uv_close((uv_handle_t *)&w->wake, NULL); /* the fd stays open until shared_free */
    shared_free(sh);
    return NQ_EIO;
  }
  w->started = 1;
  return 0;
}

int cli_worker_submit(cli_worker_t *w, int64_t id, const nq_unit_t *u, nq_ckpt_t *resume) {
  return cli_worker_submit_kernel(w, id, u, resume, NULL);
}

int cli_worker_submit_kernel(cli_worker_t *w, int64_t id, const nq_unit_t *u, nq_ckpt_t *resume,
                             const char *kernel) {
  if (!w->started) return NQ_EINVAL;
  cli_worker_shared_t *sh = w->sh;
  pthread_mutex_lock(&sh->lock);
  int busy = held_locked(sh) > 0;
  if (!busy) {
    __atomic_store_n(&sh->cancel, 0, __ATOMIC_RELAXED);
    sh->job_id = id;
    sh->job_unit = *u;
    sh->job_resume = resume;
    snprintf(sh->job_kernel, sizeof sh->job_kernel, "%s", kernel ? kernel : "");
    sh->has_job = 1;
    sh->progress_new = 0;
    pthread_cond_signal(&sh->cond);
  }
  pthread_mutex_unlock(&sh->lock);
  return busy ? NQ_EBUSY : 0;
}

int cli_worker_submit_next(cli_worker_t *w, int64_t id, const nq_unit_t *u, const char *kernel) {
  if (!w->started) return NQ_EINVAL;
  cli_worker_shared_t *sh = w->sh;
  pthread_mutex_lock(&sh->lock);
  int ok = held_locked(sh) == 1 && (sh->has_job || sh->running) && !sh->quit;
  if (ok) {
    sh->next_id = id;
    sh->next_unit = *u;
    snprintf(sh->next_kernel, sizeof sh->next_kernel, "%s", kernel ? kernel : "");
    sh->has_next = 1;
  }
  pthread_mutex_unlock(&sh->lock);
  return ok ? 0 : NQ_EBUSY;
}

int cli_worker_unqueue(cli_worker_t *w, int64_t id) {
  if (!w->started) return 0;
  cli_worker_shared_t *sh = w->sh;
  pthread_mutex_lock(&sh->lock);
  int took = sh->has_next && sh->next_id == id;
  if (took) sh->has_next = 0;
  pthread_mutex_unlock(&sh->lock);
  return took;
}

/* The solver pool polls the flag through a volatile pointer; the store is atomic on our side.
 * Under the lock: the unit that is (or is about to be) solved is the one named. */
void cli_worker_cancel(cli_worker_t *w, int64_t id) {
  if (!w->started) return;
  cli_worker_shared_t *sh = w->sh;
  pthread_mutex_lock(&sh->lock);
  if (id < 0 || ((sh->has_job || sh->running) && sh->job_id == id))
    __atomic_store_n(&sh->cancel, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&sh->lock);
}

int cli_worker_snapshot(cli_worker_t *w, int64_t id, nq_ckpt_t *out) {
  if (!w->started) return NQ_ENOTFOUND;
  cli_worker_shared_t *sh = w->sh;
  pthread_mutex_lock(&sh->lock);
  int rc = sh->run && sh->running && sh->job_id == id ? nq_run_snapshot(sh->run, out)
                                                     : NQ_ENOTFOUND;
  pthread_mutex_unlock(&sh->lock);
  return rc;
}

int cli_worker_busy(cli_worker_t *w) {
  if (!w->started) return 0;
  pthread_mutex_lock(&w->sh->lock);
  int held = held_locked(w->sh);
  pthread_mutex_unlock(&w->sh->lock);
  return held;
}

int cli_worker_poll(cli_worker_t *w, cli_worker_event_t *ev) {
  memset(ev, 0, sizeof *ev);
  if (!w->started) return CLI_WEV_NONE;
  cli_worker_shared_t *sh = w->sh;
  pthread_mutex_lock(&sh->lock);
  if (sh->ndone > 0) {
    *ev = sh->done[0]; /* the checkpoint, if any, is the poller's now */
    if (--sh->ndone) sh->done[0] = sh->done[1];
  } else if (sh->progress_new && sh->running) {
    *ev = sh->progress;
    sh->progress_new = 0;
  }
  pthread_mutex_unlock(&sh->lock);
  return ev->kind;
}

int cli_worker_stop(cli_worker_t *w, int wait_ms) {
  if (!w->started) return 1;
  cli_worker_shared_t *sh = w->sh;
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += wait_ms / 1000;
  until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&sh->lock);
  sh->quit = 1; /* from here on no thread touches the handle */
  __atomic_store_n(&sh->cancel, 1, __ATOMIC_RELAXED);
  pthread_cond_signal(&sh->cond);
  while (!sh->exited && pthread_cond_timedwait(&sh->exited_cond, &sh->lock, &until) == 0) {
  }
  int joined = sh->exited;
  if (!joined) sh->orphan = 1; /* the thread frees sh when its task is done */
  pthread_mutex_unlock(&sh->lock);
  /* The poll handle stops watching the fd now (uv_close takes it out of the loop's epoll set at
   * once); an orphan thread may still write the fd: it closes it itself when it frees sh. */
  uv_close((uv_handle_t *)&w->wake, NULL);
  if (joined) {
    pthread_join(w->thread, NULL);
    shared_free(sh);
  } else {
    pthread_detach(w->thread);
  }
  w->sh = NULL;
  w->started = 0;
  return joined;
}
