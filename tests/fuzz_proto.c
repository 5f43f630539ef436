/* libFuzzer target: the message parsers of the wire contract (common/proto.c).
 *
 * The input is decoded as one frame payload (nq_frame_decode, as a connection would), and the
 * object goes through every message parser, whatever its type says, since a peer controls both.
 * Properties checked for every input:
 *   - no crash, out-of-bounds access, leak or undefined behaviour (ASan/UBSan);
 *   - a refusal names a real error code, says whether it is fatal and carries a message;
 *   - whatever a parser accepts packs again, the packed message parses again, and packing that
 *     gives the same JSON (parse and pack agree on one canonical form, so what one side sends
 *     the other side reads back unchanged).
 * Seeds and a dictionary of the protocol's words come from scripts/fuzz.sh. Built with clang and
 * -DNQ_FUZZ=ON. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/frame.h"
#include "nq/nq.h"
#include "nq/proto.h"

#define FUZZ_ASSERT(cond)                                                                 \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fprintf(stderr, "fuzz_proto: assertion failed: %s (line %d)\n", #cond, __LINE__); \
      abort();                                                                            \
    }                                                                                     \
  } while (0)

/* One parsed value of any message (nq_work_t makes this ~8 KiB: static, not on the stack). */
typedef union {
  nq_hello_t hello;
  nq_welcome_t welcome;
  nq_get_work_t get_work;
  nq_work_t work;
  nq_no_work_t no_work;
  nq_progress_t progress;
  nq_lease_t lease;
  nq_result_t result;
  nq_ack_t ack;
  nq_admin_req_t admin_req;
  nq_admin_reply_t admin_reply;
  nq_error_msg_t error;
} any_t;

typedef struct {
  int (*parse)(const json_t *m, any_t *o, nq_proto_err_t *e);
  json_t *(*pack)(const any_t *o);
} codec_t;

#define CODEC(name)                                                                              \
  static int parse_##name(const json_t *m, any_t *o, nq_proto_err_t *e) {                        \
    return nq_##name##_parse(m, &o->name, e);                                                    \
  }                                                                                              \
  static json_t *pack_##name(const any_t *o) { return nq_##name##_pack(&o->name); }
CODEC(hello)
CODEC(welcome)
CODEC(get_work)
CODEC(work)
CODEC(no_work)
CODEC(progress)
CODEC(lease)
CODEC(result)
CODEC(ack)
CODEC(admin_req)
CODEC(admin_reply)
CODEC(error)

static const codec_t codecs[] = {
    {parse_hello, pack_hello},       {parse_welcome, pack_welcome},
    {parse_get_work, pack_get_work}, {parse_work, pack_work},
    {parse_no_work, pack_no_work},   {parse_progress, pack_progress},
    {parse_lease, pack_lease},       {parse_result, pack_result},
    {parse_ack, pack_ack},           {parse_admin_req, pack_admin_req},
    {parse_admin_reply, pack_admin_reply}, {parse_error, pack_error},
};

static any_t v1, v2;

static void check(const codec_t *c, const json_t *msg) {
  nq_proto_err_t err;
  memset(&err, 0, sizeof err);
  int rc = c->parse(msg, &v1, &err);
  if (rc != 0) {
    FUZZ_ASSERT(rc == NQ_EPROTO);
    FUZZ_ASSERT(err.code > NQ_ERR_NONE && err.code < NQ_ERR_OTHER);
    FUZZ_ASSERT(err.fatal == 0 || err.fatal == 1);
    FUZZ_ASSERT(err.message[0] != '\0');
    FUZZ_ASSERT(err.id >= -1);
    return;
  }
  json_t *p1 = c->pack(&v1);
  FUZZ_ASSERT(p1 != NULL);
  /* p1 may refer to strings inside msg only through copies: parse it on its own. */
  FUZZ_ASSERT(c->parse(p1, &v2, &err) == 0);
  json_t *p2 = c->pack(&v2);
  FUZZ_ASSERT(p2 != NULL);
  FUZZ_ASSERT(json_equal(p1, p2));
  /* What we pack must be sendable (or too big, which nq_conn_send reports as such). */
  uint8_t *buf = NULL;
  size_t len = 0;
  int er = nq_frame_encode(p1, &buf, &len);
  FUZZ_ASSERT(er == 0 || er == NQ_ETOOBIG);
  free(buf);
  json_decref(p2);
  json_decref(p1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *msg = NULL;
  if (nq_frame_decode(data, size, &msg) != 0) return 0;
  const char *name = NULL;
  nq_msg_type_t t = nq_msg_type(msg, &name);
  FUZZ_ASSERT(t >= NQ_MSG_NONE && t < NQ_MSG_COUNT);
  FUZZ_ASSERT(t == NQ_MSG_NONE || (name && strcmp(name, nq_msg_type_name(t)) == 0));
  for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++) check(&codecs[i], msg);
  json_decref(msg);
  return 0;
}
