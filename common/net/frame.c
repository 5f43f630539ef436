/* nq: wire framing (length-prefixed JSON objects); the messages are proto.c's. */
#include "nq/frame.h"
#include "nq/nq.h"

#include <stdlib.h>
#include <string.h>

/* Keep at most this much buffer around while a connection has nothing pending: an idle server
 * with many clients should not hold a maximal frame buffer for each of them. */
#define FRAMEBUF_KEEP 4096

void nq_framebuf_init(nq_framebuf_t *fb) {
  memset(fb, 0, sizeof *fb);
}

void nq_framebuf_free(nq_framebuf_t *fb) {
  free(fb->data);
  memset(fb, 0, sizeof *fb);
}

const char *nq_framebuf_errcode(const nq_framebuf_t *fb) {
  return fb->err ? nq_errcode_name(fb->errcode) : NULL;
}

static int fb_fail(nq_framebuf_t *fb, int err, nq_errcode_t code) {
  fb->err = err;
  fb->errcode = code;
  return err;
}

size_t nq_framebuf_pending(const nq_framebuf_t *fb) {
  return fb->end - fb->start;
}

int nq_framebuf_append(nq_framebuf_t *fb, const void *data, size_t len) {
  if (fb->err) return fb->err;
  if (len == 0) return 0;
  size_t pending = fb->end - fb->start;
  if (len > NQ_FRAMEBUF_CAP - pending) return fb_fail(fb, NQ_ETOOBIG, NQ_ERR_FRAME_TOO_BIG);

  if (len > fb->cap - fb->end) {
    /* Slide the unconsumed tail to the front before growing: usually that alone makes room. */
    if (fb->start > 0) {
      if (pending) memmove(fb->data, fb->data + fb->start, pending);
      fb->start = 0;
      fb->end = pending;
    }
    if (len > fb->cap - fb->end) {
      size_t need = fb->end + len;
      size_t ncap = fb->cap ? fb->cap : FRAMEBUF_KEEP;
      while (ncap < need) ncap *= 2;
      if (ncap > NQ_FRAMEBUF_CAP) ncap = NQ_FRAMEBUF_CAP;
      uint8_t *nd = realloc(fb->data, ncap);
      if (!nd) return NQ_ENOMEM;
      fb->data = nd;
      fb->cap = ncap;
    }
  }
  memcpy(fb->data + fb->end, data, len);
  fb->end += len;
  return 0;
}

int nq_framebuf_pop(nq_framebuf_t *fb, json_t **out) {
  *out = NULL;
  if (fb->err) return fb->err;
  size_t avail = fb->end - fb->start;
  if (avail < NQ_FRAME_HDR) return NQ_EAGAIN;

  const uint8_t *p = fb->data + fb->start;
  uint32_t len = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
  /* Judge the length before waiting for the payload: a bogus length must fail now, not after
   * we have buffered (or worse, allocated) what it claims. */
  if (len == 0) return fb_fail(fb, NQ_EPROTO, NQ_ERR_BAD_FRAME);
  if (len > NQ_FRAME_MAX) return fb_fail(fb, NQ_ETOOBIG, NQ_ERR_FRAME_TOO_BIG);
  if (avail - NQ_FRAME_HDR < len) return NQ_EAGAIN;

  int r = nq_frame_decode(p + NQ_FRAME_HDR, len, out);
  if (r < 0) {
    /* Only running out of memory is not the peer's fault. */
    return r == NQ_ENOMEM ? r : fb_fail(fb, r, NQ_ERR_BAD_JSON);
  }
  fb->start += NQ_FRAME_HDR + len;
  if (fb->start == fb->end) {
    fb->start = fb->end = 0;
    if (fb->cap > FRAMEBUF_KEEP) {
      free(fb->data);
      fb->data = NULL;
      fb->cap = 0;
    }
  }
  return 0;
}

int nq_utf8_valid(const void *data, size_t len) {
  const uint8_t *s = data;
  size_t i = 0;
  while (i < len) {
    uint8_t c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t n;
    uint8_t lo = 0x80, hi = 0xBF; /* allowed range of the first continuation byte */
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0; /* overlong */
      if (c == 0xED) hi = 0x9F; /* UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90; /* overlong */
      if (c == 0xF4) hi = 0x8F; /* above U+10FFFF */
    } else {
      return 0; /* stray continuation byte, overlong C0/C1, or F5..FF */
    }
    if (len - i - 1 < n) return 0;
    if (s[i + 1] < lo || s[i + 1] > hi) return 0;
    for (size_t k = 2; k <= n; k++)
      if ((s[i + k] & 0xC0) != 0x80) return 0;
    i += n + 1;
  }
  return 1;
}

