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
 * PF_270's subtrees are searched apart for them, nq_chain_plan) and the blocked nodes of rows N-5
 * and N-4 (nq_unit_blocked, look_step: the steps of rows N-6 and N-5 test every child). When a
 * chunk fills, the next row is searched (recursively) before going on, so memory stays bounded
 * (LV_CAP nodes per row and two sets of them, cached per thread). A child on row N-2 is never
 * stored: its children (row N-1) are counted with a popcount and its solutions found from
 * its two free columns. The SIMD variants go further: a row N-3 chunk is read linearly and each
 * node's rows N-2 and N-1 (nodes and solutions) come at once from its three free columns (avx512:
 * two small tables, leaf512_tab; avx2: lane masks, leaf256_tab), and the avx512 variant does the
 * same for row N-4 chunks (leaf512_four).
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
 * lane permutations from lookup tables), both in solver_x86.c, and scalar (portable C, any CPU),
 * here with what they share (types in solver_batch.h). The variant is chosen at run
 * time (__builtin_cpu_supports; NQ_KERNEL in the environment may ask for another); SIMD code is
 * compiled with function-level target attributes, so the rest of the build needs no -m flags.
 */
#include "solver_batch.h"

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

/* Rotation check of a complete side-part board (rows 0..N-1 in b): 0 when the board is not its
 * orbit's representative, else the orbit size class 2, 4 or 8. Same as ref_check. */
static int side_class(const kctx_t *k, const uint32_t *b) {
  int e = k->n - 1, own, you;
  uint32_t bit, ptn;
  if (b[k->bound2] == 1) {
    for (ptn = 2, own = 1; own <= e; own++, ptn <<= 1) {
      bit = 1;
      for (you = e; b[you] != ptn && b[own] >= bit; you--) bit <<= 1;
      if (b[own] > bit) return 0;
      if (b[own] < bit) break;
    }
    if (own > e) return 2;
  }
  if (b[e] == k->endbit) {
    for (you = e - 1, own = 1; own <= e; own++, you--) {
      bit = 1;
      for (ptn = k->topbit; ptn != b[you] && b[own] >= bit; ptn >>= 1) bit <<= 1;
      if (b[own] > bit) return 0;
      if (b[own] < bit) break;
    }
    if (own > e) return 4;
  }
  if (b[k->bound1] == k->topbit) {
    for (ptn = k->topbit >> 1, own = 1; own <= e; own++, ptn >>= 1) {
      bit = 1;
      for (you = 0; b[you] != ptn && b[own] >= bit; you++) bit <<= 1;
      if (b[own] > bit) return 0;
      if (b[own] < bit) break;
    }
  }
  return 8;
}

