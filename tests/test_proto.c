/* tests/test_proto.c: the wire contract (common/net/proto.c). Every message is packed, framed,
 * decoded and parsed back to the same values; the version-1 bytes of the messages the programs
 * send are pinned; every malformed variant of every message is refused with the documented error
 * code and fatality; and the field helpers and type/error-code tables are checked. */
#include "nq/frame.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "nq/solver.h"
#include "nq/unit.h"
#include "fx_proto.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pack -> frame bytes -> decoded object: what the peer's parse sees. Consumes msg. */
static json_t *over_wire(json_t *msg) {
  ck_assert_ptr_nonnull(msg);
  uint8_t *buf;
  size_t len;
  ck_assert_int_eq(nq_frame_encode(msg, &buf, &len), 0);
  json_decref(msg);
  json_t *back = NULL;
  ck_assert_int_eq(nq_frame_decode(buf + NQ_FRAME_HDR, len - NQ_FRAME_HDR, &back), 0);
  free(buf);
  return back;
}

/* The compact JSON text of a packed message (the frame's payload). Consumes msg. */
static char *wire_text(json_t *msg) {
  ck_assert_ptr_nonnull(msg);
  uint8_t *buf;
  size_t len;
  ck_assert_int_eq(nq_frame_encode(msg, &buf, &len), 0);
  json_decref(msg);
  char *s = malloc(len - NQ_FRAME_HDR + 1);
  memcpy(s, buf + NQ_FRAME_HDR, len - NQ_FRAME_HDR);
  s[len - NQ_FRAME_HDR] = '\0';
  free(buf);
  return s;
}

static void expect_text(json_t *msg, const char *want) {
  char *got = wire_text(msg);
  ck_assert_str_eq(got, want);
  free(got);
}

static json_t *load(const char *text) {
  json_error_t e;
  json_t *m = json_loads(text, JSON_REJECT_DUPLICATES, &e);
  ck_assert_msg(m != NULL, "test JSON does not load: %s (%s)", text, e.text);
  return m;
}

/* ---- tables ---------------------------------------------------------------------------------- */

START_TEST(type_and_code_tables) {
  for (int t = NQ_MSG_HELLO; t < NQ_MSG_COUNT; t++) {
    const char *name = nq_msg_type_name((nq_msg_type_t)t);
    ck_assert(name[0] != '\0');
    json_t *m = json_pack("{s:s}", "type", name);
    const char *got = NULL;
    ck_assert_int_eq(nq_msg_type(m, &got), t);
    ck_assert_str_eq(got, name);
    json_decref(m);
  }
  ck_assert_str_eq(nq_msg_type_name(NQ_MSG_NONE), "");
  ck_assert_str_eq(nq_msg_type_name(NQ_MSG_COUNT), "");
  const char *got = "x";
  json_t *m = load("{\"type\":\"frobnicate\"}");
  ck_assert_int_eq(nq_msg_type(m, &got), NQ_MSG_NONE);
  ck_assert_str_eq(got, "frobnicate");
  json_decref(m);
  m = load("{\"type\":7}");
  ck_assert_int_eq(nq_msg_type(m, &got), NQ_MSG_NONE);
  ck_assert_ptr_null(got);
  json_decref(m);
  m = load("{\"want\":1}");
  ck_assert_int_eq(nq_msg_type(m, NULL), NQ_MSG_NONE);
  json_decref(m);
  m = load("{\"type\":\"\"}");
  ck_assert_int_eq(nq_msg_type(m, NULL), NQ_MSG_NONE);
  json_decref(m);

  static const char *const codes[] = {
      "bad_frame", "frame_too_big", "bad_json", "unknown_type", "not_hello", "version",
      "upgrade_required", "auth", "banned", "bad_message", "busy", "timeout", "shutdown",
      "unknown_assignment", "not_yours", "bad_result", "lease_expired", "not_found", "exists",
      "bad_state", "internal", "rate_limited", "enrol_closed", "no_kernel", "signup_closed",
      "signup_rejected"};
  ck_assert_int_eq((int)(sizeof codes / sizeof codes[0]), NQ_ERR_OTHER - 1);
  for (int c = NQ_ERR_BAD_FRAME; c < NQ_ERR_OTHER; c++) {
    ck_assert_str_eq(nq_errcode_name((nq_errcode_t)c), codes[c - 1]);
    ck_assert_int_eq(nq_errcode_parse(codes[c - 1]), c);
  }
  ck_assert_int_eq(nq_errcode_parse("too_cold"), NQ_ERR_OTHER);
  ck_assert_int_eq(nq_errcode_parse(""), NQ_ERR_OTHER);
  ck_assert_int_eq(nq_errcode_parse(NULL), NQ_ERR_OTHER);
  ck_assert_str_eq(nq_nowork_reason_name(NQ_NOWORK_NONE_PENDING), "none_pending");
  ck_assert_str_eq(nq_ack_status_name(NQ_ACK_LATE), "late");
  ck_assert_str_eq(nq_admin_cmd_name(NQ_ADMIN_UNIT_RETRY), "unit_retry");
  ck_assert(NQ_PROTO_VERSION_MIN <= NQ_PROTO_VERSION && NQ_PROTO_VERSION <= NQ_PROTO_VERSION_MAX);
  ck_assert_int_eq(NQ_PROTO_VERSION, 1);
}
END_TEST

START_TEST(client_names) {
  ck_assert(nq_proto_name_valid("lab-7.box_2"));
  char n64[65];
  memset(n64, 'a', 64);
  n64[64] = '\0';
  ck_assert(nq_proto_name_valid(n64));
  n64[63] = '\0';
  ck_assert(nq_proto_name_valid(n64));
  char n65[66];
  memset(n65, 'a', 65);
  n65[65] = '\0';
  ck_assert(!nq_proto_name_valid(n65));
  ck_assert(!nq_proto_name_valid(""));
  ck_assert(!nq_proto_name_valid(NULL));
  ck_assert(!nq_proto_name_valid("bad name!"));
  ck_assert(!nq_proto_name_valid("\xc3\xa9t\xc3\xa9"));
}
END_TEST

/* ---- round trips ----------------------------------------------------------------------------- */

