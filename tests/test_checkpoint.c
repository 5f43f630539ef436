/* tests/test_checkpoint.c: checkpoints (common/solver/checkpoint.c) and the runs that make and resume
 * them (common/solver/solver_pool.c).
 *   - the cut: a pure function of (subject, depth); tasks + expanded rows = the unexpanded unit;
 *     the rule's depth for small and record-sized units;
 *   - stop and resume: every unit of N=12 at depths 2 and 3, stopped after k finished tasks (k
 *     random, several per unit), saved, loaded, resumed on another thread count: counts and node
 *     count equal the uninterrupted solve; the same for all of N;
 *   - refusals: every truncation and every single-bit flip of a file, another unit, another
 *     solver or format version, a foreign cut, impossible sums, a bad bitmap -- refused, never
 *     used, and the resumed solve is still exact;
 *   - the file: durable save and load, and nq-solve's checkpointed solve across "restarts". */
#include "nq/certs.h"
#include "nq/checkpoint.h"
#include "nq/files.h"
#include "nq/hash.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/solver_pool.h"
#include "nq/unit.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned rng = 12345;

static unsigned rnd(unsigned n) {
  rng = rng * 1103515245u + 12345u;
  return (rng >> 8) % n;
}

static void assert_counts_eq(const nq_counts_t *a, const nq_counts_t *b, const char *what) {
  ck_assert_msg(a->c2 == b->c2 && a->c4 == b->c4 && a->c8 == b->c8 && a->nodes == b->nodes &&
                    a->count1 == b->count1,
                "%s: c2 %llu/%llu c4 %llu/%llu c8 %llu/%llu nodes %llu/%llu", what,
                (unsigned long long)a->c2, (unsigned long long)b->c2, (unsigned long long)a->c4,
                (unsigned long long)b->c4, (unsigned long long)a->c8, (unsigned long long)b->c8,
                (unsigned long long)a->nodes, (unsigned long long)b->nodes);
}

/* ---- stopping a run after k finished tasks ---- */

typedef struct stop_s {
  volatile int cancel;
  uint32_t after;
} stop_t;

/* The subject of one unit, from its text. */
static nq_subject_t subject_of(const char *text) {
  nq_unit_t u;
  nq_subject_t s;
  ck_assert_int_eq(nq_unit_parse(text, &u, NULL, 0), 0);
  ck_assert_int_eq(nq_subject_unit(&s, &u), 0);
  return s;
}

static void stop_after(nq_run_t *r, void *arg) {
  stop_t *s = arg;
  nq_run_status_t st;
  nq_run_status(r, &st);
  if (st.ndone >= s->after) s->cancel = 1;
}

/* An empty checkpoint with the cut at `depth`: resuming from it makes a run use that cut. */
static void empty_ckpt(const nq_subject_t *s, int depth, nq_ckpt_t *c) {
  nq_cut_t cut;
  ck_assert_int_eq(nq_cut_make(s, depth, &cut), 0);
  ck_assert_int_eq(nq_ckpt_init(c, s, cut.depth, cut.ntasks, cut.hash), 0);
  nq_cut_free(&cut);
}

/* Solve s (cut at depth, or the rule's at 0) on one thread and stop once `after` tasks are
 * finished; the snapshot goes through the file format. Returns the decoded checkpoint. */
static void run_and_stop(const nq_subject_t *s, int depth, uint32_t after, nq_ckpt_t *out) {
  nq_ckpt_t start;
  nq_run_t *r;
  char why[NQ_CKPT_ERR_MAX];
  if (depth) empty_ckpt(s, depth, &start);
  ck_assert_int_eq(nq_run_new(s, depth ? &start : NULL, &r, why, sizeof why), 0);
  ck_assert_str_eq(why, "");
  if (depth) nq_ckpt_free(&start);
  stop_t st = {after == 0, after};
  nq_run_on_interval(r, 1e-9, stop_after, &st); /* after every task */
  nq_solve_opts_t o = {1, NULL, NULL, &st.cancel, NULL, NULL, 0};
  nq_counts_t c;
  int rc = nq_run_solve(r, &o, &c);
  nq_ckpt_t snap;
  ck_assert_int_eq(nq_run_snapshot(r, &snap), 0);
  ck_assert(rc == 0 || rc == NQ_ECANCELED);
  if (rc == NQ_ECANCELED) ck_assert_uint_eq(snap.ndone, after); /* one thread stops exactly there */
  char *buf;
  size_t len;
  ck_assert_int_eq(nq_ckpt_encode(&snap, &buf, &len), 0);
  char err[NQ_CKPT_ERR_MAX] = "";
  ck_assert_msg(nq_ckpt_decode(buf, len, out, err, sizeof err) == 0, "decode: %s", err);
  ck_assert_uint_eq(out->ndone, snap.ndone);
  ck_assert_int_eq(memcmp(out->done, snap.done, (snap.ntasks + 7) / 8), 0);
  assert_counts_eq(&out->sum, &snap.sum, "decoded sums");
  free(buf);
  nq_ckpt_free(&snap);
  nq_run_free(r);
}

