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
 *   KERNEL@RATE          no cores: the rate at which the fleet's machines run KERNEL when the
 *                        kernel rule names it (an AVX-512 machine's avx2), e.g. measured with
 *                        NQ_KERNEL=avx2 nq-solve N --estimate
 *   rate=RATE            a measured node rate of the whole of some machines (nodes/s)
 *   quorum=Q             results per unit, 1..16 (default 2, nq-server's)
 *   spot=F               share of the units that get one more result as a spot check, 0..1
 *                        (default 0.02: nq-server's --spot-check 2)
 *   duty=F               share of the time the fleet computes, 0 < F <= 1 (default 1)
 *
 * e.g. "avx2=2000,avx512=500,gpu=4@2e10,quorum=2,spot=0.05,duty=0.5". Numbers take C syntax
 * (1e9, 2.5e9). Pure arithmetic: no I/O, no state.
 *
 * The price (nq_fleet_calendar) follows what nq-server does with the job's replicas: each goes to
 * a core that has not had the unit (replicas of one unit come from distinct keys), chosen in
 * proportion to how often a core of its part asks for work (it asks again when it is done, so in
 * proportion to its speed on the replicas it gets). With the kernel rule on (kernels >= 2,
 * nq-server's --diverse-kernels) the server names each replica the kernel the unit lacks most
 * among those the machine can run, the machine's own first on a tie (an AVX-512 machine runs
 * avx512, avx2, scalar, the reference solver; AVX2 avx2, scalar, reference; neon neon, scalar,
 * reference; a GPU its own, then what most CPUs run on its host), and the replica costs that
 * kernel's time on that machine: the machine's rate scaled by the two kernels' rates in the fleet
 * (the rate of the fleet's first part of that kernel, else the typical one). `ref` and `rate=`
 * compute whatever is named at their rate. The expectation over a unit's replicas is taken over
 * NQ_FLEET_SAMPLES drawn units (a fixed stream: the same fleet, the same figures).
 */
#ifndef NQ_FLEET_H
#define NQ_FLEET_H

#include <stddef.h>

#define NQ_FLEET_MAX_PARTS 8
#define NQ_FLEET_DEFAULT_QUORUM 2
#define NQ_FLEET_DEFAULT_SPOT 0.02 /* nq-server's --spot-check 2 (percent) */
/* nq-server's tail reissue: a unit whose only lease out is this old goes to an idle client as an
 * extra replica (SRV_TAIL_AFTER_S is this value), so the last unit of a job waits at most this
 * long for a slow or paused holder before a fast core starts it again. */
#define NQ_FLEET_TAIL_AFTER_S 300
#define NQ_FLEET_SAMPLES 16384
#define NQ_FLEET_MAX_KERNELS 12 /* distinct kernels a fleet's replicas can run */

typedef struct nq_fleet_part_s {
  char kernel[16];
  double count; /* cores or devices; 0: KERNEL@RATE, a kernel's rate without cores */
  double rate;  /* nodes/s of each */
} nq_fleet_part_t;

typedef struct nq_fleet_s {
  nq_fleet_part_t part[NQ_FLEET_MAX_PARTS];
  int nparts;
  double extra_rate; /* rate=: nodes/s */
  int quorum;
  double spot;
  double duty;
  int kernels; /* nq-server's --diverse-kernels K: >= 2 names each replica a kernel (0: off;
                  nq_fleet_parse leaves 0, the caller sets N's default) */
} nq_fleet_t;

/* What a job of est_nodes nodes costs this fleet (nq_fleet_calendar). */
typedef struct nq_fleet_cal_s {
  double rate;           /* nodes/s of the whole fleet while it computes, own kernels */
  double replicas;       /* results per unit on average: quorum + spot */
  double nodes;          /* est_nodes x replicas */
  double ref_core_years; /* nodes on the reference core, in years of 365.25 days */
  double core_seconds;   /* the fleet's own core-seconds: each replica at the rate of the kernel
                            it runs on the machine that runs it */
  double own_core_seconds; /* the same with every replica on its machine's own kernel */
  double bulk_seconds;   /* calendar time of the work: the busiest part's core-seconds over its
                            cores, over duty */
  double tail_seconds;   /* the last unit's wait (tail reissue, NQ_FLEET_TAIL_AFTER_S); 0 for a
                            fleet of rate= alone (no core to run it on) */
  double seconds;        /* calendar time: bulk + tail */
  int nkernels;          /* kernels the replicas run, and each one's share of the replicas */
  const char *kernel[NQ_FLEET_MAX_KERNELS];
  double kernel_share[NQ_FLEET_MAX_KERNELS];
} nq_fleet_cal_t;

/* Parse SPEC into *f. Returns 0, or NQ_EINVAL with a message naming the bad item (an unknown
 * kernel or key, a count or rate out of range, a neon or gpu part without @RATE, no compute at
 * all, more than NQ_FLEET_MAX_PARTS parts, a key given twice). */
int nq_fleet_parse(const char *spec, nq_fleet_t *f, char *errbuf, size_t errlen);
/* The typical nodes/s of one core of a kernel (measured, docs/planning.md), 0 when there is none
 * (neon, gpu, an unknown name). */
double nq_fleet_kernel_rate(const char *kernel);
/* The fleet's figures for a job of est_nodes nodes (> 0) whose largest unit is largest_nodes
 * (>= 0; 0: no tail term). */
void nq_fleet_calendar(const nq_fleet_t *f, double est_nodes, double largest_nodes,
                       nq_fleet_cal_t *out);
/* The slowest part's rate per core or device (0 when the fleet is only rate=): the time of the
 * largest unit on the machine that takes longest. */
double nq_fleet_slowest(const nq_fleet_t *f, const char **kernel);

#endif
