/* nq-solve: the solver alone on one machine, and the planning tools (estimates, sized units).
 *   nq-solve N [--threads T] [--depth d] [--json] [--reference]     count N
 *   nq-solve --unit TEXT [...]                                       count one unit
 *   nq-solve N|--unit TEXT --checkpoint FILE [--checkpoint-seconds S] a count across restarts
 *   nq-solve N --depth d --list-units                                the units of N at depth d
 *   nq-solve N --depth d --sample K/P                                a slice of N (its units K mod P)
 *   nq-solve N [--depth d] --estimate [...]                          estimated cost (solve_plan.c)
 *   nq-solve N --unit-seconds S [--max-depth D] --plan|--list-units  units sized to S
 *   nq-solve N --gpu all [--threads 0]                               count on OpenCL devices
 *   nq-solve --gpu-list                                              the OpenCL devices
 */
#include "nq/sys.h"
#include "nq/gpu.h"
#include "nq/job_opts.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/opts.h"
#include "nq/plan.h"
#include "nq/solver.h"
#include "nq/solver_pool.h"
#include "nq/unit.h"
#include "solve.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct progress_s {
  double start;
  int shown;
} progress_t;

static void on_progress(uint64_t nodes, void *arg) {
  progress_t *p = arg;
  double dt = nq_now_mono() - p->start;
  if (dt < 1.0) return;
  fprintf(stderr, "\r%.1f s, %.3g nodes, %.3g nodes/s   ", dt, (double)nodes, (double)nodes / dt);
  p->shown = 1;
}

/* SIGINT/SIGTERM during a checkpointed solve: stop taking tasks; the checkpoint is saved. */
static volatile int stop_flag;
static void on_stop_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

static int list_cb(const nq_unit_t *u, void *arg) {
  char buf[NQ_UNIT_TEXT_MAX];
  nq_unit_format(u, buf, sizeof buf);
  puts(buf);
  (*(long *)arg)++;
  return 0;
}

/* What the devices did in a solve (device_s < 0: no device). */
typedef struct devstat_s {
  double device_s;           /* seconds of their launches, added */
  uint64_t launches, tails;  /* launches, and tails (nq_gpu_tails) */
} devstat_t;

static void print_result(const solve_cfg_t *cfg, const nq_counts_t *c, double secs, int threads,
                         const char *kernel, const devstat_t *ds) {
  const char *unit = cfg->unit_text;
  int n = cfg->n;
  nq_totals_t t;
  memset(&t, 0, sizeof t);
  nq_totals_add(&t, c);
  char total[40], uniq[40];
  nq_u128_str(nq_totals_total(&t), total);
  nq_u128_str(nq_totals_unique(&t), uniq);
  const nq_known_t *k = unit || cfg->sample_p ? NULL : nq_known(n);
  int match = k && !strcmp(k->total, total) && !strcmp(k->unique, uniq);
  if (cfg->json) {
    json_t *o = json_pack("{s:i, s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:i, s:s}", "n", n, "total",
                          total, "unique", uniq, "c2", (json_int_t)c->c2, "c4", (json_int_t)c->c4,
                          "c8", (json_int_t)c->c8, "nodes", (json_int_t)c->nodes, "seconds", secs,
                          "threads", threads, "solver", NQ_SOLVER_VERSION);
    json_object_set_new(o, "kernel", json_string(kernel));
    if (ds->device_s >= 0) {
      json_object_set_new(o, "device_seconds", json_real(ds->device_s));
      json_object_set_new(o, "device_launches", json_integer((json_int_t)ds->launches));
      json_object_set_new(o, "device_tails", json_integer((json_int_t)ds->tails));
    }
    if (unit) json_object_set_new(o, "unit", json_string(unit));
    if (cfg->sample_p) {
      char sample[32];
      snprintf(sample, sizeof sample, "%u/%u", cfg->sample_k, cfg->sample_p);
      json_object_set_new(o, "sample", json_string(sample));
      json_object_set_new(o, "depth", json_integer(solve_depth(cfg)));
    }
    if (c->count1) json_object_set_new(o, "count1", json_integer((json_int_t)c->count1));
    if (k) json_object_set_new(o, "matches_published", json_boolean(match));
    char *s = json_dumps(o, JSON_COMPACT);
    puts(s);
    free(s);
    json_decref(o);
    return;
  }
  if (unit) printf("unit     %s\n", unit);
  if (cfg->sample_p)
    printf("sample   %u/%u of the depth-%d units (counts of those units alone)\n", cfg->sample_k,
           cfg->sample_p, solve_depth(cfg));
  printf("N        %d\nTOTAL    %s\nUNIQUE   %s\nCOUNT2   %llu\nCOUNT4   %llu\nCOUNT8   %llu\n", n,
         total, uniq, (unsigned long long)c->c2, (unsigned long long)c->c4,
         (unsigned long long)c->c8);
  if (c->count1) printf("COUNT1   %llu   (N=1: one solution, fixed by every symmetry)\n",
                        (unsigned long long)c->count1);
  printf("nodes    %llu\nseconds  %.3f\nthreads  %d\nkernel   %s\n", (unsigned long long)c->nodes,
         secs, threads, kernel);
  if (ds->device_s >= 0)
    printf("device   %.3f s in %llu launches, %llu of them tails (the devices' added; beside "
           "them the host's work)\n",
           ds->device_s, (unsigned long long)ds->launches, (unsigned long long)ds->tails);
  if (k) printf("published %s (OEIS A000170/A002562)\n", match ? "MATCH" : "MISMATCH");
}