static void side_count(kctx_t *k, const uint32_t *b) {
  switch (side_class(k, b)) {
  case 2: k->c2++; break;
  case 4: k->c4++; break;
  case 8: k->c8++; break;
  default: break;
  }
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
    side_count(k, k->board);
  }
  if (ok2 && !(f1 & k->lastmask)) {
    k->board[e - 1] = f2;
    k->board[e] = f1;
    side_count(k, k->board);
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
      side_count(k, k->board);
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

/* Rebuild the boards of the queued side-part solutions and classify them. Each board is found
 * by walking up the parent indices from its row N-3 node (row N-4 with leaf512_four, c->leaf4);
 * the walks are done side by side, row by row, so their (dependent, cache-missing) loads overlap.
 * Must run before the chunk they point into is overwritten: the search of that row flushes the
 * queue before it returns. */
void nq_side_flush(bctx_t *c) {
  kctx_t *k = &c->k;
  const int e = k->n - 1, nq = c->nq;
  for (int j = 0; j < nq; j++) {
    uint32_t *b = c->q_board[j];
    memcpy(b, k->board, (size_t)k->y0 * sizeof *b); /* rows < y0 */
    if (c->leaf4) b[e - 3] = c->q_c3[j];
    b[e - 2] = c->q_bit[j];
    b[e - 1] = c->q_c2[j];
    b[e] = c->q_c1[j];
  }
  for (int y = c->leaf4 ? e - 3 : e - 2; y > k->y0; y--) {
    const uint32_t *P = c->P[y], *D = c->D[y], *Dup = c->D[y - 1];
    for (int j = 0; j < nq; j++) {
      uint32_t idx = c->q_idx[j];
      uint32_t par = c->pk ? c->L[y][idx] >> PK_SH : P[idx] & P_IDX;
      c->q_board[j][y - 1] = (D[idx] ^ Dup[par]) & k->mask;
      c->q_idx[j] = par;
    }
  }
  for (int j = 0; j < nq; j++) side_count(k, c->q_board[j]);
  c->nq = 0;
}

void nq_swap_sets(bctx_t *c, int y) {
  for (int r = y; r < c->k.n - 2; r++) {
    uint32_t *t;
    t = c->L[r], c->L[r] = c->aL[r], c->aL[r] = t;
    t = c->D[r], c->D[r] = c->aD[r], c->aD[r] = t;
    t = c->R[r], c->R[r] = c->aR[r], c->aR[r] = t;
    t = c->B[r], c->B[r] = c->aB[r], c->aB[r] = t;
    t = c->P[r], c->P[r] = c->aP[r], c->aP[r] = t;
  }
}

void nq_chain_plan(bctx_t *c) {
  const kctx_t *k = &c->k;
  if (!k->side) return;
  if (k->bound1 >= k->y0)
    c->split270 = k->bound1 < k->p270hi;
  else
    c->chain270 = k->p270lo <= k->p270hi && (c->P[k->y0][0] & PF_270);
}

/* ---- batched search, scalar: one child per step, no data-dependent branches ---- */

static void lvls_corner(bctx_t *c, int y, int n);
static void lvls_side(bctx_t *c, int y, int n);
static void lvls_chain(bctx_t *c, int y, int n);

#define SR_B 1 /* lvls_body's RULES: see lvls_side */
#define SR_P 2
#define SR_D 4
#define SR_L 8 /* blocked children (look_step), either part */

/* One chunk of row y, scalar. A worker holds one parent (index cur) and the columns it has left
 * (b); each step takes the lowest of them. The next parent's free columns are loaded one step
 * ahead, so when the last column is taken the switch is a select instead of a load: the
 * loop-carried chain is b -> b & (b - 1) -> select, a few cycles, and the loads of the parent's
 * masks (which depend only on cur) leave it. Above the leaf level two workers, each over its
 * own half of the chunk, run interleaved, so that one's chain overlaps the other's work. The
 * only branches are the loops' own, the chunk flush, the leaf level's switch to the next parent
 * (mostly predictable there, see SNEXT_BRANCH) and a side-part solution. */
static inline __attribute__((always_inline)) void lvls_body(bctx_t *c, int y, int n,
                                                            const int SIDE, const int RULES) {
  kctx_t *k = &c->k;
  const int yc = y + 1;
  const uint32_t *in = c->L[y];
  const uint32_t rowm = k->rowmask[yc], sidem = k->sidemask, topbit = k->topbit;
  const int RB = RULES & SR_B;
  const int b2row = RB && yc == k->bound2;
  const int f90row = RB && y == k->bound2, f270row = RB && y == k->bound1;
  /* nq-solver-2's dead children (see kctx_t): the first steps that reject are kept in the P
   * word (PF_R90, PF_R270) from their rows down to the flag's row */
  const int d90row = (RULES & SR_D) && y == k->y90 && y <= k->n - 5;
  const int d270row = (RULES & SR_D) && y == k->y270 && y <= k->n - 5;
  const int pr90 = (RULES & SR_D) && y == k->p90;
  /* PF_270's dead children: on rows < c1 (SR_P) column N-2 taken, on row max(BOUND1, c1) (SR_D)
   * the rejecting first step kept in PF_R270 */
  const int pr270 = (RULES & SR_P) && prune270_row(k, y) && y < k->c1;
  const int pr270r = (RULES & SR_D) && prune270_row(k, y) && y >= k->c1;
  const uint32_t coln2 = topbit >> 1;
  /* nq-solver-3's blocked children (nq_unit_blocked) */
  const int look = (RULES & SR_L) && look_step(k, y);
  const uint32_t lookm = k->mask, lookl = SIDE ? k->lastmask : 0;
  const int lookj = k->n - 1 - yc;
  /* row BOUND1's children with PF_270 go to the second set of arrays (nq_chain_plan) */
  const int split = f270row && c->split270 && !c->chain270;
  const size_t end = (size_t)n;
  uint64_t nodes = 0, sols = 0;
  size_t cur = 0;
  uint32_t b = in[AB];

#define SCHILD(CU, BB)                                                                       \
  uint32_t nb = in[CU + 1 + AB]; /* the next parent's columns (the padding after the last) */ \
  uint32_t rest = BB & (BB - 1), bit = BB ^ rest;                                            \
  uint32_t cl = (in[CU + AL] | bit) << 1, cd = in[CU + AD] | bit;                            \
  uint32_t cr = (in[CU + AR] | bit) >> 1;                                                    \
  uint32_t cb = rowm & ~(cl | cd | cr);                                                      \
  if (b2row) {                                                                               \
    uint32_t sd = cd & sidem;                                                                \
    cb = sd == 0 ? 0 : sd != sidem ? cb & sidem : cb;                                        \
  }                                                                                          \
  uint32_t cp = 0;                                                                           \
  if (SIDE) cp = (uint32_t)CU | (in[CU + AP] & (PF_FLAGS | PF_R90 | PF_R270));               \
  if (f90row) cp |= bit == 1 ? PF_90 : 0;                                                    \
  if (f270row) cp |= bit == topbit ? PF_270 : 0;                                             \
  if (d90row) cp |= cd & 2u ? 0 : PF_R90;                                                    \
  if (d270row) cp |= in[CU + AD] & coln2 ? PF_R270 : 0;                                      \
  uint32_t dead = 0;                                                                         \
  if (pr90) dead = (cp & (PF_90 | PF_R90)) == (PF_90 | PF_R90);                              \
  if (pr270) dead |= (cp & cd << (33 - k->n)) >> 31; /* PF_270, column N-2 */               \
  if (pr270r) dead |= (cp & cp << 2) >> 31;          /* PF_270, PF_R270 */                   \
  if (look) dead |= nq_unit_blocked_rows(lookj, ~lookm, lookl, cl, cd, cr);                  \
  nodes++

  /* Next parent when this one is used up. Above the leaf level a parent has several columns
   * and the switch is unpredictable, so it is a select (gcc emits a cmov): no branch, and the
   * next parent's columns are already loaded. On the leaf level 79% of the parents have one
   * column, so the switch is predictable and a branch is faster: it takes the chain through b
   * out of the loop altogether (a branch-free select there made the whole search 1.1x slower). */
#define SNEXT(CU, BB)                                                                        \
  {                                                                                          \
    uint32_t used = rest == 0;                                                               \
    CU += used;                                                                              \
    BB = used ? nb : rest;                                                                   \
  }
#define SNEXT_BRANCH()                                                                       \
  if (__builtin_expect(rest == 0, 1)) {                                                      \
    cur++;                                                                                   \
    b = nb;                                                                                  \
  } else {                                                                                   \
    b = rest;                                                                                \
  }

  /* One step of a worker: its child stored at m. */
#define SSTEP(CU, BB)                                                                        \
  {                                                                                          \
    SCHILD(CU, BB);                                                                          \
    out[m + AL] = cl;                                                                        \
    out[m + AD] = cd;                                                                        \
    out[m + AR] = cr;                                                                        \
    out[m + AB] = cb;                                                                        \
    if (SIDE) out[m + AP] = cp;                                                              \
    uint32_t kp = (cb != 0) & (dead ^ 1u);                                                   \
    if (split) {                                                                             \
      uint32_t f = bit == topbit;                                                            \
      out2[m2 + AL] = cl;                                                                    \
      out2[m2 + AD] = cd;                                                                    \
      out2[m2 + AR] = cr;                                                                    \
      out2[m2 + AB] = cb;                                                                    \
      out2[m2 + AP] = cp;                                                                    \
      m2 += kp & f;                                                                          \
      kp &= f ^ 1u;                                                                          \
    }                                                                                        \
    m += kp;                                                                                 \
    SNEXT(CU, BB)                                                                            \
  }
#define SFLUSH(AT)                                                                           \
  if (m > LV_CAP - (AT)) {                                                                   \
    out[AB + m] = 0;                                                                         \
    if (SIDE) lvls_side(c, yc, (int)m); else lvls_corner(c, yc, (int)m);                     \
    m = 0;                                                                                   \
  }                                                                                          \
  if (split && m2 > LV_CAP - (AT)) {                                                         \
    out2[AB + m2] = 0;                                                                       \
    lvls_chain(c, yc, (int)m2);                                                              \
    m2 = 0;                                                                                  \
  }

  if (yc == k->n - 2) {
    /* Children on row N-2: done in place (see row_n2). */
    const uint32_t mask = k->mask, lastm = SIDE ? k->lastmask : 0, endbit = k->endbit;
    const int b2last = RULES && k->bound2 == k->n - 2;
    do {
      SCHILD(cur, b);
      (void)dead; /* children on row N-2: never dead (rows <= N-4 only) */
      uint32_t f = mask & ~cd, f1 = f & (0u - f), f2 = f ^ f1;
      /* cb has at most two bits (two free columns): no popcount instruction needed */
      nodes += (uint64_t)((cb != 0) + ((cb & (cb - 1)) != 0));
      /* A queen on one free column leaves the other for row N-1: a solution iff that one is
       * not attacked by the rows above (g), the two columns are not adjacent and (side part)
       * the last row may use it (LASTMASK), so the side part branches on solutions only. */
      uint32_t g = f & ~((cl << 1) | (cr >> 1) | lastm) & (f2 == f1 << 1 ? 0u : ~0u);
      uint32_t ok1 = ((cb & f1) != 0) & ((g & f2) != 0);
      uint32_t ok2 = ((cb & f2) != 0) & ((g & f1) != 0);
      if (!SIDE) {
        sols += ok1 + ok2;
      } else if (__builtin_expect(ok1 | ok2, 0)) {
        int fl = (cp & PF_FLAGS) != 0;
        if (ok1) {
          if (fl || f2 == endbit || (b2last && f1 == 1))
            side_leaf(c, cp, bit, f1, f2);
          else
            sols++;
        }
        if (ok2) {
          if (fl || f1 == endbit || (b2last && f2 == 1))
            side_leaf(c, cp, bit, f2, f1);
          else
            sols++;
        }
      }
      SNEXT_BRANCH()
    } while (cur < end);
    k->c8 += sols;
    if (SIDE && c->nq) nq_side_flush(c); /* before this chunk is overwritten */
    k->nodes += nodes;
    return;
  }

  uint32_t *out = c->L[yc], *out2 = c->aL[yc];
  size_t m = 0, m2 = 0;
  if (end >= 16) { /* smaller chunks (the rows near the unit's top) are not worth two workers */
    size_t mid = end / 2, cur2 = mid;
    uint32_t b2 = in[mid + AB];
    do {
      SSTEP(cur, b)
      SSTEP(cur2, b2)
      SFLUSH(2)
    } while (cur < mid && cur2 < end);
    while (cur < mid) { /* its look-ahead at mid - 1 reads a parent it never takes */
      SSTEP(cur, b)
      SFLUSH(1)
    }
    cur = cur2;
    b = b2;
  }
  while (cur < end) {
    SSTEP(cur, b)
    SFLUSH(1)
  }
  if (m) {
    out[AB + m] = 0;
    if (SIDE) lvls_side(c, yc, (int)m); else lvls_corner(c, yc, (int)m);
  }
  if (m2) {
    out2[AB + m2] = 0;
    lvls_chain(c, yc, (int)m2);
  }
  k->nodes += nodes;
#undef SCHILD
#undef SNEXT
#undef SNEXT_BRANCH
#undef SSTEP
#undef SFLUSH
}

static void lvls_corner(bctx_t *c, int y, int n) {
  if (look_step(&c->k, y))
    lvls_body(c, y, n, 0, SR_L);
  else
    lvls_body(c, y, n, 0, 0);
}
/* The side part's rows with a rule of their own (BOUND2's cut, the flags of rows BOUND1 and
 * BOUND2: SR_B; the flags' rejecting first steps and PF_90's dead children, rows <= N-5: SR_D;
 * PF_270's dead children, on rows that can be many: SR_P) get their own copy of the loop, so
 * the other rows pay nothing for them. */
static __attribute__((noinline)) void lvls_side0(bctx_t *c, int y, int n) {
  lvls_body(c, y, n, 1, 0);
}
static __attribute__((noinline)) void lvls_sidep(bctx_t *c, int y, int n) {
  lvls_body(c, y, n, 1, SR_P);
}
static __attribute__((noinline)) void lvls_sided(bctx_t *c, int y, int n) {
  lvls_body(c, y, n, 1, SR_D);
}
void nq_chain_search(bctx_t *c, int y, int n, void (*side)(bctx_t *c, int y, int n)) {
  nq_swap_sets(c, y);
  c->chain270 = 1;
  side(c, y, n);
  c->chain270 = 0;
  nq_swap_sets(c, y);
}

/* A chunk of PF_270's subtrees (nq_chain_plan). */
static void lvls_chain(bctx_t *c, int y, int n) { nq_chain_search(c, y, n, lvls_side); }

static void lvls_side(bctx_t *c, int y, int n) {
  const kctx_t *k = &c->k;
  int r = (y == k->bound1 || y == k->bound2 || y + 1 == k->bound2 ? SR_B : 0) |
          /* the rows whose rejecting first step a dead child needs (see prune_plan) */
          ((k->p90 >= 0 && (y == k->p90 || y == k->y90)) ||
                   (k->p270lo <= k->p270hi && y == k->c1 && y <= k->n - 5) ||
                   (prune270_row(k, y) && y >= k->c1)
               ? SR_D
               : 0) |
          (prune270_row(k, y) && y < k->c1 && (c->chain270 || y == k->bound1)
               ? SR_P
               : 0) |
          (look_step(k, y) ? SR_L : 0);
  switch (r) {
  case 0: lvls_side0(c, y, n); break;
  case SR_P: lvls_sidep(c, y, n); break;
  case SR_D: lvls_sided(c, y, n); break;
  case SR_B: lvls_body(c, y, n, 1, SR_B); break;
  case SR_L: lvls_body(c, y, n, 1, SR_L); break;
  default: lvls_body(c, y, n, 1, SR_B | SR_D | SR_P | SR_L); break;
  }
}

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
    switch (kern) {
#if NQ_HAVE_X86_SIMD
    case NQ_KERNEL_AVX512:
    case NQ_KERNEL_AVX2:
      nq_x86_search(c, y0, kern);
      break;
#endif
#if NQ_HAVE_NEON
    case NQ_KERNEL_NEON:
      nq_neon_search(c, y0);
      break;
#endif
    default:
      nq_chain_plan(c);
      if (k->side) lvls_side(c, y0, 1); else lvls_corner(c, y0, 1);
      break;
    }
  }
  k->nodes = c->k.nodes;
  k->c2 = c->k.c2;
  k->c4 = c->k.c4;
  k->c8 = c->k.c8;
  free(c->mem);
  return 0;
}

