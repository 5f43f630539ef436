/* Evidence file suite (nq/evidence.h, solve/verify.c): every line type written and parsed back,
 * malformed lines refused with a reason, the line reader's digest and its refusals, and
 * nq-verify's checks on files built here from plans of mixed depths (a plan's units tile the tree
 * exactly: the walk must agree) -- passing with every unit recounted, and failing, each with its
 * own reason, on a gap, an out-of-order unit, a unit of another N, an unverified unit, a missing
 * vote, votes of one key, a sum off by one and a wrong recount. The tampering of a real job's
 * export is tests/e2e_evidence.sh. */
#include "evkey.h"
#include "export.h"
#include "fx_store.h"
#include "store_trusted.h"
#include "nq/evidence.h"
#include "nq/hash.h"
#include "nq/merkle.h"
#include "nq/nq.h"
#include "nq/receipts.h"
#include "store_export.h"
#include "nq/plan.h"
#include "nq/solver.h"
#include "testutil.h"
#include "verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define Z64 "0000000000000000000000000000000000000000000000000000000000000000"

/* ---- a file built from a plan ------------------------------------------------------------- */

/* What to break while building (one at a time). */
enum { T_NONE, T_DROP, T_SWAP, T_OTHER_N, T_UNVERIFIED, T_ONE_VOTE, T_SAME_KEY, T_SUM, T_COUNT, T_INTERNAL };

typedef struct build_s {
  int min_depth, max_depth; /* of the units written */
  nq_ev_writer_t *w;
  nq_ev_unit_t *eu;
  nq_totals_t sums;
  uint64_t units, at;
  int tamper;
  uint64_t victim;     /* the index of the unit to break */
  nq_ev_unit_t *held;  /* T_SWAP: the victim, written after the next unit */
} build_t;

static void result(nq_ev_result_t *r, const char *client, const nq_counts_t *c) {
  memset(r, 0, sizeof *r);
  snprintf(r->client, sizeof r->client, "%s", client);
  snprintf(r->owner, sizeof r->owner, "owner-%s", client);
  snprintf(r->state, sizeof r->state, "valid");
  snprintf(r->solver, sizeof r->solver, NQ_SOLVER_VERSION);
  snprintf(r->backend, sizeof r->backend, "%s", client[0] == 'a' ? "avx2" : "reference");
  r->c2 = c->c2;
  r->c4 = c->c4;
  r->c8 = c->c8;
  r->nodes = c->nodes;
  r->reported = 1700000000;
}

static int plan_unit(const nq_plan_unit_t *pu, void *arg) {
  build_t *b = arg;
  uint64_t i = b->at++;
  if (!b->min_depth || pu->unit.depth < b->min_depth) b->min_depth = pu->unit.depth;
  if (pu->unit.depth > b->max_depth) b->max_depth = pu->unit.depth;
  nq_counts_t c;
  ck_assert_int_eq(nq_ref_solve_unit(&pu->unit, &c), 0);
  nq_ev_unit_t *eu = b->eu;
  memset(eu, 0, sizeof *eu);
  nq_unit_format(&pu->unit, eu->text, sizeof eu->text);
  snprintf(eu->state, sizeof eu->state, "verified");
  snprintf(eu->nodes_solver, sizeof eu->nodes_solver, NQ_SOLVER_VERSION);
  eu->c2 = c.c2;
  eu->c4 = c.c4;
  eu->c8 = c.c8;
  eu->nodes = c.nodes;
  eu->nresults = 2;
  result(&eu->results[0], "a", &c);
  result(&eu->results[1], "b", &c);
  /* Result ids, in the line in either order (the leaves go by id). */
  eu->results[0].id = (int64_t)(2 * i + 1 + (i % 2));
  eu->results[1].id = (int64_t)(2 * i + 2 - (i % 2));
  if (i == b->victim) {
    switch (b->tamper) {
    case T_DROP: return 0;
    case T_OTHER_N: eu->text[1] = eu->text[1] == '0' ? '1' : '0'; break; /* 10: -> 11: */
    case T_UNVERIFIED: snprintf(eu->state, sizeof eu->state, "awaiting"); break;
    case T_ONE_VOTE: snprintf(eu->results[1].state, sizeof eu->results[1].state, "invalid"); break;
    case T_SAME_KEY: snprintf(eu->results[1].client, sizeof eu->results[1].client, "a"); break;
    case T_SWAP:
      b->held = malloc(sizeof *b->held);
      *b->held = *eu;
      nq_totals_add(&b->sums, &c);
      b->units++;
      return 0;
    case T_COUNT: /* every copy of the count changes alike: only a recount sees it */
      eu->nodes += 1;
      eu->results[0].nodes += 1;
      eu->results[1].nodes += 1;
      c.nodes += 1;
      break;
    }
  }
  nq_totals_add(&b->sums, &c);
  b->units++;
  ck_assert_int_eq(nq_ev_write_unit(b->w, eu), 0);
  if (b->held && i == b->victim + 1) {
    ck_assert_int_eq(nq_ev_write_unit(b->w, b->held), 0);
    free(b->held);
    b->held = NULL;
  }
  return 0;
}

