/* nq: the fast kernel's x86-64 SIMD variants, avx512 (with its row N-3 tables) and avx2. The search
 * they run is described in solver_fast.c, which picks the variant through its table of kernels
 * (nq_avx512_search, nq_avx2_search and their CPU tests here); they use the shared kernel code
 * (solver_batch.c: the side part's rotation check and board rebuild, PF_270's subtrees) and the
 * helpers in solver_batch.h, and never call solver_fast.c. This file also owns their switches
 * (nq_fast_leaf_table_set and the others of solver_simd.h). The code is compiled with
 * function-level target attributes, so the build needs no -m flags, and runs only where
 * nq_avx512_cpu_has / nq_avx2_cpu_has say the CPU can. */
#include "solver_batch.h"

#include "nq/switches.h"
#include "nq/nq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- batched search, x86-64 SIMD ---- */

#if NQ_HAVE_X86_SIMD

#include <immintrin.h>

#define T512 __attribute__((target("avx512f,avx512vl,avx512bw,bmi,bmi2,popcnt")))
#define T256 __attribute__((target("avx2,bmi,bmi2,popcnt")))

static T512 void lvl512_corner(bctx_t *c, int y, int n);
static T512 void lvl512_side(bctx_t *c, int y, int n);
static T512 void lvl512_sidepk(bctx_t *c, int y, int n);
static T512 void chain270(bctx_t *c, int y, int n);
static void leaf512_tab(bctx_t *c, int y, int n);
static void leaf512_four(bctx_t *c, int y, int n);

/* Independent lane groups per chunk: each takes its own slice of the chunk's nodes, so the
 * groups' dependency chains (test -> refill -> lowest bit) overlap instead of queueing. */
#define NS512 2

/* A side-part row's rules of its own (the RULES of lvl512_body; see rules_row). */
#define RULE_B 1   /* BOUND2's cut (on the row below), the flags of rows BOUND1 and BOUND2 */
#define RULE_DEC 2 /* the flags' first step decided (k->y90, k->y270, k->ylate) */
#define RULE_P 4   /* a step that can make a child dead (k->p90, k->p270lo..p270hi) */
#define RULE_LA 8  /* a step whose children may be blocked (look_step; either part) */

/* One chunk of row y (n > 0 nodes, all with free columns): search it and, through recursion,
 * everything below it. SIDE (0 corner part, 1 side part, 2 side part with packed words) and
 * RULES (the row has a rule of its own: see rules_row) are compile-time constants after inlining.
 *
 * The stores are what a step pays most for (one more 16-lane store of the children made the
 * search 1.07x slower, one more compress 1.01x): so where the columns leave room (N <= PK_SH),
 * the side part's P word is not an array of its own but rides in the spare bits of L and D, and
 * a step stores three vectors instead of four (1.04-1.09x, docs/performance.md).
 *
 * The refill is the loop's critical path (a lane's last column taken -> the lane is refilled ->
 * its next column), so it stays in the mask registers (knot/kor, no round trip through a
 * general register) and does not load the nodes' free columns: they are recomputed from l, d, r
 * (one ternlog), which also saves storing them. Measured against the previous kernel: 1.09x
 * (AVX-512, N = 17, docs/performance.md). */
static inline __attribute__((always_inline)) T512 void lvl512_body(bctx_t *c, int y, int n,
                                                                    const int SIDE,
                                                                    const int RULES) {
  kctx_t *k = &c->k;
  const int yc = y + 1;
  if (y == k->n - 4 && c->leaf4) {
    leaf512_four(c, y, n);
    return;
  }
  const uint32_t *iL = c->L[y], *iD = c->D[y], *iR = c->R[y], *iP = c->P[y];
  const __m512i zero = _mm512_setzero_si512();
  const __m512i pflags = _mm512_set1_epi32((int)PF_FLAGS);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i topv = _mm512_set1_epi32((int)k->topbit);
  const int f90row = (RULES & RULE_B) && y == k->bound2;
  const int f270row = (RULES & RULE_B) && y == k->bound1;
  /* the rows that decide the flags' first step (PF_S90) */
  const int d90row = (RULES & RULE_DEC) && y == k->y90;
  const int d270row = (RULES & RULE_DEC) && y == k->y270;
  const int late90 = (RULES & RULE_DEC) && y == k->ylate && (k->late & 1);
  const int late270 = (RULES & RULE_DEC) && y == k->ylate && (k->late & 2);
  /* nq-solver-2's dead children (see kctx_t) */
  const int pr90 = (RULES & RULE_P) && y == k->p90;
  const int pr270 = (RULES & RULE_P) && prune270_row(k, y);
  const int pr270d = pr270 && y < k->c1;
  /* nq-solver-4's blocked children (nq_unit_blocked): rows yc+1..N-1 below them */
  const int look = (RULES & RULE_LA) && look_step(k, y), lookj = k->n - 1 - yc;
  const __m512i notmask = _mm512_set1_epi32((int)~k->mask);
  const __m512i notlast = _mm512_set1_epi32((int)(~k->mask | (SIDE ? k->lastmask : 0)));
  const __m512i pfall = _mm512_set1_epi32((int)(PF_FLAGS | PF_DEC));
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i rowm = _mm512_set1_epi32((int)k->rowmask[yc]);
  const __m512i sidem = _mm512_set1_epi32((int)k->sidemask);
  const int b2row = (RULES & RULE_B) && yc == k->bound2;
  /* this row's rules, to recompute a parent's free columns (a stored node has some, so the
   * BOUND2 row's "none of the side columns" case cannot occur) */
  const __m512i rowy = _mm512_set1_epi32((int)k->rowmask[y]);
  const int b2here = (RULES & RULE_B) && y == k->bound2;
  /* SIDE == 2: no P array; the flags ride in D, the parent's index in L (see PK_SH) */
  const int PK = SIDE == 2;
  const __m512i lowm = _mm512_set1_epi32((int)((1u << PK_SH) - 1));
  const __m512i iotapk = _mm512_slli_epi32(iota, PK_SH);
  __m512i wl[NS512], wd[NS512], wr[NS512], wb[NS512], wp[NS512];
  int cur[NS512], end[NS512];
  uint64_t nodes = 0;
  for (int s = 0; s < NS512; s++) {
    wl[s] = wd[s] = wr[s] = wb[s] = wp[s] = zero;
    cur[s] = (int)((int64_t)n * s / NS512);
    end[s] = (int)((int64_t)n * (s + 1) / NS512);
  }

  /* Refill the empty lanes of every group from its slice; act[s] = lanes with a parent. */
#define REFILL512()                                                                          \
  __mmask16 act[NS512];                                                                      \
  __mmask16 live = 0;                                                                        \
  _Pragma("GCC unroll 4") for (int s = 0; s < NS512; s++) {                                  \
    act[s] = _mm512_test_epi32_mask(wb[s], wb[s]);                                           \
    if (cur[s] < end[s]) {                                                                   \
      __mmask16 em = _knot_mask16(act[s]);                                                   \
      int avail = end[s] - cur[s];                                                           \
      if (__builtin_expect(avail < 16, 0))                                                   \
        em = (__mmask16)_pdep_u32((1u << avail) - 1, _cvtmask16_u32(em));                   \
      const int at = cur[s];                                                                 \
      wl[s] = _mm512_mask_expand_epi32(wl[s], (__mmask16)em, _mm512_loadu_si512(iL + at));   \
      wd[s] = _mm512_mask_expand_epi32(wd[s], (__mmask16)em, _mm512_loadu_si512(iD + at));   \
      wr[s] = _mm512_mask_expand_epi32(wr[s], (__mmask16)em, _mm512_loadu_si512(iR + at));   \
      {                                                                                      \
        /* a stored node's free columns are recomputed, not stored */                        \
        __m512i nb = _mm512_ternarylogic_epi32(rowy, _mm512_or_si512(wl[s], wd[s]), wr[s], 0x10); \
        if (b2here) {                                                                        \
          __m512i sd = _mm512_and_si512(wd[s], sidem);                                       \
          __mmask16 part = _mm512_cmpneq_epi32_mask(sd, sidem);                              \
          nb = _mm512_mask_and_epi32(nb, part, nb, sidem);                                   \
        }                                                                                    \
        wb[s] = _mm512_mask_mov_epi32(wb[s], (__mmask16)em, nb);                             \
      }                                                                                      \
      if (PK) {                                                                              \
        wp[s] = _mm512_mask_expand_epi32(                                                    \
            wp[s], (__mmask16)em,                                                            \
            _mm512_add_epi32(iotapk, _mm512_set1_epi32((int)((unsigned)at << PK_SH))));      \
      } else if (SIDE)                                                                       \
        wp[s] = _mm512_mask_expand_epi32(                                                    \
            wp[s], (__mmask16)em,                                                            \
            _mm512_ternarylogic_epi32(_mm512_add_epi32(iota, _mm512_set1_epi32(at)),          \
                                      _mm512_loadu_si512(iP + at), pfall, 0xf8));            \
      cur[s] = at + __builtin_popcount(_cvtmask16_u32(em));                                  \
      act[s] = _kor_mask16(act[s], em);                                                      \
    }                                                                                        \
    live = _kor_mask16(live, act[s]);                                                        \
  }                                                                                          \
  if (_kortestz_mask16_u8(live, live)) break;

  /* Each lane's parent takes its lowest free column: the child's masks and allowed columns. */
#define CHILD512(s)                                                                          \
  __m512i bit = _mm512_and_si512(wb[s], _mm512_sub_epi32(zero, wb[s]));                      \
  wb[s] = _mm512_xor_si512(wb[s], bit);                                                      \
  __m512i cp = PK ? _mm512_and_si512(wd[s], pfall) : wp[s];                                  \
  if (f90row)                                                                                \
    cp = _mm512_mask_or_epi32(cp, _mm512_cmpeq_epi32_mask(bit, one), cp,                     \
                              _mm512_set1_epi32((int)PF_90));                                \
  if (f270row)                                                                               \
    cp = _mm512_mask_or_epi32(cp, _mm512_cmpeq_epi32_mask(bit, topv), cp,                    \
                              _mm512_set1_epi32((int)PF_270));                               \
  /* column 1 (PF_90's check) or N-2 (PF_270's) taken above this row, on it, or below; on the \
   * last row above the leaves, for a check decided on a leaf row, taken above the leaves     \
   * passes PF_90's check (rejects PF_270's) */                                              \
  if (d90row || late90) {                                                                    \
    const __m512i c1v = _mm512_set1_epi32(2), wdb = _mm512_or_si512(wd[s], bit);              \
    cp = _mm512_mask_or_epi32(cp, _mm512_test_epi32_mask(late90 ? wdb : wd[s], c1v), cp,      \
                              _mm512_set1_epi32((int)PF_S90));                               \
    if (d90row)                                                                              \
      cp = _mm512_mask_or_epi32(cp, _mm512_testn_epi32_mask(wdb, c1v), cp,                   \
                                _mm512_set1_epi32((int)PF_R90));                             \
  }                                                                                          \
  if (d270row || late270) {                                                                  \
    const __m512i cnv = _mm512_set1_epi32((int)(k->topbit >> 1));                             \
    const __m512i wdb = _mm512_or_si512(wd[s], bit);                                         \
    cp = _mm512_mask_or_epi32(cp, _mm512_test_epi32_mask(late270 ? wdb : wd[s], cnv), cp,     \
                              _mm512_set1_epi32((int)PF_R270));                              \
    if (d270row)                                                                             \
      cp = _mm512_mask_or_epi32(cp, _mm512_testn_epi32_mask(wdb, cnv), cp,                   \
                                _mm512_set1_epi32((int)PF_S270));                            \
  }                                                                                          \
  __m512i cl = _mm512_slli_epi32(_mm512_or_si512(wl[s], bit), 1);                            \
  /* packed: the child's D word carries its flags, its L word its parent's index (the masks \
   * below drop them) */                                                                     \
  if (PK) cl = _mm512_ternarylogic_epi32(cl, lowm, wp[s], 0xea);                              \
  __m512i cd = PK ? _mm512_ternarylogic_epi32(wd[s], bit, cp, 0xfe)                          \
                  : _mm512_or_si512(wd[s], bit);                                             \
  __m512i cr = _mm512_srli_epi32(_mm512_or_si512(wr[s], bit), 1);                            \
  /* rowmask & ~(cl | cd | cr) */                                                            \
  __m512i cb = _mm512_ternarylogic_epi32(rowm, _mm512_or_si512(cl, cd), cr, 0x10);           \
  __mmask16 dead = 0;                                                                        \
  if (pr90)                                                                                  \
    dead = _mm512_mask_test_epi32_mask(_mm512_test_epi32_mask(cp, _mm512_set1_epi32((int)PF_90)), \
                                       cp, _mm512_set1_epi32((int)PF_R90));                  \
  if (pr270)                                                                                 \
    dead |= _mm512_mask_test_epi32_mask(                                                     \
        _mm512_test_epi32_mask(cp, _mm512_set1_epi32((int)PF_270)), pr270d ? cd : cp,         \
        _mm512_set1_epi32((int)(pr270d ? k->topbit >> 1 : PF_R270)));                        \
  /* blocked: a row below with no open column, or a free column open on no row (the packed \
   * bits of L and D lie outside the board, under notmask) */                               \
  if (look) {                                                                                \
    const __m512i x0 = _mm512_or_si512(cd, notmask);                                         \
    __m512i open = _mm512_ternarylogic_epi32(x0, cl, cr, 0x01);                              \
    _Pragma("GCC unroll 8") for (int j = 1; j <= NQ_UNIT_LOOK_MAX; j++) {                    \
      if (j > lookj) break;                                                                  \
      __m512i o = _mm512_ternarylogic_epi32(j == lookj ? _mm512_or_si512(cd, notlast) : x0,   \
                                            _mm512_slli_epi32(cl, j), _mm512_srli_epi32(cr, j), \
                                            0x01);                                           \
      dead |= _mm512_testn_epi32_mask(o, o);                                                 \
      open = _mm512_or_si512(open, o);                                                       \
    }                                                                                        \
    open = _mm512_ternarylogic_epi32(x0, open, open, 0x01);                                  \
    dead |= _mm512_test_epi32_mask(open, open);                                              \
  }                                                                                          \
  if (b2row) {                                                                               \
    __m512i sd = _mm512_and_si512(cd, sidem);                                                \
    __mmask16 none = _mm512_testn_epi32_mask(sd, sd);                                        \
    __mmask16 part = _mm512_cmpneq_epi32_mask(sd, sidem) & (__mmask16)~none;                 \
    cb = _mm512_maskz_mov_epi32((__mmask16)~none, cb);                                       \
    cb = _mm512_mask_and_epi32(cb, part, cb, sidem);                                         \
  }                                                                                          \
  nodes += (uint64_t)__builtin_popcount(act[s])

  if (yc == k->n - 2) {
    if (c->leaf_tab) {
      leaf512_tab(c, y, n);
      return;
    }
    /* Children on row N-2: done in place (see row_n2). */
    const __m512i maskv = _mm512_set1_epi32((int)k->mask);
    const __m512i lastm = _mm512_set1_epi32((int)k->lastmask);
    const __m512i endv = _mm512_set1_epi32((int)k->endbit);
    const int b2last = k->bound2 == k->n - 2;
    uint64_t sols = 0;
    for (;;) {
      REFILL512()
      _Pragma("GCC unroll 4") for (int s = 0; s < NS512; s++) {
        CHILD512(s);
        (void)dead; /* children on row N-2: never dead (rows <= N-4 only) */
        __mmask16 k1 = _mm512_mask_test_epi32_mask(act[s], cb, cb);
        __mmask16 k2 = _mm512_mask_test_epi32_mask(k1, cb, _mm512_sub_epi32(cb, one));
        nodes += (uint64_t)(__builtin_popcount(k1) + __builtin_popcount(k2));
        __m512i f = _mm512_andnot_si512(cd, maskv);
        __m512i f1 = _mm512_and_si512(f, _mm512_sub_epi32(zero, f));
        __m512i f2 = _mm512_xor_si512(f, f1);
        __m512i a1 = _mm512_or_si512(_mm512_slli_epi32(_mm512_or_si512(cl, f1), 1),
                                     _mm512_srli_epi32(_mm512_or_si512(cr, f1), 1));
        __m512i a2 = _mm512_or_si512(_mm512_slli_epi32(_mm512_or_si512(cl, f2), 1),
                                     _mm512_srli_epi32(_mm512_or_si512(cr, f2), 1));
        __mmask16 ok1 =
            _mm512_mask_testn_epi32_mask(_mm512_mask_test_epi32_mask(k1, cb, f1), a1, f2);
        __mmask16 ok2 =
            _mm512_mask_testn_epi32_mask(_mm512_mask_test_epi32_mask(k1, cb, f2), a2, f1);
        if (!SIDE) {
          sols += (uint64_t)(__builtin_popcount(ok1) + __builtin_popcount(ok2));
        } else {
          ok1 = _mm512_mask_testn_epi32_mask(ok1, f2, lastm);
          ok2 = _mm512_mask_testn_epi32_mask(ok2, f1, lastm);
          /* the rotation check is needed only with a flag, ENDBIT last, or col 0 on BOUND2 */
          __mmask16 fl = _mm512_test_epi32_mask(cp, pflags);
          __mmask16 slow1 = fl | _mm512_cmpeq_epi32_mask(f2, endv);
          __mmask16 slow2 = fl | _mm512_cmpeq_epi32_mask(f1, endv);
          if (b2last) {
            slow1 |= _mm512_cmpeq_epi32_mask(f1, one);
            slow2 |= _mm512_cmpeq_epi32_mask(f2, one);
          }
          sols += (uint64_t)(__builtin_popcount(ok1 & ~slow1) + __builtin_popcount(ok2 & ~slow2));
          ok1 &= slow1;
          ok2 &= slow2;
          if (__builtin_expect(ok1 | ok2, 0)) {
            uint32_t vb[16], vp[16], v1[16], v2[16];
            _mm512_storeu_si512(vb, bit);
            _mm512_storeu_si512(vp, wp[s]);
            _mm512_storeu_si512(v1, f1);
            _mm512_storeu_si512(v2, f2);
            for (unsigned mm = ok1; mm; mm &= mm - 1) {
              int i = __builtin_ctz(mm);
              side_leaf(c, PK ? vp[i] >> PK_SH : vp[i], vb[i], v1[i], v2[i]);
            }
            for (unsigned mm = ok2; mm; mm &= mm - 1) {
              int i = __builtin_ctz(mm);
              side_leaf(c, PK ? vp[i] >> PK_SH : vp[i], vb[i], v2[i], v1[i]);
            }
          }
        }
      }
    }
    k->c8 += sols;
    if (SIDE && c->nq) nq_side_flush(c); /* before this chunk is overwritten */
    k->nodes += nodes;
    return;
  }

  uint32_t *oL = c->L[yc], *oD = c->D[yc], *oR = c->R[yc], *oP = c->P[yc];
  int m = 0;
  /* row BOUND1's children with PF_270 go to the second set of arrays (nq_chain_plan) */
  const int split = f270row && c->split270 && !c->chain270;
  uint32_t *xL = c->aL[yc], *xD = c->aD[yc], *xR = c->aR[yc], *xP = c->aP[yc];
  int m2 = 0;
#define RECURSE512(Y, M)                                                                     \
  (SIDE == 2 ? lvl512_sidepk(c, Y, M) : SIDE ? lvl512_side(c, Y, M) : lvl512_corner(c, Y, M))
  for (;;) {
    REFILL512()
    _Pragma("GCC unroll 4") for (int s = 0; s < NS512; s++) {
      CHILD512(s);
      __mmask16 keep = _mm512_mask_test_epi32_mask(_kandn_mask16(dead, act[s]), cb, cb);
      if (split) {
        __mmask16 fk = _mm512_mask_cmpeq_epi32_mask(keep, bit, topv);
        keep = _kandn_mask16(fk, keep);
        _mm512_storeu_si512(xL + m2, _mm512_maskz_compress_epi32(fk, cl));
        _mm512_storeu_si512(xD + m2, _mm512_maskz_compress_epi32(fk, cd));
        _mm512_storeu_si512(xR + m2, _mm512_maskz_compress_epi32(fk, cr));
        if (SIDE == 1) _mm512_storeu_si512(xP + m2, _mm512_maskz_compress_epi32(fk, cp));
        m2 += __builtin_popcount(fk);
      }
      _mm512_storeu_si512(oL + m, _mm512_maskz_compress_epi32(keep, cl));
      _mm512_storeu_si512(oD + m, _mm512_maskz_compress_epi32(keep, cd));
      _mm512_storeu_si512(oR + m, _mm512_maskz_compress_epi32(keep, cr));
      if (SIDE == 1) _mm512_storeu_si512(oP + m, _mm512_maskz_compress_epi32(keep, cp));
      m += __builtin_popcount(keep);
    }
    if (m > LV_CAP - 16 * NS512) {
      RECURSE512(yc, m);
      m = 0;
    }
    if (split && m2 > LV_CAP - 16 * NS512) {
      chain270(c, yc, m2);
      m2 = 0;
    }
  }
  if (m) {
    RECURSE512(yc, m);
  }
  if (m2) chain270(c, yc, m2);
  k->nodes += nodes;
#undef RECURSE512
#undef REFILL512
#undef CHILD512
}

