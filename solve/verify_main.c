/* nq-verify: check an evidence file that nq-admin export wrote (docs/evidence.md) -- the
 * checksum, every unit text, the tiling of the search tree, the verification rule, the totals,
 * and a random sample of units recomputed on this machine. It needs no server and no database:
 * it links the solver library alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "nq/sys.h"
#include "nq/json.h"
#include "nq/nq.h"
#include "nq/opts.h"
#include "nq/receipts.h"
#include "verify.h"

#define DEFAULT_SAMPLE 20

/* --sample K|all. */
static int set_sample(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  static const nq_opt_t k = {NQ_OPT_UINT64, "sample", .lo = 0, .hi = 100000000};
  verify_opts_t *o = base;
  if (!strcmp(v, "all")) {
    o->sample = UINT64_MAX;
    return 0;
  }
  char why[200];
  if (nq_opt_set(&k, o, v, why, sizeof why) != 0) /* offset 0: verify_opts_t.sample */
    return nq_errorf(err, len, NQ_ERANGE, "expected 0..100000000 or all, got '%s'", v);
  return 0;
}
_Static_assert(offsetof(verify_opts_t, sample) == 0, "set_sample writes at offset 0");

/* Where --json goes. */
typedef struct verify_args_s {
  int json;
} verify_args_t;

static const nq_opt_t verify_table[] = {
    {NQ_OPT_SECTION, .help = "options:"},
    {NQ_OPT_UINT64, "sample", .arg = "K|all", .set = set_sample, .def = NQ_STR(DEFAULT_SAMPLE),
     .help = "units to recompute (0: none; all: every unit)"},
    {NQ_OPT_UINT64, "seed", .off = offsetof(verify_opts_t, seed), .arg = "S",
     .help = "the sample's seed (default: random, printed; the same seed picks the same units)"},
    {NQ_OPT_STRING, "kernel", .off = offsetof(verify_opts_t, kernel), .arg = "K",
     .def = "reference",
     .help = "reference (the plain solver), auto, scalar, avx2 or avx512"},
    {NQ_OPT_INT, "threads", .off = offsetof(verify_opts_t, threads), .arg = "T", .lo = 1,
     .hi = 1024, .help = "threads of a fast-kernel recount (default: online CPUs)"},
    {NQ_OPT_STRING, "key", .off = offsetof(verify_opts_t, key), .arg = "PUBKEY|FINGERPRINT",
     .help = "refuse a file not signed by this key: its PEM file (evidence.pub), or its 64-hex "
             "fingerprint as the server's page, welcome and nq-admin status publish it"},
    {NQ_OPT_STRING, "root", .off = offsetof(verify_opts_t, root), .arg = "HEX",
     .help = "refuse a file whose results' root is not this one (64 hex digits, as the server's "
             "page and /api/status publish it)"},
    {NQ_OPT_STRING, "receipts", .off = offsetof(verify_opts_t, receipts), .arg = "DIR",
     .help = "also check a volunteer's receipts: every receipt of the file's job in DIR/receipts "
             "(a client's state folder, or the receipts file itself) must be in the file"},
    {NQ_OPT_END}};

static const nq_opt_t verify_args_table[] = {
    {NQ_OPT_FLAG, "json", .off = offsetof(verify_args_t, json),
     .help = "print the outcome as one JSON object (on stdout, failures too)"},
    {NQ_OPT_END}};

static void print_version(const char *prog) {
  printf("%s %s\nsolver %s, evidence format %d\n", prog, NQ_VERSION_STRING, NQ_SOLVER_VERSION,
         NQ_EV_VERSION);
}

static uint64_t random_seed(void) {
  uint64_t s = 0;
  int fd = open("/dev/urandom", O_RDONLY);
  if (fd >= 0) {
    if (read(fd, &s, sizeof s) != (ssize_t)sizeof s) s = 0;
    close(fd);
  }
  if (!s) s = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
  return s % 1000000000000ull; /* short enough to retype */
}

