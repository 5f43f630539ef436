/* nq: the solver pool -- how a solve is cut into tasks, and a solve that can be watched, stopped,
 * saved and resumed (docs/design.md, "Parallel solving" and "Checkpoints").
 *
 * The cut. A subject (checkpoint.h: one unit, or all of N) is expanded row by row, every task one
 * row deeper at a time, through the generator (nq_unit_children), so every task of a cut has the
 * same depth and the cut is a pure function of (subject, depth): any thread count, any machine,
 * any run makes the same tasks in the same order. The nodes of the expanded rows are counted, so
 * the node count of a solve does not depend on the cut. The depth the rule picks (depth 0 below):
 *   - never shallower than the subject (all of N: its least task depth);
 *   - deeper while a task is more than NQ_CUT_ROWS_FINE rows above the last row: such a task is
 *     big enough to matter when it is lost (a record unit's tasks are seconds, not minutes);
 *   - deeper while there are fewer than NQ_CUT_TASKS_BALANCE tasks, as long as the tasks stay at
 *     least NQ_CUT_ROWS_MIN rows above the last row (about 1e5 nodes and more, so the half a
 *     microsecond each task costs stays below 0.5%): enough tasks to keep many threads busy;
 *   - never deeper than N-4, nor to more than NQ_CKPT_TASKS_MAX tasks (these two win over the
 *     others, all of N's least depth included).
 * The rule is in docs/design.md with the measurements behind its numbers.
 *
 * The run. nq_run_solve solves a cut's tasks on a pool of threads that take them one at a time
 * (subtrees differ by orders of magnitude, hence dynamic taking); each finished task is recorded
 * (a bit and its counts, under the run's lock). From any thread, nq_run_snapshot copies what is
 * finished into a checkpoint, and a cancel flag makes the pool stop taking tasks (the tasks
 * running then still finish and are recorded). A run made from a checkpoint skips its finished
 * tasks and starts from its sums, so the result equals an uninterrupted solve bit for bit.
 */
#ifndef NQ_SOLVER_POOL_H
#define NQ_SOLVER_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "nq/checkpoint.h"
#include "nq/solver.h"

#define NQ_CUT_ROWS_FINE 16
#define NQ_CUT_TASKS_BALANCE 1024
#define NQ_CUT_ROWS_MIN 13

typedef struct nq_cut_s {
  nq_subject_t subject;
  int depth;          /* every task's depth */
  uint32_t ntasks;
  nq_unit_t *tasks;   /* ntasks units, in generator order */
  uint64_t internal;  /* nodes of the expanded rows above the tasks */
  uint8_t hash[NQ_CKPT_HASH_LEN]; /* SHA-256 of the tasks' prefixes, in order */
} nq_cut_t;

/* Cut s into tasks at `depth`, or at the depth the rule picks when depth is 0. Returns 0 and
 * *out (release with nq_cut_free); NQ_ERANGE for a depth outside the unit's (2 for all of N) ..
 * N-1 or one that would make more than NQ_CKPT_TASKS_MAX tasks; NQ_ENOMEM; NQ_ETLS (hash). */
int nq_cut_make(const nq_subject_t *s, int depth, nq_cut_t *out);
void nq_cut_free(nq_cut_t *c);

typedef struct nq_run_s nq_run_t;

/* A solve of subject s, from zero or from the checkpoint `resume` (may be NULL). A checkpoint is
 * used only if it is for the same subject and its cut is the one nq_cut_make makes at its depth
 * (task count and hash); otherwise the run starts from zero and `why` (when given) gets the
 * reason it was refused (why[0] is '\0' when nothing was refused). Returns 0 and *out (release
 * with nq_run_free), or a cut error (NQ_ENOMEM, NQ_ETLS). */
int nq_run_new(const nq_subject_t *s, const nq_ckpt_t *resume, nq_run_t **out, char *why,
               size_t whylen);
void nq_run_free(nq_run_t *r);

/* Solve the tasks not finished yet on opts->threads threads (the caller's thread is one of them;
 * opts may be NULL: one thread) and on opts->gpus too: for each device one more thread takes
 * batches of tasks (sized to about a second of the device's measured speed) and solves them on
 * the device, recording each task as a CPU thread does. When a device fails, its thread solves
 * the batch it held, and every task after it, on the CPU: nothing finished is lost. With threads
 * 0 the caller's thread is the first device's (a GPU-only solve, which falls back the same way). opts->progress gets the nodes of every finished task, resumed
 * ones included. Returns 0 and *out (the whole subject's counts, the expanded rows' nodes
 * included), or NQ_ECANCELED when *opts->cancel stopped it (what finished stays recorded: take a
 * snapshot), or the kernel's error. Run it once per run. */
int nq_run_solve(nq_run_t *r, const nq_solve_opts_t *opts, nq_counts_t *out);

/* Solve every task of the run with the named kernel (nq_solve_unit_named: "avx2", "reference",
 * ...) instead of the fast kernel in use, on the CPU threads only (the run's devices sit it out:
 * it would not be that kernel's count). NULL: the fast kernel. Set before nq_run_solve; the name
 * must outlive the run. NQ_ENODEV when this machine cannot run it (nothing changes). */
int nq_run_set_kernel(nq_run_t *r, const char *kernel);

/* Called by one pool thread between two tasks every `seconds` (> 0) of solving, e.g. to save a
 * checkpoint (nq_run_snapshot works inside it). Set before nq_run_solve. */
void nq_run_on_interval(nq_run_t *r, double seconds, void (*fn)(nq_run_t *r, void *arg),
                        void *arg);

/* From any thread: a copy of what is finished (release with nq_ckpt_free). Its `seconds` are the
 * resumed checkpoint's plus this run's solving time so far (wall time, less the time its throttle
 * was paused: nq_throttle_paused_seconds). 0 or NQ_ENOMEM. */
int nq_run_snapshot(nq_run_t *r, nq_ckpt_t *out);

typedef struct nq_run_status_s {
  uint32_t ntasks, ndone;  /* tasks of the cut, and finished (resumed ones included) */
  uint32_t resumed;        /* tasks that were finished in the resumed checkpoint */
  uint64_t nodes;          /* nodes of the finished tasks */
  double seconds;          /* as in a snapshot */
  int cut_depth;
  unsigned engines;        /* NQ_ENGINE_* bits: what solved this run's tasks (not resumed ones) */
} nq_run_status_t;

/* From any thread: where the run stands. */
void nq_run_status(nq_run_t *r, nq_run_status_t *st);
/* From any thread: the fraction done (nq_ckpt_fraction's rule: share of est_nodes when given,
 * else of the tasks). */
double nq_run_fraction(nq_run_t *r, uint64_t est_nodes);

/* nq-solve --checkpoint: solve s resuming from the checkpoint file at `path` when there is a
 * valid one for s (a refused one is reported on the log and replaced), saving it every
 * `interval` seconds of solving and once more at the end -- complete, so that running the same
 * command again answers at once -- or when *opts->cancel stops the solve (NQ_ECANCELED then).
 * *seconds (may be NULL) gets the solve time of every run together. Returns as nq_run_solve, or
 * NQ_EIO when the file cannot be written. */
int nq_solve_checkpointed(const nq_subject_t *s, const nq_solve_opts_t *opts, const char *path,
                          double interval, nq_counts_t *out, double *seconds);

#endif