/* Resume c on `threads` threads; the result must be `want` exactly. */
static void resume_exact(const nq_subject_t *s, const nq_ckpt_t *c, int threads,
                         const nq_counts_t *want, const char *what) {
  nq_run_t *r;
  char why[NQ_CKPT_ERR_MAX];
  ck_assert_int_eq(nq_run_new(s, c, &r, why, sizeof why), 0);
  ck_assert_msg(why[0] == '\0', "%s: refused: %s", what, why);
  nq_run_status_t st;
  nq_run_status(r, &st);
  ck_assert_uint_eq(st.resumed, c->ndone);
  nq_solve_opts_t o = {threads, NULL, NULL, NULL, NULL, NULL, 0};
  nq_counts_t got;
  ck_assert_int_eq(nq_run_solve(r, &o, &got), 0);
  assert_counts_eq(&got, want, what);
  nq_run_free(r);
}

/* ---- the cut ---- */

typedef struct units_s {
  nq_unit_t v[4096];
  int n;
} units_t;

static int collect(const nq_unit_t *u, void *arg) {
  units_t *l = arg;
  if (l->n < 4096) l->v[l->n++] = *u;
  return 0;
}

START_TEST(cut_is_exact_and_pure) {
  for (int n = 8; n <= 12; n++) {
    units_t l = {.n = 0};
    ck_assert_int_eq(nq_units_generate(n, 2, collect, &l), 0);
    for (int i = 0; i < l.n; i++) {
      nq_subject_t s;
      ck_assert_int_eq(nq_subject_unit(&s, &l.v[i]), 0);
      nq_counts_t ref;
      ck_assert_int_eq(nq_fast_solve_unit(&l.v[i], &ref), 0);
      for (int d = 0; d <= n - 3; d++) { /* the rule's cut, then every depth to N-3 */
        if (d && d < s.depth) continue;
        nq_cut_t a, b;
        ck_assert_int_eq(nq_cut_make(&s, d, &a), 0);
        ck_assert_int_eq(nq_cut_make(&s, d, &b), 0);
        ck_assert_int_eq(a.ntasks, b.ntasks);
        ck_assert_int_eq(memcmp(a.hash, b.hash, sizeof a.hash), 0);
        /* Tasks at one depth, in order; their counts plus the expanded rows are the unit's. */
        nq_counts_t sum = {0};
        for (uint32_t k = 0; k < a.ntasks; k++) {
          ck_assert_int_eq(a.tasks[k].depth, a.depth);
          nq_counts_t c;
          ck_assert_int_eq(nq_fast_solve_unit(&a.tasks[k], &c), 0);
          nq_counts_add(&sum, &c);
        }
        sum.nodes += a.internal;
        assert_counts_eq(&sum, &ref, "cut");
        nq_cut_free(&a);
        nq_cut_free(&b);
      }
    }
  }
  /* Out of range depths are refused. */
  nq_subject_t s;
  ck_assert_int_eq(nq_subject_unit(&s, &(nq_unit_t){0}), NQ_ERANGE);
  nq_unit_t u;
  ck_assert_int_eq(nq_unit_parse("12:c:3:0,3,5", &u, NULL, 0), 0);
  ck_assert_int_eq(nq_subject_unit(&s, &u), 0);
  nq_cut_t c;
  ck_assert_int_eq(nq_cut_make(&s, 2, &c), NQ_ERANGE);
  ck_assert_int_eq(nq_cut_make(&s, 12, &c), NQ_ERANGE);
}
END_TEST