/* What computed a count: the reference, the CPU kernel, the devices that solved part of it (each
 * "opencl:NAME"), joined by '+'. */
static void kernel_label(const solve_cfg_t *cfg, nq_gpu_t *const *gpus, int ngpus, char *buf,
                         size_t len) {
  buf[0] = '\0';
  if (cfg->reference) {
    snprintf(buf, len, "reference");
    return;
  }
  int cpu = cfg->threads > 0; /* a failed device's tasks went to the CPU too */
  for (int i = 0; i < ngpus; i++) cpu |= nq_gpu_failed(gpus[i], NULL);
  nq_backend_label(gpus, ngpus, NULL, cpu, buf, len);
}

/* nq-solve --gpu-list */
static int run_gpu_list(void) {
  nq_gpu_info_t d[NQ_GPU_MAX_DEVICES];
  int n = 0;
  if (nq_gpu_list(d, NQ_GPU_MAX_DEVICES, &n) != 0) {
    char why[400];
    nq_gpu_available(why, sizeof why);
    printf("no OpenCL: %s\n", why);
    return 0;
  }
  if (n == 0) printf("no OpenCL device (no driver installed: a GPU's vendor driver, or "
                     "pocl-opencl-icd for the CPU)\n");
  for (int i = 0; i < n; i++)
    printf("%d  %s  [%s]  %s, driver %s, %s, %u compute units, %.1f GiB\n", d[i].index,
           d[i].name, d[i].is_gpu ? "gpu" : "cpu", d[i].platform, d[i].driver, d[i].version,
           d[i].compute_units, (double)d[i].global_mem / (1024.0 * 1024 * 1024));
  return 0;
}

/* --sample K/P: the units of N at --depth whose place in the generator's order is K modulo P,
 * each counted as the generator reaches it (nothing held per unit). */
typedef struct sample_s {
  unsigned k, p;
  unsigned long long index;
  int reference;
  nq_solve_opts_t so;
  nq_counts_t sum;
} sample_t;

static int sample_cb(const nq_unit_t *u, void *arg) {
  sample_t *s = arg;
  if (s->index++ % s->p != s->k) return 0;
  nq_counts_t r;
  int rc = s->reference ? nq_ref_solve_unit(u, &r) : nq_solve_unit(u, &s->so, &r);
  if (!rc) nq_counts_add(&s->sum, &r);
  return rc;
}

/* Counts the sample's units one after the other (each with the solve's threads, no progress
 * lines: each would restart at the unit's own nodes) into *res; the P samples of an N add up to
 * its counts and nodes. */