/* Maximum nesting depth of brackets outside strings, or NQ_EPROTO as soon as it passes the
 * limit. jansson's parser recurses once per level, so deep input must never reach it. */
static int check_depth(const uint8_t *s, size_t len) {
  int depth = 0, in_str = 0, esc = 0;
  for (size_t i = 0; i < len; i++) {
    uint8_t b = s[i];
    if (in_str) {
      if (esc) esc = 0;
      else if (b == '\\') esc = 1;
      else if (b == '"') in_str = 0;
    } else if (b == '"') {
      in_str = 1;
    } else if (b == '{' || b == '[') {
      if (++depth > NQ_FRAME_MAX_DEPTH) return NQ_EPROTO;
    } else if (b == '}' || b == ']') {
      depth--; /* unbalanced input is left for jansson to reject */
    }
  }
  return 0;
}

/* An integer past 64 bits is valid JSON that jansson cannot hold. Rather than refuse the whole
 * frame (a fatal bad_json), such a token is read as the string of its digits, the form
 * nq_msg_get_u64 reads: so a count of 2^63 in a result is the message's own refusal
 * (bad_result, docs/protocol.md), and a field that wants an integer refuses a string. At most
 * BIG_INTEGERS_MAX such tokens; returns the object, or NULL with *jerr set. */
#define BIG_INTEGERS_MAX 16
static json_t *decode_big_integers(const void *payload, size_t len, json_error_t *jerr) {
  char *buf = malloc(len + 2 * BIG_INTEGERS_MAX);
  if (!buf) return NULL;
  memcpy(buf, payload, len);
  json_t *v = NULL;
  for (int k = 0; k < BIG_INTEGERS_MAX && !v; k++) {
    if (json_error_code(jerr) != json_error_numeric_overflow) break;
    /* jansson reports the position just past the token. */
    size_t end = (size_t)jerr->position, start = end;
    if (end > len) break;
    while (start > 0 && buf[start - 1] >= '0' && buf[start - 1] <= '9') start--;
    if (start > 0 && buf[start - 1] == '-') start--;
    if (start == end) break;
    memmove(buf + end + 2, buf + end, len - end);
    memmove(buf + start + 1, buf + start, end - start);
    buf[start] = buf[end + 1] = '"';
    len += 2;
    v = json_loadb(buf, len, JSON_REJECT_DUPLICATES, jerr);
  }
  free(buf);
  return v;
}

int nq_frame_decode(const void *payload, size_t len, json_t **out) {
  *out = NULL;
  if (len == 0) return NQ_EPROTO;
  if (len > NQ_FRAME_MAX) return NQ_ETOOBIG;
  if (!nq_utf8_valid(payload, len)) return NQ_EPROTO;
  if (check_depth(payload, len) < 0) return NQ_EPROTO;

  json_error_t jerr;
  json_t *v = json_loadb(payload, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!v && json_error_code(&jerr) == json_error_numeric_overflow)
    v = decode_big_integers(payload, len, &jerr);
  if (!v) return json_error_code(&jerr) == json_error_out_of_memory ? NQ_ENOMEM : NQ_EPROTO;
  if (!json_is_object(v)) {
    json_decref(v);
    return NQ_EPROTO;
  }
  *out = v;
  return 0;
}

int nq_frame_encode(const json_t *msg, uint8_t **out, size_t *out_len) {
  *out = NULL;
  *out_len = 0;
  if (!json_is_object(msg)) return NQ_EINVAL;
  const size_t flags = JSON_COMPACT;
  size_t n = json_dumpb(msg, NULL, 0, flags);
  if (n == 0) return NQ_EINVAL;
  if (n > NQ_FRAME_MAX) return NQ_ETOOBIG;

  uint8_t *buf = malloc(NQ_FRAME_HDR + n);
  if (!buf) return NQ_ENOMEM;
  int r;
  if (json_dumpb(msg, (char *)buf + NQ_FRAME_HDR, n, flags) != n) {
    r = NQ_EINVAL;
    goto out;
  }
  /* Refuse to send what the peer's decoder would refuse, so the mistake surfaces here, at the
   * sender, instead of as a dropped connection. Strings built with jansson's *_nocheck calls can
   * carry invalid UTF-8. */
  if (check_depth(buf + NQ_FRAME_HDR, n) < 0 || !nq_utf8_valid(buf + NQ_FRAME_HDR, n)) {
    r = NQ_EPROTO;
    goto out;
  }
  buf[0] = (uint8_t)(n >> 24);
  buf[1] = (uint8_t)(n >> 16);
  buf[2] = (uint8_t)(n >> 8);
  buf[3] = (uint8_t)n;
  *out = buf;
  *out_len = NQ_FRAME_HDR + n;
  buf = NULL;
  r = 0;
out:
  free(buf);
  return r;
}
