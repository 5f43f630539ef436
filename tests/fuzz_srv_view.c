/* libFuzzer target: the typed views' parser (common/net/view.c), which nq-admin and the status page
 * run on what a server sends them (nq/admin_view.h).
 *
 * The input is read as JSON (json_loadb, as a reply's data would be) and handed to every view's
 * parse, whatever it is, since the sender controls the shape. Properties checked for every input:
 *   - no crash, out-of-bounds access, leak or undefined behaviour (ASan/UBSan);
 *   - a refusal is NQ_EPROTO or NQ_ENOMEM and names the view in its message;
 *   - whatever a view accepts packs again, the packed object parses again, and packing that gives
 *     the same JSON (one canonical form both ways).
 * Built with clang and -DNQ_FUZZ=ON; seeds from scripts/fuzz.sh. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "nq/admin_view.h"
#include "nq/nq.h"

#define FUZZ_ASSERT(cond)                                                                 \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      fprintf(stderr, "fuzz_srv_view: assertion failed: %s (line %d)\n", #cond, __LINE__); \
      abort();                                                                            \
    }                                                                                     \
  } while (0)

/* The largest view struct: every one fits. */
static _Alignas(max_align_t) unsigned char one[4096], two[4096];

static void check_view(const nq_view_t *v, const json_t *j) {
  FUZZ_ASSERT(v->size <= sizeof one);
  char err[256] = "";
  int rc = nq_view_parse(v, j, one, err, sizeof err);
  if (rc != 0) {
    FUZZ_ASSERT(rc == NQ_EPROTO || rc == NQ_ENOMEM);
    FUZZ_ASSERT(rc == NQ_ENOMEM || strncmp(err, v->name, strlen(v->name)) == 0);
    return;
  }
  json_t *p1 = nq_view_pack(v, one);
  FUZZ_ASSERT(p1 != NULL);
  FUZZ_ASSERT(nq_view_parse(v, p1, two, err, sizeof err) == 0);
  json_t *p2 = nq_view_pack(v, two);
  FUZZ_ASSERT(p2 != NULL && json_equal(p1, p2));
  json_decref(p1);
  json_decref(p2);
  nq_view_free(v, one);
  nq_view_free(v, two);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
  if (!j) return 0;
  for (size_t i = 0; i < nq_views_all_n; i++) check_view(nq_views_all[i], j);
  json_decref(j);
  return 0;
}