static void print_report(const char *path, const verify_opts_t *o, const verify_report_t *r) {
  char a[48], b[48], c[48], d[48], t[48], u[48];
  const nq_ev_header_t *h = &r->header;
  printf("nq-verify: %s: VERIFIED\n", path);
  printf("N          %d (job %" PRId64 ", %s, exported by nq %s)\n", h->n, h->job, h->solver,
         h->software);
  printf("units      %" PRIu64 ": valid texts, tiling the search tree exactly once (%" PRIu64
         " split nodes above them)\n", r->units, r->split_nodes);
  printf("rule       every unit verified by >= %d agreeing results of distinct %ss\n", h->quorum,
         nq_ev_distinct_name(h->distinct));
  printf("settled    %" PRIu64 " by the quorum, %" PRIu64 " by a trusted owner's result, %" PRIu64
         " by an audit (%" PRIu64 " recomputed here)\n", r->settled[NQ_EV_SETTLED_QUORUM],
         r->settled[NQ_EV_SETTLED_TRUSTED], r->settled[NQ_EV_SETTLED_AUDIT], r->audits_recounted);
  printf("results    %" PRIu64 " (%" PRIu64 " invalid, %" PRIu64 " spot checks); units with "
         "results of >= 2 backends: %" PRIu64 "\n", r->results, r->invalid_results,
         r->spot_results, r->multi_backend_units);
  printf("totals     C2 %s C4 %s C8 %s nodes %s: the units' sums\n", nq_u128_str(r->totals.c2, a),
         nq_u128_str(r->totals.c4, b), nq_u128_str(r->totals.c8, c),
         nq_u128_str(r->totals.nodes, d));
  printf("TOTAL      %s\nUNIQUE     %s\n", nq_u128_str(r->totals.total, t),
         nq_u128_str(r->totals.unique, u));
  if (r->sampled)
    printf("sample     %" PRIu64 " unit(s) recomputed with %s (seed %" PRIu64 "): all agree%s\n",
           r->sampled, r->kernel, o->seed,
           r->nodes_skipped ? " (nodes not compared where another solver version counted them)"
                            : "");
  else
    printf("sample     none\n");
  printf("sha256     matches\n");
  if (r->has_root)
    printf("root       %s over %" PRIu64 " results: the file's%s\n", r->root, r->leaves,
           o->root ? ", and the root given" : "; compare it with the root the server published");
  if (r->is_signed)
    printf("signature  valid, key %s%s\n", r->key_fpr,
           o->key ? " (the key given)" : "; pin it with --key: compare it with the fingerprint the "
                                         "server publishes");
  else
    printf("signature  none (an unsigned file proves nothing about who wrote it)\n");
}

/* --json: {"verified":true|false, "status":EXIT, "error":..., then the report's figures}. */
static void print_json(const char *path, const verify_opts_t *o, const verify_report_t *r, int rc,
                       const char *err) {
  char a[48];
  json_t *j = json_object();
  if (!j) return;
  json_object_set_new(j, "file", json_string(path));
  json_object_set_new(j, "verified", json_boolean(rc == VERIFY_OK));
  json_object_set_new(j, "status", json_integer(rc));
  if (rc != VERIFY_OK) json_object_set_new(j, "error", json_string(err));
  if (rc == VERIFY_OK) {
    const nq_ev_header_t *h = &r->header;
    json_object_set_new(j, "n", json_integer(h->n));
    json_object_set_new(j, "job", json_integer(h->job));
    json_object_set_new(j, "quorum", json_integer(h->quorum));
    json_object_set_new(j, "quorum_distinct", json_string(nq_ev_distinct_name(h->distinct)));
    nq_msg_set_u64(j, "units", r->units);
    nq_msg_set_u64(j, "split_nodes", r->split_nodes);
    nq_msg_set_u64(j, "results", r->results);
    nq_msg_set_u64(j, "invalid_results", r->invalid_results);
    nq_msg_set_u64(j, "spot_results", r->spot_results);
    nq_msg_set_u64(j, "multi_backend_units", r->multi_backend_units);
    json_object_set_new(j, "c2", json_string(nq_u128_str(r->totals.c2, a)));
    json_object_set_new(j, "c4", json_string(nq_u128_str(r->totals.c4, a)));
    json_object_set_new(j, "c8", json_string(nq_u128_str(r->totals.c8, a)));
    json_object_set_new(j, "nodes", json_string(nq_u128_str(r->totals.nodes, a)));
    json_object_set_new(j, "total", json_string(nq_u128_str(r->totals.total, a)));
    json_object_set_new(j, "unique", json_string(nq_u128_str(r->totals.unique, a)));
    nq_msg_set_u64(j, "sampled", r->sampled);
    json_object_set_new(j, "kernel", json_string(r->sampled ? r->kernel : ""));
    nq_msg_set_u64(j, "seed", o->seed);
    json_object_set_new(j, "signed", json_boolean(r->is_signed));
    json_object_set_new(j, "key", json_string(r->is_signed ? r->key_fpr : ""));
    json_object_set_new(j, "root", json_string(r->has_root ? r->root : ""));
    nq_msg_set_u64(j, "leaves", r->leaves);
    for (int i = 0; i < NQ_EV_SETTLED_N; i++) {
      char k[32];
      snprintf(k, sizeof k, "settled_%s", nq_ev_settled_name((nq_ev_settled_t)i));
      nq_msg_set_u64(j, k, r->settled[i]);
    }
  }
  char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
  if (s) printf("%s\n", s);
  free(s);
  json_decref(j);
}

