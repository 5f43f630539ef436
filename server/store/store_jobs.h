/* nq-server: the store's jobs (layer 1, store.h): creation from a plan in batches, resume,
 * lookups, the job's diverse_kernels, and the removal of its rows. Archiving and deleting a job
 * with its leases are store_api.h's (they release leases, store_work.h's).
 */
#ifndef SRV_STORE_JOBS_H
#define SRV_STORE_JOBS_H

#include <stdint.h>
#include "nq/job_opts.h"
#include "nq/states.h"
#include "store.h"

/* The job states (jobs.state holds the name): X(ENUM, "name"). */
#define SRV_JOB_STATE_MAP(X)                                                                       \
  X(RUNNING, "running")                                                                            \
  X(DONE, "done")                                                                                  \
  X(CREATING, "creating") /* its units are still being inserted (or the insertion was cut off) */  \
  X(ARCHIVED, "archived") /* kept for the record; a new job for the same N may be created */
typedef enum {
#define SRV_JOB_ENUM_ONE(e, name) SRV_JOB_##e,
  SRV_JOB_STATE_MAP(SRV_JOB_ENUM_ONE)
#undef SRV_JOB_ENUM_ONE
  SRV_JOB_NSTATES
} srv_job_state_t;

/* "running", "done", "creating", "archived". */
const char *srv_job_state_name(srv_job_state_t s);

typedef struct srv_job_s {
  int64_t id;
  int n;
  int depth;        /* the deepest unit's prefix length (a flat job: its one depth) */
  int min_depth;    /* the shallowest unit's (a flat job: the same) */
  double unit_seconds; /* the target its units were sized to (reference core-seconds, plan.h);
                        * 0 for a flat --depth job */
  uint64_t seed;    /* the plan's estimator seed */
  int quorum;       /* agreeing results from distinct clients needed to verify a unit */
  int max_results;  /* results without a quorum after which a unit is disputed */
  srv_job_state_t state;
  int64_t created, finished; /* finished = 0 while running */
  int64_t archived; /* when it was archived, else 0 */
  int64_t units;    /* number of units of the job (so far, while creating) */
  int64_t first_unit; /* unit ids are first_unit .. first_unit + units - 1, in plan order */
  int has_internal; /* internal is known (jobs made before schema 5 get it at the next open) */
  uint64_t internal; /* the plan's split nodes: nodes(units) + internal = nq-solve N's nodes */
  double est_nodes, est_se; /* the plan's estimate of the whole N and its standard error (0:
                             * unknown, a job made before schema 5) */
  nq_totals_t totals; /* final totals (c2, c4, c8, nodes: the sum over the units); zero while
                       * running */
} srv_job_t;

/* Progress of a job's creation, for a progress line. */
typedef struct srv_job_progress_s {
  uint64_t units;   /* inserted so far (committed) */
  double fraction;  /* share of the search tree covered so far (by estimates), 0..1 */
  double seconds;   /* since the creation began */
  int done;         /* the last call: every unit is in */
} srv_job_progress_t;
typedef void (*srv_job_progress_cb)(const srv_job_progress_t *p, void *arg);

#define SRV_JOB_BATCH 50000 /* units per transaction while a job is created */

/* What job to create (or to resume) for N. */
typedef struct srv_job_spec_s {
  /* The job's settings (nq/job_opts.h): n NQ_UNIT_MIN_N..NQ_MAX_N; depth > 0: a flat job, every
   * unit at this depth (nq_unit_depth_check); else units sized to about unit_seconds reference
   * core-seconds (nq_plan_seconds_to_nodes: 0 < S <= 1e9), none deeper than max_depth (0 = N - 1);
   * quorum >= 1, max_results >= quorum; diverse_kernels resolved: 0..SRV_KERNELS_MAX
   * (store_kernels.h), never -1. */
  nq_jobopts_t job;
  uint64_t seed;        /* the estimator's seed; 0 = NQ_EST_DEFAULT_SEED */
  uint64_t max_units;   /* refuse a plan of more units than this; 0 = no limit */
  int batch;            /* units per transaction; 0 = SRV_JOB_BATCH */
  srv_job_progress_cb progress; /* called after every committed batch and at the end; may be NULL */
  void *progress_arg;
} srv_job_spec_t;

/* Create the job for spec->n, or resume the existing one (the one for N that is not archived).
 * New job: the units come from nq_plan_run (nq/plan.h) -- a flat job is the plan with
 * start = max depth = depth and no target -- and are inserted as they stream out, one
 * transaction per `batch` units, with ids first_unit + idx; the job is `creating` until the last
 * batch made it `running`. Memory stays bounded whatever the number of units. Every unit passed
 * the plan's 64-bit guard. A job whose creation was cut off (a crash) is deleted and created
 * again. Existing job: fills *job; its stored quorum and max_results stay in force.
 * Must be called outside a transaction (NQ_ETXN). Returns 0; NQ_ERANGE (N, depth, S, quorum or
 * max_results out of range, more than max_units units) or NQ_EOVERFLOW (a unit could pass 2^63
 * nodes: the message names a deeper depth or a smaller S), with nothing left behind; NQ_EEXIST
 * if the job for N exists with other units (depth or S; the message names both and how to
 * archive it); NQ_EIO on store failure. srv_store_errmsg says why. */
int srv_job_open(srv_store_t *st, const srv_job_spec_t *spec, int64_t now, srv_job_t *job);
/* srv_job_open of a flat job at `depth` (the tests' and old callers' form). */
int srv_job_ensure(srv_store_t *st, int n, int depth, int quorum, int max_results, int64_t now,
                   srv_job_t *job);
/* 1 if every unit of the job was verified: state done, or archived after it was done (an archive
 * keeps the answer; issue 36). */
int srv_job_is_done(const srv_job_t *job);
/* Look up a job by id, or the job for N that is not archived; NQ_ENOTFOUND if absent. */
int srv_job_get(srv_store_t *st, int64_t job_id, srv_job_t *job);
int srv_job_find_n(srv_store_t *st, int n, srv_job_t *job);
/* Every job, oldest first; a non-zero return of cb stops the walk and is returned. */
typedef int (*srv_job_cb)(const srv_job_t *job, void *arg);
int srv_job_list(srv_store_t *st, srv_job_cb cb, void *arg);

#define SRV_KERNELS_MAX 8 /* --diverse-kernels: 0..this */

/* The job's diverse_kernels (0 on a database older than schema 016). */
int srv_job_kernels_get(srv_store_t *st, int64_t job_id, int *k);
/* Set it (0..SRV_KERNELS_MAX, else NQ_ERANGE); NQ_ESCHEMA on a database older than 015. */
int srv_job_kernels_set(srv_store_t *st, int64_t job_id, int k);

/* The job's state becomes `archived` at now (srv_job_archive, store_api.h, checks first). */
int srv_job_set_archived(srv_store_t *st, int64_t job_id, int64_t now);
/* Delete the job's rows, `batch` units per transaction (0 = SRV_JOB_BATCH), then the job itself;
 * outside a transaction only. Leases are not looked at (srv_job_delete, store_api.h, does). */
int srv_job_drop(srv_store_t *st, const srv_job_t *job, int batch);
/* Give the flat jobs made before schema 5 their split nodes; after the migrations
 * (srv_store_open). */
int srv_job_fill_internal(srv_store_t *st);

#endif
