/* nq-solve: the solver alone on one machine, and the planning tools (estimates, sized units).
 *   nq-solve N [--threads T] [--depth d] [--json] [--reference]     count N
 *   nq-solve --unit TEXT [...]                                       count one unit
 *   nq-solve N|--unit TEXT --checkpoint FILE [--checkpoint-seconds S] a count across restarts
 *   nq-solve N --depth d --list-units                                the units of N at depth d
 *   nq-solve N [--depth d] --estimate [...]                          estimated cost (solve_plan.c)
 *   nq-solve N --unit-seconds S [--max-depth D] --plan|--list-units  units sized to S
 *   nq-solve N --gpu all [--threads 0]                               count on OpenCL devices
 *   nq-solve --gpu-list                                              the OpenCL devices
 */
#include "nq/gpu.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/plan.h"
#include "nq/solver.h"
#include "nq/solver_pool.h"
#include "nq/unit.h"
#include "solve.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: nq-solve N [options]        count all solutions of N queens (1 <= N <= %d)\n"
          "       nq-solve --unit TEXT [options]  count one work unit (N:part:BOUND1:columns)\n"
          "       nq-solve N --estimate [--depth D] [--seed S] [--effort P] [--calibrate SECS]\n"
          "       nq-solve N --unit-seconds S [--depth D] [--max-depth D] --plan|--list-units\n"
          "       nq-solve N --plan [--unit-seconds S] --fleet SPEC   the plan in calendar time\n"
          "options:\n"
          "  --threads T       CPU threads (default: online CPUs; 0 with --gpu: the devices\n"
          "                    alone)\n"
          "  --gpu auto|off|all|LIST  count on OpenCL devices too (default off): auto = every\n"
          "                    GPU or accelerator, all = CPU devices (pocl) too, LIST = indexes\n"
          "                    such as 0,1; each device must pass a self-test first\n"
          "  --gpu-list        the OpenCL devices: index, name, platform, driver, compute units\n"
          "  --depth D         unit depth, 2..N-1: of --list-units (default 2), of the units\n"
          "                    --estimate reports on (default 2), the start depth of a plan\n"
          "                    (default: automatic, the first depth whose nodes average at\n"
          "                    most 16x the target); for a solve, how deep tasks are split\n"
          "  --list-units      print the units of N at --depth (or of the plan), one a line\n"
          "  --reference       use the plain reference solver (single thread)\n"
          "  --estimate        estimate the node count and core-seconds of N and of its units\n"
          "  --seed S          seed of the estimates (default %d); same seed, same estimates\n"
          "  --effort P        probes per estimated unit (default: --estimate %d / units, at\n"
          "                    least %d); of a plan, per split decision (default %d)\n"
          "  --unit-effort P   probes of each plan unit's own estimate (default %d)\n"
          "  --calibrate SECS  time the fast kernel on sampled sub-units for core-seconds on\n"
          "                    this machine (default: 0.5%% of N's estimated time, 2-20 ms;\n"
          "                    0: skip)\n"
          "  --unit-seconds S  plan units of about S core-seconds of the reference core\n"
          "                    (%.0f nodes/s); a unit whose estimate is above is split\n"
          "  --unit-nodes X    the same target in nodes\n"
          "  --max-depth D     a plan splits no unit below depth D (default N-1)\n"
          "  --max-units M     a plan of more units is an error (default 100000000)\n"
          "  --plan            print the plan's summary (units per depth, estimated sizes;\n"
          "                    without --unit-seconds/--unit-nodes, units of %.0f s)\n"
          "  --fleet SPEC      the plan in calendar time on a fleet: KERNEL=COUNT[@RATE] (avx512,\n"
          "                    avx2, scalar, ref; neon, gpu with @RATE nodes/s each), rate=R,\n"
          "                    quorum=Q (default 2), spot=F (0..1), duty=F (0..1), comma-\n"
          "                    separated, e.g. avx2=2000,avx512=500,quorum=2,spot=0.05,duty=0.5\n"
          "  --split-outliers K  a plan looks again at a unit estimated above K x the target\n"
          "                    (256 probes) and splits it when that is above the target\n"
          "  --verify          also solve every unit of the plan and N whole: the units and\n"
          "                    the split nodes must give nq-solve N's counts and nodes exactly\n"
          "  --audit K         estimate every K-th unit of the plan again with 4096 probes\n"
          "                    and compare (for N too big to --verify)\n"
          "  --json            print JSON (for --list-units of a plan: one object a line)\n"
          "  --checkpoint FILE save what is finished in FILE every --checkpoint-seconds and on\n"
          "                    SIGINT/SIGTERM; resume from FILE when it holds this count\n"
          "  --checkpoint-seconds S  seconds between two saves (default 60)\n"
          "  --help            this text\n"
          "  --version         the software and protocol versions\n",
          NQ_MAX_N, NQ_EST_DEFAULT_SEED, NQ_EST_DEFAULT_BUDGET, NQ_EST_MIN_PROBES,
          NQ_PLAN_DEFAULT_PROBES, NQ_PLAN_DEFAULT_UNIT_PROBES, NQ_REF_NODES_PER_SEC,
          NQ_PLAN_DEFAULT_UNIT_SECONDS);
}

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

