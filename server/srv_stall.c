/* nq-server: stalled units counted off the loop (see srv_stall.h). The worker thread touches no
 * loop handle and no part of srv_t: its inputs and outputs are in the struct (docs/style.md, "Threads"). */
#include "srv_stall.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_api.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "srv.h"
#include "srv_task.h"
#include "store_stall.h"

#define SRV_STALL_FIRST_S 5 /* the first count, seconds after the start */

struct srv_stall_s {
  srv_t *srv;
  srv_task_t task; /* the timer, the run on the thread pool, their life cycle */
  /* The job: inputs set on the loop thread before it is queued, outputs set by the worker. */
  char db[SRV_DATADIR_PATH_MAX];
  int64_t job_id, now;
  srv_distinct_t distinct;
  srv_stalls_t out;
  double seconds;
  int rc;
  char err[300];
  int64_t logged, logged_keys; /* the stalled units and keys that can vote last logged */
};

/* Worker thread: a read-only connection of its own (WAL: the server's writes go on). */
static void stall_work(srv_task_t *task) {
  srv_stall_t *t = task->data;
  srv_store_t *ro = NULL;
  double t0 = nq_now_mono();
  t->rc = srv_store_open_ro(&ro, t->db, t->err, sizeof t->err);
  if (t->rc == 0) {
    t->rc = srv_stalls_compute(ro, t->job_id, t->distinct, t->now, SRV_STATUS_ACTIVE_WINDOW,
                               &t->out);
    if (t->rc) snprintf(t->err, sizeof t->err, "%s", srv_store_errmsg(ro));
  }
  srv_store_close(ro);
  t->seconds = nq_now_mono() - t0;
}

static void stall_arm(srv_stall_t *t, double delay_s) {
  if (delay_s < 0) delay_s = 0;
  srv_task_arm(&t->task, (uint64_t)(delay_s * 1000));
}

/* A change in what is stalled is a log line: a WARN when units stall (or their number, or the
 * keys that can vote, change), an INFO when none is left. */
static void stall_log(srv_stall_t *t) {
  const srv_stalls_t *x = &t->out;
  if (x->units == t->logged && (x->units == 0 || x->keys == t->logged_keys)) return;
  t->logged = x->units;
  t->logged_keys = x->keys;
  if (x->units == 0) {
    nq_log(NQ_LOG_INFO, "stalled units: none left");
    return;
  }
  char by[200] = "";
  size_t used = 0;
  for (int i = 0; i < SRV_STALL_NREASONS && used < sizeof by; i++) {
    if (x->by[i] == 0) continue;
    int n = snprintf(by + used, sizeof by - used, "%s%s %lld", used ? ", " : "",
                     srv_stall_reason_name((srv_stall_reason_t)i), (long long)x->by[i]);
    if (n < 0) break;
    used += (size_t)n;
  }
  nq_log(NQ_LOG_WARN, "%lld unit(s) stalled (%s): %lld %s(s) can vote, %lld online, quorum %d "
         "(nq-admin status says why)", (long long)x->units, by, (long long)x->keys,
         srv_distinct_name(x->distinct), (long long)x->keys_online, x->quorum);
}

static void stall_done(srv_task_t *task) {
  srv_stall_t *t = task->data;
  srv_t *s = t->srv;
  if (task->stopped) return; /* the result is dropped */
  if (t->rc == 0) {
    t->out.seconds = t->seconds;
    srv_stalls_put(s->store, &t->out);
    stall_log(t);
  } else {
    nq_log(NQ_LOG_WARN, "counting stalled units: %s", t->err);
  }
  /* A count that took long runs less often: at most a tenth of the time on the worker. */
  double next = SRV_STALL_CACHE_S;
  if (t->seconds * 10 > next) next = t->seconds * 10;
  stall_arm(t, next);
}

static int stall_begin(srv_task_t *task) {
  srv_stall_t *t = task->data;
  srv_t *s = t->srv;
  if (s->stopping) return -1;
  t->job_id = s->sched.job.id;
  t->distinct = s->sched.cfg.quorum_distinct;
  t->now = nq_now_wall();
  return 0;
}

static void stall_queue_failed(srv_task_t *task, int r) {
  nq_log(NQ_LOG_WARN, "counting stalled units: cannot start its thread: %s", uv_strerror(r));
  stall_arm(task->data, SRV_STALL_CACHE_S);
}

static void stall_free(srv_task_t *task) { free(task->data); }

static const srv_task_ops_t stall_ops = {stall_begin, stall_work, stall_done, stall_queue_failed,
                                         stall_free};

int srv_stall_start(srv_t *s, char *errbuf, size_t errlen) {
  srv_stall_t *t = calloc(1, sizeof *t);
  if (!t) {
    snprintf(errbuf, errlen, "out of memory");
    return NQ_ENOMEM;
  }
  t->srv = s;
  snprintf(t->db, sizeof t->db, "%s", s->dd.db);
  srv_task_init(&t->task, s->loop, &stall_ops, t);
  s->stall = t;
  srv_stalls_set_async(s->store, 1);
  if (srv_meta_set(s->store, SRV_META_QUORUM_DISTINCT,
                   srv_distinct_name(s->sched.cfg.quorum_distinct)) != 0)
    nq_log(NQ_LOG_WARN, "recording --quorum-distinct: %s", srv_store_errmsg(s->store));
  /* The first count a few seconds in: at the start no client has connected yet (nothing could
   * vote), and the clients' first requests need the machine more than the count does. */
  stall_arm(t, SRV_STALL_FIRST_S);
  return 0;
}

void srv_stall_stop(srv_t *s) {
  srv_stall_t *t = s->stall;
  if (!t) return;
  s->stall = NULL;
  srv_task_stop(&t->task);
}
