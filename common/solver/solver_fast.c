/* nq: the fast kernel. Same search as solver_ref.c, same counts and node counts (see solver.h),
 * found in a different order.
 *
 * The unit's subtree is searched row by row in bounded chunks ("batched"): all nodes of a chunk
 * sit on the same row, so that row's rules (the BOUND1 masks, the BOUND2 cut) are the same for
 * every node and the search needs no data-dependent branches. A worker (a vector lane, or one of
 * the scalar loop's two interleaved workers) holds one parent, takes its lowest free column per
 * step and emits the child into the next row's chunk; a worker whose parent has no column left
 * moves on to the next parent (vector expand / an index increment). Dead ends are counted when
 * made and never stored, and so are the side part's dead nodes (nq_unit_dead, prune_plan;
 * PF_270's subtrees are searched apart for them, nq_chain_plan) and the blocked nodes of rows
 * N-1-nq_unit_look(N)..N-4 (nq_unit_blocked, look_step: the steps that make them test every
 * child). When a chunk fills, the next row is searched (recursively) before going on, so memory
 * stays bounded (LV_CAP nodes per row and two sets of them, cached per thread). A child on row
 * N-2 is never stored: its children (row N-1) are counted with a popcount and its solutions
 * found from its two free columns. The SIMD variants go further: a row N-3 chunk is read
 * linearly and each node's rows N-2 and N-1 (nodes and solutions) come at once from its three
 * free columns (avx512: two small tables, leaf512_tab; avx2: lane masks, leaf256_tab), and the
 * avx512 variant does the same for row N-4 chunks (leaf512_four).
 *
 * The side part's rotation check needs whole boards. Each stored node keeps its parent's index
 * and two flags saying whether a placed row can make the check matter (column 0 on BOUND2,
 * column N-1 on BOUND1); a solution without them and without ENDBIT last counts in COUNT8 at
 * once, the rest (about 3/N) rebuild their board by walking up the parent indices. (The avx512
 * variant keeps both in spare high bits of the node's L and D words for N <= 22: see PK_SH.)
 * With those table leaves, the search also decides the first step of a flag's check on the row
 * that settles it (see PF_S90 in solver_batch.h), and the leaves count or drop most flagged
 * solutions without a rebuild; the avx512 leaves decide the first two steps of the 180-degree
 * check too (dec180).
 *
 * Variants (common/solver/solver_simd.h): avx512 (16 lanes, two independent lane groups), avx2 (8 lanes,
 * lane permutations from lookup tables), both in solver_x86.c, neon (4 lanes, solver_neon.c) and
 * scalar (portable C, any CPU, solver_scalar.c). The files call one way only: this one sets up
 * the unit and reaches a variant only through its table of kernels (name, CPU feature test,
 * search); the variants use the shared kernel code (solver_batch.c, the types and inline helpers
 * in solver_batch.h) and never this file or each other. The variant is chosen at run time
 * (__builtin_cpu_supports; NQ_KERNEL in the environment may ask for another); SIMD code is
 * compiled with function-level target attributes, so the rest of the build needs no -m flags.
 */
#include "solver_batch.h"

#include "nq/switches.h"
#include "nq/nq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The rows whose steps can make a child dead (nq-solver-2, see kctx_t and ref_dead): only
 * steps of rows y0..N-5. PF_90's check: the child of row max(BOUND2, N-1-c1) is the first to have
 * both PF_90 and the rejecting first step (PF_R90). PF_270's: the children of rows BOUND1 ..
 * max(BOUND1, c1), where PF_270 is set and column N-2 may be taken above row c1. A unit whose
 * own node is dead or blocked is found from its prefix (nq_unit_cut, solve_batched). */
static void prune_plan(kctx_t *k) {
  const int last = k->n - 5, p90 = k->bound2 > k->y90 ? k->bound2 : k->y90;
  k->p90 = p90 >= k->y0 && p90 <= last ? p90 : -1;
  k->p270lo = k->bound1 > k->y0 ? k->bound1 : k->y0;
  k->p270hi = k->bound1 > k->c1 ? k->bound1 : k->c1;
  if (k->p270hi > last) k->p270hi = last;
}