/* The rule: small units stay whole, big ones are cut finely but within the bounds. */
START_TEST(cut_rule_depths) {
  nq_subject_t s;
  nq_unit_t u;
  nq_cut_t c;
  ck_assert_int_eq(nq_unit_parse("12:c:3:0,3,5", &u, NULL, 0), 0);
  ck_assert_int_eq(nq_subject_unit(&s, &u), 0);
  ck_assert_int_eq(nq_cut_make(&s, 0, &c), 0);
  ck_assert_int_eq(c.depth, 3); /* tasks under 13 rows are not worth splitting */
  ck_assert_uint_eq(c.ntasks, 1);
  nq_cut_free(&c);
  /* N=18 at depth 2: cut for balance, tasks kept at least 13 rows above the last. */
  ck_assert_int_eq(nq_unit_parse("18:s:2:2,9", &u, NULL, 0), 0);
  ck_assert_int_eq(nq_subject_unit(&s, &u), 0);
  ck_assert_int_eq(nq_cut_make(&s, 0, &c), 0);
  ck_assert_int_eq(18 - c.depth, NQ_CUT_ROWS_MIN);
  ck_assert_uint_gt(c.ntasks, 100);
  nq_cut_free(&c);
  /* A record-sized unit (N=27 at depth 3: hours): as fine as the task cap allows. */
  units_t l = {.n = 0};
  ck_assert_int_eq(nq_units_generate(27, 3, collect, &l), 0);
  ck_assert_int_eq(nq_subject_unit(&s, &l.v[l.n / 2]), 0);
  ck_assert_int_eq(nq_cut_make(&s, 0, &c), 0);
  ck_assert_uint_le(c.ntasks, NQ_CKPT_TASKS_MAX);
  ck_assert_uint_gt(c.ntasks, NQ_CKPT_TASKS_MAX / 32);
  ck_assert_int_ge(c.depth, 6);
  nq_cut_free(&c);
  /* All of N: at least the asked depth. */
  ck_assert_int_eq(nq_subject_whole(&s, 14, 4), 0);
  ck_assert_int_eq(nq_cut_make(&s, 0, &c), 0);
  ck_assert_int_ge(c.depth, 4);
  nq_cut_free(&c);
}
END_TEST

/* ---- stop and resume ---- */

static void stop_resume_units(int n, int depth, int cut_extra) {
  units_t l = {.n = 0};
  ck_assert_int_eq(nq_units_generate(n, depth, collect, &l), 0);
  ck_assert_int_gt(l.n, 0);
  int resumed = 0;
  for (int i = 0; i < l.n; i++) {
    nq_subject_t s;
    ck_assert_int_eq(nq_subject_unit(&s, &l.v[i]), 0);
    nq_counts_t ref;
    ck_assert_int_eq(nq_fast_solve_unit(&l.v[i], &ref), 0);
    int d = depth + cut_extra > n - 4 ? n - 4 : depth + cut_extra;
    nq_cut_t cut;
    ck_assert_int_eq(nq_cut_make(&s, d, &cut), 0);
    uint32_t total = cut.ntasks;
    nq_cut_free(&cut);
    for (int rep = 0; rep < 3; rep++) {
      uint32_t k = total ? rnd(total + 1) : 0;
      nq_ckpt_t c;
      run_and_stop(&s, d, k, &c);
      char what[160];
      snprintf(what, sizeof what, "%s stopped after %u of %u tasks", "unit", k, total);
      resume_exact(&s, &c, 1 + (int)rnd(3), &ref, what);
      resumed += c.ndone > 0 && c.ndone < c.ntasks;
      nq_ckpt_free(&c);
    }
  }
  ck_assert_int_gt(resumed, l.n); /* mostly real mid-unit stops */
}

START_TEST(stop_resume_n12_depth2) {
  stop_resume_units(12, 2, 4);
}
END_TEST

START_TEST(stop_resume_n12_depth3) {
  stop_resume_units(12, 3, 3);
}
END_TEST

START_TEST(stop_resume_whole_n) {
  nq_subject_t s;
  ck_assert_int_eq(nq_subject_whole(&s, 13, 3), 0);
  nq_counts_t ref;
  nq_solve_opts_t o = {2, NULL, NULL, NULL, NULL, NULL, 0};
  ck_assert_int_eq(nq_solve_n(13, 3, &o, &ref), 0);
  for (int rep = 0; rep < 5; rep++) {
    nq_ckpt_t c;
    run_and_stop(&s, 6, 1 + rnd(2000), &c);
    resume_exact(&s, &c, 2, &ref, "N=13");
    nq_ckpt_free(&c);
  }
  /* A finished checkpoint answers at once; the rule's own cut resumes as well. */
  nq_ckpt_t c;
  run_and_stop(&s, 0, NQ_CKPT_TASKS_MAX + 1, &c);
  ck_assert_uint_eq(c.ndone, c.ntasks);
  ck_assert(nq_ckpt_fraction(&c, 0) == 1.0);
  resume_exact(&s, &c, 1, &ref, "N=13 finished");
  nq_ckpt_free(&c);
}
END_TEST

