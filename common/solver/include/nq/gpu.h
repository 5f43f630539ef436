/* nq: the GPU backend -- nq-solver-4 on OpenCL 1.2 devices (docs/gpu.md).
 *
 * A device solves lists of units exactly as the CPU kernels do: the same c2, c4, c8 and node
 * count for every unit (dead and blocked nodes cut the same way), so a GPU result and a CPU result
 * of one unit agree on the fingerprint. How: each unit of a batch is expanded on the host, row by
 * row through the generator (nq_unit_children), until the batch holds enough subtrees to fill the
 * device (NQ_GPU_SUBTREES) and each subtree has at most NQ_GPU_ROWS_MAX rows left; the expanded
 * rows' nodes are counted on the host. The subtrees are a queue on the device: a work-item
 * takes the next one with an atomic index and, when its search is done, the next one in the same
 * launch (common/solver/gpu_kernel.cl: the reference's search, iterative, one node an iteration
 * over a uint4 stack record a level, each rule at its own rows), and the counts are added up per
 * unit on the device.
 *
 * Launches are bounded in time. The device has slots (2048 work-items per compute unit); a
 * launch runs each work-item for at most `budget` iterations and saves a search still running
 * in its slot, the budget adapted to the measured speed so that a launch takes about
 * `launch_seconds` (0.1 s by default, well under a desktop display watchdog's 2-5 s), however
 * large a subtree is. Between launches the host reads the slots' states (each running search's
 * unit too) and the queue's index. Once a batch's subtrees are all taken, the next batch, when
 * the caller has one at hand (nq_gpu_solve_batch), starts behind it in the same queue and the
 * batch's searches still running are split at each launch's end into subtrees at the queue's
 * front; without one, at the batch's tail (the queue used up, under a quarter of the slots busy)
 * each saved search is split into what it has left -- every candidate on its stack -- so the
 * stragglers spread over the idle slots.
 * Between two launches the solve also checks its cancel flag and waits in its throttle (pause
 * file, duty cycle), like a CPU solver thread between two tasks.
 *
 * The kernel's source is compiled into the binary (no file is looked up at run time). Built only
 * with NQ_OPENCL (CMake finds the OpenCL headers); without it, or on a machine without an OpenCL
 * loader (opened at run time: no binary links one), every device list is empty and nq_gpu_open
 * answers NQ_ENODEV.
 *
 * Self-test. nq_gpu_open builds the kernel and, before the device takes any work, solves a fixed
 * set of units (every unit of N=11 at depth 3 and of N=12 at depth 4, both parts) and compares
 * each with the reference solver, counts and nodes; a device that disagrees is refused with a
 * message naming it and the unit that differs (a broken driver or a miscompile).
 */
#ifndef NQ_GPU_H
#define NQ_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "nq/solver.h"
#include "nq/unit.h"

#define NQ_GPU_MAX_DEVICES 64
#define NQ_GPU_ROWS_MAX 12      /* a subtree never has more rows left below it than this */
#define NQ_GPU_ROWS_MIN 9       /* and the host stops expanding at this many: the kernel's
                                   inline rows N-9..N-1 and one row of its walk, which a
                                   launch's budget can stop and the host split */
#define NQ_GPU_SUBTREES (1u << 17) /* a batch is expanded until it holds this many subtrees */
#define NQ_GPU_BATCH_UNITS_MAX (1u << 26) /* units of a batch: two batches' owners (under
                                             3 * 2^26) fit in the 30 bits a slot's state keeps
                                             for one, and their totals' index (8 words an
                                             owner) in the kernel's 32-bit arithmetic */

typedef struct nq_gpu_info_s {
  int index;              /* 0.. in platform order, then the platform's device order */
  int is_gpu;             /* a GPU or accelerator (not a CPU device such as pocl) */
  unsigned compute_units;
  uint64_t global_mem;    /* bytes */
  char name[128], vendor[128], platform[128], driver[64], version[64];
} nq_gpu_info_t;

/* 1 when this build has the OpenCL backend. */
int nq_gpu_built(void);

/* 0 when this build has the backend and this machine an OpenCL loader (libOpenCL.so.1,
 * OpenCL.dll), opened at run time (common/solver/ocl_load.h); otherwise NQ_ENODEV, with the
 * one-line reason in why when given (no backend; the loader not found, and the system's error;
 * an entry point it lacks). */
