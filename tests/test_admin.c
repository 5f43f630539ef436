/* Admin suite: the status/list JSON (server/core/admin_*.c) against the database truth of a job
 * driven through the real store and scheduler with units in every state; the admin API
 * (srv_admin_call, behind the protocol's admin request and reply) and its refusals; a finished job checked against the published values; and
 * the nq-admin binary (NQ_BIN_DIR): local mode output, client add, and its error paths. */
#include "nq/certs.h"
#include "nq/hash.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/unit.h"
#include "sched.h"
#include "admin_api.h"
#include "datadir.h"
#include "fx_store.h"
#include "nq/proto.h"
#include "store_api.h"
#include "store_int.h"
#include "store_stall.h"
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A fresh store whose clock is near the real one, so nq-admin (which reads the real clock) sees
 * the same picture. */
static void admin_fx(fx_t *f, const char *tag) {
  fx_open(f, tag, nq_now_wall() - 100);
}

/* Lease up to `want` units to a client in one transaction; returns how many came back. */
static int get_work(fx_t *f, int64_t client, int want, int64_t now, srv_work_t *out) {
  int n = 0;
  srv_nowork_t why;
  ck_assert_int_eq(srv_store_begin(f->st), 0);
  int rc = srv_sched_get_work(&f->sched, client, want, now, out, &n, &why);
  ck_assert_msg(rc == 0, "get_work: %s", srv_store_errmsg(f->st));
  ck_assert_int_eq(srv_store_commit(f->st), 0);
  return n;
}

static void solve(const char *text, nq_counts_t *c) {
  nq_unit_t u;
  char err[128];
  ck_assert_int_eq(nq_unit_parse(text, &u, err, sizeof err), 0);
  ck_assert_int_eq(nq_ref_solve_unit(&u, c), 0);
}

/* Report a result for assignment w; skew != 0 makes it wrong (c8 and nodes moved). */
static void report(fx_t *f, int64_t client, const srv_work_t *w, int skew, int64_t now) {
  nq_counts_t c;
  srv_result_info_t info;
  solve(w->unit, &c);
  c.c8 += (uint64_t)skew;
  c.nodes += (uint64_t)skew;
  ck_assert_int_eq(srv_store_begin(f->st), 0);
  int rc = fx_sched_result(&f->sched, client, w->id, w->unit, &c, 0.5, NQ_SOLVER_VERSION, NULL,
                            now, &info);
  ck_assert_msg(rc == 0, "result: %s (%s)", nq_strerror(rc), srv_store_errmsg(f->st));
  ck_assert_int_eq(srv_store_commit(f->st), 0);
}

static const srv_work_t *find_unit(const srv_work_t *w, int n, int64_t unit_id) {
  for (int i = 0; i < n; i++)
    if (w[i].unit_id == unit_id) return &w[i];
  return NULL;
}

/* Drive an N=8 job (quorum 2, dispute after 3 results) into every unit state:
 * u0 verified (A, B agree), u1 awaiting (A reported, B still leased), u2 disputed (A, B, C all
 * differ), u3 leased (A and C hold it), the rest pending. */
static void build_all_states(fx_t *f) {
  srv_work_t wa[8], wb[8], wc[8];
  fx_job(f, 8, 3, 2, 3, NULL);
  int64_t a = fx_client(f, "alpha"), b = fx_client(f, "bravo"), c = fx_client(f, "charlie");
  int64_t now = f->t0 + 10;
  ck_assert_int_eq(get_work(f, a, 4, now, wa), 4);
  ck_assert_int_eq(get_work(f, b, 3, now, wb), 3);
  /* B got the units A is working on (in progress first): the same three first units. */
  const srv_work_t *b0 = find_unit(wb, 3, wa[0].unit_id), *b1 = find_unit(wb, 3, wa[1].unit_id),
                   *b2 = find_unit(wb, 3, wa[2].unit_id);
  ck_assert_ptr_nonnull(b0);
  ck_assert_ptr_nonnull(b1);
  ck_assert_ptr_nonnull(b2);
  report(f, a, &wa[0], 0, now + 1);
  report(f, b, b0, 0, now + 1); /* u0 verified */
  report(f, a, &wa[1], 0, now + 2); /* u1 awaiting */
  report(f, a, &wa[2], 0, now + 3);
  report(f, b, b2, 1, now + 3); /* u2: two results that disagree */
  /* C is offered what still needs replicas: u3 (A alone) and u2 (one more vote). */
  int nc = get_work(f, c, 2, now + 4, wc);
  const srv_work_t *c2 = find_unit(wc, nc, wa[2].unit_id);
  ck_assert_ptr_nonnull(c2);
  report(f, c, c2, 2, now + 5); /* u2 disputed */
}

typedef struct {
  int64_t per_state[SRV_UNIT_NSTATES];
  nq_totals_t verified;
  int64_t all;
  double est_all, est_verified; /* the units' estimates (schema 005) */
} truth_t;

static int truth_cb(const srv_unit_info_t *u, void *arg) {
  truth_t *t = arg;
  t->per_state[u->state]++;
  t->all++;
  ck_assert_int_ge(u->est_nodes, 1);
  t->est_all += (double)u->est_nodes;
  if (u->state == SRV_UNIT_VERIFIED) {
    nq_totals_add(&t->verified, &u->counts);
    t->est_verified += (double)u->est_nodes;
  }
  return 0;
}

static const char *jstr(const json_t *o, const char *k1, const char *k2) {
  const json_t *v = json_object_get(o, k1);
  if (k2) v = json_object_get(v, k2);
  ck_assert_msg(json_is_string(v), "%s.%s is not a string", k1, k2 ? k2 : "");
  return json_string_value(v);
}

static int64_t jint(const json_t *o, const char *k1, const char *k2) {
  const json_t *v = json_object_get(o, k1);
  if (k2) v = json_object_get(v, k2);
  ck_assert_msg(json_is_integer(v), "%s.%s is not an integer", k1, k2 ? k2 : "");
  return (int64_t)json_integer_value(v);
}

