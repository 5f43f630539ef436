/* nq: the N-Queens counter (Takahashi's symmetry-pruned bitmap backtracker).
 *
 * TOTAL = 2*COUNT2 + 4*COUNT4 + 8*COUNT8 and UNIQUE = COUNT2 + COUNT4 + COUNT8, except for N = 1:
 * its single solution is fixed by all 8 symmetries (an orbit of size 1), so it fits none of the
 * COUNT2/4/8 classes and is reported as COUNT1 = 1 (count1 is 0 for every other N).
 *
 * Node count: the number of search-tree nodes visited below a unit's prefix, counting the unit's
 * own node at row d and every node at rows d+1..N-1 (a node at row y is a board with rows < y
 * placed). Hence nodes(unit) = 1 + the sum of nodes(children one row deeper). It is the same for
 * every implementation and is reported with each result as a fingerprint for cross-checking.
 * nq-solver-4 (this version) does not search below a dead node (nq_unit_dead: a side-part node
 * on a row <= N-4 whose placed rows already reject the board in a rotation check) nor below a
 * blocked one (nq_unit_blocked: a node on rows N-5 and N-4, or from N = 20 on N-6..N-4, whose
 * placed rows leave a row below it no column, or a free column no row). nq-solver-3 tested rows
 * N-5 and N-4 at every N, so its node counts are the same below N = 20 and larger from there;
 * nq-solver-2 searched below blocked nodes, nq-solver-1 below both, so theirs are larger
 * (docs/design.md). The counts c2/c4/c8 are the same.
 */
#ifndef NQ_SOLVER_H
#define NQ_SOLVER_H

#include <stdint.h>
#include "nq/unit.h"

#define NQ_SOLVER_VERSION "nq-solver-4"
/* Solver version strings that files and messages carry: 1..64 characters. */
#define NQ_SOLVER_VERSION_MAX 64

typedef struct nq_counts_s {
  uint64_t c2, c4, c8;
  uint64_t count1;  /* only N = 1 */
  uint64_t nodes;
} nq_counts_t;

/* Exact job-level totals (128-bit). */
typedef unsigned __int128 nq_u128;

typedef struct nq_totals_s {
  nq_u128 c2, c4, c8, count1, nodes;
} nq_totals_t;

/* a += b, field by field (64-bit: one unit's or one solve's counts). */
void nq_counts_add(nq_counts_t *a, const nq_counts_t *b);
void nq_totals_add(nq_totals_t *t, const nq_counts_t *c);
nq_u128 nq_totals_total(const nq_totals_t *t);   /* 2*c2 + 4*c4 + 8*c8 + count1 */
nq_u128 nq_totals_unique(const nq_totals_t *t);  /* c2 + c4 + c8 + count1 */
/* Decimal text of a 128-bit value; buf must hold 40 bytes. Returns buf. */
char *nq_u128_str(nq_u128 v, char *buf);
/* Parse decimal text into a 128-bit value; NQ_EINVAL/NQ_EOVERFLOW on bad input. */
int nq_u128_parse(const char *s, nq_u128 *out);

/* The plain reference implementation (reads like the seed's recursive step 12). */
int nq_ref_solve_unit(const nq_unit_t *u, nq_counts_t *out);
/* N = 1..3 answered directly (no units exist for them). NQ_EINVAL for N >= 4. */
int nq_small_n(int n, nq_counts_t *out);

/* The whole of N by the reference implementation, 1 <= N <= NQ_MAX_N. The node count of a whole
 * N is the sum over its depth-2 units (the tree below the row-0/row-1 prefixes). */
int nq_ref_solve_n(int n, nq_counts_t *out);

/* The fast kernel, one thread: a row-batched, branch-free search, in SIMD lanes where the CPU
 * has AVX-512 or AVX2 (common/solver/solver_fast.c, solver_x86.c). Counts and nodes equal the
 * reference exactly. */
int nq_fast_solve_unit(const nq_unit_t *u, nq_counts_t *out);
/* The variant nq_fast_solve_unit runs on this machine: "scalar", "avx2" or "avx512". */
const char *nq_fast_kernel_in_use(void);
/* Make the named variant ("avx512", "avx2", "neon", "scalar") the one nq_fast_solve_unit runs,
 * or "auto" the best this machine has (the default, unless NQ_KERNEL says otherwise): 0, or
 * NQ_ENODEV for a variant this machine lacks or a name it does not know. For the whole process,
 * before the solves. */
int nq_fast_kernel_choose(const char *name);

/* Kernels by name, for a solve that must use a given one (a server's assignment may name it:
 * kernel-diverse verification, docs/reliability.md): "avx512", "avx2", "neon", "scalar" (the fast
 * kernel's variants) and "reference" (nq_ref_solve_unit: plain recursion, no shared kernel code).
 * nq_kernel_available: 1 when this machine can run it (the reference and scalar always; an
 * AVX-512 CPU also runs avx2), 0 for a kernel it lacks or a name it does not know. */
#define NQ_KERNEL_NAME_MAX 16 /* the longest kernel name and its terminator */
int nq_kernel_available(const char *name);
/* Solve one unit with the named kernel: 0; NQ_ENODEV when the machine lacks it (or the name is
 * unknown); the kernel's errors. Counts and nodes equal every other kernel's. */
int nq_solve_unit_named(const nq_unit_t *u, const char *name, nq_counts_t *out);

/* Progress callback for long solves: called from worker threads, at most a few times a second,
 * with the nodes counted so far. May be NULL. */
typedef void (*nq_progress_cb)(uint64_t nodes_done, void *arg);

typedef struct nq_solve_opts_s {
  int threads;           /* CPU threads: >= 1, or 0 with a gpu (a GPU-only solve) */
  nq_progress_cb progress;
  void *progress_arg;
  volatile int *cancel;  /* if non-NULL and set non-zero, the solve stops early with NQ_ECANCELED */
  struct nq_throttle_s *throttle; /* NULL, or the priority / pause / CPU limit of every solver
                                     thread of the pool (nq/throttle.h) */
  struct nq_gpu_s *const *gpus; /* ngpus devices (nq/gpu.h), each taking batches of the pool's
                                   tasks beside the CPU threads, from a thread of its own */
  int ngpus;
} nq_solve_opts_t;

/* What solved a run's tasks (nq_run_status_t.engines): the CPU kernel, a GPU, or both. */
enum { NQ_ENGINE_CPU = 1, NQ_ENGINE_GPU = 2 };

/* Solve one unit with a pthread pool: the unit is expanded a few rows deeper into tasks that the
 * workers take dynamically. Results equal nq_fast_solve_unit exactly (nodes included). */
int nq_solve_unit(const nq_unit_t *u, const nq_solve_opts_t *opts, nq_counts_t *out);

/* Solve all of N (1..NQ_MAX_N) through the same path: all units at `depth`, then the pool. */
int nq_solve_n(int n, int depth, const nq_solve_opts_t *opts, nq_counts_t *out);

/* Published values for N = 1..27 (OEIS A000170, A002562, and COUNT2/4/8 derived from A033148
 * and A032522; see common/solver/known.c). Returns NULL beyond the table. For N = 1, c2/c4/c8 are "0". */
typedef struct nq_known_s {
  int n;
  const char *total, *unique; /* decimal, exact */
  const char *c2, *c4, *c8;   /* decimal, exact */
} nq_known_t;
const nq_known_t *nq_known(int n);

#endif
