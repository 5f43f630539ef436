/* The public view's handlers (server/web.c, web_page.c, store_public.c): volunteer credit from
 * real scheduler verdicts, the public status object (nothing private in it), the metrics text's
 * format, the history's bounds, and the page's numbers. */
#include "fx_store.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "srv.h"
#include "store_int.h"
#include "testutil.h"
#include "web.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A server context around the fixture's store and scheduler: what the handlers read. */
static void fake_srv(srv_t *s, fx_t *f) {
  memset(s, 0, sizeof *s);
  s->store = f->st;
  s->sched = f->sched;
}

/* Let clients take and report work until the job is done; liar (0: none) lies on every unit. */
static void run_job(fx_t *f, const int64_t *cl, int ncl, int64_t liar, int64_t now) {
  srv_work_t w[16];
  for (int round = 0; round < 1000; round++) {
    int any = 0;
    for (int i = 0; i < ncl; i++) {
      srv_nowork_t why;
      int n = fx_work(f, cl[i], 16, now, w, &why);
      ck_assert_int_ge(n, 0);
      for (int k = 0; k < n; k++) {
        any = 1;
        if (cl[i] == liar) {
          nq_counts_t bad = fx_lie(w[k].unit);
          fx_report(f, cl[i], w[k].id, w[k].unit, &bad, NQ_SOLVER_VERSION, now, NULL);
        } else {
          ck_assert_int_eq(fx_report_true(f, cl[i], &w[k], now, NULL), 0);
        }
      }
    }
    if (!any) break;
  }
}

/* A finished N=8 job verified by two honest clients (alice, bob), and a server context on it. */
static void finished_job(fx_t *f, srv_t *s, int64_t now) {
  fx_init(f, 8, 3, 2, 5, NULL);
  int64_t cl[2] = {fx_client(f, "alice"), fx_client(f, "bob")};
  run_job(f, cl, 2, 0, now);
  fake_srv(s, f);
}

static nq_u128 credit_of(fx_t *f, int64_t id) {
  srv_credit_t c;
  ck_assert_int_eq(srv_credit_get(f->st, id, &c), 0);
  return c.credit;
}

/* Two honest clients verify every unit together: each earns the job's whole node count, exactly.
 * A liar that went first on some units loses every vote and earns nothing. */
START_TEST(credit_follows_verdicts) {
  fx_t f;
  srv_sched_config_t sc;
  srv_sched_config_default(&sc);
  sc.ban_threshold = 0; /* the liar keeps playing (and losing) */
  fx_init(&f, 8, 3, 2, 5, &sc);
  int64_t liar = fx_client(&f, "mallory");
  int64_t cl[3] = {liar, fx_client(&f, "alice"), fx_client(&f, "bob")};
  run_job(&f, cl, 3, liar, T0 + 10);
  srv_job_t job;
  ck_assert_int_eq(srv_job_get(f.st, f.job.id, &job), 0);
  ck_assert_int_eq(job.state, SRV_JOB_DONE);
  nq_u128 all = job.totals.nodes;
  ck_assert(all > 0);
  ck_assert(credit_of(&f, cl[1]) == all);
  ck_assert(credit_of(&f, cl[2]) == all);
  ck_assert(credit_of(&f, liar) == 0);
  /* An owner's credit is its clients' summed: each fixture client has an owner of its own, and
   * bob moved to alice's owner adds his credit to hers. */
  srv_client_t ca;
  ck_assert_int_eq(srv_client_get(f.st, cl[1], &ca), 0);
  nq_u128 owner = 0;
  ck_assert_int_eq(srv_owner_credit(f.st, ca.owner_id, &owner), 0);
  ck_assert(owner == all);
  ck_assert_int_eq(srv_owner_credit(f.st, SRV_OWNER_DEFAULT, &owner), 0);
  ck_assert(owner == 0);
  ck_assert_int_eq(srv_client_set_owner(f.st, cl[2], ca.owner_id), 0);
  ck_assert_int_eq(srv_owner_credit(f.st, ca.owner_id, &owner), 0);
  ck_assert(owner == 2 * all);
  ck_assert_int_gt(fx_q1(f.path, "SELECT count(*) FROM assignments WHERE state = 'invalid'"), 0);
  /* The trigger and a recount from the assignments agree. */
  ck_assert_int_eq(fx_q1(f.path, "SELECT sum(credit_hi * 4294967296 + credit_lo) FROM clients"),
                   fx_q1(f.path, "SELECT sum(u.nodes) FROM assignments a JOIN units u ON "
                                 "u.id = a.unit_id WHERE a.state = 'valid'"));
  fx_done(&f);
}
END_TEST

