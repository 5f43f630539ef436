/* nq: parallel solving -- the cut of a subject into tasks, runs that record every finished task
 * (and so can be saved and resumed), and the pool of threads that solves them (see
 * solver_pool.h). Every task is solved by the pure function nq_fast_solve_unit and the cut's own
 * nodes are counted, so the totals -- node count included -- equal nq_fast_solve_unit on the
 * unexpanded unit, exactly, for any thread count and across any number of resumes.
 */
#include "nq/solver_pool.h"

#include "nq/files.h"
#include "nq/gpu.h"
#include "nq/hash.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/throttle.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRESS_EVERY 0.5 /* seconds between two progress callbacks */

/* ---- the cut ------------------------------------------------------------------------------- */

typedef struct tasks_s {
  nq_unit_t *v;
  size_t len, cap;
} tasks_t;

static int tasks_push(const nq_unit_t *u, void *arg) {
  tasks_t *t = arg;
  if (nq_grow(&t->v, &t->cap, t->len, sizeof *t->v, 64) != 0) return NQ_ENOMEM;
  t->v[t->len++] = *u;
  return 0;
}

static int count_one(const nq_unit_t *u, void *arg) {
  (void)u;
  (*(size_t *)arg)++;
  return 0;
}

/* How many tasks the next row would have; stops counting past NQ_CKPT_TASKS_MAX, so that a cut
 * asked for by a checkpoint cannot make us walk (or allocate) more than that. */
static size_t next_count(const tasks_t *t) {
  size_t k = 0;
  for (size_t i = 0; i < t->len && k <= NQ_CKPT_TASKS_MAX; i++)
    nq_unit_children(&t->v[i], count_one, &k);
  return k;
}

/* The rule of solver_pool.h: should tasks at `depth` (there are `count`) be cut one row finer? */
static int rule_deeper(const nq_subject_t *s, int depth, size_t count) {
  int n = s->n;
  if (depth + 1 > n - 4) return 0;
  if (depth < s->depth) return 1;
  if (n - depth > NQ_CUT_ROWS_FINE) return 1;
  return count < NQ_CUT_TASKS_BALANCE && n - (depth + 1) >= NQ_CUT_ROWS_MIN;
}

static int cut_hash(nq_cut_t *c) {
  size_t d = (size_t)c->depth, n = c->ntasks;
  unsigned char *buf = malloc(n * d + 1);
  if (!buf) return NQ_ENOMEM;
  for (size_t i = 0; i < n; i++) memcpy(buf + i * d, c->tasks[i].prefix, d);
  int rc = nq_sha256(buf, n * d, c->hash);
  free(buf);
  return rc;
}

int nq_cut_make(const nq_subject_t *s, int depth, nq_cut_t *out) {
  memset(out, 0, sizeof *out);
  int at = s->whole ? 2 : s->depth; /* where the expansion starts */
  if (depth && (depth < at || depth > s->n - 1)) return NQ_ERANGE;
  tasks_t t = {0};
  uint64_t internal = 0;
  int rc = s->whole ? nq_units_generate(s->n, 2, tasks_push, &t) : tasks_push(&s->unit, &t);
  while (rc == 0 && t.len > 0 && (depth ? at < depth : rule_deeper(s, at, t.len))) {
    size_t k = next_count(&t);
    if (k > NQ_CKPT_TASKS_MAX) {
      if (depth) rc = NQ_ERANGE; /* the rule just stops here */
      break;
    }
    tasks_t next = {0};
    for (size_t i = 0; i < t.len && rc == 0; i++) rc = nq_unit_children(&t.v[i], tasks_push, &next);
    internal += t.len;
    free(t.v);
    t = next;
    at++;
  }
  if (rc == 0 && t.len > NQ_CKPT_TASKS_MAX) rc = NQ_ERANGE; /* a whole N's depth-2 units never are */
  if (rc) {
    free(t.v);
    return rc;
  }
  out->subject = *s;
  /* An expansion that ran out of tasks (every child pruned) still has a depth: where it stopped. */
  out->depth = depth ? depth : at;
  out->ntasks = (uint32_t)t.len;
  out->tasks = t.v;
  out->internal = internal;
  rc = cut_hash(out);
  if (rc) nq_cut_free(out);
  return rc;
}

