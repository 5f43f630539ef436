/* nq: the fast kernel's arm64 variant, neon: the row-batched search of solver_fast.c in NEON's
 * four 32-bit lanes (NEON is part of every ARMv8-A CPU, so an aarch64 build always has it). It is
 * the avx2 variant's loop (lvl256_body in solver_x86.c) with lanes of four instead of eight, and
 * without the avx2 variant's row N-3 leaf or the flags decided for it (PF_S90): rows N-2 and N-1
 * are counted in vector accumulators from a row N-2 child's two free columns, as there. What maps
 * from x86 and what does not is in docs/performance.md ("The arm64 kernel").
 *
 * x86 -> NEON, instruction by instruction: the lane compress and expand come from 16-entry tables
 * of byte indices (vqtbl1q_u8 / vqtbl2q_u8, one instruction each: tbl2 picks each byte from the
 * old lanes or the loaded nodes, so no blend is needed); movemask is an AND with the lane bits and
 * an add across the vector (addv); testz is a max across it (umaxv). The rest (lowest bit,
 * shifts, compares, unsigned max, bit clear) has a NEON instruction of its own.
 *
 * Counts and node counts equal the reference exactly (tests/test_solver_fast.c, run on arm64 under
 * qemu by scripts/build-arm64.sh --test). */
#include "solver_batch.h"

#if NQ_HAVE_NEON

#include <arm_neon.h>
#include <pthread.h>
#include <string.h>

/* Independent lane groups per chunk, each over its own slice of the chunk (as NS256: two groups'
 * refill chains overlap). Not tuned on arm64 hardware (none measured, see docs/performance.md). */
#define NSN 2
#define NL 4 /* lanes */

/* The rules a side-part row may have of its own (RULES of lvln_body), as R256_*. */
#define RN_B2ROW 1 /* yc == BOUND2: the children's BOUND2 cut */
#define RN_F90 2   /* y == BOUND2: flag PF_90 */
#define RN_F270 4  /* y == BOUND1: flag PF_270 */
#define RN_DEC 8   /* y == k->y90 or k->y270 (rows <= N-5): the rejecting first steps PF_R90/R270 */
#define RN_P 16    /* prune_step: dead children (see kctx_t) */
#define RN_L 32    /* look_step: blocked children (either part) */

/* Byte indices by 4-bit lane mask. tab_compress[m]: the lanes of m, in order, to lanes 0, 1, ...
 * (then lane 0 again: what is stored past the kept ones is never read). tab_fill[m]: for
 * vqtbl2q_u8 over {old lanes, loaded nodes}: the lanes of m take loaded nodes 0, 1, ... (bytes
 * 16..31), the others keep their own (bytes 0..15). */
static uint8_t tab_compress[16][16], tab_fill[16][16];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void tab_init(void) {
  for (unsigned m = 0; m < 16; m++) {
    unsigned k = 0;
    memset(tab_compress[m], 0, 16);
    for (unsigned j = 0; j < NL; j++) {
      for (unsigned b = 0; b < 4; b++) {
        tab_fill[m][4 * j + b] = (uint8_t)(m & (1u << j) ? 16 + 4 * k + b : 4 * j + b);
        if (m & (1u << j)) tab_compress[m][4 * k + b] = (uint8_t)(4 * j + b);
      }
      k += (m >> j) & 1u;
    }
  }
}

/* Bits set in a 4-bit mask (one shift, no popcount instruction: arm64 has none for general
 * registers before FEAT_CSSC). */
static inline int pop4(unsigned m) { return (int)((0x4332322132212110ull >> (4 * m)) & 15u); }

/* The lowest `keep` set bits of a 4-bit mask (a slice's last refill). */
static inline unsigned low4(unsigned m, int keep) {
  while (pop4(m) > keep) m &= ~(1u << (31 - __builtin_clz(m)));
  return m;
}

/* 0 - v, lane by lane (v & -v: the lowest set bit). */
static inline uint32x4_t neg4(uint32x4_t v) {
  return vreinterpretq_u32_s32(vnegq_s32(vreinterpretq_s32_u32(v)));
}

/* Lanes (4-bit mask) where v is all ones. */
static inline unsigned lanes4(uint32x4_t v) {
  const uint32x4_t lb = {1, 2, 4, 8};
  return vaddvq_u32(vandq_u32(v, lb));
}
/* Lanes where v is zero. */
static inline unsigned empty4(uint32x4_t v) { return lanes4(vceqzq_u32(v)); }