START_TEST(status_matches_database) {
  fx_t f;
  admin_fx(&f, "admin");
  build_all_states(&f);
  truth_t t;
  memset(&t, 0, sizeof t);
  ck_assert_int_eq(srv_unit_list(f.st, f.job.id, -1, 0, truth_cb, &t), 0);
  for (int s = 0; s < SRV_UNIT_NSTATES; s++)
    ck_assert_msg(t.per_state[s] >= 1, "no unit is %s", srv_unit_state_name((srv_unit_state_t)s));

  json_t *st = srv_status_json(f.st, &f.job, NULL, f.t0 + 20);
  ck_assert_ptr_nonnull(st);
  /* Round trip through text: the object is valid JSON with the stable keys. */
  char *text = json_dumps(st, 0);
  json_error_t jerr;
  json_t *back = json_loads(text, 0, &jerr);
  free(text);
  ck_assert_ptr_nonnull(back);
  static const char *keys[] = {"now", "done", "job", "units", "results", "progress", "rate",
                               "verified", "final", "known", "match", "match_text", "clients",
                               "disputed"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    ck_assert_msg(json_object_get(back, keys[i]) != NULL, "missing key %s", keys[i]);

  ck_assert_int_eq(jint(back, "units", "total"), t.all);
  ck_assert_int_eq(jint(back, "units", "total"), f.job.units);
  for (int s = 0; s < SRV_UNIT_NSTATES; s++)
    ck_assert_int_eq(jint(back, "units", srv_unit_state_name((srv_unit_state_t)s)),
                     t.per_state[s]);
  char buf[40];
  ck_assert_str_eq(jstr(back, "verified", "c2"), nq_u128_str(t.verified.c2, buf));
  ck_assert_str_eq(jstr(back, "verified", "c4"), nq_u128_str(t.verified.c4, buf));
  ck_assert_str_eq(jstr(back, "verified", "c8"), nq_u128_str(t.verified.c8, buf));
  ck_assert_str_eq(jstr(back, "verified", "nodes"), nq_u128_str(t.verified.nodes, buf));
  ck_assert_str_eq(jstr(back, "verified", "total"), nq_u128_str(nq_totals_total(&t.verified), buf));
  ck_assert_str_eq(jstr(back, "verified", "unique"),
                   nq_u128_str(nq_totals_unique(&t.verified), buf));
  /* Progress by the plan's estimates: the verified units' share of the estimated work; the
   * work left is scaled by how the verified units came out against their estimates. */
  double v = (double)t.verified.nodes, nv = (double)t.per_state[SRV_UNIT_VERIFIED];
  double pct = json_real_value(json_object_get(json_object_get(back, "progress"), "percent"));
  ck_assert_double_eq_tol(pct, 100.0 * t.est_verified / t.est_all, 1e-6);
  ck_assert_str_eq(jstr(back, "progress", "method"), "estimate");
  double calib = json_real_value(json_object_get(json_object_get(back, "progress"),
                                                 "calibration"));
  ck_assert_double_eq_tol(calib, v / t.est_verified, 1e-9);
  double est_nodes = atof(jstr(back, "progress", "estimated_nodes"));
  ck_assert_double_eq_tol(est_nodes, v + (t.est_all - t.est_verified) * calib, 1.0);
  ck_assert(json_is_false(json_object_get(back, "done")));
  ck_assert(json_is_null(json_object_get(back, "match")));
  ck_assert(json_is_null(json_object_get(back, "final")));
  ck_assert_str_eq(jstr(back, "known", "total"), "92");
  ck_assert_int_eq(jint(back, "clients", "known"), 3);
  ck_assert_int_eq(jint(back, "clients", "banned"), 0);
  ck_assert_int_eq(jint(back, "job", "n"), 8);
  ck_assert_int_eq(jint(back, "job", "quorum"), 2);
  /* 6 results in the last 300 s; every one of them counted in the rate. */
  ck_assert_int_eq(jint(back, "rate", "results"), 6);
  ck_assert_int_eq(jint(back, "results", NULL), 6);
  ck_assert(json_is_integer(json_object_get(json_object_get(back, "rate"), "eta_s")));
  const json_t *disp = json_object_get(back, "disputed");
  ck_assert_int_eq((int)json_array_size(disp), (int)t.per_state[SRV_UNIT_DISPUTED]);
  ck_assert_int_eq((int)json_array_size(json_object_get(json_array_get(disp, 0), "replicas")), 3);
  json_decref(back);
  json_decref(st);
  /* A job made before schema 5 has no estimates: progress weighted by nodes, verified nodes /
   * (verified + average x the rest). */
  ck_assert_int_eq(srv_store_exec(f.st, "UPDATE units SET est_nodes = NULL; UPDATE job_stats SET "
                                        "est_units = 0, est_hi = 0, est_lo = 0, vest_hi = 0, "
                                        "vest_lo = 0"), 0);
  fx_check_counters(&f);
  st = srv_status_json(f.st, &f.job, NULL, f.t0 + 20);
  ck_assert_ptr_nonnull(st);
  double expect = 100.0 * v / (v + v / nv * (double)(t.all - t.per_state[SRV_UNIT_VERIFIED]));
  pct = json_real_value(json_object_get(json_object_get(st, "progress"), "percent"));
  ck_assert_double_eq_tol(pct, expect, 1e-6);
  ck_assert_str_eq(jstr(st, "progress", "method"), "nodes");
  ck_assert(json_is_null(json_object_get(json_object_get(st, "progress"), "calibration")));
  json_decref(st);
  fx_done(&f);
}
END_TEST

/* One admin request as the server serving job `serving` answers it (0: as nq-admin's local mode
 * does): parsed by the protocol, run by the admin API, answered with an admin_reply or the
 * refusal's error frame. */
static json_t *ask_as(fx_t *f, int64_t serving, const char *json) {
  json_error_t e;
  json_t *req = json_loads(json, 0, &e), *r, *data = NULL;
  ck_assert_ptr_nonnull(req);
  nq_admin_req_t q;
  nq_proto_err_t err;
  srv_admin_effects_t fx;
  if (nq_admin_req_parse(req, &q, &err) != 0 ||
      srv_admin_call(f->st, &f->job, serving, NULL, &q, f->t0 + 30, &data, &fx, &err) != 0) {
    r = nq_error_new(err.code, err.message, err.fatal);
  } else {
    nq_admin_reply_t rep = {q.cmd, data};
    r = nq_admin_reply_pack(&rep);
    json_decref(data);
  }
  json_decref(req);
  ck_assert_ptr_nonnull(r);
  return r;
}

static json_t *ask(fx_t *f, const char *json) { return ask_as(f, f->job.id, json); }

static void expect_error(fx_t *f, const char *json, const char *code) {
  json_t *r = ask(f, json);
  ck_assert_str_eq(json_string_value(json_object_get(r, "type")), "error");
  ck_assert_str_eq(json_string_value(json_object_get(r, "code")), code);
  ck_assert(json_is_false(json_object_get(r, "fatal")));
  json_decref(r);
}

START_TEST(admin_requests) {
  fx_t f;
  admin_fx(&f, "admin");
  build_all_states(&f);
  json_t *r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"units\",\"state\":\"disputed\"}");
  ck_assert_str_eq(json_string_value(json_object_get(r, "type")), "admin_reply");
  ck_assert_str_eq(json_string_value(json_object_get(r, "cmd")), "units");
  const json_t *units = json_object_get(json_object_get(r, "data"), "units");
  ck_assert_int_eq((int)json_array_size(units), 1);
  ck_assert_str_eq(json_string_value(json_object_get(json_array_get(units, 0), "state")),
                   "disputed");
  json_decref(r);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"units\",\"state\":\"pending\",\"limit\":2}");
  ck_assert_int_eq((int)json_array_size(json_object_get(json_object_get(r, "data"), "units")), 2);
  json_decref(r);

  /* client_add: the token is returned once and only its SHA-256 is stored. */
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"client_add\",\"name\":\"delta\"}");
  const json_t *d = json_object_get(r, "data");
  const char *token = json_string_value(json_object_get(d, "token"));
  ck_assert_ptr_nonnull(token);
  ck_assert_int_eq((int)strlen(token), 64);
  char hash[65];
  srv_client_t c;
  ck_assert_int_eq(nq_sha256_hex(token, hash), 0);
  ck_assert_int_eq(srv_client_find_token(f.st, hash, &c), 0);
  ck_assert_str_eq(c.name, "delta");
  ck_assert_int_eq(srv_client_find_token(f.st, token, &c), NQ_ENOTFOUND);
  json_decref(r);

  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"client_ban\",\"name\":\"alpha\"}");
  ck_assert(json_is_true(json_object_get(json_object_get(r, "data"), "banned")));
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "data"), "released")), 1); /* u3 */
  json_decref(r);
  ck_assert_int_eq(srv_client_find_name(f.st, "alpha", &c), 0);
  ck_assert_int_eq(c.banned, 1);

  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"clients\"}");
  const json_t *cl = json_object_get(json_object_get(r, "data"), "clients");
  ck_assert_int_eq((int)json_array_size(cl), 4);
  json_decref(r);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"status\"}");
  ck_assert_int_eq(json_integer_value(json_object_get(
                       json_object_get(json_object_get(r, "data"), "clients"), "banned")), 1);
  json_decref(r);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"jobs\"}");
  ck_assert_int_eq((int)json_array_size(json_object_get(json_object_get(r, "data"), "jobs")), 1);
  json_decref(r);

  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"client_add\",\"name\":\"delta\"}", "exists");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"client_add\",\"name\":\"bad name!\"}",
               "bad_message");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"client_ban\",\"name\":\"nobody\"}", "not_found");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"frobnicate\"}", "bad_message");
  expect_error(&f, "{\"type\":\"admin\"}", "bad_message");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"units\",\"state\":\"sleepy\"}", "bad_message");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"units\"}", "bad_message");
  fx_done(&f);
}
END_TEST

static int first_unit_cb(const srv_unit_info_t *u, void *arg) {
  *(srv_unit_info_t *)arg = *u;
  return 1; /* stop */
}