START_TEST(round_trip_hello_welcome) {
  nq_proto_err_t err;
  nq_hello_t h = {NQ_PROTO_VERSION, NQ_ROLE_CLIENT, NULL, "key", "lab-7", NQ_SOLVER_VERSION, 8,
                  "nq-client 0.1.0", "Ada.L", 0, 0, 0, 0, "avx512"};
  json_t *m = over_wire(nq_hello_pack(&h));
  nq_hello_t b;
  ck_assert_int_eq(nq_hello_parse(m, &b, &err), 0);
  ck_assert_int_eq(b.v, NQ_PROTO_VERSION_MAX);
  ck_assert_int_eq(b.v_min, NQ_PROTO_VERSION_MIN); /* pack sends this build's range */
  ck_assert_int_eq(b.v_max, NQ_PROTO_VERSION_MAX);
  ck_assert_int_eq(b.speak, NQ_PROTO_VERSION_MAX);
  ck_assert_int_eq(b.role, NQ_ROLE_CLIENT);
  ck_assert_ptr_null(b.token);
  ck_assert_str_eq(b.enrol, "key");
  ck_assert_str_eq(b.name, "lab-7");
  ck_assert_str_eq(b.solver, NQ_SOLVER_VERSION);
  ck_assert_int_eq(b.threads, 8);
  ck_assert_str_eq(b.software, "nq-client 0.1.0");
  ck_assert_str_eq(b.public_name, "Ada.L");
  ck_assert_str_eq(b.kernel, "avx512");
  json_decref(m);
  /* The smallest admin hello: informative fields absent. */
  nq_hello_t a = {NQ_PROTO_VERSION, NQ_ROLE_ADMIN, "tok", NULL, NULL, NULL, 0, NULL, NULL, 0, 0, 0, 0, NULL};
  m = over_wire(nq_hello_pack(&a));
  ck_assert_int_eq(nq_hello_parse(m, &b, &err), 0);
  ck_assert_int_eq(b.role, NQ_ROLE_ADMIN);
  ck_assert_str_eq(b.token, "tok");
  ck_assert_ptr_null(b.solver);
  ck_assert_int_eq(b.threads, 0);
  json_decref(m);

  nq_welcome_t w = {1, "lab-7", "newtoken", 18, 3, NQ_JOB_RUNNING, 16, 900, "alice",
                    "https://nq.example.org/", "340282366920938463463374607431768211455",
                    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
                    {2, {{9, 1764000000, "Maintenance Sunday 10:00 UTC"}, {4, 1763000000, "N=28 \xc3\xa9"}}}};
  m = over_wire(nq_welcome_pack(&w));
  nq_welcome_t wb;
  ck_assert_int_eq(nq_welcome_parse(m, &wb, &err), 0);
  ck_assert_int_eq(wb.v, 1);
  ck_assert_str_eq(wb.client, "lab-7");
  ck_assert_str_eq(wb.token, "newtoken");
  ck_assert_int_eq(wb.job_n, 18);
  ck_assert_int_eq(wb.job_depth, 3);
  ck_assert_int_eq(wb.job_state, NQ_JOB_RUNNING);
  ck_assert_int_eq(wb.max_outstanding, 16);
  ck_assert_int_eq(wb.progress_interval, 900);
  ck_assert_str_eq(wb.shown_as, "alice");
  ck_assert_str_eq(wb.page, "https://nq.example.org/");
  ck_assert_str_eq(wb.credit, "340282366920938463463374607431768211455");
  ck_assert_str_eq(wb.evidence_key, w.evidence_key);
  ck_assert_int_eq(wb.news.n, 2);
  ck_assert_int_eq(wb.news.items[0].id, 9);
  ck_assert_int_eq(wb.news.items[0].at, 1764000000);
  ck_assert_str_eq(wb.news.items[0].text, "Maintenance Sunday 10:00 UTC");
  ck_assert_str_eq(wb.news.items[1].text, "N=28 \xc3\xa9");
  json_decref(m);
  /* An evidence key that is not 64 lowercase hex digits is refused. */
  m = nq_welcome_pack(&w);
  json_object_set_new(m, "evidence_key", json_string("00112233445566778899AABBCCDDEEFF"));
  ck_assert_int_ne(nq_welcome_parse(m, &wb, &err), 0);
  json_decref(m);
  /* The unasked news message: the same items; malformed ones refused. */
  m = over_wire(nq_news_pack(&w.news));
  nq_news_t nb;
  ck_assert_int_eq(nq_news_parse(m, &nb, &err), 0);
  ck_assert_int_eq(nb.n, 2);
  ck_assert_int_eq(nb.items[1].id, 4);
  json_decref(m);
  static const char *const bad_news[] = {
      "{\"type\":\"news\"}", "{\"type\":\"news\",\"items\":{}}",
      "{\"type\":\"news\",\"items\":[{\"id\":0,\"at\":1,\"text\":\"x\"}]}",
      "{\"type\":\"news\",\"items\":[{\"id\":1,\"at\":1,\"text\":\"\"}]}",
      "{\"type\":\"news\",\"items\":[{\"id\":1,\"at\":1,\"text\":\"a\\nb\"}]}",
      "{\"type\":\"news\",\"items\":[1,2,3,4,5,6]}"};
  for (size_t i = 0; i < sizeof bad_news / sizeof *bad_news; i++) {
    m = json_loads(bad_news[i], 0, NULL);
    ck_assert_ptr_nonnull(m);
    ck_assert_msg(nq_news_parse(m, &nb, &err) == NQ_EPROTO, "%s", bad_news[i]);
    json_decref(m);
  }
  m = json_loads("{\"type\":\"welcome\",\"v\":1,\"job\":{\"n\":8,\"depth\":3,\"state\":"
                 "\"done\"},\"max_outstanding\":1,\"progress_interval\":1,\"news\":7}", 0, NULL);
  ck_assert_int_eq(nq_welcome_parse(m, &wb, &err), NQ_EPROTO);
  json_decref(m);
  nq_welcome_t wa = {1, NULL, NULL, 8, 3, NQ_JOB_DONE, 256, 2147483647, NULL, NULL, NULL, NULL, {0}};
  m = over_wire(nq_welcome_pack(&wa));
  ck_assert_int_eq(nq_welcome_parse(m, &wb, &err), 0);
  ck_assert_ptr_null(wb.client);
  ck_assert_ptr_null(wb.token);
  ck_assert_ptr_null(wb.shown_as);
  ck_assert_ptr_null(wb.page);
  ck_assert_ptr_null(wb.credit);
  ck_assert_ptr_null(wb.evidence_key);
  ck_assert_int_eq(wb.job_state, NQ_JOB_DONE);
  ck_assert_int_eq(wb.max_outstanding, 256);
  ck_assert_int_eq(wb.progress_interval, 2147483647);
  json_decref(m);
  wa.job_state = NQ_JOB_WAITING; /* only told to a client whose hello said wait */
  m = over_wire(nq_welcome_pack(&wa));
  ck_assert_int_eq(nq_welcome_parse(m, &wb, &err), 0);
  ck_assert_int_eq(wb.job_state, NQ_JOB_WAITING);
  json_decref(m);
  nq_hello_t hw = {.role = NQ_ROLE_CLIENT, .token = "t", .wait = 1}, hb;
  m = over_wire(nq_hello_pack(&hw));
  ck_assert_int_eq(nq_hello_parse(m, &hb, &err), 0);
  ck_assert_int_eq(hb.wait, 1);
  json_decref(m);
  hw.wait = 0; /* absent on the wire, as older clients send it */
  m = over_wire(nq_hello_pack(&hw));
  ck_assert_ptr_null(json_object_get(m, "wait"));
  ck_assert_int_eq(nq_hello_parse(m, &hb, &err), 0);
  ck_assert_int_eq(hb.wait, 0);
  json_decref(m);
}
END_TEST

START_TEST(round_trip_work) {
  nq_proto_err_t err;
  nq_get_work_t g = {NQ_PROTO_WANT_MAX}, gb;
  json_t *m = over_wire(nq_get_work_pack(&g));
  ck_assert_int_eq(nq_get_work_parse(m, &gb, &err), 0);
  ck_assert_int_eq(gb.want, 256);
  json_decref(m);

  static nq_work_t w, wb; /* 256 assignments: too big for a check test's stack budget */
  static char units[NQ_PROTO_WANT_MAX][24];
  w.n = NQ_PROTO_WANT_MAX;
  for (int i = 0; i < w.n; i++) {
    snprintf(units[i], sizeof units[i], "18:c:5:0,5,%d", i % 18);
    w.a[i] = (nq_assignment_t){(int64_t)i + 1, units[i], 1763900000 + i, i % 2 ? 0 : NQ_PROTO_LEASE_MAX, NULL};
  }
  w.a[0].id = INT64_MAX;
  w.a[1].kernel = "reference";
  w.a[2].kernel = "avx2";
  m = over_wire(nq_work_pack(&w));
  ck_assert_int_eq(nq_work_parse(m, &wb, &err), 0);
  ck_assert_int_eq(wb.n, w.n);
  for (int i = 0; i < w.n; i++) {
    ck_assert_int_eq(wb.a[i].id, w.a[i].id);
    ck_assert_str_eq(wb.a[i].unit, w.a[i].unit);
    ck_assert_int_eq(wb.a[i].deadline, w.a[i].deadline);
    ck_assert_int_eq(wb.a[i].lease, w.a[i].lease);
    if (w.a[i].kernel) ck_assert_str_eq(wb.a[i].kernel, w.a[i].kernel);
    else ck_assert_ptr_null(wb.a[i].kernel);
  }
  json_decref(m);

  for (int r = NQ_NOWORK_NONE_PENDING; r <= NQ_NOWORK_WAITING; r++) {
    nq_no_work_t n = {30, (nq_nowork_reason_t)r}, nb;
    m = over_wire(nq_no_work_pack(&n));
    ck_assert_int_eq(nq_no_work_parse(m, &nb, &err), 0);
    ck_assert_int_eq(nb.retry_after, 30);
    ck_assert_int_eq(nb.reason, r);
    json_decref(m);
  }
}
END_TEST

START_TEST(round_trip_progress_result) {
  nq_proto_err_t err;
  nq_progress_t p = {.id = 123, .has_nodes = 1, .nodes = (uint64_t)INT64_MAX,
                     .has_fraction = 1, .fraction = 0.4375, .has_seconds = 1, .seconds = 61.5};
  nq_progress_t pb;
  json_t *m = over_wire(nq_progress_pack(&p));
  ck_assert_int_eq(nq_progress_parse(m, &pb, &err), 0);
  ck_assert_int_eq(pb.id, 123);
  ck_assert_int_eq(pb.has_nodes, 1);
  ck_assert(pb.nodes == (uint64_t)INT64_MAX);
  ck_assert_int_eq(pb.has_fraction, 1);
  ck_assert(pb.fraction == 0.4375);
  ck_assert_int_eq(pb.has_seconds, 1);
  ck_assert(pb.seconds == 61.5);
  json_decref(m);
  nq_progress_t p0 = {.id = 7};
  m = over_wire(nq_progress_pack(&p0));
  ck_assert_int_eq(nq_progress_parse(m, &pb, &err), 0);
  ck_assert_int_eq(pb.has_nodes, 0);
  ck_assert_int_eq(pb.has_fraction, 0);
  ck_assert_int_eq(pb.has_seconds, 0);
  ck_assert_int_eq(pb.paused, 0);
  ck_assert_ptr_null(json_object_get(m, "paused")); /* absent unless paused: older servers */
  json_decref(m);
  /* A paused client says so; the flag must be a boolean. */
  nq_progress_t pp = {.id = 8, .paused = 1};
  m = over_wire(nq_progress_pack(&pp));
  ck_assert_int_eq(nq_progress_parse(m, &pb, &err), 0);
  ck_assert_int_eq(pb.paused, 1);
  json_object_set_new(m, "paused", json_false());
  ck_assert_int_eq(nq_progress_parse(m, &pb, &err), 0);
  ck_assert_int_eq(pb.paused, 0);
  json_object_set_new(m, "paused", json_integer(1));
  ck_assert_int_ne(nq_progress_parse(m, &pb, &err), 0);
  json_decref(m);

  nq_lease_t l = {123, 1763900600}, lb;
  m = over_wire(nq_lease_pack(&l));
  ck_assert_int_eq(nq_lease_parse(m, &lb, &err), 0);
  ck_assert_int_eq(lb.id, 123);
  ck_assert_int_eq(lb.deadline, 1763900600);
  json_decref(m);

  nq_result_t r = {42, "18:s:3:3,0,10", {1, 2, 3, 0, (uint64_t)INT64_MAX}, 1.25, NQ_SOLVER_VERSION,
                   "opencl:NVIDIA H200+avx512"};
  nq_result_t rb;
  m = over_wire(nq_result_pack(&r));
  ck_assert_int_eq(nq_result_parse(m, &rb, &err), 0);
  ck_assert_int_eq(rb.id, 42);
  ck_assert_str_eq(rb.unit, r.unit);
  ck_assert(rb.counts.c2 == 1 && rb.counts.c4 == 2 && rb.counts.c8 == 3 && rb.counts.count1 == 0);
  ck_assert(rb.counts.nodes == (uint64_t)INT64_MAX);
  ck_assert_double_eq(rb.seconds, 1.25);
  ck_assert_str_eq(rb.solver, NQ_SOLVER_VERSION);
  ck_assert_str_eq(rb.backend, "opencl:NVIDIA H200+avx512");
  json_decref(m);

  for (int s = NQ_ACK_ACCEPTED; s <= NQ_ACK_LATE; s++) {
    nq_ack_t a = {.id = 9, .status = (nq_ack_status_t)s}, ab;
    m = over_wire(nq_ack_pack(&a));
    ck_assert_int_eq(nq_ack_parse(m, &ab, &err), 0);
    ck_assert_int_eq(ab.id, 9);
    ck_assert_int_eq(ab.status, s);
    ck_assert_int_eq(ab.has_receipt, 0);
    ck_assert_ptr_null(ab.credit);
    json_decref(m);
  }
  nq_ack_t ac = {.id = 10, .status = NQ_ACK_ACCEPTED,
                 .credit = "340282366920938463463374607431768211455"}, acb;
  m = over_wire(nq_ack_pack(&ac));
  ck_assert_int_eq(nq_ack_parse(m, &acb, &err), 0);
  ck_assert_str_eq(acb.credit, ac.credit);
  json_decref(m);
  /* With its receipt (docs/evidence.md, "The root and the receipts"). */
  const char *leaf = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  nq_ack_t a = {.id = 9, .status = NQ_ACK_ACCEPTED, .has_receipt = 1, .job = 4,
                .unit = "12:s:3:1,3,5", .leaf = leaf}, ab;
  m = over_wire(nq_ack_pack(&a));
  ck_assert_int_eq(nq_ack_parse(m, &ab, &err), 0);
  ck_assert(ab.has_receipt && ab.job == 4 && ab.id == 9);
  ck_assert_str_eq(ab.unit, "12:s:3:1,3,5");
  ck_assert_str_eq(ab.leaf, leaf);
  json_decref(m);
}
END_TEST

