/* nq: parallel solving. A unit (or every unit of N) is expanded a few rows deeper into tasks;
 * a fixed pool of pthreads takes tasks one at a time from a shared atomic index, so a thread
 * that drew a small subtree simply takes the next one (subtrees differ by orders of magnitude,
 * which rules out static striping). The expansion's own nodes are counted, so the totals --
 * node count included -- equal nq_fast_solve_unit on the unexpanded unit, exactly.
 */
#include "nq/solver.h"
#include "nq/nq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct tasks_s {
  nq_unit_t *v;
  size_t len, cap;
  uint64_t internal_nodes; /* nodes of expanded (non-task) units */
} tasks_t;

static int tasks_push(const nq_unit_t *u, void *arg) {
  tasks_t *t = arg;
  if (t->len == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    nq_unit_t *v = realloc(t->v, cap * sizeof *v);
    if (!v) return NQ_ENOMEM;
    t->v = v;
    t->cap = cap;
  }
  t->v[t->len++] = *u;
  return 0;
}

/* Expand every task one row deeper until there are `want` tasks, the tasks reach `min_depth`,
 * or deeper expansion would leave too little work per task (3 rows above the last). */
static int tasks_expand(tasks_t *t, size_t want, int min_depth) {
  for (;;) {
    if (t->len == 0) return 0;
    int depth = t->v[0].depth, n = t->v[0].n;
    if ((t->len >= want && depth >= min_depth) || depth + 1 > n - 4) return 0;
    tasks_t next;
    memset(&next, 0, sizeof next);
    next.internal_nodes = t->internal_nodes + t->len;
    for (size_t i = 0; i < t->len; i++) {
      int rc = nq_unit_children(&t->v[i], tasks_push, &next);
      if (rc) {
        free(next.v);
        return rc;
      }
    }
    free(t->v);
    *t = next;
  }
}

typedef struct pool_s {
  const tasks_t *tasks;
  const nq_solve_opts_t *opts;
  atomic_size_t next;
  atomic_uint_fast64_t nodes_done;
  atomic_int rc;
  pthread_mutex_t lock; /* guards sum and the progress clock */
  nq_counts_t sum;
  double last_progress;
} pool_t;

static void *pool_worker(void *arg) {
  pool_t *p = arg;
  nq_counts_t local;
  memset(&local, 0, sizeof local);
  for (;;) {
    if (p->opts->cancel && __atomic_load_n(p->opts->cancel, __ATOMIC_RELAXED)) {
      atomic_store(&p->rc, NQ_ESTATE);
      break;
    }
    size_t i = atomic_fetch_add(&p->next, 1);
    if (i >= p->tasks->len) break;
    nq_counts_t c;
    int rc = nq_fast_solve_unit(&p->tasks->v[i], &c);
    if (rc) {
      atomic_store(&p->rc, rc);
      break;
    }
    nq_counts_add(&local, &c);
    uint64_t done = atomic_fetch_add(&p->nodes_done, c.nodes) + c.nodes;
    if (p->opts->progress && pthread_mutex_trylock(&p->lock) == 0) {
      double now = nq_now_mono();
      int due = now - p->last_progress >= 0.5;
      if (due) p->last_progress = now;
      pthread_mutex_unlock(&p->lock);
      if (due) p->opts->progress(done, p->opts->progress_arg);
    }
  }
  pthread_mutex_lock(&p->lock);
  nq_counts_add(&p->sum, &local);
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

/* Run the tasks on opts->threads threads (the caller's thread is one of them). */
static int pool_run(const tasks_t *t, const nq_solve_opts_t *opts, nq_counts_t *out) {
  pool_t p;
  memset(&p, 0, sizeof p);
  p.tasks = t;
  p.opts = opts;
  atomic_init(&p.next, 0);
  atomic_init(&p.nodes_done, 0);
  atomic_init(&p.rc, 0);
  pthread_mutex_init(&p.lock, NULL);
  p.last_progress = nq_now_mono();
  int nthreads = opts->threads, started = 0;
  pthread_t tid[256];
  if (nthreads > 256) nthreads = 256;
  for (int i = 1; i < nthreads; i++) {
    if (pthread_create(&tid[started], NULL, pool_worker, &p) != 0) break;
    started++;
  }
  pool_worker(&p);
  for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
  pthread_mutex_destroy(&p.lock);
  int rc = atomic_load(&p.rc);
  if (rc) return rc;
  p.sum.nodes += t->internal_nodes;
  *out = p.sum;
  return 0;
}

static int solve_tasks(tasks_t *t, int min_depth, const nq_solve_opts_t *opts, nq_counts_t *out) {
  nq_solve_opts_t o = {1, NULL, NULL, NULL};
  if (opts) o = *opts;
  if (o.threads < 1) o.threads = 1;
  /* Several tasks per thread for balance; at one thread, still enough tasks that cancel and
   * progress (checked between tasks) take effect mid-unit when the caller asked for them. */
  size_t want = (size_t)o.threads * 64;
  if (o.threads == 1 && !o.cancel && !o.progress) want = 1;
  int rc = tasks_expand(t, want, min_depth);
  if (!rc) rc = pool_run(t, &o, out);
  free(t->v);
  return rc;
}

int nq_solve_unit(const nq_unit_t *u, const nq_solve_opts_t *opts, nq_counts_t *out) {
  int rc = nq_unit_validate(u, NULL, 0);
  if (rc) return rc;
  tasks_t t;
  memset(&t, 0, sizeof t);
  rc = tasks_push(u, &t);
  if (rc) return rc;
  return solve_tasks(&t, u->depth, opts, out);
}

int nq_solve_n(int n, int depth, const nq_solve_opts_t *opts, nq_counts_t *out) {
  if (n < NQ_UNIT_MIN_N) return nq_small_n(n, out);
  if (n > NQ_MAX_N || depth < 2) return NQ_ERANGE;
  tasks_t t;
  memset(&t, 0, sizeof t);
  int rc = nq_units_generate(n, 2, tasks_push, &t);
  if (rc) {
    free(t.v);
    return rc;
  }
  return solve_tasks(&t, nq_unit_effective_depth(n, depth), opts, out);
}