/* > 0: build() makes a flat job at this depth instead of a plan of mixed depths. */
static int flat_depth;

/* A file for N with a plan of about target nodes a unit (mixed depths), broken as asked. */
static FILE *build(int n, double target, int tamper, uint64_t victim, uint64_t *units) {
  FILE *f = tmpfile();
  ck_assert_ptr_nonnull(f);
  build_t b = {.tamper = tamper, .victim = victim};
  b.eu = malloc(sizeof *b.eu);
  ck_assert_ptr_nonnull(b.eu);
  nq_plan_opts_t po = {.n = n, .target_nodes = target, .start_depth = 2, .max_depth = n - 1};
  if (flat_depth) po = (nq_plan_opts_t){.n = n, .start_depth = flat_depth, .max_depth = flat_depth};
  nq_plan_summary_t sum;
  char err[256];
  /* The header needs the number of units first: count them with a dry run. */
  FILE *null = fopen("/dev/null", "w");
  ck_assert_int_eq(nq_ev_writer_begin(null, &b.w), 0);
  ck_assert_int_eq(nq_plan_run(&po, plan_unit, &b, &sum, err, sizeof err), 0);
  nq_ev_writer_free(b.w);
  fclose(null);
  nq_ev_header_t h = {.version = NQ_EV_VERSION, .n = n, .job = 7, .depth = b.max_depth,
                      .min_depth = b.min_depth, .seed = 1, .quorum = 2, .max_results = 3,
                      .distinct = NQ_EV_DISTINCT_CLIENT, .units = b.units, .created = 1,
                      .finished = 2, .exported = 3, .has_internal = 1,
                      .internal = sum.internal + (tamper == T_INTERNAL)};
  snprintf(h.solver, sizeof h.solver, NQ_SOLVER_VERSION);
  snprintf(h.software, sizeof h.software, "test");
  b.sums = (nq_totals_t){0};
  b.units = b.at = 0;
  ck_assert_int_eq(nq_ev_writer_begin(f, &b.w), 0);
  ck_assert_int_eq(nq_ev_write_header(b.w, &h), 0);
  ck_assert_int_eq(nq_plan_run(&po, plan_unit, &b, NULL, err, sizeof err), 0);
  nq_ev_totals_t t = {.units = b.units, .c2 = b.sums.c2, .c4 = b.sums.c4, .c8 = b.sums.c8,
                      .nodes = b.sums.nodes};
  if (tamper == T_SUM) t.c8 += 1;
  t.total = 2 * t.c2 + 4 * t.c4 + 8 * t.c8;
  t.unique = t.c2 + t.c4 + t.c8;
  ck_assert_int_eq(nq_ev_write_totals(b.w, &t), 0);
  ck_assert_int_eq(nq_ev_writer_end(b.w), 0);
  free(b.eu);
  rewind(f);
  if (units) *units = b.units;
  return f;
}

static int check(FILE *f, uint64_t sample, const char *kernel, verify_report_t *rep, char *err,
                 size_t errlen) {
  verify_opts_t o = {.sample = sample, .seed = 42, .kernel = kernel, .threads = 2};
  int rc = verify_stream(f, &o, rep, err, errlen);
  fclose(f);
  return rc;
}

/* A plan of mixed depths passes, every unit recounted; the totals are N's. */
START_TEST(plan_file_verifies) {
  static verify_report_t rep;
  char err[1024];
  uint64_t units;
  FILE *f = build(10, 30, T_NONE, 0, &units);
  ck_assert_int_gt(units, 20);
  ck_assert_msg(check(f, UINT64_MAX, "reference", &rep, err, sizeof err) == VERIFY_OK, "%s", err);
  ck_assert_uint_eq(rep.units, units);
  ck_assert_uint_eq(rep.sampled, units);
  ck_assert(rep.totals.total == 724 && rep.totals.unique == 92);
  ck_assert_uint_eq(rep.multi_backend_units, units);
  ck_assert_uint_gt(rep.split_nodes, 0);
  /* A sample of 5 with the fast kernel, and none. */
  f = build(10, 30, T_NONE, 0, NULL);
  ck_assert_msg(check(f, 5, "auto", &rep, err, sizeof err) == VERIFY_OK, "%s", err);
  ck_assert_uint_eq(rep.sampled, 5);
  f = build(10, 30, T_NONE, 0, NULL);
  ck_assert_msg(check(f, 0, "reference", &rep, err, sizeof err) == VERIFY_OK, "%s", err);
  ck_assert_uint_eq(rep.sampled, 0);
  /* Flat jobs: deep ones have dead ends above their depth (nodes without children, which get no
   * unit and count as split nodes). */
  for (flat_depth = 2; flat_depth <= 9; flat_depth++) {
    f = build(10, 0, T_NONE, 0, &units);
    ck_assert_msg(check(f, UINT64_MAX, "reference", &rep, err, sizeof err) == VERIFY_OK,
                  "depth %d: %s", flat_depth, err);
    ck_assert(rep.totals.total == 724 && rep.units == units);
  }
  flat_depth = 0;
}
END_TEST

