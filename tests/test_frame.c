/* Tests for common/net/frame.c: framing, the incremental parser and validation. */
#include "nq/frame.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

/* A frame with header `len` and the given payload bytes (payload_len may differ from len). */
static uint8_t *raw_frame(uint32_t len, const char *payload, size_t payload_len, size_t *out_len) {
  uint8_t *b = malloc(NQ_FRAME_HDR + payload_len + 1);
  b[0] = (uint8_t)(len >> 24);
  b[1] = (uint8_t)(len >> 16);
  b[2] = (uint8_t)(len >> 8);
  b[3] = (uint8_t)len;
  memcpy(b + NQ_FRAME_HDR, payload, payload_len);
  *out_len = NQ_FRAME_HDR + payload_len;
  return b;
}

/* Feed one frame with the given payload and return what pop says. */
static int pop_payload(const char *payload, size_t n) {
  nq_framebuf_t fb;
  nq_framebuf_init(&fb);
  size_t len;
  uint8_t *b = raw_frame((uint32_t)n, payload, n, &len);
  ck_assert_int_eq(nq_framebuf_append(&fb, b, len), 0);
  json_t *msg = NULL;
  int r = nq_framebuf_pop(&fb, &msg);
  if (r == 0) {
    ck_assert_ptr_nonnull(msg);
    json_decref(msg);
  } else {
    ck_assert_ptr_null(msg);
  }
  free(b);
  nq_framebuf_free(&fb);
  return r;
}

static json_t *sample(void) {
  return json_pack("{s:s, s:i, s:s, s:[i,i,i], s:{s:b}}", "type", "result", "seq", 42, "unit",
                   "18:c:5:0,5,12", "counts", 1, 2, 3, "meta", "ok", 1);
}

START_TEST(roundtrip) {
  json_t *m = sample();
  uint8_t *buf;
  size_t len;
  ck_assert_int_eq(nq_frame_encode(m, &buf, &len), 0);
  size_t plen = (size_t)buf[0] << 24 | buf[1] << 16 | buf[2] << 8 | buf[3];
  ck_assert_uint_eq(plen + NQ_FRAME_HDR, len);
  ck_assert(memchr(buf + 4, ' ', plen) == NULL); /* compact */
  nq_framebuf_t fb;
  nq_framebuf_init(&fb);
  ck_assert_int_eq(nq_framebuf_append(&fb, buf, len), 0);
  json_t *out;
  ck_assert_int_eq(nq_framebuf_pop(&fb, &out), 0);
  ck_assert(json_equal(m, out));
  json_t *none;
  ck_assert_int_eq(nq_framebuf_pop(&fb, &none), NQ_EAGAIN);
  ck_assert_ptr_null(none);
  ck_assert_uint_eq(nq_framebuf_pending(&fb), 0);
  ck_assert_ptr_null(nq_framebuf_errcode(&fb));
  json_decref(out);
  json_decref(m);
  free(buf);
  nq_framebuf_free(&fb);
}
END_TEST

START_TEST(split_every_boundary) {
  json_t *m = sample();
  uint8_t *buf;
  size_t len;
  ck_assert_int_eq(nq_frame_encode(m, &buf, &len), 0);
  for (size_t cut = 0; cut <= len; cut++) {
    nq_framebuf_t fb;
    nq_framebuf_init(&fb);
    json_t *out = NULL;
    ck_assert_int_eq(nq_framebuf_append(&fb, buf, cut), 0);
    if (cut < len) ck_assert_int_eq(nq_framebuf_pop(&fb, &out), NQ_EAGAIN);
    ck_assert_int_eq(nq_framebuf_append(&fb, buf + cut, len - cut), 0);
    ck_assert_int_eq(nq_framebuf_pop(&fb, &out), 0);
    ck_assert(json_equal(m, out));
    json_decref(out);
    nq_framebuf_free(&fb);
  }
  json_decref(m);
  free(buf);
}
END_TEST

