/* nq-server: a task run now and then on the libuv thread pool, off the loop: the scheduled backups
 * (srv_backup.c) and the stalled units' count (srv_stall.c). A one-shot timer starts a run; the
 * run's work is on a worker thread, which touches no loop handle and no part of srv_t (its inputs
 * and outputs are in the owner's struct: docs/style.md, "Threads"); its after-callback on the loop thread takes
 * the outcome and arms the next run. This is the life cycle they share, in one place: a run never
 * starts while one is queued or running or after the stop; the stop cancels a queued run (one
 * that runs finishes) and closes the timer; the owner is freed once both are over.
 */
#ifndef SRV_TASK_H
#define SRV_TASK_H

#include <uv.h>

typedef struct srv_task_s srv_task_t;

/* What the owner does at each step, with its own struct in t->data. */
typedef struct srv_task_ops_s {
  /* Loop thread, when the timer fires (never while a run is queued or running, nor after the
   * stop): set the run's inputs and return 0 to queue it, or non-zero to skip this turn (the
   * owner then arms the next itself, or not). */
  int (*begin)(srv_task_t *t);
  /* Worker thread: the run. */
  void (*work)(srv_task_t *t);
  /* Loop thread, after the run (not after one cancelled by the stop): take its outputs and arm
   * the next run unless t->stopped. */
  void (*done)(srv_task_t *t);
  /* Loop thread: the run could not be queued (uv_queue_work's error r): log it, arm again. */
  void (*queue_failed)(srv_task_t *t, int r);
  /* Free the owner's struct (the task is part of it): called once, when nothing is left. */
  void (*free)(srv_task_t *t);
} srv_task_ops_t;

struct srv_task_s {
  const srv_task_ops_t *ops;
  void *data; /* the owner's struct */
  uv_timer_t timer;
  uv_work_t work;
  int timer_open; /* the timer is not closed yet */
  int stopped;    /* srv_task_stop ran: nothing more starts */
  int running;    /* a run is queued or on a worker thread */
};

/* Set up t (a part of the owner's struct data, which ops->free releases) on loop: its timer is
 * open, nothing armed. */
void srv_task_init(srv_task_t *t, uv_loop_t *loop, const srv_task_ops_t *ops, void *data);
/* Arm the next run delay_ms from now (0: at the next loop turn). */
void srv_task_arm(srv_task_t *t, uint64_t delay_ms);
/* Stop: nothing more starts; a queued run is cancelled, one that runs finishes (ops->done sees
 * t->stopped); the owner is freed (ops->free) once the timer is closed and no run is left. */
void srv_task_stop(srv_task_t *t);

#endif