static void print_result(const solve_cfg_t *cfg, const nq_counts_t *c, double secs, int threads,
                         const char *kernel) {
  const char *unit = cfg->unit_text;
  int n = cfg->n;
  nq_totals_t t;
  memset(&t, 0, sizeof t);
  nq_totals_add(&t, c);
  char total[40], uniq[40];
  nq_u128_str(nq_totals_total(&t), total);
  nq_u128_str(nq_totals_unique(&t), uniq);
  const nq_known_t *k = unit ? NULL : nq_known(n);
  int match = k && !strcmp(k->total, total) && !strcmp(k->unique, uniq);
  if (cfg->json) {
    json_t *o = json_pack("{s:i, s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:i, s:s}", "n", n, "total",
                          total, "unique", uniq, "c2", (json_int_t)c->c2, "c4", (json_int_t)c->c4,
                          "c8", (json_int_t)c->c8, "nodes", (json_int_t)c->nodes, "seconds", secs,
                          "threads", threads, "solver", NQ_SOLVER_VERSION);
    json_object_set_new(o, "kernel", json_string(kernel));
    if (unit) json_object_set_new(o, "unit", json_string(unit));
    if (c->count1) json_object_set_new(o, "count1", json_integer((json_int_t)c->count1));
    if (k) json_object_set_new(o, "matches_published", json_boolean(match));
    char *s = json_dumps(o, JSON_COMPACT);
    puts(s);
    free(s);
    json_decref(o);
    return;
  }
  if (unit) printf("unit     %s\n", unit);
  printf("N        %d\nTOTAL    %s\nUNIQUE   %s\nCOUNT2   %llu\nCOUNT4   %llu\nCOUNT8   %llu\n", n,
         total, uniq, (unsigned long long)c->c2, (unsigned long long)c->c4,
         (unsigned long long)c->c8);
  if (c->count1) printf("COUNT1   %llu   (N=1: one solution, fixed by every symmetry)\n",
                        (unsigned long long)c->count1);
  printf("nodes    %llu\nseconds  %.3f\nthreads  %d\nkernel   %s\n", (unsigned long long)c->nodes,
         secs, threads, kernel);
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
    printf("this build has no OpenCL backend (built with NQ_OPENCL=OFF or without the loader)\n");
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

/* Count N or one unit. */
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
                      : nq_subject_whole(&subj, cfg->n, cfg->depth ? cfg->depth : 2)) == 0) {
    signal(SIGINT, on_stop_signal);
    signal(SIGTERM, on_stop_signal);
    so.cancel = &stop_flag;
    double spent;
    rc = nq_solve_checkpointed(&subj, &so, cfg->checkpoint, cfg->checkpoint_seconds, &res, &spent);
    if (rc == NQ_ECANCELED) {
      fprintf(stderr, "\nnq-solve: stopped; %s holds what is finished\n", cfg->checkpoint);
      return 1;
    }
  } else if (cfg->reference) {
    threads = 1;
    rc = cfg->unit_text ? nq_ref_solve_unit(&cfg->unit, &res) : nq_ref_solve_n(cfg->n, &res);
  } else {
    rc = cfg->unit_text ? nq_solve_unit(&cfg->unit, &so, &res)
                        : nq_solve_n(cfg->n, cfg->depth ? cfg->depth : 2, &so, &res);
  }
  double secs = nq_now_mono() - pr.start;
  if (pr.shown) fputc('\n', stderr);
  char kernel[512];
  kernel_label(cfg, gpus, ngpus, kernel, sizeof kernel);
  for (int i = 0; i < ngpus; i++) nq_gpu_close(gpus[i]);
  if (rc) {
    fprintf(stderr, "nq-solve: %s\n", nq_strerror(rc));
    return 1;
  }
  print_result(cfg, &res, secs, threads, kernel);
  return 0;
}

