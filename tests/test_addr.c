/* tests/test_addr.c: the one HOST:PORT parser (common/net/addr.c) every program uses. */
#include "nq/addr.h"
#include "nq/nq.h"
#include "testutil.h"

#include <string.h>

START_TEST(accepted_forms) {
  char host[NQ_HOST_MAX];
  int port = -1;
  ck_assert_int_eq(nq_hostport_parse("example.org:7447", host, sizeof host, &port, 0), 0);
  ck_assert_str_eq(host, "example.org");
  ck_assert_int_eq(port, 7447);
  ck_assert_int_eq(nq_hostport_parse("127.0.0.1:1", host, sizeof host, &port, 0), 0);
  ck_assert_str_eq(host, "127.0.0.1");
  ck_assert_int_eq(port, 1);
  ck_assert_int_eq(nq_hostport_parse("[::1]:65535", host, sizeof host, &port, 0), 0);
  ck_assert_str_eq(host, "::1");
  ck_assert_int_eq(port, 65535);
  ck_assert_int_eq(nq_hostport_parse("[fe80::1%eth0]:80", host, sizeof host, &port, 0), 0);
  ck_assert_str_eq(host, "fe80::1%eth0");
  /* Listening addresses: an empty host (the caller's wildcard) and port 0. */
  ck_assert_int_eq(nq_hostport_parse(":7447", host, sizeof host, &port, NQ_HOSTPORT_LISTEN), 0);
  ck_assert_str_eq(host, "");
  ck_assert_int_eq(port, 7447);
  ck_assert_int_eq(nq_hostport_parse("0.0.0.0:0", host, sizeof host, &port, NQ_HOSTPORT_LISTEN),
                   0);
  ck_assert_int_eq(port, 0);
}
END_TEST

START_TEST(refused_forms) {
  char host[NQ_HOST_MAX] = "keep";
  int port = 42;
  static const char *const bad[] = {
      "",         "host",       "host:",     ":7447",     "host:0",        "host:65536",
      "host:-1",  "host:+80",   "host: 80",  "host:80x",  "host:123456",   "::1:7447",
      "[::1]",    "[::1]7447",  "[]:80",     "[::1:80",   "a:b:c",         "host:0x50"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_msg(nq_hostport_parse(bad[i], host, sizeof host, &port, 0) == NQ_EINVAL,
                  "accepted '%s'", bad[i]);
  }
  /* Outputs are untouched on error. */
  ck_assert_str_eq(host, "keep");
  ck_assert_int_eq(port, 42);
  ck_assert_int_eq(nq_hostport_parse("host:65536", host, sizeof host, &port, NQ_HOSTPORT_LISTEN),
                   NQ_EINVAL);
  ck_assert_int_eq(nq_hostport_parse("::1:80", host, sizeof host, &port, NQ_HOSTPORT_LISTEN),
                   NQ_EINVAL);
  /* A host that does not fit the buffer. */
  char small[5];
  ck_assert_int_eq(nq_hostport_parse("abcd:1", small, sizeof small, &port, 0), 0);
  ck_assert_int_eq(nq_hostport_parse("abcde:1", small, sizeof small, &port, 0), NQ_EINVAL);
  ck_assert_int_eq(nq_hostport_parse(NULL, host, sizeof host, &port, 0), NQ_EINVAL);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("addr");
  TCase *tc = tcase_create("addr");
  tcase_add_test(tc, accepted_forms);
  tcase_add_test(tc, refused_forms);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(suite()); }
