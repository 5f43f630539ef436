/* The typed views (nq/view.h, nq/admin_view.h): for every view, a round trip (struct -> JSON ->
 * struct -> the same JSON), a missing field and a field of the wrong type refused with an error
 * that names it; the views of a real store read back; and the one table of unit states against
 * the schema's CHECK list, which SQL cannot take from the header. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_api.h"
#include "fx_store.h"
#include "nq/admin_view.h"
#include "nq/nq.h"
#include "nq/proto.h"


/* ---- a full JSON object of each view, made from its table ---------------------------------- */

static json_t *sample_of(const nq_view_t *v, int seed);

/* A value of field f, distinct per seed: every optional field present, every nullable one set
 * (null is tested by the NULL fields' own round trip below). */
static json_t *sample_value(const nq_view_field_t *f, int seed) {
  char buf[64];
  switch (f->kind) {
  case NQ_VK_INT: return json_integer(1000 + seed);
  case NQ_VK_INTR: return json_integer(f->lo + seed % (f->hi - f->lo + 1));
  case NQ_VK_REALR: return json_real((double)f->lo + 0.5);
  case NQ_VK_REF:
  case NQ_VK_I32:
  case NQ_VK_U64: return json_integer(seed);
  case NQ_VK_BOOL: return json_boolean(seed & 1);
  case NQ_VK_REAL: return json_real(0.5 + seed);
  case NQ_VK_TEXT:
  case NQ_VK_CHARS:
  case NQ_VK_STR:
  case NQ_VK_STRN:
    snprintf(buf, sizeof buf, "%s-%d", f->key, seed);
    return json_string(buf);
  /* Above 64 bits: the reason these are strings. */
  case NQ_VK_U128:
    snprintf(buf, sizeof buf, "3689348814741910323%d", seed % 10);
    return json_string(buf);
  case NQ_VK_OBJ: return sample_of(f->sub, seed + 1);
  case NQ_VK_ARR:
    return json_pack("[o, o]", sample_of(f->sub, seed + 1), sample_of(f->sub, seed + 2));
  case NQ_VK_INTS: return json_pack("[I, I, I]", (json_int_t)seed, (json_int_t)-1, (json_int_t)7);
  case NQ_VK_COUNTS: break;
  }
  return NULL;
}

static json_t *sample_of(const nq_view_t *v, int seed) {
  json_t *o = json_object();
  for (size_t i = 0; i < v->nfields; i++) {
    const nq_view_field_t *f = &v->fields[i];
    if (f->kind == NQ_VK_COUNTS) {
      for (int k = 0; k < f->names->n; k++)
        json_object_set_new(o, f->names->names[k], json_integer(seed * 10 + k));
      continue;
    }
    json_object_set_new(o, f->key, sample_value(f, seed + (int)i));
  }
  return o;
}

/* parse(j) then pack: the same object, key for key in the same order. */
static void round_trip(const nq_view_t *v, const json_t *j) {
  char err[300];
  void *s = calloc(1, v->size);
  ck_assert_ptr_nonnull(s);
  int rc = nq_view_parse(v, j, s, err, sizeof err);
  ck_assert_msg(rc == 0, "%s: %s", v->name, err);
  json_t *back = nq_view_pack(v, s);
  ck_assert_ptr_nonnull(back);
  char *a = json_dumps(j, JSON_PRESERVE_ORDER | JSON_COMPACT);
  char *b = json_dumps(back, JSON_PRESERVE_ORDER | JSON_COMPACT);
  ck_assert_msg(!strcmp(a, b), "%s:\n%s\n%s", v->name, a, b);
  free(a);
  free(b);
  json_decref(back);
  nq_view_free(v, s);
  free(s);
}

START_TEST(every_view_round_trips) {
  for (size_t i = 0; i < nq_views_all_n; i++) {
    json_t *j = sample_of(nq_views_all[i], (int)i);
    round_trip(nq_views_all[i], j);
    /* Each NULL field as null, each OPT field left out: the same again. */
    for (size_t k = 0; k < nq_views_all[i]->nfields; k++) {
      const nq_view_field_t *f = &nq_views_all[i]->fields[k];
      if (f->flag == NQ_VF_NULL || f->kind == NQ_VK_STRN)
        json_object_set_new(j, f->key, json_null());
      if (f->flag == NQ_VF_OPT) json_object_del(j, f->key);
    }
    round_trip(nq_views_all[i], j);
    json_decref(j);
  }
}
END_TEST

