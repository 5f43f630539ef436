/* nq: typed field access on jansson objects, shared by the wire messages (nq/proto.h), the
 * checkpoint file (nq/checkpoint.h) and the admin views: one codec for every number that
 * crosses a boundary as JSON. A u64 above INT64_MAX travels as a string of decimal digits
 * (jansson's integers are signed 64-bit), in canonical form: no leading zero.
 */
#ifndef NQ_JSON_H
#define NQ_JSON_H

#include <jansson.h>
#include <stdint.h>

/* Every one returns NQ_EPROTO when the field is missing or has the wrong type. */

/* A string field; *out points into msg and lives as long as msg does. */
int nq_msg_get_str(const json_t *msg, const char *key, const char **out);
/* An integer field (not a real, not a bool) within [min, max]; NQ_ERANGE outside it. */
int nq_msg_get_int(const json_t *msg, const char *key, int64_t min, int64_t max, int64_t *out);
/* An unsigned 64-bit field: a non-negative JSON integer, or a string of decimal digits for values
 * above INT64_MAX (JSON integers in jansson are signed 64-bit). NQ_ERANGE if negative/too big. */
int nq_msg_get_u64(const json_t *msg, const char *key, uint64_t *out);
/* The same for a value v (not a key of an object). */
int nq_json_u64(const json_t *v, uint64_t *out);
/* A boolean field. */
int nq_msg_get_bool(const json_t *msg, const char *key, int *out);
/* Optional variants: absent or null yields the default and 0; a present field of the wrong type
 * is still NQ_EPROTO. */
int nq_msg_opt_str(const json_t *msg, const char *key, const char *def, const char **out);
int nq_msg_opt_int(const json_t *msg, const char *key, int64_t min, int64_t max, int64_t def,
                   int64_t *out);
/* Store a u64 the way nq_msg_get_u64 reads it: an integer up to INT64_MAX, else a string. */
int nq_msg_set_u64(json_t *msg, const char *key, uint64_t v);

#endif