static void kctx_init(kctx_t *k, const nq_unit_t *u, const nq_unit_state_t *st) {
  memset(k, 0, sizeof *k);
  k->n = u->n;
  k->y0 = u->depth;
  k->side = u->part == NQ_PART_SIDE;
  k->mask = st->mask;
  k->sidemask = st->sidemask;
  k->lastmask = st->lastmask;
  k->topbit = st->topbit;
  k->endbit = st->endbit;
  k->bound1 = st->bound1;
  k->bound2 = st->bound2;
  uint32_t forbid = k->side ? st->sidemask : 2u;
  for (int y = 0; y < k->n; y++) k->rowmask[y] = y < st->bound1 ? st->mask & ~forbid : st->mask;
  memcpy(k->board, st->board, sizeof k->board);
  k->y90 = k->y270 = k->ylate = -1;
  k->late = 0;
  k->c1 = k->p90 = k->p270hi = -1;
  k->p270lo = 0;
  if (k->side && k->y0 >= 2) { /* row 1's column c1 is the unit's */
    int c1 = __builtin_ctz(k->board[1]);
    k->c1 = c1;
    k->y270 = c1;
    k->y90 = k->n - 1 - c1;
    prune_plan(k);
  }
}

/* The PF_S90..PF_R270 bits (see PF_DEC) of the decision rows above y0, from the unit's board. The
 * PF_270 check's first step finds the row of the queen on column N-2 from the top: one above
 * row c1 rejects the board, none down to row c1 passes it, row c1 needs the rest. The PF_90 check
 * finds the row of the queen on column 1 from the bottom: one below row N-1-c1 rejects it, one
 * above passes it (as lvl512_body and lvl256_body do on those rows, solver_x86.c). */
static uint32_t prefix_dec(const kctx_t *k) {
  uint32_t f = 0, above = 0;
  for (int y = 0; y < k->y0; y++) {
    if (y == k->y270)
      f |= above & (k->topbit >> 1) ? PF_R270 : k->board[y] == k->topbit >> 1 ? 0 : PF_S270;
    if (y == k->y90) f |= above & 2u ? PF_S90 : k->board[y] == 2u ? 0 : PF_R90;
    above |= k->board[y];
  }
  return f;
}

/* The free columns of row y (0 < y < N-1) under the rules, as solver_ref.c applies them. */
static inline uint32_t row_allowed(const kctx_t *k, int y, uint32_t l, uint32_t d, uint32_t r) {
  uint32_t bm = k->rowmask[y] & ~(l | d | r);
  if (k->side && y == k->bound2) {
    uint32_t sd = d & k->sidemask;
    if (!sd) return 0;
    if (sd != k->sidemask) bm &= k->sidemask;
  }
  return bm;
}

/* A node at row N-2 with masks l, d, r and allowed columns bm (rules applied): count its
 * children (row N-1 nodes) and its solutions. Rows 0..N-3 must be in k->board for the side part.
 * Row N-2 has exactly two free columns f1 < f2 (N-2 queens are placed); placing one leaves the
 * other for row N-1, which is a solution iff no diagonal attacks it. */
static inline void row_n2(kctx_t *k, uint32_t l, uint32_t d, uint32_t r, uint32_t bm) {
  uint32_t f = k->mask & ~d, f1 = f & (0u - f), f2 = f ^ f1;
  int ok1 = (bm & f1) && !(f2 & (((l | f1) << 1) | ((r | f1) >> 1)));
  int ok2 = (bm & f2) && !(f1 & (((l | f2) << 1) | ((r | f2) >> 1)));
  k->nodes += (uint64_t)((bm != 0) + ((bm & (bm - 1)) != 0)); /* at most two bits */
  if (!k->side) {
    k->c8 += (uint64_t)(ok1 + ok2);
    return;
  }
  const int e = k->n - 1;
  if (ok1 && !(f2 & k->lastmask)) {
    k->board[e - 1] = f1;
    k->board[e] = f2;
    nq_side_count(k, k->board);
  }
  if (ok2 && !(f1 & k->lastmask)) {
    k->board[e - 1] = f2;
    k->board[e] = f1;
    nq_side_count(k, k->board);
  }
}