START_TEST(byte_by_byte) {
  json_t *m = sample();
  uint8_t *buf;
  size_t len;
  ck_assert_int_eq(nq_frame_encode(m, &buf, &len), 0);
  nq_framebuf_t fb;
  nq_framebuf_init(&fb);
  json_t *out = NULL;
  int got = 0;
  for (int rep = 0; rep < 3; rep++)
    for (size_t i = 0; i < len; i++) {
      ck_assert_int_eq(nq_framebuf_append(&fb, buf + i, 1), 0);
      int r = nq_framebuf_pop(&fb, &out);
      if (i + 1 < len) {
        ck_assert_int_eq(r, NQ_EAGAIN);
      } else {
        ck_assert_int_eq(r, 0);
        ck_assert(json_equal(m, out));
        json_decref(out);
        got++;
      }
    }
  ck_assert_int_eq(got, 3);
  json_decref(m);
  free(buf);
  nq_framebuf_free(&fb);
}
END_TEST

START_TEST(multiple_in_one_buffer) {
  nq_framebuf_t fb;
  nq_framebuf_init(&fb);
  uint8_t all[4096];
  size_t total = 0;
  for (int i = 0; i < 10; i++) {
    json_t *m = json_pack("{s:s, s:i}", "type", "ping", "seq", i);
    uint8_t *buf;
    size_t len;
    ck_assert_int_eq(nq_frame_encode(m, &buf, &len), 0);
    memcpy(all + total, buf, len);
    total += len;
    free(buf);
    json_decref(m);
  }
  /* A trailing partial frame must survive behind the complete ones. */
  all[total++] = 0;
  all[total++] = 0;
  ck_assert_int_eq(nq_framebuf_append(&fb, all, total), 0);
  for (int i = 0; i < 10; i++) {
    json_t *out;
    int64_t seq;
    ck_assert_int_eq(nq_framebuf_pop(&fb, &out), 0);
    ck_assert_int_eq(nq_msg_get_int(out, "seq", 0, 100, &seq), 0);
    ck_assert_int_eq(seq, i);
    json_decref(out);
  }
  json_t *out;
  ck_assert_int_eq(nq_framebuf_pop(&fb, &out), NQ_EAGAIN);
  ck_assert_uint_eq(nq_framebuf_pending(&fb), 2);
  nq_framebuf_free(&fb);
}
END_TEST

START_TEST(length_zero) {
  nq_framebuf_t fb;
  nq_framebuf_init(&fb);
  const uint8_t hdr[4] = {0, 0, 0, 0};
  ck_assert_int_eq(nq_framebuf_append(&fb, hdr, 4), 0);
  json_t *out;
  ck_assert_int_eq(nq_framebuf_pop(&fb, &out), NQ_EPROTO);
  ck_assert_str_eq(nq_framebuf_errcode(&fb), nq_errcode_name(NQ_ERR_BAD_FRAME));
  nq_framebuf_free(&fb);
}
END_TEST

/* An object whose compact encoding is exactly `n` bytes: {"type":"x","pad":"aaa..."}. */
static char *object_of_size(size_t n) {
  const char *pre = "{\"type\":\"x\",\"pad\":\"";
  size_t fixed = strlen(pre) + 2;
  ck_assert(n > fixed);
  char *s = malloc(n + 1);
  strcpy(s, pre);
  memset(s + strlen(pre), 'a', n - fixed);
  strcpy(s + n - 2, "\"}");
  return s;
}

START_TEST(exactly_max_ok) {
  char *s = object_of_size(NQ_FRAME_MAX);
  ck_assert_int_eq(pop_payload(s, NQ_FRAME_MAX), 0);
  /* And the encoder produces it too. */
  json_t *m;
  ck_assert_int_eq(nq_frame_decode(s, NQ_FRAME_MAX, &m), 0);
  uint8_t *buf;
  size_t len;
  ck_assert_int_eq(nq_frame_encode(m, &buf, &len), 0);
  ck_assert_uint_eq(len, NQ_FRAME_HDR + NQ_FRAME_MAX);
  free(buf);
  json_decref(m);
  free(s);
}
END_TEST