/* Each break, at a few places in the file, fails with its own reason. */
START_TEST(broken_files_fail) {
  /* A unit dropped above the deepest row is taken for a split node, and its subtree walked: a
   * gap where it reaches a unit's row, else more split nodes than the header's. */
  static const struct {
    int tamper;
    const char *want, *or;
  } cases[] = {
      {T_DROP, "which no unit covers", "split nodes above them"},
      {T_SWAP, "which no unit covers", NULL}, /* the later unit first: a gap before it */
      {T_OTHER_N, "is not a unit of N=10", NULL},
      {T_UNVERIFIED, "not verified (state awaiting)", NULL},
      {T_ONE_VOTE, "1 agreeing result(s) of distinct clients, the quorum is 2", NULL},
      {T_SAME_KEY, "1 agreeing result(s) of distinct clients", NULL},
      {T_SUM, "totals: c8 is", NULL},
      {T_COUNT, "recomputed with reference", NULL},
      {T_INTERNAL, "split nodes above them; the header says internal", NULL},
  };
  static verify_report_t rep;
  char err[1024];
  uint64_t units;
  fclose(build(10, 30, T_NONE, 0, &units));
  const uint64_t at[] = {0, units / 2, units - 2};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (size_t k = 0; k < 3; k++) {
      if (cases[i].tamper == T_DROP && k == 2) continue; /* dropping the last but one: below */
      FILE *f = build(10, 30, cases[i].tamper, at[k], NULL);
      int rc = check(f, UINT64_MAX, "reference", &rep, err, sizeof err);
      ck_assert_msg(rc == VERIFY_FAILED && (strstr(err, cases[i].want) ||
                                            (cases[i].or && strstr(err, cases[i].or))),
                    "case %zu at %llu: %d %s",
                    i, (unsigned long long)at[k], rc, err);
    }
  /* The last unit missing: the tree is not finished when the units end. */
  FILE *f = build(10, 30, T_DROP, units - 1, NULL);
  ck_assert_int_eq(check(f, 0, "reference", &rep, err, sizeof err), VERIFY_FAILED);
  ck_assert_msg(strstr(err, "the units end before the tree does"), "%s", err);
}
END_TEST

/* ---- lines ---------------------------------------------------------------------------------- */

static char *one_line(int type, const void *v, size_t *len) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  nq_ev_writer_t *w;
  ck_assert_int_eq(nq_ev_writer_begin(f, &w), 0);
  int rc = type == NQ_EV_HEADER ? nq_ev_write_header(w, v)
           : type == NQ_EV_UNIT ? nq_ev_write_unit(w, v)
                                : nq_ev_write_totals(w, v);
  ck_assert_int_eq(rc, 0);
  nq_ev_writer_free(w);
  fclose(f);
  *len = n - 1;
  return buf;
}

START_TEST(lines_round_trip) {
  static nq_ev_line_t l;
  static nq_ev_unit_t u;
  char err[256];
  size_t len;
  nq_ev_header_t h = {.n = 28, .job = 3, .depth = 9, .min_depth = 6, .unit_seconds = 7200,
                      .seed = UINT64_MAX, .has_internal = 1, .internal = 123456789012345ull,
                      .quorum = 2, .max_results = 4, .distinct = NQ_EV_DISTINCT_NETWORK,
                      .units = 3000000, .created = 5, .finished = 6, .exported = 7};
  snprintf(h.solver, sizeof h.solver, "nq-solver-3");
  snprintf(h.software, sizeof h.software, "0.1.0");
  char *s = one_line(NQ_EV_HEADER, &h, &len);
  ck_assert_int_eq(nq_ev_parse_line(s, len, &l, err, sizeof err), 0);
  ck_assert_int_eq(l.type, NQ_EV_HEADER);
  ck_assert(l.header.n == 28 && l.header.seed == UINT64_MAX && l.header.internal == h.internal &&
            l.header.distinct == NQ_EV_DISTINCT_NETWORK && l.header.units == 3000000 &&
            l.header.unit_seconds == 7200 && !strcmp(l.header.solver, "nq-solver-3"));
  free(s);
  snprintf(u.text, sizeof u.text, "28:s:3:3,0,10");
  snprintf(u.state, sizeof u.state, "verified");
  u.c2 = 1;
  u.c8 = (uint64_t)INT64_MAX;
  u.nodes = (uint64_t)INT64_MAX;
  u.nresults = NQ_EV_RESULTS_MAX;
  for (int i = 0; i < u.nresults; i++) {
    snprintf(u.results[i].client, sizeof u.results[i].client, "c\"%d\\", i);
    snprintf(u.results[i].state, sizeof u.results[i].state, "valid");
    u.results[i].net = i + 1;
    u.results[i].spot = i & 1;
  }
  s = one_line(NQ_EV_UNIT, &u, &len);
  ck_assert_int_lt(len, NQ_EV_LINE_MAX);
  ck_assert_msg(nq_ev_parse_line(s, len, &l, err, sizeof err) == 0, "%s", err);
  ck_assert(l.unit.nresults == NQ_EV_RESULTS_MAX && l.unit.c8 == (uint64_t)INT64_MAX &&
            !strcmp(l.unit.results[9].client, "c\"9\\") && l.unit.results[9].spot &&
            l.unit.results[9].net == 10);
  free(s);
  nq_ev_totals_t t = {.units = 2, .c2 = 1, .c8 = ~(nq_u128)0 >> 4, .nodes = 5};
  s = one_line(NQ_EV_TOTALS, &t, &len);
  ck_assert_int_eq(nq_ev_parse_line(s, len, &l, err, sizeof err), 0);
  ck_assert(l.totals.c8 == t.c8 && l.totals.units == 2);
  free(s);
}
END_TEST