/* The credit of a unit whose nodes pass 2^32 is kept exactly in the split columns, and taken back
 * exactly when the result stops being valid. */
START_TEST(credit_exact_past_32_bits) {
  fx_t f;
  fx_init(&f, 8, 3, 1, 5, NULL);
  int64_t a = fx_client(&f, "alice");
  srv_work_t w;
  srv_nowork_t why;
  ck_assert_int_eq(fx_work(&f, a, 1, T0 + 1, &w, &why), 1);
  ck_assert_int_eq(fx_report_true(&f, a, &w, T0 + 2, NULL), 0);
  nq_u128 one = credit_of(&f, a);
  ck_assert(one > 0);
  /* The result goes back to reported, as a re-opened unit's do (schema 006): the credit it
   * earned is taken back exactly. */
  ck_assert_int_eq(srv_store_exec(f.st, "UPDATE assignments SET state = 'reported'"), 0);
  ck_assert(credit_of(&f, a) == 0);
  /* Make the unit huge, then judge the result valid again. */
  uint64_t big = ((uint64_t)1 << 40) + 12345;
  char sql[200];
  snprintf(sql, sizeof sql, "UPDATE units SET nodes = %llu WHERE id = %lld",
           (unsigned long long)big, (long long)w.unit_id);
  ck_assert_int_eq(srv_store_exec(f.st, sql), 0);
  ck_assert_int_eq(srv_asg_judge(f.st, w.id, a, 1), 0);
  ck_assert(credit_of(&f, a) == big);
  /* And back once more: nothing is left, although the value passed 2^32. */
  ck_assert_int_eq(srv_store_exec(f.st, "UPDATE assignments SET state = 'reported'"), 0);
  ck_assert(credit_of(&f, a) == 0);
  fx_done(&f);
}
END_TEST

/* The leaderboard: most credit first, banned clients left out, public names or anonymous. */
START_TEST(leaderboard_names) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t a = fx_client(&f, "alice"), b = fx_client(&f, "bob"), c = fx_client(&f, "carol");
  ck_assert_int_eq(srv_client_set_public_name(f.st, a, "Ada.L"), 0);
  ck_assert_int_eq(srv_client_set_public_name(f.st, b, "bad name"), NQ_EINVAL);
  int64_t cl[2] = {a, b};
  run_job(&f, cl, 2, 0, T0 + 5);
  ck_assert_int_eq(srv_client_ban(f.st, c, T0 + 6), 0);
  srv_t s;
  fake_srv(&s, &f);
  json_t *st = srv_web_status_json(&s, T0 + 7);
  ck_assert_ptr_nonnull(st);
  json_t *l = json_object_get(st, "leaderboard");
  ck_assert_int_eq(json_array_size(l), 2); /* carol is banned */
  const char *n0 = json_string_value(json_object_get(json_array_get(l, 0), "name"));
  const char *n1 = json_string_value(json_object_get(json_array_get(l, 1), "name"));
  /* Equal credit: the older client first. */
  ck_assert_str_eq(n0, "Ada.L");
  ck_assert_int_eq(strncmp(n1, "anonymous-", 10), 0);
  ck_assert_int_eq(strlen(n1), 16);
  /* Nothing private: no client's own name, no token hash, no disputed voters. */
  char *text = json_dumps(st, 0);
  ck_assert_ptr_null(strstr(text, "bob"));
  ck_assert_ptr_null(strstr(text, "alice"));
  ck_assert_ptr_null(strstr(text, "hash-of"));
  ck_assert_ptr_null(json_object_get(st, "disputed"));
  free(text);
  /* Clearing the public name makes the client anonymous again. */
  ck_assert_int_eq(srv_client_set_public_name(f.st, a, NULL), 0);
  srv_credit_t cr;
  ck_assert_int_eq(srv_credit_get(f.st, a, &cr), 0);
  ck_assert_int_eq(cr.named, 0);
  ck_assert_int_eq(strncmp(cr.display, "anonymous-", 10), 0);
  json_decref(st);
  fx_done(&f);
}
END_TEST