/* A unit whose row y0 is N-1 or N-2: no search, just the node (and its children). */
static void solve_tiny(kctx_t *k, const nq_unit_state_t *st) {
  const int e = k->n - 1;
  k->nodes = 1;
  if (k->y0 == e) {
    uint32_t bm = k->mask & ~(st->left | st->down | st->right);
    if (!bm) return;
    if (!k->side) {
      k->c8 = 1;
    } else if (!(bm & k->lastmask)) {
      k->board[e] = bm;
      nq_side_count(k, k->board);
    }
    return;
  }
  row_n2(k, st->left, st->down, st->right, row_allowed(k, e - 1, st->left, st->down, st->right));
}

/* ---- batched search: chunk buffers, side-part leaves ---- */

/* The chunk buffers live in a per-thread cache (grown when a unit needs more rows, freed when
 * the thread exits), so small units cost no allocation and no page faults. */
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static int cache_key_ok;

typedef struct cache_s {
  void *mem;
  size_t size;
} cache_t;

static void cache_free(void *p) {
  cache_t *c = p;
  if (c) free(c->mem);
  free(c);
}

static void cache_init(void) { cache_key_ok = pthread_key_create(&cache_key, cache_free) == 0; }

/* Chunk buffers for rows y0..N-3, 64-byte aligned. Returns 0 or NQ_ENOMEM. */
static int bctx_alloc(bctx_t *c) {
  int rows = c->k.n - 2 - c->k.y0;
  size_t arr = (size_t)LV_STRIDE * sizeof(uint32_t), need = (size_t)rows * 10 * arr;
  pthread_once(&cache_once, cache_init);
  cache_t *cc = cache_key_ok ? pthread_getspecific(cache_key) : NULL;
  if (!cc || cc->size < need) {
    void *mem = aligned_alloc(64, need);
    if (!mem) return NQ_ENOMEM;
    memset(mem, 0, need); /* loads may read (and ignore) entries past a chunk's end */
    if (!cache_key_ok) {
      c->mem = mem; /* no cache: this call owns it */
    } else {
      if (!cc) {
        cc = calloc(1, sizeof *cc);
        if (!cc || pthread_setspecific(cache_key, cc)) {
          free(cc);
          free(mem);
          return NQ_ENOMEM;
        }
      }
      free(cc->mem);
      cc->mem = mem;
      cc->size = need;
    }
  }
  uint32_t *p = cc ? cc->mem : c->mem;
  for (int y = c->k.y0; y < c->k.n - 2; y++) {
    c->L[y] = p; p += LV_STRIDE;
    c->D[y] = p; p += LV_STRIDE;
    c->R[y] = p; p += LV_STRIDE;
    c->B[y] = p; p += LV_STRIDE;
    c->P[y] = p; p += LV_STRIDE;
  }
  for (int y = c->k.y0; y < c->k.n - 2; y++) { /* the second set (nq_chain_plan) */
    c->aL[y] = p; p += LV_STRIDE;
    c->aD[y] = p; p += LV_STRIDE;
    c->aR[y] = p; p += LV_STRIDE;
    c->aB[y] = p; p += LV_STRIDE;
    c->aP[y] = p; p += LV_STRIDE;
  }
  return 0;
}

/* ---- the table of kernels: the only way this file reaches a variant ---- */