void nq_cut_free(nq_cut_t *c) {
  free(c->tasks);
  memset(c, 0, sizeof *c);
}

/* ---- runs ---------------------------------------------------------------------------------- */

struct nq_run_s {
  nq_cut_t cut;
  uint8_t *skip;          /* tasks finished by a resumed checkpoint (read-only while solving) */
  uint32_t resumed;
  double seconds_before;  /* the resumed checkpoint's solve time */
  /* Guarded by lock. */
  pthread_mutex_t lock;
  nq_ckpt_t state;        /* what is finished: bitmap, count, sums */
  double t_start, t_end;  /* solving: t_start > 0, t_end = 0 */
  nq_throttle_t *throttle; /* the solve's: its paused time is not solve time */
  double paused_start, paused_end; /* its nq_throttle_paused_seconds at t_start and t_end */
  double last_progress, last_interval;
  unsigned engines;       /* NQ_ENGINE_* bits of this run's finished tasks */
  /* Set before solving. */
  double interval;
  void (*on_interval)(nq_run_t *r, void *arg);
  void *interval_arg;
  const char *kernel;     /* NULL: the fast kernel; else nq_solve_unit_named's (CPU only) */
};

int nq_run_set_kernel(nq_run_t *r, const char *kernel) {
  if (kernel && !nq_kernel_available(kernel)) return NQ_ENODEV;
  r->kernel = kernel;
  return 0;
}

int nq_run_new(const nq_subject_t *s, const nq_ckpt_t *resume, nq_run_t **out, char *why,
               size_t whylen) {
  char buf[NQ_CKPT_ERR_MAX], a[NQ_UNIT_TEXT_MAX], b[NQ_UNIT_TEXT_MAX];
  if (!why || !whylen) why = buf, whylen = sizeof buf;
  why[0] = '\0';
  *out = NULL;
  nq_run_t *r = calloc(1, sizeof *r);
  if (!r) return NQ_ENOMEM;
  int rc = 0, use = 0;
  /* The checkpoint's own cut: the one it was made with, so that a change of the rule between two
   * versions does not throw its work away; it must be the cut this code makes at that depth. */
  if (resume && !nq_subject_equal(s, &resume->subject)) {
    snprintf(why, whylen, "it is for %s, not %s", nq_subject_str(&resume->subject, a, sizeof a),
             nq_subject_str(s, b, sizeof b));
  } else if (resume && (resume->cut_depth < 1 ||
                        (rc = nq_cut_make(s, resume->cut_depth, &r->cut)) == NQ_ERANGE)) {
    snprintf(why, whylen, "its cut (depth %d) cannot be made", resume->cut_depth);
    rc = 0;
  } else if (resume && rc == 0) {
    use = resume->ntasks == r->cut.ntasks &&
          memcmp(resume->cut_hash, r->cut.hash, sizeof r->cut.hash) == 0;
    if (!use) {
      snprintf(why, whylen, "its cut (depth %d, %u tasks) is not the one this solver makes (%u "
               "tasks)", resume->cut_depth, resume->ntasks, r->cut.ntasks);
      nq_cut_free(&r->cut);
    }
  }
  if (rc == 0 && !use) rc = nq_cut_make(s, 0, &r->cut);
  if (rc == 0) rc = nq_ckpt_init(&r->state, s, r->cut.depth, r->cut.ntasks, r->cut.hash);
  size_t nb = ((size_t)r->cut.ntasks + 7) / 8;
  if (rc == 0 && !(r->skip = calloc(nb ? nb : 1, 1))) rc = NQ_ENOMEM;
  if (rc) {
    nq_ckpt_free(&r->state);
    nq_cut_free(&r->cut);
    free(r);
    return rc;
  }
  if (use) {
    memcpy(r->skip, resume->done, nb);
    memcpy(r->state.done, resume->done, nb);
    r->state.ndone = r->resumed = resume->ndone;
    r->state.sum = resume->sum;
    r->seconds_before = resume->seconds;
  }
  pthread_mutex_init(&r->lock, NULL);
  *out = r;
  return 0;
}