/* ack.receipt is optional (an older client ignores it, an older server sends none); present, it
 * is {job >= 0, unit, leaf of 64 lowercase hex digits}, else bad_message. */
START_TEST(ack_receipt_checked) {
  nq_proto_err_t err;
  nq_ack_t a;
  static const char *const bad[] = {
      "\"receipt\":7",
      "\"receipt\":{\"job\":-1,\"unit\":\"10:c:2:0,2\",\"leaf\":\"%s\"}",
      "\"receipt\":{\"job\":1,\"unit\":\"10 c\",\"leaf\":\"%s\"}",
      "\"receipt\":{\"job\":1,\"unit\":\"\",\"leaf\":\"%s\"}",
      "\"receipt\":{\"job\":1,\"unit\":\"10:c:2:0,2\",\"leaf\":\"%sA\"}",
      "\"receipt\":{\"job\":1,\"unit\":\"10:c:2:0,2\",\"leaf\":\"ABCD%.60s\"}",
      "\"receipt\":{\"job\":1,\"unit\":\"10:c:2:0,2\"}",
  };
  const char *z = "00000000000000000000000000000000000000000000000000000000000000ff";
  char field[300], buf[512];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(field, sizeof field, bad[i], z);
    snprintf(buf, sizeof buf, "{\"type\":\"ack\",\"id\":5,\"status\":\"accepted\",%s}", field);
    json_t *m = json_loads(buf, 0, NULL);
    ck_assert_ptr_nonnull(m);
    ck_assert_msg(nq_ack_parse(m, &a, &err) != 0, "accepted: %s", buf);
    ck_assert_int_eq(err.code, NQ_ERR_BAD_MESSAGE);
    json_decref(m);
  }
  snprintf(buf, sizeof buf, "{\"type\":\"ack\",\"id\":5,\"status\":\"late\",\"receipt\":"
           "{\"job\":0,\"unit\":\"10:c:2:0,2\",\"leaf\":\"%s\",\"more\":1},\"new\":2}", z);
  json_t *m = json_loads(buf, 0, NULL);
  ck_assert_int_eq(nq_ack_parse(m, &a, &err), 0);
  ck_assert(a.has_receipt && a.status == NQ_ACK_LATE);
  json_decref(m);
}
END_TEST

/* result.backend is optional; present, it is 1..128 printable ASCII characters. */
START_TEST(result_backend_checked) {
  nq_proto_err_t err;
  nq_result_t rb;
  const char *base = "{\"type\":\"result\",\"id\":5,\"unit\":\"10:c:2:0,2\",\"c2\":0,"
                     "\"c4\":0,\"c8\":1,\"nodes\":9,\"seconds\":0.5,\"solver\":\"s\"";
  char buf[1024];
  snprintf(buf, sizeof buf, "%s}", base);
  json_t *m = json_loads(buf, 0, NULL);
  ck_assert_int_eq(nq_result_parse(m, &rb, &err), 0);
  ck_assert_str_eq(rb.backend, ""); /* not said */
  json_decref(m);
  char longb[200];
  memset(longb, 'x', 129);
  longb[129] = '\0';
  const char *bad[] = {"\"\"", "7", "\"a\\u0001b\"", "\"caf\u00c3\u00a9\""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0] + 1; i++) {
    if (i < sizeof bad / sizeof bad[0])
      snprintf(buf, sizeof buf, "%s,\"backend\":%s}", base, bad[i]);
    else
      snprintf(buf, sizeof buf, "%s,\"backend\":\"%s\"}", base, longb);
    m = json_loads(buf, 0, NULL);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(nq_result_parse(m, &rb, &err), NQ_EPROTO);
    ck_assert_int_eq(err.code, NQ_ERR_BAD_MESSAGE);
    json_decref(m);
  }
  longb[128] = '\0'; /* 128 characters: the most */
  snprintf(buf, sizeof buf, "%s,\"backend\":\"%s\"}", base, longb);
  m = json_loads(buf, 0, NULL);
  ck_assert_int_eq(nq_result_parse(m, &rb, &err), 0);
  ck_assert_uint_eq(strlen(rb.backend), 128);
  json_decref(m);
}
END_TEST

/* work.assignments[].kernel is optional; present, it is 1..15 of [a-z0-9_-]. */
START_TEST(work_kernel_checked) {
  nq_proto_err_t err;
  static nq_work_t wb;
  const char *base = "{\"type\":\"work\",\"assignments\":[{\"id\":5,\"unit\":\"10:c:2:0,2\","
                     "\"deadline\":100,\"lease\":60";
  const char *bad[] = {"\"\"", "7", "\"AVX2\"", "\"a b\"", "\"abcdefghijklmnop\""};
  char buf[512];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(buf, sizeof buf, "%s,\"kernel\":%s}]}", base, bad[i]);
    json_t *m = json_loads(buf, 0, NULL);
    ck_assert_ptr_nonnull(m);
    ck_assert_int_eq(nq_work_parse(m, &wb, &err), NQ_EPROTO);
    ck_assert_int_eq(err.code, NQ_ERR_BAD_MESSAGE);
    json_decref(m);
  }
  snprintf(buf, sizeof buf, "%s,\"kernel\":\"abcdefghijklmno\"}]}", base); /* 15: the most */
  json_t *m = json_loads(buf, 0, NULL);
  ck_assert_int_eq(nq_work_parse(m, &wb, &err), 0);
  ck_assert_str_eq(wb.a[0].kernel, "abcdefghijklmno");
  json_decref(m);
  /* An old server's assignment has none. */
  snprintf(buf, sizeof buf, "%s}]}", base);
  m = json_loads(buf, 0, NULL);
  ck_assert_int_eq(nq_work_parse(m, &wb, &err), 0);
  ck_assert_ptr_null(wb.a[0].kernel);
  json_decref(m);
}
END_TEST

/* signup and signup_reply: both states round-trip; every malformed variant is refused with a
 * fatal error (bad_message; version for an unknown protocol). */
