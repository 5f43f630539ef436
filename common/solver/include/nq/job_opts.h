/* nq: the options that define a job -- N, how its units are cut, its quorum -- declared once
 * for every program that takes them: nq-server (the job it starts with) and nq-admin job add
 * (a job queued for later). They are entries of an option table (nq/opts.h) into an
 * nq_jobopts_t: name, bounds, default and help once; parsing, range errors, --help and the man
 * pages come from it, so both programs read the same options the same way
 * (docs/operations.md, "The job queue").
 */
#ifndef NQ_JOB_OPTS_H
#define NQ_JOB_OPTS_H

#include <stddef.h>
#include <stdio.h>

#include "nq/opts.h"

/* A job's settings as given; 0 means "not given" for depth, unit_seconds and max_depth. */
typedef struct nq_jobopts_s {
  int n;               /* NQ_UNIT_MIN_N..NQ_MAX_N; 0 = not given */
  int depth;           /* > 0: a flat job, every unit at this depth */
  double unit_seconds; /* > 0: units sized to about this many reference core-seconds */
  int max_depth;       /* with unit_seconds: the deepest unit (0 = N - 1) */
  int quorum;          /* agreeing results per unit (default 2, the table's) */
  int max_results;     /* results without a quorum before a unit is disputed (default 5) */
  int diverse_kernels; /* 0..NQ_JOBOPT_KERNELS_MAX kernels a unit's agreeing results must come
                          from; -1 (default) = N's default: 2 with no published count, else 0 */
} nq_jobopts_t;

#define NQ_JOBOPT_QUORUM_MAX 100
#define NQ_JOBOPT_MAX_RESULTS_MAX 1000
#define NQ_JOBOPT_KERNELS_MAX 8

/* The job options' table (nq/opts.h) into an nq_jobopts_t; entry 0 is --n, so
 * nq_jobopts_table + 1 is the table without it (nq-admin job add takes N as an argument). */
extern const nq_opt_t nq_jobopts_table[];

/* Indexes into nq_jobopts_table, in its order. */
enum {
  NQ_JOBOPT_N = 0,
  NQ_JOBOPT_UNIT_SECONDS,
  NQ_JOBOPT_MAX_DEPTH,
  NQ_JOBOPT_DEPTH,
  NQ_JOBOPT_QUORUM,
  NQ_JOBOPT_MAX_RESULTS,
  NQ_JOBOPT_DIVERSE_KERNELS,
  NQ_JOBOPT_COUNT
};

/* Defaults (the table's): nothing given but quorum and max_results; diverse_kernels -1 (N's
 * default). */
void nq_jobopts_default(nq_jobopts_t *o);

/* Set the option at index `key` of the table from its text, as the command line would: 0, or
 * NQ_EINVAL / NQ_ERANGE with "--NAME: why" in err; a refused value changes nothing. */
int nq_jobopt_set(nq_jobopts_t *o, int key, const char *value, char *err, size_t errlen);

/* The checks across options, once all are read: N given, max_results >= quorum, --depth alone
 * or --unit-seconds with --max-depth, depths valid for N. 0, or NQ_EINVAL / NQ_ERANGE with a
 * one-line reason in err. */
int nq_jobopts_check(const nq_jobopts_t *o, char *err, size_t errlen);

/* The kernel rule a job of N gets from --diverse-kernels K: K itself when given (>= 0), else N's
 * default: 2 for an N with no published count (a record), 0 otherwise. nq-server and nq-solve's
 * plans (--fleet) both take it from here. */
int nq_jobopts_kernels_default(int diverse_kernels, int n);

/* The --help lines of the job options (with_n: --n too), two spaces in, aligned at column 25. */
void nq_jobopts_usage(FILE *f, int with_n);

#endif