START_TEST(max_plus_one_rejected) {
  /* Only the header is needed to reject it. */
  nq_framebuf_t fb;
  nq_framebuf_init(&fb);
  uint32_t n = NQ_FRAME_MAX + 1;
  const uint8_t hdr[4] = {(uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
  ck_assert_int_eq(nq_framebuf_append(&fb, hdr, 4), 0);
  json_t *out;
  ck_assert_int_eq(nq_framebuf_pop(&fb, &out), NQ_ETOOBIG);
  ck_assert_str_eq(nq_framebuf_errcode(&fb), nq_errcode_name(NQ_ERR_FRAME_TOO_BIG));
  nq_framebuf_free(&fb);
  /* With the full payload present as well. */
  char *s = object_of_size(NQ_FRAME_MAX + 1);
  ck_assert_int_eq(pop_payload(s, NQ_FRAME_MAX + 1), NQ_ETOOBIG);
  ck_assert_int_eq(nq_frame_decode(s, NQ_FRAME_MAX + 1, &out), NQ_ETOOBIG);
  free(s);
}
END_TEST

START_TEST(four_gib_rejected_without_alloc) {
  nq_framebuf_t fb;
  nq_framebuf_init(&fb);
  const uint8_t hdr[6] = {0xff, 0xff, 0xff, 0xff, '{', '}'};
  ck_assert_int_eq(nq_framebuf_append(&fb, hdr, sizeof hdr), 0);
  json_t *out;
  ck_assert_int_eq(nq_framebuf_pop(&fb, &out), NQ_ETOOBIG);
  ck_assert_uint_le(fb.cap, 4096); /* nothing like the claimed size was allocated */
  /* Sticky: the stream cannot be resynchronised. */
  ck_assert_int_eq(nq_framebuf_pop(&fb, &out), NQ_ETOOBIG);
  ck_assert_int_eq(nq_framebuf_append(&fb, "{}", 2), NQ_ETOOBIG);
  nq_framebuf_free(&fb);
}
END_TEST

START_TEST(truncated_stays_eagain) {
  nq_framebuf_t fb;
  nq_framebuf_init(&fb);
  json_t *out;
  ck_assert_int_eq(nq_framebuf_pop(&fb, &out), NQ_EAGAIN); /* empty */
  const uint8_t part[] = {0, 0, 0, 20, '{', '"', 'a'};
  ck_assert_int_eq(nq_framebuf_append(&fb, part, 3), 0); /* partial header */
  ck_assert_int_eq(nq_framebuf_pop(&fb, &out), NQ_EAGAIN);
  ck_assert_int_eq(nq_framebuf_append(&fb, part + 3, sizeof part - 3), 0);
  for (int i = 0; i < 5; i++) ck_assert_int_eq(nq_framebuf_pop(&fb, &out), NQ_EAGAIN);
  ck_assert_uint_eq(nq_framebuf_pending(&fb), sizeof part);
  nq_framebuf_free(&fb);
}
END_TEST

START_TEST(invalid_utf8) {
  const char *bad[] = {
      "{\"a\":\"\xff\"}",             /* never valid */
      "{\"a\":\"\xc0\xaf\"}",         /* overlong '/' */
      "{\"a\":\"\xe0\x80\xaf\"}",     /* overlong, 3 bytes */
      "{\"a\":\"\xed\xa0\x80\"}",     /* UTF-16 surrogate */
      "{\"a\":\"\xf4\x90\x80\x80\"}", /* above U+10FFFF */
      "{\"a\":\"\xc3\"}",             /* truncated sequence */
      "{\"\x80\":1}",                 /* stray continuation byte in a key */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ck_assert_int_eq(pop_payload(bad[i], strlen(bad[i])), NQ_EPROTO);
  const char *good = "{\"a\":\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x91\x91\"}";
  ck_assert_int_eq(pop_payload(good, strlen(good)), 0);
  ck_assert(nq_utf8_valid("\xf4\x8f\xbf\xbf", 4)); /* U+10FFFF itself */
  ck_assert(!nq_utf8_valid("\xf5\x80\x80\x80", 4));
}
END_TEST

START_TEST(invalid_json) {
  const char *bad[] = {"{\"a\":}", "{\"a\":1", "{} x", "{}{}", "{'a':1}", "{\"a\":01}",
                       "{\"a\":\"\\u0000\"}", "{\"a\":\"x\ny\"}", "\x00{}", "{\"a\":1e999}"};
  size_t lens[] = {6, 6, 4, 4, 7, 8, 14, 11, 3, 11};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ck_assert_msg(pop_payload(bad[i], lens[i]) == NQ_EPROTO, "accepted case %zu", i);
}
END_TEST

/* An integer past 64 bits is valid JSON jansson cannot hold. The token is read as the
 * string of its digits, so the message's own parser refuses it (a count of 2^63 in a result is
 * bad_result, not a fatal bad_json); a real that overflows is still invalid. */
START_TEST(big_integers_as_strings) {
  const char *in = "{\"type\":\"result\",\"id\":7,\"c2\":9223372036854775808,\"unit\":\"x\","
                   "\"solver\":\"s\",\"seconds\":1,\"c4\":0,\"c8\":0,"
                   "\"nodes\":-99999999999999999999999}";
  json_t *v = NULL;
  ck_assert_int_eq(nq_frame_decode(in, strlen(in), &v), 0);
  ck_assert_str_eq(json_string_value(json_object_get(v, "c2")), "9223372036854775808");
  ck_assert_str_eq(json_string_value(json_object_get(v, "nodes")), "-99999999999999999999999");
  ck_assert_int_eq(json_integer_value(json_object_get(v, "id")), 7);
  nq_result_t r;
  nq_proto_err_t err;
  json_object_set_new(v, "nodes", json_integer(10)); /* then only c2 is out of range */
  ck_assert_int_ne(nq_result_parse(v, &r, &err), 0);
  ck_assert_int_eq(err.code, NQ_ERR_BAD_RESULT);
  ck_assert(!err.fatal);
  json_decref(v);
  static const char *const bad[] = {"{\"a\":1e400}", "{\"a\":123456789012345678901x}"};
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(nq_frame_decode(bad[i], strlen(bad[i]), &v), NQ_EPROTO);
  /* 16 such tokens are read, a 17th makes the frame bad_json (the rewrite is bounded). */
  char many[1024];
  for (int k = 16; k <= 17; k++) {
    int n = snprintf(many, sizeof many, "{\"a\":[");
    for (int i = 0; i < k; i++)
      n += snprintf(many + n, sizeof many - (size_t)n, "%s18446744073709551616%d", i ? "," : "", i);
    snprintf(many + n, sizeof many - (size_t)n, "]}");
    int rc = nq_frame_decode(many, strlen(many), &v);
    ck_assert_int_eq(rc, k == 16 ? 0 : NQ_EPROTO);
    if (rc == 0) {
      ck_assert_int_eq((int)json_array_size(json_object_get(v, "a")), 16);
      ck_assert_str_eq(json_string_value(json_array_get(json_object_get(v, "a"), 15)),
                       "1844674407370955161615");
      json_decref(v);
    }
  }
}
END_TEST

START_TEST(non_object_json) {
  const char *bad[] = {"[1,2,3]", "[]", "42", "-1.5", "\"str\"", "true", "null"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ck_assert_int_eq(pop_payload(bad[i], strlen(bad[i])), NQ_EPROTO);
}
END_TEST

static char *nested(int depth) {
  /* {"a":{"a":...{"a":1}...}} */
  char *s = malloc((size_t)depth * 6 + 8);
  size_t k = 0;
  for (int i = 0; i < depth; i++) k += (size_t)sprintf(s + k, "{\"a\":");
  s[k++] = '1';
  for (int i = 0; i < depth; i++) s[k++] = '}';
  s[k] = '\0';
  return s;
}

START_TEST(deep_nesting_rejected) {
  char *s = nested(1000);
  ck_assert_int_eq(pop_payload(s, strlen(s)), NQ_EPROTO);
  free(s);
  /* 1000 levels of arrays, the classic stack exhaustion input. */
  char arr[2100];
  arr[0] = '{';
  memcpy(arr + 1, "\"a\":", 4);
  size_t k = 5;
  for (int i = 0; i < 1000; i++) arr[k++] = '[';
  for (int i = 0; i < 1000; i++) arr[k++] = ']';
  arr[k++] = '}';
  ck_assert_int_eq(pop_payload(arr, k), NQ_EPROTO);
  /* Unbalanced deep input is rejected too (never reaches jansson). */
  ck_assert_int_eq(pop_payload(arr, 1005), NQ_EPROTO);
}
END_TEST

START_TEST(depth_limit_exact) {
  char *s = nested(NQ_FRAME_MAX_DEPTH);
  ck_assert_int_eq(pop_payload(s, strlen(s)), 0);
  free(s);
  s = nested(NQ_FRAME_MAX_DEPTH + 1);
  ck_assert_int_eq(pop_payload(s, strlen(s)), NQ_EPROTO);
  json_t *m = json_loads(s, 0, NULL); /* jansson alone takes it */
  ck_assert_ptr_nonnull(m);
  uint8_t *buf;
  size_t len;
  ck_assert_int_eq(nq_frame_encode(m, &buf, &len), NQ_EPROTO); /* the encoder refuses it */
  json_decref(m);
  free(s);
}
END_TEST

START_TEST(brackets_in_strings_ignored) {
  /* 200 brackets inside a string, with escaped quotes, do not count as nesting. */
  char s[400];
  size_t k = (size_t)sprintf(s, "{\"a\":\"\\\"");
  for (int i = 0; i < 200; i++) s[k++] = (i & 1) ? '{' : '[';
  k += (size_t)sprintf(s + k, "\\\\\",\"b\":[[1]]}");
  json_t *m;
  ck_assert_int_eq(nq_frame_decode(s, k, &m), 0);
  ck_assert_int_eq(json_array_size(json_object_get(m, "b")), 1);
  json_decref(m);
}
END_TEST

START_TEST(duplicate_keys_rejected) {
  const char *s = "{\"type\":\"a\",\"type\":\"b\"}";
  ck_assert_int_eq(pop_payload(s, strlen(s)), NQ_EPROTO);
  const char *nested_dup = "{\"x\":{\"k\":1,\"k\":2}}";
  ck_assert_int_eq(pop_payload(nested_dup, strlen(nested_dup)), NQ_EPROTO);
}
END_TEST

START_TEST(error_is_sticky) {
  nq_framebuf_t fb;
  nq_framebuf_init(&fb);
  size_t len;
  uint8_t *bad = raw_frame(2, "[]", 2, &len);
  ck_assert_int_eq(nq_framebuf_append(&fb, bad, len), 0);
  json_t *m = json_pack("{s:s}", "type", "ok");
  uint8_t *good;
  size_t glen;
  ck_assert_int_eq(nq_frame_encode(m, &good, &glen), 0);
  ck_assert_int_eq(nq_framebuf_append(&fb, good, glen), 0);
  json_t *out;
  ck_assert_int_eq(nq_framebuf_pop(&fb, &out), NQ_EPROTO);
  ck_assert_int_eq(nq_framebuf_pop(&fb, &out), NQ_EPROTO); /* the good frame is not reached */
  ck_assert_str_eq(nq_framebuf_errcode(&fb), nq_errcode_name(NQ_ERR_BAD_JSON));
  free(bad);
  free(good);
  json_decref(m);
  nq_framebuf_free(&fb);
}
END_TEST

START_TEST(buffer_cap_and_release) {
  nq_framebuf_t fb;
  nq_framebuf_init(&fb);
  /* A maximal frame fed in pieces, then drained: the large buffer is given back. */
  char *s = object_of_size(NQ_FRAME_MAX);
  size_t len;
  uint8_t *b = raw_frame(NQ_FRAME_MAX, s, NQ_FRAME_MAX, &len);
  for (size_t off = 0; off < len; off += 1000) {
    size_t n = len - off < 1000 ? len - off : 1000;
    ck_assert_int_eq(nq_framebuf_append(&fb, b + off, n), 0);
  }
  json_t *out;
  ck_assert_int_eq(nq_framebuf_pop(&fb, &out), 0);
  json_decref(out);
  ck_assert_uint_le(fb.cap, 4096);
  /* Appending past the cap without popping is refused. */
  uint8_t *junk = calloc(1, NQ_FRAMEBUF_CAP + 1);
  junk[0] = 0; /* header of a small frame that never completes */
  junk[3] = 10;
  ck_assert_int_eq(nq_framebuf_append(&fb, junk, NQ_FRAMEBUF_CAP), 0);
  ck_assert_int_eq(nq_framebuf_append(&fb, junk, 1), NQ_ETOOBIG);
  free(junk);
  free(b);
  free(s);
  nq_framebuf_free(&fb);
}
END_TEST

START_TEST(encode_errors) {
  uint8_t *buf = (uint8_t *)1;
  size_t len = 1;
  json_t *arr = json_array();
  ck_assert_int_eq(nq_frame_encode(arr, &buf, &len), NQ_EINVAL);
  ck_assert_ptr_null(buf);
  ck_assert_uint_eq(len, 0);
  json_decref(arr);
  char *pad = malloc(NQ_FRAME_MAX + 1);
  memset(pad, 'z', NQ_FRAME_MAX);
  pad[NQ_FRAME_MAX] = '\0';
  json_t *big = json_pack("{s:s}", "pad", pad);
  ck_assert_int_eq(nq_frame_encode(big, &buf, &len), NQ_ETOOBIG);
  json_decref(big);
  free(pad);
  /* A string built without UTF-8 checking is caught by the encoder. */
  json_t *m = json_object();
  json_object_set_new(m, "s", json_stringn_nocheck("\xff", 1));
  ck_assert_int_eq(nq_frame_encode(m, &buf, &len), NQ_EINVAL);
  json_decref(m);
}
END_TEST

static Suite *frame_suite(void) {
  Suite *s = suite_create("frame");
  TCase *tc = tcase_create("frame");
  tcase_set_timeout(tc, 10);
  tcase_add_test(tc, roundtrip);
  tcase_add_test(tc, split_every_boundary);
  tcase_add_test(tc, byte_by_byte);
  tcase_add_test(tc, multiple_in_one_buffer);
  tcase_add_test(tc, length_zero);
  tcase_add_test(tc, exactly_max_ok);
  tcase_add_test(tc, max_plus_one_rejected);
  tcase_add_test(tc, four_gib_rejected_without_alloc);
  tcase_add_test(tc, truncated_stays_eagain);
  tcase_add_test(tc, invalid_utf8);
  tcase_add_test(tc, invalid_json);
  tcase_add_test(tc, big_integers_as_strings);
  tcase_add_test(tc, non_object_json);
  tcase_add_test(tc, deep_nesting_rejected);
  tcase_add_test(tc, depth_limit_exact);
  tcase_add_test(tc, brackets_in_strings_ignored);
  tcase_add_test(tc, duplicate_keys_rejected);
  tcase_add_test(tc, error_is_sticky);
  tcase_add_test(tc, buffer_cap_and_release);
  tcase_add_test(tc, encode_errors);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  return tu_run_suite(frame_suite());
}