START_TEST(round_trip_signup) {
  nq_proto_err_t err;
  nq_signup_t a = {0, "box-1", "Ada", "lab-team", "nq-client 9", NULL}, b;
  json_t *m = over_wire(nq_signup_pack(&a));
  ck_assert_int_eq(nq_signup_parse(m, &b, &err), 0);
  ck_assert_int_eq(b.v, NQ_PROTO_VERSION);
  ck_assert_str_eq(b.name, "box-1");
  ck_assert_str_eq(b.public_name, "Ada");
  ck_assert_str_eq(b.team, "lab-team");
  ck_assert_str_eq(b.software, "nq-client 9");
  ck_assert_ptr_null(b.ticket);
  json_decref(m);
  nq_signup_t t = {1, "box-2", NULL, NULL, NULL, "0123abcdef"};
  m = over_wire(nq_signup_pack(&t));
  ck_assert_int_eq(nq_signup_parse(m, &b, &err), 0);
  ck_assert_str_eq(b.ticket, "0123abcdef");
  ck_assert_ptr_null(b.public_name);
  json_decref(m);
  static const char *const bad[] = {
      "{\"type\":\"signup\"}",
      "{\"type\":\"signup\",\"v\":1}",
      "{\"type\":\"signup\",\"v\":\"1\",\"name\":\"a\"}",
      "{\"type\":\"signup\",\"v\":1,\"name\":\"a b\"}",
      "{\"type\":\"signup\",\"v\":1,\"name\":\"a\",\"public_name\":\"\"}",
      "{\"type\":\"signup\",\"v\":1,\"name\":\"a\",\"team\":7}",
      "{\"type\":\"signup\",\"v\":1,\"name\":\"a\",\"software\":\"\\n\"}",
      "{\"type\":\"signup\",\"v\":1,\"name\":\"a\",\"ticket\":\"ABC\"}",
      "{\"type\":\"signup\",\"v\":1,\"name\":\"a\",\"ticket\":\"\"}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    m = json_loads(bad[i], 0, NULL);
    ck_assert_ptr_nonnull(m);
    ck_assert_msg(nq_signup_parse(m, &b, &err) == NQ_EPROTO, "%s", bad[i]);
    ck_assert_int_eq(err.code, NQ_ERR_BAD_MESSAGE);
    ck_assert_int_eq(err.fatal, 1);
    json_decref(m);
  }
  m = json_loads("{\"type\":\"signup\",\"v\":99,\"name\":\"a\"}", 0, NULL);
  ck_assert_int_eq(nq_signup_parse(m, &b, &err), NQ_EPROTO);
  ck_assert_int_eq(err.code, NQ_ERR_VERSION);
  json_decref(m);

  nq_signup_reply_t j = {NQ_SIGNUP_JOINED, "v-0a1b", "k3y", "box-1", "t0k", NULL, 0, 0}, jr;
  m = over_wire(nq_signup_reply_pack(&j));
  ck_assert_int_eq(nq_signup_reply_parse(m, &jr, &err), 0);
  ck_assert_int_eq(jr.state, NQ_SIGNUP_JOINED);
  ck_assert_str_eq(jr.owner, "v-0a1b");
  ck_assert_str_eq(jr.owner_key, "k3y");
  ck_assert_str_eq(jr.client, "box-1");
  ck_assert_str_eq(jr.token, "t0k");
  json_decref(m);
  nq_signup_reply_t p = {NQ_SIGNUP_PENDING, NULL, NULL, NULL, NULL, "beef", 7, 60};
  m = over_wire(nq_signup_reply_pack(&p));
  ck_assert_int_eq(nq_signup_reply_parse(m, &jr, &err), 0);
  ck_assert_int_eq(jr.state, NQ_SIGNUP_PENDING);
  ck_assert_int_eq(jr.request, 7);
  ck_assert_int_eq(jr.retry_after, 60);
  ck_assert_str_eq(jr.ticket, "beef");
  json_decref(m);
  static const char *const bad_reply[] = {
      "{\"type\":\"signup_reply\"}",
      "{\"type\":\"signup_reply\",\"state\":\"maybe\"}",
      "{\"type\":\"signup_reply\",\"state\":\"joined\",\"owner\":\"o\"}",
      "{\"type\":\"signup_reply\",\"state\":\"joined\",\"owner\":\"o\",\"owner_key\":\"\","
      "\"client\":\"c\",\"token\":\"t\"}",
      "{\"type\":\"signup_reply\",\"state\":\"pending\",\"request\":0,\"retry_after\":5}",
      "{\"type\":\"signup_reply\",\"state\":\"pending\",\"request\":1,\"retry_after\":3601}",
      "{\"type\":\"signup_reply\",\"state\":\"pending\",\"request\":1,\"retry_after\":5,"
      "\"ticket\":\"xyz\"}",
  };
  for (size_t i = 0; i < sizeof bad_reply / sizeof *bad_reply; i++) {
    m = json_loads(bad_reply[i], 0, NULL);
    ck_assert_ptr_nonnull(m);
    ck_assert_msg(nq_signup_reply_parse(m, &jr, &err) == NQ_EPROTO, "%s", bad_reply[i]);
    ck_assert_int_eq(err.code, NQ_ERR_BAD_MESSAGE);
    json_decref(m);
  }
}
END_TEST

START_TEST(round_trip_admin_error_bye) {
  nq_proto_err_t err;
  nq_admin_req_t reqs[] = {
      {.cmd = NQ_ADMIN_STATUS},
      {.cmd = NQ_ADMIN_CLIENTS},
      {.cmd = NQ_ADMIN_CLIENT_ADD, .q.client_add = {"delta", NULL}},
      {.cmd = NQ_ADMIN_CLIENT_BAN, .q.client_ban = {"alpha"}},
      {.cmd = NQ_ADMIN_JOBS},
      {.cmd = NQ_ADMIN_UNITS, .q.units = {"disputed", 0}},
      {.cmd = NQ_ADMIN_UNITS, .q.units = {"all", 25}},
      {.cmd = NQ_ADMIN_UNIT_RETRY, .q.unit_retry = {.unit = {0, "8:c:2:0,2,4"}}},
      {.cmd = NQ_ADMIN_UNIT_RETRY,
       .q.unit_retry = {.unit = {77, NULL}, .extra = NQ_PROTO_RETRY_EXTRA_MAX}},
      {.cmd = NQ_ADMIN_JOB_ARCHIVE, .q.job_archive = {18, 0}},
      {.cmd = NQ_ADMIN_JOB_DELETE, .q.job_delete = {32, 1}},
      {.cmd = NQ_ADMIN_OWNERS},
      {.cmd = NQ_ADMIN_OWNER_ADD, .q.owner_add = {"lab"}},
      {.cmd = NQ_ADMIN_OWNER_BAN, .q.owner_ban = {"lab"}},
      {.cmd = NQ_ADMIN_OWNER_TRUST, .q.owner_trust = {"lab"}},
      {.cmd = NQ_ADMIN_OWNER_UNTRUST, .q.owner_untrust = {"lab"}},
      {.cmd = NQ_ADMIN_CLIENT_UNBAN, .q.client_unban = {"alpha"}},
      {.cmd = NQ_ADMIN_UNIT_REOPEN, .q.unit_reopen = {{42, NULL}}},
      {.cmd = NQ_ADMIN_UNIT_RETRY, .q.unit_retry = {.all_disputed = 1, .extra = 3}},
      {.cmd = NQ_ADMIN_UNIT_RETRY, .q.unit_retry = {.client = "alpha"}},
      {.cmd = NQ_ADMIN_JOB_ADD, .q.job_add = {.n = 28, .unit_seconds = 28800, .max_depth = 20,
                                              .quorum = 3, .max_results = 6}},
      {.cmd = NQ_ADMIN_JOB_ADD, .q.job_add = {.n = 10, .depth = 4}},
      {.cmd = NQ_ADMIN_JOB_ADD,
       .q.job_add = {.n = 28, .diverse_kernels = 3, .has_diverse_kernels = 1}},
      {.cmd = NQ_ADMIN_JOB_ADD, .q.job_add = {.n = 28}}, /* absent: N's default */
      {.cmd = NQ_ADMIN_JOB_LIST, .q.job_list = {1}},
      {.cmd = NQ_ADMIN_JOB_CANCEL, .q.job_cancel = {7}},
      {.cmd = NQ_ADMIN_JOB_NEXT, .q.job_next = {1}},
      {.cmd = NQ_ADMIN_JOB_NEXT},
      {.cmd = NQ_ADMIN_CLIENT_ADD, .q.client_add = {"epsilon", "lab"}},
      {.cmd = NQ_ADMIN_OWNER_UNBAN, .q.owner_unban = {"lab"}},
      {.cmd = NQ_ADMIN_OWNER_REKEY, .q.owner_rekey = {"lab"}},
      {.cmd = NQ_ADMIN_SIGNUPS},
      {.cmd = NQ_ADMIN_SIGNUPS, .q.signups = {1}},
      {.cmd = NQ_ADMIN_OWNER_APPROVE, .q.owner_approve = {12}},
      {.cmd = NQ_ADMIN_OWNER_REJECT, .q.owner_reject = {1}},
      {.cmd = NQ_ADMIN_NEWS_ADD, .q.news_add = {"Maintenance on Sunday"}},
      {.cmd = NQ_ADMIN_NEWS_LIST},
      {.cmd = NQ_ADMIN_NEWS_REMOVE, .q.news_remove = {3}},
      {.cmd = NQ_ADMIN_TEAMS},
      {.cmd = NQ_ADMIN_TEAM_ADD, .q.team_add = {"lab"}},
      {.cmd = NQ_ADMIN_TEAM_RENAME, .q.team_rename = {"lab", "lab2"}},
      {.cmd = NQ_ADMIN_TEAM_REMOVE, .q.team_remove = {"lab2"}},
  };
  for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
    nq_admin_req_t b;
    json_t *m = over_wire(nq_admin_req_pack(&reqs[i]));
    ck_assert_int_eq(nq_admin_req_parse(m, &b, &err), 0);
    ck_assert_int_eq(b.cmd, reqs[i].cmd);
    /* Every field of the command's request view came back: packed again, the same message. */
    json_t *again = nq_admin_req_pack(&b);
    ck_assert_msg(json_equal(again, m), "%s", nq_admin_cmd_name(b.cmd));
    json_decref(again);
    if (b.cmd == NQ_ADMIN_JOB_ADD) {
      ck_assert_int_eq(b.q.job_add.has_diverse_kernels, reqs[i].q.job_add.has_diverse_kernels);
      ck_assert_int_eq(b.q.job_add.diverse_kernels, reqs[i].q.job_add.diverse_kernels);
    }
    json_decref(m);
  }
  json_t *data = json_pack("{s:[{s:s}]}", "clients", "name", "alpha");
  nq_admin_reply_t rep = {NQ_ADMIN_CLIENTS, data}, rb;
  json_t *m = over_wire(nq_admin_reply_pack(&rep));
  ck_assert_int_eq(nq_admin_reply_parse(m, &rb, &err), 0);
  ck_assert_int_eq(rb.cmd, NQ_ADMIN_CLIENTS);
  ck_assert(json_equal(rb.data, data));
  json_decref(m);
  json_decref(data);

  nq_error_msg_t e = {NQ_ERR_UNKNOWN_ASSIGNMENT, NULL, "no such assignment", 0, 123, 0, 0}, eb;
  m = over_wire(nq_error_pack(&e));
  ck_assert_int_eq(nq_error_parse(m, &eb, &err), 0);
  ck_assert_int_eq(eb.code, NQ_ERR_UNKNOWN_ASSIGNMENT);
  ck_assert_str_eq(eb.name, "unknown_assignment");
  ck_assert_str_eq(eb.message, "no such assignment");
  ck_assert_int_eq(eb.fatal, 0);
  ck_assert_int_eq(eb.id, 123);
  json_decref(m);
  /* A code from a newer peer is carried by name. */
  nq_error_msg_t o = {NQ_ERR_OTHER, "too_cold", "warm up", 1, -1, 0, 0};
  m = over_wire(nq_error_pack(&o));
  ck_assert_int_eq(nq_error_parse(m, &eb, &err), 0);
  ck_assert_int_eq(eb.code, NQ_ERR_OTHER);
  ck_assert_str_eq(eb.name, "too_cold");
  ck_assert_int_eq(eb.fatal, 1);
  ck_assert_int_eq(eb.id, -1);
  json_decref(m);
  /* The lenient fields: message and fatal may be absent. */
  m = load("{\"type\":\"error\",\"code\":\"busy\"}");
  ck_assert_int_eq(nq_error_parse(m, &eb, &err), 0);
  ck_assert_int_eq(eb.code, NQ_ERR_BUSY);
  ck_assert_str_eq(eb.message, "");
  ck_assert_int_eq(eb.fatal, 0);
  ck_assert_int_eq(eb.retry_after, 0);
  json_decref(m);
  /* busy's retry_after: carried when set, 1..NQ_RETRY_AFTER_MAX, refused otherwise. */
  nq_error_msg_t busy = {NQ_ERR_BUSY, NULL, "full", 1, -1, 0, 45};
  m = over_wire(nq_error_pack(&busy));
  ck_assert_int_eq(nq_error_parse(m, &eb, &err), 0);
  ck_assert_int_eq(eb.retry_after, 45);
  json_decref(m);
  const char *bad_retry[] = {"0", "-1", "3601", "1.5", "\"30\""}; /* null: absent */
  for (size_t i = 0; i < sizeof bad_retry / sizeof *bad_retry; i++) {
    char text[128];
    snprintf(text, sizeof text, "{\"type\":\"error\",\"code\":\"busy\",\"retry_after\":%s}",
             bad_retry[i]);
    m = load(text);
    ck_assert_msg(nq_error_parse(m, &eb, &err) != 0, "retry_after %s accepted", bad_retry[i]);
    json_decref(m);
  }

  m = over_wire(nq_bye_pack());
  ck_assert_int_eq(nq_msg_type(m, NULL), NQ_MSG_BYE);
  ck_assert_int_eq((int)json_object_size(m), 1);
  json_decref(m);
}
END_TEST