/* Parse j as v: it must fail with NQ_EPROTO and a message starting with `want`. */
static void refused(const nq_view_t *v, const json_t *j, const char *want) {
  char err[300] = "";
  void *s = calloc(1, v->size);
  int rc = nq_view_parse(v, j, s, err, sizeof err);
  ck_assert_msg(rc == NQ_EPROTO, "%s: accepted, wanted '%s'", v->name, want);
  ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "'%s' does not start with '%s'", err, want);
  /* Nothing is left allocated, nothing is left half-filled. */
  for (size_t i = 0; i < v->size; i++) ck_assert_int_eq(((unsigned char *)s)[i], 0);
  free(s);
}

/* A JSON value of another type than field f's. */
static json_t *wrong_value(const nq_view_field_t *f) {
  switch (f->kind) {
  case NQ_VK_INT:
  case NQ_VK_INTR:
  case NQ_VK_COUNTS:
  case NQ_VK_INTS: return json_string("12");
  case NQ_VK_REAL:
  case NQ_VK_REALR: return json_string("1.5");
  case NQ_VK_REF:
  case NQ_VK_U64: return json_true();
  case NQ_VK_I32: return json_string("12");
  case NQ_VK_CHARS:
  case NQ_VK_TEXT:
  case NQ_VK_BOOL: return json_integer(1);
  case NQ_VK_STR:
  case NQ_VK_STRN: return json_integer(7);
  case NQ_VK_U128: return json_integer(7); /* a number, not the decimal string */
  case NQ_VK_OBJ:
  case NQ_VK_ARR: return json_string("x");
  }
  return NULL;
}

/* The request views of the admin commands (nq/admin_cmd.h): every bounded field refused one below
 * its lowest and one above its highest value with a message naming it and the bounds; a ZERO
 * field left out when 0 and read as 0 when absent; a view of ONE fields refused with none and
 * with two of them; a TEXT field refused when its check refuses; a REF read both ways. */
static void request_refused(nq_admin_cmd_t c, const char *json, const char *want) {
  json_t *j = json_loads(json, 0, NULL);
  ck_assert_ptr_nonnull(j);
  nq_admin_req_t r;
  nq_proto_err_t err;
  ck_assert_msg(nq_admin_req_parse(j, &r, &err) != 0, "accepted: %s", json);
  ck_assert_int_eq(err.code, NQ_ERR_BAD_MESSAGE);
  ck_assert_int_eq(err.fatal, 0);
  ck_assert_msg(strstr(err.message, want) != NULL, "'%s' lacks '%s'", err.message, want);
  (void)c;
  json_decref(j);
}