int nq_gpu_available(char *why, size_t whylen);

/* Every OpenCL device on this machine, up to max (*count: how many were written). A machine
 * with a loader but no OpenCL driver has none (0, *count = 0). NQ_ENODEV without the backend or
 * without the loader (nq_gpu_available says why). */
int nq_gpu_list(nq_gpu_info_t *out, int max, int *count);

/* The devices a --gpu value names, from the list: "off" none; "auto" every GPU or accelerator;
 * "all" every device, CPU devices (pocl) too; "0,2" those indexes. Writes their indexes (at most
 * max) and *count. NQ_EINVAL with a reason for anything else or an index not in the list. */
int nq_gpu_select(const char *spec, const nq_gpu_info_t *devs, int ndevs, int *idx, int max,
                  int *count, char *err, size_t errlen);

typedef struct nq_gpu_opts_s {
  double launch_seconds;  /* the time a launch aims at (0: 0.1) */
  unsigned budget;        /* iterations (about a node each) a work-item may make per launch,
                             fixed (0: adapted to launch_seconds; tests use a small one to split
                             every search, a large one to fill a launch) */
  int corrupt;            /* tests: build the kernel with NQ_CORRUPT (one wrong COUNT4) */
  unsigned fail_after;    /* tests: the launch after this many (the self-test's not counted)
                             fails as a lost device's would (0: never) */
  uint32_t tot_bias;      /* tests: the device's per-unit totals (64-bit, two 32-bit words added
                             with a carry) start at this in their low words and it is taken off
                             at the end, so that small counts carry into the high words */
  unsigned slots;         /* tests: this many slots (rounded up to a work-group), not 2048 per
                             compute unit: fewer slots than a batch's pieces, so that some wait
                             in the queue */
} nq_gpu_opts_t;

typedef struct nq_gpu_s nq_gpu_t;

/* Open device `index` (of nq_gpu_list), build the kernel and run the self-test. Returns 0 and
 * *out; NQ_ENODEV (no such device, or no backend); NQ_EDEVICE with a one-line reason in err when
 * the driver fails, the kernel does not build or the self-test disagrees. opts may be NULL. */
int nq_gpu_open(int index, const nq_gpu_opts_t *opts, nq_gpu_t **out, char *err, size_t errlen);
void nq_gpu_close(nq_gpu_t *g);

/* Open every device a --gpu value names (nq_gpu_select over nq_gpu_list), up to max, into
 * out[0..*count-1]. A device that cannot be opened or fails its self-test is refused with an
 * ERROR line on the log naming it, and the others are opened all the same (the caller goes on
 * with what it got, the CPU at least). opts may be NULL (nq-client-test fills its fail_after and
 * corrupt from the test hooks NQ_GPU_FAIL_AFTER and NQ_GPU_CORRUPT: docs/gpu.md). Returns 0;
 * NQ_EINVAL with a reason for a bad value; NQ_ENODEV when the value names devices but this build
 * has no OpenCL backend or this machine no loader ("auto" is then no device, and an INFO line on
 * the log says why). */
int nq_gpu_open_spec(const char *spec, const nq_gpu_opts_t *opts, nq_gpu_t **out, int max,
                     int *count, char *err, size_t errlen);

/* "opencl:<device name>": the backend label a result carries. */
const char *nq_gpu_label(const nq_gpu_t *g);
const nq_gpu_info_t *nq_gpu_info(const nq_gpu_t *g);

/* What a solve checks between two launches. */
typedef struct nq_gpu_ctl_s {
  volatile int *cancel;            /* non-zero: stop (NQ_ECANCELED) */
  struct nq_throttle_s *throttle;  /* pause and duty cycle (may be NULL) */
  struct nq_throttle_thread_s *th; /* the calling thread's throttle account */
} nq_gpu_ctl_t;

/* Solve units[0..n-1] on the device; out[i] gets unit i's counts (nodes included), exactly as
 * nq_fast_solve_unit: every node is visited once, in a slot, whether its search was split or
 * not. ctl may be NULL. Returns 0; NQ_ECANCELED when ctl->cancel stopped it (out
 * is then undefined); NQ_EDEVICE when the device failed (the device is marked failed: every later
 * call answers NQ_EDEVICE at once, and the caller finishes the units elsewhere); NQ_ENOMEM;
 * NQ_EINVAL for a unit that does not validate. One thread at a time per device. */