/* --receipts DIR: the volunteer's receipts in the file (nq/receipts.h), after the file itself
 * verified. Each problem is printed (at most 20 of a kind); VERIFY_OK or VERIFY_FAILED. */
static int check_receipts(const char *path, const verify_opts_t *o, int json, char *err,
                          size_t errlen) {
  char rpath[4096];
  struct stat sb;
  if (stat(o->receipts, &sb) == 0 && S_ISDIR(sb.st_mode))
    snprintf(rpath, sizeof rpath, "%s/%s", o->receipts, NQ_RECEIPTS_FILE);
  else
    snprintf(rpath, sizeof rpath, "%s", o->receipts);
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return VERIFY_ERROR;
  }
  nq_receipts_report_t r;
  int rc = nq_receipts_check(f, rpath, o->root, json ? NULL : stderr, 20, &r, err, errlen);
  fclose(f);
  if (rc < 0) return VERIFY_ERROR;
  if (!json)
    printf("receipts   %" PRIu64 " of job %" PRId64 " in %s: %" PRIu64 " found (%" PRIu64
           " valid), %" PRIu64 " missing, %" PRIu64 " changed%s\n", r.kept, r.job, rpath, r.found,
           r.valid, r.missing, r.changed + r.unit_differs, rc ? "" : ": every one is in the file");
  if (rc == 0 && r.kept == 0) {
    snprintf(err, errlen, "no receipt of job %lld in %.900s (%llu of other jobs)",
             (long long)r.job, rpath, (unsigned long long)r.other_jobs);
    return VERIFY_FAILED;
  }
  return rc ? VERIFY_FAILED : VERIFY_OK;
}

int main(int argc, char **argv) {
  verify_opts_t o = {0};
  verify_args_t args = {0};
  int ncpu = nq_sys_ncpu();
  o.threads = ncpu < 1024 ? ncpu : 1024;
  nq_opts_t opts = {
      .prog = "nq-verify",
      .summary = "check an nq evidence file: tiling, quorum, totals, a recomputed sample",
      .usage = "nq-verify FILE [--key PUBKEY|FINGERPRINT] [--root HEX] [--receipts DIR] [--sample K|all] [--seed S] [--kernel K] "
               "[--threads T] [--json]",
      .about = "Check an nq evidence file (nq-admin export): its SHA-256, every unit text, that the\n"
               "units tile the search tree exactly once, that every unit meets the job's recorded\n"
               "verification rule, that the totals are the units' sums (TOTAL = 2 C2 + 4 C4 + 8 C8,\n"
               "UNIQUE = C2 + C4 + C8), and recompute K random units here.",
      .epilog = "exit status: 0 verified, 1 the file fails a check (the reason is printed),\n"
                "             2 usage, 3 the file cannot be read or the kernel cannot run here",
      .version = print_version,
      .group = {{verify_table, &o}, {verify_args_table, &args}}};
  int rc = nq_opts_main(&opts, argc, argv, VERIFY_USAGE);
  if (rc >= 0) return rc;
  int json = args.json, optind = opts.optind;
  if (optind != argc - 1) {
    fprintf(stderr, "nq-verify: %s (nq-verify --help lists the options)\n",
            optind == argc ? "which file?" : "one file only");
    return VERIFY_USAGE;
  }
  if (!nq_opts_given(&opts, "seed")) o.seed = random_seed();
  if (o.root && (strlen(o.root) != 64 || strspn(o.root, "0123456789abcdef") != 64)) {
    fprintf(stderr, "nq-verify: --root wants 64 lowercase hex digits\n");
    return VERIFY_USAGE;
  }
  const char *path = argv[optind];
  verify_report_t rep;
  char err[1024];
  rc = verify_file(path, &o, &rep, err, sizeof err);
  if (rc == VERIFY_OK && !json) print_report(path, &o, &rep);
  if (rc == VERIFY_OK && o.receipts) rc = check_receipts(path, &o, json, err, sizeof err);
  if (json) {
    print_json(path, &o, &rep, rc, err);
    return rc;
  }
  if (rc != VERIFY_OK) {
    fprintf(stderr, "nq-verify: %s: %s%s\n", path, rc == VERIFY_FAILED ? "FAILED: " : "", err);
    return rc;
  }
  return VERIFY_OK;
}