static T512 void lvl512_corner(bctx_t *c, int y, int n) {
  if (look_step(&c->k, y))
    lvl512_body(c, y, n, 0, RULE_LA);
  else
    lvl512_body(c, y, n, 0, 0);
}
/* The side part's rows with a rule of their own (BOUND2's cut, the flags of rows BOUND1 and
 * BOUND2) get their own copy of the loop, so the other rows pay nothing for them. PF_270's dead
 * children can only be on the rows p270lo..p270hi of its subtrees (chain270), and on row
 * BOUND1, which sets the flag. */
static inline int rules_row(const bctx_t *c, int y) {
  const kctx_t *k = &c->k;
  return (y == k->bound1 || y == k->bound2 || y + 1 == k->bound2 ? RULE_B : 0) |
         (y == k->y90 || y == k->y270 || y == k->ylate ? RULE_DEC : 0) |
         (prune_step(k, y, c->chain270) ? RULE_P : 0) | (look_step(k, y) ? RULE_LA : 0);
}

/* A chunk of PF_270's subtrees (nq_chain_plan, solver_batch.h). */
static T512 void chain270(bctx_t *c, int y, int n) {
  nq_swap_sets(c, y);
  c->chain270 = 1;
  if (c->pk) lvl512_sidepk(c, y, n); else lvl512_side(c, y, n);
  c->chain270 = 0;
  nq_swap_sets(c, y);
}

static T512 void lvl512_side(bctx_t *c, int y, int n) {
  switch (rules_row(c, y)) {
  case 0: lvl512_body(c, y, n, 1, 0); break;
  case RULE_B: lvl512_body(c, y, n, 1, RULE_B); break;
  case RULE_DEC: lvl512_body(c, y, n, 1, RULE_DEC); break;
  case RULE_P: lvl512_body(c, y, n, 1, RULE_P); break;
  case RULE_LA: lvl512_body(c, y, n, 1, RULE_LA); break;
  default: lvl512_body(c, y, n, 1, RULE_B | RULE_DEC | RULE_P | RULE_LA); break;
  }
}
static T512 void lvl512_sidepk(bctx_t *c, int y, int n) {
  switch (rules_row(c, y)) {
  case 0: lvl512_body(c, y, n, 2, 0); break;
  case RULE_B: lvl512_body(c, y, n, 2, RULE_B); break;
  case RULE_DEC: lvl512_body(c, y, n, 2, RULE_DEC); break;
  case RULE_P: lvl512_body(c, y, n, 2, RULE_P); break;
  case RULE_LA: lvl512_body(c, y, n, 2, RULE_LA); break;
  default: lvl512_body(c, y, n, 2, RULE_B | RULE_DEC | RULE_P | RULE_LA); break;
  }
}

/* ---- AVX-512, row N-3 chunks from two small tables ----
 *
 * A row N-3 node has exactly three free columns f1 < f2 < f3 (N-3 queens are placed), and its
 * whole subtree (the children on rows N-2 and N-1 that lvl512_body makes and counts, and the
 * solutions) depends only on, per free column: whether row N-3 may use it (a), whether the
 * placed queens' diagonals (and the row's rules) block it on row N-2 (b2) and on row N-1 (b1,
 * with LASTMASK), and whether the next free column is one or two columns further (the only
 * distances that make the last three queens attack each other). So a chunk is done linearly,
 * 16 nodes per vector and no refill: per node, each free column's 5-bit code is cut out of the
 * masks with one vpmultishiftqb per mask (a byte per column, at the column's position), and
 * looked up (vpermi2b, a 128-byte table in two registers, index = code | column << 5) as a
 * 6-bit set of the orders (which column goes to rows N-3, N-2, N-1) that this column allows;
 * the three sets ANDed give the orders that are solutions, and a second table the orders whose
 * first two rows are legal, i.e. the row N-1 nodes. The node count is then |a| + that set's
 * size, exactly what the in-place leaf adds.
 *
 * The side part's solutions that need the rotation check (every one of a node with a flag whose
 * first step the search left undecided, see flag_class, and those that put ENDBIT on row N-1
 * unless dec180 decides them) are compress-stored and handed to side_leaf after the loop, so the
 * loop makes no call (a call there made GCC spill its vector constants, and 30-40% of the vectors
 * had such a solution). Side units whose BOUND2 row is N-3 or N-2 have
 * modes of their own (see leaf512_body). N > 28 (a code's window must stay inside its lane) and
 * CPUs without AVX512-VBMI, VPOPCNTDQ and CD keep lvl512_body's leaf. Measured against that leaf:
 * 1.14x at N = 17, 1.09x at N = 18 (docs/performance.md). */

#define T512L                                                                               \
  __attribute__((target("avx512f,avx512vl,avx512bw,avx512vbmi,avx512vpopcntdq,avx512cd,bmi,"  \
                        "bmi2,popcnt")))