static inline uint32x4_t fill4(uint32x4_t w, const uint32_t *q, uint8x16_t idx) {
  uint8x16x2_t t = {{vreinterpretq_u8_u32(w), vreinterpretq_u8_u32(vld1q_u32(q))}};
  return vreinterpretq_u32_u8(vqtbl2q_u8(t, idx));
}

/* Move the nodes q[0..pop4(em)-1] of a chunk (q = its row's base + at) into lanes em. */
static inline __attribute__((always_inline)) void fill_lanes(
    uint32x4_t *wl, uint32x4_t *wd, uint32x4_t *wr, uint32x4_t *wb, uint32x4_t *wp,
    const uint32_t *in, int at, unsigned em, uint32x4_t iota, uint32x4_t pflags, const int SIDE) {
  const uint32_t *q = in + at;
  const uint8x16_t idx = vld1q_u8(tab_fill[em]);
  *wl = fill4(*wl, q + AL, idx);
  *wd = fill4(*wd, q + AD, idx);
  *wr = fill4(*wr, q + AR, idx);
  *wb = fill4(*wb, q + AB, idx);
  if (SIDE) {
    uint32x4_t p = vorrq_u32(vaddq_u32(iota, vdupq_n_u32((uint32_t)at)),
                             vandq_u32(vld1q_u32(q + AP), pflags));
    uint8x16x2_t t = {{vreinterpretq_u8_u32(*wp), vreinterpretq_u8_u32(p)}};
    *wp = vreinterpretq_u32_u8(vqtbl2q_u8(t, idx));
  }
}

static inline uint32x4_t compress4(uint32x4_t v, uint8x16_t px) {
  return vreinterpretq_u32_u8(vqtbl1q_u8(vreinterpretq_u8_u32(v), px));
}

/* Store the children of the lanes in keep at o (a row's five arrays, AL..AP; the P words only
 * with WP); returns how many. */
static inline __attribute__((always_inline)) int store4(uint32_t *o, unsigned keep, uint32x4_t cl,
                                                        uint32x4_t cd, uint32x4_t cr,
                                                        uint32x4_t cb, uint32x4_t cp,
                                                        const int WP) {
  const uint8x16_t px = vld1q_u8(tab_compress[keep]);
  vst1q_u32(o + AL, compress4(cl, px));
  vst1q_u32(o + AD, compress4(cd, px));
  vst1q_u32(o + AR, compress4(cr, px));
  vst1q_u32(o + AB, compress4(cb, px));
  if (WP) vst1q_u32(o + AP, compress4(cp, px));
  return pop4(keep);
}

static void lvln_corner(bctx_t *c, int y, int n);
static void lvln_side(bctx_t *c, int y, int n);

/* PF_270's subtrees searched apart (nq_chain_plan). */
static void chainn(bctx_t *c, int y, int n) { nq_chain_search(c, y, n, lvln_side); }

/* One chunk of row y (n > 0 nodes, all with free columns): search it and, through recursion,
 * everything below it. As lvl256_body (solver_x86.c): each lane holds one parent and takes its
 * lowest free column per step; a lane whose parent has no column left is refilled from its
 * group's slice of the chunk; a lane left empty at a slice's end gets all columns "down", so its
 * children are dead without a lane mask in the loop. SIDE and RULES (RN_*) are compile-time
 * constants after inlining. */