/* The first unit of the job in `state`. */
static srv_unit_info_t first_unit(fx_t *f, srv_unit_state_t state) {
  srv_unit_info_t u;
  memset(&u, 0, sizeof u);
  ck_assert_int_eq(srv_unit_list(f->st, f->job.id, (int)state, 1, first_unit_cb, &u), 1);
  ck_assert_int_gt(u.id, 0);
  return u;
}

static int alpha_lease_cb(const srv_asg_info_t *a, void *arg) {
  if (a->state != SRV_ASG_LEASED) return 0;
  *(srv_asg_info_t *)arg = *a;
  return 1; /* the first live lease: alpha's (it was leased first) */
}

/* Report progress on alpha's lease of the leased unit (u3): 25% after 100 s of solving, 1e9
 * nodes, at t0 + 20. Returns the unit. */
static srv_unit_info_t report_progress(fx_t *f) {
  srv_unit_info_t u = first_unit(f, SRV_UNIT_LEASED);
  srv_asg_info_t a;
  ck_assert_int_eq(srv_asg_list_unit(f->st, u.id, alpha_lease_cb, &a), 1);
  srv_client_t c;
  ck_assert_int_eq(srv_client_get(f->st, a.client_id, &c), 0);
  ck_assert_str_eq(c.name, "alpha");
  nq_progress_t p = {.id = a.id, .has_nodes = 1, .nodes = 1000000000, .has_fraction = 1,
                     .fraction = 0.25, .has_seconds = 1, .seconds = 100};
  int64_t dl;
  ck_assert_int_eq(srv_store_begin(f->st), 0);
  ck_assert_int_eq(srv_sched_progress(&f->sched, a.client_id, &p, f->t0 + 20, &dl), 0);
  ck_assert_int_eq(srv_store_commit(f->st), 0);
  return u;
}

/* Units being solved list who runs them and how far they are: percent, rate and ETA from the
 * last progress; a lease without a report says so (nulls). The status sums the reports. */
START_TEST(leased_units_show_progress) {
  fx_t f;
  admin_fx(&f, "admin");
  build_all_states(&f);
  srv_unit_info_t u = report_progress(&f);
  json_t *r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"units\",\"state\":\"leased\"}");
  const json_t *units = json_object_get(json_object_get(r, "data"), "units");
  ck_assert_int_eq((int)json_array_size(units), 1);
  const json_t *unit = json_array_get(units, 0);
  ck_assert_str_eq(jstr(unit, "unit", NULL), u.text);
  const json_t *run = json_object_get(unit, "running");
  ck_assert_int_eq((int)json_array_size(run), 2);
  const json_t *a = json_array_get(run, 0), *c = json_array_get(run, 1);
  ck_assert_str_eq(jstr(a, "client", NULL), "alpha");
  ck_assert(json_real_value(json_object_get(a, "percent")) == 25.0);
  ck_assert(json_real_value(json_object_get(a, "nodes_per_s")) == 1e7);
  /* 100 s for 25%: 300 s to go from the report, 10 s ago (ask() runs at t0 + 30). */
  ck_assert_int_eq(jint(a, "eta_s", NULL), 290);
  ck_assert_int_eq(jint(a, "progress_at", NULL), f.t0 + 20);
  ck_assert_str_eq(jstr(c, "client", NULL), "charlie");
  ck_assert(json_is_null(json_object_get(c, "percent")));
  ck_assert(json_is_null(json_object_get(c, "eta_s")));
  json_decref(r);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"status\"}");
  const json_t *prog = json_object_get(json_object_get(r, "data"), "progress");
  ck_assert_int_eq(jint(prog, "leased", NULL), 3); /* u1 (bravo), u3 (alpha, charlie) */
  ck_assert(json_real_value(json_object_get(prog, "leased_done")) == 0.25);
  json_decref(r);
  fx_done(&f);
}
END_TEST

/* Every JSON number in v, recursively: finite (jansson cannot hold anything else, so a view with
 * an inf would not exist at all) and, for keys ending in "_s", within 0..SRV_SECONDS_MAX. */
static void check_numbers(const json_t *v, const char *key) {
  if (json_is_object(v)) {
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v, k, x) check_numbers(x, k);
  } else if (json_is_array(v)) {
    for (size_t i = 0; i < json_array_size(v); i++) check_numbers(json_array_get(v, i), key);
  } else if (json_is_number(v) && key && !strcmp(key, "eta_s")) {
    ck_assert(json_is_integer(v));
    ck_assert_int_ge(json_integer_value(v), 0);
    ck_assert_int_le(json_integer_value(v), (json_int_t)SRV_SECONDS_MAX);
  }
}

/* Absurd progress reports, as the protocol parses them: nodes 2^63-1 in 5e-324 s, and
 * a fraction of 1e-300 after 100 s. Every admin view still answers, with a null rate and an ETA
 * clamped to 100 years instead of inf (a failed view, a fatal `internal` in remote mode) and an
 * undefined int64 conversion (-9223372036854775808). `units --state all` lists every unit. A
 * client whose leases lapsed shows as hoarding. */
START_TEST(absurd_progress_breaks_nothing) {
  fx_t f;
  admin_fx(&f, "admin");
  build_all_states(&f);
  srv_unit_info_t u = first_unit(&f, SRV_UNIT_LEASED);
  srv_asg_info_t a;
  ck_assert_int_eq(srv_asg_list_unit(f.st, u.id, alpha_lease_cb, &a), 1);
  static const char *const reports[] = {
      "{\"type\":\"progress\",\"id\":%lld,\"nodes\":9223372036854775807,\"seconds\":5e-324}",
      "{\"type\":\"progress\",\"id\":%lld,\"fraction\":1e-300,\"seconds\":100}"};
  for (int i = 0; i < 2; i++) {
    char buf[200];
    snprintf(buf, sizeof buf, reports[i], (long long)a.id);
    json_error_t je;
    json_t *m = json_loads(buf, 0, &je);
    ck_assert_ptr_nonnull(m);
    nq_progress_t p;
    nq_proto_err_t err;
    ck_assert_int_eq(nq_progress_parse(m, &p, &err), 0); /* legal on the wire */
    json_decref(m);
    int64_t dl;
    ck_assert_int_eq(srv_store_begin(f.st), 0);
    ck_assert_int_eq(srv_sched_progress(&f.sched, a.client_id, &p, f.t0 + 20 + i, &dl), 0);
    ck_assert_int_eq(srv_store_commit(f.st), 0);
    static const char *const views[] = {
        "{\"type\":\"admin\",\"cmd\":\"status\"}",
        "{\"type\":\"admin\",\"cmd\":\"units\",\"state\":\"leased\"}",
        "{\"type\":\"admin\",\"cmd\":\"units\",\"state\":\"all\"}",
        "{\"type\":\"admin\",\"cmd\":\"clients\"}", "{\"type\":\"admin\",\"cmd\":\"jobs\"}"};
    for (size_t k = 0; k < sizeof views / sizeof views[0]; k++) {
      json_t *r = ask(&f, views[k]);
      ck_assert_msg(!strcmp(json_string_value(json_object_get(r, "type")), "admin_reply"),
                    "%s after report %d: %s", views[k], i,
                    json_string_value(json_object_get(r, "message")));
      check_numbers(r, NULL);
      if (k == 1) {
        const json_t *run = json_object_get(json_array_get(json_object_get(
                                                json_object_get(r, "data"), "units"), 0),
                                            "running");
        const json_t *al = json_array_get(run, 0);
        if (i == 0) ck_assert(json_is_null(json_object_get(al, "nodes_per_s")));
        else ck_assert_int_eq(jint(al, "eta_s", NULL), (json_int_t)(SRV_SECONDS_MAX + 0.5));
      }
      if (k == 2) {
        const json_t *all = json_object_get(json_object_get(r, "data"), "units");
        ck_assert_int_eq((int)json_array_size(all), (int)f.job.units);
      }
      json_decref(r);
    }
  }
  /* A new client lets four leases lapse: hoarding. */
  int64_t c = fx_client(&f, "delta");
  srv_work_t w[4];
  ck_assert_int_eq(get_work(&f, c, 4, f.t0 + 21, w), 4);
  ck_assert_int_eq(get_work(&f, c, 1, f.t0 + 21 + 3600, w), 1);
  json_t *r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"clients\"}");
  const json_t *cl = json_object_get(json_object_get(r, "data"), "clients");
  int seen = 0;
  for (size_t i = 0; i < json_array_size(cl); i++) {
    const json_t *o = json_array_get(cl, i);
    int is_d = !strcmp(jstr(o, "name", NULL), "delta");
    seen += is_d;
    /* The others' few leases ran out as well: one or two lapses are no hoarding. */
    if (is_d) ck_assert_int_eq(jint(o, "lapses", NULL), 4);
    else ck_assert_int_lt(jint(o, "lapses", NULL), 4);
    ck_assert(json_is_true(json_object_get(o, "hoarding")) == is_d);
  }
  ck_assert_int_eq(seen, 1);
  json_decref(r);
  fx_done(&f);
}
END_TEST