static int solve_sample(const solve_cfg_t *cfg, const nq_solve_opts_t *opts, nq_counts_t *res) {
  sample_t s = {.k = cfg->sample_k, .p = cfg->sample_p, .reference = cfg->reference, .so = *opts};
  s.so.progress = NULL;
  int rc = nq_units_generate(cfg->n, solve_depth(cfg), sample_cb, &s);
  *res = s.sum;
  return rc;
}

/* Count N, one unit or a sample of N's units. */
static int run_solve(const solve_cfg_t *cfg) {
  nq_gpu_t *gpus[16];
  int ngpus = 0;
  char err[512];
  if (cfg->gpu && !cfg->reference) {
    int rc = nq_gpu_open_spec(cfg->gpu, NULL, gpus, 16, &ngpus, err, sizeof err);
    if (rc) {
      fprintf(stderr, "nq-solve: %s\n", err);
      return 2;
    }
    if (ngpus == 0 && cfg->threads == 0) {
      fprintf(stderr, "nq-solve: --threads 0 and no OpenCL device passed its self-test\n");
      return 1;
    }
  }
  progress_t pr = {nq_now_mono(), 0};
  nq_solve_opts_t so = {cfg->threads, on_progress, &pr, NULL, NULL, gpus, ngpus};
  nq_counts_t res;
  int rc, threads = cfg->threads;
  nq_subject_t subj;
  if (cfg->checkpoint &&
      (cfg->unit_text ? nq_subject_unit(&subj, &cfg->unit)
                      : nq_subject_whole(&subj, cfg->n, solve_depth(cfg))) == 0) {
    signal(SIGINT, on_stop_signal);
    signal(SIGTERM, on_stop_signal);
    so.cancel = &stop_flag;
    double spent;
    rc = nq_solve_checkpointed(&subj, &so, cfg->checkpoint, cfg->checkpoint_seconds, &res, &spent);
    if (rc == NQ_ECANCELED) {
      fprintf(stderr, "\nnq-solve: stopped; %s holds what is finished\n", cfg->checkpoint);
      return 1;
    }
  } else if (cfg->sample_p) {
    if (cfg->reference) threads = 1;
    rc = solve_sample(cfg, &so, &res);
  } else if (cfg->reference) {
    threads = 1;
    rc = cfg->unit_text ? nq_ref_solve_unit(&cfg->unit, &res) : nq_ref_solve_n(cfg->n, &res);
  } else {
    rc = cfg->unit_text ? nq_solve_unit(&cfg->unit, &so, &res)
                        : nq_solve_n(cfg->n, solve_depth(cfg), &so, &res);
  }
  double secs = nq_now_mono() - pr.start;
  if (pr.shown) fputc('\n', stderr);
  char kernel[512];
  kernel_label(cfg, gpus, ngpus, kernel, sizeof kernel);
  devstat_t ds = {ngpus ? 0 : -1, 0, 0};
  for (int i = 0; i < ngpus; i++) {
    uint64_t gn;
    double gs;
    nq_gpu_rate(gpus[i], &gn, &gs);
    ds.device_s += gs;
    ds.launches += nq_gpu_launches(gpus[i]);
    ds.tails += nq_gpu_tails(gpus[i]);
    nq_gpu_close(gpus[i]);
  }
  if (rc) {
    fprintf(stderr, "nq-solve: %s\n", nq_strerror(rc));
    return 1;
  }
  print_result(cfg, &res, secs, threads, kernel, &ds);
  return 0;
}

/* The units of N at --depth. */
static int run_list(const solve_cfg_t *cfg) {
  long count = 0;
  int rc = nq_units_generate(cfg->n, solve_depth(cfg), list_cb, &count);
  if (rc) {
    fprintf(stderr, "nq-solve: %s\n", nq_strerror(rc));
    return 1;
  }
  fprintf(stderr, "%ld units\n", count);
  return 0;
}

/* The modes, chosen by the flags (see pick_mode). */
typedef struct mode_s {
  const char *name;
  int needs_units; /* works on N's units (N >= NQ_UNIT_MIN_N) */
  int (*run)(const solve_cfg_t *cfg);
} solve_mode_t;