/* One variant of the fast kernel: its name (NQ_KERNEL's value), its CPU feature test (NULL:
 * every CPU this build runs on can) and its search (NULL: not in this build), which starts from
 * the unit's one node on row y0 in c (solve_batched). The variants use the shared kernel code
 * (solver_batch.c) and never this file; indexed by nq_kernel_t, the later entries preferred. */
typedef struct kernel_s {
  const char *name;
  int (*cpu_has)(void);
  void (*search)(bctx_t *c, int y0);
} kernel_t;

static const kernel_t kernels[NQ_KERNEL_COUNT] = {
    [NQ_KERNEL_AUTO] = {"auto", NULL, NULL},
    [NQ_KERNEL_SCALAR] = {"scalar", NULL, nq_scalar_search},
#if NQ_HAVE_X86_SIMD
    [NQ_KERNEL_AVX2] = {"avx2", nq_avx2_cpu_has, nq_avx2_search},
    [NQ_KERNEL_AVX512] = {"avx512", nq_avx512_cpu_has, nq_avx512_search},
#else
    [NQ_KERNEL_AVX2] = {"avx2", NULL, NULL},
    [NQ_KERNEL_AVX512] = {"avx512", NULL, NULL},
#endif
#if NQ_HAVE_NEON
    [NQ_KERNEL_NEON] = {"neon", NULL, nq_neon_search}, /* every ARMv8-A CPU has NEON */
#else
    [NQ_KERNEL_NEON] = {"neon", NULL, NULL},
#endif
};

int nq_fast_kernel_available(nq_kernel_t k) {
  if (k == NQ_KERNEL_AUTO) return 1;
  if ((int)k < 0 || (int)k >= NQ_KERNEL_COUNT || !kernels[k].search) return 0;
  return !kernels[k].cpu_has || kernels[k].cpu_has();
}

const char *nq_fast_kernel_name(nq_kernel_t k) {
  return (int)k >= 0 && (int)k < NQ_KERNEL_COUNT ? kernels[k].name : "?";
}

/* ---- a unit's search ---- */

/* Search a unit with row y0 <= N-3 by chunks. Returns 0 or NQ_ENOMEM. */
static int solve_batched(kctx_t *k, const nq_unit_state_t *st, nq_kernel_t kern) {
  bctx_t cx, *c = &cx;
  c->nq = 0;
  c->leaf_tab = 0;
  c->leaf4 = 0;
  c->pk = 0;
  c->chain270 = c->split270 = 0;
  c->mem = NULL;
  c->k = *k;
  int rc = bctx_alloc(c);
  if (rc) return rc;
  const int y0 = k->y0;
  c->k.nodes = 1;
  /* a dead or blocked node (nq_unit_cut) counts but has no children */
  uint32_t b = nq_unit_cut(st, k->side ? NQ_PART_SIDE : NQ_PART_CORNER, y0, st->left, st->down,
                           st->right, st->board)
                   ? 0
                   : row_allowed(k, y0, st->left, st->down, st->right);
  if (b) {
    c->L[y0][0] = st->left;
    c->D[y0][0] = st->down;
    c->R[y0][0] = st->right;
    c->B[y0][0] = b;
    c->P[y0][0] = !k->side ? 0 : /* the prefix's flags (see PF_90) */
                      (k->bound2 < y0 && k->board[k->bound2] == 1 ? PF_90 : 0) |
                      (k->bound1 < y0 && k->board[k->bound1] == k->topbit ? PF_270 : 0) |
                      prefix_dec(k);
    memset(&c->B[y0][1], 0, 16 * sizeof(uint32_t)); /* the padding */
    kernels[kern].search(c, y0);
  }
  k->nodes = c->k.nodes;
  k->c2 = c->k.c2;
  k->c4 = c->k.c4;
  k->c8 = c->k.c8;
  free(c->mem);
  return 0;
}

/* ---- selection ---- */

static nq_kernel_t best_available(void) {
  for (int i = NQ_KERNEL_COUNT - 1; i > NQ_KERNEL_SCALAR; i--)
    if (nq_fast_kernel_available((nq_kernel_t)i)) return (nq_kernel_t)i;
  return NQ_KERNEL_SCALAR;
}