/* The status object carries the admin status's numbers. */
START_TEST(status_numbers) {
  fx_t f;
  srv_t s;
  finished_job(&f, &s, T0 + 5);
  json_t *st = srv_web_status_json(&s, T0 + 7);
  ck_assert_ptr_nonnull(st);
  ck_assert(json_is_true(json_object_get(st, "done")));
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(st, "final"), "total")),
                   "92");
  ck_assert(json_is_true(json_object_get(st, "match")));
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(st, "units"), "verified")),
                   f.job.units);
  /* The page shows the same numbers, in elements with ids. */
  /* Three samples a minute apart: two rates, so the chart has a line. */
  for (int i = 1; i <= 3; i++) {
    srv_history_t more = {T0 + 60 * i, 44, 100 * i, (nq_u128)5000 * (nq_u128)(i * i), 1.0, "", 0};
    ck_assert_int_eq(srv_history_add(f.st, f.job.id, &more), 0);
  }
  json_t *h = srv_web_history_json(&s);
  ck_assert_ptr_nonnull(h);
  size_t len;
  char *html = srv_web_page_html(st, h, &len);
  ck_assert_ptr_nonnull(html);
  ck_assert_uint_eq(strlen(html), len);
  ck_assert_ptr_nonnull(strstr(html, "id=\"total\" data-value=\"92\">92<"));
  ck_assert_ptr_nonnull(strstr(html, "id=\"unique\" data-value=\"12\">12<"));
  /* The answer first, dates in UTC, no "time left" or "active" on a finished job. */
  ck_assert_ptr_nonnull(strstr(html, "<h2>The answer</h2>"));
  ck_assert(strstr(html, "<h2>The answer</h2>") < strstr(html, "id=\"progress\""));
  ck_assert_ptr_null(strstr(html, "time left"));
  ck_assert_ptr_null(strstr(html, " active"));
  ck_assert_ptr_nonnull(strstr(html, " UTC</td>"));
  ck_assert_ptr_nonnull(strstr(html, "id=\"finished\""));
  ck_assert_ptr_nonnull(strstr(html, "id=\"progress\">100.00%<"));
  ck_assert_ptr_nonnull(strstr(html, "MATCH"));
  /* What the answer rests on (no trusted owner here). */
  ck_assert_ptr_nonnull(strstr(html, "id=\"trust\">No trusted owner: this answer rests on votes"));
  ck_assert_ptr_nonnull(strstr(html, "http-equiv=\"refresh\""));
  ck_assert_ptr_nonnull(strstr(html, "<svg id=\"chart\""));
  ck_assert_ptr_nonnull(strstr(html, "<polyline"));
  /* Self-contained: no script, no external reference. */
  ck_assert_ptr_null(strstr(html, "<script"));
  ck_assert_ptr_null(strstr(html, "http://"));
  ck_assert_ptr_null(strstr(html, "https://"));
  free(html);
  json_decref(h);
  json_decref(st);
  fx_done(&f);
}
END_TEST

/* The page for people from a status object as /api/status gives it (a complete
 * status view: the page refuses anything less, page_refuses_partial): counts with
 * thousands separators (the plain value in data-value), dates in UTC, stalled units with their
 * reason, and no ETA while every unit left is stalled. */
