/* The GPU kernel's source (common/solver/gpu_kernel.cl, or an older one given by path) compiled
 * as C through cl_shim.h and run on the CPU, so that scripts/bench-gpu-insns.sh can count its
 * instructions per node under callgrind (only nq_run is counted) and check it exact.
 *
 *   gpu_insns N [--records R] [--budget B] [--check]
 *
 * The records are N's units at the depth the host's expansion reaches for a whole-N batch (at
 * most NQ_GPU_ROWS_MAX rows below, 2^17 subtrees or NQ_GPU_ROWS_MIN rows left), every k-th of
 * them so that about R (default 2048) are run; each work-item searches its records to the end
 * (no budget). Prints one line: "records R nodes X c2 A c4 B c8 C". --check compares every
 * record's counts and nodes with nq_fast_solve_unit (exit 1 on a difference). --budget: launches
 * of at most B iterations a work-item, repeated until every search is done (saved and resumed
 * searches; the queue kernel only).
 * The kernel's interface is told apart by NQ_ABI_QUEUE (defined by the queue kernel).
 */
#include "cl_shim.h"

#include NQ_KERNEL_SRC

#include "nq/gpu.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct list_s {
  nq_unit_t *v;
  size_t len, cap, stride, seen;
} list_t;

static int push(const nq_unit_t *u, void *arg) {
  list_t *l = arg;
  if (l->seen++ % l->stride) return 0;
  if (l->len == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 1024;
    l->v = realloc(l->v, l->cap * sizeof *l->v);
    if (!l->v) return NQ_ENOMEM;
  }
  l->v[l->len++] = *u;
  return 0;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 0, check = 0;
  uint budget = 0xffffffffu;
  size_t want = 2048;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--check")) check = 1;
    else if (!strcmp(argv[i], "--records") && i + 1 < argc) want = strtoul(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--budget") && i + 1 < argc)
      budget = (uint)strtoul(argv[++i], NULL, 10);
  }
  if (n < 8 || n > 24 || want == 0 || budget == 0) {
    fprintf(stderr, "usage: gpu_insns N(8..24) [--records R] [--budget B] [--check]\n");
    return 2;
  }
  int d = 2;
  uint64_t cnt = 0;
  for (;; d++) {
    nq_units_count(n, d, &cnt);
    int rows = n - 1 - d;
    if (rows <= NQ_GPU_ROWS_MAX && (cnt >= NQ_GPU_SUBTREES || rows <= NQ_GPU_ROWS_MIN)) break;
  }
  list_t l = {.stride = cnt / want > 1 ? cnt / want : 1};
  if (nq_units_generate(n, d, push, &l) != 0) return 1;
  size_t m = l.len;
  uchar *recs = calloc(m, NQ_REC);
  for (size_t i = 0; i < m; i++) {
    recs[i * NQ_REC] = (uchar)l.v[i].depth;
    memcpy(recs + i * NQ_REC + 1, l.v[i].prefix, (size_t)l.v[i].depth);
  }
  ulong *got = calloc(m * 4, sizeof *got);
  const int look = nq_unit_look(n);
#ifdef NQ_ABI_QUEUE
  /* One work-group; the first work-item takes every record from the queue, the others none. */
  const uint nslots = NQ_GROUP;
  uint *own = calloc(m, sizeof *own), *stat = calloc(nslots, sizeof *stat);
  uint *save = calloc((size_t)nslots * NQ_SLOT, sizeof *save), *tot = calloc(m * 8, sizeof *tot);
  uint head = 0;
  for (size_t i = 0; i < m; i++) own[i] = (uint)i;
  for (int busy = 1; busy;) {
    busy = 0;
    for (uint g = 0; g < nslots; g++) {
      shim_gid = g;
      shim_lid = g % NQ_GROUP;
      nq_run(recs, own, (uint)m, &head, stat, save, tot, nslots, n, budget, look);
      busy |= (stat[g] & 3u) == NQ_RUNNING || head < m;
    }
  }
  for (size_t i = 0; i < m * 4; i++) got[i] = tot[2 * i] | (ulong)tot[2 * i + 1] << 32;
#else
  uint *stat = calloc(m, sizeof *stat), *save = calloc(m * NQ_SLOT, sizeof *save);
  for (size_t i = 0; i < m; i++) stat[i] = NQ_FRESH;
  for (size_t g = 0; g < m; g++) {
    shim_gid = g;
    shim_lid = g % NQ_GROUP;
    nq_run(recs, stat, save, got, (uint)m, n, 0xffffffffu, look);
  }
#endif
  ulong t[4] = {0};
  int bad = 0;
  for (size_t i = 0; i < m; i++) {
    for (int k = 0; k < 4; k++) t[k] += got[4 * i + k];
    if (!check) continue;
    nq_counts_t w;
    nq_fast_solve_unit(&l.v[i], &w);
    if (w.c2 != got[4 * i] || w.c4 != got[4 * i + 1] || w.c8 != got[4 * i + 2] ||
        w.nodes != got[4 * i + 3]) {
      char txt[NQ_UNIT_TEXT_MAX];
      nq_unit_format(&l.v[i], txt, sizeof txt);
      if (bad++ < 5)
        fprintf(stderr, "%s: kernel %lu %lu %lu nodes %lu, CPU %llu %llu %llu nodes %llu\n", txt,
                got[4 * i], got[4 * i + 1], got[4 * i + 2], got[4 * i + 3],
                (unsigned long long)w.c2, (unsigned long long)w.c4, (unsigned long long)w.c8,
                (unsigned long long)w.nodes);
    }
  }
  printf("records %zu depth %d nodes %lu c2 %lu c4 %lu c8 %lu%s\n", m, d, t[3], t[0], t[1], t[2],
         check ? (bad ? " DIFFERS" : " exact") : "");
  return bad ? 1 : 0;
}