/* The units of N at --depth. */
static int run_list(const solve_cfg_t *cfg) {
  long count = 0;
  int rc = nq_units_generate(cfg->n, cfg->depth ? cfg->depth : 2, list_cb, &count);
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

/* Strict numbers: the whole argument, in range, else a message and exit status 2. */
static int arg_long(const char *opt, const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    fprintf(stderr, "nq-solve: --%s must be an integer in %ld..%ld (got '%s')\n", opt, lo, hi, s);
    return 2;
  }
  *out = v;
  return 0;
}

static int arg_u64(const char *opt, const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-') {
    fprintf(stderr, "nq-solve: --%s must be an unsigned integer (got '%s')\n", opt, s);
    return 2;
  }
  *out = v;
  return 0;
}

static int arg_double(const char *opt, const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi)) {
    fprintf(stderr, "nq-solve: --%s must be a number in %g..%g (got '%s')\n", opt, lo, hi, s);
    return 2;
  }
  *out = v;
  return 0;
}

enum {
  O_ESTIMATE = 256, O_SEED, O_EFFORT, O_CALIB, O_USECS, O_UNODES, O_MAXD, O_MAXU, O_PLAN,
  O_VERIFY, O_AUDIT, O_UEFFORT, O_CKPT, O_CKPT_SECS, O_VERSION, O_GPU, O_GPU_LIST, O_FLEET,
  O_SPLIT_OUT
};