static const solve_mode_t modes[] = {
    {"solve", 0, run_solve},
    {"list-units", 1, run_list},
    {"estimate", 1, solve_estimate},
    {"plan", 1, solve_plan},
};

static const solve_mode_t *mode_named(const char *name) {
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
    if (!strcmp(modes[i].name, name)) return &modes[i];
  return NULL;
}

static int set_sample(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  (void)opt;
  solve_cfg_t *cfg = base;
  unsigned k, p;
  int end = 0;
  if (sscanf(v, "%u/%u%n", &k, &p, &end) != 2 || v[end] || !isdigit((unsigned char)v[0]) ||
      p < 1 || p > 1000000 || k >= p)
    return nq_errorf(err, len, NQ_EINVAL, "expected K/P with 0 <= K < P <= 1000000, got '%s'", v);
  cfg->sample_k = k;
  cfg->sample_p = p;
  return 0;
}

static int set_fleet(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  solve_cfg_t *cfg = base;
  char why[300];
  if (nq_fleet_parse(v, &cfg->fleet, why, sizeof why))
    return nq_errorf(err, len, NQ_EINVAL, "%s", why);
  cfg->fleet_spec = v;
  return 0;
}

/* The mode flags, weighed against each other after parsing. */
typedef struct solve_args_s {
  int estimate, plan, gpu_list;
} solve_args_t;

#define V_INT(nm, ltr, field, a, l, h, hlp)                                                      \
  {NQ_OPT_INT, nm, ltr, .off = offsetof(solve_cfg_t, field), .arg = a, .lo = l, .hi = h,          \
   .help = hlp}
#define V_DBL(nm, field, a, l, h, hlp)                                                           \
  {NQ_OPT_DOUBLE, nm, .off = offsetof(solve_cfg_t, field), .arg = a, .dlo = l, .dhi = h,          \
   .help = hlp}
#define V_FLAG(nm, ltr, field, hlp)                                                              \
  {NQ_OPT_FLAG, nm, ltr, .off = offsetof(solve_cfg_t, field), .help = hlp}

/* unsigned fields filled as int (NQ_OPT_INT): the same size and representation in range. */
_Static_assert(sizeof(unsigned) == sizeof(int), "unsigned is an int's size");

