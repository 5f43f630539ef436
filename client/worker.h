/* nq-client: the solver thread.
 *
 * One pthread runs one unit at a time with nq_solve_unit (a pool of `threads` threads, the worker
 * being one of them). It never touches loop handles: what it has to say (a finished unit, the
 * nodes counted so far) goes into fields guarded by a mutex, followed by uv_async_send on the
 * async handle the worker owns; the loop thread then calls cli_worker_poll from `on_event`.
 *
 * Life cycle, loop thread only: cli_worker_init -> cli_worker_submit / cli_worker_cancel /
 * cli_worker_poll ... -> cli_worker_stop (cancels, joins the thread, closes the async handle;
 * the handle is closed once the loop runs its close callbacks).
 */
#ifndef CLI_WORKER_H
#define CLI_WORKER_H

#include <pthread.h>
#include <stdint.h>
#include <uv.h>

#include "nq/solver.h"
#include "nq/unit.h"

typedef struct cli_worker_s cli_worker_t;

/* What cli_worker_poll hands back. */
typedef struct cli_worker_event_s {
  int kind;     /* CLI_WEV_NONE, CLI_WEV_PROGRESS or CLI_WEV_DONE */
  int64_t id;   /* assignment id of the unit concerned */
  int status;   /* DONE: 0, NQ_ECANCELED if cancelled, other negative codes if the solve failed */
  nq_counts_t counts;   /* DONE with status 0: the result; PROGRESS: counts.nodes so far */
  double seconds;       /* DONE: wall-clock seconds of the solve */
} cli_worker_event_t;

enum { CLI_WEV_NONE = 0, CLI_WEV_PROGRESS, CLI_WEV_DONE };

struct cli_worker_s {
  uv_async_t async;   /* owned; on_event runs on the loop thread */
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int threads;
  volatile int cancel; /* handed to nq_solve_opts_t.cancel */
  /* Guarded by lock. */
  int quit;
  int has_job, running;
  int64_t job_id;
  nq_unit_t job_unit;
  int progress_new;
  uint64_t progress_nodes;
  int done_new;
  cli_worker_event_t done;
  /* Loop thread only. */
  int started;
  void (*on_event)(cli_worker_t *w);
  void *data;
};

/* Start the thread and the async handle on `loop`. on_event(w) runs on the loop thread whenever
 * the worker posted something; it should call cli_worker_poll until it returns CLI_WEV_NONE.
 * Returns 0, NQ_EIO or NQ_ENOMEM. */
int cli_worker_init(cli_worker_t *w, uv_loop_t *loop, int threads,
                    void (*on_event)(cli_worker_t *w), void *data);
/* Hand the worker one unit. NQ_EBUSY if it is busy (one unit at a time), NQ_EINVAL if it was
 * never started. */
int cli_worker_submit(cli_worker_t *w, int64_t id, const nq_unit_t *u);
/* Ask the running solve (if any) to stop; its DONE event comes with status NQ_ECANCELED. */
void cli_worker_cancel(cli_worker_t *w);
/* 1 while a unit is submitted and its DONE event has not been polled yet. */
int cli_worker_busy(cli_worker_t *w);
/* Take the next event: a DONE first, then the latest PROGRESS. Returns ev->kind. */
int cli_worker_poll(cli_worker_t *w, cli_worker_event_t *ev);
/* Cancel, join and close the async handle (uv_close; the loop must run once more). */
void cli_worker_stop(cli_worker_t *w);

#endif