/* unit_retry: refusals, then a disputed unit re-opened by its text; the next new clients get it
 * and their agreeing results verify the unit once they are a strict majority. */
START_TEST(admin_unit_retry) {
  fx_t f;
  char req[300];
  admin_fx(&f, "admin");
  build_all_states(&f);
  srv_unit_info_t disputed = first_unit(&f, SRV_UNIT_DISPUTED);
  srv_unit_info_t verified = first_unit(&f, SRV_UNIT_VERIFIED);

  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"unit_retry\"}", "bad_message");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":true}", "bad_message");
  snprintf(req, sizeof req, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":%lld,"
           "\"extra\":0}", (long long)disputed.id);
  expect_error(&f, req, "bad_message");
  snprintf(req, sizeof req, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":%lld,"
           "\"extra\":\"2\"}", (long long)disputed.id);
  expect_error(&f, req, "bad_message");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":999999}", "not_found");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":\"8:c:9:9\"}",
               "not_found");
  snprintf(req, sizeof req, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":%lld}",
           (long long)verified.id);
  expect_error(&f, req, "bad_state");
  ck_assert_int_eq(first_unit(&f, SRV_UNIT_DISPUTED).id, disputed.id); /* nothing changed */

  /* By its text, default extra = the job's quorum (2): cap 3 results + 2. */
  snprintf(req, sizeof req, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":\"%s\"}",
           disputed.text);
  json_t *r = ask(&f, req);
  ck_assert_str_eq(json_string_value(json_object_get(r, "type")), "admin_reply");
  ck_assert_str_eq(json_string_value(json_object_get(r, "cmd")), "unit_retry");
  const json_t *d = json_object_get(r, "data");
  ck_assert_int_eq(jint(d, "id", NULL), disputed.id);
  ck_assert_str_eq(jstr(d, "unit", NULL), disputed.text);
  ck_assert_str_eq(jstr(d, "state", NULL), "awaiting");
  ck_assert_int_eq(jint(d, "results", NULL), 3);
  ck_assert_int_eq(jint(d, "added", NULL), 2);
  ck_assert_int_eq(jint(d, "extra_results", NULL), 2);
  ck_assert_int_eq(jint(d, "max_results", NULL), 5);
  json_decref(r);
  /* A pending unit is neither disputed nor awaiting. */
  snprintf(req, sizeof req, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":%lld}",
           (long long)first_unit(&f, SRV_UNIT_PENDING).id);
  expect_error(&f, req, "bad_state");
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"status\"}");
  ck_assert_int_eq(jint(json_object_get(r, "data"), "units", "disputed"), 0);
  json_decref(r);

  /* A client that never had it gets it first and agrees with alpha: verified. */
  int64_t d_id = fx_client(&f, "delta");
  srv_work_t w;
  ck_assert_int_eq(get_work(&f, d_id, 1, f.t0 + 40, &w), 1);
  ck_assert_int_eq(w.unit_id, disputed.id);
  report(&f, d_id, &w, 0, f.t0 + 41);
  srv_unit_info_t u;
  ck_assert_int_eq(srv_unit_get(f.st, disputed.id, &u), 0);
  /* Two agree against two others: no strict majority yet; one more does it. */
  ck_assert_int_ne(u.state, SRV_UNIT_VERIFIED);
  int64_t e_id = fx_client(&f, "echo");
  ck_assert_int_eq(get_work(&f, e_id, 1, f.t0 + 42, &w), 1);
  ck_assert_int_eq(w.unit_id, disputed.id);
  report(&f, e_id, &w, 0, f.t0 + 43);
  ck_assert_int_eq(srv_unit_get(f.st, disputed.id, &u), 0);
  ck_assert_int_eq(u.state, SRV_UNIT_VERIFIED);
  fx_done(&f);
}
END_TEST

/* The trust commands: owners made with a key that only the reply shows, listed;
 * client_ban re-opens what the client verified, client_unban lifts it; unit_reopen takes a
 * verified unit back; unit_retry --all-disputed / --client; and their refusals. */
START_TEST(admin_trust_commands) {
  fx_t f;
  admin_fx(&f, "admin");
  build_all_states(&f);
  json_t *r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"owner_add\",\"name\":\"lab\"}");
  const json_t *d = json_object_get(r, "data");
  ck_assert_str_eq(jstr(d, "name", NULL), "lab");
  ck_assert_int_eq(strlen(jstr(d, "enrol_key", NULL)), 64);
  srv_owner_t o;
  char hash[65];
  ck_assert_int_eq(nq_sha256_hex(jstr(d, "enrol_key", NULL), hash), 0);
  ck_assert_int_eq(srv_owner_find_key(f.st, hash, &o), 0);
  json_decref(r);
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"owner_add\",\"name\":\"lab\"}", "exists");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"owner_add\",\"name\":\"a b\"}", "bad_message");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"owner_ban\",\"name\":\"nobody\"}", "not_found");
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"owners\"}");
  ck_assert_int_ge(json_array_size(json_object_get(json_object_get(r, "data"), "owners")), 5);
  json_decref(r);
  /* Trust: owner_trust / owner_untrust, shown by owners and status. */
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"owner_trust\",\"name\":\"lab\"}");
  d = json_object_get(r, "data");
  ck_assert(json_is_true(json_object_get(d, "trusted")));
  ck_assert_int_eq(jint(d, "trusted_owners", NULL), 1);
  json_decref(r);
  ck_assert_int_eq(srv_owner_find_name(f.st, "lab", &o), 0);
  ck_assert_int_eq(o.trusted, 1);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"status\"}");
  ck_assert_str_eq(jstr(json_object_get(r, "data"), "trust", "rests_on"), "trusted");
  json_decref(r);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"owner_untrust\",\"name\":\"lab\"}");
  ck_assert_int_eq(jint(json_object_get(r, "data"), "trusted_owners", NULL), 0);
  json_decref(r);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"status\"}");
  ck_assert_str_eq(jstr(json_object_get(r, "data"), "trust", "rests_on"), "votes");
  json_decref(r);
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"owner_trust\",\"name\":\"nobody\"}",
               "not_found");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"owner_trust\"}", "bad_message");
  /* alpha helped verify u0: banning it re-opens u0. */
  srv_unit_info_t verified = first_unit(&f, SRV_UNIT_VERIFIED);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"client_ban\",\"name\":\"alpha\"}");
  ck_assert_int_eq(jint(json_object_get(r, "data"), "reopened", NULL), 1);
  json_decref(r);
  srv_unit_info_t u;
  ck_assert_int_eq(srv_unit_get(f.st, verified.id, &u), 0);
  ck_assert_int_eq(u.state, SRV_UNIT_AWAITING);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"client_unban\",\"name\":\"alpha\"}");
  ck_assert(json_is_false(json_object_get(json_object_get(r, "data"), "banned")));
  json_decref(r);
  ck_assert_int_eq(fx_client_of(&f, 1).banned, 0);
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"client_unban\",\"name\":\"zulu\"}", "not_found");
  /* unit_reopen by id: every result of it stops voting. */
  char req[200];
  snprintf(req, sizeof req, "{\"type\":\"admin\",\"cmd\":\"unit_reopen\",\"unit\":%lld}",
           (long long)verified.id);
  r = ask(&f, req);
  ck_assert_str_eq(jstr(json_object_get(r, "data"), "state", NULL), "awaiting");
  json_decref(r);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments WHERE voided = 1 AND "
                                 "reported_at IS NOT NULL AND unit_id = (SELECT min(id) FROM units)"),
                   2);
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"unit_reopen\",\"unit\":999999}", "not_found");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"unit_reopen\",\"all_disputed\":true}",
               "bad_message");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":1,\"all_disputed\":true}",
               "bad_message");
  /* The disputed u2 has a result of charlie: retry --client charlie, then --all-disputed (none
   * left). */
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"client\":\"charlie\"}");
  ck_assert_int_eq(jint(json_object_get(r, "data"), "retried", NULL), 1);
  json_decref(r);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"all_disputed\":true}");
  ck_assert_int_eq(jint(json_object_get(r, "data"), "retried", NULL), 0);
  json_decref(r);
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"client\":\"zulu\"}", "not_found");
  fx_check_counters(&f);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* Onboarding: owner_rekey replaces the key (the old one stops), owner_unban lets the
 * owner's key enrol again, client_add puts a client under an owner. */