START_TEST(request_views_check_their_bounds) {
  char json[300], want[200];
  int bounded = 0;
  for (int c = 0; c < NQ_ADMIN_NCMDS; c++) {
    const nq_view_t *v = nq_admin_req_view((nq_admin_cmd_t)c);
    ck_assert_ptr_nonnull(v);
    for (size_t k = 0; k < v->nfields; k++) {
      const nq_view_field_t *f = &v->fields[k];
      if (f->kind != NQ_VK_INTR || v->nfields != 1 + (f->flag != NQ_VF_REQ)) continue;
      /* A view of this one bounded field (and perhaps one optional other): its edges. */
      long long edge[2] = {(long long)f->lo - 1, (long long)f->hi + (f->hi < INT64_MAX)};
      for (int e = 0; e < 2; e++) {
        if (e == 1 && f->hi == INT64_MAX) continue;
        if (e == 0 && f->lo == 0 && f->flag == NQ_VF_REQ) continue;
        snprintf(json, sizeof json, "{\"type\":\"admin\",\"cmd\":\"%s\",%s\"%s\":%lld}",
                 nq_admin_cmd_name((nq_admin_cmd_t)c),
                 c == NQ_ADMIN_UNITS ? "\"state\":\"all\"," : "", f->key, edge[e]);
        snprintf(want, sizeof want, "%s.%s: is not in %lld..%lld",
                 nq_admin_cmd_name((nq_admin_cmd_t)c), f->key, (long long)f->lo,
                 (long long)f->hi);
        request_refused((nq_admin_cmd_t)c, json, want);
        bounded++;
      }
    }
  }
  ck_assert_int_ge(bounded, 4);
  request_refused(NQ_ADMIN_JOB_ADD, "{\"type\":\"admin\",\"cmd\":\"job_add\",\"n\":33}",
                  "job_add.n: is not in 4..32");
  request_refused(NQ_ADMIN_JOB_ADD,
                  "{\"type\":\"admin\",\"cmd\":\"job_add\",\"n\":8,\"unit_seconds\":-0.5}",
                  "job_add.unit_seconds: is not a number in 0..");
  request_refused(NQ_ADMIN_UNIT_RETRY, "{\"type\":\"admin\",\"cmd\":\"unit_retry\"}",
                  "unit_retry: needs exactly one of `unit`, `all_disputed`, `client`");
  request_refused(NQ_ADMIN_UNIT_RETRY,
                  "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":4,\"client\":\"a\"}",
                  "unit_retry: needs exactly one of");
  request_refused(NQ_ADMIN_TEAM_ADD, "{\"type\":\"admin\",\"cmd\":\"team_add\",\"name\":\"a b\"}",
                  "team_add.name: is not acceptable");
  request_refused(NQ_ADMIN_UNIT_REOPEN, "{\"type\":\"admin\",\"cmd\":\"unit_reopen\",\"unit\":[]}",
                  "unit_reopen.unit: is not an id (integer) or a text (string)");

  /* ZERO: absent is 0 and 0 is left out; REF: an id or a text. */
  nq_admin_req_t r = {.cmd = NQ_ADMIN_UNIT_RETRY, .q.unit_retry = {.unit = {0, "8:c:2:0,2,4"}}};
  json_t *m = nq_admin_req_pack(&r);
  ck_assert_ptr_null(json_object_get(m, "extra"));
  ck_assert_ptr_null(json_object_get(m, "all_disputed"));
  ck_assert_str_eq(json_string_value(json_object_get(m, "unit")), "8:c:2:0,2,4");
  nq_admin_req_t b;
  nq_proto_err_t err;
  ck_assert_int_eq(nq_admin_req_parse(m, &b, &err), 0);
  ck_assert_int_eq(b.q.unit_retry.extra, 0);
  ck_assert_str_eq(b.q.unit_retry.unit.text, "8:c:2:0,2,4");
  json_decref(m);
  r.q.unit_retry.unit = (nq_view_ref_t){77, NULL};
  m = nq_admin_req_pack(&r);
  ck_assert_int_eq(json_integer_value(json_object_get(m, "unit")), 77);
  ck_assert_int_eq(nq_admin_req_parse(m, &b, &err), 0);
  ck_assert_int_eq(b.q.unit_retry.unit.id, 77);
  ck_assert_ptr_null(b.q.unit_retry.unit.text);
  json_decref(m);
}
END_TEST

/* A record that outlives its JSON (the client's status file): 32-bit integers in their range,
 * 64-bit unsigned ones as integers up to 2^63-1 and as decimal strings above, strings copied into
 * their arrays and refused when they do not fit. */
#define REC_VIEW(F) F(I32, small, REQ, 0) F(U64, big, REQ, 0) F(CHARS, name, REQ, 8)
NQ_VIEW_STRUCT(rec, REC_VIEW)
#define NQV_T nq_view_rec_t
NQ_VIEW_DEFINE(rec, REC_VIEW)
#undef NQV_T

