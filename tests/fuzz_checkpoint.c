/* libFuzzer target: the checkpoint file decoder (nq_ckpt_decode) and the run's use of what it
 * accepts (nq_run_new: the subject and cut checks).
 *
 * A fuzzer cannot forge SHA-256, so the first byte picks a mode: odd, the rest is a record (the
 * first line) and the target appends its correct checksum line, which lets the fuzzer reach every
 * field check; even, the rest is a whole file, as a damaged one would be.
 *
 * Properties checked for every input:
 *   - the decoder never crashes, reads out of bounds or leaks (ASan/UBSan);
 *   - a refusal leaves a one-line reason; an acceptance fills a consistent record (set bits ==
 *     ndone <= ntasks, sums possible);
 *   - accepted input re-encodes to a canonical file that decodes to the same record and encodes
 *     to the same bytes again;
 *   - a run made from it (small boards only, to keep each input fast) either uses it with the
 *     same finished tasks or refuses it with a reason.
 * Built by scripts/fuzz.sh (clang, -DNQ_FUZZ=ON). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/certs.h"
#include "nq/checkpoint.h"
#include "nq/hash.h"
#include "nq/nq.h"
#include "nq/solver_pool.h"

#define FUZZ_ASSERT(cond)                                                                  \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "fuzz_checkpoint: assertion failed: %s (line %d)\n", #cond, __LINE__); \
      abort();                                                                             \
    }                                                                                      \
  } while (0)

/* The input as a file: as given, or a record line with its checksum line appended. */
static char *as_file(const uint8_t *data, size_t size, size_t *len) {
  int body_mode = size > 0 && (data[0] & 1);
  data++, size = size ? size - 1 : 0;
  char *f = malloc(size + 80);
  if (!f) return NULL;
  memcpy(f, data, size);
  *len = size;
  if (body_mode) {
    unsigned char md[32];
    char hex[65];
    if (nq_sha256(data, size, md) != 0) {
      free(f);
      return NULL;
    }
    nq_hex_encode(md, sizeof md, hex);
    *len += (size_t)sprintf(f + size, "\nsha256 %s\n", hex);
  }
  return f;
}

static void check_record(const nq_ckpt_t *c) {
  uint32_t set = 0;
  for (uint32_t i = 0; i < c->ntasks; i++) set += (uint32_t)nq_ckpt_task_done(c, i);
  FUZZ_ASSERT(set == c->ndone && c->ndone <= c->ntasks && c->ntasks <= NQ_CKPT_TASKS_MAX);
  FUZZ_ASSERT(c->sum.c2 + c->sum.c4 + c->sum.c8 <= c->sum.nodes);
  FUZZ_ASSERT(c->sum.nodes >= c->ndone && c->seconds >= 0);
  double f = nq_ckpt_fraction(c, 0);
  FUZZ_ASSERT(f >= 0 && f <= 1 && (f == 1) == (c->ndone == c->ntasks));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > NQ_CKPT_FILE_MAX + 1) return 0;
  size_t len;
  char *file = as_file(data, size, &len);
  if (!file) return 0;
  nq_ckpt_t c;
  char err[NQ_CKPT_ERR_MAX];
  err[0] = 'x';
  int rc = nq_ckpt_decode(file, len, &c, err, sizeof err);
  if (rc != 0) {
    FUZZ_ASSERT(rc < 0);
    FUZZ_ASSERT(memchr(err, '\0', sizeof err) != NULL && strchr(err, '\n') == NULL);
    FUZZ_ASSERT(rc != NQ_EINVAL || err[0] != '\0');
    free(file);
    return 0;
  }
  check_record(&c);
  char *a, *b;
  size_t la, lb;
  FUZZ_ASSERT(nq_ckpt_encode(&c, &a, &la) == 0);
  nq_ckpt_t d;
  FUZZ_ASSERT(nq_ckpt_decode(a, la, &d, err, sizeof err) == 0);
  FUZZ_ASSERT(d.ntasks == c.ntasks && d.ndone == c.ndone && d.cut_depth == c.cut_depth);
  FUZZ_ASSERT(memcmp(d.done, c.done, (c.ntasks + 7) / 8) == 0);
  FUZZ_ASSERT(memcmp(&d.sum, &c.sum, sizeof c.sum) == 0);
  FUZZ_ASSERT(nq_subject_equal(&d.subject, &c.subject));
  FUZZ_ASSERT(nq_ckpt_encode(&d, &b, &lb) == 0);
  FUZZ_ASSERT(la == lb && memcmp(a, b, la) == 0);
  if (c.subject.n <= 14) {
    nq_run_t *r;
    char why[NQ_CKPT_ERR_MAX];
    if (nq_run_new(&c.subject, &c, &r, why, sizeof why) == 0) {
      nq_run_status_t st;
      nq_run_status(r, &st);
      FUZZ_ASSERT(why[0] ? st.ndone == 0 : st.ndone == c.ndone);
      nq_run_free(r);
    }
  }
  free(a);
  free(b);
  nq_ckpt_free(&c);
  nq_ckpt_free(&d);
  free(file);
  return 0;
}