START_TEST(bad_lines_refused) {
  static nq_ev_line_t l;
  static const struct {
    const char *line, *want;
  } cases[] = {
      {"", "not JSON"},
      {"[1]", "not a JSON object"},
      {"{\"type\":\"x\"}", "unknown line type"},
      {"{\"type\":1}", "\"type\" is missing"},
      {"{\"type\":\"totals\",\"type\":\"unit\"}", "not JSON"},
      {"{\"type\":\"header\",\"format\":\"other\"}", "is not nq-evidence"},
      {"{\"type\":\"header\",\"format\":\"nq-evidence\",\"version\":4}", "version 4"},
      {"{\"type\":\"header\",\"format\":\"nq-evidence\",\"version\":1,\"n\":33}", "\"n\" is out of range"},
      {"{\"type\":\"unit\",\"text\":\"4:c:2:0,2\",\"state\":\"verified\",\"c2\":-1}", "\"c2\" is out of range"},
      {"{\"type\":\"unit\",\"text\":\"4:c:2:0,2\",\"state\":\"verified\",\"c2\":\"9223372036854775808\"}",
       "\"c2\" is out of range"},
      {"{\"type\":\"unit\",\"text\":\"4:c:2:0,2\",\"state\":\"verified\",\"c2\":0,\"c4\":0,\"c8\":0,"
       "\"nodes\":1,\"nodes_solver\":\"x\",\"verified_at\":0,\"results\":{}}",
       "\"results\" is not an array"},
      {"{\"type\":\"unit\",\"text\":\"4:c:2:0,2\",\"state\":\"verified\",\"c2\":0,\"c4\":0,\"c8\":0,"
       "\"nodes\":1,\"nodes_solver\":\"x\",\"verified_at\":0,\"results\":[7]}",
       "a result is not an object"},
      {"{\"type\":\"totals\",\"units\":1,\"c2\":\"1x\"}", "\"c2\" is not a string of decimal digits"},
      {"{\"type\":\"totals\",\"units\":1,\"c2\":\"340282366920938463463374607431768211456\"}",
       "below 2^128"},
      {"{\"type\":\"sha256\",\"sha256\":\"ABC\"}", "not 64 lowercase hex digits"},
      {"{\"type\":\"sha256\",\"sha256\":\"" Z64 "\",\"key\":\"" Z64 "\"}",
       "a key without a signature"},
      {"{\"type\":\"sha256\",\"sha256\":\"" Z64 "\",\"key\":\"" Z64 "\",\"signature\":\"00\"}",
       "the signature is not 128 lowercase hex digits"},
      {"{\"type\":\"unit\",\"text\":\"8:c:2:0,2\",\"state\":\"verified\",\"c2\":0,\"c4\":0,"
       "\"c8\":0,\"nodes\":1,\"nodes_solver\":\"x\",\"settled\":\"vote\",\"verified_at\":0,"
       "\"results\":[]}", "settled \"vote\" is not quorum, trusted or audit"},
  };
  char err[256];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    err[0] = '\0';
    ck_assert_int_ne(nq_ev_parse_line(cases[i].line, strlen(cases[i].line), &l, err, sizeof err), 0);
    ck_assert_msg(strstr(err, cases[i].want), "%s: got '%s'", cases[i].line, err);
  }
}
END_TEST

/* The reader: the digest covers every line but the last; a cut, a NUL or an over-long line is
 * refused. */
START_TEST(reader_digest_and_refusals) {
  const char text[] = "{\"a\":1}\n{\"b\":2}\nlast\n";
  FILE *f = fmemopen((void *)text, strlen(text), "rb");
  nq_ev_reader_t *r;
  const char *line;
  size_t len;
  uint64_t no;
  ck_assert_int_eq(nq_ev_reader_begin(f, &r), 0);
  int lines = 0;
  while (nq_ev_reader_next(r, &line, &len, &no) == 1) lines++;
  ck_assert_int_eq(lines, 3);
  unsigned char md[32], want[32];
  ck_assert_int_eq(nq_ev_reader_digest(r, md), 0);
  ck_assert_int_eq(nq_sha256(text, strlen(text) - 5, want), 0);
  ck_assert(memcmp(md, want, 32) == 0);
  ck_assert_int_eq(nq_ev_reader_digest(r, md), NQ_ESTATE);
  nq_ev_reader_free(r);
  fclose(f);
  const char *bad[] = {"{}\n{\"cut", "{}\n{\0}\n"};
  const size_t badlen[] = {8, 7};
  for (int i = 0; i < 2; i++) {
    f = fmemopen((void *)bad[i], badlen[i], "rb");
    ck_assert_int_eq(nq_ev_reader_begin(f, &r), 0);
    ck_assert_int_eq(nq_ev_reader_next(r, &line, &len, &no), 1);
    ck_assert_int_eq(nq_ev_reader_next(r, &line, &len, &no), NQ_EINVAL);
    ck_assert_uint_eq(no, 2);
    nq_ev_reader_free(r);
    fclose(f);
  }
  char *big = malloc(NQ_EV_LINE_MAX + 10);
  memset(big, 'x', NQ_EV_LINE_MAX + 9);
  big[NQ_EV_LINE_MAX + 9] = '\n';
  f = fmemopen(big, NQ_EV_LINE_MAX + 10, "rb");
  ck_assert_int_eq(nq_ev_reader_begin(f, &r), 0);
  ck_assert_int_eq(nq_ev_reader_next(r, &line, &len, &no), NQ_ETOOBIG);
  nq_ev_reader_free(r);
  fclose(f);
  free(big);
}
END_TEST