int nq_gpu_solve(nq_gpu_t *g, const nq_unit_t *units, size_t n, nq_counts_t *out,
                 const nq_gpu_ctl_t *ctl);

/* nq_gpu_solve in two steps, so that the host's part can run beside the device's: a batch is the
 * units expanded into subtrees (the host's rows counted), which needs no device and may be made
 * on any thread, for instance the next batch while a device solves this one (the pool does:
 * common/solver/solver_pool.c); the device then solves it once. nq_gpu_batch_expand expands
 * until the batch holds `want` subtrees (0: NQ_GPU_SUBTREES; tests ask for fewer, so that the
 * subtrees keep more rows, up to NQ_GPU_ROWS_MAX) or NQ_GPU_ROWS_MIN rows are left; it returns 0
 * and *out, NQ_EINVAL for a unit that does not validate, units of more than one N or more than
 * NQ_GPU_BATCH_UNITS_MAX units, or NQ_ENOMEM.
 *
 * nq_gpu_solve_batch answers as nq_gpu_solve, with out[0..n-1] for the batch's n units. With
 * `ahead` (may be NULL), once the batch's subtrees are all taken its next() is asked, once, for
 * the batch to follow (NULL: none), which is then started behind it on the device, so that the
 * slots the batch's last searches leave do not idle; the call still returns when the batch it
 * was given is done, and the next call, given that batch, continues it where it stands. A batch
 * started so is solved by the very next call or not at all: any other batch given first drops
 * it from the device (it is then refused, NQ_EINVAL, as a batch solved before is). */
typedef struct nq_gpu_batch_s nq_gpu_batch_t;
typedef struct nq_gpu_ahead_s {
  nq_gpu_batch_t *(*next)(void *arg);
  void *arg;
} nq_gpu_ahead_t;
int nq_gpu_batch_expand(const nq_unit_t *units, size_t n, size_t want, nq_gpu_batch_t **out);
int nq_gpu_solve_batch(nq_gpu_t *g, nq_gpu_batch_t *b, const nq_gpu_ahead_t *ahead,
                       nq_counts_t *out, const nq_gpu_ctl_t *ctl);
size_t nq_gpu_batch_subtrees(const nq_gpu_batch_t *b); /* the subtrees it holds (tests) */
void nq_gpu_batch_free(nq_gpu_batch_t *b);

/* The device's work since it was opened (its self-test's not counted): the nodes of the units it
 * solved (the rows the host expanded for it included) and the seconds its launches took. */
void nq_gpu_rate(const nq_gpu_t *g, uint64_t *nodes, double *seconds);

/* The backend label of a solve (a result's `backend`, nq-solve's `kernel`): each of the ngpus
 * devices that counted nodes since before[i] (before NULL: since it was opened), then the CPU
 * kernel when cpu is non-zero or no device counted, joined by '+'. A name that would not fit in
 * len is left out whole, never cut. */
void nq_backend_label(nq_gpu_t *const *gpus, int ngpus, const uint64_t *before, int cpu, char *buf,
                      size_t len);

/* Searches split so far (at a batch's tail, and a batch's last ones once the batch after it has
 * started; for tests and benchmarks). */
uint64_t nq_gpu_splits(const nq_gpu_t *g);

/* Launches so far, since the self-test (for tests: a launch's work-items take the next subtree of
 * the queue as soon as theirs is done, so a batch of many small subtrees takes one launch). */
uint64_t nq_gpu_launches(const nq_gpu_t *g);

/* Batches started behind another at its tail so far (nq_gpu_solve_batch's `ahead`), and tails:
 * launches after which the queue was used up and under a quarter of the slots still searched,
 * with no batch behind to start, so that most slots had idled through part of the launch (tests
 * and benchmarks; counted since the self-test, as the splits and launches are). */
uint64_t nq_gpu_ahead(const nq_gpu_t *g);
uint64_t nq_gpu_tails(const nq_gpu_t *g);

/* Whether the device has failed (see nq_gpu_solve), and why. */
int nq_gpu_failed(const nq_gpu_t *g, const char **why);

#endif