void nq_run_free(nq_run_t *r) {
  if (!r) return;
  pthread_mutex_destroy(&r->lock);
  nq_ckpt_free(&r->state);
  nq_cut_free(&r->cut);
  free(r->skip);
  free(r);
}

void nq_run_on_interval(nq_run_t *r, double seconds, void (*fn)(nq_run_t *r, void *arg),
                        void *arg) {
  r->interval = seconds;
  r->on_interval = fn;
  r->interval_arg = arg;
}

/* Solve time so far, time paused left out; the lock is held. */
static double run_seconds(const nq_run_t *r) {
  if (r->t_start <= 0) return r->seconds_before;
  int running = r->t_end <= 0;
  double end = running ? nq_now_mono() : r->t_end;
  double paused = (running ? nq_throttle_paused_seconds(r->throttle) : r->paused_end) -
                  r->paused_start;
  double s = end - r->t_start - paused;
  return r->seconds_before + (s > 0 ? s : 0);
}

int nq_run_snapshot(nq_run_t *r, nq_ckpt_t *out) {
  int rc = nq_ckpt_init(out, &r->state.subject, r->cut.depth, r->cut.ntasks, r->cut.hash);
  if (rc) return rc;
  pthread_mutex_lock(&r->lock);
  memcpy(out->done, r->state.done, ((size_t)r->cut.ntasks + 7) / 8);
  out->ndone = r->state.ndone;
  out->sum = r->state.sum;
  out->seconds = run_seconds(r);
  pthread_mutex_unlock(&r->lock);
  return 0;
}

void nq_run_status(nq_run_t *r, nq_run_status_t *st) {
  pthread_mutex_lock(&r->lock);
  st->ntasks = r->cut.ntasks;
  st->ndone = r->state.ndone;
  st->resumed = r->resumed;
  st->nodes = r->state.sum.nodes;
  st->seconds = run_seconds(r);
  st->cut_depth = r->cut.depth;
  st->engines = r->engines;
  pthread_mutex_unlock(&r->lock);
}

double nq_run_fraction(nq_run_t *r, uint64_t est_nodes) {
  pthread_mutex_lock(&r->lock);
  double f = nq_ckpt_fraction(&r->state, est_nodes);
  pthread_mutex_unlock(&r->lock);
  return f;
}

/* ---- the pool ------------------------------------------------------------------------------ */

typedef struct pool_s {
  nq_run_t *run;
  const nq_solve_opts_t *opts;
  atomic_size_t next;
  atomic_int rc;
  atomic_flag in_interval; /* one thread at a time runs the interval callback */
} pool_t;

/* Record a finished task; say which callbacks are due (the lock is taken here). */
static void task_done(pool_t *p, uint32_t i, const nq_counts_t *c, unsigned engine,
                      uint64_t *nodes, int *progress_due, int *interval_due) {
  nq_run_t *r = p->run;
  pthread_mutex_lock(&r->lock);
  r->engines |= engine;
  r->state.done[i / 8] |= (uint8_t)(1u << (i % 8));
  r->state.ndone++;
  nq_counts_add(&r->state.sum, c);
  *nodes = r->state.sum.nodes;
  double now = nq_now_mono();
  *progress_due = p->opts->progress && now - r->last_progress >= PROGRESS_EVERY;
  if (*progress_due) r->last_progress = now;
  *interval_due = r->on_interval && now - r->last_interval >= r->interval;
  if (*interval_due) r->last_interval = now;
  pthread_mutex_unlock(&r->lock);
}