START_TEST(records_copy_and_bound_their_fields) {
  nq_view_rec_t r = {.small = -7, .big = UINT64_MAX, .name = "seven"}, b;
  json_t *j = nq_view_rec_pack(&r);
  ck_assert_ptr_nonnull(j);
  ck_assert_str_eq(json_string_value(json_object_get(j, "big")), "18446744073709551615");
  char err[200];
  ck_assert_int_eq(nq_view_rec_parse(j, &b, err, sizeof err), 0);
  json_decref(j); /* b holds copies */
  ck_assert_int_eq(b.small, -7);
  ck_assert(b.big == UINT64_MAX);
  ck_assert_str_eq(b.name, "seven");
  r.big = 12;
  j = nq_view_rec_pack(&r);
  ck_assert(json_is_integer(json_object_get(j, "big")));
  json_decref(j);
  const char *bad[][2] = {
      {"{\"small\":2147483648,\"big\":1,\"name\":\"a\"}", "rec.small: is not"},
      {"{\"small\":1,\"big\":-1,\"name\":\"a\"}", "rec.big: is not"},
      {"{\"small\":1,\"big\":\"012\",\"name\":\"a\"}", "rec.big: is not"},
      {"{\"small\":1,\"big\":1,\"name\":\"eightchr\"}", "rec.name: is longer than 7 bytes"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    j = json_loads(bad[i][0], 0, NULL);
    ck_assert_ptr_nonnull(j);
    refused(&nq_view_rec_desc, j, bad[i][1]);
    json_decref(j);
  }
}
END_TEST

START_TEST(missing_or_mistyped_fields_are_named) {
  char want[200];
  for (size_t i = 0; i < nq_views_all_n; i++) {
    const nq_view_t *v = nq_views_all[i];
    for (size_t k = 0; k < v->nfields; k++) {
      const nq_view_field_t *f = &v->fields[k];
      const char *key = f->kind == NQ_VK_COUNTS ? f->names->names[f->names->n - 1] : f->key;
      json_t *j = sample_of(v, 3);
      if (f->flag != NQ_VF_OPT) { /* an OPT field may be absent */
        json_object_del(j, key);
        snprintf(want, sizeof want, "%s.%s: is missing", v->name, key);
        refused(v, j, want);
      }
      json_object_set_new(j, key, wrong_value(f));
      snprintf(want, sizeof want, "%s.%s: is not ", v->name, key);
      refused(v, j, want);
      if (f->flag == NQ_VF_REQ && f->kind != NQ_VK_STRN && f->kind != NQ_VK_COUNTS) {
        json_object_set_new(j, key, json_null());
        snprintf(want, sizeof want, "%s.%s: is null", v->name, key);
        refused(v, j, want);
      }
      json_decref(j);
    }
  }
}
END_TEST

/* Errors deep inside name the whole path; a u128 string must be digits below 2^128. */
START_TEST(nested_paths) {
  json_t *j = sample_of(&nq_view_status_desc, 1);
  json_object_del(json_object_get(j, "progress"), "percent");
  refused(&nq_view_status_desc, j, "status.progress.percent: is missing");
  json_decref(j);
  j = sample_of(&nq_view_units_desc, 1);
  json_t *u1 = json_array_get(json_object_get(j, "units"), 1);
  json_object_set_new(json_array_get(json_object_get(u1, "replicas"), 0), "votes",
                      json_string("yes"));
  refused(&nq_view_units_desc, j, "units.units[1].replicas[0].votes: is not true or false");
  json_decref(j);
  j = sample_of(&nq_view_totals_desc, 1);
  json_object_set_new(j, "total", json_string("340282366920938463463374607431768211456"));
  refused(&nq_view_totals_desc, j, "totals.total: is not a string of decimal digits");
  json_object_set_new(j, "total", json_string("12a"));
  refused(&nq_view_totals_desc, j, "totals.total: is not a string of decimal digits");
  json_decref(j);
  j = json_array();
  refused(&nq_view_status_desc, j, "status: is not an object");
  json_decref(j);
}
END_TEST

/* The views of a real store: status (running, then done), the lists, read back member for
 * member and packed again to the same bytes. */
START_TEST(store_views_read_back) {
  fx_t f;
  fx_init(&f, 6, 2, 2, 5, NULL);
  int64_t a = fx_client(&f, "alice"), b = fx_client(&f, "bob");
  srv_work_t w[64];
  srv_nowork_t why;
  int64_t now = f.t0 + 10;
  int n = fx_work(&f, a, 64, now, w, &why);
  ck_assert_int_gt(n, 0);
  ck_assert_int_eq(fx_report_true(&f, a, &w[0], now, NULL), 0);
  json_t *st = srv_status_json(f.st, &f.job, NULL, now);
  ck_assert_ptr_nonnull(st);
  round_trip(&nq_view_status_desc, st);
  nq_view_status_t v;
  char err[300];
  ck_assert_int_eq(nq_view_status_parse(st, &v, err, sizeof err), 0);
  ck_assert_int_eq(v.done, 0);
  ck_assert_int_eq(v.job.n, 6);
  ck_assert_int_eq(v.units.total, f.job.units);
  ck_assert_int_eq(v.units.state[NQ_UNIT_AWAITING], 1);
  ck_assert_int_eq(v.units.state[NQ_UNIT_LEASED], n - 1);
  ck_assert_int_eq(v.has_final, 0);
  ck_assert_int_eq(v.has_known, 1);
  ck_assert_str_eq(v.known.total, "4");
  nq_view_status_free(&v);
  json_decref(st);
  /* Finish the job: every unit by both clients. */
  for (int i = 1; i < n; i++) ck_assert_int_eq(fx_report_true(&f, a, &w[i], now, NULL), 0);
  int m = fx_work(&f, b, 64, now, w, &why);
  for (int i = 0; i < m; i++) ck_assert_int_eq(fx_report_true(&f, b, &w[i], now, NULL), 0);
  st = srv_status_json(f.st, &f.job, NULL, now + 1);
  ck_assert_int_eq(nq_view_status_parse(st, &v, err, sizeof err), 0);
  ck_assert_int_eq(v.done, 1);
  ck_assert_int_eq(v.has_final, 1);
  ck_assert(v.final.total == 4);
  ck_assert_int_eq(v.has_match && v.match, 1);
  ck_assert_int_eq(v.rate.has_eta_s, 1);
  nq_view_status_free(&v);
  json_decref(st);
  json_t *l = srv_clients_json(f.st, now);
  round_trip(&nq_view_clients_desc, l);
  nq_view_clients_t c;
  ck_assert_int_eq(nq_view_clients_parse(l, &c, err, sizeof err), 0);
  ck_assert_uint_eq(c.n_clients, 2);
  ck_assert_str_eq(c.clients[0].name, "alice");
  nq_view_clients_free(&c);
  json_decref(l);
  l = srv_units_json(f.st, f.job.id, -1, 0, now);
  round_trip(&nq_view_units_desc, l);
  nq_view_units_t u;
  ck_assert_int_eq(nq_view_units_parse(l, &u, err, sizeof err), 0);
  ck_assert_uint_eq(u.n_units, (size_t)f.job.units);
  ck_assert_int_eq(u.units[0].has_c2, 1);
  ck_assert_uint_eq(u.units[0].n_replicas, 2);
  nq_view_units_free(&u);
  json_decref(l);
  l = srv_jobs_json(f.st);
  round_trip(&nq_view_jobs_desc, l);
  json_decref(l);
  l = srv_owners_json(f.st, now);
  round_trip(&nq_view_owners_desc, l);
  json_decref(l);
  fx_done(&f);
}
END_TEST

/* schema/001_init.sql's CHECK on units.state lists the names of NQ_UNIT_STATE_MAP, in its order
 * (the database stores states by name; the format does not change with the table). */
START_TEST(schema_lists_the_unit_states) {
  FILE *fp = fopen(SCHEMA "/001_init.sql", "r");
  ck_assert_ptr_nonnull(fp);
  static char sql[1 << 16];
  size_t len = fread(sql, 1, sizeof sql - 1, fp);
  fclose(fp);
  sql[len] = '\0';
  const char *table = strstr(sql, "CREATE TABLE units (");
  ck_assert_ptr_nonnull(table);
  const char *check = strstr(table, "CHECK (state IN (");
  ck_assert_ptr_nonnull(check);
  check += strlen("CHECK (state IN (");
  char want[256] = "";
  const nq_view_names_t *names = &NQ_UNIT_STATE_view_names;
  for (int i = 0; i < names->n; i++)
    snprintf(want + strlen(want), sizeof want - strlen(want), "%s'%s'", i ? ", " : "",
             names->names[i]);
  strcat(want, "))");
  ck_assert_msg(strncmp(check, want, strlen(want)) == 0, "schema lists %.80s, the table %s", check,
                want);
  /* And the server's enum is the same table. */
  ck_assert_int_eq(SRV_UNIT_NSTATES, NQ_UNIT_STATE_N);
  for (int i = 0; i < names->n; i++)
    ck_assert_str_eq(srv_unit_state_name((srv_unit_state_t)i), names->names[i]);
}
END_TEST

static Suite *views_suite(void) {
  Suite *s = suite_create("views");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, every_view_round_trips);
  tcase_add_test(tc, request_views_check_their_bounds);
  tcase_add_test(tc, records_copy_and_bound_their_fields);
  tcase_add_test(tc, missing_or_mistyped_fields_are_named);
  tcase_add_test(tc, nested_paths);
  tcase_add_test(tc, store_views_read_back);
  tcase_add_test(tc, schema_lists_the_unit_states);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(views_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
