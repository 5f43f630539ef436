/* nq: the fast kernel's portable variant, scalar: the row-batched search of solver_fast.c in plain
 * C, one child per step and no data-dependent branches, on any CPU. It uses the shared kernel
 * code (solver_batch.c, solver_batch.h) and is reached only through solver_fast.c's table of
 * kernels (nq_scalar_search). */
#include "solver_batch.h"

#include <stddef.h>
#include <stdint.h>

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
  /* nq-solver-4's blocked children (nq_unit_blocked) */
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
void nq_scalar_search(bctx_t *c, int y0) {
  nq_chain_plan(c);
  if (c->k.side) lvls_side(c, y0, 1); else lvls_corner(c, y0, 1);
}