/* Record a finished task and run the callbacks that are due, outside the lock. */
static void finish(pool_t *p, uint32_t i, const nq_counts_t *c, unsigned engine) {
  nq_run_t *r = p->run;
  uint64_t nodes;
  int progress_due, interval_due;
  task_done(p, i, c, engine, &nodes, &progress_due, &interval_due);
  if (progress_due) p->opts->progress(nodes, p->opts->progress_arg);
  if (interval_due && !atomic_flag_test_and_set(&p->in_interval)) {
    r->on_interval(r, r->interval_arg);
    atomic_flag_clear(&p->in_interval);
  }
}

/* Between two tasks (or two launches): wait out a pause or the CPU limit; 1 when cancelled. */
static int stop_here(pool_t *p, nq_throttle_thread_t *th) {
  nq_throttle_wait(p->opts->throttle, th, p->opts->cancel);
  if (p->opts->cancel && __atomic_load_n(p->opts->cancel, __ATOMIC_RELAXED)) {
    atomic_store(&p->rc, NQ_ECANCELED);
    return 1;
  }
  return 0;
}

/* A CPU thread: one task at a time, from the shared counter, until none is left. */
static void cpu_loop(pool_t *p, nq_throttle_thread_t *th) {
  nq_run_t *r = p->run;
  for (;;) {
    /* A pause or the CPU limit waits here, between two tasks: nothing in flight is touched. */
    if (stop_here(p, th)) break;
    size_t i = atomic_fetch_add(&p->next, 1);
    if (i >= r->cut.ntasks) break;
    if (r->skip[i / 8] >> (i % 8) & 1) continue; /* finished before the resume */
    nq_counts_t c;
    int rc = r->kernel ? nq_solve_unit_named(&r->cut.tasks[i], r->kernel, &c)
                       : nq_fast_solve_unit(&r->cut.tasks[i], &c);
    if (rc) {
      atomic_store(&p->rc, rc);
      break;
    }
    finish(p, (uint32_t)i, &c, NQ_ENGINE_CPU);
  }
}

static void *pool_worker(void *arg) {
  pool_t *p = arg;
  nq_throttle_thread_t th;
  nq_throttle_enter(p->opts->throttle, &th);
  cpu_loop(p, &th);
  return NULL;
}

#define GPU_BATCH_SECONDS 1.0 /* a device's batch of tasks: about this long */
#define GPU_BATCH_MAX 65536
#define GPU_BATCH_FIRST 32    /* tasks of the first batch: the device's speed is not known yet */
#define GPU_BATCH_GROWTH 4.0  /* a batch is at most this many times the one before */

/* A batch of the device's: its tasks (indexes in the cut) and their expansion into subtrees
 * (nq_gpu_batch_expand), made on a thread of its own while the device solves the batch before,
 * so that the host's expansion (about 0.03-0.12 s for a batch's 10^5-4*10^5 subtrees on one
 * core, the device waiting for it) is off the device's path; the first batch is expanded before
 * any launch, as it must be. */
typedef struct gpu_batch_s {
  nq_unit_t *units;
  uint32_t *which;
  size_t k;            /* its tasks */
  nq_gpu_batch_t *b;   /* the expansion, once made */
  int rc;              /* the expansion's */
  pthread_t tid;
  int threaded;        /* expanding on tid */
} gpu_batch_t;

static void *gpu_expand(void *arg) {
  gpu_batch_t *gb = arg;
  gb->rc = nq_gpu_batch_expand(gb->units, gb->k, 0, &gb->b);
  return NULL;
}

/* Take the next tasks from the counter into gb, up to `size` of them (fewer where some finished
 * before a resume), and start their expansion: on a thread of its own when `ahead`, else here.
 * Returns how many (0: none is left). */
static size_t gpu_take(pool_t *p, gpu_batch_t *gb, size_t size, int ahead) {
  nq_run_t *r = p->run;
  gb->k = 0;
  gb->b = NULL;
  gb->rc = 0;
  gb->threaded = 0;
  while (gb->k == 0) {
    size_t i0 = atomic_fetch_add(&p->next, size);
    if (i0 >= r->cut.ntasks) return 0;
    for (size_t i = i0; i < i0 + size && i < r->cut.ntasks; i++)
      if (!(r->skip[i / 8] >> (i % 8) & 1)) {
        gb->which[gb->k] = (uint32_t)i;
        gb->units[gb->k++] = r->cut.tasks[i];
      }
  }
  if (ahead && pthread_create(&gb->tid, NULL, gpu_expand, gb) == 0)
    gb->threaded = 1;
  else
    gpu_expand(gb);
  return gb->k;
}

