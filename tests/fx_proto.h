/* Protocol fixtures shared by tests/test_proto.c and tests/fuzz_proto.c: one value of any message
 * and a parse/pack pair per message with one signature, so a table can drive every codec. */
#ifndef NQ_FX_PROTO_H
#define NQ_FX_PROTO_H

#include <jansson.h>

#include "nq/proto.h"

/* One parsed value of any message (nq_work_t makes this ~8 KiB: keep it static, not on a check
 * test's stack). */
typedef union fx_msg_u {
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
  nq_signup_t signup;
  nq_signup_reply_t signup_reply;
  nq_news_t news;
} fx_msg_t;

typedef int (*fx_parse_fn)(const json_t *m, fx_msg_t *o, nq_proto_err_t *e);
typedef json_t *(*fx_pack_fn)(const fx_msg_t *o);

#define FX_CODEC(name)                                                                           \
  static inline int fx_parse_##name(const json_t *m, fx_msg_t *o, nq_proto_err_t *e) {           \
    return nq_##name##_parse(m, &o->name, e);                                                    \
  }                                                                                              \
  static inline json_t *fx_pack_##name(const fx_msg_t *o) { return nq_##name##_pack(&o->name); }
FX_CODEC(hello)
FX_CODEC(welcome)
FX_CODEC(get_work)
FX_CODEC(work)
FX_CODEC(no_work)
FX_CODEC(progress)
FX_CODEC(lease)
FX_CODEC(result)
FX_CODEC(ack)
FX_CODEC(admin_req)
FX_CODEC(admin_reply)
FX_CODEC(error)
FX_CODEC(signup)
FX_CODEC(signup_reply)
FX_CODEC(news)
#undef FX_CODEC

#endif
