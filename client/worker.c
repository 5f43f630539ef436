/* nq-client: the solver thread (see worker.h). */
#include "worker.h"

#include "nq/nq.h"

#include <stdlib.h>
#include <string.h>

static void on_async(uv_async_t *a) {
  cli_worker_t *w = a->data;
  if (w->on_event) w->on_event(w);
}

/* Called by the solver pool's threads a few times a second. */
static void on_progress(uint64_t nodes, void *arg) {
  cli_worker_t *w = arg;
  pthread_mutex_lock(&w->lock);
  w->progress_nodes = nodes;
  w->progress_new = 1;
  pthread_mutex_unlock(&w->lock);
  uv_async_send(&w->async);
}

static void *worker_main(void *arg) {
  cli_worker_t *w = arg;
  pthread_mutex_lock(&w->lock);
  for (;;) {
    while (!w->quit && !w->has_job) pthread_cond_wait(&w->cond, &w->lock);
    if (w->quit) break;
    nq_unit_t u = w->job_unit;
    int64_t id = w->job_id;
    w->has_job = 0;
    w->running = 1;
    pthread_mutex_unlock(&w->lock);

    nq_solve_opts_t opts = {w->threads, on_progress, w, &w->cancel};
    nq_counts_t c;
    memset(&c, 0, sizeof c);
    double t0 = nq_now_mono();
    int rc = nq_solve_unit(&u, &opts, &c); /* splits even at one thread: cancel works mid-unit */
    /* A solve that stopped because we asked it to is cancelled, whatever code the pool uses. */
    if (rc != 0 && __atomic_load_n(&w->cancel, __ATOMIC_RELAXED)) rc = NQ_ECANCELED;
    double secs = nq_now_mono() - t0;

    pthread_mutex_lock(&w->lock);
    w->running = 0;
    memset(&w->done, 0, sizeof w->done);
    w->done.kind = CLI_WEV_DONE;
    w->done.id = id;
    w->done.status = rc;
    w->done.counts = c;
    w->done.seconds = secs;
    w->done_new = 1;
    w->progress_new = 0;
    pthread_mutex_unlock(&w->lock);
    uv_async_send(&w->async);
    pthread_mutex_lock(&w->lock);
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

int cli_worker_init(cli_worker_t *w, uv_loop_t *loop, int threads,
                    void (*on_event)(cli_worker_t *w), void *data) {
  memset(w, 0, sizeof *w);
  w->threads = threads < 1 ? 1 : threads;
  w->on_event = on_event;
  w->data = data;
  if (pthread_mutex_init(&w->lock, NULL) != 0) return NQ_ENOMEM;
  if (pthread_cond_init(&w->cond, NULL) != 0) {
    pthread_mutex_destroy(&w->lock);
    return NQ_ENOMEM;
  }
  if (uv_async_init(loop, &w->async, on_async) != 0) {
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    return NQ_EIO;
  }
  w->async.data = w;
  if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
    uv_close((uv_handle_t *)&w->async, NULL);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    return NQ_EIO;
  }
  w->started = 1;
  return 0;
}

int cli_worker_submit(cli_worker_t *w, int64_t id, const nq_unit_t *u) {
  if (!w->started) return NQ_EINVAL;
  pthread_mutex_lock(&w->lock);
  int busy = w->has_job || w->running || w->done_new;
  if (!busy) {
    __atomic_store_n(&w->cancel, 0, __ATOMIC_RELAXED);
    w->job_id = id;
    w->job_unit = *u;
    w->has_job = 1;
    w->progress_nodes = 0;
    w->progress_new = 0;
    pthread_cond_signal(&w->cond);
  }
  pthread_mutex_unlock(&w->lock);
  return busy ? NQ_EBUSY : 0;
}

/* The solver pool polls the flag through a volatile pointer; the store is atomic on our side. */
void cli_worker_cancel(cli_worker_t *w) {
  if (w->started) __atomic_store_n(&w->cancel, 1, __ATOMIC_RELAXED);
}

int cli_worker_busy(cli_worker_t *w) {
  if (!w->started) return 0;
  pthread_mutex_lock(&w->lock);
  int busy = w->has_job || w->running || w->done_new;
  pthread_mutex_unlock(&w->lock);
  return busy;
}

int cli_worker_poll(cli_worker_t *w, cli_worker_event_t *ev) {
  memset(ev, 0, sizeof *ev);
  if (!w->started) return CLI_WEV_NONE;
  pthread_mutex_lock(&w->lock);
  if (w->done_new) {
    *ev = w->done;
    w->done_new = 0;
  } else if (w->progress_new && w->running) {
    ev->kind = CLI_WEV_PROGRESS;
    ev->id = w->job_id;
    ev->counts.nodes = w->progress_nodes;
    w->progress_new = 0;
  }
  pthread_mutex_unlock(&w->lock);
  return ev->kind;
}

void cli_worker_stop(cli_worker_t *w) {
  if (!w->started) return;
  pthread_mutex_lock(&w->lock);
  w->quit = 1;
  __atomic_store_n(&w->cancel, 1, __ATOMIC_RELAXED);
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL);
  pthread_cond_destroy(&w->cond);
  pthread_mutex_destroy(&w->lock);
  w->started = 0;
  uv_close((uv_handle_t *)&w->async, NULL);
}