/* Wait for gb's expansion (made on its thread). */
static void gpu_ready(gpu_batch_t *gb) {
  if (gb->threaded) pthread_join(gb->tid, NULL);
  gb->threaded = 0;
}

/* nq_gpu_ahead_t.next: the batch taken ahead, once expanded, for the device to start at the
 * tail of the one it solves (NULL: none left, or its expansion failed). */
static nq_gpu_batch_t *gpu_next(void *arg) {
  gpu_batch_t *gb = arg;
  gpu_ready(gb);
  return gb->k && gb->rc == 0 ? gb->b : NULL;
}

/* The device's thread: batches of tasks from the same counter, each solved in launches that
 * stop for a cancel, a pause or the duty cycle between them (nq_gpu_solve_batch), the next
 * batch taken and expanded while the device solves one and started on the device behind it at
 * its tail. A failed device's batches, and every task after them, are solved on the CPU here. */
typedef struct gpu_arg_s {
  pool_t *p;
  nq_gpu_t *g;
} gpu_arg_t;

static void *pool_gpu(void *arg) {
  pool_t *p = ((gpu_arg_t *)arg)->p;
  nq_gpu_t *dev = ((gpu_arg_t *)arg)->g;
  nq_throttle_thread_t th;
  nq_throttle_enter(p->opts->throttle, &th);
  nq_gpu_ctl_t ctl = {p->opts->cancel, p->opts->throttle, &th};
  gpu_batch_t gb[2];
  memset(gb, 0, sizeof gb);
  nq_counts_t *got = malloc(GPU_BATCH_MAX * sizeof *got);
  int rc = got ? 0 : NQ_ENOMEM;
  for (int i = 0; i < 2 && rc == 0; i++) {
    gb[i].units = malloc(GPU_BATCH_MAX * sizeof *gb[i].units);
    gb[i].which = malloc(GPU_BATCH_MAX * sizeof *gb[i].which);
    if (!gb[i].units || !gb[i].which) rc = NQ_ENOMEM;
  }
  /* Batch sizes: about GPU_BATCH_SECONDS at the speed of the last batch solved, growing by at
   * most GPU_BATCH_GROWTH over the last one taken (a device comes up to speed within a few
   * batches); the next batch is taken as one starts, so its size follows the batch before. */
  size_t size = GPU_BATCH_FIRST;
  double rate = 0; /* tasks a second of the last batch solved */
  gpu_batch_t *cur = &gb[0], *next = &gb[1];
  size_t have = rc == 0 && !stop_here(p, &th) ? gpu_take(p, cur, size, 0) : 0;
  while (have > 0) {
    if (rate > 0) {
      double want = rate * GPU_BATCH_SECONDS, most = (double)cur->k * GPU_BATCH_GROWTH;
      want = want > most ? most : want;
      size = want < 1 ? 1 : want > GPU_BATCH_MAX ? GPU_BATCH_MAX : (size_t)want;
    }
    const size_t ahead = gpu_take(p, next, size, 1);
    const nq_gpu_ahead_t start = {gpu_next, next}; /* started behind cur at its tail */
    double t0 = nq_now_mono();
    if (cur->rc)
      nq_log(NQ_LOG_ERROR, "GPU %s: a batch of %zu tasks could not be expanded (%s); the CPU takes "
             "them and the rest of the run", nq_gpu_label(dev), cur->k, nq_strerror(cur->rc));
    rc = cur->rc ? cur->rc : nq_gpu_solve_batch(dev, cur->b, &start, got, &ctl);
    double dt = nq_now_mono() - t0;
    gpu_ready(next);
    if (rc == 0) {
      for (size_t j = 0; j < cur->k; j++) finish(p, cur->which[j], &got[j], NQ_ENGINE_GPU);
      if (dt > 1e-3) rate = (double)cur->k / dt;
    }
    nq_gpu_batch_free(cur->b);
    cur->b = NULL;
    if (rc == NQ_ECANCELED) {
      atomic_store(&p->rc, NQ_ECANCELED);
      rc = 0;
      break;
    }
    if (rc) { /* the device failed (nq_gpu_solve_batch said why on the log): the CPU takes over */
      rc = 0;
      for (int b = 0; b < 2 && rc == 0; b++) { /* this batch, and the one taken (k = 0: none) */
        const gpu_batch_t *x = b ? next : cur;
        for (size_t j = 0; j < x->k && (rc = nq_fast_solve_unit(&x->units[j], &got[j])) == 0; j++)
          finish(p, x->which[j], &got[j], NQ_ENGINE_CPU);
      }
      if (rc == 0) cpu_loop(p, &th);
      break;
    }
    gpu_batch_t *t = cur;
    cur = next;
    next = t;
    have = ahead;
    if (have && stop_here(p, &th)) break;
  }
  gpu_ready(next);
  nq_gpu_batch_free(next->b);
  nq_gpu_batch_free(cur->b);
  if (rc) atomic_store(&p->rc, rc);
  for (int i = 0; i < 2; i++) {
    free(gb[i].units);
    free(gb[i].which);
  }
  free(got);
  return NULL;
}