/* The bytes of version 1 as today's programs send them: a peer built before this module must
 * read exactly what it always read. */
START_TEST(version1_wire_bytes) {
  nq_welcome_t w = {1, "lab-7", NULL, 18, 3, NQ_JOB_RUNNING, 16, 900, NULL, NULL, NULL, NULL, {0}};
  expect_text(nq_welcome_pack(&w),
              "{\"type\":\"welcome\",\"v\":1,\"job\":{\"n\":18,\"depth\":3,\"state\":\"running\"},"
              "\"max_outstanding\":16,\"progress_interval\":900,\"client\":\"lab-7\"}");
  nq_work_t *wk = calloc(1, sizeof *wk);
  wk->n = 1;
  wk->a[0] = (nq_assignment_t){123, "18:c:5:0,5,12", 1763900000, 140, NULL};
  expect_text(nq_work_pack(wk), "{\"type\":\"work\",\"assignments\":[{\"id\":123,\"unit\":"
                                "\"18:c:5:0,5,12\",\"deadline\":1763900000,\"lease\":140}]}");
  free(wk);
  nq_no_work_t nw = {10, NQ_NOWORK_NONE_PENDING};
  expect_text(nq_no_work_pack(&nw),
              "{\"type\":\"no_work\",\"retry_after\":10,\"reason\":\"none_pending\"}");
  nq_lease_t l = {123, 1763900600};
  expect_text(nq_lease_pack(&l), "{\"type\":\"lease\",\"id\":123,\"deadline\":1763900600}");
  nq_ack_t a = {.id = 123, .status = NQ_ACK_ACCEPTED};
  expect_text(nq_ack_pack(&a), "{\"type\":\"ack\",\"id\":123,\"status\":\"accepted\"}");
  nq_result_t r = {123, "18:c:5:0,5,12", {0, 0, 12345, 0, 987654321}, 1.25, "nq-solver-3", ""};
  expect_text(nq_result_pack(&r),
              "{\"type\":\"result\",\"id\":123,\"unit\":\"18:c:5:0,5,12\",\"c2\":0,\"c4\":0,"
              "\"c8\":12345,\"nodes\":987654321,\"seconds\":1.25,\"solver\":\"nq-solver-3\"}");
  nq_get_work_t g = {4};
  expect_text(nq_get_work_pack(&g), "{\"type\":\"get_work\",\"want\":4}");
  nq_progress_t p = {.id = 123, .has_nodes = 1, .nodes = 123456789};
  expect_text(nq_progress_pack(&p), "{\"type\":\"progress\",\"id\":123,\"nodes\":123456789}");
  p.has_fraction = p.has_seconds = 1;
  p.fraction = 0.25;
  p.seconds = 12.5;
  expect_text(nq_progress_pack(&p), "{\"type\":\"progress\",\"id\":123,\"nodes\":123456789,"
                                    "\"fraction\":0.25,\"seconds\":12.5}");
  expect_text(nq_error_new(NQ_ERR_BAD_JSON, "human readable", 1),
              "{\"type\":\"error\",\"code\":\"bad_json\",\"message\":\"human readable\","
              "\"fatal\":true}");
  nq_admin_req_t q = {.cmd = NQ_ADMIN_STATUS};
  expect_text(nq_admin_req_pack(&q), "{\"type\":\"admin\",\"cmd\":\"status\"}");
  expect_text(nq_bye_pack(), "{\"type\":\"bye\"}");
}
END_TEST

/* ---- refusals -------------------------------------------------------------------------------- */


typedef struct {
  fx_parse_fn parse;
  const char *json;
  nq_errcode_t code; /* NQ_ERR_NONE: must be accepted */
  int fatal;
  int64_t id;
} case_t;

#define OK_(fn, j) {fx_parse_##fn, j, NQ_ERR_NONE, 0, -1}
#define BADM(fn, j) {fx_parse_##fn, j, NQ_ERR_BAD_MESSAGE, 1, -1}
#define VERS(fn, j) {fx_parse_##fn, j, NQ_ERR_VERSION, 1, -1}
#define UPGR(fn, j) {fx_parse_##fn, j, NQ_ERR_UPGRADE_REQUIRED, 1, -1}
#define ADMB(j) {fx_parse_admin_req, j, NQ_ERR_BAD_MESSAGE, 0, -1}

#define H "{\"type\":\"hello\","
#define T "\"token\":\"t\""
#define W "{\"type\":\"welcome\","
#define JOB "\"job\":{\"n\":8,\"depth\":3,\"state\":\"running\"}"
#define WOK "\"v\":1," JOB ",\"max_outstanding\":16,\"progress_interval\":60"
#define A1 "{\"id\":1,\"unit\":\"8:c:2:0,2,4\",\"deadline\":5,\"lease\":5}"
#define R "{\"type\":\"result\",\"id\":7,\"unit\":\"8:c:2:0,2,4\","
#define RC "\"c2\":0,\"c4\":0,\"c8\":1,\"nodes\":9"
#define RS ",\"seconds\":0.5,\"solver\":\"nq-solver-3\"}"
#define X65 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" /* 65 x */
#define S65 "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\""
#define U128                                                                                       \
  "\"8:c:2:0,2,444444444444444444444444444444444444444444444444444444444444444444444444444444444" \
  "44444444444444444444444444444444444444\""