START_TEST(page_for_people) {
  json_error_t e;
  json_t *st = json_loads(
      "{\"now\":1700000600,\"done\":false,\"job\":{\"id\":1,\"n\":12,\"depth\":4,"
      "\"min_depth\":4,\"unit_seconds\":0.0,\"quorum\":2,\"max_results\":5,"
      "\"state\":\"running\",\"created\":1700000000,\"finished\":0,\"archived\":0,"
      "\"units\":1234567,\"internal\":null,\"est_nodes\":null,\"est_se\":null,\"seed\":0,"
      "\"final\":null},\"units\":{\"total\":1234567,\"pending\":0,\"leased\":0,"
      "\"awaiting\":424,\"verified\":0,\"disputed\":0,\"blocked\":0,\"spot_checks\":0,"
      "\"contested\":0},\"trust\":{\"trusted_owners\":0,\"trusted_active\":0,"
      "\"rests_on\":\"votes\"},\"results\":424,"
      "\"progress\":{\"percent\":0,\"units_percent\":0,\"method\":\"units\","
      "\"verified_nodes\":\"999\",\"estimated_nodes\":\"0\",\"leased\":0,"
      "\"leased_done\":0,\"units_estimate\":null,\"verified_estimate\":null,"
      "\"calibration\":null},\"rate\":{\"window\":300,\"results\":0,"
      "\"results_per_s\":0,\"nodes_per_s\":0,\"eta_s\":null,\"elapsed_s\":600},"
      "\"stalled\":{\"units\":1234,\"by\":{\"owners\":1234,\"voted\":0,\"offline\":0,"
      "\"contested\":0,\"blocked\":0},\"keys\":1,\"keys_online\":1,\"quorum\":2,"
      "\"distinct\":\"owner\",\"window\":600,\"at\":1700000600,"
      "\"message\":\"no unit can be verified: quorum 2 by owner <x>\"},"
      "\"verified\":{\"total\":\"14200\",\"unique\":\"1787\",\"c2\":\"0\","
      "\"c4\":\"100\",\"c8\":\"1234567890123\",\"nodes\":\"999\"},"
      "\"final\":null,\"known\":null,\"match\":null,\"match_text\":\"-\","
      "\"clients\":{\"active\":4,\"known\":1500,\"banned\":0,\"suspect\":0},"
      "\"backup\":{\"last_good\":null,\"file\":null,\"failed_at\":null,\"error\":null}}",
      0, &e);
  ck_assert_msg(st != NULL, "%s", e.text);
  size_t len;
  char *html = srv_web_page_html(st, NULL, &len);
  ck_assert_ptr_nonnull(html);
  ck_assert_ptr_nonnull(strstr(html, "id=\"total\" data-value=\"14200\">14,200<"));
  ck_assert_ptr_nonnull(strstr(html, "data-value=\"1234567890123\">1,234,567,890,123<"));
  ck_assert_ptr_nonnull(strstr(html, "id=\"units-total\" data-value=\"1234567\">1,234,567<"));
  ck_assert_ptr_nonnull(strstr(html, "id=\"c2\" data-value=\"0\">0<"));
  ck_assert_ptr_nonnull(strstr(html, "4 volunteer(s) active, 1,500 known"));
  ck_assert_ptr_nonnull(strstr(html, "2023-11-14 22:13 UTC")); /* started */
  ck_assert_ptr_nonnull(strstr(html, "2023-11-14 22:23 UTC")); /* updated */
  ck_assert_ptr_nonnull(strstr(html, "id=\"stalled\""));
  ck_assert_ptr_nonnull(strstr(html, "1,234 unit(s) cannot finish"));
  ck_assert_ptr_nonnull(strstr(html, "quorum 2 by owner &lt;x&gt;"));
  ck_assert_ptr_nonnull(strstr(html, "id=\"eta\">none: stalled<"));
  ck_assert_ptr_nonnull(strstr(html, "<p id=\"chart\">")); /* no history: a line instead */
  free(html);
  json_decref(st);
}
END_TEST

/* The page reads a typed view, so a status that lacks a field (or has one of the wrong
 * type) gives no page -- never a page of silent zeros and dashes. */
START_TEST(page_refuses_partial) {
  json_t *st = json_pack("{s:I, s:b}", "now", (json_int_t)1700000600, "done", 0);
  size_t len = 0;
  ck_assert_ptr_null(srv_web_page_html(st, NULL, &len));
  json_decref(st);
}
END_TEST