static inline __attribute__((always_inline)) void lvln_body(bctx_t *c, int y, int n,
                                                            const int SIDE, const int RULES) {
  kctx_t *k = &c->k;
  const int yc = y + 1;
  const uint32_t *in = c->L[y];
  const uint32x4_t zero = vdupq_n_u32(0), one = vdupq_n_u32(1);
  const uint32x4_t pfall = vdupq_n_u32(PF_FLAGS | PF_DEC);
  const uint32x4_t topv = vdupq_n_u32(k->topbit);
  const int f90row = (RULES & RN_F90) && y == k->bound2;
  const int f270row = (RULES & RN_F270) && y == k->bound1;
  const int d90row = (RULES & RN_DEC) && y == k->y90 && y <= k->n - 5;
  const int d270row = (RULES & RN_DEC) && y == k->y270 && y <= k->n - 5;
  const int pr90 = (RULES & RN_P) && y == k->p90;
  const int pr270 = (RULES & RN_P) && prune270_row(k, y);
  const int pr270d = pr270 && y < k->c1;
  const int look = (RULES & RN_L) && look_step(k, y), lookj = k->n - 1 - yc;
  const uint32x4_t notmask = vdupq_n_u32(~k->mask);
  const uint32x4_t notlast = vdupq_n_u32(~k->mask | (SIDE ? k->lastmask : 0));
  const uint32x4_t iota = {0, 1, 2, 3};
  const uint32x4_t rowm = vdupq_n_u32(k->rowmask[yc]);
  const uint32x4_t sidem = vdupq_n_u32(k->sidemask);
  const int b2row = (RULES & RN_B2ROW) && yc == k->bound2;
  uint32x4_t wl[NSN], wd[NSN], wr[NSN], wb[NSN], wp[NSN];
  int cur[NSN], end[NSN];
  uint64_t nodes = 0;
  for (int s = 0; s < NSN; s++) {
    wl[s] = wd[s] = wr[s] = wb[s] = wp[s] = zero;
    cur[s] = (int)((int64_t)n * s / NSN);
    end[s] = (int)((int64_t)n * (s + 1) / NSN);
  }

  /* Refill the empty lanes of every group from its slice; act[s] = lanes with a parent. */
#define REFILLN()                                                                            \
  unsigned act[NSN];                                                                         \
  unsigned live = 0;                                                                         \
  _Pragma("GCC unroll 4") for (int s = 0; s < NSN; s++) {                                    \
    unsigned em = empty4(wb[s]);                                                             \
    if (__builtin_expect(end[s] - cur[s] >= NL, 1)) {                                        \
      fill_lanes(&wl[s], &wd[s], &wr[s], &wb[s], &wp[s], in, cur[s], em, iota, pfall, SIDE);  \
      cur[s] += pop4(em);                                                                    \
      act[s] = 0xfu;                                                                         \
    } else {                                                                                 \
      int avail = end[s] - cur[s];                                                           \
      if (avail > 0) {                                                                       \
        em = low4(em, avail);                                                                \
        fill_lanes(&wl[s], &wd[s], &wr[s], &wb[s], &wp[s], in, cur[s], em, iota, pfall,      \
                   SIDE);                                                                    \
        cur[s] += pop4(em);                                                                  \
      }                                                                                      \
      uint32x4_t ev = vceqzq_u32(wb[s]);                                                     \
      wd[s] = vorrq_u32(wd[s], ev);                                                          \
      act[s] = ~lanes4(ev) & 0xfu;                                                           \
    }                                                                                        \
    live |= act[s];                                                                          \
  }                                                                                          \
  if (!live) break;

  /* wb & (wb - 1) drops the lowest column (the loop-carried chain). */
#define CHILDN(s)                                                                            \
  uint32x4_t bit = vandq_u32(wb[s], neg4(wb[s]));                                           \
  wb[s] = vandq_u32(wb[s], vsubq_u32(wb[s], one));                                           \
  uint32x4_t cl = vshlq_n_u32(vorrq_u32(wl[s], bit), 1);                                     \
  uint32x4_t cd = vorrq_u32(wd[s], bit);                                                     \
  uint32x4_t cr = vshrq_n_u32(vorrq_u32(wr[s], bit), 1);                                     \
  uint32x4_t cb = vbicq_u32(rowm, vorrq_u32(vorrq_u32(cl, cd), cr));                         \
  if (b2row) {                                                                               \
    uint32x4_t sd = vandq_u32(cd, sidem);                                                    \
    cb = vbicq_u32(cb, vceqzq_u32(sd));                                                      \
    cb = vbslq_u32(vceqq_u32(sd, sidem), cb, vandq_u32(cb, sidem));                          \
  }                                                                                          \
  nodes += (uint64_t)pop4(act[s]);                                                           \
  uint32x4_t cp = wp[s];                                                                     \
  if (f90row) cp = vorrq_u32(cp, vandq_u32(vceqq_u32(bit, one), vdupq_n_u32(PF_90)));         \
  if (f270row) cp = vorrq_u32(cp, vandq_u32(vceqq_u32(bit, topv), vdupq_n_u32(PF_270)));      \
  /* the rejecting first steps (see PF_R90): column 1 not taken down to this row, column    \
   * N-2 taken above it */                                                                   \
  if (d90row)                                                                                \
    cp = vorrq_u32(cp, vandq_u32(vceqzq_u32(vandq_u32(cd, vdupq_n_u32(2))),                  \
                                 vdupq_n_u32(PF_R90)));                                      \
  if (d270row)                                                                               \
    cp = vorrq_u32(cp, vandq_u32(vtstq_u32(wd[s], vdupq_n_u32(k->topbit >> 1)),              \
                                 vdupq_n_u32(PF_R270)));                                     \
  /* nq-solver-2's dead children (see kctx_t) get no columns, so they are not stored */      \
  if (pr90) {                                                                                \
    const uint32x4_t fr = vdupq_n_u32(PF_90 | PF_R90);                                       \
    cb = vbicq_u32(cb, vceqq_u32(vandq_u32(cp, fr), fr));                                    \
  }                                                                                          \
  if (pr270) {                                                                               \
    const uint32x4_t r = vdupq_n_u32(pr270d ? k->topbit >> 1 : PF_R270);                     \
    cb = vbicq_u32(cb, vandq_u32(vtstq_u32(cp, vdupq_n_u32(PF_270)),                         \
                                 vtstq_u32(pr270d ? cd : cp, r)));                           \
  }                                                                                          \
  /* nq-solver-4's blocked children (nq_unit_blocked), as lvl256_body */                     \
  if (look) {                                                                                \
    const uint32x4_t x0 = vorrq_u32(cd, notmask);                                            \
    uint32x4_t all = vorrq_u32(x0, vorrq_u32(cl, cr)), top = zero;                           \
    _Pragma("GCC unroll 8") for (int j = 1; j <= NQ_UNIT_LOOK_MAX; j++) {                    \
      if (j > lookj) break;                                                                  \
      uint32x4_t blk = vorrq_u32(j == lookj ? vorrq_u32(cd, notlast) : x0,                   \
                                 vorrq_u32(vshlq_u32(cl, vdupq_n_s32(j)),                     \
                                           vshlq_u32(cr, vdupq_n_s32(-j))));                  \
      top = vmaxq_u32(top, blk);                                                             \
      all = vandq_u32(all, blk);                                                             \
    }                                                                                        \
    cb = vandq_u32(vbicq_u32(cb, vceqq_u32(top, vdupq_n_u32(~0u))), vceqq_u32(all, x0));     \
  }

  if (yc == k->n - 2) {
    const uint32x4_t maskv = vdupq_n_u32(k->mask);
    const uint32x4_t lastm = vdupq_n_u32(k->lastmask);
    const uint32x4_t endv = vdupq_n_u32(k->endbit);
    const int b2last = b2row; /* yc == N-2 here */
    /* Counted in vector accumulators (lanes of -1 added), without lane masks: a dead lane
     * has cb = 0. Per step and lane, 2 - [cb == 0] - [cb has < 2 bits] row N-1 nodes. */
    uint32x4_t accn = zero, accs = zero;
    int64_t steps = 0;
    for (;;) {
      REFILLN()
      steps++;
      _Pragma("GCC unroll 4") for (int s = 0; s < NSN; s++) {
        CHILDN(s);
        accn = vaddq_u32(accn, vaddq_u32(vceqzq_u32(cb),
                                         vceqzq_u32(vandq_u32(cb, vsubq_u32(cb, one)))));
        uint32x4_t f = vbicq_u32(maskv, cd);
        uint32x4_t f1 = vandq_u32(f, neg4(f));
        uint32x4_t f2 = veorq_u32(f, f1);
        /* Row N-2 takes f1 (or f2), row N-1 the other: a solution when the first is allowed,
         * the other is not attacked by rows < N-2 (g; in the side part not in LASTMASK
         * either) and the two are not adjacent. */
        uint32x4_t g = vorrq_u32(vshlq_n_u32(cl, 1), vshrq_n_u32(cr, 1));
        if (SIDE) g = vorrq_u32(g, lastm);
        uint32x4_t adj = vceqq_u32(f2, vshlq_n_u32(f1, 1));
        uint32x4_t ok1 = vbicq_u32(vceqzq_u32(vandq_u32(g, f2)),
                                   vorrq_u32(vceqzq_u32(vandq_u32(cb, f1)), adj));
        uint32x4_t ok2 = vbicq_u32(vceqzq_u32(vandq_u32(g, f1)),
                                   vorrq_u32(vceqzq_u32(vandq_u32(cb, f2)), adj));
        if (!SIDE) {
          accs = vaddq_u32(accs, vaddq_u32(ok1, ok2));
        } else {
          /* the rotation check is needed only with a flag, ENDBIT last, or col 0 on BOUND2 */
          uint32x4_t fast = vceqzq_u32(vandq_u32(cp, vdupq_n_u32(PF_FLAGS)));
          uint32x4_t fast1 = vbicq_u32(fast, vceqq_u32(f2, endv));
          uint32x4_t fast2 = vbicq_u32(fast, vceqq_u32(f1, endv));
          if (b2last) {
            fast1 = vbicq_u32(fast1, vceqq_u32(f1, one));
            fast2 = vbicq_u32(fast2, vceqq_u32(f2, one));
          }
          uint32x4_t slow1 = vbicq_u32(ok1, fast1), slow2 = vbicq_u32(ok2, fast2);
          accs = vaddq_u32(accs, vaddq_u32(vandq_u32(ok1, fast1), vandq_u32(ok2, fast2)));
          if (__builtin_expect(vmaxvq_u32(vorrq_u32(slow1, slow2)) != 0, 0)) {
            uint32_t vb[NL], vp[NL], v1[NL], v2[NL];
            vst1q_u32(vb, bit);
            vst1q_u32(vp, wp[s]);
            vst1q_u32(v1, f1);
            vst1q_u32(v2, f2);
            for (unsigned mm = lanes4(slow1); mm; mm &= mm - 1) {
              int i = __builtin_ctz(mm);
              side_leaf(c, vp[i], vb[i], v1[i], v2[i]);
            }
            for (unsigned mm = lanes4(slow2); mm; mm &= mm - 1) {
              int i = __builtin_ctz(mm);
              side_leaf(c, vp[i], vb[i], v2[i], v1[i]);
            }
          }
        }
      }
    }
    nodes += (uint64_t)(2 * NL * NSN * steps + (int64_t)vaddvq_s32(vreinterpretq_s32_u32(accn)));
    k->c8 += (uint64_t)(-(int64_t)vaddvq_s32(vreinterpretq_s32_u32(accs)));
    if (SIDE && c->nq) nq_side_flush(c); /* before this chunk is overwritten */
    k->nodes += nodes;
    return;
  }

  uint32_t *out = c->L[yc];
  int m = 0;
  /* row BOUND1's children with PF_270 go to the second set of arrays (nq_chain_plan) */
  const int split = (RULES & RN_F270) && y == k->bound1 && c->split270 && !c->chain270;
  uint32_t *xout = c->aL[yc];
  int m2 = 0;
  for (;;) {
    REFILLN()
    _Pragma("GCC unroll 4") for (int s = 0; s < NSN; s++) {
      CHILDN(s);
      unsigned keep = ~empty4(cb) & 0xfu;
      if (split) {
        unsigned fk = keep & lanes4(vceqq_u32(bit, topv));
        keep &= ~fk;
        m2 += store4(xout + m2, fk, cl, cd, cr, cb, cp, 1);
      }
      m += store4(out + m, keep, cl, cd, cr, cb, cp, SIDE);
    }
    if (m > LV_CAP - NL * NSN) {
      if (SIDE) lvln_side(c, yc, m); else lvln_corner(c, yc, m);
      m = 0;
    }
    if (split && m2 > LV_CAP - NL * NSN) {
      chainn(c, yc, m2);
      m2 = 0;
    }
  }
  if (m) {
    if (SIDE) lvln_side(c, yc, m); else lvln_corner(c, yc, m);
  }
  if (m2) chainn(c, yc, m2);
  k->nodes += nodes;
#undef REFILLN
#undef CHILDN
}

