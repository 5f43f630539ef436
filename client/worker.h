/* nq-client: the solver thread.
 *
 * One pthread runs one unit at a time as a run of the solver pool (nq/solver_pool.h: the unit's
 * deterministic cut, a pool of `threads` threads, the worker being one of them), from zero or from
 * a checkpoint. It never touches loop handles: what it has to say (a finished or stopped unit, how
 * far the running one is) goes into a state guarded by a mutex, and the thread then wakes the
 * loop with one write to an eventfd (a pipe elsewhere) that a poll handle of the loop watches --
 * at most one write until the loop has looked, and never uv_async_send, whose busy mark a solver
 * thread at idle priority, preempted inside it, would leave the loop spinning on; the loop
 * thread then calls cli_worker_poll from `on_event`. The loop thread takes a checkpoint of the
 * running unit whenever it wants (cli_worker_snapshot): the tasks finished so far, without
 * stopping anything.
 *
 * That shared state lives on the heap, apart from the cli_worker_t the loop owns, so that a stop
 * never has to wait for a long task: cli_worker_stop waits a bounded time for the thread and
 * otherwise leaves it to finish its task alone (it frees the shared state itself, never touches
 * the handle again, and the process is about to exit anyway).
 *
 * Life cycle, loop thread only: cli_worker_init -> cli_worker_submit / cli_worker_cancel /
 * cli_worker_snapshot / cli_worker_poll ... -> cli_worker_stop (the handle is closed once the loop
 * runs its close callbacks).
 */
#ifndef CLI_WORKER_H
#define CLI_WORKER_H

#include <pthread.h>
#include <stdint.h>
#include <uv.h>

#include "nq/checkpoint.h"
#include "nq/gpu.h"
#include "nq/solver.h"
#include "nq/throttle.h"
#include "nq/unit.h"

#define CLI_GPUS_MAX 16        /* devices one client uses */
#define CLI_BACKEND_MAX 129    /* a result's backend and its terminator (1..128 characters) */

typedef struct cli_worker_s cli_worker_t;
typedef struct cli_worker_shared_s cli_worker_shared_t; /* worker.c: the thread's side */

/* What cli_worker_poll hands back. */
typedef struct cli_worker_event_s {
  int kind;     /* CLI_WEV_NONE, CLI_WEV_PROGRESS or CLI_WEV_DONE */
  int64_t id;   /* assignment id of the unit concerned */
  int status;   /* DONE: 0, NQ_ECANCELED if stopped, other negative codes if the solve failed */
  nq_counts_t counts;   /* DONE with status 0: the result; PROGRESS: counts.nodes so far */
  double fraction;      /* the share of the unit done (PROGRESS, DONE) */
  double seconds;       /* solve time of the unit so far, every run of a resumed unit together */
  uint32_t resumed;     /* DONE: tasks that were finished in the checkpoint it resumed from */
  uint32_t ntasks;      /* DONE: tasks of its cut */
  char backend[CLI_BACKEND_MAX]; /* DONE with status 0: what solved it ("avx512",
                                      "opencl:NAME", several joined by '+') */
  int has_ckpt;         /* DONE with NQ_ECANCELED: ckpt holds what was finished (poller frees) */
  nq_ckpt_t ckpt;
} cli_worker_event_t;

enum { CLI_WEV_NONE = 0, CLI_WEV_PROGRESS, CLI_WEV_DONE };

struct cli_worker_s {
  uv_poll_t wake;           /* owned: watches the fd the thread writes; on_event runs on the loop */
  pthread_t thread;
  cli_worker_shared_t *sh;  /* shared with the thread (worker.c) */
  int started;
  void (*on_event)(cli_worker_t *w);
  void *data;
};

/* Start the thread and the poll handle of its wake fd on `loop`. Each unit is solved by `threads` CPU threads
 * (0: none) and the ngpus devices of gpus (borrowed, like throttle), nq_run_solve's pool. The
 * solves run under `throttle` (may be NULL;
 * borrowed: it must outlive the thread, which a stop that leaves it running lets go on using).
 * on_event(w) runs on the loop thread whenever
 * the worker posted something; it should call cli_worker_poll until it returns CLI_WEV_NONE.
 * Returns 0, NQ_EIO or NQ_ENOMEM. */
int cli_worker_init(cli_worker_t *w, uv_loop_t *loop, int threads, nq_gpu_t *const *gpus,
                    int ngpus, nq_throttle_t *throttle, void (*on_event)(cli_worker_t *w),
                    void *data);
/* Hand the worker one unit, to resume from `resume` when it is not NULL (the worker takes it
 * over, and frees it, whether it can use it or not: a checkpoint that is not this unit's or whose
 * cut this solver does not make is refused with a log line and the unit starts from zero).
 * NQ_EBUSY if it is busy (one unit at a time; resume is then still the caller's), NQ_EINVAL if it
 * was never started. */
int cli_worker_submit(cli_worker_t *w, int64_t id, const nq_unit_t *u, nq_ckpt_t *resume);
/* The same with the kernel the assignment names (nq_run_set_kernel: CPU threads only, the
 * devices sit it out; the result's backend is then that kernel's name); NULL or "": the fast
 * kernel in use. A kernel this machine cannot run fails the unit with NQ_ENODEV. */
int cli_worker_submit_kernel(cli_worker_t *w, int64_t id, const nq_unit_t *u, nq_ckpt_t *resume,
                             const char *kernel);
/* The unit to solve as soon as the one held is done, so the thread goes on without waiting for
 * the loop (units of a millisecond): accepted only while exactly one unit is held (its
 * DONE not polled yet) and with no checkpoint; NQ_EBUSY otherwise. Its DONE follows the held
 * one's; the loop learns it started when it polls that DONE. */
int cli_worker_submit_next(cli_worker_t *w, int64_t id, const nq_unit_t *u, const char *kernel);
/* Take back the next unit `id` if it has not started: 1 (it never will), 0 (it has, or there is
 * none: its DONE comes as usual). */
int cli_worker_unqueue(cli_worker_t *w, int64_t id);
/* Ask the solve of unit `id` (-1: whatever runs) to stop taking tasks, if that is the unit the
 * thread holds; its DONE event comes with status NQ_ECANCELED and a checkpoint of what it
 * finished. A next unit is not affected (cli_worker_unqueue). */
void cli_worker_cancel(cli_worker_t *w, int64_t id);
/* A checkpoint of unit `id` as it stands (caller frees): 0, NQ_ENOTFOUND when that unit is not
 * the one running (or its run is not set up yet), NQ_ENOMEM. */
int cli_worker_snapshot(cli_worker_t *w, int64_t id, nq_ckpt_t *out);
/* The units submitted whose DONE event has not been polled yet (0, 1 or 2). */
int cli_worker_busy(cli_worker_t *w);
/* Take the next event: a DONE first, then the latest PROGRESS. Returns ev->kind. */
int cli_worker_poll(cli_worker_t *w, cli_worker_event_t *ev);
/* Stop: cancel, wait up to wait_ms for the thread, close the poll handle (uv_close; the loop must
 * run once more). Returns 1 when the thread was joined, 0 when it was still in a task and was left
 * to finish it alone (it then frees what it shares and exits). */
int cli_worker_stop(cli_worker_t *w, int wait_ms);

#endif