/* ---- the root and the receipts -------------------------------------------------------------- */

/* The whole file at path (NUL-terminated; *len its length without the NUL). */
static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  if (b) b[n] = '\0';
  if (b && len) *len = (size_t)n;
  return b;
}

/* RFC 6962's MTH by its recursive definition, over leaf hashes. */
static void mth(const unsigned char (*leaf)[32], size_t n, unsigned char out[32]) {
  if (n == 0) {
    nq_sha256("", 0, out);
    return;
  }
  if (n == 1) {
    memcpy(out, leaf[0], 32);
    return;
  }
  size_t k = 1;
  while (k * 2 < n) k *= 2;
  unsigned char buf[65];
  buf[0] = 1;
  mth(leaf, k, buf + 1);
  mth(leaf + k, n - k, buf + 33);
  nq_sha256(buf, sizeof buf, out);
}

/* The streamed tree is RFC 6962's for every size up to 130 leaves, and its empty tree and
 * one empty leaf are the published values. */
START_TEST(merkle_is_rfc6962) {
  static unsigned char leaf[130][32];
  unsigned char a[32], b[32];
  char hex[65];
  nq_merkle_t m;
  nq_merkle_init(&m);
  ck_assert_int_eq(nq_merkle_root(&m, a), 0);
  nq_hex_encode(a, 32, hex);
  ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  ck_assert_int_eq(nq_merkle_leaf_hash("", 0, a), 0);
  nq_hex_encode(a, 32, hex);
  ck_assert_str_eq(hex, "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d");
  for (size_t i = 0; i < 130; i++) {
    char d[16];
    int n = snprintf(d, sizeof d, "leaf %zu", i);
    ck_assert_int_eq(nq_merkle_leaf_hash(d, (size_t)n, leaf[i]), 0);
    ck_assert_int_eq(nq_merkle_add(&m, leaf[i]), 0);
    ck_assert_int_eq(nq_merkle_root(&m, a), 0);
    mth(leaf, i + 1, b);
    ck_assert_msg(!memcmp(a, b, 32), "%zu leaves", i + 1);
    ck_assert_int_le(m.depth, 8);
  }
  /* A leaf changed or two leaves swapped change the root. */
  unsigned char keep[32];
  memcpy(keep, leaf[77], 32);
  leaf[77][0] ^= 1;
  mth(leaf, 130, b);
  ck_assert(memcmp(a, b, 32));
  memcpy(leaf[77], leaf[78], 32);
  memcpy(leaf[78], keep, 32);
  mth(leaf, 130, b);
  ck_assert(memcmp(a, b, 32));
}
END_TEST

/* Write buf back to path with its sha256 line made right again (an unsigned file): what a
 * forger who rewrites the checksum but not the root leaves. */
static void rewrite_summed(const char *path, char *buf, size_t len) {
  char *last = buf + len - 1;
  while (last > buf && last[-1] != '\n') last--;
  unsigned char md[32];
  char hex[65];
  ck_assert_int_eq(nq_sha256(buf, (size_t)(last - buf), md), 0);
  nq_hex_encode(md, 32, hex);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  fwrite(buf, 1, (size_t)(last - buf), f);
  fprintf(f, "{\"type\":\"sha256\",\"sha256\":\"%s\"}\n", hex);
  ck_assert_int_eq(fclose(f), 0);
}