/* ---- selection ---- */

int nq_fast_kernel_available(nq_kernel_t k) {
  switch (k) {
  case NQ_KERNEL_AUTO:
  case NQ_KERNEL_SCALAR: return 1;
  case NQ_KERNEL_AVX2:
  case NQ_KERNEL_AVX512: return nq_x86_cpu_has(k);
  case NQ_KERNEL_NEON: return NQ_HAVE_NEON; /* every ARMv8-A CPU has it */
  default: return 0;
  }
}

const char *nq_fast_kernel_name(nq_kernel_t k) {
  switch (k) {
  case NQ_KERNEL_AUTO: return "auto";
  case NQ_KERNEL_SCALAR: return "scalar";
  case NQ_KERNEL_AVX2: return "avx2";
  case NQ_KERNEL_AVX512: return "avx512";
  case NQ_KERNEL_NEON: return "neon";
  default: return "?";
  }
}

static nq_kernel_t best_available(void) {
  if (nq_fast_kernel_available(NQ_KERNEL_AVX512)) return NQ_KERNEL_AVX512;
  if (nq_fast_kernel_available(NQ_KERNEL_AVX2)) return NQ_KERNEL_AVX2;
  if (nq_fast_kernel_available(NQ_KERNEL_NEON)) return NQ_KERNEL_NEON;
  return NQ_KERNEL_SCALAR;
}

