/* nq: a fleet of volunteers, for plans in calendar time (nq-solve N --plan --fleet SPEC).
 *
 * A plan says how many nodes a job is (nq/plan.h); a fleet says how fast they get done: cores
 * (or devices) by kernel, each at a node rate, the share of the time they compute, and how many
 * results each unit needs (the quorum, plus spot checks). SPEC is a comma-separated list
 * (docs/planning.md, "Plans in calendar time"):
 *
 *   KERNEL=COUNT[@RATE]  COUNT cores (or devices) running KERNEL, each at RATE nodes/s.
 *                        KERNEL is avx512, avx2, scalar, neon, gpu or ref (the reference core,
 *                        NQ_REF_NODES_PER_SEC); avx512, avx2, scalar and ref have a typical
 *                        rate (nq_fleet_kernel_rate), neon and gpu need @RATE.
 *   rate=RATE            a measured node rate of the whole of some machines (nodes/s)
 *   quorum=Q             results per unit, 1..16 (default 2, nq-server's)
 *   spot=F               share of the units that get one more result as a spot check, 0..1
 *                        (default 0)
 *   duty=F               share of the time the fleet computes, 0 < F <= 1 (default 1)
 *
 * e.g. "avx2=2000,avx512=500,gpu=4@2e10,quorum=2,spot=0.05,duty=0.5". Numbers take C syntax
 * (1e9, 2.5e9). Pure arithmetic: no I/O, no state.
 */
#ifndef NQ_FLEET_H
#define NQ_FLEET_H

#include <stddef.h>

#define NQ_FLEET_MAX_PARTS 8
#define NQ_FLEET_DEFAULT_QUORUM 2

typedef struct nq_fleet_part_s {
  char kernel[16];
  double count; /* cores or devices */
  double rate;  /* nodes/s of each */
} nq_fleet_part_t;

typedef struct nq_fleet_s {
  nq_fleet_part_t part[NQ_FLEET_MAX_PARTS];
  int nparts;
  double extra_rate; /* rate=: nodes/s */
  int quorum;
  double spot;
  double duty;
} nq_fleet_t;

/* What a job of est_nodes nodes costs this fleet (nq_fleet_calendar). */
typedef struct nq_fleet_cal_s {
  double rate;           /* nodes/s of the whole fleet while it computes */
  double replicas;       /* results per unit on average: quorum + spot */
  double nodes;          /* est_nodes x replicas */
  double ref_core_years; /* nodes on the reference core, in years of 365.25 days */
  double seconds;        /* calendar time: nodes / (rate x duty) */
} nq_fleet_cal_t;

/* Parse SPEC into *f. Returns 0, or NQ_EINVAL with a message naming the bad item (an unknown
 * kernel or key, a count or rate out of range, a neon or gpu part without @RATE, no compute at
 * all, more than NQ_FLEET_MAX_PARTS parts, a key given twice). */
int nq_fleet_parse(const char *spec, nq_fleet_t *f, char *errbuf, size_t errlen);
/* The typical nodes/s of one core of a kernel (measured, docs/planning.md), 0 when there is none
 * (neon, gpu, an unknown name). */
double nq_fleet_kernel_rate(const char *kernel);
/* The fleet's figures for a job of est_nodes nodes (> 0). */
void nq_fleet_calendar(const nq_fleet_t *f, double est_nodes, nq_fleet_cal_t *out);
/* The slowest part's rate per core or device (0 when the fleet is only rate=): the time of the
 * largest unit on the machine that takes longest. */
double nq_fleet_slowest(const nq_fleet_t *f, const char **kernel);

#endif