/* The orders of the three free columns: {row N-3, row N-2, row N-1} as indices into f1..f3. */
static const uint8_t leaf_order[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                         {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
/* Code bits: */
#define LC_A 1   /* row N-3 may use the column */
#define LC_B2 2  /* row N-2 may not (the placed queens' diagonals, the row's rules) */
#define LC_B1 4  /* row N-1 may not (the placed queens' diagonals, LASTMASK) */
#define LC_N1 8  /* the next free column is the adjacent one */
#define LC_N2 16 /* the next free column is two columns further */
static uint8_t leaf_sol[128], leaf_node[128]; /* index code | column << 5; column 3: all 0 */
/* LEAF_B2N2's node orders: there LC_B1 says "a free side column", which row N-1 may not take */
static uint8_t leaf_node_b2[128];
#define LEAF_CORNER 0
#define LEAF_SIDE 1
#define LEAF_B2N3 2
#define LEAF_B2N2 3
static pthread_once_t leaf_once = PTHREAD_ONCE_INIT;

static void flag_init(void);
static void leaf_init(void) {
  flag_init();
  for (int col = 0; col < 3; col++)
    for (int code = 0; code < 32; code++) {
      uint8_t so = 0, no = 0, nb = 0;
      for (int j = 0; j < 6; j++) {
        int role = 0, next = 0; /* the rows (0, 1, 2 for N-3, N-2, N-1) of col and col + 1 */
        for (int i = 0; i < 3; i++) {
          if (leaf_order[j][i] == col) role = i;
          if (leaf_order[j][i] == col + 1) next = i;
        }
        int okn = role == 0 ? (code & LC_A) != 0 : role == 1 ? !(code & LC_B2) : 1;
        int oks = role == 2 ? !(code & LC_B1) : okn;
        if (col < 2) {
          int rd = role > next ? role - next : next - role;
          /* Adjacent columns attack each other on adjacent rows; columns two apart on rows two
           * apart. (When f2 = f1 + 1 and f3 = f1 + 2, LC_N2 of f1 is f3, not f2; but then f2 is
           * adjacent to both others and every order already fails.) */
          if (code & LC_N1) {
            if (rd == 1) oks = 0;
            if (rd == 1 && role + next == 1) okn = 0; /* rows N-3 and N-2 */
          } else if ((code & LC_N2) && rd == 2) {
            oks = 0;
          }
        }
        so |= (uint8_t)(oks << j);
        no |= (uint8_t)(okn << j);
        nb |= (uint8_t)((okn && !(role == 2 && (code & LC_B1))) << j);
      }
      leaf_sol[col << 5 | code] = so;
      leaf_node[col << 5 | code] = no;
      leaf_node_b2[col << 5 | code] = nb;
    }
}

/* The free columns fr of a leaf node, lowest first, one bit each in fc[0..k-1]. */
static inline void leaf_cols(uint32_t fr, uint32_t *fc, int k) {
  for (int t = 0; t < k; t++) {
    fc[t] = fr & (0u - fr);
    fr ^= fc[t];
  }
}

/* The 180-degree test decided in a leaf. side_class's 180 test compares row 1 with row N-2
 * mirrored first, so with thr = row 1's column mirrored (side_thr), a solution with ENDBIT on row
 * N-1 whose flags do not decide it is COUNT8 when its row N-2 column is below thr, and not a
 * representative when it is above; when it is thr, the same holds for row N-3 against row 2's
 * column mirrored (thr2; known when the prefix has row 2). By the number of free columns below
 * thr (thr2), ordlt (ordlt2) gives the orders whose row N-2 (N-3) column is below it and ordeq
 * (ordeq2) the ones whose is it (when free). */
typedef struct d180_s {
  __m512i thrv, thrm, ordlt, ordeq, thr2v, thr2m, ordlt2, ordeq2, un2;
} d180_t;
static inline uint32_t side_thr(const kctx_t *k) {
  return k->side ? 1u << (k->n - 1 - __builtin_ctz(k->board[1])) : 0;
}
static inline __attribute__((always_inline)) T512L d180_t d180_init(const kctx_t *k,
                                                                   const uint32_t *ordlt,
                                                                   const uint32_t *ordeq,
                                                                   const uint32_t *ordlt2,
                                                                   const uint32_t *ordeq2) {
  const uint32_t thr = side_thr(k);
  const int has2 = k->side && k->y0 > 2;
  const uint32_t thr2 = has2 ? 1u << (k->n - 1 - __builtin_ctz(k->board[2])) : 0;
  d180_t d;
  d.thrv = _mm512_set1_epi32((int)thr);
  d.thrm = _mm512_set1_epi32((int)(thr - 1));
  d.ordlt = _mm512_loadu_si512(ordlt);
  d.ordeq = _mm512_loadu_si512(ordeq);
  d.thr2v = _mm512_set1_epi32((int)thr2);
  d.thr2m = _mm512_set1_epi32((int)(thr2 - 1));
  d.ordlt2 = _mm512_loadu_si512(ordlt2);
  d.ordeq2 = _mm512_loadu_si512(ordeq2);
  d.un2 = _mm512_set1_epi32(has2 ? 0 : -1); /* without row 2: the second step undecided */
  return d;
}
/* Of the orders e180 (ENDBIT last, in the lanes off `flag`), returns the ones decided here; *lt
 * gets those that count. */
static inline __attribute__((always_inline)) T512L __m512i dec180(__m512i f, __mmask16 flag,
                                                                  __m512i e180, const d180_t *d,
                                                                  __m512i *lt) {
  __m512i cnt = _mm512_popcnt_epi32(_mm512_and_si512(f, d->thrm));
  __m512i lt1 = _mm512_permutexvar_epi32(cnt, d->ordlt);
  __m512i eq = _mm512_maskz_permutexvar_epi32(_mm512_test_epi32_mask(f, d->thrv), cnt, d->ordeq);
  __m512i cnt2 = _mm512_popcnt_epi32(_mm512_and_si512(f, d->thr2m));
  __m512i lt2 = _mm512_permutexvar_epi32(cnt2, d->ordlt2);
  __m512i eq2 = _mm512_or_si512(
      _mm512_maskz_permutexvar_epi32(_mm512_test_epi32_mask(f, d->thr2v), cnt2, d->ordeq2), d->un2);
  *lt = _mm512_ternarylogic_epi32(eq, lt1, lt2, 0xac); /* eq ? lt2 : lt1 */
  return _mm512_maskz_andnot_epi32(_knot_mask16(flag), _mm512_and_si512(eq, eq2), e180);
}

/* A leaf node's flag word (its P word, or D word when packed) F, bits 26..31 (PF_S90): dead =
 * lanes whose solutions count nothing (a flag's check rejects at its first step), qall = the
 * other lanes with a flag whose first step is undecided (their solutions all need the rotation
 * check); the other lanes' solutions count as if they had no flag. (A rejecting first step of
 * PF_270's check decides even though the PF_90 and 180-degree checks come first: they could count
 * the board, COUNT2 or COUNT4, only if it were its own 90- or 180-degree turn, and then PF_270's
 * check compares equal rows, or the same rows as PF_90's, at that step.) One byte lookup
 * (flag_tab, built by flag_init) per lane; its bits 3 and 4 are the same with PF_90 set
 * (b2_col0). */
static uint8_t flag_tab[64];
static void flag_init(void) {
  for (unsigned x = 0; x < 64; x++) {
    const uint32_t p = x << 26;
    const int f90 = !!(p & PF_90), f270 = !!(p & PF_270);
    const int dead = (f90 && (p & PF_R90)) || (f270 && (p & PF_R270));
    const int q = (f90 && !(p & (PF_R90 | PF_S90))) || (f270 && !(p & (PF_R270 | PF_S270)));
    flag_tab[x] = (uint8_t)((q && !dead) | dead << 1);
  }
  for (unsigned x = 0; x < 64; x++) flag_tab[x] |= (uint8_t)(flag_tab[x | 16] << 3); /* PF_90 */
}
static inline __attribute__((always_inline)) T512L __m512i flag_class(__m512i F, __m512i tab,
                                                                      __mmask16 *qall,
                                                                      __mmask16 *dead) {
  const __m512i cls = _mm512_permutexvar_epi8(_mm512_srli_epi32(F, 26), tab);
  *qall = _mm512_test_epi32_mask(cls, _mm512_set1_epi32(1));
  *dead = _mm512_test_epi32_mask(cls, _mm512_set1_epi32(2));
  return cls;
}

/* The orders col0 (that put f0 on the BOUND2 row) in the lanes where f0 is column 0. */
static inline __attribute__((always_inline)) T512L __m512i b2_col0_lanes(__m512i f,
                                                                          __m512i col0) {
  return _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(f, _mm512_set1_epi32(1)), col0);
}
/* A leaf whose rows include BOUND2: its queen there on column 0 is what PF_90 says above it, so
 * those orders (m0, b2_col0_lanes) take the class of the flag word with PF_90 set (cls's bits 3
 * and 4): all queued, none counted, or (as a lane without flags) the ones with ENDBIT last (eend)
 * queued and the others counted. *q and *cnt (the orders queued and counted) get theirs. */
static inline __attribute__((always_inline)) T512L void b2_col0(__m512i cls, __m512i m0,
                                                                __m512i eend, __m512i allord,
                                                                __m512i *q, __m512i *cnt) {
  const __mmask16 q2 = _mm512_test_epi32_mask(cls, _mm512_set1_epi32(8));
  const __mmask16 d2 = _mm512_test_epi32_mask(cls, _mm512_set1_epi32(16));
  const __m512i q0 = _mm512_mask_mov_epi32(_mm512_maskz_mov_epi32((__mmask16)~d2, eend), q2, allord);
  const __m512i c0 = _mm512_maskz_mov_epi32((__mmask16)~(q2 | d2),
                                            _mm512_ternarylogic_epi32(eend, eend, eend, 0x55));
  *q = _mm512_ternarylogic_epi32(m0, *q, q0, 0xac);     /* m0 ? q0 : q */
  *cnt = _mm512_ternarylogic_epi32(m0, *cnt, c0, 0xac); /* m0 ? c0 : cnt */
}

/* The row N-3 chunk of n nodes at row y = N-3 (see the block comment above): adds its rows
 * N-2 and N-1 to k->nodes, its solutions to k->c8 or (rotation check) to the side_leaf queue,
 * which it flushes. MODE (a compile-time constant): LEAF_CORNER, LEAF_SIDE, or a side-part unit
 * whose BOUND2 row is one of the last rows: LEAF_B2N3 (BOUND2 = N-3: row N-3 keeps to the side
 * columns while one of them is free, and its queen on column 0 needs the rotation check),
 * LEAF_B2N2 (BOUND2 = N-2: a free side column cannot go to row N-1, a rule per column like the
 * others: with one side column free, row N-3 or N-2 must take it; with both, those two rows;
 * and its row N-2 queen on column 0 needs the check). */
static inline __attribute__((always_inline)) T512L void leaf512_body(bctx_t *c, int y, int n,
                                                                     const int MODE) {
  kctx_t *k = &c->k;
  const int side = MODE != LEAF_CORNER;
  const uint32_t *iL = c->L[y], *iD = c->D[y], *iR = c->R[y], *iP = c->P[y];
  const __m512i zero = _mm512_setzero_si512();
  const __m512i maskv = _mm512_set1_epi32((int)k->mask);
  const __m512i rowy = _mm512_set1_epi32((int)k->rowmask[y]);
  /* the codes' sources, each placed so that its bit for column p is bit p + (its code bit) */
  const __m512i nrow2 = _mm512_set1_epi32((int)((k->mask & ~k->rowmask[y + 1]) << 1));
  const __m512i lastm2 = _mm512_set1_epi32((int)((side ? k->lastmask : 0) << 2));
  const __m512i oddk = _mm512_set_epi32(0x3f3f3f, 0x1f1f1f, 0x3f3f3f, 0x1f1f1f, 0x3f3f3f,
                                        0x1f1f1f, 0x3f3f3f, 0x1f1f1f, 0x3f3f3f, 0x1f1f1f,
                                        0x3f3f3f, 0x1f1f1f, 0x3f3f3f, 0x1f1f1f, 0x3f3f3f, 0x1f1f1f);
  const __m512i sel1 = _mm512_set1_epi8(0x01), sel2 = _mm512_set1_epi8(0x03),
                sel3 = _mm512_set1_epi8(0x07);
  const __m512i kkeep = _mm512_set1_epi32(0x001f1f1f), kcol = _mm512_set1_epi32(0x60402000);
  const __m512i ts0 = _mm512_loadu_si512(leaf_sol), ts1 = _mm512_loadu_si512(leaf_sol + 64);
  const uint8_t *tnode = MODE == LEAF_B2N2 ? leaf_node_b2 : leaf_node;
  const __m512i tn0 = _mm512_loadu_si512(tnode), tn1 = _mm512_loadu_si512(tnode + 64);
  const __m512i sidem = _mm512_set1_epi32((int)k->sidemask);
  const __m512i side2 = _mm512_set1_epi32((int)(k->sidemask << 2));
  const __m512i endv = _mm512_set1_epi32((int)k->endbit);
  const __m512i endm1 = _mm512_set1_epi32((int)(k->endbit - 1));
  /* by ENDBIT's rank among the free columns: the orders that put it on row N-1 */
  const __m512i endord =
      _mm512_setr_epi32(0x28, 0x12, 0x05, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i allord = _mm512_set1_epi32(0x3f);
  /* Of those, the orders that only the 180-degree test can concern (ENDBIT last, no undecided
   * flag, not column 0 on a BOUND2 row) are decided here (dec180). By the number of free
   * columns below thr, the orders whose row N-2 column is below it, and the ones whose is thr
   * (when free); the same for row N-3 and thr2. */
  static const uint32_t ordlt[16] = {0, 0x14, 0x35, 0x3f}, ordeq[16] = {0x14, 0x21, 0x0a};
  static const uint32_t ordlt2[16] = {0, 0x03, 0x0f, 0x3f}, ordeq2[16] = {0x03, 0x0c, 0x30};
  const d180_t d180 = d180_init(k, ordlt, ordeq, ordlt2, ordeq2);
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const uint32_t *fP = c->pk ? iD : iP; /* the flags (see PK_SH) */
  const __m512i ftab = _mm512_loadu_si512(flag_tab);
  uint32_t s_at[LV_CAP + 16], s_sb[LV_CAP + 16]; /* queued: node index, orders */
  int ns = 0;
  __m512i accn = zero, accs = zero;
  for (int i = 0; i < n; i += 16) {
    const __mmask16 valid = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
    __m512i l = _mm512_loadu_si512(iL + i), d = _mm512_loadu_si512(iD + i),
            r = _mm512_loadu_si512(iR + i);
    __m512i f = _mm512_andnot_si512(d, maskv);
    __m512i f1 = _mm512_and_si512(f, _mm512_sub_epi32(zero, f));
    __m512i rest = _mm512_xor_si512(f, f1);
    __m512i f2 = _mm512_and_si512(rest, _mm512_sub_epi32(zero, rest));
    /* each column's position (31 - lzcnt) as a byte of the multishift control; odd lanes are
     * the high half of their qword */
    __m512i ctrl = _mm512_ternarylogic_epi32(
        _mm512_lzcnt_epi32(f1), _mm512_slli_epi32(_mm512_lzcnt_epi32(f2), 8),
        _mm512_slli_epi32(_mm512_lzcnt_epi32(f), 16), 0xfe);
    ctrl = _mm512_xor_si512(ctrl, oddk);
    __m512i a = _mm512_ternarylogic_epi32(rowy, l, r, 0x10); /* rowy & ~l & ~r */
    if (MODE == LEAF_B2N3) { /* as lvl512_body's refill on the BOUND2 row (a stored node has a
                                side column down, so "none" cannot occur) */
      __mmask16 part = _mm512_cmpneq_epi32_mask(_mm512_and_si512(d, sidem), sidem);
      a = _mm512_mask_and_epi32(a, part, a, sidem);
    }
    __m512i l2 = _mm512_slli_epi32(l, 2);
    /* b2 = (l << 1 | r >> 1 | row N-2's forbidden columns) << 1, b1 = (l << 2 | r >> 2 |
     * LASTMASK) << 2: bit p + 1 and bit p + 2 are column p's (r's low bits never matter) */
    __m512i b2 = _mm512_ternarylogic_epi32(l2, r, nrow2, 0xfe);
    __m512i b1 = _mm512_ternarylogic_epi32(_mm512_slli_epi32(l, 4), r, lastm2, 0xfe);
    __m512i ma = _mm512_multishift_epi64_epi8(ctrl, a);
    __m512i m2 = _mm512_multishift_epi64_epi8(ctrl, b2);
    __m512i m1 = _mm512_multishift_epi64_epi8(ctrl, b1);
    __m512i mf = _mm512_multishift_epi64_epi8(ctrl, _mm512_slli_epi32(f, 2));
    /* code bit 0 from ma, 1 from m2, 2 from m1, 3-4 (F at p + 1, p + 2) from mf */
    __m512i t = _mm512_ternarylogic_epi32(sel1, ma, m2, 0xca);
    t = _mm512_ternarylogic_epi32(sel2, t, m1, 0xca);
    t = _mm512_ternarylogic_epi32(sel3, t, mf, 0xca);
    __m512i idx = _mm512_ternarylogic_epi32(t, kkeep, kcol, 0xea); /* (t & keep) | col */
    __m512i rs = _mm512_permutex2var_epi8(ts0, idx, ts1);
    __m512i rn;
    if (MODE == LEAF_B2N2) { /* the node orders from the side columns' rule instead of b1 */
      __m512i ms = _mm512_multishift_epi64_epi8(ctrl, side2);
      __m512i tt = _mm512_ternarylogic_epi32(sel3, _mm512_ternarylogic_epi32(sel2, t, ms, 0xca),
                                             mf, 0xca);
      rn = _mm512_permutex2var_epi8(tn0, _mm512_ternarylogic_epi32(tt, kkeep, kcol, 0xea), tn1);
    } else {
      rn = _mm512_permutex2var_epi8(tn0, idx, tn1);
    }
    rs = _mm512_ternarylogic_epi32(rs, _mm512_srli_epi32(rs, 8), _mm512_srli_epi32(rs, 16), 0x80);
    rn = _mm512_ternarylogic_epi32(rn, _mm512_srli_epi32(rn, 8), _mm512_srli_epi32(rn, 16), 0x80);
    __m512i nd = _mm512_add_epi32(_mm512_popcnt_epi32(_mm512_and_si512(a, f)),
                                  _mm512_popcnt_epi32(rn));
    accn = _mm512_mask_add_epi32(accn, valid, accn, nd);
    __m512i sc = rs; /* the solutions counted here */
    if (side) {
      /* Solutions that need the rotation check: every one of a node with a flag, and those
       * whose row N-1 column is ENDBIT (the orders with that column last, by its rank among
       * the three). They are queued after the loop: no call (and no register spills) here. */
      __m512i rank = _mm512_popcnt_epi32(_mm512_and_si512(f, endm1));
      const __m512i eend =
          _mm512_maskz_permutexvar_epi32(_mm512_test_epi32_mask(f, endv), rank, endord);
      /* on a BOUND2 row, column 0 is the rotation check's: those orders apart (b2_col0) */
      const __m512i col0 = _mm512_set1_epi32(MODE == LEAF_B2N3 ? 0x03   /* f1 on row N-3 */
                                             : MODE == LEAF_B2N2 ? 0x14 /* f1 on row N-2 */
                                                                 : 0);
      __mmask16 qall, dead;
      const __m512i cls = flag_class(_mm512_loadu_si512(fP + i), ftab, &qall, &dead);
      /* dec: the 180-only orders decided here; lt: those of them that count */
      const __m512i c0 = b2_col0_lanes(f, col0);
      __m512i lt, dec = dec180(f, qall | dead, _mm512_andnot_si512(c0, eend), &d180, &lt);
      __m512i e = _mm512_maskz_andnot_epi32((__mmask16)~dead, dec,
                                            _mm512_mask_mov_epi32(eend, qall, allord));
      __m512i cnt = _mm512_maskz_mov_epi32( /* ~(e | dec & ~lt) */
          (__mmask16)~(qall | dead), _mm512_ternarylogic_epi32(e, dec, lt, 0x0b));
      if (MODE == LEAF_B2N3 || MODE == LEAF_B2N2) b2_col0(cls, c0, eend, allord, &e, &cnt);
      __m512i sb = _mm512_and_si512(rs, e);
      __mmask16 slow = _mm512_mask_test_epi32_mask(valid, sb, sb);
      __m512i at = _mm512_add_epi32(iota, _mm512_set1_epi32(i));
      _mm512_storeu_si512(s_at + ns, _mm512_maskz_compress_epi32(slow, at));
      _mm512_storeu_si512(s_sb + ns, _mm512_maskz_compress_epi32(slow, sb));
      ns += __builtin_popcount(_cvtmask16_u32(slow));
      sc = _mm512_and_si512(rs, cnt);
    }
    accs = _mm512_mask_add_epi32(accs, valid, accs, _mm512_popcnt_epi32(sc));
  }
  for (int q = 0; q < ns; q++) {
    const int at = (int)s_at[q];
    uint32_t fc[3];
    leaf_cols(k->mask & ~iD[at], fc, 3);
    for (unsigned mm = s_sb[q]; mm; mm &= mm - 1) {
      const uint8_t *o = leaf_order[__builtin_ctz(mm)];
      side_leaf(c, (uint32_t)at, fc[o[0]], fc[o[1]], fc[o[2]]);
    }
  }
  k->nodes += (uint64_t)(uint32_t)_mm512_reduce_add_epi32(accn);
  k->c8 += (uint64_t)(uint32_t)_mm512_reduce_add_epi32(accs);
  if (side && c->nq) nq_side_flush(c); /* before this chunk is overwritten */
}

static T512L void leaf512_tab(bctx_t *c, int y, int n) {
  switch (c->leaf_tab) {
  case 1 + LEAF_SIDE: leaf512_body(c, y, n, LEAF_SIDE); break;
  case 1 + LEAF_B2N3: leaf512_body(c, y, n, LEAF_B2N3); break;
  case 1 + LEAF_B2N2: leaf512_body(c, y, n, LEAF_B2N2); break;
  default: leaf512_body(c, y, n, LEAF_CORNER); break;
  }
}

/* ---- AVX-512, row N-4 chunks from tables over the 24 orders of their four free columns ----
 *
 * A row N-4 node has exactly four free columns f0 < f1 < f2 < f3. Its subtree (what the row N-4
 * step and leaf512_tab would add) depends only on which of the four rows the placed queens'
 * diagonals (and LASTMASK on row N-1) leave each column open, and on the gaps between the
 * columns (columns up to three apart attack each other on rows as far apart). An order says which
 * column goes to rows N-4, N-3, N-2, N-1 (24 of them, a bit each in a 32-bit lane). Per column a
 * 4-bit code (open on row N-4; blocked on rows N-3, N-2, N-1) is cut out of four masks by one
 * vpmultishiftqb each, each mask placed so that column p's bit for row j is bit p + j; a
 * 16-entry table per column (vpermd) gives the orders that column allows, and two tables keyed
 * by the gaps (g1, g2 and g2, g3, min 4) the orders in which no two of the four attack each other
 * (columns f0 and f3 can only when all gaps are 1, and then f1 and f2 always do as well). Their
 * AND is the set of solutions. The nodes (what the walk counts) come from the same sets a level
 * down: row N-4's children are its open columns, row N-3's the legal row N-4/N-3 pairs (each is
 * two orders: the orders with the legal pair and anything below), row N-2's the legal triples
 * (one order each); a column's orders at a level are its table's plus the orders that put it on a
 * row not placed yet, and the gap tables have one version per level.
 *
 * The side part's rules: BOUND2 on one of the four rows (units with BOUND1 = 1, 2, 3) is a rule on
 * orders too (lf4_b2); solutions that need the rotation check are found as in leaf512_body (an
 * undecided flag, ENDBIT on row N-1 unless the 180-degree test is decided here, the BOUND2 row's
 * queen on column 0 unless the flags decide it: b2_col0), and their orders stored per node; after the loop they are queued (side_leaf4) and their
 * boards rebuilt from the row N-4 node. A vector's chain of dependent operations is long, so two
 * vectors are done side by side. Measured against the row N-4 step + leaf512_tab: 1.04-1.09x at
 * N = 17-18, 1.05x at N = 20 (docs/performance.md). Corner units whose BOUND1 is on rows N-3..N-1
 * keep those. */
#define LF4_LV 3                         /* levels: pairs, triples, solutions */
static uint8_t lf4_order[24][4];         /* order -> the column index (0..3) of rows N-4..N-1 */
static uint32_t lf4_rowcol[4][16];       /* [row][column index] -> the orders that put it there */
static uint32_t lf4_col[4][16];          /* [column index][code] -> the orders it allows */
static uint32_t lf4_ga[LF4_LV][16], lf4_gb[LF4_LV][16]; /* [level][gap key] -> orders */
/* [row][number of free columns below a column] -> the orders whose column on that row is below */
static uint32_t lf4_lt[4][16];
/* A side-part unit whose BOUND2 row is row N-3 or N-2 (j = 1, 2 of the four): the orders that
 * keep its rule there, by which side columns are free (bit 0: column 0, i.e. f0; bit 1: column
 * N-1, f3): none of them taken above that row -> no order; one -> that row takes the other. */
static uint32_t lf4_b2[3][16];
static pthread_once_t lf4_once = PTHREAD_ONCE_INIT;

/* Does order o keep the columns ci < cj (dist apart, 0: too far) from attacking each other,
 * counting only the first `rows` rows (the others are not placed yet at that level)? */
static int lf4_apart(int o, int ci, int cj, int dist, int rows) {
  int ri = -1, rj = -1;
  for (int r = 0; r < 4; r++) {
    if (lf4_order[o][r] == ci) ri = r;
    if (lf4_order[o][r] == cj) rj = r;
  }
  if (ri >= rows || rj >= rows || !dist) return 1;
  return (ri > rj ? ri - rj : rj - ri) != dist;
}

/* The row (0..3) on which order o puts column index col. */
static int lf4_row(int o, int col) {
  int r = 0;
  while (lf4_order[o][r] != col) r++;
  return r;
}

static void lf4_init(void) {
  int o = 0;
  for (int a = 0; a < 4; a++)
    for (int b = 0; b < 4; b++)
      for (int c = 0; c < 4; c++)
        for (int d = 0; d < 4; d++) {
          if (a == b || a == c || a == d || b == c || b == d || c == d) continue;
          lf4_order[o][0] = (uint8_t)a, lf4_order[o][1] = (uint8_t)b;
          lf4_order[o][2] = (uint8_t)c, lf4_order[o][3] = (uint8_t)d;
          for (int row = 0; row < 4; row++) lf4_rowcol[row][lf4_order[o][row]] |= 1u << o;
          o++;
        }
  for (int col = 0; col < 4; col++)
    for (int code = 0; code < 16; code++)
      for (int q = 0; q < 24; q++) {
        int r = lf4_row(q, col); /* code bit 0: open on row 0; bits 1..3: blocked on row r */
        if (r == 0 ? (code & 1) : !(code & (1 << r))) lf4_col[col][code] |= 1u << q;
      }
  for (int lv = 0; lv < LF4_LV; lv++) {
    const int rows = lv + 2; /* the rows placed at this level: N-4.. (2, 3 or 4 of them) */
    for (int key = 0; key < 16; key++) {
      /* two gaps, each a field + 1; a field of 3 means four or more apart (no attack) */
      int ga = (key & 3) + 1, gb = (key >> 2) + 1;
      int d1 = ga < 4 ? ga : 0, d2 = gb < 4 ? gb : 0, d12 = ga + gb <= 3 ? ga + gb : 0;
      for (int q = 0; q < 24; q++) {
        /* key a (g1, g2): columns 0-1, 1-2, 0-2; key b (g2, g3): 1-2 again, 2-3, 1-3 */
        if (lf4_apart(q, 0, 1, d1, rows) && lf4_apart(q, 1, 2, d2, rows) &&
            lf4_apart(q, 0, 2, d12, rows))
          lf4_ga[lv][key] |= 1u << q;
        if (lf4_apart(q, 1, 2, d1, rows) && lf4_apart(q, 2, 3, d2, rows) &&
            lf4_apart(q, 1, 3, d12, rows))
          lf4_gb[lv][key] |= 1u << q;
      }
    }
  }
  for (int j = 1; j < 3; j++)
    for (int sf = 0; sf < 4; sf++)
      for (int q = 0; q < 24; q++) {
        int r0 = lf4_row(q, 0), r3 = lf4_row(q, 3);
        int used = 2 - ((sf & 1) + (sf >> 1)) + ((sf & 1) && r0 < j) + ((sf & 2) && r3 < j);
        int ok = used == 2 || (used == 1 && (((sf & 1) && r0 == j) || ((sf & 2) && r3 == j)));
        if (ok) lf4_b2[j][sf] |= 1u << q;
      }
  for (int below = 0; below <= 4; below++)
    for (int col = 0; col < below; col++)
      for (int row = 0; row < 4; row++) lf4_lt[row][below] |= lf4_rowcol[row][col];
}

#define LEAF4_CORNER 0
#define LEAF4_SIDE 1
#define LEAF4_B2 2 /* + j: the side part with BOUND2 = N-4 + j */
static inline __attribute__((always_inline)) T512L void leaf4_body(bctx_t *c, int y, int n,
                                                                   const int MODE) {
  kctx_t *k = &c->k;
  const int side = MODE != LEAF4_CORNER, j2 = MODE >= LEAF4_B2 ? MODE - LEAF4_B2 : -1;
  const __m512i sidem = _mm512_set1_epi32((int)k->sidemask);
  const __m512i b2tab = _mm512_loadu_si512(lf4_b2[j2 > 0 ? j2 : 1]);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i col0j = _mm512_set1_epi32((int)(j2 >= 0 ? lf4_rowcol[j2][0] : 0));
  const uint32_t *iL = c->L[y], *iD = c->D[y], *iR = c->R[y], *iP = c->P[y];
  const __m512i zero = _mm512_setzero_si512();
  const __m512i maskv = _mm512_set1_epi32((int)k->mask);
  const __m512i lastm3 = _mm512_set1_epi32((int)((side ? k->lastmask : 0) << 3));
  const __m512i oddk = _mm512_set_epi32(0x3f3f3f3f, 0x1f1f1f1f, 0x3f3f3f3f, 0x1f1f1f1f, 0x3f3f3f3f,
                                        0x1f1f1f1f, 0x3f3f3f3f, 0x1f1f1f1f, 0x3f3f3f3f, 0x1f1f1f1f,
                                        0x3f3f3f3f, 0x1f1f1f1f, 0x3f3f3f3f, 0x1f1f1f1f, 0x3f3f3f3f,
                                        0x1f1f1f1f);
  const __m512i sel1 = _mm512_set1_epi8(0x01), sel2 = _mm512_set1_epi8(0x03),
                sel3 = _mm512_set1_epi8(0x07);
  const __m512i four = _mm512_set1_epi8(4), oneb = _mm512_set1_epi8(1);
  const __m512i wkey = _mm512_set1_epi32(0x0401);
  const __m512i topv = _mm512_set1_epi32((int)0x80000000u);
  /* tup[lv][col]: the orders that leave column col on a row not placed at level lv */
  __m512i tc[4], tga[LF4_LV], tgb[LF4_LV], tup[2][4];
  for (int col = 0; col < 4; col++) {
    tc[col] = _mm512_loadu_si512(lf4_col[col]);
    tup[1][col] = _mm512_set1_epi32((int)lf4_rowcol[3][col]);
    tup[0][col] = _mm512_set1_epi32((int)(lf4_rowcol[3][col] | lf4_rowcol[2][col]));
  }
  for (int lv = 0; lv < LF4_LV; lv++) {
    tga[lv] = _mm512_loadu_si512(lf4_ga[lv]);
    tgb[lv] = _mm512_loadu_si512(lf4_gb[lv]);
  }
  const __m512i endv = _mm512_set1_epi32((int)k->endbit);
  const __m512i endm1 = _mm512_set1_epi32((int)(k->endbit - 1));
  /* by ENDBIT's rank among the free columns: the orders that put it on row N-1 */
  const __m512i endord = _mm512_loadu_si512(lf4_rowcol[3]);
  const __m512i allord = _mm512_set1_epi32(0xffffff);
  /* the 180-degree test decided here, as in leaf512_body */
  const d180_t d180 = d180_init(k, lf4_lt[2], lf4_rowcol[2], lf4_lt[1], lf4_rowcol[1]);
  const uint32_t *fP = c->pk ? iD : iP; /* the flags (see PK_SH) */
  const __m512i ftab = _mm512_loadu_si512(flag_tab);
  /* per node, the orders of its solutions that are queued for the rotation check */
  uint32_t s_sb[LV_CAP + 32] __attribute__((aligned(64)));
  __m512i accn = zero, accp = zero, accs = zero;
  /* Two vectors at a time, their operations side by side: one vector's chain of dependent
   * operations is long, and the second one's fills the gaps. */
#define H2 for (int h = 0; h < 2; h++)
  for (int i0 = 0; i0 < n; i0 += 32) {
    __mmask16 valid[2];
    __m512i l[2], d[2], r[2], f[2], b0[2], r1[2], b1[2], lz[2], lz2[2], lz3[2], ctrl[2], g[2],
        ka[2], kb[2], a0[2], s1[2], s2[2], s3[2], t[2], code[2][4], tcol[2][4], set[2][LF4_LV];
    H2 {
      const int i = i0 + 16 * h;
      valid[h] = n - i >= 16 ? (__mmask16)0xffff
                 : n - i > 0 ? (__mmask16)((1u << (n - i)) - 1) : (__mmask16)0;
      l[h] = _mm512_loadu_si512(iL + i);
      d[h] = _mm512_loadu_si512(iD + i);
      r[h] = _mm512_loadu_si512(iR + i);
    }
    H2 f[h] = _mm512_andnot_si512(d[h], maskv);
    /* the four columns' lzcnt (31 - position): lowest, second lowest, second highest, highest */
    H2 b0[h] = _mm512_and_si512(f[h], _mm512_sub_epi32(zero, f[h]));
    H2 lz3[h] = _mm512_lzcnt_epi32(f[h]);
    H2 r1[h] = _mm512_xor_si512(f[h], b0[h]);
    H2 lz2[h] = _mm512_lzcnt_epi32(_mm512_xor_si512(f[h], _mm512_srlv_epi32(topv, lz3[h])));
    H2 b1[h] = _mm512_and_si512(r1[h], _mm512_sub_epi32(zero, r1[h]));
    H2 lz[h] = _mm512_ternarylogic_epi32(_mm512_lzcnt_epi32(b0[h]),
                                         _mm512_slli_epi32(_mm512_lzcnt_epi32(b1[h]), 8),
                                         _mm512_slli_epi32(lz2[h], 16), 0xfe);
    H2 lz[h] = _mm512_or_si512(lz[h], _mm512_slli_epi32(lz3[h], 24));
    H2 ctrl[h] = _mm512_xor_si512(lz[h], oddk);
    /* gaps g1, g2, g3 (bytes 0..2) as min(g, 4) - 1; key a = g1 | g2 << 2, key b = g2 | g3 << 2 */
    H2 g[h] = _mm512_sub_epi8(lz[h], _mm512_srli_epi32(lz[h], 8));
    H2 g[h] = _mm512_sub_epi8(_mm512_min_epu8(g[h], four), oneb);
    H2 ka[h] = _mm512_maddubs_epi16(g[h], wkey);
    H2 kb[h] = _mm512_maddubs_epi16(_mm512_srli_epi32(g[h], 8), wkey);
    /* the code sources: column p's bit for row j at bit p + j */
    H2 a0[h] = _mm512_ternarylogic_epi32(f[h], l[h], r[h], 0x10); /* f & ~l & ~r */
    if (j2 == 0) /* row N-4 is BOUND2: as lvl512_body's refill there */
      H2 a0[h] = _mm512_mask_and_epi32(
          a0[h], _mm512_cmpneq_epi32_mask(_mm512_and_si512(d[h], sidem), sidem), a0[h], sidem);
    H2 s1[h] = _mm512_or_si512(_mm512_slli_epi32(l[h], 2), r[h]);
    H2 s2[h] = _mm512_or_si512(_mm512_slli_epi32(l[h], 4), r[h]);
    H2 s3[h] = _mm512_ternarylogic_epi32(_mm512_slli_epi32(l[h], 6), r[h], lastm3, 0xfe);
    H2 t[h] = _mm512_ternarylogic_epi32(sel1, _mm512_multishift_epi64_epi8(ctrl[h], a0[h]),
                                        _mm512_multishift_epi64_epi8(ctrl[h], s1[h]), 0xca);
    H2 t[h] = _mm512_ternarylogic_epi32(sel2, t[h], _mm512_multishift_epi64_epi8(ctrl[h], s2[h]),
                                        0xca);
    H2 t[h] = _mm512_ternarylogic_epi32(sel3, t[h], _mm512_multishift_epi64_epi8(ctrl[h], s3[h]),
                                        0xca);
    H2 {
      code[h][0] = t[h];
      code[h][1] = _mm512_srli_epi32(t[h], 8);
      code[h][2] = _mm512_srli_epi32(t[h], 16);
      code[h][3] = _mm512_srli_epi32(t[h], 24);
    }
    for (int col = 0; col < 4; col++)
      H2 tcol[h][col] = _mm512_permutexvar_epi32(code[h][col], tc[col]);
    __m512i b2s[2];
    if (j2 > 0) /* by the free side columns: bit 0 from f's bit 0, bit 1 from its bit N-1 */
      H2 b2s[h] = _mm512_permutexvar_epi32(
          _mm512_ternarylogic_epi32(one, f[h], _mm512_srli_epi32(f[h], k->n - 2), 0xca), b2tab);
    for (int lv = 0; lv < LF4_LV; lv++) {
      H2 set[h][lv] = _mm512_and_si512(_mm512_permutexvar_epi32(ka[h], tga[lv]),
                                       _mm512_permutexvar_epi32(kb[h], tgb[lv]));
      if (j2 > 0 && j2 < lv + 2) /* the BOUND2 row is placed at this level */
        H2 set[h][lv] = _mm512_and_si512(set[h][lv], b2s[h]);
      /* a lower level: each column's orders also where it sits on a row not placed yet */
      for (int col = 0; col < 4; col++)
        H2 set[h][lv] = lv == 2 ? _mm512_and_si512(set[h][lv], tcol[h][col])
                                : _mm512_ternarylogic_epi32(tcol[h][col], tup[lv][col],
                                                            set[h][lv], 0xa8); /* (a|b)&c */
    }
    H2 accn = _mm512_mask_add_epi32(accn, valid[h], accn,
                                    _mm512_add_epi32(_mm512_popcnt_epi32(a0[h]),
                                                     _mm512_popcnt_epi32(set[h][1])));
    H2 accp = _mm512_mask_add_epi32(accp, valid[h], accp, _mm512_popcnt_epi32(set[h][0]));
    __m512i sc[2];
    H2 sc[h] = set[h][2];
    if (side) {
      __m512i e[2], eend[2], cls[2], c0[2], cnt[2], lt[2], dec[2], sb[2];
      __mmask16 qall[2], dead[2];
      H2 {
        __m512i rank = _mm512_popcnt_epi32(_mm512_and_si512(f[h], endm1));
        eend[h] = _mm512_maskz_permutexvar_epi32(_mm512_test_epi32_mask(f[h], endv), rank, endord);
        cls[h] = flag_class(_mm512_loadu_si512(fP + i0 + 16 * h), ftab, &qall[h], &dead[h]);
      }
      /* the BOUND2 row's queen on column 0 (f0 there): PF_90's check, not the 180 test (b2_col0) */
      H2 c0[h] = j2 >= 0 ? b2_col0_lanes(f[h], col0j) : zero;
      H2 dec[h] = dec180(f[h], qall[h] | dead[h], _mm512_andnot_si512(c0[h], eend[h]), &d180,
                         &lt[h]);
      H2 e[h] = _mm512_maskz_andnot_epi32((__mmask16)~dead[h], dec[h],
                                          _mm512_mask_mov_epi32(eend[h], qall[h], allord));
      H2 cnt[h] = _mm512_maskz_mov_epi32((__mmask16)~(qall[h] | dead[h]),
                                         _mm512_ternarylogic_epi32(e[h], dec[h], lt[h], 0x0b));
      if (j2 >= 0) H2 b2_col0(cls[h], c0[h], eend[h], allord, &e[h], &cnt[h]);
      H2 sb[h] = _mm512_and_si512(set[h][2], e[h]);
      /* every node's queued orders are stored (most are none): no compress, no count */
      H2 _mm512_store_si512(s_sb + i0 + 16 * h, _mm512_maskz_mov_epi32(valid[h], sb[h]));
      H2 sc[h] = _mm512_and_si512(set[h][2], cnt[h]);
    }
    H2 accs = _mm512_mask_add_epi32(accs, valid[h], accs, _mm512_popcnt_epi32(sc[h]));
  }
#undef H2
  for (int i = 0; side && i < n; i += 16) {
    const __m512i v = _mm512_load_si512(s_sb + i);
    for (unsigned lanes = _cvtmask16_u32(_mm512_test_epi32_mask(v, v)); lanes;
         lanes &= lanes - 1) {
      const int at = i + __builtin_ctz(lanes);
      uint32_t fc[4];
      leaf_cols(k->mask & ~iD[at], fc, 4);
      for (unsigned mm = s_sb[at]; mm; mm &= mm - 1) {
        const uint8_t *o = lf4_order[__builtin_ctz(mm)];
        side_leaf4(c, (uint32_t)at, fc[o[0]], fc[o[1]], fc[o[2]], fc[o[3]]);
      }
    }
  }
  uint64_t pairs = (uint64_t)(uint32_t)_mm512_reduce_add_epi32(accp);
  k->nodes += (uint64_t)(uint32_t)_mm512_reduce_add_epi32(accn) + pairs / 2;
  k->c8 += (uint64_t)(uint32_t)_mm512_reduce_add_epi32(accs);
  if (side && c->nq) nq_side_flush(c); /* before this chunk is overwritten */
}

static T512L void leaf512_four(bctx_t *c, int y, int n) {
  switch (c->leaf4) {
  case 1 + LEAF4_SIDE: leaf4_body(c, y, n, LEAF4_SIDE); break;
  case 1 + LEAF4_B2: leaf4_body(c, y, n, LEAF4_B2); break;
  case 2 + LEAF4_B2: leaf4_body(c, y, n, LEAF4_B2 + 1); break;
  case 3 + LEAF4_B2: leaf4_body(c, y, n, LEAF4_B2 + 2); break;
  default: leaf4_body(c, y, n, LEAF4_CORNER); break;
  }
}

/* AVX2 has no compress/expand: lane permutations come from two 256-entry tables of byte indices
 * (2 KB each, indexed by an 8-bit lane mask) rather than from BMI2 pdep/pext, which AMD CPUs
 * before Zen 3 run in microcode (tens to hundreds of cycles each, and the kernel needed three per
 * step); on CPUs with fast pdep the two are even. Unlike lvl512_body, a node's free columns are
 * stored: recomputing them lengthened the refill chain (measured 0.93x). perm_expand's entry
 * moves source lanes 0, 1, ... to the mask's lanes and sets the sign bit of exactly those lanes,
 * so the same vector is the blendv mask (vpermd reads only the low three bits of an index). */
static uint64_t lut_compress[256], lut_expand[256];
static pthread_once_t lut_once = PTHREAD_ONCE_INIT;

static void lut_init(void) {
  for (unsigned m = 0; m < 256; m++) {
    uint64_t cmp = 0, exp = 0;
    unsigned k = 0;
    for (unsigned j = 0; j < 8; j++) {
      if (!(m & (1u << j))) continue;
      cmp |= (uint64_t)j << (8 * k);
      exp |= (uint64_t)(0x80u | k) << (8 * j);
      k++;
    }
    lut_compress[m] = cmp;
    lut_expand[m] = exp;
  }
}

static inline T256 __m256i perm_compress(unsigned m) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)&lut_compress[m]));
}
static inline T256 __m256i perm_expand(unsigned m) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)&lut_expand[m]));
}
/* The lowest `keep` set bits of m (a chunk's last refill). Not pdep: that is microcoded and
 * slow on AMD before Zen 3, which run this kernel. */