/* Client a's receipts, from the file's own leaves: what its acks carried. */
static uint64_t write_receipts(const char *ev, const char *out) {
  FILE *f = fopen(ev, "rb"), *o = fopen(out, "w");
  ck_assert(f && o);
  static nq_ev_line_t l;
  char line[1 << 16], why[256], rl[NQ_RECEIPT_LINE_MAX];
  uint64_t n = 0;
  int64_t job = 0;
  while (fgets(line, sizeof line, f)) {
    ck_assert_int_eq(nq_ev_parse_line(line, strlen(line) - 1, &l, why, sizeof why), 0);
    if (l.type == NQ_EV_HEADER) job = l.header.job;
    if (l.type != NQ_EV_UNIT) continue;
    for (int i = 0; i < l.unit.nresults; i++) {
      if (strcmp(l.unit.results[i].client, "a")) continue;
      nq_receipt_t r = {.job = job, .id = l.unit.results[i].id};
      snprintf(r.unit, sizeof r.unit, "%s", l.unit.text);
      ck_assert_int_eq(nq_ev_leaf(job, l.unit.text, &l.unit.results[i], r.leaf), 0);
      ck_assert_int_gt(nq_receipt_format(&r, rl, sizeof rl), 0);
      fputs(rl, o);
      n++;
    }
  }
  /* A receipt of another job is kept apart, not checked. */
  fputs("99 5 10:c:2:0,2 " Z64 "\n", o);
  fclose(f);
  ck_assert_int_eq(fclose(o), 0);
  return n;
}

static int receipts(const char *ev, const char *rpath, const char *pin, nq_receipts_report_t *rr,
                    char *err, size_t errlen) {
  FILE *f = fopen(ev, "rb");
  ck_assert_ptr_nonnull(f);
  int rc = nq_receipts_check(f, rpath, pin, NULL, 0, rr, err, errlen);
  fclose(f);
  return rc;
}

/* The root: nq-verify recomputes it from the results; a volunteer's receipts are found under it.
 * A result changed after the fact (the checksum made right again) fails both: nq-verify on the
 * root, the volunteer's check on its changed receipt; a result removed is a missing receipt. */
START_TEST(root_and_receipts) {
  static verify_report_t rep;
  char err[1024], dir[] = "/tmp/nq-receipts-XXXXXX", ev[600], rp[600];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(ev, sizeof ev, "%s/ev.jsonl", dir);
  snprintf(rp, sizeof rp, "%s/receipts", dir);
  uint64_t units;
  FILE *f = build(8, 20, T_NONE, 0, &units), *o = fopen(ev, "wb");
  char chunk[4096];
  size_t k;
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, k, o);
  fclose(f);
  fclose(o);
  ck_assert_msg(verify_file(ev, &(verify_opts_t){.kernel = "reference", .threads = 1}, &rep, err,
                            sizeof err) == VERIFY_OK, "%s", err);
  ck_assert(rep.has_root);
  ck_assert_uint_eq(rep.leaves, 2 * units);
  char root[65];
  snprintf(root, sizeof root, "%s", rep.root);
  ck_assert_uint_eq(write_receipts(ev, rp), units);
  nq_receipts_report_t rr;
  ck_assert_msg(receipts(ev, rp, root, &rr, err, sizeof err) == 0, "%s", err);
  ck_assert_uint_eq(rr.found, units);
  ck_assert_uint_eq(rr.kept, units);
  ck_assert_uint_eq(rr.other_jobs, 1);
  ck_assert_str_eq(rr.root, root);
  /* Another published root: refused by both. */
  char other[65];
  snprintf(other, sizeof other, "%s", root);
  other[0] = other[0] == '0' ? '1' : '0';
  ck_assert_int_eq(receipts(ev, rp, other, &rr, err, sizeof err), 1);
  ck_assert_ptr_nonnull(strstr(err, "not the published root"));
  ck_assert_int_eq(verify_file(ev, &(verify_opts_t){.kernel = "reference", .root = other}, &rep,
                               err, sizeof err), VERIFY_FAILED);
  ck_assert_ptr_nonnull(strstr(err, "not the published root"));
  /* Client a's result of the third unit reported a second later: only the root sees it. */
  size_t len;
  char *buf = slurp(ev, &len), *p = buf;
  for (int i = 0; i < 3; i++) p = strstr(p + 1, "{\"type\":\"unit\"");
  p = strstr(p, "\"reported\":1700000000");
  ck_assert_ptr_nonnull(p);
  p[strlen("\"reported\":170000000")] = '1';
  rewrite_summed(ev, buf, len);
  ck_assert_int_eq(verify_file(ev, &(verify_opts_t){.kernel = "reference"}, &rep, err, sizeof err),
                   VERIFY_FAILED);
  ck_assert_msg(strstr(err, "root mismatch"), "%s", err);
  ck_assert_int_eq(receipts(ev, rp, root, &rr, err, sizeof err), 1);
  ck_assert_uint_eq(rr.changed, 1);
  ck_assert_uint_eq(rr.found, units);
  ck_assert_msg(strstr(err, "CHANGED"), "%s", err);
  free(buf);
  /* Client a's result of the fifth unit removed: a missing receipt. */
  f = build(8, 20, T_NONE, 0, NULL);
  o = fopen(ev, "wb");
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, k, o);
  fclose(f);
  fclose(o);
  buf = slurp(ev, &len);
  p = buf;
  for (int i = 0; i < 5; i++) p = strstr(p + 1, "{\"type\":\"unit\"");
  char *r0 = strstr(p, "{\"id\":"), *r1 = strstr(r0 + 1, "{\"id\":");
  ck_assert(r0 && r1);
  memmove(r0, r1, len - (size_t)(r1 - buf) + 1);
  len -= (size_t)(r1 - r0);
  rewrite_summed(ev, buf, len);
  free(buf);
  ck_assert_int_eq(receipts(ev, rp, NULL, &rr, err, sizeof err), 1);
  ck_assert_uint_eq(rr.missing, 1);
  ck_assert(!rr.root_ok); /* the first problem named: the root no longer fits the results */
  ck_assert_msg(strstr(err, "ROOT MISMATCH"), "%s", err);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- every way a unit is settled, from a real store ---------------------------------------- */

