/* nq: typed field access on jansson objects (nq/json.h). */
#include "nq/json.h"

#include "nq/nq.h"

#include <string.h>

static const json_t *field(const json_t *msg, const char *key) {
  return json_is_object(msg) ? json_object_get(msg, key) : NULL;
}

int nq_msg_get_str(const json_t *msg, const char *key, const char **out) {
  const json_t *v = field(msg, key);
  if (!json_is_string(v)) return NQ_EPROTO;
  *out = json_string_value(v);
  return 0;
}

int nq_msg_get_int(const json_t *msg, const char *key, int64_t min, int64_t max, int64_t *out) {
  const json_t *v = field(msg, key);
  if (!json_is_integer(v)) return NQ_EPROTO;
  json_int_t x = json_integer_value(v);
  if (x < min || x > max) return NQ_ERANGE;
  *out = (int64_t)x;
  return 0;
}

int nq_msg_get_u64(const json_t *msg, const char *key, uint64_t *out) {
  return nq_json_u64(field(msg, key), out);
}

int nq_json_u64(const json_t *v, uint64_t *out) {
  if (json_is_integer(v)) {
    json_int_t x = json_integer_value(v);
    if (x < 0) return NQ_ERANGE;
    *out = (uint64_t)x;
    return 0;
  }
  if (!json_is_string(v)) return NQ_EPROTO;
  /* The string form exists only because JSON integers stop at INT64_MAX in jansson. */
  const char *s = json_string_value(v);
  size_t n = json_string_length(v);
  if (n == 0 || n > 20) return n > 20 ? NQ_ERANGE : NQ_EPROTO;
  /* One spelling per number, as nq_msg_set_u64 writes it: "00012" is not 12. */
  if (n > 1 && s[0] == '0') return NQ_EPROTO;
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return NQ_EPROTO;
    unsigned d = (unsigned)(s[i] - '0');
    if (x > (UINT64_MAX - d) / 10) return NQ_ERANGE;
    x = x * 10 + d;
  }
  *out = x;
  return 0;
}

int nq_msg_get_bool(const json_t *msg, const char *key, int *out) {
  const json_t *v = field(msg, key);
  if (!json_is_boolean(v)) return NQ_EPROTO;
  *out = json_is_true(v);
  return 0;
}

int nq_msg_opt_str(const json_t *msg, const char *key, const char *def, const char **out) {
  const json_t *v = field(msg, key);
  if (!v || json_is_null(v)) {
    *out = def;
    return 0;
  }
  return nq_msg_get_str(msg, key, out);
}

int nq_msg_opt_int(const json_t *msg, const char *key, int64_t min, int64_t max, int64_t def,
                   int64_t *out) {
  const json_t *v = field(msg, key);
  if (!v || json_is_null(v)) {
    *out = def;
    return 0;
  }
  return nq_msg_get_int(msg, key, min, max, out);
}

int nq_msg_set_u64(json_t *msg, const char *key, uint64_t v) {
  json_t *j;
  if (v <= (uint64_t)INT64_MAX) {
    j = json_integer((json_int_t)v);
  } else {
    char buf[24];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    j = json_string(buf);
  }
  if (!j) return NQ_ENOMEM;
  return json_object_set_new(msg, key, j) == 0 ? 0 : NQ_EINVAL;
}