static inline unsigned low_bits(unsigned m, int keep) {
  while (__builtin_popcount(m) > keep) m &= ~(1u << (31 - __builtin_clz(m)));
  return m;
}
/* Lanes of w where px (a perm_expand vector) has its sign bit take v's lanes px selects. */
static inline T256 __m256i fill256(__m256i w, __m256i v, __m256i px) {
  __m256 moved = _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(v, px));
  return _mm256_castps_si256(
      _mm256_blendv_ps(_mm256_castsi256_ps(w), moved, _mm256_castsi256_ps(px)));
}
/* Lanes (8-bit mask) where v is zero. */
static inline T256 unsigned empty8(__m256i v) {
  return (unsigned)_mm256_movemask_ps(
      _mm256_castsi256_ps(_mm256_cmpeq_epi32(v, _mm256_setzero_si256())));
}
/* The sum of v's eight lanes (signed). */
static inline T256 int64_t hsum256(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return (int64_t)_mm_cvtsi128_si32(s);
}
/* Move the nodes q[0..popcount(em)-1] of a chunk (q = its row's base + at) into lanes em. */
static inline __attribute__((always_inline)) T256 void fill_lanes(
    __m256i *wl, __m256i *wd, __m256i *wr, __m256i *wb, __m256i *wp, const uint32_t *in, int at,
    unsigned em, __m256i iota, __m256i pflags, const int SIDE) {
  const uint32_t *q = in + at;
  __m256i px = perm_expand(em);
  *wl = fill256(*wl, _mm256_loadu_si256((const __m256i *)(q + AL)), px);
  *wd = fill256(*wd, _mm256_loadu_si256((const __m256i *)(q + AD)), px);
  *wr = fill256(*wr, _mm256_loadu_si256((const __m256i *)(q + AR)), px);
  *wb = fill256(*wb, _mm256_loadu_si256((const __m256i *)(q + AB)), px);
  if (SIDE)
    *wp = fill256(*wp,
                  _mm256_or_si256(_mm256_add_epi32(iota, _mm256_set1_epi32(at)),
                                  _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(q + AP)),
                                                   pflags)),
                  px);
}