static const case_t cases[] = {
    /* hello */
    OK_(hello, H "\"v\":1,\"role\":\"client\"," T "}"),
    OK_(hello, H "\"v\":1,\"role\":\"client\",\"enrol\":\"k\",\"name\":\"bob\",\"threads\":1024}"),
    OK_(hello, H "\"v\":1,\"role\":\"client\"," T ",\"solver\":null,\"threads\":null}"),
    BADM(hello, H "\"role\":\"client\"," T "}"),
    BADM(hello, H "\"v\":\"1\",\"role\":\"client\"," T "}"),
    BADM(hello, H "\"v\":1.0,\"role\":\"client\"," T "}"),
    BADM(hello, H "\"v\":true,\"role\":\"client\"," T "}"),
    VERS(hello, H "\"v\":2,\"role\":\"client\"," T "}"),
    UPGR(hello, H "\"v\":0,\"role\":\"client\"," T "}"),
    BADM(hello, H "\"v\":-1,\"role\":\"client\"," T "}"),
    BADM(hello, H "\"v\":1000001,\"role\":\"client\"," T "}"),
    VERS(hello, H "\"v\":2}"), /* the version is judged before any other field */
    UPGR(hello, H "\"v\":0}"),
    /* version ranges: the highest common version is spoken; none in common is refused */
    OK_(hello, H "\"v\":1,\"v_min\":1,\"v_max\":1,\"role\":\"client\"," T "}"),
    OK_(hello, H "\"v\":3,\"v_min\":1,\"v_max\":5,\"role\":\"client\"," T "}"),
    OK_(hello, H "\"v\":1,\"v_min\":0,\"v_max\":1,\"role\":\"client\"," T "}"),
    UPGR(hello, H "\"v\":0,\"v_min\":0,\"v_max\":0,\"role\":\"client\"," T "}"),
    VERS(hello, H "\"v\":2,\"v_min\":2,\"v_max\":9,\"role\":\"client\"," T "}"),
    BADM(hello, H "\"v\":1,\"v_min\":2,\"v_max\":3,\"role\":\"client\"," T "}"),
    BADM(hello, H "\"v\":4,\"v_min\":2,\"v_max\":3,\"role\":\"client\"," T "}"),
    BADM(hello, H "\"v\":1,\"v_min\":\"1\",\"role\":\"client\"," T "}"),
    BADM(hello, H "\"v\":1,\"v_max\":1.5,\"role\":\"client\"," T "}"),
    /* software: 1..64 printable ASCII */
    OK_(hello, H "\"v\":1,\"role\":\"client\"," T ",\"software\":\"nq-client 0.1.0\"}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"software\":\"\"}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"software\":\"a\\nb\"}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"software\":" S65 "}"),
    BADM(hello, H "\"v\":1," T "}"),
    BADM(hello, H "\"v\":1,\"role\":\"root\"," T "}"),
    BADM(hello, H "\"v\":1,\"role\":1," T "}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\",\"token\":123}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\",\"token\":[\"x\"]}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\",\"enrol\":{},\"name\":\"bob\"}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\",\"enrol\":\"k\",\"name\":7}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\",\"enrol\":\"k\",\"name\":\"bad name!\"}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\",\"enrol\":\"k\",\"name\":" S65 "}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\",\"enrol\":\"k\"}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"enrol\":\"k\",\"name\":\"bob\"}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"solver\":\"\"}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"solver\":" S65 "}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"solver\":1}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"software\":{}}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"threads\":0}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"threads\":1025}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"threads\":\"4\"}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"threads\":1.5}"),
    BADM(hello, H "\"v\":1,\"role\":\"admin\"}"),
    BADM(hello, H "\"v\":1,\"role\":\"admin\"," T ",\"enrol\":\"k\",\"name\":\"bob\"}"),
    /* welcome */
    OK_(welcome, W WOK "}"),
    OK_(welcome, W WOK ",\"client\":\"bob\",\"token\":\"abc\"}"),
    BADM(welcome, W JOB ",\"max_outstanding\":16,\"progress_interval\":60}"),
    BADM(welcome, W "\"v\":\"1\"," JOB ",\"max_outstanding\":16,\"progress_interval\":60}"),
    VERS(welcome, W "\"v\":2," JOB "}"),
    VERS(welcome, W "\"v\":0}"),
    BADM(welcome, W "\"v\":1,\"max_outstanding\":16,\"progress_interval\":60}"),
    BADM(welcome, W "\"v\":1,\"job\":[],\"max_outstanding\":16,\"progress_interval\":60}"),
    BADM(welcome, W "\"v\":1,\"job\":{\"n\":0,\"depth\":3,\"state\":\"running\"},"
                    "\"max_outstanding\":16,\"progress_interval\":60}"),
    BADM(welcome, W "\"v\":1,\"job\":{\"n\":33,\"depth\":3,\"state\":\"running\"},"
                    "\"max_outstanding\":16,\"progress_interval\":60}"),
    BADM(welcome, W "\"v\":1,\"job\":{\"n\":8,\"depth\":\"3\",\"state\":\"running\"},"
                    "\"max_outstanding\":16,\"progress_interval\":60}"),
    BADM(welcome, W "\"v\":1,\"job\":{\"n\":8,\"depth\":3,\"state\":\"paused\"},"
                    "\"max_outstanding\":16,\"progress_interval\":60}"),
    BADM(welcome, W "\"v\":1," JOB ",\"max_outstanding\":0,\"progress_interval\":60}"),
    BADM(welcome, W "\"v\":1," JOB ",\"max_outstanding\":257,\"progress_interval\":60}"),
    BADM(welcome, W "\"v\":1," JOB ",\"progress_interval\":60}"),
    BADM(welcome, W "\"v\":1," JOB ",\"max_outstanding\":16,\"progress_interval\":0}"),
    BADM(welcome, W "\"v\":1," JOB ",\"max_outstanding\":16}"),
    BADM(welcome, W WOK ",\"client\":5}"),
    BADM(welcome, W WOK ",\"token\":[]}"),
    OK_(welcome, W WOK ",\"shown_as\":\"anonymous-3fa2c1\",\"page\":\"http://h:8/\",\"credit\":\"0\"}"),
    BADM(welcome, W WOK ",\"shown_as\":\"\"}"),
    BADM(welcome, W WOK ",\"shown_as\":\"a\\nb\"}"),
    BADM(welcome, W WOK ",\"page\":7}"),
    BADM(welcome, W WOK ",\"credit\":12}"),
    BADM(welcome, W WOK ",\"credit\":\"-1\"}"),
    BADM(welcome, W WOK ",\"credit\":\"1e9\"}"),
    BADM(welcome, W WOK ",\"credit\":\"340282366920938463463374607431768211456\"}"),
    /* get_work */
    OK_(get_work, "{\"type\":\"get_work\",\"want\":1}"),
    BADM(get_work, "{\"type\":\"get_work\"}"),
    BADM(get_work, "{\"type\":\"get_work\",\"want\":0}"),
    BADM(get_work, "{\"type\":\"get_work\",\"want\":257}"),
    BADM(get_work, "{\"type\":\"get_work\",\"want\":\"4\"}"),
    BADM(get_work, "{\"type\":\"get_work\",\"want\":4.0}"),
    /* work */
    OK_(work, "{\"type\":\"work\",\"assignments\":[" A1 "," A1 "]}"),
    BADM(work, "{\"type\":\"work\"}"),
    BADM(work, "{\"type\":\"work\",\"assignments\":[]}"),
    BADM(work, "{\"type\":\"work\",\"assignments\":{}}"),
    BADM(work, "{\"type\":\"work\",\"assignments\":[" A1 ",7]}"),
    BADM(work, "{\"type\":\"work\",\"assignments\":[{\"id\":-1,\"unit\":\"u\",\"deadline\":5,"
               "\"lease\":5}]}"),
    BADM(work, "{\"type\":\"work\",\"assignments\":[{\"id\":\"1\",\"unit\":\"u\",\"deadline\":5,"
               "\"lease\":5}]}"),
    BADM(work, "{\"type\":\"work\",\"assignments\":[{\"id\":1,\"deadline\":5,\"lease\":5}]}"),
    BADM(work, "{\"type\":\"work\",\"assignments\":[{\"id\":1,\"unit\":\"\",\"deadline\":5,"
               "\"lease\":5}]}"),
    BADM(work, "{\"type\":\"work\",\"assignments\":[{\"id\":1,\"unit\":" U128 ",\"deadline\":5,"
               "\"lease\":5}]}"),
    BADM(work, "{\"type\":\"work\",\"assignments\":[{\"id\":1,\"unit\":\"u\",\"deadline\":-5,"
               "\"lease\":5}]}"),
    BADM(work, "{\"type\":\"work\",\"assignments\":[{\"id\":1,\"unit\":\"u\",\"deadline\":5,"
               "\"lease\":-1}]}"),
    BADM(work, "{\"type\":\"work\",\"assignments\":[{\"id\":1,\"unit\":\"u\",\"deadline\":5,"
               "\"lease\":31622401}]}"),
    BADM(work, "{\"type\":\"work\",\"assignments\":[{\"id\":1,\"unit\":\"u\",\"deadline\":5}]}"),
    /* no_work */
    OK_(no_work, "{\"type\":\"no_work\",\"retry_after\":0,\"reason\":\"done\"}"),
    /* Waiting between jobs. */
    OK_(no_work, "{\"type\":\"no_work\",\"retry_after\":30,\"reason\":\"waiting\"}"),
    OK_(hello, H "\"v\":1,\"role\":\"client\"," T ",\"wait\":true}"),
    OK_(hello, H "\"v\":1,\"role\":\"client\"," T ",\"wait\":false}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"wait\":\"yes\"}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"wait\":1}"),
    /* The client's own kernel: 1..128 printable characters. */
    OK_(hello, H "\"v\":1,\"role\":\"client\"," T ",\"kernel\":\"avx2\"}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"kernel\":\"\"}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"kernel\":7}"),
    BADM(hello, H "\"v\":1,\"role\":\"client\"," T ",\"kernel\":\"a\\nb\"}"),
    OK_(welcome, W "\"v\":1,\"job\":{\"n\":8,\"depth\":3,\"state\":\"waiting\"},"
                 "\"max_outstanding\":16,\"progress_interval\":60}"),
    BADM(welcome, W "\"v\":1,\"job\":{\"n\":8,\"depth\":3,\"state\":\"idle\"},"
                  "\"max_outstanding\":16,\"progress_interval\":60}"),
    OK_(admin_req, "{\"type\":\"admin\",\"cmd\":\"job_add\",\"n\":11}"),
    OK_(admin_req, "{\"type\":\"admin\",\"cmd\":\"job_add\",\"n\":28,\"unit_seconds\":28800,"
                   "\"max_depth\":20,\"quorum\":3,\"max_results\":6}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"job_add\"}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"job_add\",\"n\":3}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"job_add\",\"n\":11,\"depth\":\"4\"}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"job_add\",\"n\":11,\"unit_seconds\":-1}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"job_add\",\"n\":11,\"quorum\":1001}"),
    OK_(admin_req, "{\"type\":\"admin\",\"cmd\":\"job_list\",\"all\":true}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"job_list\",\"all\":1}"),
    OK_(admin_req, "{\"type\":\"admin\",\"cmd\":\"job_cancel\",\"id\":4}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"job_cancel\",\"id\":0}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"job_cancel\"}"),
    OK_(admin_req, "{\"type\":\"admin\",\"cmd\":\"job_next\",\"force\":true}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"job_next\",\"force\":\"yes\"}"),
    BADM(no_work, "{\"type\":\"no_work\",\"reason\":\"cap\"}"),
    BADM(no_work, "{\"type\":\"no_work\",\"retry_after\":-1,\"reason\":\"cap\"}"),
    BADM(no_work, "{\"type\":\"no_work\",\"retry_after\":10}"),
    BADM(no_work, "{\"type\":\"no_work\",\"retry_after\":10,\"reason\":\"later\"}"),
    /* progress */
    OK_(progress, "{\"type\":\"progress\",\"id\":0}"),
    OK_(progress, "{\"type\":\"progress\",\"id\":1,\"nodes\":\"12\"}"),
    BADM(progress, "{\"type\":\"progress\"}"),
    BADM(progress, "{\"type\":\"progress\",\"id\":-1}"),
    BADM(progress, "{\"type\":\"progress\",\"id\":\"1\"}"),
    BADM(progress, "{\"type\":\"progress\",\"id\":1,\"nodes\":-1}"),
    BADM(progress, "{\"type\":\"progress\",\"id\":1,\"nodes\":\"x\"}"),
    BADM(progress, "{\"type\":\"progress\",\"id\":1,\"nodes\":1.5}"),
    OK_(progress, "{\"type\":\"progress\",\"id\":1,\"fraction\":0,\"seconds\":0}"),
    OK_(progress, "{\"type\":\"progress\",\"id\":1,\"fraction\":1,\"seconds\":3.5}"),
    BADM(progress, "{\"type\":\"progress\",\"id\":1,\"fraction\":1.01}"),
    BADM(progress, "{\"type\":\"progress\",\"id\":1,\"fraction\":-0.1}"),
    BADM(progress, "{\"type\":\"progress\",\"id\":1,\"fraction\":\"0.5\"}"),
    BADM(progress, "{\"type\":\"progress\",\"id\":1,\"fraction\":null}"),
    BADM(progress, "{\"type\":\"progress\",\"id\":1,\"seconds\":-1}"),
    BADM(progress, "{\"type\":\"progress\",\"id\":1,\"seconds\":true}"),
    BADM(progress, "{\"type\":\"progress\",\"id\":1,\"nodes\":\"9223372036854775808\"}"),
    BADM(progress, "{\"type\":\"progress\",\"id\":1,\"nodes\":null}"),
    /* lease */
    OK_(lease, "{\"type\":\"lease\",\"id\":1,\"deadline\":2}"),
    BADM(lease, "{\"type\":\"lease\",\"deadline\":2}"),
    BADM(lease, "{\"type\":\"lease\",\"id\":1}"),
    BADM(lease, "{\"type\":\"lease\",\"id\":1,\"deadline\":-2}"),
    /* result */
    OK_(result, R RC RS),
    OK_(result, R "\"c2\":\"0\",\"c4\":0,\"c8\":1,\"nodes\":\"9223372036854775807\"" RS),
    OK_(result, R RC ",\"seconds\":0,\"solver\":\"\"}"), /* the server judges the solver */
    BADM(result, "{\"type\":\"result\",\"unit\":\"u\"," RC RS),
    BADM(result, "{\"type\":\"result\",\"id\":\"x\",\"unit\":\"u\"," RC RS),
    BADM(result, "{\"type\":\"result\",\"id\":-1,\"unit\":\"u\"," RC RS),
    BADM(result, R "\"c2\":\"x\",\"c4\":0,\"c8\":1,\"nodes\":9" RS),
    BADM(result, R "\"c2\":0,\"c4\":1.5,\"c8\":1,\"nodes\":9" RS),
    BADM(result, R "\"c2\":0,\"c4\":0,\"nodes\":9" RS),
    BADM(result, R "\"c2\":0,\"c4\":0,\"c8\":true,\"nodes\":9" RS),
    BADM(result, "{\"type\":\"result\",\"id\":7,\"unit\":5," RC RS),
    BADM(result, R RC ",\"seconds\":0.5}"),
    BADM(result, R RC ",\"seconds\":\"1\",\"solver\":\"s\"}"),
    {fx_parse_result, R "\"c2\":0,\"c4\":0,\"c8\":-1,\"nodes\":9" RS, NQ_ERR_BAD_RESULT, 0, 7},
    {fx_parse_result, R "\"c2\":-5,\"c4\":0,\"c8\":1,\"nodes\":9" RS, NQ_ERR_BAD_RESULT, 0, 7},
    {fx_parse_result, R "\"c2\":0,\"c4\":0,\"c8\":1,\"nodes\":-1" RS, NQ_ERR_BAD_RESULT, 0, 7},
    {fx_parse_result, R "\"c2\":0,\"c4\":0,\"c8\":1,\"nodes\":\"9223372036854775808\"" RS,
     NQ_ERR_BAD_RESULT, 0, 7},
    {fx_parse_result, R "\"c2\":0,\"c4\":0,\"c8\":1,\"nodes\":\"18446744073709551616\"" RS,
     NQ_ERR_BAD_RESULT, 0, 7},
    {fx_parse_result, R RC ",\"seconds\":-0.5,\"solver\":\"s\"}", NQ_ERR_BAD_RESULT, 0, 7},
    /* The result struct holds its strings: one too long for it is refused, not cut. */
    {fx_parse_result, R RC ",\"seconds\":0.5,\"solver\":\"" X65 "\"}", NQ_ERR_BAD_RESULT, 0, 7},
    {fx_parse_result, "{\"type\":\"result\",\"id\":7,\"unit\":\"" X65 X65 "\"," RC RS,
     NQ_ERR_BAD_RESULT, 0, 7},
    /* ack */
    OK_(ack, "{\"type\":\"ack\",\"id\":3,\"status\":\"duplicate\"}"),
    OK_(ack, "{\"type\":\"ack\",\"id\":3,\"status\":\"accepted\",\"credit\":\"123456\"}"),
    BADM(ack, "{\"type\":\"ack\",\"id\":3,\"status\":\"accepted\",\"credit\":123}"),
    BADM(ack, "{\"type\":\"ack\",\"id\":3,\"status\":\"accepted\",\"credit\":\"-1\"}"),
    BADM(ack, "{\"type\":\"ack\",\"status\":\"accepted\"}"),
    BADM(ack, "{\"type\":\"ack\",\"id\":3}"),
    BADM(ack, "{\"type\":\"ack\",\"id\":3,\"status\":\"maybe\"}"),
    BADM(ack, "{\"type\":\"ack\",\"id\":-3,\"status\":\"accepted\"}"),
    /* admin: refusals keep the session */
    OK_(admin_req, "{\"type\":\"admin\",\"cmd\":\"units\",\"state\":\"sleepy\"}"), /* store judges */
    OK_(admin_req, "{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":-4}"),     /* not found */
    ADMB("{\"type\":\"admin\"}"),
    ADMB("{\"type\":\"admin\",\"cmd\":5}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"frobnicate\"}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"units\"}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"units\",\"state\":5}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"units\",\"state\":\"all\",\"limit\":-1}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"units\",\"state\":\"all\",\"limit\":\"2\"}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"client_add\"}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"client_ban\",\"name\":7}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"unit_retry\"}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":true}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":5,\"extra\":0}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":5,\"extra\":1001}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"unit_retry\",\"unit\":5,\"extra\":\"2\"}"),
    OK_(admin_req, "{\"type\":\"admin\",\"cmd\":\"job_archive\",\"n\":18,\"force\":null}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"job_archive\"}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"job_archive\",\"n\":3}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"job_delete\",\"n\":33}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"job_delete\",\"n\":\"18\"}"),
    ADMB("{\"type\":\"admin\",\"cmd\":\"job_delete\",\"n\":18,\"force\":1}"),
    /* admin_reply */
    OK_(admin_reply, "{\"type\":\"admin_reply\",\"cmd\":\"jobs\",\"data\":{}}"),
    BADM(admin_reply, "{\"type\":\"admin_reply\",\"data\":{}}"),
    BADM(admin_reply, "{\"type\":\"admin_reply\",\"cmd\":\"frob\",\"data\":{}}"),
    BADM(admin_reply, "{\"type\":\"admin_reply\",\"cmd\":\"jobs\"}"),
    BADM(admin_reply, "{\"type\":\"admin_reply\",\"cmd\":\"jobs\",\"data\":[]}"),
    /* error */
    OK_(error, "{\"type\":\"error\",\"code\":\"x\",\"message\":null,\"fatal\":null}"),
    BADM(error, "{\"type\":\"error\",\"message\":\"m\"}"),
    BADM(error, "{\"type\":\"error\",\"code\":5}"),
    BADM(error, "{\"type\":\"error\",\"code\":\"x\",\"message\":5}"),
    BADM(error, "{\"type\":\"error\",\"code\":\"x\",\"fatal\":\"yes\"}"),
    BADM(error, "{\"type\":\"error\",\"code\":\"x\",\"id\":-1}"),
};