/* Export the job of f (signed with the store's key) and check it with every unit recounted and
 * the key pinned; then once more with --sample 1 (audit-settled units are recomputed whatever the
 * sample). */
static void export_verify(fx_t *f, verify_report_t *rep, verify_report_t *rep1) {
  char fpr[65], path[700], err[1024];
  ck_assert_int_eq(srv_evkey_ensure(f->st, NULL, fpr), 0);
  snprintf(path, sizeof path, "%s/evidence.jsonl", f->dir);
  FILE *o = fopen(path, "w");
  ck_assert_ptr_nonnull(o);
  nq_admin_export_t info;
  int rc = srv_export_write(f->st, f->job.id, NQ_EV_DISTINCT_OWNER, 1, T0 + 900000, o, &info, err,
                            sizeof err);
  ck_assert_msg(rc == 0, "export: %s", err);
  ck_assert_int_eq(fclose(o), 0);
  /* The root the server shows (srv_export_root over the store) is the file's. */
  nq_merkle_t m;
  unsigned char md[32];
  char live[65];
  srv_job_t job;
  ck_assert_int_eq(srv_job_get(f->st, f->job.id, &job), 0);
  ck_assert_int_eq(srv_export_root(f->st, &job, &m), 0);
  ck_assert_int_eq(nq_merkle_root(&m, md), 0);
  nq_hex_encode(md, sizeof md, live);
  ck_assert_str_eq(live, info.root);
  ck_assert_uint_eq(m.leaves, info.leaves);
  ck_assert_uint_gt(info.leaves, 0);
  verify_opts_t vo = {.sample = UINT64_MAX, .seed = 1, .kernel = "reference", .threads = 1,
                      .key = fpr, .root = live};
  rc = verify_file(path, &vo, rep, err, sizeof err);
  ck_assert_msg(rc == VERIFY_OK, "nq-verify --sample all: %s", err);
  ck_assert(rep->is_signed && rep->has_root);
  ck_assert_str_eq(rep->root, live);
  ck_assert_str_eq(rep->key_fpr, fpr);
  ck_assert_uint_eq(rep->units, (uint64_t)f->job.units);
  /* A receipt of every result, as the server's acks carry them (srv_result_leaf): each one is in
   * the file under its root. */
  char rpath[700], line[NQ_RECEIPT_LINE_MAX];
  snprintf(rpath, sizeof rpath, "%s/receipts", f->dir);
  FILE *rf = fopen(rpath, "w");
  ck_assert_ptr_nonnull(rf);
  uint64_t kept = 0;
  for (int64_t id = 1; id < 20000; id++) {
    nq_receipt_t r = {.id = id};
    if (srv_result_leaf(f->st, id, &r.job, r.unit, sizeof r.unit, r.leaf) != 0) continue;
    ck_assert_int_gt(nq_receipt_format(&r, line, sizeof line), 0);
    fputs(line, rf);
    kept++;
  }
  ck_assert_int_eq(fclose(rf), 0);
  ck_assert_uint_eq(kept, info.leaves);
  nq_receipts_report_t rr;
  FILE *ev = fopen(path, "rb");
  rc = nq_receipts_check(ev, rpath, live, NULL, 0, &rr, err, sizeof err);
  fclose(ev);
  ck_assert_msg(rc == 0, "receipts: %s", err);
  ck_assert_uint_eq(rr.found, kept);
  ck_assert_uint_eq(rr.missing + rr.changed + rr.unit_differs, 0);
  /* Pseudonymised (the default of nq-admin export and /api/export): no client's or owner's
   * name, the same root (names are not in the leaves), and it verifies: distinct names stay
   * distinct, so the quorum of distinct owners holds. */
  o = fopen(path, "w");
  ck_assert_ptr_nonnull(o);
  nq_admin_export_t pinfo;
  rc = srv_export_write(f->st, f->job.id, NQ_EV_DISTINCT_OWNER, 0, T0 + 900000, o, &pinfo, err,
                        sizeof err);
  ck_assert_msg(rc == 0, "export: %s", err);
  ck_assert_int_eq(fclose(o), 0);
  ck_assert_str_eq(pinfo.root, info.root);
  char *text = slurp(path, NULL);
  ck_assert_ptr_nonnull(text);
  static const char *const names[] = {"honest", "liar", "lab", "fresh1", "fresh2"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    ck_assert_msg(!strstr(text, names[i]), "the export names %s", names[i]);
  ck_assert(strstr(text, "\"client\":\"c-") && strstr(text, "\"owner\":\"o-"));
  free(text);
  rc = verify_file(path, &vo, rep1, err, sizeof err);
  ck_assert_msg(rc == VERIFY_OK, "pseudonymised: %s", err);
  vo.sample = 1;
  rc = verify_file(path, &vo, rep1, err, sizeof err);
  ck_assert_msg(rc == VERIFY_OK, "nq-verify --sample 1: %s", err);
}

/* One round of actors: each asks for two units and answers the truth, or a lie (liar). */
static int paths_round(fx_t *f, const int64_t *cl, const int *liar, int n, int64_t *now) {
  int done = 0;
  for (int i = 0; i < n; i++) {
    srv_work_t w[2];
    srv_nowork_t why = SRV_NOWORK_NONE;
    int got = fx_work(f, cl[i], 2, (*now)++, w, &why);
    if (got == NQ_EBANNED) continue;
    ck_assert_int_ge(got, 0);
    done |= got == 0 && why == SRV_NOWORK_DONE;
    for (int k = 0; k < got; k++) {
      nq_counts_t c = liar[i] ? fx_lie(w[k].unit) : fx_solve(w[k].unit);
      srv_result_info_t info;
      int rc = fx_report(f, cl[i], w[k].id, w[k].unit, &c, NQ_SOLVER_VERSION, *now, &info);
      ck_assert(rc == 0 || rc == NQ_EBANNED);
      done |= rc == 0 && info.job_done;
    }
  }
  return done;
}

/* A job finished through every settling path -- its quorum, a trusted owner's result (a liar's
 * disagreement contested the units), the operator's audit (srv_sched_settle, as nq-admin audit
 * does on a disagreement) and the operator's re-opening (then a fresh quorum) -- exports a file
 * that nq-verify passes with every unit recounted, each unit by its own path's rule. */
START_TEST(every_settling_path_verifies) {
  fx_t f;
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.lease_seconds = 50;
  cfg.lease_min = 10;
  cfg.spot_check = 0;
  fx_init(&f, 8, 3, 2, 3, &cfg);
  int64_t cl[3] = {fx_client(&f, "honest"), fx_client(&f, "liar"), fx_client(&f, "lab")};
  int liar[3] = {0, 1, 0};
  ck_assert_int_eq(srv_owner_set_trusted(f.st, fx_client_of(&f, cl[2]).owner_id, 1), 0);
  int64_t now = T0;
  int done = 0;
  for (int r = 0; r < 3000 && !done; r++) done = paths_round(&f, cl, liar, 3, &now);
  ck_assert(done);
  verify_report_t rep, rep1;
  export_verify(&f, &rep, &rep1);
  ck_assert_uint_gt(rep.settled[NQ_EV_SETTLED_TRUSTED], 0);
  ck_assert_uint_gt(rep.settled[NQ_EV_SETTLED_QUORUM], 0);
  ck_assert_uint_eq(rep.settled[NQ_EV_SETTLED_AUDIT], 0);
  /* The operator's audit settles a unit with the reference count. */
  ck_assert_int_eq(srv_owner_set_trusted(f.st, fx_client_of(&f, cl[2]).owner_id, 0), 0);
  srv_job_t j;
  ck_assert_int_eq(srv_job_get(f.st, f.job.id, &j), 0);
  srv_unit_info_t u = fx_unit(&f, j.first_unit + 5);
  nq_counts_t truth = fx_solve(u.text);
  srv_result_info_t info;
  ck_assert_int_eq(srv_sched_settle(&f.sched, u.id, &truth, NQ_SOLVER_VERSION, now++, &info), 0);
  ck_assert(info.unit_settled);
  ck_assert_int_eq(srv_job_get(f.st, f.job.id, &j), 0);
  ck_assert_int_eq(j.state, SRV_JOB_DONE);
  export_verify(&f, &rep, &rep1);
  ck_assert_uint_eq(rep.settled[NQ_EV_SETTLED_AUDIT], 1);
  ck_assert_uint_eq(rep1.audits_recounted, 1);
  /* The operator re-opens a unit: two fresh clients verify it again by their quorum. */
  u = fx_unit(&f, j.first_unit + 7);
  uint64_t quorum_before = rep.settled[NQ_EV_SETTLED_QUORUM];
  int jr = 0;
  ck_assert_int_eq(srv_sched_reopen(&f.sched, u.id, now++, &jr), 0);
  int64_t fresh[2] = {fx_client(&f, "fresh1"), fx_client(&f, "fresh2")};
  fx_run_to_done(&f, fresh, 2, &now);
  export_verify(&f, &rep, &rep1);
  ck_assert_uint_eq(rep.settled[NQ_EV_SETTLED_AUDIT], 1);
  ck_assert_uint_ge(rep.settled[NQ_EV_SETTLED_QUORUM] + rep.settled[NQ_EV_SETTLED_TRUSTED],
                    quorum_before);
  fx_done(&f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("evidence");
  TCase *tc = tcase_create("evidence");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, lines_round_trip);
  tcase_add_test(tc, bad_lines_refused);
  tcase_add_test(tc, reader_digest_and_refusals);
  tcase_add_test(tc, plan_file_verifies);
  tcase_add_test(tc, broken_files_fail);
  tcase_add_test(tc, every_settling_path_verifies);
  tcase_add_test(tc, merkle_is_rfc6962);
  tcase_add_test(tc, root_and_receipts);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
