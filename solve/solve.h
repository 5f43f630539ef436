/* nq-solve: the options every mode reads, and the modes that live outside solve_main.c. */
#ifndef NQ_SOLVE_H
#define NQ_SOLVE_H

#include <stdint.h>
#include "nq/fleet.h"
#include "nq/unit.h"

typedef struct solve_cfg_s {
  int n;
  int threads;
  int depth;           /* 0 = not given (each mode has its own default) */
  int max_depth;       /* 0 = not given */
  int json, list, reference, verify;
  const char *unit_text;
  nq_unit_t unit;      /* parsed unit_text */
  uint64_t seed;
  unsigned effort;     /* probes per unit (a plan: per split decision); 0 = the default */
  unsigned unit_effort; /* a plan: probes of a unit's own estimate; 0 = the default */
  double calib_seconds;
  double unit_seconds; /* > 0: size units to this many reference core-seconds */
  double unit_nodes;   /* >= 0: size units to this many nodes (< 0: not given) */
  uint64_t max_units;
  unsigned audit;      /* --audit K: re-estimate every K-th unit of a plan (0: no) */
  const char *gpu;           /* --gpu auto|off|all|LIST (default off) */
  int threads_given;         /* --threads was on the command line */
  const char *checkpoint;    /* --checkpoint FILE: save and resume a count (NULL: no) */
  double checkpoint_seconds; /* seconds between two saves */
  const char *fleet_spec;    /* --fleet SPEC: a plan in calendar time (NULL: no) */
  nq_fleet_t fleet;          /* ... parsed; its kernels: diverse_kernels or N's default */
  int diverse_kernels;       /* --diverse-kernels K (-1: N's default, nq_jobopts_kernels_default) */
  double split_outliers;     /* --split-outliers K (0: off; plan.h) */
  unsigned sample_k, sample_p; /* --sample K/P: every P-th unit from the K-th (p 0: a whole count) */
} solve_cfg_t;

/* The unit depth the modes use: --depth, or 2 when it was not given. */
static inline int solve_depth(const solve_cfg_t *cfg) { return cfg->depth ? cfg->depth : 2; }

/* --estimate: the estimated cost of N and of its units at --depth. Returns the exit status. */
int solve_estimate(const solve_cfg_t *cfg);
/* --plan / --unit-seconds: units sized to a target, as a summary or (--list-units) a list. */
int solve_plan(const solve_cfg_t *cfg);

#endif