static void lvln_corner(bctx_t *c, int y, int n) {
  if (look_step(&c->k, y))
    lvln_body(c, y, n, 0, RN_L);
  else
    lvln_body(c, y, n, 0, 0);
}

/* The side part's rows with rules of their own get their own copy of the loop, one per rule; the
 * rare row with two a copy with all of them (as lvl256_side). */
static void lvln_side(bctx_t *c, int y, int n) {
  const kctx_t *k = &c->k;
  int r = (y + 1 == k->bound2 ? RN_B2ROW : 0) | (y == k->bound2 ? RN_F90 : 0) |
          (y == k->bound1 ? RN_F270 : 0) |
          ((y == k->y90 || y == k->y270) && y <= k->n - 5 ? RN_DEC : 0) |
          (prune_step(k, y, c->chain270) ? RN_P : 0) | (look_step(k, y) ? RN_L : 0);
  switch (r) {
  case 0: lvln_body(c, y, n, 1, 0); break;
  case RN_B2ROW: lvln_body(c, y, n, 1, RN_B2ROW); break;
  case RN_F90: lvln_body(c, y, n, 1, RN_F90); break;
  case RN_F270: lvln_body(c, y, n, 1, RN_F270); break;
  case RN_DEC: lvln_body(c, y, n, 1, RN_DEC); break;
  case RN_P: lvln_body(c, y, n, 1, RN_P); break;
  case RN_L: lvln_body(c, y, n, 1, RN_L); break;
  default: lvln_body(c, y, n, 1, RN_B2ROW | RN_F90 | RN_F270 | RN_DEC | RN_P | RN_L); break;
  }
}

void nq_neon_search(bctx_t *c, int y0) {
  pthread_once(&tab_once, tab_init);
  nq_chain_plan(c);
  if (c->k.side) lvln_side(c, y0, 1); else lvln_corner(c, y0, 1);
}

#endif