START_TEST(malformed_refused) {
  static fx_msg_t out; /* nq_work_t is large */
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const case_t *c = &cases[i];
    json_t *m = load(c->json);
    nq_proto_err_t err;
    memset(&err, 0xa5, sizeof err);
    int rc = c->parse(m, &out, &err);
    if (c->code == NQ_ERR_NONE) {
      ck_assert_msg(rc == 0, "refused (%s: %s): %s", nq_errcode_name(err.code), err.message,
                    c->json);
    } else {
      ck_assert_msg(rc == NQ_EPROTO, "accepted: %s", c->json);
      ck_assert_msg(err.code == c->code, "%s: code %s, want %s", c->json,
                    nq_errcode_name(err.code), nq_errcode_name(c->code));
      ck_assert_msg(err.fatal == c->fatal, "%s: fatal %d", c->json, err.fatal);
      ck_assert_msg(err.id == c->id, "%s: id %lld", c->json, (long long)err.id);
      ck_assert_msg(err.message[0] != '\0' && strlen(err.message) < sizeof err.message,
                    "%s: no message", c->json);
      /* NULL err is allowed and changes nothing but the report. */
      ck_assert_int_eq(c->parse(m, &out, NULL), NQ_EPROTO);
    }
    json_decref(m);
  }
}
END_TEST

