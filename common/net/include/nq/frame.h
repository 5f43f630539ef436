/* nq: wire framing: length-prefixed JSON objects (the messages inside are proto.h's).
 *
 * A frame is a 4-byte big-endian payload length followed by that many bytes of payload, which
 * must be one JSON object in UTF-8. The length must be 1..NQ_FRAME_MAX; anything else is a
 * protocol error that ends the connection (docs/tls.md).
 *
 * Decoding is incremental: bytes are appended to a per-connection nq_framebuf_t as they arrive
 * and complete frames are popped one at a time. The claimed length is checked the moment the
 * four header bytes are present, so a peer can never make us allocate more than
 * NQ_FRAMEBUF_CAP bytes per connection.
 */
#ifndef NQ_FRAME_H
#define NQ_FRAME_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "nq/proto.h"

#define NQ_FRAME_HDR 4
#define NQ_FRAME_MAX 65536
/* Deepest nesting of arrays/objects accepted; the top-level object is depth 1. */
#define NQ_FRAME_MAX_DEPTH 32
/* Most bytes a frame buffer holds: one maximal frame plus one maximal append of the same size.
 * Callers pop every complete frame after each append, so this is never reached legitimately. */
#define NQ_FRAMEBUF_CAP (2 * (NQ_FRAME_HDR + NQ_FRAME_MAX))


typedef struct nq_framebuf_s {
  uint8_t *data;
  size_t start; /* first unconsumed byte */
  size_t end;   /* one past the last buffered byte */
  size_t cap;
  int err;      /* sticky: once the stream is bad every later call returns this */
  nq_errcode_t errcode; /* the protocol's code for err: bad_frame, frame_too_big or bad_json */
} nq_framebuf_t;

void nq_framebuf_init(nq_framebuf_t *fb);
void nq_framebuf_free(nq_framebuf_t *fb);
/* Buffer `len` more bytes. Returns 0, NQ_ENOMEM, NQ_ETOOBIG if more than NQ_FRAMEBUF_CAP bytes
 * would be pending, or the sticky error of an earlier failure. */
int nq_framebuf_append(nq_framebuf_t *fb, const void *data, size_t len);
/* Take the next complete frame. Returns 0 with *out a new reference the caller must json_decref,
 * NQ_EAGAIN when the next frame is not complete yet, NQ_ETOOBIG for a length over NQ_FRAME_MAX,
 * NQ_EPROTO for length 0 or a payload that is not a valid JSON object (see nq_frame_decode).
 * Errors are sticky: the byte stream cannot be resynchronised, so the connection must close. */
int nq_framebuf_pop(nq_framebuf_t *fb, json_t **out);
/* The protocol error code's name (nq_errcode_name) for the sticky error, NULL if there is none. */
const char *nq_framebuf_errcode(const nq_framebuf_t *fb);
/* Bytes buffered but not yet consumed (a partial frame, or frames not popped yet). */
size_t nq_framebuf_pending(const nq_framebuf_t *fb);

/* Decode one payload (no header): strict UTF-8, nesting <= NQ_FRAME_MAX_DEPTH (checked before
 * jansson sees the bytes, because jansson recurses per level), valid JSON, no duplicate keys, a
 * top-level object. Returns 0 and a new reference, NQ_ETOOBIG, NQ_EPROTO or NQ_ENOMEM. */
int nq_frame_decode(const void *payload, size_t len, json_t **out);

/* Encode `msg` (an object) as header + compact JSON into a new malloc'd buffer the caller frees.
 * Returns 0, NQ_EINVAL (not an object, or not encodable), NQ_EPROTO (nested deeper than the
 * decoder accepts), NQ_ETOOBIG (payload over NQ_FRAME_MAX) or NQ_ENOMEM. */
int nq_frame_encode(const json_t *msg, uint8_t **out, size_t *out_len);

/* Strict UTF-8 check (no overlongs, no surrogates, nothing above U+10FFFF). 1 if valid. */
int nq_utf8_valid(const void *data, size_t len);

#endif
