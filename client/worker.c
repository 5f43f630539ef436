/* nq-client: the solver thread (see worker.h). */
#include "worker.h"

#include "nq/log.h"
#include "nq/nq.h"
#include "nq/solver_pool.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The thread's side. Everything below `lock` is guarded by it. */
struct cli_worker_shared_s {
  uv_async_t *async;   /* the loop's handle: used only while !quit, under the lock */
  int threads;
  nq_gpu_t *gpus[CLI_GPUS_MAX]; /* borrowed */
  int ngpus;
  nq_throttle_t *throttle; /* borrowed */
  volatile int cancel; /* handed to nq_solve_opts_t.cancel */
  pthread_mutex_t lock;
  pthread_cond_t cond;   /* a job, or quit */
  pthread_cond_t exited_cond;
  pthread_cond_t notify_cond; /* something for the loop: the notifier thread tells it */
  int notify_pending;
  int quit, exited, orphan;
  int has_job, running;
  int64_t job_id;
  nq_unit_t job_unit;
  nq_ckpt_t *job_resume;
  char job_kernel[NQ_KERNEL_NAME_MAX]; /* "" the fast kernel in use; else the one named */
  nq_run_t *run;         /* the running unit's run, while it runs */
  int progress_new;
  cli_worker_event_t progress;
  int done_new;
  cli_worker_event_t done;
};

static void on_async(uv_async_t *a) {
  cli_worker_t *w = a->data;
  if (w->on_event) w->on_event(w);
}

/* Tell the loop; the lock is held. The solver threads run at idle priority: one preempted in
 * the middle of uv_async_send leaves the loop thread spinning in uv__async_spin until it runs
 * again (69% of a client's time on a busy machine, docs/performance.md). So they only wake the
 * notifier thread, which runs at the loop's priority and sends. */
static void notify_locked(cli_worker_shared_t *sh) {
  sh->notify_pending = 1;
  pthread_cond_signal(&sh->notify_cond);
}

/* The notifier: one uv_async_send per wake-up, never after quit (the handle may be closed). */
static void *notifier_main(void *arg) {
  cli_worker_shared_t *sh = arg;
  pthread_mutex_lock(&sh->lock);
  for (;;) {
    while (!sh->quit && !sh->notify_pending) pthread_cond_wait(&sh->notify_cond, &sh->lock);
    if (sh->quit) break;
    sh->notify_pending = 0;
    uv_async_send(sh->async);
  }
  pthread_mutex_unlock(&sh->lock);
  return NULL;
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
  notify_locked(sh);
}

/* Called by the solver pool's threads a few times a second (no lock of the run held). */
static void on_progress(uint64_t nodes, void *arg) {
  cli_worker_shared_t *sh = arg;
  (void)nodes;
  pthread_mutex_lock(&sh->lock);
  if (sh->run) post_progress_locked(sh, sh->job_id);
  pthread_mutex_unlock(&sh->lock);
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
  if (resume) {
    nq_ckpt_free(resume);
    free(resume);
  }
  if (rc) {
    done->status = rc;
    nq_run_free(run);
    return;
  }
  pthread_mutex_lock(&sh->lock);
  sh->run = run;
  post_progress_locked(sh, id); /* where a resumed unit starts from */
  pthread_mutex_unlock(&sh->lock);
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
  if (sh->done_new && sh->done.has_ckpt) nq_ckpt_free(&sh->done.ckpt);
  pthread_cond_destroy(&sh->exited_cond);
  pthread_cond_destroy(&sh->notify_cond);
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
    if (sh->done_new && sh->done.has_ckpt) nq_ckpt_free(&sh->done.ckpt); /* never polled */
    sh->done = done;
    sh->done_new = 1;
    sh->progress_new = 0;
    notify_locked(sh);
  }
  sh->exited = 1;
  int orphan = sh->orphan;
  pthread_cond_broadcast(&sh->exited_cond);
  pthread_mutex_unlock(&sh->lock);
  if (orphan) shared_free(sh); /* the loop has let go of it */
  return NULL;
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
  sh->async = &w->async;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  int ok = pthread_mutex_init(&sh->lock, NULL) == 0;
  ok = ok && pthread_cond_init(&sh->cond, NULL) == 0;
  ok = ok && pthread_cond_init(&sh->exited_cond, &ca) == 0;
  ok = ok && pthread_cond_init(&sh->notify_cond, NULL) == 0;
  pthread_condattr_destroy(&ca);
  if (!ok) {
    free(sh); /* glibc's mutexes and condition variables hold no resources of their own */
    return NQ_ENOMEM;
  }
  if (uv_async_init(loop, &w->async, on_async) != 0) {
    shared_free(sh);
    return NQ_EIO;
  }
  w->async.data = w;
  /* The notifier first (created here, on the loop's thread: it keeps the loop's priority). */
  if (pthread_create(&w->notifier, NULL, notifier_main, sh) != 0) {
    uv_close((uv_handle_t *)&w->async, NULL);
    shared_free(sh);
    return NQ_EIO;
  }
  if (pthread_create(&w->thread, NULL, worker_main, sh) != 0) {
    pthread_mutex_lock(&sh->lock);
    sh->quit = 1;
    pthread_cond_signal(&sh->notify_cond);
    pthread_mutex_unlock(&sh->lock);
    pthread_join(w->notifier, NULL);
    uv_close((uv_handle_t *)&w->async, NULL);
    shared_free(sh);
    return NQ_EIO;
  }
  w->sh = sh;
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
  int busy = sh->has_job || sh->running || sh->done_new;
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

/* The solver pool polls the flag through a volatile pointer; the store is atomic on our side. */
void cli_worker_cancel(cli_worker_t *w) {
  if (w->started) __atomic_store_n(&w->sh->cancel, 1, __ATOMIC_RELAXED);
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
  int busy = w->sh->has_job || w->sh->running || w->sh->done_new;
  pthread_mutex_unlock(&w->sh->lock);
  return busy;
}

int cli_worker_poll(cli_worker_t *w, cli_worker_event_t *ev) {
  memset(ev, 0, sizeof *ev);
  if (!w->started) return CLI_WEV_NONE;
  cli_worker_shared_t *sh = w->sh;
  pthread_mutex_lock(&sh->lock);
  if (sh->done_new) {
    *ev = sh->done; /* the checkpoint, if any, is the poller's now */
    sh->done_new = 0;
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
  pthread_cond_signal(&sh->notify_cond);
  while (!sh->exited && pthread_cond_timedwait(&sh->exited_cond, &sh->lock, &until) == 0) {
  }
  int joined = sh->exited;
  if (!joined) sh->orphan = 1; /* the thread frees sh when its task is done */
  pthread_mutex_unlock(&sh->lock);
  pthread_join(w->notifier, NULL); /* it saw quit: gone at once, before sh may be freed */
  if (joined) {
    pthread_join(w->thread, NULL);
    shared_free(sh);
  } else {
    pthread_detach(w->thread);
  }
  w->sh = NULL;
  w->started = 0;
  uv_close((uv_handle_t *)&w->async, NULL);
  return joined;
}