/* A sample line "name{labels} value": the name and the value are well-formed. */
static void check_sample(const char *line, const char *family) {
  size_t n = strlen(family);
  ck_assert_msg(strncmp(line, family, n) == 0, "sample '%s' outside family %s", line, family);
  const char *p = line + strcspn(line, "{ ");
  if (*p == '{') {
    p = strchr(p, '}');
    ck_assert_ptr_nonnull(p);
    p++;
  }
  ck_assert_msg(*p == ' ', "no value in '%s'", line);
  char *end;
  strtod(p + 1, &end);
  ck_assert_msg(end != p + 1 && *end == '\0', "bad value in '%s'", line);
}

/* Every family has HELP and TYPE before its samples, names are nq_*, counters end in _total,
 * histograms' buckets are cumulative and end at +Inf = count. */
START_TEST(metrics_text) {
  fx_t f;
  srv_t s;
  finished_job(&f, &s, nq_now_wall());
  srv_hist_observe(&s.metrics.commit, 0.0003);
  srv_hist_observe(&s.metrics.commit, 0.02);
  srv_hist_observe(&s.metrics.commit, 50);
  s.metrics.results[SRV_OUTCOME_LATE] = 7;
  size_t len;
  char *text = srv_web_metrics_text(&s, nq_now_wall(), &len);
  ck_assert_ptr_nonnull(text);
  ck_assert_uint_eq(strlen(text), len);
  static const char *const want[] = {
      "nq_build_info{", "nq_job_done 1", "nq_units{state=\"verified\"} 44",
      "nq_results_total{outcome=\"late\"} 7", "nq_verified_solutions{kind=\"total\"} 92",
      "nq_verified_solutions{kind=\"c8\"} 11", "nq_clients{state=\"known\"} 2",
      "nq_connections{kind=\"protocol\"} 0", "nq_commit_duration_seconds_count 3",
      "nq_commit_duration_seconds_bucket{le=\"+Inf\"} 3",
      "nq_commit_duration_seconds_bucket{le=\"0.0005\"} 1",
      "nq_commit_duration_seconds_bucket{le=\"10\"} 2", "nq_get_work_duration_seconds_count 0",
      "nq_units_stalled{reason=\"owners\"} 0", "nq_units_stalled{reason=\"voted\"} 0",
      "nq_voters{state=\"can_vote\"} ", "nq_job_quorum "};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    ck_assert_msg(strstr(text, want[i]), "missing '%s'", want[i]);
  char family[128] = "", type[32] = "";
  int helped = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (!strncmp(line, "# HELP ", 7)) {
      ck_assert_int_eq(sscanf(line + 7, "%127s", family), 1);
      ck_assert_int_eq(strncmp(family, "nq_", 3), 0);
      helped = 1;
    } else if (!strncmp(line, "# TYPE ", 7)) {
      char name[128];
      ck_assert_int_eq(sscanf(line + 7, "%127s %31s", name, type), 2);
      ck_assert(helped);
      ck_assert_str_eq(name, family);
      size_t n = strlen(name);
      if (!strcmp(type, "counter")) ck_assert_str_eq(name + n - 6, "_total");
      if (!strcmp(type, "histogram")) ck_assert_str_eq(name + n - 8, "_seconds");
      helped = 0;
    } else {
      ck_assert(line[0] != '#');
      check_sample(line, family);
    }
  }
  free(text);
  fx_done(&f);
}
END_TEST

static int count_cb(const srv_history_t *h, void *arg) {
  srv_history_t *last = arg;
  ck_assert_int_gt(h->t, last->t); /* oldest first, one per minute at most */
  *last = *h;
  return 0;
}

/* The history keeps every minute of the last day, hourly samples before it, and never more than
 * SRV_HISTORY_MAX rows. */