int nq_run_solve(nq_run_t *r, const nq_solve_opts_t *opts, nq_counts_t *out) {
  nq_solve_opts_t o = {1, NULL, NULL, NULL, NULL, NULL, 0};
  if (opts) o = *opts;
  if (r->kernel) o.ngpus = 0; /* a named kernel is a CPU kernel (nq_run_set_kernel) */
  if (o.ngpus < 0 || !o.gpus) o.ngpus = 0;
  if (o.ngpus > 16) o.ngpus = 16;
  if (o.threads < 1 && !o.ngpus) o.threads = 1;
  pool_t p = {.run = r, .opts = &o};
  atomic_init(&p.next, 0);
  atomic_init(&p.rc, 0);
  atomic_flag_clear(&p.in_interval);
  pthread_mutex_lock(&r->lock);
  r->t_start = r->last_progress = r->last_interval = nq_now_mono();
  r->t_end = 0;
  r->throttle = o.throttle;
  r->paused_start = nq_throttle_paused_seconds(o.throttle);
  pthread_mutex_unlock(&r->lock);
  int nthreads = o.threads, started = 0;
  pthread_t tid[256 + 16];
  gpu_arg_t ga[16];
  if (nthreads > 256) nthreads = 256;
  if ((uint32_t)nthreads > r->cut.ntasks - r->resumed) nthreads = (int)(r->cut.ntasks - r->resumed);
  /* The caller's thread is a CPU thread, or the first device's when there is no CPU thread. */
  for (int i = 0; i < o.ngpus; i++) {
    ga[i] = (gpu_arg_t){&p, o.gpus[i]};
    if ((i > 0 || nthreads > 0) && pthread_create(&tid[started], NULL, pool_gpu, &ga[i]) == 0)
      started++;
  }
  for (int i = 1; i < nthreads; i++) {
    if (pthread_create(&tid[started], NULL, pool_worker, &p) != 0) break;
    started++;
  }
  if (nthreads > 0 || !o.ngpus)
    pool_worker(&p);
  else
    pool_gpu(&ga[0]);
  for (int i = 0; i < started; i++) pthread_join(tid[i], NULL);
  pthread_mutex_lock(&r->lock);
  r->t_end = nq_now_mono();
  r->paused_end = nq_throttle_paused_seconds(o.throttle);
  nq_counts_t sum = r->state.sum;
  pthread_mutex_unlock(&r->lock);
  int rc = atomic_load(&p.rc);
  if (rc) return rc;
  sum.nodes += r->cut.internal;
  *out = sum;
  return 0;
}