START_TEST(fraction_and_snapshot_seconds) {
  nq_subject_t s = subject_of("12:s:1:1,3");
  nq_ckpt_t c;
  run_and_stop(&s, 6, 10, &c);
  ck_assert_uint_eq(c.ndone, 10);
  double f = nq_ckpt_fraction(&c, 0);
  ck_assert(f > 0 && f < 1);
  ck_assert(f == 10.0 / c.ntasks);
  ck_assert(nq_ckpt_fraction(&c, c.sum.nodes * 4) == 0.25);
  ck_assert(nq_ckpt_fraction(&c, 1) == 0.999); /* a low estimate never says done */
  ck_assert(c.seconds >= 0);
  nq_ckpt_free(&c);
}
END_TEST

/* ---- refusals ---- */

static void encode_ckpt(const nq_ckpt_t *c, char **buf, size_t *len) {
  ck_assert_int_eq(nq_ckpt_encode(c, buf, len), 0);
}

/* A file from a body, with a correct checksum (a forged or foreign file, not a damaged one). */
static char *with_sum(const char *body, size_t *len) {
  unsigned char md[32];
  char hex[65];
  ck_assert_int_eq(nq_sha256(body, strlen(body), md), 0);
  nq_hex_encode(md, 32, hex);
  char *out = malloc(strlen(body) + 80);
  *len = (size_t)sprintf(out, "%s\nsha256 %s\n", body, hex);
  return out;
}

/* body with the first occurrence of `from` replaced by `to`. */
static char *edit(const char *file, const char *from, const char *to) {
  const char *nl = strchr(file, '\n');
  char *body = strndup(file, (size_t)(nl - file));
  char *p = strstr(body, from);
  ck_assert_msg(p != NULL, "no '%s' in %s", from, body);
  char *out = malloc(strlen(body) + strlen(to) + 1);
  sprintf(out, "%.*s%s%s", (int)(p - body), body, to, p + strlen(from));
  free(body);
  return out;
}

static void expect_refused(const char *body, const char *why) {
  size_t len;
  char *f = with_sum(body, &len);
  nq_ckpt_t c;
  char err[NQ_CKPT_ERR_MAX] = "";
  ck_assert_msg(nq_ckpt_decode(f, len, &c, err, sizeof err) == NQ_EINVAL, "accepted: %s", why);
  ck_assert_msg(err[0] != '\0', "no reason for: %s", why);
  free(f);
}

START_TEST(damaged_files_refused) {
  nq_subject_t s = subject_of("12:s:2:2,4,6");
  nq_ckpt_t c;
  run_and_stop(&s, 6, 3, &c);
  char *buf;
  size_t len;
  encode_ckpt(&c, &buf, &len);
  nq_ckpt_t d;
  char err[NQ_CKPT_ERR_MAX];
  /* Every truncation. */
  for (size_t k = 0; k < len; k++) {
    ck_assert_int_eq(nq_ckpt_decode(buf, k, &d, err, sizeof err), NQ_EINVAL);
    ck_assert(err[0] != '\0');
  }
  /* Every single-bit flip, in both lines. */
  for (size_t k = 0; k < len * 8; k++) {
    buf[k / 8] ^= (char)(1 << (k % 8));
    ck_assert_msg(nq_ckpt_decode(buf, len, &d, err, sizeof err) == NQ_EINVAL,
                  "bit %zu flipped and accepted", k);
    buf[k / 8] ^= (char)(1 << (k % 8));
  }
  ck_assert_int_eq(nq_ckpt_decode(buf, len, &d, err, sizeof err), 0);
  nq_ckpt_free(&d);
  /* Well-formed files with a valid checksum that are still not ours to use. */
  static const struct {
    const char *from, *to, *why;
  } edits[] = {
      {"\"solver\":\"" NQ_SOLVER_VERSION "\"", "\"solver\":\"nq-solver-0\"",
       "another solver version"},
      {NQ_CKPT_FORMAT, "nq-checkpoint-2", "another format"},
      {"\"tasks\":3,", "\"tasks\":4,", "done.tasks disagrees with the bitmap"},
      {"\"c2\":", "\"c2\":99999999999999,\"x\":", "an unknown field"},
      {"\"seconds\":", "\"seconds\":-1", "negative seconds"},
      {"12:s:2:2,4,6", "12:s:2:2,4,5", "a unit the generator never emits"},
      {"\"cut\":{\"depth\":6", "\"cut\":{\"depth\":2", "a cut above the unit"},
  };
  for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
    char *b = edit(buf, edits[i].from, edits[i].to);
    expect_refused(b, edits[i].why);
    free(b);
  }
  expect_refused("[]", "not an object");
  expect_refused("{\"format\":\"nq-checkpoint-1\",\"format\":\"nq-checkpoint-1\"}",
                 "duplicate keys");
  free(buf);
  nq_ckpt_free(&c);
}
END_TEST