START_TEST(admin_onboarding_commands) {
  fx_t f;
  admin_fx(&f, "admin");
  build_all_states(&f);
  json_t *r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"owner_add\",\"name\":\"lab\"}");
  char old[65], fresh[65];
  ck_assert_int_eq(nq_sha256_hex(jstr(json_object_get(r, "data"), "enrol_key", NULL), old), 0);
  json_decref(r);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"owner_rekey\",\"name\":\"lab\"}");
  const json_t *d = json_object_get(r, "data");
  ck_assert_str_eq(jstr(d, "name", NULL), "lab");
  ck_assert_int_eq(nq_sha256_hex(jstr(d, "enrol_key", NULL), fresh), 0);
  json_decref(r);
  srv_owner_t o;
  ck_assert_str_ne(old, fresh);
  ck_assert_int_eq(srv_owner_find_key(f.st, old, &o), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_owner_find_key(f.st, fresh, &o), 0);
  ck_assert_str_eq(o.name, "lab");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"owner_rekey\",\"name\":\"default\"}",
               "bad_state");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"owner_rekey\",\"name\":\"nobody\"}",
               "not_found");
  /* client_add under lab; an unknown owner, and a banned one, are refused. */
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"client_add\",\"name\":\"lab-1\","
              "\"owner\":\"lab\"}");
  ck_assert_str_eq(jstr(json_object_get(r, "data"), "owner", NULL), "lab");
  json_decref(r);
  srv_client_t c;
  ck_assert_int_eq(srv_client_find_name(f.st, "lab-1", &c), 0);
  ck_assert_int_eq(c.owner_id, o.id);
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"client_add\",\"name\":\"x-1\","
                   "\"owner\":\"nobody\"}", "not_found");
  ck_assert_int_eq(srv_client_find_name(f.st, "x-1", &c), NQ_ENOTFOUND);
  ck_assert_int_eq(srv_owner_set_banned(f.st, o.id, 1), 0);
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"client_add\",\"name\":\"lab-2\","
                   "\"owner\":\"lab\"}", "bad_state");
  ck_assert_int_eq(srv_client_ban(f.st, c.id, f.t0 + 30), 0);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"owner_unban\",\"name\":\"lab\"}");
  d = json_object_get(r, "data");
  ck_assert(json_is_false(json_object_get(d, "banned")));
  ck_assert_int_eq(jint(d, "clients_banned", NULL), 1);
  json_decref(r);
  ck_assert_int_eq(srv_owner_get(f.st, o.id, &o), 0);
  ck_assert_int_eq(o.banned, 0);
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"owner_unban\",\"name\":\"nobody\"}",
               "not_found");
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

static const json_t *stalled_of(const json_t *st) {
  const json_t *x = json_object_get(st, "stalled");
  ck_assert_msg(json_is_object(x), "no stalled object");
  return x;
}

/* The one-owner job: every client enrolled under one owner, quorum 2 by owner. Every
 * unit is stalled (`owners`), with a message that says what to do, and there is no ETA however
 * many results came in; the view is cached, and an owner that joins ends the stall. */
START_TEST(stalled_one_owner) {
  fx_t f;
  srv_work_t wa[2], wb[2];
  admin_fx(&f, "admin");
  fx_job(&f, 8, 3, 2, 3, NULL);
  int64_t a = fx_client(&f, "alpha");
  int64_t b = fx_client_of_owner(&f, "bravo", fx_client_of(&f, a).owner_id);
  ck_assert_int_eq(get_work(&f, a, 2, f.t0 + 10, wa), 2);
  ck_assert_int_eq(get_work(&f, b, 2, f.t0 + 10, wb), 2);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_ne(wa[i].unit_id, wb[0].unit_id); /* one owner: never two replicas */
    report(&f, a, &wa[i], 0, f.t0 + 11);
    report(&f, b, &wb[i], 0, f.t0 + 11);
  }
  json_t *st = srv_status_json(f.st, &f.job, NULL, f.t0 + 20);
  ck_assert_ptr_nonnull(st);
  const json_t *x = stalled_of(st);
  ck_assert_int_eq(jint(x, "units", NULL), f.job.units);
  ck_assert_int_eq(jint(x, "by", "owners"), f.job.units);
  ck_assert_int_eq(jint(x, "keys", NULL), 1);
  ck_assert_int_eq(jint(x, "quorum", NULL), 2);
  ck_assert_str_eq(jstr(x, "distinct", NULL), "owner");
  ck_assert_msg(strstr(jstr(x, "message", NULL), "quorum 2 by owner") &&
                    strstr(jstr(x, "message", NULL), "nq-admin owner add"),
                "%s", jstr(x, "message", NULL));
  ck_assert_int_eq(jint(st, "units", "awaiting"), 4);
  ck_assert(json_is_null(json_object_get(json_object_get(st, "rate"), "eta_s")));
  json_decref(st);
  /* A second owner's client: the cached view still says stalled for SRV_STALL_CACHE_S ... */
  int64_t c = fx_client(&f, "charlie");
  srv_work_t wc;
  ck_assert_int_eq(get_work(&f, c, 1, f.t0 + 21, &wc), 1);
  st = srv_status_json(f.st, &f.job, NULL, f.t0 + 21);
  ck_assert_int_eq(jint(stalled_of(st), "by", "owners"), f.job.units);
  json_decref(st);
  /* ... then it is computed again: two owners can vote, nothing is stalled, and a lease plus the
   * results give an ETA. */
  st = srv_status_json(f.st, &f.job, NULL, f.t0 + 21 + SRV_STALL_CACHE_S);
  x = stalled_of(st);
  ck_assert_int_eq(jint(x, "units", NULL), 0);
  ck_assert_int_eq(jint(x, "keys", NULL), 2);
  ck_assert(json_is_null(json_object_get(x, "message")));
  ck_assert(json_is_integer(json_object_get(json_object_get(st, "rate"), "eta_s")));
  json_decref(st);
  /* Without the server's settings (local mode) the keys are those the server last ran with. */
  ck_assert_int_eq(srv_meta_set(f.st, SRV_META_QUORUM_DISTINCT, "client"), 0);
  st = srv_status_json(f.st, &f.job, NULL, f.t0 + 22 + SRV_STALL_CACHE_S);
  ck_assert_str_eq(jstr(stalled_of(st), "distinct", NULL), "client");
  ck_assert_int_eq(jint(stalled_of(st), "keys", NULL), 3);
  json_decref(st);
  fx_done(&f);
}
END_TEST

/* A job with every verified unit spot-checked (no auto-ban): alpha and bravo verify the first
 * unit with results skewed by `skew` (0: right), then the client `checker` gets its spot check
 * and answers with `check_skew`, which disagrees: the unit is re-opened with alpha's and bravo's
 * votes voided. *wa: alpha's assignment. */
