/* libFuzzer target: the unit text parser (nq_unit_parse).
 *
 * Properties checked for every input:
 *   - the parser never crashes, reads out of bounds or leaks (ASan/UBSan);
 *   - accepted input is canonical: format(parse(x)) == x, byte for byte;
 *   - an accepted unit validates, has a search state, and parses again to the same struct;
 *   - a rejected input leaves a one-line reason in errbuf.
 * Built by scripts/fuzz.sh (clang, -DNQ_FUZZ=ON). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/unit.h"

#define FUZZ_ASSERT(cond)                                                         \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "fuzz_unit: assertion failed: %s (line %d)\n", #cond, __LINE__); \
      abort();                                                                    \
    }                                                                             \
  } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* The parser takes a C string: bound the length and stop at an embedded NUL. */
  if (size > 512) return 0;
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  size_t len = strlen(text);

  nq_unit_t u;
  char err[160];
  memset(&u, 0, sizeof u);
  err[0] = '\0';
  int rc = nq_unit_parse(text, &u, err, sizeof err);
  if (rc == 0) {
    char out[NQ_UNIT_TEXT_MAX];
    int n = nq_unit_format(&u, out, sizeof out);
    FUZZ_ASSERT(n > 0 && n < NQ_UNIT_TEXT_MAX);
    FUZZ_ASSERT((size_t)n == len);
    FUZZ_ASSERT(memcmp(out, text, len) == 0);
    FUZZ_ASSERT(nq_unit_validate(&u, NULL, 0) == 0);
    nq_unit_state_t st;
    FUZZ_ASSERT(nq_unit_state(&u, &st) == 0);
    nq_unit_t back;
    memset(&back, 0, sizeof back);
    FUZZ_ASSERT(nq_unit_parse(out, &back, NULL, 0) == 0);
    FUZZ_ASSERT(back.n == u.n && back.part == u.part && back.bound1 == u.bound1 &&
                back.depth == u.depth);
    FUZZ_ASSERT(memcmp(back.prefix, u.prefix, (size_t)u.depth) == 0);
    FUZZ_ASSERT(u.n >= NQ_UNIT_MIN_N && u.n <= NQ_MAX_N);
    FUZZ_ASSERT(u.depth >= 2 && u.depth <= u.n - 1);
  } else {
    FUZZ_ASSERT(rc < 0);
    FUZZ_ASSERT(memchr(err, '\0', sizeof err) != NULL);
    FUZZ_ASSERT(err[0] != '\0');
    FUZZ_ASSERT(strchr(err, '\n') == NULL);
  }
  free(text);
  return 0;
}