static const nq_opt_t solve_table[] = {
    {NQ_OPT_SECTION, .help = "options:"},
    V_INT("threads", 't', threads, "T", 0, 256,
          "CPU threads (default: online CPUs; 0 with --gpu: the devices alone)"),
    {NQ_OPT_STRING, "gpu", .off = offsetof(solve_cfg_t, gpu), .arg = "auto|off|all|LIST",
     .help = "count on OpenCL devices too (default off): auto = every GPU or accelerator, all = "
             "CPU devices (pocl) too, LIST = indexes such as 0,1; each device must pass a "
             "self-test first"},
    V_INT("depth", 'd', depth, "D", 2, NQ_MAX_N,
          "unit depth, 2..N-1: of --list-units (default 2), of the units --estimate reports on "
          "(default 2), the start depth of a plan (default: automatic, the first depth whose "
          "nodes average at most 16x the target); for a solve, how deep tasks are split"),
    {NQ_OPT_STRING, "unit", 'u', .off = offsetof(solve_cfg_t, unit_text), .arg = "TEXT",
     .help = "count one work unit (N:part:BOUND1:columns)"},
    V_FLAG("list-units", 'l', list,
           "print the units of N at --depth (or of the plan), one a line"),
    V_FLAG("reference", 'r', reference, "use the plain reference solver (single thread)"),
    {NQ_OPT_UINT64, "seed", .off = offsetof(solve_cfg_t, seed), .arg = "S",
     .def = NQ_STR(NQ_EST_DEFAULT_SEED), .help = "seed of the estimates; same seed, same estimates"},
    V_INT("effort", 0, effort, "P", 1, NQ_EST_MAX_PROBES,
          "probes per estimated unit (default: --estimate " NQ_STR(NQ_EST_DEFAULT_BUDGET)
          " / units, at least " NQ_STR(NQ_EST_MIN_PROBES) "); of a plan, per split decision "
          "(default " NQ_STR(NQ_PLAN_DEFAULT_PROBES) ")"),
    V_INT("unit-effort", 0, unit_effort, "P", 1, NQ_EST_MAX_PROBES,
          "probes of each plan unit's own estimate (default " NQ_STR(NQ_PLAN_DEFAULT_UNIT_PROBES)
          ")"),
    V_DBL("calibrate", calib_seconds, "SECS", 0, 60,
          "time the fast kernel on sampled sub-units for core-seconds on this machine "
          "(default: 0.5% of N's estimated time, 2-20 ms; 0: skip)"),
    V_DBL("unit-seconds", unit_seconds, "S", 1e-9, 1e9,
          "plan units of about S core-seconds of the reference core (1e9 nodes/s); a unit "
          "whose estimate is above is split"),
    V_DBL("unit-nodes", unit_nodes, "X", 0, 1e30, "the same target in nodes"),
    V_INT("max-depth", 0, max_depth, "D", 2, NQ_MAX_N,
          "a plan splits no unit below depth D (default N-1)"),
    {NQ_OPT_UINT64, "max-units", .off = offsetof(solve_cfg_t, max_units), .arg = "M", .def = "100000000", .help = "a plan of more units is an error"},
    V_FLAG("verify", 0, verify,
           "also solve every unit of the plan and N whole: the units and the split nodes must "
           "give nq-solve N's counts and nodes exactly"),
    V_INT("audit", 0, audit, "K", 1, 1000000000,
          "estimate every K-th unit of the plan again with 4096 probes and compare (for N too "
          "big to --verify)"),
    {NQ_OPT_STRING, "fleet", .arg = "SPEC", .set = set_fleet,
     .help = "the plan in calendar time on a fleet: KERNEL=COUNT[@RATE] (avx512, avx2, scalar, "
             "ref; neon, gpu with @RATE nodes/s each), rate=R, quorum=Q (default 2), spot=F "
             "(0..1, default 0.02), duty=F (0..1), comma-separated, e.g. "
             "avx2=2000,avx512=500,quorum=2,spot=0.05,duty=0.5; with --plan or --estimate"},
    V_INT("diverse-kernels", 0, diverse_kernels, "K", 0, NQ_JOBOPT_KERNELS_MAX,
          "price the kernel rule as nq-server's --diverse-kernels K does (default: the server's "
          "for N, 2 with no published count, else 0)"),
    V_DBL("split-outliers", split_outliers, "K", 1, 1e6,
          "a plan looks again at a unit estimated above K x the target (256 probes) and splits "
          "it when that is above the target"),
    {NQ_OPT_STRING, "sample", .arg = "K/P", .set = set_sample,
     .help = "count only the units of N at --depth whose place in their order is K modulo P "
             "(a slice of N for timing; the P slices add up to N)"},
    V_FLAG("json", 'j', json, "print JSON (for --list-units of a plan: one object a line)"),
    {NQ_OPT_STRING, "checkpoint", .off = offsetof(solve_cfg_t, checkpoint), .arg = "FILE",
     .help = "save what is finished in FILE every --checkpoint-seconds and on SIGINT/SIGTERM; "
             "resume from FILE when it holds this count"},
    {NQ_OPT_DOUBLE, "checkpoint-seconds", .off = offsetof(solve_cfg_t, checkpoint_seconds),
     .arg = "S", .dlo = 0.01, .dhi = 1e6, .def = "60", .help = "seconds between two saves"},
    {NQ_OPT_END}};

static const nq_opt_t solve_args_table[] = {
    {NQ_OPT_FLAG, "gpu-list", .off = offsetof(solve_args_t, gpu_list),
     .help = "the OpenCL devices: index, name, platform, driver, compute units"},
    {NQ_OPT_FLAG, "estimate", .off = offsetof(solve_args_t, estimate),
     .help = "estimate the node count and core-seconds of N and of its units"},
    {NQ_OPT_FLAG, "plan", .off = offsetof(solve_args_t, plan),
     .help = "print the plan's summary (units per depth, estimated sizes; without "
             "--unit-seconds/--unit-nodes, units of " NQ_STR(NQ_PLAN_DEFAULT_UNIT_SECONDS) " s)"},
    {NQ_OPT_END}};

