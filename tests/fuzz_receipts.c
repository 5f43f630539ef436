/* libFuzzer target: a volunteer's receipts file (nq/receipts.h).
 *
 * The first byte picks the mode; the rest is the input:
 *   even: the bytes are one receipt line (nq_receipt_parse); an accepted one is formatted again
 *         (nq_receipt_format) and parsed again: the same receipt, and the formatted line is the
 *         input itself (the format is canonical: one spelling per receipt);
 *   odd:  the bytes are a whole receipts file, checked (nq_receipts_check) against a small
 *         evidence file made here once (N=6, one unit of two results): any line, cut or
 *         overlong, is skipped or counted, and the outcome is defined (0, 1, or an error with a
 *         reason).
 * Properties: no crash, no out-of-bounds access, no leak (ASan/UBSan), bounded time.
 * Built by scripts/fuzz.sh (clang, -DNQ_FUZZ=ON). */
#define _POSIX_C_SOURCE 200809L /* open_memstream, fmemopen (the fuzz targets get no nq_flags) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nq/evidence.h"
#include "nq/receipts.h"

#define FUZZ_ASSERT(cond)                                                                   \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      fprintf(stderr, "fuzz_receipts: assertion failed: %s (line %d)\n", #cond, __LINE__);  \
      abort();                                                                              \
    }                                                                                       \
  } while (0)

static void line_mode(const uint8_t *d, size_t n) {
  nq_receipt_t r, r2;
  if (nq_receipt_parse((const char *)d, n, &r) != 0) return;
  char line[NQ_RECEIPT_LINE_MAX];
  int k = nq_receipt_format(&r, line, sizeof line);
  FUZZ_ASSERT(k > 0 && line[k - 1] == '\n');
  FUZZ_ASSERT((size_t)(k - 1) == n && !memcmp(line, d, n));
  FUZZ_ASSERT(nq_receipt_parse(line, (size_t)k - 1, &r2) == 0);
  FUZZ_ASSERT(!memcmp(&r, &r2, sizeof r));
}

/* The evidence: header, one unit with two results, totals (with the writer's root), sha256. */
static char *evidence(size_t *len) {
  static nq_ev_unit_t u;
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  nq_ev_writer_t *w = NULL;
  nq_ev_header_t h = {.version = NQ_EV_VERSION, .n = 6, .job = 3, .depth = 2, .min_depth = 2,
                      .has_internal = 1, .quorum = 2, .max_results = 3, .units = 1};
  snprintf(h.solver, sizeof h.solver, "nq-solver-4");
  snprintf(h.software, sizeof h.software, "fuzz");
  snprintf(u.text, sizeof u.text, "6:c:2:0,2");
  snprintf(u.state, sizeof u.state, "verified");
  snprintf(u.nodes_solver, sizeof u.nodes_solver, "nq-solver-4");
  u.nodes = 9;
  u.nresults = 2;
  for (int i = 0; i < 2; i++) {
    u.results[i].id = 7 + i;
    snprintf(u.results[i].client, sizeof u.results[i].client, "c%d", i);
    snprintf(u.results[i].state, sizeof u.results[i].state, "valid");
    snprintf(u.results[i].solver, sizeof u.results[i].solver, "nq-solver-4");
    u.results[i].nodes = 9;
  }
  nq_ev_totals_t t = {.units = 1, .nodes = 9};
  FUZZ_ASSERT(f && nq_ev_writer_begin(f, &w) == 0 && nq_ev_write_header(w, &h) == 0 &&
              nq_ev_write_unit(w, &u) == 0 && nq_ev_write_totals(w, &t) == 0 &&
              nq_ev_writer_end(w) == 0);
  fclose(f);
  return buf;
}

static void file_mode(const uint8_t *d, size_t n) {
  static char *ev;
  static size_t evlen;
  static char path[64];
  if (!ev) {
    ev = evidence(&evlen);
    snprintf(path, sizeof path, "/tmp/fuzz_receipts.%ld", (long)getpid());
  }
  FILE *r = fopen(path, "wb");
  FUZZ_ASSERT(r && fwrite(d, 1, n, r) == n && fclose(r) == 0);
  FILE *e = fmemopen(ev, evlen, "rb");
  FUZZ_ASSERT(e);
  nq_receipts_report_t rep;
  char err[512];
  int rc = nq_receipts_check(e, path, NULL, NULL, 0, &rep, err, sizeof err);
  fclose(e);
  FUZZ_ASSERT(rc == 0 || rc == 1 || rc < 0);
  FUZZ_ASSERT(rc == 0 || err[0] != '\0');
  FUZZ_ASSERT(rc < 0 || rep.found + rep.missing == rep.kept);
  unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 65536) return 0;
  if (data[0] & 1) file_mode(data + 1, size - 1);
  else line_mode(data + 1, size - 1);
  return 0;
}