static T256 void lvl256_corner(bctx_t *c, int y, int n);
static T256 void lvl256_side(bctx_t *c, int y, int n);

/* Store the children of the lanes in keep at o (a row's five arrays, AL..AP; the free columns
 * only with WB, the P words only with WP); returns how many. */
static inline __attribute__((always_inline)) T256 int store256(uint32_t *o, unsigned keep,
                                                               __m256i cl, __m256i cd, __m256i cr,
                                                               __m256i cb, __m256i cp,
                                                               const int WB, const int WP) {
  __m256i px = perm_compress(keep);
  _mm256_storeu_si256((__m256i *)(o + AL), _mm256_permutevar8x32_epi32(cl, px));
  _mm256_storeu_si256((__m256i *)(o + AD), _mm256_permutevar8x32_epi32(cd, px));
  _mm256_storeu_si256((__m256i *)(o + AR), _mm256_permutevar8x32_epi32(cr, px));
  if (WB) _mm256_storeu_si256((__m256i *)(o + AB), _mm256_permutevar8x32_epi32(cb, px));
  if (WP) _mm256_storeu_si256((__m256i *)(o + AP), _mm256_permutevar8x32_epi32(cp, px));
  return __builtin_popcount(keep);
}
static void leaf256_tab(bctx_t *c, int y, int n);
/* chain270 for the avx2 kernel */
static T256 void chain256(bctx_t *c, int y, int n) {
  nq_swap_sets(c, y);
  c->chain270 = 1;
  lvl256_side(c, y, n);
  c->chain270 = 0;
  nq_swap_sets(c, y);
}

