/* libFuzzer target: the message parsers of the wire contract (common/net/proto.c).
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

#include "fx_proto.h"

#define FUZZ_ASSERT(cond)                                                                 \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fprintf(stderr, "fuzz_proto: assertion failed: %s (line %d)\n", #cond, __LINE__); \
      abort();                                                                            \
    }                                                                                     \
  } while (0)

typedef struct {
  fx_parse_fn parse;
  fx_pack_fn pack;
} codec_t;

static const codec_t codecs[] = {
    {fx_parse_hello, fx_pack_hello},       {fx_parse_welcome, fx_pack_welcome},
    {fx_parse_get_work, fx_pack_get_work}, {fx_parse_work, fx_pack_work},
    {fx_parse_no_work, fx_pack_no_work},   {fx_parse_progress, fx_pack_progress},
    {fx_parse_lease, fx_pack_lease},       {fx_parse_result, fx_pack_result},
    {fx_parse_ack, fx_pack_ack},           {fx_parse_admin_req, fx_pack_admin_req},
    {fx_parse_admin_reply, fx_pack_admin_reply}, {fx_parse_error, fx_pack_error},
    {fx_parse_signup, fx_pack_signup},     {fx_parse_signup_reply, fx_pack_signup_reply},
    {fx_parse_news, fx_pack_news},
};

static fx_msg_t v1, v2;

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