START_TEST(impossible_sums_refused) {
  nq_subject_t s = subject_of("12:c:3:0,3,5");
  nq_ckpt_t c;
  run_and_stop(&s, 7, 5, &c);
  char *buf, *b, num[64];
  size_t len;
  /* c2 in a corner unit; more solutions than nodes; bits beyond the last task. */
  c.sum.c2 = 1;
  encode_ckpt(&c, &buf, &len);
  b = edit(buf, "", "");
  expect_refused(b, "COUNT2 in a corner unit");
  free(b);
  free(buf);
  c.sum.c2 = 0;
  c.sum.c8 = c.sum.nodes + 1;
  encode_ckpt(&c, &buf, &len);
  b = edit(buf, "", "");
  expect_refused(b, "more solutions than nodes");
  free(b);
  free(buf);
  c.sum.c8 = 0;
  snprintf(num, sizeof num, "\"nodes\":%llu", (unsigned long long)c.sum.nodes);
  encode_ckpt(&c, &buf, &len);
  b = edit(buf, num, "\"nodes\":2");
  expect_refused(b, "fewer nodes than finished tasks");
  free(b);
  free(buf);
  if (c.ntasks % 8) {
    c.done[c.ntasks / 8] |= (uint8_t)(0x80);
    c.ndone++;
    encode_ckpt(&c, &buf, &len);
    b = edit(buf, "", "");
    expect_refused(b, "a bit beyond the last task");
    free(b);
    free(buf);
  }
  nq_ckpt_free(&c);
}
END_TEST

/* Decodable but foreign: another unit, or a cut this solver does not make. The run refuses it,
 * says why, starts from zero and is still exact. */
START_TEST(foreign_checkpoints_not_used) {
  nq_unit_t a, b;
  ck_assert_int_eq(nq_unit_parse("12:s:2:2,4,6", &a, NULL, 0), 0);
  ck_assert_int_eq(nq_unit_parse("12:s:2:2,4,8", &b, NULL, 0), 0);
  nq_subject_t sa, sb;
  ck_assert_int_eq(nq_subject_unit(&sa, &a), 0);
  ck_assert_int_eq(nq_subject_unit(&sb, &b), 0);
  nq_counts_t ref;
  ck_assert_int_eq(nq_fast_solve_unit(&b, &ref), 0);
  nq_ckpt_t c;
  run_and_stop(&sa, 6, 4, &c);
  nq_run_t *r;
  char why[NQ_CKPT_ERR_MAX];
  nq_counts_t got;
  ck_assert_int_eq(nq_run_new(&sb, &c, &r, why, sizeof why), 0);
  ck_assert_msg(strstr(why, "12:s:2:2,4,6") != NULL, "why: %s", why);
  nq_run_status_t st;
  nq_run_status(r, &st);
  ck_assert_uint_eq(st.ndone, 0);
  ck_assert_int_eq(nq_run_solve(r, NULL, &got), 0);
  assert_counts_eq(&got, &ref, "after a foreign checkpoint");
  nq_run_free(r);
  /* Same unit, but a cut hash that is not ours (as if the generator had changed). */
  ck_assert_int_eq(nq_fast_solve_unit(&a, &ref), 0);
  c.cut_hash[0] ^= 1;
  ck_assert_int_eq(nq_run_new(&sa, &c, &r, why, sizeof why), 0);
  ck_assert_msg(strstr(why, "cut") != NULL, "why: %s", why);
  ck_assert_int_eq(nq_run_solve(r, NULL, &got), 0);
  assert_counts_eq(&got, &ref, "after a foreign cut");
  nq_run_free(r);
  /* A cut too deep to make (a crafted file) is refused before anything is walked. */
  c.cut_hash[0] ^= 1;
  c.cut_depth = 11;
  ck_assert_int_eq(nq_run_new(&sa, &c, &r, why, sizeof why), 0);
  ck_assert(why[0] != '\0');
  nq_run_free(r);
  nq_ckpt_free(&c);
}
END_TEST

