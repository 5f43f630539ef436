/* nq: the options that define a job -- N, how its units are cut, its quorum -- declared once
 * for every program that takes them: nq-server (the job it starts with) and nq-admin job add
 * (a job queued for later). The table gives each option's name, bounds and help; parsing, range
 * errors and the --help lines are derived from it, so both programs read the same options the
 * same way (docs/operations.md, "The job queue").
 */
#ifndef NQ_JOB_OPTS_H
#define NQ_JOB_OPTS_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

/* A job's settings as given; 0 means "not given" for depth, unit_seconds and max_depth. */
typedef struct nq_jobopts_s {
  int n;               /* NQ_UNIT_MIN_N..NQ_MAX_N; 0 = not given */
  int depth;           /* > 0: a flat job, every unit at this depth */
  double unit_seconds; /* > 0: units sized to about this many reference core-seconds */
  int max_depth;       /* with unit_seconds: the deepest unit (0 = N - 1) */
  int quorum;          /* agreeing results per unit (default NQ_JOBOPT_QUORUM_DEFAULT) */
  int max_results;     /* results without a quorum before a unit is disputed (default 5) */
  int diverse_kernels; /* 0..NQ_JOBOPT_KERNELS_MAX kernels a unit's agreeing results must come
                          from; -1 (default) = N's default: 2 with no published count, else 0 */
} nq_jobopts_t;

#define NQ_JOBOPT_QUORUM_DEFAULT 2
#define NQ_JOBOPT_MAX_RESULTS_DEFAULT 5
#define NQ_JOBOPT_QUORUM_MAX 100
#define NQ_JOBOPT_MAX_RESULTS_MAX 1000
#define NQ_JOBOPT_KERNELS_MAX 8

/* getopt_long values of the job options (above any short option or program-local key). */
enum {
  NQ_JOBOPT_N = 0x4000,
  NQ_JOBOPT_DEPTH,
  NQ_JOBOPT_UNIT_SECONDS,
  NQ_JOBOPT_MAX_DEPTH,
  NQ_JOBOPT_QUORUM,
  NQ_JOBOPT_MAX_RESULTS,
  NQ_JOBOPT_DIVERSE_KERNELS,
  NQ_JOBOPT_END
};
#define NQ_JOBOPT_COUNT (NQ_JOBOPT_END - NQ_JOBOPT_N)

/* Defaults: nothing given but quorum and max_results (diverse_kernels -1: N's default). */
void nq_jobopts_default(nq_jobopts_t *o);

/* Append the job options' getopt_long entries to opts at *n (room for NQ_JOBOPT_COUNT more);
 * with_n 0 leaves out --n (nq-admin job add takes N as an argument). */
void nq_jobopts_getopt(struct option *opts, int *n, int with_n);

/* 1 if key is one of the job options' getopt values. */
int nq_jobopt_is(int key);

/* Set the option `key` from its text: 0, or NQ_EINVAL / NQ_ERANGE with "--NAME: why" in err. */
int nq_jobopt_set(nq_jobopts_t *o, int key, const char *value, char *err, size_t errlen);

/* The checks across options, once all are read: N given, max_results >= quorum, --depth alone
 * or --unit-seconds with --max-depth, depths valid for N. 0, or NQ_EINVAL / NQ_ERANGE with a
 * one-line reason in err. */
int nq_jobopts_check(const nq_jobopts_t *o, char *err, size_t errlen);

/* The --help lines of the job options (with_n: --n too), two spaces in, aligned at column 24. */
void nq_jobopts_usage(FILE *f, int with_n);

#endif