/* Parse argv into cfg and the mode's name; returns 0, or an exit status (help: -1). */
static int parse(int argc, char **argv, solve_cfg_t *cfg, const char **mode) {
  static const struct option opts[] = {
      {"threads", required_argument, 0, 't'},   {"depth", required_argument, 0, 'd'},
      {"unit", required_argument, 0, 'u'},      {"list-units", no_argument, 0, 'l'},
      {"json", no_argument, 0, 'j'},            {"reference", no_argument, 0, 'r'},
      {"help", no_argument, 0, 'h'},            {"estimate", no_argument, 0, O_ESTIMATE},
      {"seed", required_argument, 0, O_SEED},   {"effort", required_argument, 0, O_EFFORT},
      {"calibrate", required_argument, 0, O_CALIB},
      {"unit-seconds", required_argument, 0, O_USECS},
      {"unit-nodes", required_argument, 0, O_UNODES},
      {"max-depth", required_argument, 0, O_MAXD},
      {"max-units", required_argument, 0, O_MAXU}, {"plan", no_argument, 0, O_PLAN},
      {"verify", no_argument, 0, O_VERIFY},
      {"audit", required_argument, 0, O_AUDIT},
      {"unit-effort", required_argument, 0, O_UEFFORT},
      {"checkpoint", required_argument, 0, O_CKPT},
      {"checkpoint-seconds", required_argument, 0, O_CKPT_SECS},
      {"version", no_argument, 0, O_VERSION},
      {"gpu", required_argument, 0, O_GPU},
      {"gpu-list", no_argument, 0, O_GPU_LIST},
      {"fleet", required_argument, 0, O_FLEET},
      {"split-outliers", required_argument, 0, O_SPLIT_OUT},
      {0, 0, 0, 0}};
  int c, rc = 0, estimate = 0, plan = 0;
  long v;
  while (!rc && (c = getopt_long(argc, argv, "t:d:u:ljrh", opts, NULL)) != -1) {
    switch (c) {
    case 't':
      if (!(rc = arg_long("threads", optarg, 0, 256, &v))) cfg->threads = (int)v;
      cfg->threads_given = 1;
      break;
    case O_GPU: cfg->gpu = optarg; break;
    case O_GPU_LIST: return run_gpu_list() ? 1 : -1;
    case 'd': if (!(rc = arg_long("depth", optarg, 2, NQ_MAX_N, &v))) cfg->depth = (int)v; break;
    case 'u': cfg->unit_text = optarg; break;
    case 'l': cfg->list = 1; break;
    case 'j': cfg->json = 1; break;
    case 'r': cfg->reference = 1; break;
    case 'h': usage(stdout); return -1;
    case O_VERSION: printf("nq-solve %s\nsolver %s\n", NQ_VERSION_STRING, NQ_SOLVER_VERSION); return -1;
    case O_ESTIMATE: estimate = 1; break;
    case O_SEED: rc = arg_u64("seed", optarg, &cfg->seed); break;
    case O_EFFORT:
      if (!(rc = arg_long("effort", optarg, 1, NQ_EST_MAX_PROBES, &v))) cfg->effort = (unsigned)v;
      break;
    case O_CALIB: rc = arg_double("calibrate", optarg, 0, 60, &cfg->calib_seconds); break;
    case O_USECS: rc = arg_double("unit-seconds", optarg, 1e-9, 1e9, &cfg->unit_seconds); break;
    case O_UNODES: rc = arg_double("unit-nodes", optarg, 0, 1e30, &cfg->unit_nodes); break;
    case O_MAXD:
      if (!(rc = arg_long("max-depth", optarg, 2, NQ_MAX_N, &v))) cfg->max_depth = (int)v;
      break;
    case O_MAXU: rc = arg_u64("max-units", optarg, &cfg->max_units); break;
    case O_PLAN: plan = 1; break;
    case O_VERIFY: cfg->verify = 1; break;
    case O_UEFFORT:
      if (!(rc = arg_long("unit-effort", optarg, 1, NQ_EST_MAX_PROBES, &v)))
        cfg->unit_effort = (unsigned)v;
      break;
    case O_AUDIT:
      if (!(rc = arg_long("audit", optarg, 1, 1000000000, &v))) cfg->audit = (unsigned)v;
      break;
    case O_CKPT: cfg->checkpoint = optarg; break;
    case O_FLEET: {
      char err[300];
      cfg->fleet_spec = optarg;
      if (nq_fleet_parse(optarg, &cfg->fleet, err, sizeof err)) {
        fprintf(stderr, "nq-solve: --%s\n", err); /* "fleet: ..." */
        rc = 2;
      }
      break;
    }
    case O_SPLIT_OUT:
      rc = arg_double("split-outliers", optarg, 1, 1e6, &cfg->split_outliers);
      break;
    case O_CKPT_SECS:
      rc = arg_double("checkpoint-seconds", optarg, 0.01, 1e6, &cfg->checkpoint_seconds);
      break;
    default: usage(stderr); return 2;
    }
  }
  if (rc) return rc;
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
  if ((cfg->fleet_spec && (!sized || cfg->list)) || (cfg->split_outliers > 0 && !sized)) {
    fprintf(stderr, "nq-solve: --fleet goes with --plan (a summary, not --list-units), "
                    "--split-outliers with a plan\n");
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
  if (cfg->checkpoint && strcmp(*mode, "solve")) {
    fprintf(stderr, "nq-solve: --checkpoint goes with a count, not with --%s\n", *mode);
    return 2;
  }
  return 0;
}

/* N (or the unit) from the operands, and the depths checked against it. */
static int parse_target(int argc, char **argv, solve_cfg_t *cfg, const solve_mode_t *m) {
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
  if (optind != argc - 1) {
    usage(stderr);
    return 2;
  }
  long n;
  if (arg_long("N", argv[optind], NQ_MIN_N, NQ_MAX_N, &n)) return 2;
  cfg->n = (int)n;
  if (!m->needs_units && cfg->n < NQ_UNIT_MIN_N) return 0; /* N = 1..3: answered directly */
  const int depths[2] = {cfg->depth, cfg->max_depth};
  for (int i = 0; i < 2; i++) {
    if ((depths[i] || m->needs_units) &&
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
  cfg.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (cfg.threads < 1) cfg.threads = 1;
  cfg.seed = NQ_EST_DEFAULT_SEED;
  cfg.calib_seconds = -1; /* automatic (solve_estimate) */
  cfg.max_units = 100000000;
  cfg.unit_nodes = -1; /* not given */
  cfg.checkpoint_seconds = 60;
  const char *name = NULL;
  int rc = parse(argc, argv, &cfg, &name);
  if (rc) return rc < 0 ? 0 : rc;
  const solve_mode_t *m = mode_named(name);
  if ((rc = parse_target(argc, argv, &cfg, m)) != 0) return rc;
  return m->run(&cfg);
}