static void print_version(const char *prog) {
  printf("%s %s\nsolver %s\n", prog, NQ_VERSION_STRING, NQ_SOLVER_VERSION);
}

static void opts_init(nq_opts_t *o, solve_cfg_t *cfg, solve_args_t *args) {
  memset(o, 0, sizeof *o);
  o->prog = "nq-solve";
  o->summary = "count N-Queens solutions, alone";
  o->usage = "nq-solve N [options]        count all solutions of N queens (1 <= N <= "
             NQ_STR(NQ_MAX_N) ")\n"
             "       nq-solve --unit TEXT [options]  count one work unit (N:part:BOUND1:columns)\n"
             "       nq-solve N --depth D --sample K/P [options]  count a slice of N's units\n"
             "       nq-solve N --estimate [--depth D] [--seed S] [--effort P] [--calibrate SECS]\n"
             "       nq-solve N --unit-seconds S [--depth D] [--max-depth D] --plan|--list-units\n"
             "       nq-solve N --plan [--unit-seconds S] --fleet SPEC   the plan in calendar time\n"
             "       nq-solve --gpu-list";
  o->version = print_version;
  o->group[0] = (nq_opt_group_t){solve_table, cfg};
  o->group[1] = (nq_opt_group_t){solve_args_table, args};
}

/* Parse argv into cfg and the mode's name; returns 0, or an exit status (done: -1). */
static int parse(int argc, char **argv, solve_cfg_t *cfg, const char **mode, int *first) {
  nq_opts_t o;
  solve_args_t args = {0};
  opts_init(&o, cfg, &args);
  int rc = nq_opts_main(&o, argc, argv, 2);
  if (rc >= 0) return rc == 0 ? -1 : rc;
  if (args.gpu_list) return run_gpu_list() ? 1 : -1;
  *first = o.optind;
  cfg->threads_given = nq_opts_given(&o, "threads") > 0;
  int estimate = args.estimate, plan = args.plan;
  if (cfg->threads == 0 && (!cfg->gpu || !strcmp(cfg->gpu, "off"))) {
    fprintf(stderr, "nq-solve: --threads 0 needs --gpu (a count on the devices alone)\n");
    return 2;
  }
  if (cfg->gpu && cfg->reference) {
    fprintf(stderr, "nq-solve: --reference is the CPU's plain solver; it does not go with --gpu\n");
    return 2;
  }
  if (cfg->checkpoint && (cfg->reference || !*cfg->checkpoint)) {
    fprintf(stderr, "nq-solve: --checkpoint needs a file name and the fast solver\n");
    return 2;
  }
  /* A plan without a size gets the server's default unit size. */
  if (plan && cfg->unit_seconds <= 0 && cfg->unit_nodes < 0)
    cfg->unit_seconds = NQ_PLAN_DEFAULT_UNIT_SECONDS;
  int sized = cfg->unit_seconds > 0 || cfg->unit_nodes >= 0;
  if ((cfg->fleet_spec && !estimate && (!sized || cfg->list)) ||
      (cfg->split_outliers > 0 && !sized)) {
    fprintf(stderr, "nq-solve: --fleet goes with --plan (a summary, not --list-units) or "
                    "--estimate, --split-outliers with a plan\n");
    return 2;
  }
  if (estimate && (plan || sized || cfg->list)) {
    fprintf(stderr, "nq-solve: --estimate does not go with --plan, --unit-seconds or "
                    "--list-units\n");
    return 2;
  }
  if ((plan || cfg->verify || cfg->audit) && !sized) {
    fprintf(stderr, "nq-solve: --verify and --audit need --plan, --unit-seconds S or "
                    "--unit-nodes X\n");
    return 2;
  }
  if (cfg->verify && cfg->audit) {
    fprintf(stderr, "nq-solve: --verify (exact) or --audit (estimates), not both\n");
    return 2;
  }
  if (cfg->unit_seconds > 0 && cfg->unit_nodes >= 0) {
    fprintf(stderr, "nq-solve: give --unit-seconds or --unit-nodes, not both\n");
    return 2;
  }
  *mode = estimate ? "estimate" : sized ? "plan" : cfg->list ? "list-units" : "solve";
  if (cfg->gpu && strcmp(*mode, "solve")) {
    fprintf(stderr, "nq-solve: --gpu goes with a count, not with --%s\n", *mode);
    return 2;
  }
  if (cfg->sample_p && (strcmp(*mode, "solve") || cfg->unit_text || cfg->checkpoint)) {
    fprintf(stderr, "nq-solve: --sample goes with a count of N alone (not with --unit, "
                    "--checkpoint, --estimate, --plan or --list-units)\n");
    return 2;
  }
  if (cfg->checkpoint && strcmp(*mode, "solve")) {
    fprintf(stderr, "nq-solve: --checkpoint goes with a count, not with --%s\n", *mode);
    return 2;
  }
  return 0;
}