#define NS256 2 /* independent lane groups, as NS512 */

/* The rules a side-part row may have of its own (RULES is a set of them). */
#define R256_B2ROW 1 /* yc == BOUND2: the children's BOUND2 cut */
#define R256_F90 2   /* y == BOUND2: flag PF_90 */
#define R256_F270 4  /* y == BOUND1: flag PF_270 */
#define R256_DEC 8   /* y == k->y90, k->y270 or k->ylate: the flags' first step (PF_S90) */
#define R256_P 16    /* y == k->p90 or k->p270lo..p270hi: dead children (see kctx_t) */
#define R256_L 32    /* look_step: blocked children (either part) */

/* One chunk of row y, as lvl512_body. SIDE and RULES (the rules this side-part row may have of
 * its own, R256_*) are compile-time constants after inlining, so a row's loop carries only its
 * own rule code (and needs fewer of the 16 ymm registers).
 *
 * The loop is bound by the latency of its refill chain (free columns -> empty lanes -> mask ->
 * table load -> vpermd -> blend -> lowest column dropped -> free columns), one per lane group:
 * two more cycles on it cost 5%, while eight more independent vector operations per step cost
 * 2.5% (docs/performance.md). So the chain is kept short (wb & (wb - 1): two operations), and
 * anything that needs more live registers than the two groups' 8-10 state vectors leave (a
 * third group, a second copy of the free columns) costs more in spills than it saves. The
 * children on row N-2 are counted in vector accumulators (no mask moves to general
 * registers); a lane left empty at a slice's end gets all columns "down", so its children are
 * dead and need no lane mask. A row's five arrays are LV_STRIDE apart (AL..AP), so one base
 * pointer serves all of them. */
static inline __attribute__((always_inline)) T256 void lvl256_body(bctx_t *c, int y, int n,
                                                                    const int SIDE,
                                                                    const int RULES) {
  kctx_t *k = &c->k;
  const int yc = y + 1;
  if (yc == k->n - 2 && c->leaf_tab) {
    leaf256_tab(c, y, n);
    return;
  }
  const uint32_t *in = c->L[y];
  const __m256i zero = _mm256_setzero_si256();
  const __m256i pflags = _mm256_set1_epi32((int)PF_FLAGS);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i topv = _mm256_set1_epi32((int)k->topbit);
  const int f90row = (RULES & R256_F90) && y == k->bound2;
  const int f270row = (RULES & R256_F270) && y == k->bound1;
  const int d90row = (RULES & R256_DEC) && y == k->y90;
  const int d270row = (RULES & R256_DEC) && y == k->y270;
  const int late90 = (RULES & R256_DEC) && y == k->ylate && (k->late & 1);
  const int late270 = (RULES & R256_DEC) && y == k->ylate && (k->late & 2);
  const int pr90 = (RULES & R256_P) && y == k->p90;
  const int pr270 = (RULES & R256_P) && prune270_row(k, y);
  const int pr270d = pr270 && y < k->c1;
  const int look = (RULES & R256_L) && look_step(k, y), lookj = k->n - 1 - yc;
  const __m256i notmask = _mm256_set1_epi32((int)~k->mask);
  const __m256i notlast = _mm256_set1_epi32((int)(~k->mask | (SIDE ? k->lastmask : 0)));
  const __m256i pfall = _mm256_set1_epi32((int)(PF_FLAGS | PF_DEC));
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i rowm = _mm256_set1_epi32((int)k->rowmask[yc]);
  const __m256i sidem = _mm256_set1_epi32((int)k->sidemask);
  const int b2row = (RULES & R256_B2ROW) && yc == k->bound2;
  __m256i wl[NS256], wd[NS256], wr[NS256], wb[NS256], wp[NS256];
  int cur[NS256], end[NS256];
  uint64_t nodes = 0;
  for (int s = 0; s < NS256; s++) {
    wl[s] = wd[s] = wr[s] = wb[s] = wp[s] = zero;
    cur[s] = (int)((int64_t)n * s / NS256);
    end[s] = (int)((int64_t)n * (s + 1) / NS256);
  }

  /* Refill the empty lanes of every group from its slice; act[s] = lanes with a parent. */
#define REFILL256()                                                                          \
  unsigned act[NS256];                                                                       \
  unsigned live = 0;                                                                         \
  _Pragma("GCC unroll 4") for (int s = 0; s < NS256; s++) {                                  \
    unsigned em = empty8(wb[s]);                                                             \
    if (__builtin_expect(end[s] - cur[s] >= 8, 1)) {                                         \
      fill_lanes(&wl[s], &wd[s], &wr[s], &wb[s], &wp[s], in, cur[s], em, iota, pfall, SIDE);  \
      cur[s] += __builtin_popcount(em);                                                      \
      act[s] = 0xffu;                                                                        \
    } else {                                                                                 \
      /* the slice's end: lanes left empty get all columns "down", so their children are     \
       * dead (no stored child, no leaf count) without a lane mask in the loop */             \
      int avail = end[s] - cur[s];                                                           \
      if (avail > 0) {                                                                       \
        em = low_bits(em, avail);                                                            \
        fill_lanes(&wl[s], &wd[s], &wr[s], &wb[s], &wp[s], in, cur[s], em, iota, pfall,      \
                   SIDE);                                                                    \
        cur[s] += __builtin_popcount(em);                                                    \
      }                                                                                      \
      __m256i ev = _mm256_cmpeq_epi32(wb[s], zero);                                          \
      wd[s] = _mm256_or_si256(wd[s], ev);                                                    \
      act[s] = ~(unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(ev)) & 0xffu;               \
    }                                                                                        \
    live |= act[s];                                                                          \
  }                                                                                          \
  if (!live) break;

  /* wb & (wb - 1) drops the lowest column in two operations (the loop-carried chain). */
#define CHILD256(s)                                                                          \
  __m256i bit = _mm256_and_si256(wb[s], _mm256_sub_epi32(zero, wb[s]));                      \
  wb[s] = _mm256_and_si256(wb[s], _mm256_add_epi32(wb[s], _mm256_set1_epi32(-1)));           \
  __m256i cl = _mm256_slli_epi32(_mm256_or_si256(wl[s], bit), 1);                            \
  __m256i cd = _mm256_or_si256(wd[s], bit);                                                  \
  __m256i cr = _mm256_srli_epi32(_mm256_or_si256(wr[s], bit), 1);                            \
  __m256i cb = _mm256_andnot_si256(_mm256_or_si256(_mm256_or_si256(cl, cd), cr), rowm);      \
  if (b2row) {                                                                               \
    __m256i sd = _mm256_and_si256(cd, sidem);                                                \
    __m256i none = _mm256_cmpeq_epi32(sd, zero);                                             \
    __m256i full = _mm256_cmpeq_epi32(sd, sidem);                                            \
    cb = _mm256_andnot_si256(none, cb);                                                      \
    cb = _mm256_blendv_epi8(_mm256_and_si256(cb, sidem), cb, full);                          \
  }                                                                                          \
  nodes += (uint64_t)__builtin_popcount(act[s]);                                             \
  __m256i cp = wp[s];                                                                        \
  if (f90row)                                                                                \
    cp = _mm256_or_si256(cp, _mm256_and_si256(_mm256_cmpeq_epi32(bit, one),                  \
                                              _mm256_set1_epi32((int)PF_90)));               \
  if (f270row)                                                                               \
    cp = _mm256_or_si256(cp, _mm256_and_si256(_mm256_cmpeq_epi32(bit, topv),                 \
                                              _mm256_set1_epi32((int)PF_270)));              \
  /* as lvl512_body: column 1 (N-2) taken above this row, on it, or below */                  \
  if (d90row || late90) {                                                                    \
    const __m256i c1v = _mm256_set1_epi32(2);                                                \
    cp = _mm256_or_si256(cp, _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_and_si256(           \
                                                  late90 ? cd : wd[s], c1v), c1v),           \
                                              _mm256_set1_epi32((int)PF_S90)));              \
    if (d90row)                                                                              \
      cp = _mm256_or_si256(cp, _mm256_and_si256(                                             \
                                   _mm256_cmpeq_epi32(_mm256_and_si256(cd, c1v), zero),       \
                                   _mm256_set1_epi32((int)PF_R90)));                         \
  }                                                                                          \
  if (d270row || late270) {                                                                  \
    const __m256i cnv = _mm256_set1_epi32((int)(k->topbit >> 1));                             \
    cp = _mm256_or_si256(cp, _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_and_si256(           \
                                                  late270 ? cd : wd[s], cnv), cnv),          \
                                              _mm256_set1_epi32((int)PF_R270)));             \
    if (d270row)                                                                             \
      cp = _mm256_or_si256(cp, _mm256_and_si256(                                             \
                                   _mm256_cmpeq_epi32(_mm256_and_si256(cd, cnv), zero),       \
                                   _mm256_set1_epi32((int)PF_S270)));                        \
  }                                                                                          \
  /* nq-solver-2's dead children (see kctx_t) get no columns, so they are not stored */      \
  if (pr90) {                                                                                \
    const __m256i fr = _mm256_set1_epi32((int)(PF_90 | PF_R90));                             \
    cb = _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_and_si256(cp, fr), fr), cb);           \
  }                                                                                          \
  if (pr270) {                                                                               \
    const __m256i f = _mm256_set1_epi32((int)PF_270);                                        \
    const __m256i r = _mm256_set1_epi32((int)(pr270d ? k->topbit >> 1 : PF_R270));           \
    cb = _mm256_andnot_si256(                                                                \
        _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_and_si256(cp, f), f),                     \
                         _mm256_cmpeq_epi32(_mm256_and_si256(pr270d ? cd : cp, r), r)),      \
        cb);                                                                                 \
  }                                                                                          \
  /* nq-solver-4's blocked children (nq_unit_blocked) too: a row below whose blocked columns \
   * are all of them (the largest such word is ~0), or a free column blocked on every row */  \
  if (look) {                                                                                \
    const __m256i x0 = _mm256_or_si256(cd, notmask);                                         \
    __m256i all = _mm256_or_si256(x0, _mm256_or_si256(cl, cr)), top = zero;                  \
    _Pragma("GCC unroll 8") for (int j = 1; j <= NQ_UNIT_LOOK_MAX; j++) {                    \
      if (j > lookj) break;                                                                  \
      __m256i blk = _mm256_or_si256(j == lookj ? _mm256_or_si256(cd, notlast) : x0,           \
                                    _mm256_or_si256(_mm256_slli_epi32(cl, j),                 \
                                                    _mm256_srli_epi32(cr, j)));              \
      top = _mm256_max_epu32(top, blk);                                                      \
      all = _mm256_and_si256(all, blk);                                                      \
    }                                                                                        \
    cb = _mm256_and_si256(_mm256_andnot_si256(_mm256_cmpeq_epi32(top, _mm256_set1_epi32(-1)), cb), \
                          _mm256_cmpeq_epi32(all, x0));                                      \
  }

  if (yc == k->n - 2) {
    const __m256i maskv = _mm256_set1_epi32((int)k->mask);
    const __m256i lastm = _mm256_set1_epi32((int)k->lastmask);
    const __m256i endv = _mm256_set1_epi32((int)k->endbit);
    const int b2last = b2row; /* yc == N-2 here */
    /* Counted in vector accumulators (lanes of -1 added), without lane masks: a dead lane
     * has cb = 0. Per step and lane, 2 - [cb == 0] - [cb has < 2 bits] row N-1 nodes (each
     * compare adds -1). */
    __m256i accn = zero, accs = zero;
    int64_t steps = 0;
    for (;;) {
      REFILL256()
      steps++;
      _Pragma("GCC unroll 4") for (int s = 0; s < NS256; s++) {
        CHILD256(s);
        accn = _mm256_add_epi32(
            accn, _mm256_add_epi32(_mm256_cmpeq_epi32(cb, zero),
                                   _mm256_cmpeq_epi32(
                                       _mm256_and_si256(cb, _mm256_sub_epi32(cb, one)), zero)));
        __m256i f = _mm256_andnot_si256(cd, maskv);
        __m256i f1 = _mm256_and_si256(f, _mm256_sub_epi32(zero, f));
        __m256i f2 = _mm256_xor_si256(f, f1);
        /* Row N-2 takes f1 (or f2), row N-1 the other: a solution when the first is allowed,
         * the other is not attacked by rows < N-2 (g; in the side part not in LASTMASK
         * either) and the two are not adjacent (f2 == f1 << 1). */
        __m256i g = _mm256_or_si256(_mm256_slli_epi32(cl, 1), _mm256_srli_epi32(cr, 1));
        if (SIDE) g = _mm256_or_si256(g, lastm);
        __m256i adj = _mm256_cmpeq_epi32(f2, _mm256_slli_epi32(f1, 1));
        __m256i ok1 = _mm256_andnot_si256(
            _mm256_or_si256(_mm256_cmpeq_epi32(_mm256_and_si256(cb, f1), zero), adj),
            _mm256_cmpeq_epi32(_mm256_and_si256(g, f2), zero));
        __m256i ok2 = _mm256_andnot_si256(
            _mm256_or_si256(_mm256_cmpeq_epi32(_mm256_and_si256(cb, f2), zero), adj),
            _mm256_cmpeq_epi32(_mm256_and_si256(g, f1), zero));
        if (!SIDE) {
          accs = _mm256_add_epi32(accs, _mm256_add_epi32(ok1, ok2));
        } else {
          /* the rotation check is needed only with a flag, ENDBIT last, or col 0 on BOUND2 */
          __m256i fast = _mm256_cmpeq_epi32(_mm256_and_si256(cp, pflags), zero);
          __m256i fast1 = _mm256_andnot_si256(_mm256_cmpeq_epi32(f2, endv), fast);
          __m256i fast2 = _mm256_andnot_si256(_mm256_cmpeq_epi32(f1, endv), fast);
          if (b2last) {
            fast1 = _mm256_andnot_si256(_mm256_cmpeq_epi32(f1, one), fast1);
            fast2 = _mm256_andnot_si256(_mm256_cmpeq_epi32(f2, one), fast2);
          }
          __m256i slow1 = _mm256_andnot_si256(fast1, ok1), slow2 = _mm256_andnot_si256(fast2, ok2);
          accs = _mm256_add_epi32(accs, _mm256_add_epi32(_mm256_and_si256(ok1, fast1),
                                                         _mm256_and_si256(ok2, fast2)));
          if (__builtin_expect(!_mm256_testz_si256(_mm256_or_si256(slow1, slow2),
                                                   _mm256_or_si256(slow1, slow2)), 0)) {
            uint32_t vb[8], vp[8], v1[8], v2[8];
            _mm256_storeu_si256((__m256i *)vb, bit);
            _mm256_storeu_si256((__m256i *)vp, wp[s]);
            _mm256_storeu_si256((__m256i *)v1, f1);
            _mm256_storeu_si256((__m256i *)v2, f2);
            for (unsigned mm = 0xffu & ~empty8(slow1); mm; mm &= mm - 1) {
              int i = __builtin_ctz(mm);
              side_leaf(c, vp[i], vb[i], v1[i], v2[i]);
            }
            for (unsigned mm = 0xffu & ~empty8(slow2); mm; mm &= mm - 1) {
              int i = __builtin_ctz(mm);
              side_leaf(c, vp[i], vb[i], v2[i], v1[i]);
            }
          }
        }
      }
    }
    nodes += (uint64_t)(16 * NS256 * steps + hsum256(accn));
    uint64_t sols = (uint64_t)(-hsum256(accs));
    k->c8 += sols;
    if (SIDE && c->nq) nq_side_flush(c); /* before this chunk is overwritten */
    k->nodes += nodes;
    return;
  }

  uint32_t *out = c->L[yc];
  /* leaf256_tab recomputes a row N-3 node's free columns (off any chain there), so they are
   * not stored */
  const int nob = c->leaf_tab && yc == k->n - 3;
  int m = 0;
  /* row BOUND1's children with PF_270 go to the second set of arrays (nq_chain_plan) */
  const int split = (RULES & R256_F270) && y == k->bound1 && c->split270 && !c->chain270;
  uint32_t *xout = c->aL[yc];
  int m2 = 0;
  for (;;) {
    REFILL256()
    _Pragma("GCC unroll 4") for (int s = 0; s < NS256; s++) {
      CHILD256(s);
      unsigned keep = ~empty8(cb) & 0xffu;
      if (split) {
        unsigned fk =
            keep & (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(bit, topv)));
        keep &= ~fk;
        m2 += store256(xout + m2, fk, cl, cd, cr, cb, cp, !nob, 1);
      }
      m += store256(out + m, keep, cl, cd, cr, cb, cp, !nob, SIDE);
    }
    if (m > LV_CAP - 8 * NS256) {
      if (SIDE) lvl256_side(c, yc, m); else lvl256_corner(c, yc, m);
      m = 0;
    }
    if (split && m2 > LV_CAP - 8 * NS256) {
      chain256(c, yc, m2);
      m2 = 0;
    }
  }
  if (m) {
    if (SIDE) lvl256_side(c, yc, m); else lvl256_corner(c, yc, m);
  }
  if (m2) chain256(c, yc, m2);
  k->nodes += nodes;
