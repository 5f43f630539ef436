/* nq-server: the running job's root, taken off the loop (srv_root.h). The worker thread touches
 * no loop handle and no part of srv_t: its inputs and outputs are in the struct (docs/style.md,
 * "Threads"). */
#include "srv_root.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/hash.h"
#include "nq/log.h"
#include "nq/merkle.h"
#include "nq/nq.h"
#include "srv.h"
#include "srv_task.h"
#include "store_export.h"
#include "web.h"

int srv_root_take(srv_store_t *st, const srv_job_t *job, int64_t now, srv_root_t *r) {
  double t0 = nq_now_mono();
  nq_merkle_t m;
  unsigned char root[32];
  int rc = srv_export_root(st, job, &m);
  if (rc == 0) rc = nq_merkle_root(&m, root);
  if (rc) return rc;
  nq_hex_encode(root, sizeof root, r->hex);
  r->have = 1;
  r->job = job->id;
  r->leaves = (int64_t)m.leaves;
  r->at = now;
  r->seconds = nq_now_mono() - t0;
  return 0;
}

struct srv_rooter_s {
  srv_t *srv;
  srv_task_t task; /* the timer, the run on the thread pool, their life cycle */
  /* The run: inputs set on the loop thread before it is queued, outputs set by the worker. */
  char db[SRV_DATADIR_PATH_MAX];
  srv_job_t job;
  int64_t now;
  srv_root_t out;
  int rc;
  char err[300];
};

/* Worker thread: a read-only connection of its own (WAL: the server's writes go on). */
static void root_work(srv_task_t *task) {
  srv_rooter_t *t = task->data;
  srv_store_t *ro = NULL;
  t->rc = srv_store_open_ro(&ro, t->db, t->err, sizeof t->err);
  if (t->rc == 0 && (t->rc = srv_root_take(ro, &t->job, t->now, &t->out)) != 0)
    snprintf(t->err, sizeof t->err, "%s", srv_store_errmsg(ro));
  srv_store_close(ro);
}

static void root_arm(srv_rooter_t *t, double delay_s) {
  srv_task_arm(&t->task, (uint64_t)(delay_s * 1000));
}

static void root_done(srv_task_t *task) {
  srv_rooter_t *t = task->data;
  if (task->stopped) return; /* the result is dropped */
  double next = SRV_ROOT_EVERY_S;
  if (t->rc == 0) {
    srv_t *s = t->srv;
    int changed = !s->root.have || s->root.job != t->out.job || strcmp(s->root.hex, t->out.hex);
    s->root = t->out;
    /* A new root is a sample of the history at once (one row a minute at most: a sample replaces
     * its minute's), so the history has each root change, not only those a minute apart. */
    if (changed && !srv_store_in_tx(s->store) && srv_web_sample(s, t->out.at) != 0)
      nq_log(NQ_LOG_WARN, "history sample: %s", srv_store_errmsg(s->store));
    nq_log(t->out.seconds >= 1 ? NQ_LOG_INFO : NQ_LOG_DEBUG, "root of job %lld: %lld results "
           "in %.0f ms", (long long)t->out.job, (long long)t->out.leaves, t->out.seconds * 1000);
    if (t->out.seconds * SRV_ROOT_COST_X > next) next = t->out.seconds * SRV_ROOT_COST_X;
  } else {
    nq_log(NQ_LOG_WARN, "taking the root of the results: %s", t->err);
  }
  root_arm(t, next);
}

static int root_begin(srv_task_t *task) {
  srv_rooter_t *t = task->data;
  srv_t *s = t->srv;
  if (s->stopping) return -1;
  t->job = s->sched.job;
  t->now = nq_now_wall();
  return 0;
}

static void root_queue_failed(srv_task_t *task, int r) {
  nq_log(NQ_LOG_WARN, "taking the root of the results: cannot start its thread: %s",
         uv_strerror(r));
  root_arm(task->data, SRV_ROOT_EVERY_S);
}

static void root_free(srv_task_t *task) { free(task->data); }

static const srv_task_ops_t root_ops = {root_begin, root_work, root_done, root_queue_failed,
                                        root_free};

int srv_root_start(srv_t *s, char *errbuf, size_t errlen) {
  srv_rooter_t *t = calloc(1, sizeof *t);
  if (!t) {
    snprintf(errbuf, errlen, "out of memory");
    return NQ_ENOMEM;
  }
  t->srv = s;
  snprintf(t->db, sizeof t->db, "%s", s->dd.db);
  srv_task_init(&t->task, s->loop, &root_ops, t);
  s->rooter = t;
  root_arm(t, SRV_ROOT_FIRST_S);
  return 0;
}

void srv_root_stop(srv_t *s) {
  srv_rooter_t *t = s->rooter;
  if (!t) return;
  s->rooter = NULL;
  srv_task_stop(&t->task);
}