/* ---- the file ---- */

START_TEST(file_save_load_and_checkpointed_solve) {
  char *dir = tu_tmpdir("ckpt");
  ck_assert_ptr_nonnull(dir);
  char path[600];
  snprintf(path, sizeof path, "%s/u.ckpt", dir);
  nq_ckpt_t c, d;
  char err[NQ_CKPT_ERR_MAX];
  ck_assert_int_eq(nq_ckpt_load(path, &d, err, sizeof err), NQ_ENOTFOUND);
  nq_subject_t s;
  nq_unit_t u;
  ck_assert_int_eq(nq_unit_parse("13:s:2:2,5", &u, NULL, 0), 0);
  ck_assert_int_eq(nq_subject_unit(&s, &u), 0);
  nq_counts_t ref, got;
  ck_assert_int_eq(nq_fast_solve_unit(&u, &ref), 0);
  /* A checkpoint that nq-solve left behind after a stop, then the same command again. */
  run_and_stop(&s, 0, 0, &c);
  nq_ckpt_free(&c);
  run_and_stop(&s, 7, 40, &c);
  ck_assert_int_eq(nq_ckpt_save(dir, "u.ckpt", &c), 0);
  ck_assert_int_eq(nq_ckpt_load(path, &d, err, sizeof err), 0);
  ck_assert_uint_eq(d.ndone, 40);
  nq_ckpt_free(&d);
  double secs = -1;
  nq_solve_opts_t o = {2, NULL, NULL, NULL, NULL, NULL, 0};
  ck_assert_int_eq(nq_solve_checkpointed(&s, &o, path, 60, &got, &secs), 0);
  assert_counts_eq(&got, &ref, "checkpointed solve");
  ck_assert(secs >= c.seconds);
  ck_assert_int_eq(nq_ckpt_load(path, &d, err, sizeof err), 0);
  ck_assert_uint_eq(d.ndone, d.ntasks); /* complete: the same command answers at once */
  nq_ckpt_free(&d);
  ck_assert_int_eq(nq_solve_checkpointed(&s, &o, path, 60, &got, NULL), 0);
  assert_counts_eq(&got, &ref, "checkpointed solve, again");
  /* A damaged file is replaced, and the count is still exact. */
  ck_assert_int_eq(nq_file_replace(dir, "u.ckpt", "garbage\n", 8, 0600), 0);
  ck_assert_int_eq(nq_solve_checkpointed(&s, &o, path, 60, &got, NULL), 0);
  assert_counts_eq(&got, &ref, "after a damaged file");
  ck_assert_int_eq(nq_ckpt_load(path, &d, err, sizeof err), 0);
  nq_ckpt_free(&d);
  /* A file too big to be one. */
  char *big = calloc(1, NQ_CKPT_FILE_MAX + 10);
  memset(big, 'x', NQ_CKPT_FILE_MAX + 9);
  ck_assert_int_eq(nq_file_replace(dir, "u.ckpt", big, NQ_CKPT_FILE_MAX + 9, 0600), 0);
  ck_assert_int_eq(nq_ckpt_load(path, &d, err, sizeof err), NQ_EINVAL);
  ck_assert(strstr(err, "too big") != NULL);
  free(big);
  nq_ckpt_free(&c);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("checkpoint");
  TCase *tc = tcase_create("checkpoint");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, cut_is_exact_and_pure);
  tcase_add_test(tc, cut_rule_depths);
  tcase_add_test(tc, stop_resume_n12_depth2);
  tcase_add_test(tc, stop_resume_n12_depth3);
  tcase_add_test(tc, stop_resume_whole_n);
  tcase_add_test(tc, fraction_and_snapshot_seconds);
  tcase_add_test(tc, damaged_files_refused);
  tcase_add_test(tc, impossible_sums_refused);
  tcase_add_test(tc, foreign_checkpoints_not_used);
  tcase_add_test(tc, file_save_load_and_checkpointed_solve);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