/* N (or the unit) from the operands, and the depths checked against it. */
static int parse_target(int argc, char **argv, int optind, solve_cfg_t *cfg,
                        const solve_mode_t *m) {
  char err[200];
  if (cfg->unit_text) {
    if (m->needs_units || optind != argc) {
      fprintf(stderr, "nq-solve: --unit TEXT only counts the unit (no N, no --%s)\n",
              m->needs_units ? m->name : "N");
      return 2;
    }
    if (nq_unit_parse(cfg->unit_text, &cfg->unit, err, sizeof err)) {
      fprintf(stderr, "nq-solve: bad unit '%s': %s\n", cfg->unit_text, err);
      return 2;
    }
    cfg->n = cfg->unit.n;
    return 0;
  }
  static const nq_opt_t n_opt = {NQ_OPT_INT, "N", .off = offsetof(solve_cfg_t, n),
                                 .lo = NQ_MIN_N, .hi = NQ_MAX_N};
  if (optind != argc - 1) {
    fprintf(stderr, "nq-solve: give N or --unit TEXT (nq-solve --help lists the options)\n");
    return 2;
  }
  if (nq_opt_set(&n_opt, cfg, argv[optind], err, sizeof err) != 0) {
    fprintf(stderr, "nq-solve: %s\n", err + 2); /* "N: expected an integer 1..32, got 'x'" */
    return 2;
  }
  int units = m->needs_units || cfg->sample_p; /* the mode works on N's units */
  if (!units && cfg->n < NQ_UNIT_MIN_N) return 0; /* N = 1..3: answered directly */
  const int depths[2] = {cfg->depth, cfg->max_depth};
  for (int i = 0; i < 2; i++) {
    if ((depths[i] || units) &&
        nq_unit_depth_check(cfg->n, depths[i] ? depths[i] : 2, err, sizeof err)) {
      fprintf(stderr, "nq-solve: %s%s\n", i ? "--max-depth: " : "", err);
      return 2;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  solve_cfg_t cfg;
  memset(&cfg, 0, sizeof cfg);
  nq_log_init("nq-solve", NQ_LOG_INFO);
  cfg.threads = nq_sys_ncpu();
  cfg.calib_seconds = -1; /* automatic (solve_estimate) */
  cfg.unit_nodes = -1; /* not given */
  cfg.diverse_kernels = -1; /* N's default */
  const char *name = NULL;
  int first = argc;
  int rc = parse(argc, argv, &cfg, &name, &first);
  if (rc) return rc < 0 ? 0 : rc;
  const solve_mode_t *m = mode_named(name);
  if ((rc = parse_target(argc, argv, first, &cfg, m)) != 0) return rc;
  /* The rule a plan prices is the one nq-server would give the job. */
  cfg.fleet.kernels = nq_jobopts_kernels_default(cfg.diverse_kernels, cfg.n);
  return m->run(&cfg);
}