static void spot_checked(fx_t *f, int skew, int check_skew, const char *checker, srv_work_t *wa) {
  srv_sched_config_t cfg;
  srv_sched_config_default(&cfg);
  cfg.spot_check = 100;
  cfg.ban_threshold = 0;
  admin_fx(f, "admin");
  fx_job(f, 8, 3, 2, 3, &cfg);
  int64_t a = fx_client(f, "alpha"), b = fx_client(f, "bravo"), c = fx_client(f, checker);
  srv_work_t wb, wc;
  ck_assert_int_eq(get_work(f, a, 1, f->t0 + 10, wa), 1);
  ck_assert_int_eq(get_work(f, b, 1, f->t0 + 10, &wb), 1);
  ck_assert_int_eq(wb.unit_id, wa->unit_id);
  report(f, a, wa, skew, f->t0 + 11);
  report(f, b, &wb, skew, f->t0 + 11);
  ck_assert_int_eq(get_work(f, c, 1, f->t0 + 12, &wc), 1);
  ck_assert_int_eq(wc.unit_id, wa->unit_id); /* the spot check */
  report(f, c, &wc, check_skew, f->t0 + 13);
}

/* The banned liar: alpha and bravo verify a unit, the liar's spot check disagrees and
 * re-opens it with their votes voided; once the liar is banned no owner is left that could vote
 * on it (`voted`), which status says. `units --state awaiting` shows the votes (voided ones
 * marked), and `unit retry` restores the honest votes, which verify the unit again. */
START_TEST(stalled_banned_liar) {
  fx_t f;
  srv_work_t wa;
  spot_checked(&f, 0, 1, "liar", &wa);
  srv_unit_info_t u;
  ck_assert_int_eq(srv_unit_get(f.st, wa.unit_id, &u), 0);
  ck_assert_int_eq(u.state, SRV_UNIT_AWAITING);
  /* Every key has voted on the re-opened unit: stalled, `voted`. */
  json_t *r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"status\"}");
  const json_t *x = stalled_of(json_object_get(r, "data"));
  ck_assert_int_eq(jint(x, "units", NULL), 1);
  ck_assert_int_eq(jint(x, "by", "voted"), 1);
  ck_assert_int_eq(jint(x, "keys", NULL), 3);
  ck_assert_msg(strstr(jstr(x, "message", NULL), "1 voted"), "%s", jstr(x, "message", NULL));
  json_decref(r);
  /* Its votes: three results, alpha's and bravo's voided by the liar's dissent, which votes. */
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"units\",\"state\":\"awaiting\"}");
  const json_t *reps = json_object_get(json_array_get(json_object_get(json_object_get(r, "data"),
                                                                      "units"), 0), "replicas");
  ck_assert_int_eq(json_array_size(reps), 3);
  int voided = 0, voting = 0;
  for (size_t i = 0; i < 3; i++) {
    voided += json_is_true(json_object_get(json_array_get(reps, i), "voided"));
    voting += json_is_true(json_object_get(json_array_get(reps, i), "votes"));
  }
  ck_assert_int_eq(voided, 2);
  ck_assert_int_eq(voting, 1);
  json_decref(r);
  /* The ban ends the dissent: the honest votes it voided stand again and verify the unit. */
  json_decref(ask(&f, "{\"type\":\"admin\",\"cmd\":\"client_ban\",\"name\":\"liar\"}"));
  ck_assert_int_eq(srv_unit_get(f.st, wa.unit_id, &u), 0);
  ck_assert_int_eq(u.state, SRV_UNIT_VERIFIED);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"status\"}");
  ck_assert_int_eq(jint(stalled_of(json_object_get(r, "data")), "units", NULL), 0);
  json_decref(r);
  fx_check_counters(&f);
  fx_check_invariants(&f);
  fx_done(&f);
}
END_TEST

/* unit_retry UNIT / --client LIAR on a unit a server before the ban's restore left awaiting
 * (its honest votes voided with the liar banned): retried, the votes nothing contradicts are
 * restored, which verifies it. */
START_TEST(retry_client_restores_awaiting) {
  for (int by_client = 0; by_client < 2; by_client++) {
    fx_t f;
    srv_work_t wa;
    spot_checked(&f, 0, 1, "liar", &wa);
    /* What such a server left: the liar banned, the unit awaiting, the honest votes voided. */
    ck_assert_int_eq(sqlite3_exec(f.st->db, "UPDATE clients SET banned = 1 WHERE name = 'liar'",
                                  NULL, NULL, NULL), SQLITE_OK);
    char req[200];
    if (by_client)
      snprintf(req, sizeof req, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"client\":\"liar\"}");
    else
      snprintf(req, sizeof req, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":%lld}",
               (long long)wa.unit_id);
    json_t *r = ask(&f, req);
    const json_t *d = json_object_get(r, "data");
    ck_assert_int_eq(jint(d, "restored", NULL), 2);
    if (by_client) {
      ck_assert_int_eq(jint(d, "retried", NULL), 1);
      ck_assert_int_eq(jint(d, "awaiting", NULL), 1);
      ck_assert_int_eq(jint(d, "verified", NULL), 1);
      ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(d, "units"), 0)),
                       wa.unit_id);
    } else {
      ck_assert_str_eq(jstr(d, "state", NULL), "verified");
    }
    json_decref(r);
    srv_unit_info_t u;
    ck_assert_int_eq(srv_unit_get(f.st, wa.unit_id, &u), 0);
    ck_assert_int_eq(u.state, SRV_UNIT_VERIFIED);
    fx_check_counters(&f);
    fx_check_invariants(&f);
    fx_done(&f);
  }
}
END_TEST

/* Retry restores no vote a voting result contradicts: with the disagreeing spot checker in good
 * standing, alpha's and bravo's votes stay voided (the unit waits for other owners). */
START_TEST(retry_keeps_contradicted_votes_voided) {
  fx_t f;
  srv_work_t wa;
  spot_checked(&f, 1, 0, "checker", &wa); /* alpha and bravo agree on a wrong answer */
  char req[200];
  snprintf(req, sizeof req, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":%lld}",
           (long long)wa.unit_id);
  json_t *r = ask(&f, req);
  const json_t *d = json_object_get(r, "data");
  ck_assert_int_eq(jint(d, "restored", NULL), 0);
  ck_assert_str_eq(jstr(d, "state", NULL), "awaiting");
  json_decref(r);
  fx_done(&f);
}
END_TEST

/* A whole small job at quorum 1: done, final totals, and the published-value check. */
START_TEST(finished_job_matches_published) {
  fx_t f;
  admin_fx(&f, "admin");
  fx_job(&f, 10, 3, 1, 2, NULL);
  int64_t a = fx_client(&f, "solo");
  srv_work_t w[256];
  for (int round = 0; round < 100; round++) {
    int n = get_work(&f, a, 16, f.t0 + 10, w);
    if (n == 0) break;
    for (int i = 0; i < n; i++) report(&f, a, &w[i], 0, f.t0 + 11);
  }
  json_t *st = srv_status_json(f.st, &f.job, NULL, f.t0 + 20);
  ck_assert_ptr_nonnull(st);
  ck_assert(json_is_true(json_object_get(st, "done")));
  ck_assert_str_eq(jstr(st, "final", "total"), "724");
  ck_assert_str_eq(jstr(st, "final", "unique"), "92");
  ck_assert(json_is_true(json_object_get(st, "match")));
  ck_assert_int_eq(jint(st, "units", "verified"), f.job.units);
  ck_assert_double_eq_tol(
      json_real_value(json_object_get(json_object_get(st, "progress"), "percent")), 100.0, 1e-9);
  ck_assert(strstr(jstr(st, "match_text", NULL), "MATCH") == jstr(st, "match_text", NULL));
  json_decref(st);
  fx_done(&f);
}
END_TEST

/* ---- the binary ------------------------------------------------------------------------------ */