static atomic_int selected_kernel; /* 0 = not yet decided */

nq_kernel_t nq_fast_kernel_selected(void) {
  int k = atomic_load_explicit(&selected_kernel, memory_order_relaxed);
  if (k) return (nq_kernel_t)k;
  nq_kernel_t want = NQ_KERNEL_AUTO;
  const char *env = nq_switch_get(NQ_SW_KERNEL);
  if (env) {
    for (int i = 1; i < NQ_KERNEL_COUNT; i++)
      if (!strcmp(env, nq_fast_kernel_name((nq_kernel_t)i))) want = (nq_kernel_t)i;
  }
  if (want == NQ_KERNEL_AUTO || !nq_fast_kernel_available(want)) want = best_available();
  atomic_store_explicit(&selected_kernel, (int)want, memory_order_relaxed);
  return want;
}

int nq_fast_kernel_set(nq_kernel_t k) {
  if ((int)k < 0 || (int)k >= NQ_KERNEL_COUNT || !nq_fast_kernel_available(k)) return NQ_ENODEV;
  if (k == NQ_KERNEL_AUTO) k = best_available();
  atomic_store_explicit(&selected_kernel, (int)k, memory_order_relaxed);
  return 0;
}

int nq_fast_solve_unit_kernel(const nq_unit_t *u, nq_counts_t *out, nq_kernel_t kern) {
  nq_unit_state_t st;
  int rc = nq_unit_state(u, &st);
  if (rc) return rc;
  if (kern == NQ_KERNEL_AUTO) kern = best_available();
  if (!nq_fast_kernel_available(kern)) return NQ_ENODEV;
  kctx_t k;
  kctx_init(&k, u, &st);
  if (k.y0 >= k.n - 2) {
    solve_tiny(&k, &st);
  } else {
    rc = solve_batched(&k, &st, kern);
    if (rc) return rc;
  }
  memset(out, 0, sizeof *out);
  out->c2 = k.c2;
  out->c4 = k.c4;
  out->c8 = k.c8;
  out->nodes = k.nodes;
  return 0;
}

int nq_fast_solve_unit(const nq_unit_t *u, nq_counts_t *out) {
  return nq_fast_solve_unit_kernel(u, out, nq_fast_kernel_selected());
}

const char *nq_fast_kernel_in_use(void) {
  return nq_fast_kernel_name(nq_fast_kernel_selected());
}

/* A fast kernel by name (NQ_KERNEL_AUTO for "reference", -1 for an unknown name). */
static int kernel_by_name(const char *name) {
  if (!name) return -1;
  if (!strcmp(name, "reference")) return NQ_KERNEL_AUTO;
  for (int i = 1; i < NQ_KERNEL_COUNT; i++)
    if (!strcmp(name, nq_fast_kernel_name((nq_kernel_t)i))) return i;
  return -1;
}

int nq_kernel_available(const char *name) {
  int k = kernel_by_name(name);
  return k == NQ_KERNEL_AUTO || (k > 0 && nq_fast_kernel_available((nq_kernel_t)k));
}

int nq_fast_kernel_choose(const char *name) {
  if (name && !strcmp(name, "auto")) return nq_fast_kernel_set(NQ_KERNEL_AUTO);
  int k = kernel_by_name(name);
  return k > 0 ? nq_fast_kernel_set((nq_kernel_t)k) : NQ_ENODEV;
}

int nq_solve_unit_named(const nq_unit_t *u, const char *name, nq_counts_t *out) {
  int k = kernel_by_name(name);
  if (k < 0 || !nq_kernel_available(name)) return NQ_ENODEV;
  if (k == NQ_KERNEL_AUTO) return nq_ref_solve_unit(u, out);
  return nq_fast_solve_unit_kernel(u, out, (nq_kernel_t)k);
}
