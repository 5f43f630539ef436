/* Store fixtures (tests/fx_store.c) shared by test_store.c, test_sched.c and test_admin.c. */
#ifndef NQ_FX_STORE_H
#define NQ_FX_STORE_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "nq/solver.h"
#include "sched.h"
#include "store_api.h"

#define T0 1700000000 /* the simulated clock starts here */
#define SCHEMA NQ_SOURCE_DIR "/schema"

typedef struct fx_s {
  char *dir;
  char path[600];
  srv_store_t *st;
  srv_job_t job;
  srv_sched_t sched;
  int64_t t0; /* the fixture's clock: clients are created at t0, the job too */
} fx_t;

/* A fresh empty store in a new temp dir (tag names it), clock t0. */
void fx_open(fx_t *f, const char *tag, int64_t t0);
/* Create the job and bind the scheduler to it; cfg NULL = scheduler defaults. */
void fx_job(fx_t *f, int n, int depth, int quorum, int max_results,
            const srv_sched_config_t *cfg);
/* fx_open("store", T0) + fx_job. */
void fx_init(fx_t *f, int n, int depth, int quorum, int max_results,
             const srv_sched_config_t *cfg);
/* Open the store of f->path again (after srv_store_close). */
void fx_reopen(fx_t *f);
/* Close the store and remove the directory. */
void fx_done(fx_t *f);

/* A client `name` (token hash "hash-of-NAME"); returns its id. */
int64_t fx_client(fx_t *f, const char *name);
/* A client `name` of an existing owner (fx_client makes each client an owner of its own). */
int64_t fx_client_of_owner(fx_t *f, const char *name, int64_t owner_id);
/* get_work in its own transaction: the number of assignments, or the scheduler's error. */
int fx_work(fx_t *f, int64_t client, int want, int64_t now, srv_work_t *out, srv_nowork_t *why);
/* A result in its own transaction; returns the scheduler's code. report: 0.5 s. */
/* srv_sched_result with the result's fields given one by one (strings cut to the struct's
 * sizes; backend NULL: not said), in the caller's transaction. */
int fx_sched_result(srv_sched_t *s, int64_t client, int64_t asg, const char *unit,
                    const nq_counts_t *c, double seconds, const char *solver, const char *backend,
                    int64_t now, srv_result_info_t *info);
int fx_report_secs(fx_t *f, int64_t client, int64_t asg, const char *unit, const nq_counts_t *c,
                   double seconds, const char *solver, int64_t now, srv_result_info_t *info);
int fx_report(fx_t *f, int64_t client, int64_t asg, const char *unit, const nq_counts_t *c,
              const char *solver, int64_t now, srv_result_info_t *info);
/* The true result of an assignment (fast solver, NQ_SOLVER_VERSION). */
int fx_report_true(fx_t *f, int64_t client, const srv_work_t *w, int64_t now,
                   srv_result_info_t *info);
/* The true counts of a unit (fast solver), and a wrong answer that still passes validation. */
nq_counts_t fx_solve(const char *text);
nq_counts_t fx_lie(const char *text);

srv_unit_info_t fx_unit(fx_t *f, int64_t unit_id);
srv_client_t fx_client_of(fx_t *f, int64_t id);
int64_t fx_asg_state(fx_t *f, int64_t asg_id);

/* One integer / one text from a query on a separate read-only connection. */
int64_t fx_q1(const char *path, const char *sql);
void fx_qs(const char *path, const char *sql, char *buf, size_t len);

/* The store's invariants (each unit once, counters = recounts, quorum behind every verified
 * unit, one assignment per unit, client and kind, leases only on open units). */
void fx_check_invariants(fx_t *f);
/* The status counters (job_stats, job_rate; schema 005) equal scans of units and assignments. */
void fx_check_counters(fx_t *f);
/* Clients take turns asking for work and reporting true results until the job is done; returns
 * the number of results. */
int fx_run_to_done(fx_t *f, const int64_t *cl, int ncl, int64_t *now);
/* The job of f (N = 8) is done with the published totals. */
void fx_check_n8_totals(fx_t *f);

#endif