#undef REFILL256
#undef CHILD256
}

static T256 void lvl256_corner(bctx_t *c, int y, int n) {
  if (look_step(&c->k, y))
    lvl256_body(c, y, n, 0, R256_L);
  else
    lvl256_body(c, y, n, 0, 0);
}
/* The side part's rows with rules of their own get their own copy of the loop (as lvls_side),
 * one per rule; the rare row with two (BOUND1 just above BOUND2) a copy with all of them. */
static T256 void lvl256_side(bctx_t *c, int y, int n) {
  const kctx_t *k = &c->k;
  int r = (y + 1 == k->bound2 ? R256_B2ROW : 0) | (y == k->bound2 ? R256_F90 : 0) |
          (y == k->bound1 ? R256_F270 : 0) |
          (y == k->y90 || y == k->y270 || y == k->ylate ? R256_DEC : 0) |
          (prune_step(k, y, c->chain270) ? R256_P : 0) | (look_step(k, y) ? R256_L : 0);
  switch (r) {
  case 0: lvl256_body(c, y, n, 1, 0); break;
  case R256_B2ROW: lvl256_body(c, y, n, 1, R256_B2ROW); break;
  case R256_F90: lvl256_body(c, y, n, 1, R256_F90); break;
  case R256_F270: lvl256_body(c, y, n, 1, R256_F270); break;
  case R256_DEC: lvl256_body(c, y, n, 1, R256_DEC); break;
  case R256_P: lvl256_body(c, y, n, 1, R256_P); break;
  case R256_L: lvl256_body(c, y, n, 1, R256_L); break;
  default:
    lvl256_body(c, y, n, 1, R256_B2ROW | R256_F90 | R256_F270 | R256_DEC | R256_P | R256_L);
    break;
  }
}

/* ---- AVX2, row N-3 chunks without a walk ----
 *
 * As leaf512_tab, a row N-3 node's subtree (rows N-2 and N-1) depends only on, per free column
 * f1 < f2 < f3, whether row N-3 may use it, whether the placed queens' diagonals (and the row's
 * rules) block it on row N-2 and on row N-1, and whether the next free column is one or two
 * columns further. AVX2 has none of the instructions leaf512_tab cuts its codes with, so here
 * every such fact is a lane mask of its own (one and + one compare each), and the six orders of
 * the three columns (leaf_order: which goes to rows N-3, N-2, N-1) are lane masks too: a legal
 * row N-3/N-2 pair is two facts and its columns' distance, a solution that pair, its row N-1
 * column and the two other distances. A chunk is read linearly, 8 nodes per vector, with no
 * refill and no loop-carried chain but the sums (lvl256_body's in-place leaf is bound by its
 * refill chain). The node count is |row N-3's columns| + the legal pairs, exactly what that leaf
 * adds. The side part's solutions that need the rotation check (an undecided flag, ENDBIT on
 * row N-1, column 0 on a BOUND2 row) are marked per order in a byte mask per vector (movmskps,
 * no branch) and handed to side_leaf after the loop; those of a lane whose flag's check rejects
 * (PF_S90) are not counted. Units with BOUND1 on row N-3 keep the in-place leaf. Measured
 * against it: 1.05x at N = 17 (docs/performance.md). */
static atomic_int leaf2_state; /* the AVX2 row N-3 leaf (NQ_LEAF2) */

/* Whether (and how) a unit's row N-3 chunks go through leaf256_tab: 0, or 1 + its LEAF_ mode. */
static int leaf256_ok(const kctx_t *k);

static inline __attribute__((always_inline)) T256 void leaf256_body(bctx_t *c, int y, int n,
                                                                    const int MODE) {
  kctx_t *k = &c->k;
  const int side = MODE != LEAF_CORNER;
  const uint32_t *in = c->L[y];
  /* lanes past the chunk get no free column (the arrays have room: LV_STRIDE), so they add
   * nothing: see the node sum below */
  for (int j = 0; j < 8; j++) c->D[y][n + j] = k->mask;
  const __m256i zero = _mm256_setzero_si256();
  const __m256i maskv = _mm256_set1_epi32((int)k->mask);
  const __m256i rowy = _mm256_set1_epi32((int)k->rowmask[y]);
  const __m256i nrow2 = _mm256_set1_epi32((int)(k->mask & ~k->rowmask[y + 1]));
  const __m256i lastm = _mm256_set1_epi32((int)(side ? k->lastmask : 0));
  const __m256i sidem = _mm256_set1_epi32((int)k->sidemask);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i pflags = _mm256_set1_epi32((int)PF_FLAGS);
  const __m256i endv = _mm256_set1_epi32((int)k->endbit);
  uint64_t s_m[LV_CAP / 8 + 1]; /* per vector: lanes by order (8 bits each) to queue */
  __m256i accn = zero, accs = zero;
  const int lanes = (n + 7) & ~7; /* the loop's, the padding's included */
  for (int i = 0; i < n; i += 8) {
    const uint32_t *q = in + i;
    __m256i l = _mm256_loadu_si256((const __m256i *)(q + AL));
    __m256i d = _mm256_loadu_si256((const __m256i *)(q + AD));
    __m256i r = _mm256_loadu_si256((const __m256i *)(q + AR));
    /* row N-3's columns, as lvl256_body's child step (which does not store them here) */
    __m256i b = _mm256_andnot_si256(_mm256_or_si256(_mm256_or_si256(l, d), r), rowy);
    if (MODE == LEAF_B2N3) { /* BOUND2 = N-3 (a stored node has a side column down) */
      __m256i full = _mm256_cmpeq_epi32(_mm256_and_si256(d, sidem), sidem);
      b = _mm256_blendv_epi8(_mm256_and_si256(b, sidem), b, full);
    }
    __m256i f = _mm256_andnot_si256(d, maskv);
    __m256i f1 = _mm256_and_si256(f, _mm256_sub_epi32(zero, f));
    __m256i g = _mm256_xor_si256(f, f1);
    __m256i f2 = _mm256_and_si256(g, _mm256_sub_epi32(zero, g));
    __m256i f3 = _mm256_xor_si256(g, f2);
    /* blocked on row N-2 and on row N-1 by the queens of rows < N-3 and the rows' rules */
    __m256i u2 = _mm256_or_si256(_mm256_or_si256(_mm256_slli_epi32(l, 1), _mm256_srli_epi32(r, 1)),
                                 nrow2);
    __m256i u1 = _mm256_or_si256(_mm256_slli_epi32(l, 2), _mm256_srli_epi32(r, 2));
    if (side) u1 = _mm256_or_si256(u1, lastm);
    /* per column: row N-3 may not use it (na), row N-2 may (n), row N-1 may (w); all -1 / 0 */
#define NOTIN(m, fi) _mm256_cmpeq_epi32(_mm256_and_si256(m, fi), zero)
    __m256i na1 = NOTIN(b, f1), na2 = NOTIN(b, f2), na3 = NOTIN(b, f3);
    __m256i n1 = NOTIN(u2, f1), n2 = NOTIN(u2, f2), n3 = NOTIN(u2, f3);
    __m256i w1 = NOTIN(u1, f1), w2 = NOTIN(u1, f2), w3 = NOTIN(u1, f3);
    __m256i nqf = zero;
    if (side) {
      /* The flags and their first steps (PF_S90; flag_class says why): a lane whose check
       * rejects there counts nothing (its row N-1 columns are taken away); nqf = lanes with
       * no flag whose first step is undecided. rj, sj: R and S at their flag's bit. */
      const __m256i p = _mm256_loadu_si256((const __m256i *)(q + AP));
      const __m256i b30 = _mm256_set1_epi32((int)PF_90), b31 = _mm256_set1_epi32((int)PF_270);
      const __m256i p3 = _mm256_slli_epi32(p, 3);
      const __m256i rj = _mm256_or_si256(_mm256_and_si256(p3, b30),
                                         _mm256_and_si256(_mm256_slli_epi32(p, 2), b31));
      const __m256i sj = _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi32(p, 4), b30),
                                         _mm256_and_si256(p3, b31));
      const __m256i live = _mm256_cmpeq_epi32(_mm256_and_si256(p, rj), zero);
      nqf = _mm256_cmpeq_epi32(
          _mm256_andnot_si256(_mm256_or_si256(rj, sj), _mm256_and_si256(p, pflags)), zero);
      w1 = _mm256_and_si256(w1, live);
      w2 = _mm256_and_si256(w2, live);
      w3 = _mm256_and_si256(w3, live);
    }
    /* the next free column one (a) or two (t) columns further */
    __m256i a12 = _mm256_cmpeq_epi32(f2, _mm256_slli_epi32(f1, 1));
    __m256i t12 = _mm256_cmpeq_epi32(f2, _mm256_slli_epi32(f1, 2));
    __m256i a23 = _mm256_cmpeq_epi32(f3, _mm256_slli_epi32(f2, 1));
    __m256i t23 = _mm256_cmpeq_epi32(f3, _mm256_slli_epi32(f2, 2));
    /* legal pairs (row N-3 column, row N-2 column); f1 and f3 are never adjacent */
    __m256i p12 = _mm256_andnot_si256(_mm256_or_si256(a12, na1), n2);
    __m256i p21 = _mm256_andnot_si256(_mm256_or_si256(a12, na2), n1);
    __m256i p13 = _mm256_andnot_si256(na1, n3);
    __m256i p31 = _mm256_andnot_si256(na3, n1);
    __m256i p23 = _mm256_andnot_si256(_mm256_or_si256(a23, na2), n3);
    __m256i p32 = _mm256_andnot_si256(_mm256_or_si256(a23, na3), n2);
    if (MODE == LEAF_B2N2) { /* BOUND2 = N-2: a free side column may not go to row N-1 */
      __m256i s1 = NOTIN(sidem, f1), s2 = NOTIN(sidem, f2), s3 = NOTIN(sidem, f3);
      p12 = _mm256_and_si256(p12, s3);
      p21 = _mm256_and_si256(p21, s3);
      p13 = _mm256_and_si256(p13, s2);
      p31 = _mm256_and_si256(p31, s2);
      p23 = _mm256_and_si256(p23, s1);
      p32 = _mm256_and_si256(p32, s1);
    }