/* Run a shell command, capture stdout+stderr into out; returns the exit status. */
static int run(const char *cmd, char *out, size_t len) {
  char full[2048];
  snprintf(full, sizeof full, "%s 2>&1", cmd);
  FILE *p = popen(full, "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(out, 1, len - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

START_TEST(binary_errors) {
  char cmd[1024], out[16384];
  char *dir = tu_tmpdir("admin-bin");
  const char *bin = tu_bin_dir();
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' status --data '%s'", bin, dir);
  int rc = run(cmd, out, sizeof out);
  ck_assert_int_ne(rc, 0);
  ck_assert_msg(strstr(out, "no database") != NULL, "missing-db message: %s", out);
  char db[700];
  struct stat sb;
  snprintf(db, sizeof db, "%s/nq.db", dir);
  ck_assert_msg(stat(db, &sb) != 0, "nq-admin created a database");

  snprintf(cmd, sizeof cmd, "'%s/nq-admin' frobnicate", bin);
  rc = run(cmd, out, sizeof out);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(out, "usage:") != NULL && strstr(out, "unknown command"), "%s", out);

  snprintf(cmd, sizeof cmd, "'%s/nq-admin'", bin);
  ck_assert_int_eq(run(cmd, out, sizeof out), 2);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' status --bogus", bin);
  ck_assert_int_eq(run(cmd, out, sizeof out), 2);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' units --data '%s'", bin, dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 2); /* --state is required */
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' unit retry --data '%s'", bin, dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 2); /* the unit is missing */
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' unit frob 5 --data '%s'", bin, dir);
  rc = run(cmd, out, sizeof out);
  ck_assert_int_eq(rc, 2);
  ck_assert_msg(strstr(out, "unknown subcommand") != NULL, "%s", out);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' unit retry 5 --extra 0 --data '%s'", bin, dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 2);
  static const char *cmds[] = {"status", "clients", "client", "jobs", "units", "unit"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    snprintf(cmd, sizeof cmd, "'%s/nq-admin' %s --help", bin, cmds[i]);
    ck_assert_int_eq(run(cmd, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "usage: nq-admin") != NULL, "%s --help: %s", cmds[i], out);
  }
  /* Remote mode: nobody listens on a fresh port -> a clear error, not a hang. */
  snprintf(db, sizeof db, "%s/ca.pem", dir);
  FILE *ca = fopen(db, "w");
  ck_assert_ptr_nonnull(ca);
  fclose(ca);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' status --server 127.0.0.1:%d --ca '%s' --token x", bin,
           tu_free_port(), db);
  ck_assert_int_eq(run(cmd, out, sizeof out), 1);
  ck_assert_msg(strstr(out, "nq-admin:") != NULL, "%s", out);
  tu_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(binary_local_mode) {
  fx_t f;
  char cmd[1024], out[65536];
  admin_fx(&f, "admin-bin");
  build_all_states(&f);
  const char *bin = tu_bin_dir();
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' status --json --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 0);
  json_error_t e;
  json_t *st = json_loads(out, 0, &e);
  ck_assert_msg(st != NULL, "status --json is not JSON: %s", out);
  ck_assert_int_eq(jint(st, "units", "disputed"), 1);
  ck_assert_int_eq(jint(st, "units", "total"), f.job.units);
  json_decref(st);

  snprintf(cmd, sizeof cmd, "'%s/nq-admin' status --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 0);
  ck_assert_msg(strstr(out, "progress") && strstr(out, "awaiting quorum") && strstr(out, "[#"),
                "%s", out);

  snprintf(cmd, sizeof cmd, "'%s/nq-admin' client add echo --json --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 0);
  json_t *r = json_loads(out, 0, &e);
  ck_assert_ptr_nonnull(r);
  char hash[65];
  srv_client_t c;
  ck_assert_int_eq(nq_sha256_hex(json_string_value(json_object_get(r, "token")), hash), 0);
  ck_assert_int_eq(srv_client_find_token(f.st, hash, &c), 0);
  ck_assert_str_eq(c.name, "echo");
  json_decref(r);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' client add echo --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 1);
  ck_assert_msg(strstr(out, "exists") != NULL, "%s", out);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' client ban echo --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 0);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' clients --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 0);
  ck_assert_msg(strstr(out, "BANNED") && strstr(out, "charlie"), "%s", out);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' units --state disputed --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 0);
  ck_assert_msg(strstr(out, "result from") != NULL, "%s", out);
  ck_assert_msg(strstr(out, "nq-admin unit retry") != NULL, "no hint: %s", out);
  report_progress(&f);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' units --state leased --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 0);
  ck_assert_msg(strstr(out, "running on alpha") && strstr(out, "25.0% done") &&
                    strstr(out, "1e+07 nodes/s") && strstr(out, "running on charlie"),
                "%s", out);

  /* unit retry: a bad unit and a unit that is not disputed are refused (exit 1), then the
   * disputed one is re-opened by id. */
  srv_unit_info_t disputed = first_unit(&f, SRV_UNIT_DISPUTED);
  srv_unit_info_t verified = first_unit(&f, SRV_UNIT_VERIFIED);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' unit retry 999999 --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 1);
  ck_assert_msg(strstr(out, "not_found") != NULL, "%s", out);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' unit retry 8:c:9:9 --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 1);
  ck_assert_msg(strstr(out, "not_found") != NULL, "%s", out);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' unit retry '%s' --data '%s'", bin, verified.text,
           f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 1);
  ck_assert_msg(strstr(out, "not disputed") && strstr(out, "bad_state"), "%s", out);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' unit retry %lld --extra 3 --data '%s'", bin,
           (long long)disputed.id, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 0);
  ck_assert_msg(strstr(out, "re-opened") && strstr(out, "awaiting"), "%s", out);
  srv_unit_info_t u;
  ck_assert_int_eq(srv_unit_get(f.st, disputed.id, &u), 0);
  ck_assert_int_eq(u.state, SRV_UNIT_AWAITING);
  ck_assert_int_eq(u.extra_results, 3);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' unit retry %lld --json --data '%s'", bin,
           (long long)disputed.id, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 0); /* awaiting now: retried again */
  ck_assert_msg(strstr(out, "\"restored\": 0") != NULL, "%s", out);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' jobs --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 0);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' status --data '%s' --n 9", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 1);
  fx_done(&f);
}
END_TEST

/* With more disputed units than the status object lists (SRV_STATUS_DISPUTED_MAX),
 * the table counts them all ("173 unit(s)", "... and 153 more"), not the capped list ("100",
 * "80 more"). The units are made disputed in the database directly: the counters follow by
 * trigger. */
START_TEST(binary_status_counts_every_disputed) {
  fx_t f;
  char cmd[1024], out[65536], want[96];
  admin_fx(&f, "admin-bin");
  fx_job(&f, 11, 3, 2, 3, NULL);
  ck_assert_int_gt(f.job.units, SRV_STATUS_DISPUTED_MAX + 20);
  ck_assert_int_eq(sqlite3_exec(f.st->db, "UPDATE units SET state = 'disputed'", NULL, NULL, NULL),
                   SQLITE_OK);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' status --data '%s'", tu_bin_dir(), f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 0);
  snprintf(want, sizeof want, "disputed   %lld unit(s) resolving", (long long)f.job.units);
  ck_assert_msg(strstr(out, want), "%s", out);
  snprintf(want, sizeof want, "  ... and %lld more\n", (long long)f.job.units - 20);
  ck_assert_msg(strstr(out, want), "%s", out);
  fx_done(&f);
}
END_TEST

/* job archive|delete through the protocol and the binary: refused for the job a server serves
 * (delete also over the network), refused while nq-server holds the data directory's lock (the
 * message names its pid), refused while clients hold leases unless --force; then archived
 * (rows kept, N free) and deleted (rows gone). */