START_TEST(history_bounds) {
  fx_t f;
  fx_init(&f, 8, 3, 2, 5, NULL);
  int64_t t = 1700000000 / 3600 * 3600, n = 0;
  /* Three days of minutes. */
  for (int i = 0; i < 3 * 1440; i++) {
    srv_history_t h = {t + 60 * i, i, 2 * i, (nq_u128)i << 40, i / 4320.0, "", 0};
    ck_assert_int_eq(srv_history_add(f.st, f.job.id, &h), 0);
  }
  int64_t last = t + 60 * (3 * 1440 - 1);
  ck_assert_int_eq(srv_history_count(f.st, f.job.id, &n), 0);
  /* The last day (1441 minutes: the boundary included) and 2 days of hours before it. */
  ck_assert_int_eq(n, 1441 + 48);
  char sql[200];
  snprintf(sql, sizeof sql, "SELECT count(*) FROM job_history WHERE minute < %lld AND "
           "minute %% 60 != 0", (long long)(last / 60 - 1440));
  ck_assert_int_eq(fx_q1(f.path, sql), 0);
  /* Many years of hours: the cap holds, the newest stay. */
  for (int i = 1; i <= SRV_HISTORY_MAX + 500; i++) {
    srv_history_t h = {last + 3600 * (int64_t)i - 60 * (last / 60 % 60), 0, 0, 0, 0, "", 0};
    ck_assert_int_eq(srv_history_add(f.st, f.job.id, &h), 0);
  }
  ck_assert_int_eq(srv_history_count(f.st, f.job.id, &n), 0);
  ck_assert_int_le(n, SRV_HISTORY_MAX + 1);
  srv_history_t seen = {0};
  ck_assert_int_eq(srv_history_list(f.st, f.job.id, count_cb, &seen), 0);
  ck_assert_int_eq(seen.t / 60, (last + 3600 * (int64_t)(SRV_HISTORY_MAX + 500)) / 60 -
                                    last / 60 % 60);
  /* The JSON gives rates between samples; the first has none. */
  srv_t s;
  fake_srv(&s, &f);
  json_t *hj = srv_web_history_json(&s);
  ck_assert_ptr_nonnull(hj);
  json_t *samples = json_object_get(hj, "samples");
  ck_assert_int_eq(json_array_size(samples), n);
  ck_assert(json_is_null(json_object_get(json_array_get(samples, 0), "nodes_per_s")));
  ck_assert(json_is_number(json_object_get(json_array_get(samples, 1), "nodes_per_s")));
  json_decref(hj);
  fx_done(&f);
}
END_TEST

/* The sampler's sample: the job's counters at that minute. */
START_TEST(history_sample) {
  fx_t f;
  srv_t s;
  finished_job(&f, &s, T0 + 5);
  ck_assert_int_eq(srv_web_sample(&s, T0 + 60), 0);
  ck_assert_int_eq(fx_q1(f.path, "SELECT verified FROM job_history"), 44);
  ck_assert_int_eq(fx_q1(f.path, "SELECT share FROM job_history"), 1);
  ck_assert_int_eq(fx_q1(f.path, "SELECT results FROM job_history"),
                   fx_q1(f.path, "SELECT count(*) FROM assignments WHERE reported_at IS NOT NULL"));
  fx_done(&f);
}
END_TEST

START_TEST(routes) {
  ck_assert_int_eq(srv_web_route("/"), SRV_WEB_PAGE);
  ck_assert_int_eq(srv_web_route("/index.html"), SRV_WEB_PAGE);
  ck_assert_int_eq(srv_web_route("/metrics"), SRV_WEB_METRICS);
  ck_assert_int_eq(srv_web_route("/api/status"), SRV_WEB_STATUS);
  ck_assert_int_eq(srv_web_route("/api/history"), SRV_WEB_HISTORY);
  static const char *const no[] = {"/../etc/passwd", "/api/../metrics", "//metrics",
                                   "/metrics/", "/%2e%2e/etc/passwd", "/api", "", "/API/status",
                                   "/index.html/../../x"};
  for (size_t i = 0; i < sizeof no / sizeof *no; i++)
    ck_assert_int_eq(srv_web_route(no[i]), SRV_WEB_NOT_FOUND);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("web");
  TCase *tc = tcase_create("web");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, credit_follows_verdicts);
  tcase_add_test(tc, credit_exact_past_32_bits);
  tcase_add_test(tc, leaderboard_names);
  tcase_add_test(tc, status_numbers);
  tcase_add_test(tc, page_for_people);
  tcase_add_test(tc, page_refuses_partial);
  tcase_add_test(tc, metrics_text);
  tcase_add_test(tc, history_bounds);
  tcase_add_test(tc, history_sample);
  tcase_add_test(tc, routes);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