#undef NOTIN
    /* solutions, in leaf_order's order: the pair, row N-1's column, and the distances between
     * row N-1's column and the two others (f1 and f3 are two apart only when a12 and a23) */
    __m256i s0 = _mm256_andnot_si256(a23, _mm256_and_si256(p12, w3));
    __m256i s1 = _mm256_andnot_si256(_mm256_or_si256(a23, t12), _mm256_and_si256(p13, w2));
    __m256i s2 = _mm256_andnot_si256(t23, _mm256_and_si256(p21, w3));
    __m256i s3 = _mm256_andnot_si256(t12, _mm256_and_si256(p23, w1));
    __m256i s4 = _mm256_andnot_si256(_mm256_or_si256(a12, t23), _mm256_and_si256(p31, w2));
    __m256i s5 = _mm256_andnot_si256(a12, _mm256_and_si256(p32, w1));
    /* a lane's nodes: 3 + na1 + na2 + na3 - (its pairs); lanes past the chunk have na = -1 */
    __m256i pairs = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(p12, p21),
                                                      _mm256_add_epi32(p13, p31)),
                                     _mm256_add_epi32(p23, p32));
    accn = _mm256_add_epi32(
        accn, _mm256_sub_epi32(_mm256_add_epi32(_mm256_add_epi32(na1, na2), na3), pairs));
    accs = _mm256_add_epi32(accs, _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(s0, s1),
                                                                    _mm256_add_epi32(s2, s3)),
                                                   _mm256_add_epi32(s4, s5)));
    if (side) {
      /* Solutions that need the rotation check: every one of a node with a flag, those whose
       * row N-1 column is ENDBIT, and column 0 on a BOUND2 row. Counted above; per vector, a
       * lane mask per order goes to s_m (no branch, no compress: scalar stores), and the loop
       * after this one queues them and takes them back out of the count. */
      /* by row N-1's column: the solutions that need no check */
      __m256i k1 = _mm256_andnot_si256(_mm256_cmpeq_epi32(f1, endv), nqf);
      __m256i k2 = _mm256_andnot_si256(_mm256_cmpeq_epi32(f2, endv), nqf);
      __m256i k3 = _mm256_andnot_si256(_mm256_cmpeq_epi32(f3, endv), nqf);
      __m256i k0a = k3, k0b = k2, k2a = k3, k4a = k2; /* orders 0, 1, 2, 4 */
      if (MODE == LEAF_B2N3) { /* row N-3 (BOUND2) on column 0: the orders with f1 first */
        __m256i c0 = _mm256_cmpeq_epi32(f1, one);
        k0a = _mm256_andnot_si256(c0, k0a);
        k0b = _mm256_andnot_si256(c0, k0b);
      }
      if (MODE == LEAF_B2N2) { /* row N-2 (BOUND2) on column 0: the orders with f1 second */
        __m256i c0 = _mm256_cmpeq_epi32(f1, one);
        k2a = _mm256_andnot_si256(c0, k2a);
        k4a = _mm256_andnot_si256(c0, k4a);
      }
#define SLOW8(sj, kj) (uint64_t)(unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_andnot_si256(kj, sj)))
      s_m[i >> 3] = SLOW8(s0, k0a) | SLOW8(s1, k0b) << 8 | SLOW8(s2, k2a) << 16 |
                    SLOW8(s3, k1) << 24 | SLOW8(s4, k4a) << 32 | SLOW8(s5, k1) << 40;
#undef SLOW8
    }
  }
  int64_t sols = -hsum256(accs);
  if (side)
    for (int v = 0; v < lanes >> 3; v++) {
      for (uint64_t m = s_m[v]; m; m &= m - 1) {
        const int bit = __builtin_ctzll(m), at = 8 * v + (bit & 7);
        const uint8_t *o = leaf_order[bit >> 3];
        uint32_t fc[3];
        leaf_cols(k->mask & ~c->D[y][at], fc, 3);
        side_leaf(c, (uint32_t)at, fc[o[0]], fc[o[1]], fc[o[2]]);
        sols--;
      }
    }
  k->nodes += (uint64_t)(3 * (int64_t)lanes + hsum256(accn));
  k->c8 += (uint64_t)sols;
  if (side && c->nq) nq_side_flush(c); /* before this chunk is overwritten */
}

static T256 void leaf256_tab(bctx_t *c, int y, int n) {
  switch (c->leaf_tab) {
  case 1 + LEAF_SIDE: leaf256_body(c, y, n, LEAF_SIDE); break;
  case 1 + LEAF_B2N3: leaf256_body(c, y, n, LEAF_B2N3); break;
  case 1 + LEAF_B2N2: leaf256_body(c, y, n, LEAF_B2N2); break;
  default: leaf256_body(c, y, n, LEAF_CORNER); break;
  }
}

/* The AVX-512 leaf tables: 0 = not yet decided, 1 = the CPU lacks them, 2 = on, 3 = off. */
static atomic_int leaf_state;

static int leaf_switch(void) {
  int h = atomic_load_explicit(&leaf_state, memory_order_relaxed);
  if (!h) {
    const char *env = nq_switch_get(NQ_SW_LEAF);
    if (!(__builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vpopcntdq") &&
          __builtin_cpu_supports("avx512cd")))
      h = 1;
    else
      h = env && !strcmp(env, "0") ? 3 : 2;
    pthread_once(&leaf_once, leaf_init);
    atomic_store_explicit(&leaf_state, h, memory_order_relaxed);
  }
  return h;
}

/* Whether (and how) a unit's row N-3 chunks go through leaf512_tab: 0, or 1 + its LEAF_ mode. */
static int leaf_tab_ok(const kctx_t *k) {
  if (leaf_switch() != 2 || k->n > 28) return 0;
  if (!k->side) return 1 + LEAF_CORNER;
  if (k->bound1 >= k->n - 3) return 0; /* (no such unit: BOUND1 < N-1-BOUND1) */
  return 1 + (k->bound2 == k->n - 3 ? LEAF_B2N3 : k->bound2 == k->n - 2 ? LEAF_B2N2 : LEAF_SIDE);
}

static int leaf4_switch(void); /* with the other switches, below */

/* Whether (and how) a unit's row N-4 chunks go through leaf512_four: 0, or 1 + its LEAF4_ mode.
 * Only with the row N-3 tables (the same CPU features and N range), for units that have a row
 * N-4 chunk and no BOUND1 rule on rows N-4..N-1 (in the side part BOUND1 < BOUND2, so only
 * corner units with BOUND1 > N-4 are left out). */
static int leaf4_ok(const kctx_t *k) {
  if (leaf4_switch() != 2 || leaf_switch() != 2 || k->n > 28 || k->n < 8 ||
      k->bound1 > k->n - 4 || k->y0 > k->n - 4)
    return 0;
  pthread_once(&lf4_once, lf4_init);
  if (!k->side) return 1 + LEAF4_CORNER;
  if (k->bound2 < k->n - 4) return 1 + LEAF4_SIDE;
  return 1 + LEAF4_B2 + k->bound2 - (k->n - 4); /* BOUND2 <= N-2 */
}

int nq_avx512_cpu_has(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("bmi2") &&
         __builtin_cpu_supports("popcnt");
}

int nq_avx2_cpu_has(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") &&
         __builtin_cpu_supports("popcnt");
}

static void leaf_switch_set(int on) {
  (void)leaf_switch(); /* decided first, so a later first call cannot undo this */
  atomic_store_explicit(&leaf_state, on ? 2 : 3, memory_order_relaxed);
}

/* A switch that an environment variable set to 0 starts off: 0 = not yet decided, 2 = on,
 * 3 = off. */
static int env_switch(atomic_int *state, nq_switch_t var) {
  int h = atomic_load_explicit(state, memory_order_relaxed);
  if (!h) {
    const char *env = nq_switch_get(var);
    h = env && !strcmp(env, "0") ? 3 : 2;
    atomic_store_explicit(state, h, memory_order_relaxed);
  }
  return h;
}

static atomic_int pack_state;  /* the packed side part (PK_SH) */
static atomic_int leaf4_state; /* the row N-4 tables (leaf512_four) */

static int pack_switch(void) { return env_switch(&pack_state, NQ_SW_PACK); }
static void pack_switch_set(int on) {
  atomic_store_explicit(&pack_state, on ? 2 : 3, memory_order_relaxed);
}
static int leaf4_switch(void) { return env_switch(&leaf4_state, NQ_SW_LEAF4); }
static void leaf4_switch_set(int on) {
  atomic_store_explicit(&leaf4_state, on ? 2 : 3, memory_order_relaxed);
}
static atomic_int flags_st; /* the flags decided by the search (PF_S90), NQ_FLAGDEC */
static int flags_switch(void) { return env_switch(&flags_st, NQ_SW_FLAGDEC); }
static void flags_switch_set(int on) {
  atomic_store_explicit(&flags_st, on ? 2 : 3, memory_order_relaxed);
}
static int leaf2_switch(void) { return env_switch(&leaf2_state, NQ_SW_LEAF2); }
static void leaf2_switch_set(int on) {
  atomic_store_explicit(&leaf2_state, on ? 2 : 3, memory_order_relaxed);
}

/* As leaf_tab_ok, for the AVX2 leaf (which needs only AVX2). */
static int leaf256_ok(const kctx_t *k) {
  if (leaf2_switch() != 2 || k->n > 28) return 0;
  if (!k->side) return 1 + LEAF_CORNER;
  if (k->bound1 >= k->n - 3) return 0;
  return 1 + (k->bound2 == k->n - 3 ? LEAF_B2N3 : k->bound2 == k->n - 2 ? LEAF_B2N2 : LEAF_SIDE);
}

/* Whether this unit's flags are decided by the search (PF_S90; avx512 or avx2): only with the
 * table leaves (the only readers), except on the rows <= N-5, whose rejecting first steps the
 * dead children need (kctx_t) whatever NQ_FLAGDEC says. (The prefix's rows were decided with the
 * root's flags, solve_batched.) A check whose deciding row is at or below the leaves' row is
 * decided in part on the row above the leaves (k->ylate): the queen on column 1 above the
 * leaves is above row N-1-c1, so PF_90's check passes; the one on column N-2 above the leaves is
 * above row c1, so PF_270's rejects. */
static void flags_plan(bctx_t *c) {
  kctx_t *k = &c->k;
  const int leafrow = c->leaf4 ? k->n - 4 : k->n - 3;
  if (!c->leaf_tab || flags_switch() != 2) {
    /* only the rejecting first steps the search needs for its dead nodes (see kctx_t) */
    if (k->y90 > k->n - 5) k->y90 = -1;
    if (k->y270 > k->n - 5) k->y270 = -1;
    return;
  }
  if (k->y90 >= leafrow) {
    k->y90 = -1;
    k->late |= 1;
  }
  if (k->y270 >= leafrow) {
    k->y270 = -1;
    k->late |= 2;
  }
  if (!k->late || k->y0 > leafrow) return;
  if (k->y0 < leafrow) {
    k->ylate = leafrow - 1;
    return;
  }
  uint32_t above = 0; /* y0 == leafrow: the root is a leaf node */
  for (int y = 0; y < k->y0; y++) above |= k->board[y];
  if ((k->late & 1) && (above & 2u)) c->P[k->y0][0] |= PF_S90;
  if ((k->late & 2) && (above & (k->topbit >> 1))) c->P[k->y0][0] |= PF_R270;
}

void nq_avx512_search(bctx_t *c, int y0) {
  c->leaf_tab = leaf_tab_ok(&c->k);
  c->leaf4 = leaf4_ok(&c->k);
  flags_plan(c);
  nq_chain_plan(c);
  if (c->k.side && c->k.n <= PK_SH && pack_switch() == 2) {
    c->pk = 1;
    c->D[y0][0] |= c->P[y0][0]; /* the flags; its own index is 0 */
    lvl512_sidepk(c, y0, 1);
  } else if (c->k.side) {
    lvl512_side(c, y0, 1);
  } else {
    lvl512_corner(c, y0, 1);
  }
}

void nq_avx2_search(bctx_t *c, int y0) {
  pthread_once(&lut_once, lut_init);
  c->leaf_tab = leaf256_ok(&c->k);
  flags_plan(c);
  nq_chain_plan(c);
  if (c->k.side) lvl256_side(c, y0, 1); else lvl256_corner(c, y0, 1);
}

#else /* no x86 SIMD: the switches cannot be on */

static int leaf_switch(void) { return 1; }
static void leaf_switch_set(int on) { (void)on; }
static int pack_switch(void) { return 1; }
static void pack_switch_set(int on) { (void)on; }
static int leaf4_switch(void) { return 1; }
static void leaf4_switch_set(int on) { (void)on; }
static int flags_switch(void) { return 1; }
static void flags_switch_set(int on) { (void)on; }
static int leaf2_switch(void) { return 1; }
static void leaf2_switch_set(int on) { (void)on; }

#endif

/* ---- the switches of solver_simd.h ---- */

/* state() is 1 where the switch cannot be on, 2 on, 3 off. */
static int switch_set(int (*state)(void), void (*set)(int), int on) {
  if (state() == 1) return on ? NQ_ENODEV : 0;
  set(on);
  return 0;
}

int nq_fast_leaf_table_set(int on) { return switch_set(leaf_switch, leaf_switch_set, on); }
int nq_fast_leaf_table_in_use(void) { return leaf_switch() == 2; }

int nq_fast_leaf_four_set(int on) { return switch_set(leaf4_switch, leaf4_switch_set, on); }
int nq_fast_leaf_four_in_use(void) { return leaf4_switch() == 2; }

int nq_fast_flag_decide_set(int on) { return switch_set(flags_switch, flags_switch_set, on); }
int nq_fast_flag_decide_in_use(void) { return flags_switch() == 2; }

int nq_fast_leaf_avx2_set(int on) { return switch_set(leaf2_switch, leaf2_switch_set, on); }
int nq_fast_leaf_avx2_in_use(void) { return leaf2_switch() == 2; }

int nq_fast_side_pack_set(int on) { return switch_set(pack_switch, pack_switch_set, on); }
int nq_fast_side_pack_in_use(void) { return pack_switch() == 2; }