/* ---- the solver.h entry points ------------------------------------------------------------- */

static int solve_subject(const nq_subject_t *s, const nq_solve_opts_t *opts, nq_counts_t *out) {
  nq_run_t *r;
  int rc = nq_run_new(s, NULL, &r, NULL, 0);
  if (rc) return rc;
  rc = nq_run_solve(r, opts, out);
  nq_run_free(r);
  return rc;
}

int nq_solve_unit(const nq_unit_t *u, const nq_solve_opts_t *opts, nq_counts_t *out) {
  nq_subject_t s;
  int rc = nq_subject_unit(&s, u);
  return rc ? rc : solve_subject(&s, opts, out);
}

int nq_solve_n(int n, int depth, const nq_solve_opts_t *opts, nq_counts_t *out) {
  if (n < NQ_UNIT_MIN_N) return nq_small_n(n, out);
  nq_subject_t s;
  int rc = nq_subject_whole(&s, n, depth);
  return rc ? rc : solve_subject(&s, opts, out);
}

/* ---- nq-solve --checkpoint ----------------------------------------------------------------- */

typedef struct file_ctx_s {
  char dir[4096], name[1024];
  const char *path;
  int failed;
} file_ctx_t;

static void save_now(nq_run_t *r, void *arg) {
  file_ctx_t *f = arg;
  nq_ckpt_t c;
  int rc = nq_run_snapshot(r, &c);
  if (rc == 0) {
    rc = nq_ckpt_save(f->dir, f->name, &c);
    nq_ckpt_free(&c);
  }
  if (rc && !f->failed) nq_log(NQ_LOG_ERROR, "cannot write checkpoint %s: %s", f->path, nq_strerror(rc));
  f->failed |= rc != 0;
}

int nq_solve_checkpointed(const nq_subject_t *s, const nq_solve_opts_t *opts, const char *path,
                          double interval, nq_counts_t *out, double *seconds) {
  file_ctx_t f = {.path = path};
  const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
  int dl = !slash ? 0 : slash == path ? 1 : (int)(slash - path);
  if (!*name || strlen(name) >= sizeof f.name || dl >= (int)sizeof f.dir) return NQ_EINVAL;
  snprintf(f.dir, sizeof f.dir, "%.*s", dl ? dl : 1, dl ? path : ".");
  snprintf(f.name, sizeof f.name, "%s", name);
  char err[NQ_CKPT_ERR_MAX] = "", subj[NQ_UNIT_TEXT_MAX];
  nq_subject_str(s, subj, sizeof subj);
  nq_ckpt_t old;
  int lr = nq_ckpt_load(path, &old, err, sizeof err);
  if (lr != 0 && lr != NQ_ENOTFOUND)
    nq_log(NQ_LOG_WARN, "checkpoint %s refused (%s): %s restarts from zero", path,
           err[0] ? err : nq_strerror(lr), subj);
  nq_run_t *r;
  int rc = nq_run_new(s, lr == 0 ? &old : NULL, &r, err, sizeof err);
  if (lr == 0) nq_ckpt_free(&old);
  if (rc) return rc;
  nq_run_status_t st;
  nq_run_status(r, &st);
  if (lr == 0 && err[0])
    nq_log(NQ_LOG_WARN, "checkpoint %s refused (%s): %s restarts from zero", path, err, subj);
  else if (lr == 0)
    nq_log(NQ_LOG_INFO, "resuming %s from %s: %u of %u tasks done, %.1f s spent before", subj,
           path, st.ndone, st.ntasks, st.seconds);
  nq_run_on_interval(r, interval, save_now, &f);
  rc = nq_run_solve(r, opts, out);
  if (rc == 0 || rc == NQ_ECANCELED) {
    f.failed = 0; /* the last save decides: a failure to write it is the answer */
    save_now(r, &f);
    if (f.failed && rc == 0) rc = NQ_EIO;
  }
  nq_run_status(r, &st);
  if (seconds) *seconds = st.seconds;
  nq_run_free(r);
  return rc;
}
