/* nq-solve: the solver alone on one machine.
 *   nq-solve N [--threads T] [--depth d] [--unit TEXT] [--list-units] [--json] [--reference]
 *            [--checkpoint FILE [--checkpoint-seconds S]]
 */
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/solver_pool.h"
#include "nq/unit.h"

#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: nq-solve N [options]        count all solutions of N queens (1 <= N <= %d)\n"
          "       nq-solve --unit TEXT [options]  count one work unit (N:part:BOUND1:columns)\n"
          "options:\n"
          "  --threads T     worker threads (default: online CPUs)\n"
          "  --depth d       unit prefix depth for --list-units and task splitting (default 2)\n"
          "  --list-units    print the units of N at --depth, one per line, and exit\n"
          "  --reference     use the plain reference solver (single thread)\n"
          "  --json          print one JSON object instead of the table\n"
          "  --checkpoint FILE  save what is finished in FILE every --checkpoint-seconds and on\n"
          "                  SIGINT/SIGTERM; resume from FILE when it holds this count\n"
          "  --checkpoint-seconds S  seconds between two saves (default 60)\n"
          "  --help          this text\n",
          NQ_MAX_N);
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

static void print_result(int n, const char *unit, const nq_counts_t *c, double secs, int threads,
                         int ref, int json) {
  nq_totals_t t;
  memset(&t, 0, sizeof t);
  nq_totals_add(&t, c);
  char total[40], uniq[40];
  nq_u128_str(nq_totals_total(&t), total);
  nq_u128_str(nq_totals_unique(&t), uniq);
  const nq_known_t *k = unit ? NULL : nq_known(n);
  int match = k && !strcmp(k->total, total) && !strcmp(k->unique, uniq);
  if (json) {
    json_t *o = json_pack("{s:i, s:s, s:s, s:I, s:I, s:I, s:I, s:f, s:i, s:s}", "n", n, "total",
                          total, "unique", uniq, "c2", (json_int_t)c->c2, "c4", (json_int_t)c->c4,
                          "c8", (json_int_t)c->c8, "nodes", (json_int_t)c->nodes, "seconds", secs,
                          "threads", threads, "solver", NQ_SOLVER_VERSION);
    json_object_set_new(o, "kernel", json_string(ref ? "reference" : nq_fast_kernel_in_use()));
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
         secs, threads, ref ? "reference" : nq_fast_kernel_in_use());
  if (k) printf("published %s (OEIS A000170/A002562)\n", match ? "MATCH" : "MISMATCH");
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"threads", required_argument, 0, 't'}, {"depth", required_argument, 0, 'd'},
      {"unit", required_argument, 0, 'u'},    {"list-units", no_argument, 0, 'l'},
      {"json", no_argument, 0, 'j'},          {"reference", no_argument, 0, 'r'},
      {"help", no_argument, 0, 'h'},          {"checkpoint", required_argument, 0, 'c'},
      {"checkpoint-seconds", required_argument, 0, 's'},  {0, 0, 0, 0}};
  int threads = (int)sysconf(_SC_NPROCESSORS_ONLN), depth = 2, list = 0, json = 0, ref = 0;
  const char *unit_text = NULL, *ckpt = NULL;
  double ckpt_secs = 60;
  int c;
  char *end;
  while ((c = getopt_long(argc, argv, "t:d:u:ljrhc:s:", opts, NULL)) != -1) {
    switch (c) {
    case 't':
      threads = (int)strtol(optarg, &end, 10);
      if (*end || threads < 1 || threads > 256) {
        fprintf(stderr, "nq-solve: --threads must be 1..256\n");
        return 2;
      }
      break;
    case 'd':
      depth = (int)strtol(optarg, &end, 10);
      if (*end || depth < 2 || depth > NQ_MAX_N) {
        fprintf(stderr, "nq-solve: --depth must be 2..%d\n", NQ_MAX_N);
        return 2;
      }
      break;
    case 'u': unit_text = optarg; break;
    case 'l': list = 1; break;
    case 'j': json = 1; break;
    case 'r': ref = 1; break;
    case 'h': usage(stdout); return 0;
    case 'c': ckpt = optarg; break;
    case 's':
      ckpt_secs = strtod(optarg, &end);
      if (*end || !(ckpt_secs >= 0.01 && ckpt_secs <= 1e6)) {
        fprintf(stderr, "nq-solve: --checkpoint-seconds must be a number 0.01..1e6\n");
        return 2;
      }
      break;
    default: usage(stderr); return 2;
    }
  }
  if (threads < 1) threads = 1;
  nq_unit_t unit;
  int n = 0;
  if (unit_text) {
    char err[160];
    if (nq_unit_parse(unit_text, &unit, err, sizeof err)) {
      fprintf(stderr, "nq-solve: bad unit '%s': %s\n", unit_text, err);
      return 2;
    }
    n = unit.n;
  } else {
    if (optind != argc - 1) {
      usage(stderr);
      return 2;
    }
    n = (int)strtol(argv[optind], &end, 10);
    if (*end || n < NQ_MIN_N || n > NQ_MAX_N) {
      fprintf(stderr, "nq-solve: N must be an integer in %d..%d (got '%s')\n", NQ_MIN_N,
              NQ_MAX_N, argv[optind]);
      return 2;
    }
  }
  if (list) {
    long count = 0;
    if (n < NQ_UNIT_MIN_N) {
      fprintf(stderr, "nq-solve: N=%d has no units (answered directly)\n", n);
      return 2;
    }
    nq_units_generate(n, depth, list_cb, &count);
    fprintf(stderr, "%ld units\n", count);
    return 0;
  }
  if (ckpt && (ref || !*ckpt)) {
    fprintf(stderr, "nq-solve: --checkpoint needs a file name and the fast solver\n");
    return 2;
  }
  progress_t pr = {nq_now_mono(), 0};
  nq_solve_opts_t so = {threads, on_progress, &pr, NULL};
  nq_counts_t res;
  int rc;
  nq_subject_t subj;
  if (ckpt && (unit_text ? nq_subject_unit(&subj, &unit) : nq_subject_whole(&subj, n, depth)) == 0) {
    signal(SIGINT, on_stop_signal);
    signal(SIGTERM, on_stop_signal);
    so.cancel = &stop_flag;
    double spent;
    rc = nq_solve_checkpointed(&subj, &so, ckpt, ckpt_secs, &res, &spent);
    if (rc == NQ_ESTATE) {
      fprintf(stderr, "\nnq-solve: stopped; %s holds what is finished\n", ckpt);
      return 1;
    }
  } else if (ref) {
    threads = 1;
    rc = unit_text ? nq_ref_solve_unit(&unit, &res) : nq_ref_solve_n(n, &res);
  } else {
    rc = unit_text ? nq_solve_unit(&unit, &so, &res) : nq_solve_n(n, depth, &so, &res);
  }
  double secs = nq_now_mono() - pr.start;
  if (pr.shown) fputc('\n', stderr);
  if (rc) {
    fprintf(stderr, "nq-solve: %s\n", nq_strerror(rc));
    return 1;
  }
  print_result(n, unit_text, &res, secs, threads, ref, json);
  return 0;
}