static atomic_int selected_kernel; /* 0 = not yet decided */

nq_kernel_t nq_fast_kernel_selected(void) {
  int k = atomic_load_explicit(&selected_kernel, memory_order_relaxed);
  if (k) return (nq_kernel_t)k;
  nq_kernel_t want = NQ_KERNEL_AUTO;
  const char *env = getenv("NQ_KERNEL");
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

/* The kernels' switches (solver_simd.h): state() is 1 where the switch cannot be on, 2 on, 3 off. */
static int switch_set(int (*state)(void), void (*set)(int), int on) {
  if (state() == 1) return on ? NQ_ENODEV : 0;
  set(on);
  return 0;
}

int nq_fast_leaf_table_set(int on) {
  return switch_set(nq_x86_leaf_state, nq_x86_leaf_state_set, on);
}
int nq_fast_leaf_table_in_use(void) { return nq_x86_leaf_state() == 2; }

int nq_fast_leaf_four_set(int on) {
  return switch_set(nq_x86_leaf4_state, nq_x86_leaf4_state_set, on);
}
int nq_fast_leaf_four_in_use(void) { return nq_x86_leaf4_state() == 2; }

int nq_fast_flag_decide_set(int on) {
  return switch_set(nq_x86_flagdec_state, nq_x86_flagdec_state_set, on);
}
int nq_fast_flag_decide_in_use(void) { return nq_x86_flagdec_state() == 2; }

int nq_fast_leaf_avx2_set(int on) {
  return switch_set(nq_x86_leaf2_state, nq_x86_leaf2_state_set, on);
}
int nq_fast_leaf_avx2_in_use(void) { return nq_x86_leaf2_state() == 2; }

int nq_fast_side_pack_set(int on) {
  return switch_set(nq_x86_pack_state, nq_x86_pack_state_set, on);
}
int nq_fast_side_pack_in_use(void) { return nq_x86_pack_state() == 2; }

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

int nq_solve_unit_named(const nq_unit_t *u, const char *name, nq_counts_t *out) {
  int k = kernel_by_name(name);
  if (k < 0 || !nq_kernel_available(name)) return NQ_ENODEV;
  if (k == NQ_KERNEL_AUTO) return nq_ref_solve_unit(u, out);
  return nq_fast_solve_unit_kernel(u, out, (nq_kernel_t)k);
}