START_TEST(version_messages) {
  nq_proto_err_t err;
  nq_hello_t h;
  json_t *m = load(H "\"v\":2,\"role\":\"client\"," T "}");
  ck_assert_int_eq(nq_hello_parse(m, &h, &err), NQ_EPROTO);
  ck_assert_msg(strstr(err.message, "versions 2..2") && strstr(err.message, "speaks 1"), "%s",
                err.message);
  ck_assert_int_eq(err.min_version, 0);
  json_decref(m);
  /* Too old: upgrade_required names the minimum, in the message and in its own field, and the
   * error frame built from it carries the field across the wire. */
  m = load(H "\"v\":0,\"v_min\":0,\"v_max\":0,\"role\":\"client\"," T "}");
  ck_assert_int_eq(nq_hello_parse(m, &h, &err), NQ_EPROTO);
  ck_assert_int_eq(err.code, NQ_ERR_UPGRADE_REQUIRED);
  ck_assert_int_eq(err.min_version, NQ_PROTO_VERSION_MIN);
  ck_assert_msg(strstr(err.message, "version 1 or newer") && strstr(err.message, "upgrade"), "%s",
                err.message);
  json_decref(m);
  nq_error_msg_t up = {err.code, NULL, err.message, 1, -1, err.min_version, 0}, upb;
  m = over_wire(nq_error_pack(&up));
  ck_assert_int_eq(nq_error_parse(m, &upb, &err), 0);
  ck_assert_int_eq(upb.code, NQ_ERR_UPGRADE_REQUIRED);
  ck_assert_str_eq(upb.name, "upgrade_required");
  ck_assert_int_eq(upb.min_version, NQ_PROTO_VERSION_MIN);
  json_decref(m);
  m = load("{\"type\":\"error\",\"code\":\"upgrade_required\",\"min_version\":0}");
  ck_assert_int_eq(nq_error_parse(m, &upb, &err), NQ_EPROTO);
  json_decref(m);
  /* A range: the highest common version is the one spoken. */
  m = load(H "\"v\":7,\"v_min\":0,\"v_max\":9,\"role\":\"client\"," T "}");
  ck_assert_int_eq(nq_hello_parse(m, &h, &err), 0);
  ck_assert_int_eq(h.speak, NQ_PROTO_VERSION_MAX);
  ck_assert_int_eq(h.v_min, 0);
  ck_assert_int_eq(h.v_max, 9);
  json_decref(m);
  nq_welcome_t w;
  m = load(W "\"v\":2," JOB "}");
  ck_assert_int_eq(nq_welcome_parse(m, &w, &err), NQ_EPROTO);
  ck_assert_int_eq(err.code, NQ_ERR_VERSION);
  ck_assert_msg(strstr(err.message, "version 2"), "%s", err.message);
  json_decref(m);
}
END_TEST

/* Packing a struct with a required string missing fails cleanly instead of sending half a
 * message. (A result holds its strings in the struct: none can be missing.) */
START_TEST(pack_refuses_missing_strings) {
  nq_work_t *w = calloc(1, sizeof *w);
  w->n = 1;
  ck_assert_ptr_null(nq_work_pack(w));
  free(w);
  nq_admin_req_t q = {.cmd = NQ_ADMIN_CLIENT_ADD}; /* no name */
  ck_assert_ptr_null(nq_admin_req_pack(&q));
  nq_admin_reply_t rep = {NQ_ADMIN_JOBS, NULL};
  ck_assert_ptr_null(nq_admin_reply_pack(&rep));
}
END_TEST

/* ---- field helpers (moved here from test_frame.c with the helpers) --------------------------- */

START_TEST(helpers_str_int) {
  json_t *m = json_pack("{s:s, s:i, s:f, s:b, s:n, s:I}", "type", "hello", "n", 18, "real", 1.0,
                        "flag", 1, "nul", "big", (json_int_t)INT64_MAX);
  const char *s;
  int64_t v;
  ck_assert_int_eq(nq_msg_get_str(m, "type", &s), 0);
  ck_assert_str_eq(s, "hello");
  ck_assert_int_eq(nq_msg_get_str(m, "n", &s), NQ_EPROTO);
  ck_assert_int_eq(nq_msg_get_str(m, "missing", &s), NQ_EPROTO);
  ck_assert_int_eq(nq_msg_get_str(m, "nul", &s), NQ_EPROTO);
  ck_assert_int_eq(nq_msg_get_int(m, "n", 1, 32, &v), 0);
  ck_assert_int_eq(v, 18);
  ck_assert_int_eq(nq_msg_get_int(m, "n", 1, 17, &v), NQ_ERANGE);
  ck_assert_int_eq(nq_msg_get_int(m, "n", 19, 32, &v), NQ_ERANGE);
  ck_assert_int_eq(nq_msg_get_int(m, "real", 0, 10, &v), NQ_EPROTO);
  ck_assert_int_eq(nq_msg_get_int(m, "flag", 0, 10, &v), NQ_EPROTO);
  ck_assert_int_eq(nq_msg_get_int(m, "type", 0, 10, &v), NQ_EPROTO);
  ck_assert_int_eq(nq_msg_get_int(m, "missing", 0, 10, &v), NQ_EPROTO);
  ck_assert_int_eq(nq_msg_get_int(m, "big", 0, INT64_MAX, &v), 0);
  ck_assert_int_eq(v, INT64_MAX);
  ck_assert_int_eq(nq_msg_get_int(NULL, "n", 0, 1, &v), NQ_EPROTO);
  json_decref(m);
}
END_TEST

START_TEST(helpers_u64_bool_opt) {
  json_t *m = json_object();
  ck_assert_int_eq(nq_msg_set_u64(m, "small", 12345), 0);
  ck_assert_int_eq(nq_msg_set_u64(m, "max", UINT64_MAX), 0);
  ck_assert(json_is_integer(json_object_get(m, "small")));
  ck_assert(json_is_string(json_object_get(m, "max")));
  json_object_set_new(m, "neg", json_integer(-1));
  json_object_set_new(m, "over", json_string("18446744073709551616"));
  json_object_set_new(m, "junk", json_string("12a"));
  json_object_set_new(m, "empty", json_string(""));
  json_object_set_new(m, "zeros", json_string("00012")); /* not canonical */
  json_object_set_new(m, "zero", json_string("0"));
  json_object_set_new(m, "real", json_real(3.0));
  json_object_set_new(m, "t", json_true());
  json_object_set_new(m, "null", json_null());

  uint64_t u;
  ck_assert_int_eq(nq_msg_get_u64(m, "small", &u), 0);
  ck_assert_uint_eq(u, 12345);
  ck_assert_int_eq(nq_msg_get_u64(m, "max", &u), 0);
  ck_assert(u == UINT64_MAX);
  ck_assert_int_eq(nq_msg_get_u64(m, "neg", &u), NQ_ERANGE);
  ck_assert_int_eq(nq_msg_get_u64(m, "over", &u), NQ_ERANGE);
  ck_assert_int_eq(nq_msg_get_u64(m, "junk", &u), NQ_EPROTO);
  ck_assert_int_eq(nq_msg_get_u64(m, "empty", &u), NQ_EPROTO);
  ck_assert_int_eq(nq_msg_get_u64(m, "zeros", &u), NQ_EPROTO);
  ck_assert_int_eq(nq_msg_get_u64(m, "zero", &u), 0);
  ck_assert(u == 0);
  ck_assert_int_eq(nq_msg_get_u64(m, "real", &u), NQ_EPROTO);
  ck_assert_int_eq(nq_msg_get_u64(m, "missing", &u), NQ_EPROTO);

  int b;
  ck_assert_int_eq(nq_msg_get_bool(m, "t", &b), 0);
  ck_assert_int_eq(b, 1);
  ck_assert_int_eq(nq_msg_get_bool(m, "small", &b), NQ_EPROTO);

  const char *s;
  int64_t v;
  ck_assert_int_eq(nq_msg_opt_str(m, "missing", "dflt", &s), 0);
  ck_assert_str_eq(s, "dflt");
  ck_assert_int_eq(nq_msg_opt_str(m, "null", "dflt", &s), 0);
  ck_assert_str_eq(s, "dflt");
  ck_assert_int_eq(nq_msg_opt_str(m, "small", "dflt", &s), NQ_EPROTO);
  ck_assert_int_eq(nq_msg_opt_int(m, "missing", 0, 10, 7, &v), 0);
  ck_assert_int_eq(v, 7);
  ck_assert_int_eq(nq_msg_opt_int(m, "small", 0, 10, 7, &v), NQ_ERANGE);
  ck_assert_int_eq(nq_msg_opt_int(m, "t", 0, 10, 7, &v), NQ_EPROTO);
  json_decref(m);
}
END_TEST

START_TEST(error_message) {
  json_t *e = nq_error_new(NQ_ERR_BAD_FRAME, "nope", 1);
  const char *s;
  int fatal;
  ck_assert_int_eq(nq_msg_get_str(e, "type", &s), 0);
  ck_assert_str_eq(s, "error");
  ck_assert_int_eq(nq_msg_get_str(e, "code", &s), 0);
  ck_assert_str_eq(s, "bad_frame");
  ck_assert_int_eq(nq_msg_get_str(e, "message", &s), 0);
  ck_assert_str_eq(s, "nope");
  ck_assert_int_eq(nq_msg_get_bool(e, "fatal", &fatal), 0);
  ck_assert_int_eq(fatal, 1);
  json_decref(e);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("proto");
  TCase *tc = tcase_create("proto");
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, type_and_code_tables);
  tcase_add_test(tc, client_names);
  tcase_add_test(tc, round_trip_hello_welcome);
  tcase_add_test(tc, round_trip_work);
  tcase_add_test(tc, round_trip_progress_result);
  tcase_add_test(tc, round_trip_admin_error_bye);
  tcase_add_test(tc, round_trip_signup);
  tcase_add_test(tc, result_backend_checked);
  tcase_add_test(tc, ack_receipt_checked);
  tcase_add_test(tc, work_kernel_checked);
  tcase_add_test(tc, version1_wire_bytes);
  tcase_add_test(tc, malformed_refused);
  tcase_add_test(tc, version_messages);
  tcase_add_test(tc, pack_refuses_missing_strings);
  tcase_add_test(tc, helpers_str_int);
  tcase_add_test(tc, helpers_u64_bool_opt);
  tcase_add_test(tc, error_message);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
