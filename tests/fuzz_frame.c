/* libFuzzer target: the frame parser (nq_framebuf_*, nq_frame_decode, nq_frame_encode).
 *
 * Input layout: byte 0 selects the chunk size (1..128) used to feed the rest into a frame
 * buffer, so every split of the stream is explored; the same bytes are also decoded directly as
 * one payload, so JSON content is explored without needing valid headers.
 * Properties checked for every input:
 *   - no crash, out-of-bounds access, leak or deep recursion (ASan/UBSan, small stack);
 *   - every popped frame is an object that re-encodes, and decodes back to an equal value;
 *   - errors are sticky, and the buffer never holds more than NQ_FRAMEBUF_CAP bytes;
 *   - the parse result does not depend on how the stream was split (chunked == all-at-once).
 * Built with clang and -DNQ_FUZZ=ON (scripts/fuzz.sh). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/frame.h"
#include "nq/nq.h"

#define FUZZ_ASSERT(cond)                                                                 \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fprintf(stderr, "fuzz_frame: assertion failed: %s (line %d)\n", #cond, __LINE__); \
      abort();                                                                            \
    }                                                                                     \
  } while (0)

/* A decoded frame must survive encode -> decode unchanged. Re-encoding may legitimately grow
 * past the limit (1E2 is printed as 100.0), which is the only accepted failure. */
static void check_roundtrip(const json_t *msg) {
  FUZZ_ASSERT(json_is_object(msg));
  uint8_t *buf = NULL;
  size_t len = 0;
  int r = nq_frame_encode(msg, &buf, &len);
  if (r == NQ_ETOOBIG) return;
  FUZZ_ASSERT(r == 0);
  json_t *again = NULL;
  FUZZ_ASSERT(nq_frame_decode(buf + NQ_FRAME_HDR, len - NQ_FRAME_HDR, &again) == 0);
  FUZZ_ASSERT(json_equal(msg, again));
  json_decref(again);
  free(buf);
}

/* Feed data in chunks of `chunk` bytes, popping after each append as a connection does.
 * Returns the number of frames popped; *final gets the last non-EAGAIN error (or 0). */
static int run_stream(const uint8_t *data, size_t size, size_t chunk, int *final) {
  nq_framebuf_t fb;
  nq_framebuf_init(&fb);
  int frames = 0, err = 0;
  for (size_t off = 0; off < size && !err; off += chunk) {
    size_t n = size - off < chunk ? size - off : chunk;
    int r = nq_framebuf_append(&fb, data + off, n);
    if (r < 0) {
      err = r;
      break;
    }
    FUZZ_ASSERT(nq_framebuf_pending(&fb) <= NQ_FRAMEBUF_CAP);
    for (;;) {
      json_t *msg = NULL;
      r = nq_framebuf_pop(&fb, &msg);
      if (r == NQ_EAGAIN) break;
      if (r < 0) {
        FUZZ_ASSERT(msg == NULL);
        FUZZ_ASSERT(nq_framebuf_errcode(&fb) != NULL);
        json_t *again = NULL;
        FUZZ_ASSERT(nq_framebuf_pop(&fb, &again) == r); /* sticky */
        FUZZ_ASSERT(nq_framebuf_append(&fb, "x", 1) == r);
        err = r;
        break;
      }
      check_roundtrip(msg);
      json_decref(msg);
      frames++;
    }
  }
  nq_framebuf_free(&fb);
  *final = err;
  return frames;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  size_t chunk = (size_t)(data[0] & 0x7f) + 1;
  data++;
  size--;

  /* The bytes as a stream of frames, split two ways: the outcome must not depend on it (as long
   * as one append of everything fits the buffer cap). */
  int err_a = 0, err_b = 0;
  int frames_a = run_stream(data, size, chunk, &err_a);
  if (size <= NQ_FRAMEBUF_CAP) {
    int frames_b = run_stream(data, size, size ? size : 1, &err_b);
    FUZZ_ASSERT(frames_a == frames_b);
    FUZZ_ASSERT(err_a == err_b);
  }

  /* The bytes as one payload. */
  json_t *msg = NULL;
  int r = nq_frame_decode(data, size, &msg);
  if (r == 0) {
    check_roundtrip(msg);
    json_decref(msg);
  } else {
    FUZZ_ASSERT(msg == NULL);
    FUZZ_ASSERT(r == NQ_EPROTO || r == NQ_ETOOBIG || r == NQ_ENOMEM);
  }
  return 0;
}
