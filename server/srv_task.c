/* nq-server: a task run now and then on the thread pool (see srv_task.h). */
#include "srv_task.h"

static void free_if_idle(srv_task_t *t) {
  if (!t->timer_open && !t->running) t->ops->free(t);
}

static void on_timer_closed(uv_handle_t *h) {
  srv_task_t *t = h->data;
  t->timer_open = 0;
  free_if_idle(t);
}

static void on_work(uv_work_t *w) {
  srv_task_t *t = w->data;
  t->ops->work(t);
}

static void on_done(uv_work_t *w, int status) {
  srv_task_t *t = w->data;
  t->running = 0;
  if (status != UV_ECANCELED) t->ops->done(t);
  if (status == UV_ECANCELED || t->stopped) free_if_idle(t);
}

static void on_timer(uv_timer_t *h) {
  srv_task_t *t = h->data;
  if (t->running || t->stopped || t->ops->begin(t) != 0) return;
  t->work.data = t;
  int r = uv_queue_work(h->loop, &t->work, on_work, on_done);
  if (r != 0) {
    t->ops->queue_failed(t, r);
    return;
  }
  t->running = 1;
}

void srv_task_init(srv_task_t *t, uv_loop_t *loop, const srv_task_ops_t *ops, void *data) {
  t->ops = ops;
  t->data = data;
  t->stopped = t->running = 0;
  uv_timer_init(loop, &t->timer);
  t->timer.data = t;
  t->timer_open = 1;
}

void srv_task_arm(srv_task_t *t, uint64_t delay_ms) {
  uv_timer_start(&t->timer, on_timer, delay_ms, 0);
}

void srv_task_stop(srv_task_t *t) {
  t->stopped = 1;
  if (t->running) uv_cancel((uv_req_t *)&t->work);
  uv_close((uv_handle_t *)&t->timer, on_timer_closed);
}