START_TEST(binary_job_archive_delete) {
  fx_t f;
  char cmd[1024], out[16384];
  admin_fx(&f, "admin-job");
  build_all_states(&f);
  const char *bin = tu_bin_dir();
  json_t *r = ask_as(&f, f.job.id, "{\"type\":\"admin\",\"cmd\":\"job_archive\",\"n\":8}");
  ck_assert_str_eq(json_string_value(json_object_get(r, "type")), "error");
  ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(r, "message")), "serving"));
  json_decref(r);
  r = ask_as(&f, 99, "{\"type\":\"admin\",\"cmd\":\"job_delete\",\"n\":8,\"force\":true}");
  ck_assert_str_eq(json_string_value(json_object_get(r, "type")), "error");
  ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(r, "message")), "local mode"));
  json_decref(r);
  r = ask_as(&f, 0, "{\"type\":\"admin\",\"cmd\":\"job_archive\",\"n\":9}");
  ck_assert_str_eq(json_string_value(json_object_get(r, "code")), "not_found");
  json_decref(r);

  /* A server holds the directory: nothing is done, and the message says who. */
  int fd = -1;
  char err[1200], pid[32];
  ck_assert_int_eq(srv_datadir_lock(f.dir, &fd, err, sizeof err), 0);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' job archive 8 --force --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 1);
  snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
  ck_assert_msg(strstr(out, "in use by another nq-server") && strstr(out, pid), "%s", out);
  int fd2 = -1;
  ck_assert_int_eq(srv_datadir_lock(f.dir, &fd2, err, sizeof err), NQ_EBUSY);
  ck_assert_msg(strstr(err, "in use by another nq-server") && strstr(err, pid), "%s", err);
  close(fd);

  snprintf(cmd, sizeof cmd, "'%s/nq-admin' job archive 8 --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 1);
  ck_assert_msg(strstr(out, "lease(s)") && strstr(out, "--force"), "%s", out);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM jobs WHERE state = 'archived'"), 0);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' job archive 8 --force --json --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 0);
  json_error_t e;
  r = json_loads(out, 0, &e);
  ck_assert_msg(r != NULL, "not JSON: %s", out);
  ck_assert_str_eq(jstr(r, "state", NULL), "archived");
  ck_assert_int_eq(jint(r, "units", NULL), f.job.units);
  ck_assert_int_ge(jint(r, "released", NULL), 1);
  json_decref(r);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments WHERE state = 'leased'"), 0);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM units"), f.job.units);

  snprintf(cmd, sizeof cmd, "'%s/nq-admin' job delete 8 --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 0);
  ck_assert_msg(strstr(out, "deleted") && strstr(out, "same CA"), "%s", out);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM units"), 0);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM assignments"), 0);
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM jobs"), 0);
  ck_assert_int_eq(run(cmd, out, sizeof out), 1);
  ck_assert_msg(strstr(out, "no job for N=8") != NULL, "%s", out);

  snprintf(cmd, sizeof cmd, "'%s/nq-admin' job frob 8 --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 2);
  ck_assert_msg(strstr(out, "unknown subcommand") != NULL, "%s", out);
  snprintf(cmd, sizeof cmd, "'%s/nq-admin' job archive 40 --data '%s'", bin, f.dir);
  ck_assert_int_eq(run(cmd, out, sizeof out), 2);
  fx_done(&f);
}
END_TEST

/* The job queue through the protocol: job_add (checked as nq-server checks its job
 * options), job_list, job_cancel and their refusals. */
START_TEST(admin_job_queue) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  json_t *r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"job_add\",\"n\":11,\"depth\":4}");
  const json_t *d = json_object_get(r, "data");
  ck_assert_str_eq(jstr(r, "type", NULL), "admin_reply");
  ck_assert_int_eq(json_integer_value(json_object_get(d, "position")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(d, "quorum")), 2); /* the default */
  ck_assert_str_eq(jstr(d, "state", NULL), "queued");
  ck_assert(json_is_null(json_object_get(d, "job_id")));
  int64_t id = json_integer_value(json_object_get(d, "id"));
  json_decref(r);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"job_add\",\"n\":12,\"unit_seconds\":60,"
              "\"quorum\":3,\"max_results\":4}");
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "data"), "position")), 2);
  json_decref(r);
  /* Settings nq-server would refuse are refused here, with its words. */
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"job_add\",\"n\":11,\"depth\":20}");
  ck_assert_str_eq(jstr(r, "code", NULL), "bad_message");
  ck_assert_ptr_nonnull(strstr(jstr(r, "message", NULL), "depth"));
  json_decref(r);
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"job_add\",\"n\":11,\"quorum\":4,"
                   "\"max_results\":3}", "bad_message");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"job_add\",\"n\":11,\"depth\":4,"
                   "\"unit_seconds\":10}", "bad_message");
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM job_queue"), 2);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"job_list\"}");
  const json_t *q = json_object_get(json_object_get(r, "data"), "queue");
  ck_assert_int_eq((int)json_array_size(q), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(q, 0), "n")), 11);
  ck_assert(json_real_value(json_object_get(json_array_get(q, 1), "unit_seconds")) == 60);
  json_decref(r);
  char req[128];
  snprintf(req, sizeof req, "{\"type\":\"admin\",\"cmd\":\"job_cancel\",\"id\":%lld}",
           (long long)id);
  r = ask(&f, req);
  ck_assert_str_eq(jstr(json_object_get(r, "data"), "state", NULL), "cancelled");
  json_decref(r);
  expect_error(&f, req, "bad_state");
  expect_error(&f, "{\"type\":\"admin\",\"cmd\":\"job_cancel\",\"id\":99}", "not_found");
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"job_list\"}");
  ck_assert_int_eq((int)json_array_size(json_object_get(json_object_get(r, "data"), "queue")), 1);
  json_decref(r);
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"job_list\",\"all\":true}");
  ck_assert_int_eq((int)json_array_size(json_object_get(json_object_get(r, "data"), "queue")), 2);
  json_decref(r);
  /* job_next: the word to a running server; N=12 is next, the served N=8 still runs. */
  const char *next = "{\"type\":\"admin\",\"cmd\":\"job_next\"}";
  const char *force = "{\"type\":\"admin\",\"cmd\":\"job_next\",\"force\":true}";
  r = ask_as(&f, 0, next);
  ck_assert_str_eq(jstr(r, "code", NULL), "bad_state");
  ck_assert_ptr_nonnull(strstr(jstr(r, "message", NULL), "--server"));
  json_decref(r);
  r = ask(&f, next);
  ck_assert_str_eq(jstr(r, "code", NULL), "bad_state");
  ck_assert_ptr_nonnull(strstr(jstr(r, "message", NULL), "--force to set it aside"));
  json_decref(r);
  r = ask(&f, force);
  d = json_object_get(r, "data");
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(d, "next"), "n")), 12);
  ck_assert_int_eq(json_integer_value(json_object_get(d, "set_aside")), f.job.id);
  json_decref(r);
  /* Asking changes nothing in the store: the server switches after the commit. */
  ck_assert_int_eq(fx_q1(f.path, "SELECT count(*) FROM job_queue WHERE state = 'queued'"), 1);
  fx_done(&f);
  /* Nothing queued: not_found; the next entry for the served N: refused. */
  fx_init(&f, 8, 3, 2, 5, NULL);
  expect_error(&f, next, "not_found");
  r = ask(&f, "{\"type\":\"admin\",\"cmd\":\"job_add\",\"n\":8,\"depth\":4}");
  json_decref(r);
  expect_error(&f, force, "bad_state");
  fx_done(&f);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("admin");
  TCase *tc = tcase_create("status");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, status_matches_database);
  tcase_add_test(tc, admin_requests);
  tcase_add_test(tc, admin_unit_retry);
  tcase_add_test(tc, admin_trust_commands);
  tcase_add_test(tc, admin_onboarding_commands);
  tcase_add_test(tc, leased_units_show_progress);
  tcase_add_test(tc, absurd_progress_breaks_nothing);
  tcase_add_test(tc, finished_job_matches_published);
  tcase_add_test(tc, admin_job_queue);
  tcase_add_test(tc, stalled_one_owner);
  tcase_add_test(tc, stalled_banned_liar);
  tcase_add_test(tc, retry_keeps_contradicted_votes_voided);
  tcase_add_test(tc, retry_client_restores_awaiting);
  suite_add_tcase(s, tc);
  TCase *bin = tcase_create("binary");
  tcase_set_timeout(bin, 60);
  tcase_add_test(bin, binary_errors);
  tcase_add_test(bin, binary_local_mode);
  tcase_add_test(bin, binary_status_counts_every_disputed);
  tcase_add_test(bin, binary_job_archive_delete);
  suite_add_tcase(s, bin);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
