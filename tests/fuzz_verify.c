/* libFuzzer target: the evidence file's parser (nq/evidence.h) and nq-verify's checks over a
 * whole file (solve/verify.c).
 *
 * The first byte picks the mode; the rest is the input:
 *   even: the bytes are read as lines (nq_ev_reader_next) and each line is parsed
 *         (nq_ev_parse_line). An accepted header, unit or totals line is written again
 *         (nq_ev_write_*) and parsed again: the second line must be accepted and written the
 *         same way (the writer's form is canonical), and a rejected line leaves a reason;
 *   odd:  the bytes are a file whose sha256 line the target appends (so the checksum passes and
 *         the content checks run: header, unit texts, the tiling walk, the rule, the sums), then
 *         verify_stream checks it with no sample (a recount of an arbitrary unit could take
 *         hours). It must return a defined outcome, with a reason unless it passed.
 * Properties: no crash, no out-of-bounds access, no leak (ASan/UBSan), bounded time.
 * Built by scripts/fuzz.sh (clang, -DNQ_FUZZ=ON). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/evidence.h"
#include "nq/hash.h"
#include "verify.h"

#define FUZZ_ASSERT(cond)                                                                   \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      fprintf(stderr, "fuzz_verify: assertion failed: %s (line %d)\n", #cond, __LINE__);    \
      abort();                                                                              \
    }                                                                                       \
  } while (0)

/* Write one parsed line back; returns the malloc'd text (without the checksum line). */
static char *repack(const nq_ev_line_t *l, size_t *len) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  FUZZ_ASSERT(f);
  nq_ev_writer_t *w = NULL;
  FUZZ_ASSERT(nq_ev_writer_begin(f, &w) == 0);
  int rc = l->type == NQ_EV_HEADER ? nq_ev_write_header(w, &l->header)
           : l->type == NQ_EV_UNIT ? nq_ev_write_unit(w, &l->unit)
                                   : nq_ev_write_totals(w, &l->totals);
  nq_ev_writer_free(w);
  fclose(f);
  if (rc != 0) { /* a parsed value the writer refuses: only a string that is not UTF-8 */
    free(buf);
    return NULL;
  }
  FUZZ_ASSERT(n > 0 && buf[n - 1] == '\n');
  *len = n - 1;
  return buf;
}

static void lines_mode(const uint8_t *data, size_t size) {
  static nq_ev_line_t a, b;
  FILE *f = fmemopen((void *)data, size, "rb");
  if (!f) return;
  nq_ev_reader_t *r = NULL;
  FUZZ_ASSERT(nq_ev_reader_begin(f, &r) == 0);
  const char *line;
  size_t len;
  uint64_t no;
  char err[512];
  while (nq_ev_reader_next(r, &line, &len, &no) == 1) {
    err[0] = '\0';
    if (nq_ev_parse_line(line, len, &a, err, sizeof err) != 0) {
      FUZZ_ASSERT(err[0] != '\0');
      continue;
    }
    if (a.type == NQ_EV_SHA256) continue;
    size_t l1, l2;
    char *t1 = repack(&a, &l1);
    if (!t1) continue;
    FUZZ_ASSERT(nq_ev_parse_line(t1, l1, &b, err, sizeof err) == 0 && b.type == a.type);
    char *t2 = repack(&b, &l2);
    FUZZ_ASSERT(t2 && l1 == l2 && memcmp(t1, t2, l1) == 0);
    free(t1);
    free(t2);
  }
  unsigned char md[32];
  nq_ev_reader_digest(r, md);
  nq_ev_reader_free(r);
  fclose(f);
}

static void file_mode(const uint8_t *data, size_t size) {
  unsigned char md[32];
  char hex[65], tail[100];
  FUZZ_ASSERT(nq_sha256(data, size, md) == 0);
  nq_hex_encode(md, sizeof md, hex);
  int tl = snprintf(tail, sizeof tail, "{\"type\":\"sha256\",\"sha256\":\"%s\"}\n", hex);
  char *file = malloc(size + (size_t)tl);
  if (!file) return;
  memcpy(file, data, size);
  memcpy(file + size, tail, (size_t)tl);
  FILE *f = fmemopen(file, size + (size_t)tl, "rb");
  if (f) {
    verify_opts_t o = {.sample = 0, .seed = 1, .kernel = "reference", .threads = 1};
    static verify_report_t rep;
    char err[1024];
    int rc = verify_stream(f, &o, &rep, err, sizeof err);
    FUZZ_ASSERT(rc == VERIFY_OK || rc == VERIFY_FAILED || rc == VERIFY_ERROR);
    FUZZ_ASSERT(rc == VERIFY_OK || err[0] != '\0');
    fclose(f);
  }
  free(file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 65536) return 0;
  if (data[0] & 1) file_mode(data + 1, size - 1);
  else lines_mode(data + 1, size - 1);
  return 0;
}
