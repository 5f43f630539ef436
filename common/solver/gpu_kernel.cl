/* nq: the OpenCL kernel of the GPU backend (nq-solver-4, OpenCL C 1.2).
 *
 * A work-item searches subtrees: each a prefix of `depth` rows (a unit of the generator, cut
 * below a pool task by the host, common/solver/gpu_opencl.c), taken from a queue of records the
 * host fills (an atomic index over it: a work-item whose subtree is done takes the next one in
 * the same launch). The search is the reference's (common/solver/solver_ref.c) made iterative
 * and counted node for node: the same rules, the same dead and blocked nodes cut (one node each,
 * nothing below them), the side part's leaves through the same rotation check.
 *
 * One iteration makes one node: the top record of the work-item's stack (one uint4 a level:
 * the candidates left and the attack masks l, d, r of the node on that row) gives its lowest
 * candidate; a level whose last candidate is taken leaves the stack at once (`live`, a bit a
 * level: the next top is its highest bit, no scan). A node's children are counted when its
 * candidates are final (popcount), and it is pushed if it has some. A node on row N-9 is never
 * pushed: its whole subtree is counted inline (NQ_ROW_N9..NQ_ROW_N2), row N-1 from each row N-2
 * node's two free columns. No board is kept: a row's column is the difference of two levels' d
 * masks (the stack's rows) or of two nodes' free columns (the inline rows'), and the board is
 * rebuilt only for the side part's leaves whose rotation check can matter (a flag: column 0 on
 * row BOUND2, column N-1 on row BOUND1, ENDBIT last), about 3/N of them. Each rule is applied
 * at its own rows: BOUND1's and BOUND2's masks, the blocked test on rows N-1-look..N-4 made at
 * the parent on each child before it is pushed (a fixed number of steps a row, no
 * data-dependent loop), and the two dead tests each at the rows that decide it (see ref_dead:
 * the 90-degree one at row max(BOUND2, N-1-c1)+1, the 270-degree one at rows
 * BOUND1+1..max(BOUND1+1, c1), while their flag is set); the subtree's own first node is tested
 * in full.
 *
 * A launch runs each work-item for at most `budget` iterations, then saves its search in its
 * slot (the record, the stack, the flags), so a launch's time is bounded whatever the subtrees'
 * sizes; the next launch resumes it, and the host can split what a saved search has left (every
 * candidate on its stack) into new subtrees. Counts are added per owner (the unit of the solve a
 * subtree is below) into 64-bit totals made of two 32-bit words with 32-bit atomics (OpenCL 1.2
 * promises no 64-bit atomics), when the owner changes and when the work-item stops.
 *
 * A subtree record is 32 bytes: byte 0 the depth d (2..N-1), bytes 1..d the columns of rows
 * 0..d-1. The part and BOUND1 follow from them: the corner part has row 0 in column 0 (BOUND1 is
 * row 1's column), the side part row 0 in column BOUND1 >= 1.
 *
 * NQ_CORRUPT (a build option the tests use) adds one to the COUNT4 of the record at index 0 of
 * the queue: the self-test must refuse such a device.
 */
#ifndef NQ_CORRUPT
#define NQ_CORRUPT 0
#endif

#define NQ_ABI_QUEUE 1
#ifndef NQ_U4 /* a uint4 of four words (OpenCL C's vector literal) */
#define NQ_U4(a, b, c, d) ((uint4)((a), (b), (c), (d)))
#endif
#define NQ_REC 32
/* Work-items of a work-group (the host launches exactly these) and stack levels: a subtree has
 * at most NQ_ROWS rows below its prefix (NQ_GPU_ROWS_MAX, given by the host), so at most NQ_ROWS
 * levels (rows depth..N-10; the d masks of rows N-9 and N-8 are written above them) are ever
 * on its stack. */
#define NQ_GROUP 64
#ifndef NQ_ROWS
#define NQ_ROWS 12
#endif

/* A slot's saved search (global memory, NQ_SLOT words a slot): its owner, the live levels, the
 * flags, the record (8 words) and the stack's levels 0..top (4 words each). */
#define SV_OWN 0
#define SV_LIVE 1
#define SV_FL 2
#define SV_REC 3
#define SV_STACK 11
#define NQ_SLOT (SV_STACK + 4 * NQ_ROWS)

/* Slot states (stat[]): a slot holds nothing (EMPTY: its work-item takes records from the queue)
 * or a search saved at a launch's end (RUNNING, in the low two bits; the search's owner above
 * them, so that the host knows whose searches are still running). */
#define NQ_EMPTY 0u
#define NQ_RUNNING 2u

/* The flags of the current path (side part): F90 column 0 on row BOUND2, F270 column N-1 on row
 * BOUND1; set when those rows are placed. */
#define F90 1u
#define F270 2u

/* ref_blocked for a node on one of the rows N-1-look..N-4, `rows` (3..look) rows above the last,
 * attack masks l, d, r: a row below it with no column (row N-1: none outside lastmask), or a
 * free column no row from its own down can take. nq/unit.h's nq_unit_blocked_rows as free
 * columns: f the free columns of each row, the smallest of them 0 for a row without one, open
 * their union. Rows 1..3 always, 4 and 5 when there. nq_blocked1 takes the columns free of d,
 * nx = mask & ~d (the node's row's and every row's below it, which its caller has made for the
 * node's own candidates), and the first row's free columns f1 (those candidates before the
 * rules, nx & ~(l | r)), not zero: a node without candidates has nothing below it, blocked or
 * not, and its caller drops it first.
 * The rows are a fixed sequence of steps (shift, and-not, min, or), no data-dependent loop. */
static inline int nq_blocked1(int rows, uint nx, uint lastmask, uint f1, uint l, uint r) {
  uint open = f1, mn, f;
  l <<= 1;
  r >>= 1;
  mn = f = nx & ~(l | r);
  open |= f;
  l <<= 1;
  r >>= 1;
  f = nx & ~(l | r);
  mn = min(mn, f);
  open |= f;
  l <<= 1;
  r >>= 1;
  f = nx & ~(l | r | (rows == 3 ? lastmask : 0u));
  mn = min(mn, f);
  open |= f;
  if (rows > 3) {
    l <<= 1;
    r >>= 1;
    f = nx & ~(l | r | (rows == 4 ? lastmask : 0u));
    mn = min(mn, f);
    open |= f;
    if (rows > 4) {
      l <<= 1;
      r >>= 1;
      f = nx & ~(l | r | lastmask);
      mn = min(mn, f);
      open |= f;
    }
  }
  return mn == 0u || (nx & ~open) != 0u;
}

static inline int nq_blocked(int rows, uint notmask, uint lastmask, uint l, uint d, uint r) {
  const uint nx = ~(d | notmask), f1 = nx & ~(l | r);
  return !f1 || nq_blocked1(rows, nx, lastmask, f1, l, r);
}

/* The candidates bm of a node (masks l, d, r) whose children are on the blocked test's rows
 * (`rows` rows above the last), less the children that are blocked. */
static inline uint nq_keep(int rows, uint notmask, uint lastmask, uint l, uint d, uint r, uint bm) {
  uint keep = 0;
  for (uint c = bm; c; c &= c - 1u) {
    const uint b = c & (0u - c);
    keep |= nq_blocked(rows, notmask, lastmask, (l | b) << 1, d | b, (r | b) >> 1) ? 0u : b;
  }
  return keep;
}

/* ref_dead on a board (the subtree's first node only; rows < y in b). */
static int nq_dead(int e, int y, const uint *b, int bound1, int bound2, uint topbit, int y90,
                   int y270) {
  if (y > e - 3) return 0;
  int r;
  if (y > bound2 && b[bound2] == 1u && y > y90) {
    for (r = 0; r <= y90 && b[r] != 2u; r++) {}
    if (r > y90) return 1;
  }
  if (y > bound1 && b[bound1] == topbit)
    for (r = 0; r < y270 && r < y; r++)
      if (b[r] == topbit >> 1) return 1;
  return 0;
}

/* ref_check: the side part's leaf, counted once in the class of its orbit, or not at all.
 * Returns 2, 4, 8 or 0. */
static int nq_check(int e, const uint *b, int bound1, int bound2, uint topbit, uint endbit) {
  int own, you;
  uint bit, ptn;
  if (b[bound2] == 1u) {
    for (ptn = 2, own = 1; own <= e; own++, ptn <<= 1) {
      bit = 1;
      for (you = e; b[you] != ptn && b[own] >= bit; you--) bit <<= 1;
      if (b[own] > bit) return 0;
      if (b[own] < bit) break;
    }
    if (own > e) return 2;
  }
  if (b[e] == endbit) {
    for (you = e - 1, own = 1; own <= e; own++, you--) {
      bit = 1;
      for (ptn = topbit; ptn != b[you] && b[own] >= bit; ptn >>= 1) bit <<= 1;
      if (b[own] > bit) return 0;
      if (b[own] < bit) break;
    }
    if (own > e) return 4;
  }
  if (b[bound1] == topbit) {
    for (ptn = topbit >> 1, own = 1; own <= e; own++, ptn >>= 1) {
      bit = 1;
      for (you = 0; b[you] != ptn && b[own] >= bit; you++) bit <<= 1;
      if (b[own] > bit) return 0;
      if (b[own] < bit) break;
    }
  }
  return 8;
}

#define STK(k) mine[(k) * NQ_GROUP] /* level k of this work-item's stack */

/* What a work-item knows of its subtree: the record's settings. */
typedef struct {
  int depth, side, bound1, bound2, c1, y90, p90, lo270, hi270, blo;
  uint forbid, sidemask, lastmask, endbit, dy90, dc1, b2last; /* b2last: BOUND2 is row N-2 */
  uint slow, s90, s270, filt; /* bit y: a child on row y takes the slow path (always, while F90
                              is set, while F270 is set) / drops its blocked children */
  uint w90, w270; /* bit i: a child on row e-7+i is on row BOUND2+1 / BOUND1+1 (sets F90 /
                     F270 from its parent's column) */
  uint iv270c; /* bit i: a child on row e-7+i is on row BOUND1+1, below c1 (its 270-degree test
                 reads row c1's d mask, not its own) */
  int k90, k270; /* the dead tests' rows less the rows whose d masks they read: 0..3, one of the
                   four nearest rows' free columns an inline row holds (NQ_DSEL); 4, the
                   record's or the stack's d mask */
  uint rx, rf, rb; /* bit i: a child on row e-7+i takes BOUND1's columns / sets a flag / takes
                     BOUND2's mask */
  uint iv0, iv90, iv270; /* NQ_IV's words: bit i a node on row e-7+i (whatever the flags,
                          while F90 is set, while F270 is set) */
} nq_sub_t;

/* A flagged side leaf: the board rebuilt and checked. Rows < depth come from the record; rows
 * depth..N-9 from the stack (row depth+i is the difference of levels i+1 and i's d masks; the
 * walk writes the d mask of its row N-9 node into the level above its top, NQ_ROW_N9 that of
 * its row N-8 node, mask ^ m, one above); rows N-8..N-3 (only when they are not the
 * record's) the differences of the free columns of the path's nodes on rows N-8..N-2,
 * tail[0..6]; rows N-2 and N-1 tail[7] and tail[8]. The inline rows pass their nodes' free
 * columns, which they hold anyway, not their queens' columns: those would be more values held
 * through every inline row for a leaf in a thousand. `mine` is the work-item's own stack, not
 * the work-group's array and the work-item's index: with the array's address the same at every
 * call, a compiler may read the kernel's __local array directly here, and pocl 3.1, which
 * makes that array a kernel argument, then reads nothing (the flagged leaves lost; test_gpu). */
static int nq_side_leaf(int e, __global const uchar *t, __local const uint4 *mine, int depth,
                        int bound1, int bound2, uint endbit, const uint *tail, uint topbit) {
  uint b[32];
  for (int i = 0; i < depth; i++) b[i] = 1u << t[1 + i];
  for (int i = 0; depth + i < e - 7; i++)
    b[depth + i] = STK(i + 1).z & ~STK(i).z;
  for (int i = 0; i < 6; i++)
    if (e - 7 + i >= depth) b[e - 7 + i] = tail[i + 1] ^ tail[i];
  b[e - 1] = tail[7];
  b[e] = tail[8];
  return nq_check(e, b, bound1, bound2, topbit, endbit);
}

/* The two children of a node on row N-2 (masks l, r and m = mask & ~d, its rows' columns free
 * of d: its two free columns; bm its candidates under the rules): nodes by popcount, solutions
 * from its two free columns. fl: the path's flags; m8..m3: the free columns of the path's nodes
 * on rows N-8..N-3, for nq_side_leaf. */
#define NQ_ROW_N2(SIDE, l, m, r, bm, fl, m8, m7, m6, m5, m4, m3)                                 \
  do {                                                                                           \
    /* f_: the node's two free columns; g_: those row N-1 may take under the queens above row    \
     * N-2 (the side part: and outside lastmask). A leaf is a column of bm on row N-2 and the    \
     * other one, in g_, on row N-1, the two not adjacent: of the |bm| |g_| pairs of a column    \
     * of bm and one of g_, those of two columns, when f_'s two are not adjacent. Without a      \
     * branch, and without the two columns apart. */                                             \
    const uint f_ = (m);                                                                         \
    const uint g_ = f_ & ~((((l) << 1) | ((r) >> 1)) | ((SIDE) ? s.lastmask : 0u));              \
    const uint nb_ = popcount(bm);                                                               \
    const uint lv_ = (f_ & (f_ >> 1)) ? 0u : nb_ * popcount(g_) - popcount((bm) & g_);           \
    ni += nb_;                                                                                   \
    if (!(SIDE)) {                                                                               \
      c8i += lv_;                                                                                \
    } else if (lv_) { /* a leaf: most row N-2 nodes have none */                                 \
      if (!((fl) | s.b2last | (f_ & s.endbit))) {                                                \
        c8i += lv_; /* no flag: COUNT8 at once */                                                \
      } else { /* each of the two leaves (x on row N-2, the other column on row N-1) apart */    \
        const uint f1_ = f_ & (0u - f_), f2_ = f_ ^ f1_;                                         \
        const uint lf1_ = ((bm) & f1_ ? 1u : 0u) & (g_ & f2_ ? 1u : 0u);                         \
        const uint lf2_ = ((bm) & f2_ ? 1u : 0u) & (g_ & f1_ ? 1u : 0u);                         \
        const uint pf_ = (fl) & F270;                                                            \
        const uint p1_ = pf_ | (s.b2last ? f1_ == 1u : (fl) & F90) | (f2_ == s.endbit);          \
        const uint p2_ = pf_ | (s.b2last ? f2_ == 1u : (fl) & F90) | (f1_ == s.endbit);          \
        c8i += (lf1_ && !p1_) + (lf2_ && !p2_);                                                  \
        for (int i2_ = 0; i2_ < 2; i2_++) {                                                      \
          const uint a_ = i2_ ? f2_ : f1_, z_ = i2_ ? f1_ : f2_;                                 \
          if (!(i2_ ? lf2_ && p2_ : lf1_ && p1_)) continue;                                      \
          const uint tl_[9] = {(m8), (m7), (m6), (m5), (m4), (m3), f_, a_, z_};                  \
          const int c_ = nq_side_leaf(e, t, mine, s.depth, s.bound1, s.bound2, s.endbit, tl_,    \
                                      topbit);                                                   \
          lc[c_ >> 1]++; /* by index: in memory, not a register through the rows */              \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
  } while (0)

/* The side part's BOUND2 rule for a child on row yc (d mask cd): its cut or its mask. */
#define NQ_BOUND2(yc, cd, bm)                                                                    \
  do {                                                                                           \
    if ((yc) == s.bound2) {                                                                      \
      const uint sd_ = (cd) & s.sidemask;                                                        \
      bm = !sd_ ? 0u : sd_ != s.sidemask ? bm & s.sidemask : bm;                                 \
    }                                                                                            \
  } while (0)

/* The inline rows' rule word of a path with flags f: bit i set when a node on row e-7+i (a child
 * made by NQ_ROW_N9..NQ_ROW_N3, i = 0..6) takes a rule -- BOUND1's forbidden columns, BOUND2's
 * mask, a flag set by its own row's queen, a dead test while its flag is set -- and 0 for the
 * others, which take none. s.iv0: the rows of the first three, both parts; s.iv90, s.iv270: the
 * dead tests' rows (s.s90, s.s270); each shifted once a subtree so that bit 0 is row e-7. A
 * child tests one bit; only a child on such a row reads the rules. */
#define NQ_IV(f) (s.iv0 | (((f) & F90) ? s.iv90 : 0u) | (((f) & F270) ? s.iv270 : 0u))

/* The rules of a child whose node is on row yc (its queen on row yc - 1 the lowest candidate
 * of c, its parent's candidates left; free columns cm, mp, mpp, mppp of it and the three rows
 * above, mask & ~d; candidates bm, flags fl, rule word iv of its path, the last two updated; B
 * its row's bit in the rule words): BOUND1's forbidden columns, then in the side part its flags
 * (the queen in column 0: c's lowest bit; in column N-1: c is topbit alone), BOUND2's mask and,
 * when DEAD, the dead tests (a dead child: `continue`, to its parent's next child), each only
 * on the rows its own word (s.rx, s.rf with s.w90 and s.w270, s.rb, s.iv90, s.iv270) names: the
 * flag a row sets and BOUND2's row are known by the word's bit, not by comparing the row with
 * BOUND1 or BOUND2. A block, not a statement: it continues its caller's loop. */
#define NQ_RULES(SIDE, DEAD, yc, B, c, cm, mp, mpp, mppp, bm, fl, iv)                            \
  {                                                                                              \
    if (s.rx & (B)) bm &= ~s.forbid;                                                             \
    if (SIDE) {                                                                                  \
      if (s.rf & (B)) {                                                                          \
        if (s.w90 & (B)) fl = (fl & ~F90) | ((c) & 1u ? F90 : 0u);                               \
        if (s.w270 & (B)) fl = (fl & ~F270) | ((c) == topbit ? F270 : 0u);                       \
        if ((B) < 32u) /* a flag of row N-4 or below moves no bit: the dead rows end at N-4 */   \
          iv = NQ_IV(fl);                                                                        \
      }                                                                                          \
      if (s.rb & (B)) { /* the row is BOUND2's */                                                \
        const uint sd_ = s.sidemask & ~(cm);                                                     \
        bm = !sd_ ? 0u : sd_ != s.sidemask ? bm & s.sidemask : bm;                               \
      }                                                                                          \
      if ((DEAD) && NQ_DEADI(B, cm, mp, mpp, mppp, fl)) continue;                                \
    }                                                                                            \
  }

/* A node on row N-3 (masks l, r and m = mask & ~d, candidates bm, flags fl0, rule word iv0;
 * m8..m4: the free columns of the path's nodes on rows N-8..N-4, for nq_side_leaf): its whole
 * subtree, each child on row N-2 counted with its children by NQ_ROW_N2. Every inline row
 * carries its node's free columns m, not d: a child's m is its parent's less its own column (one
 * operation, as d | x was, and its candidates m & ~(l | r), one fewer, with no mask held); the
 * rules test a column's bit in m (free) where the reference tests it in d (taken). */
#define NQ_ROW_N3(SIDE, l, m, r, bm, fl0, iv0, m8, m7, m6, m5, m4)                               \
  do {                                                                                           \
    ni += popcount(bm);                                                                          \
    for (uint c3_ = (bm); c3_; c3_ &= c3_ - 1u) {                                                \
      const uint x_ = c3_ & (0u - c3_), l2_ = ((l) | x_) << 1, m2_ = (m) ^ x_,                   \
                 r2_ = ((r) | x_) >> 1;                                                          \
      uint b2_ = m2_ & ~(l2_ | r2_);                                                             \
      if ((iv0) & 64u) NQ_RULES(SIDE, 0, e - 1, 64u, c3_, m2_, 0u, 0u, 0u, b2_, fl0, iv0)        \
      NQ_ROW_N2(SIDE, l2_, m2_, r2_, b2_, fl0, m8, m7, m6, m5, m4, (m));                         \
    }                                                                                            \
  } while (0)

/* A node on row N-4 (masks l, r and m = mask & ~d, candidates bm, flags fl0, rule word iv0;
 * m8..m5 the path's, for nq_side_leaf): its whole subtree, each child on row N-3 by
 * NQ_ROW_N3. */
#define NQ_ROW_N4(SIDE, l, m, r, bm, fl0, iv0, m8, m7, m6, m5)                                   \
  do {                                                                                           \
    ni += popcount(bm);                                                                          \
    for (uint c4_ = (bm); c4_; c4_ &= c4_ - 1u) {                                                \
      const uint w_ = c4_ & (0u - c4_), l3_ = ((l) | w_) << 1, m3_ = (m) ^ w_,                   \
                 r3_ = ((r) | w_) >> 1;                                                          \
      uint b3_ = m3_ & ~(l3_ | r3_);                                                             \
      if ((iv0) & 32u) NQ_RULES(SIDE, 0, e - 2, 32u, c4_, m3_, 0u, 0u, 0u, b3_, fl0, iv0)        \
      NQ_ROW_N3(SIDE, l3_, m3_, r3_, b3_, fl0, iv0, m8, m7, m6, m5, (m));                        \
    }                                                                                            \
  } while (0)

/* A node on row N-5 (masks l, r and m = mask & ~d, candidates bm, the free columns mpp, mppp
 * of its parent and grandparent, flags fl0, rule word iv0; m8 the path's node's on row N-8, for
 * nq_side_leaf): its children (row N-4, the blocked test's last row) counted, the blocked ones
 * and those without candidates dropped, each other one through its row's rules and its subtree
 * counted by NQ_ROW_N4. */
#define NQ_ROW_N5(SIDE, l, m, r, bm, mpp, mppp, fl0, iv0, m8)                                    \
  do {                                                                                           \
    ni += popcount(bm);                                                                          \
    for (uint c5_ = (bm); c5_; c5_ &= c5_ - 1u) {                                                \
      const uint v_ = c5_ & (0u - c5_), l4_ = ((l) | v_) << 1, m4_ = (m) ^ v_,                   \
                 r4_ = ((r) | v_) >> 1;                                                          \
      uint b4_ = m4_ & ~(l4_ | r4_);                                                             \
      if (!b4_ || nq_blocked1(3, m4_, (SIDE) ? s.lastmask : 0u, b4_, l4_, r4_)) continue;        \
      if ((iv0) & 16u) NQ_RULES(SIDE, 1, e - 3, 16u, c5_, m4_, (m), (mpp), (mppp), b4_, fl0, iv0) \
      NQ_ROW_N4(SIDE, l4_, m4_, r4_, b4_, fl0, iv0, m8, (mppp), (mpp), (m));                     \
    }                                                                                            \
  } while (0)

/* A node on row N-6 (masks l, r and m, candidates bm, the free columns mpp, mppp of its parent
 * and grandparent, flags fl0, rule word iv0): as NQ_ROW_N5, one row up (its children on row
 * N-5, the blocked test's rows then below them). */
#define NQ_ROW_N6(SIDE, l, m, r, bm, mpp, mppp, fl0, iv0)                                        \
  do {                                                                                           \
    ni += popcount(bm);                                                                          \
    for (uint c6_ = (bm); c6_; c6_ &= c6_ - 1u) {                                                \
      const uint u_ = c6_ & (0u - c6_), l5_ = ((l) | u_) << 1, m5_ = (m) ^ u_,                   \
                 r5_ = ((r) | u_) >> 1;                                                          \
      uint b5_ = m5_ & ~(l5_ | r5_);                                                             \
      if (!b5_ || nq_blocked1(4, m5_, (SIDE) ? s.lastmask : 0u, b5_, l5_, r5_)) continue;        \
      if ((iv0) & 8u) NQ_RULES(SIDE, 1, e - 4, 8u, c6_, m5_, (m), (mpp), (mppp), b5_, fl0, iv0)  \
      NQ_ROW_N5(SIDE, l5_, m5_, r5_, b5_, (m), (mpp), fl0, iv0, (mppp));                         \
    }                                                                                            \
  } while (0)

/* A node on row N-7 (masks l, r and m, candidates bm, the free columns mpp and mppp of its
 * parent and grandparent, flags fl0, rule word iv0): as NQ_ROW_N6, one row up, its blocked
 * children dropped when the blocked test reaches their row. */
#define NQ_ROW_N7(SIDE, l, m, r, bm, mpp, mppp, fl0, iv0)                                        \
  do {                                                                                           \
    ni += popcount(bm);                                                                          \
    const int k7_ = (s.filt >> (e - 6)) & 1u;                                                    \
    for (uint c7_ = (bm); c7_; c7_ &= c7_ - 1u) {                                                \
      const uint t_ = c7_ & (0u - c7_), l6_ = ((l) | t_) << 1, m6_ = (m) ^ t_,                   \
                 r6_ = ((r) | t_) >> 1;                                                          \
      uint b6_ = m6_ & ~(l6_ | r6_);                                                             \
      if (!b6_ || (k7_ && nq_blocked1(5, m6_, (SIDE) ? s.lastmask : 0u, b6_, l6_, r6_)))         \
        continue;                                                                                \
      if ((iv0) & 4u) NQ_RULES(SIDE, 1, e - 5, 4u, c7_, m6_, (m), (mpp), (mppp), b6_, fl0, iv0)  \
      NQ_ROW_N6(SIDE, l6_, m6_, r6_, b6_, (m), (mpp), fl0, iv0);                                 \
    }                                                                                            \
  } while (0)

/* A node on row N-8 (masks l, r and m, candidates bm, the free columns mpp and mppp of its
 * parent and grandparent, flags fl0, rule word iv0): its children (row N-7) counted, those
 * without candidates dropped, each other one through its row's rules and its subtree counted by
 * NQ_ROW_N7 (no blocked test: it begins below them). */
#define NQ_ROW_N8(SIDE, l, m, r, bm, mpp, mppp, fl0, iv0)                                        \
  do {                                                                                           \
    ni += popcount(bm);                                                                          \
    for (uint c8_ = (bm); c8_; c8_ &= c8_ - 1u) {                                                \
      const uint s_ = c8_ & (0u - c8_), l7_ = ((l) | s_) << 1, m7_ = (m) ^ s_,                   \
                 r7_ = ((r) | s_) >> 1;                                                          \
      uint b7_ = m7_ & ~(l7_ | r7_);                                                             \
      if (!b7_) continue;                                                                        \
      if ((iv0) & 2u) NQ_RULES(SIDE, 1, e - 6, 2u, c8_, m7_, (m), (mpp), (mppp), b7_, fl0, iv0)  \
      NQ_ROW_N7(SIDE, l7_, m7_, r7_, b7_, (m), (mpp), fl0, iv0);                                 \
    }                                                                                            \
  } while (0)

/* A node on row N-9 (masks l, r and m, candidates bm, the free columns mpp and mppp of its
 * parent and grandparent, outside mask anything, flags fl0, rule word iv0): as NQ_ROW_N8, one
 * row up. The walk ends a row higher for it, so that a walk's iteration (about 50 x86
 * instructions, its stack record read and written) makes a node on row N-9 or above, not one on
 * row N-8. In the side part each child's d mask (row N-8's, mask ^ m) is written
 * into the stack level above the walk's row N-9 one, where the dead tests (NQ_DEADI's far rows)
 * and nq_side_leaf read it. */
#define NQ_ROW_N9(SIDE, l, m, r, bm, mpp, mppp, fl0, iv0)                                        \
  do {                                                                                           \
    ni += popcount(bm);                                                                          \
    for (uint c9_ = (bm); c9_; c9_ &= c9_ - 1u) {                                                \
      const uint q_ = c9_ & (0u - c9_), l8_ = ((l) | q_) << 1, m8_ = (m) ^ q_,                   \
                 r8_ = ((r) | q_) >> 1;                                                          \
      uint b8_ = m8_ & ~(l8_ | r8_);                                                             \
      if (!b8_) continue;                                                                        \
      if ((iv0) & 1u) NQ_RULES(SIDE, 1, e - 7, 1u, c9_, m8_, (m), (mpp), (mppp), b8_, fl0, iv0)  \
      if (SIDE) STK(e - 7 - s.depth).z = mask ^ m8_;                                             \
      NQ_ROW_N8(SIDE, l8_, m8_, r8_, b8_, (m), (mpp), fl0, iv0);                                 \
    }                                                                                            \
  } while (0)

/* The rows whose slow path the walk takes: BOUND1's forbidden columns' rows (both parts), the
 * side part's fixed ones, and its dead tests' rows while their flag is set. */
#define NQ_SLOWV() (s.slow | ((fl & F90) ? s.s90 : 0u) | ((fl & F270) ? s.s270 : 0u))

/* The search loop of one part (SIDE constant): until the stack is empty or the budget spent.
 * A node's children are counted when its candidates are final (pushed, or inline from row N-9
 * down); rows with a rule (slowv) take the slow path, and a node on row N-9 goes inline. The
 * walk has no blocked test: its rows end at N-9 and the test's begin at N-1-look >= N-6
 * (look <= NQ_UNIT_LOOK_MAX = 5; gpu_opencl.c asserts it), all of them inline. */
#define NQ_WALK(SIDE)                                                                            \
  for (;;) {                                                                                     \
    if (!live || steps == budget) break;                                                         \
    steps++;                                                                                     \
    const int k = 31 - (int)clz(live);                                                           \
    const uint4 v = STK(k);                                                                      \
    const uint bit = v.x & (0u - v.x), rest = v.x ^ bit;                                         \
    STK(k).x = rest;                                                                             \
    live ^= (uint)(rest == 0u) << k;                                                             \
    const int yc = s.depth + k + 1;                                                              \
    const uint cl = (v.y | bit) << 1, cd = v.z | bit, cr = (v.w | bit) >> 1;                     \
    uint bm = mask & ~(cl | cd | cr);                                                            \
    if ((slowv >> yc) & 1u) {                                                                    \
      bm &= yc < s.bound1 ? ~s.forbid : ~0u;                                                     \
      if (SIDE) {                                                                                \
        if (yc - 1 == s.bound2) {                                                                \
          fl = (fl & ~F90) | (bit == 1u ? F90 : 0u);                                             \
          slowv = NQ_SLOWV();                                                                    \
          ivw = NQ_IV(fl);                                                                       \
        }                                                                                        \
        if (yc - 1 == s.bound1) {                                                                \
          fl = (fl & ~F270) | (bit == topbit ? F270 : 0u);                                       \
          slowv = NQ_SLOWV();                                                                    \
          ivw = NQ_IV(fl);                                                                       \
        }                                                                                        \
        NQ_BOUND2(yc, cd, bm);                                                                   \
        if (NQ_DEAD(yc, cd, v.z, STK(k > 0 ? k - 1 : 0).z, STK(k > 1 ? k - 2 : 0).z, fl))        \
          continue;                                                                              \
      }                                                                                          \
    }                                                                                            \
    if (yc == e - 8) { /* the last row the walk makes: its node's subtree inline */              \
      STK(k + 1).z = cd; /* row N-9's d mask: the path for NQ_DROW and nq_side_leaf */           \
      fli = fl;                                                                                  \
      ivi = ivw;                                                                                 \
      NQ_ROW_N9(SIDE, cl, mask & ~cd, cr, bm, ~v.z, ~STK(k > 0 ? k - 1 : 0).z, fli, ivi);        \
      nodes += ni;                                                                               \
      c8 += c8i + lc[4];                                                                         \
      c2 += lc[1];                                                                               \
      c4 += lc[2];                                                                               \
      lc[1] = lc[2] = lc[4] = 0;                                                                 \
      ni = c8i = 0;                                                                              \
      continue;                                                                                  \
    }                                                                                            \
    nodes += popcount(bm);                                                                       \
    if (bm) {                                                                                    \
      STK(k + 1) = NQ_U4(bm, cl, cd, cr);                                                        \
      live |= 2u << k;                                                                           \
    }                                                                                            \
  }

/* The side part's dead tests of a child on row yc (d mask cd, its parent's dp; flags f), each
 * on the rows that decide it (see the top of this file), reading earlier rows' d masks from the
 * prefix, the inline rows (the four nearest) or the stack (row r's d mask, r > depth: level
 * r - depth's; rows N-9's and N-8's written there by the walk and NQ_ROW_N9). */
#define NQ_DROW(r, yc, cd, dp, dpp, dppp)                                                        \
  ((r) == (yc) ? (cd) : (r) == (yc) - 1 ? (dp) : (r) == (yc) - 2 ? (dpp)                         \
   : (r) == (yc) - 3 ? (dppp) : STK((r) - s.depth).z)
#define NQ_DEAD(yc, cd, dp, dpp, dppp, f)                                                        \
  (((yc) == s.p90 + 1 && ((f) & F90) &&                                                          \
    !((s.y90 + 1 <= s.depth ? s.dy90 : NQ_DROW(s.y90 + 1, yc, cd, dp, dpp, dppp)) & 2u)) ||      \
   ((yc) >= s.lo270 && (yc) <= s.hi270 && ((f) & F270) &&                                        \
    (((yc) <= s.c1 ? (cd) : s.c1 <= s.depth ? s.dc1 : NQ_DROW(s.c1, yc, cd, dp, dpp, dppp)) &    \
     (topbit >> 1))))

/* NQ_DEAD on an inline row (its bit B of the rule words; cm, mp, mpp, mppp the free columns of
 * the child and the three rows above): the rows by bit, not by compares, and the row whose
 * columns a test reads chosen by the record's k90 / k270 (NQ_DSEL: one of the four nearest, or
 * `far`, the record's or the stack's d mask inverted), not by comparing rows on every inline
 * row: a compiler computes such per-row choices once a record, whether a rule fires or not. A
 * column taken (in d) is one not free (in m): the 90-degree test cuts when column 1 is still
 * free on row y90+1, the 270-degree one when column N-2 is taken. The 90-degree test is on one
 * row (p90+1), so k90 is that row less row y90+1; the 270-degree one reads row c1's columns
 * only on row BOUND1+1 when that is below c1 (iv270c), k270 rows up. */
#define NQ_DSEL(k, cd, dp, dpp, dppp, far)                                                       \
  ((k) == 0 ? (cd) : (k) == 1 ? (dp) : (k) == 2 ? (dpp) : (k) == 3 ? (dppp) : (far))
#define NQ_DEADI(B, cm, mp, mpp, mppp, f)                                                        \
  (((s.iv90 & (B)) && ((f) & F90) &&                                                             \
    (NQ_DSEL(s.k90, cm, mp, mpp, mppp,                                                           \
             ~(s.y90 + 1 <= s.depth ? s.dy90 : STK(s.y90 + 1 - s.depth).z)) & 2u)) ||            \
   ((s.iv270 & (B)) && ((f) & F270) &&                                                           \
    !(((s.iv270c & (B)) ? NQ_DSEL(s.k270, cm, mp, mpp, mppp,                                     \
                                  ~(s.c1 <= s.depth ? s.dc1 : STK(s.c1 - s.depth).z))            \
                        : (cm)) &                                                                \
      (topbit >> 1))))

/* Adds v to the 64-bit total at p (low word, high word). */
static void nq_add64(__global uint *p, ulong v) {
  if (!v) return;
  const uint lo = (uint)v;
  uint hi = (uint)(v >> 32);
  const uint old = atomic_add(p, lo);
  if (old + lo < old) hi++;
  if (hi) atomic_add(p + 1, hi);
}

__kernel __attribute__((reqd_work_group_size(NQ_GROUP, 1, 1)))
void nq_run(__global const uchar *recs, __global const uint *qown, const uint qlen,
            __global uint *qhead, __global uint *stat, __global uint *save, __global uint *tot,
            const uint nslots, const int n, const uint budget, const int look) {
  __local uint4 stk[NQ_ROWS * NQ_GROUP];
  const size_t gid = get_global_id(0);
  const int lid = (int)get_local_id(0);
  __local uint4 *const mine = stk + lid; /* level k at mine[k * NQ_GROUP] (STK) */
  if (gid >= nslots) return;
  __global uint *sv = save + (size_t)NQ_SLOT * gid;
  const int e = n - 1;
  const uint mask = n == 32 ? 0xffffffffu : ((1u << n) - 1u), topbit = 1u << e;
  uint steps = 0, live = 0, fl = 0, own = 0, held = (stat[gid] & 3u) == NQ_RUNNING;
  uint fli = 0, ivi = 0; /* the inline rows' flags and rule word (NQ_ROW_N8..NQ_ROW_N2) */
  __global const uchar *t = (__global const uchar *)(sv + SV_REC);
  /* The counts of the owner `cur` since they were last added to its totals: a work-item's
   * subtrees in a row are mostly one unit's (the queue is in owner order), so the atomics come
   * once an owner, not once a subtree. */
  ulong c2 = 0, c4 = 0, c8 = 0, nodes = 0;
  /* The inline rows' nodes and COUNT8s (NQ_ROW_N8..NQ_ROW_N2), added to nodes and c8 after each
   * of their subtrees (at most 8 rows: far below 2^32). */
  uint ni = 0, c8i = 0;
  /* The flagged side leaves' classes (NQ_ROW_N2): lc[1] COUNT2, lc[2] COUNT4, lc[4] COUNT8,
   * added to c2, c4, c8 after each row N-9 subtree. Indexed by the class, so kept in memory:
   * the 64-bit c2 and c4, which change at a few leaves in a thousand, no longer hold registers
   * through the nine inline rows. */
  uint lc[5] = {0, 0, 0, 0, 0};
  uint cur = 0;
#define NQ_FLUSH()                                                                               \
  do {                                                                                           \
    nq_add64(tot + 8 * cur, c2);                                                                 \
    nq_add64(tot + 8 * cur + 2, c4);                                                             \
    nq_add64(tot + 8 * cur + 4, c8);                                                             \
    nq_add64(tot + 8 * cur + 6, nodes);                                                          \
    c2 = c4 = c8 = nodes = 0;                                                                    \
  } while (0)
  for (;;) {
    uint idx = 0;
    if (!held) { /* the next record of the queue, while the budget lasts */
      idx = steps < budget ? atomic_inc(qhead) : qlen;
      if (idx >= qlen) {
        NQ_FLUSH();
        stat[gid] = NQ_EMPTY;
        return;
      }
      t = recs + (size_t)NQ_REC * idx;
      own = qown[idx];
    } else {
      own = sv[SV_OWN];
    }
    if (own != cur) {
      NQ_FLUSH();
      cur = own;
    }
    /* The record's settings, and its first node's board and masks. */
    nq_sub_t s;
    s.depth = t[0];
    s.side = t[1] != 0;
    s.bound1 = s.side ? t[1] : t[2];
    s.bound2 = s.side ? e - s.bound1 : 0;
    s.c1 = t[2];
    s.y90 = e - s.c1;
    s.sidemask = s.side ? topbit | 1u : 0u;
    s.forbid = s.side ? s.sidemask : 2u;
    s.endbit = s.side ? topbit >> s.bound1 : 0u;
    s.b2last = s.side && s.bound2 == e - 1;
    s.lastmask = 0;
    if (s.side) {
      /* columns 0..BOUND1-1 and N-BOUND1..N-1 */
      const uint lo = (1u << s.bound1) - 1u;
      s.lastmask = (lo | (lo << (n - s.bound1))) & mask;
    }
    s.blo = e - look > 2 ? e - look : 2;
    s.p90 = -2; /* no in-loop dead test unless the side part decides it below the prefix */
    s.lo270 = 1;
    s.hi270 = 0;
    s.filt = 0;
    for (int y = s.blo - 1; y <= e - 4; y++) s.filt |= 1u << y;
    s.slow = (1u << s.bound1) - 1u; /* BOUND1's forbidden columns */
    s.s90 = s.s270 = 0;
    if (s.side) {
      const int p90 = s.bound2 > s.y90 ? s.bound2 : s.y90;
      if (p90 >= s.depth && p90 + 1 <= e - 3) s.p90 = p90;
      s.lo270 = s.bound1 + 1 > s.depth + 1 ? s.bound1 + 1 : s.depth + 1;
      s.hi270 = s.bound1 + 1 > s.c1 ? s.bound1 + 1 : s.c1;
      if (s.hi270 > e - 3) s.hi270 = e - 3;
      if (s.bound2 <= e - 6) s.slow |= 1u << s.bound2;
      if (s.bound1 + 1 <= e - 6) s.slow |= 1u << (s.bound1 + 1);
      if (s.bound2 + 1 <= e - 6) s.slow |= 1u << (s.bound2 + 1);
      if (s.p90 >= 0) s.s90 = 1u << (s.p90 + 1);
      if (s.lo270 <= s.hi270) s.s270 = (2u << s.hi270) - (1u << s.lo270); /* lo270..hi270 */
    }
    uint islow = (1u << s.bound1) - 1u; /* BOUND1's forbidden columns */
    if (s.side) islow |= 1u << s.bound2 | 1u << (s.bound1 + 1) | 1u << (s.bound2 + 1);
    s.iv0 = e >= 7 ? islow >> (e - 7) : islow << (7 - e);
#define NQ_SH(w) (e >= 7 ? (w) >> (e - 7) : (w) << (7 - e))
    s.rx = NQ_SH((1u << s.bound1) - 1u);
    s.rf = s.side ? NQ_SH(1u << (s.bound1 + 1) | 1u << (s.bound2 + 1)) : 0u;
    s.rb = s.side ? NQ_SH(1u << s.bound2) : 0u;
    s.iv270c = s.side && s.bound1 + 1 > s.c1 ? NQ_SH(1u << (s.bound1 + 1)) : 0u;
    s.k90 = s.y90 + 1 <= s.depth ? 4 : s.p90 - s.y90;
    s.k270 = s.c1 <= s.depth ? 4 : s.bound1 + 1 - s.c1;
    s.w90 = s.side ? NQ_SH(1u << (s.bound2 + 1)) : 0u;
    s.w270 = s.side ? NQ_SH(1u << (s.bound1 + 1)) : 0u;
#undef NQ_SH
    s.iv90 = e >= 7 ? s.s90 >> (e - 7) : s.s90 << (7 - e);
    s.iv270 = e >= 7 ? s.s270 >> (e - 7) : s.s270 << (7 - e);
    uint b[32];
    uint l = 0, d = 0, r = 0;
    s.dy90 = 0;
    s.dc1 = 0;
    for (int i = 0; i < s.depth; i++) {
      const uint bit = 1u << t[1 + i];
      b[i] = bit;
      l = (l | bit) << 1;
      d |= bit;
      r = (r | bit) >> 1;
      if (i + 1 == s.y90 + 1) s.dy90 = d;
      if (i + 1 == s.c1) s.dc1 = d;
    }
    if (!held) {
      /* The subtree's first node: counted and tested as the reference does. */
      fl = 0;
      if (s.side && s.bound2 < s.depth && b[s.bound2] == 1u) fl |= F90;
      if (s.side && s.bound1 < s.depth && b[s.bound1] == topbit) fl |= F270;
      const int y = s.depth;
      nodes++;
      uint bm = mask & ~(l | d | r);
      const int cut = (s.side && nq_dead(e, y, b, s.bound1, s.bound2, topbit, s.y90, s.c1)) ||
                      (y >= s.blo && y <= e - 3 &&
                       nq_blocked(e - y, ~mask, s.side ? s.lastmask : 0u, l, d, r));
      if (cut) {
      } else if (y == e) {
        if (!s.side) {
          c8 += bm != 0;
        } else if (bm && !(bm & s.lastmask)) {
          b[e] = bm;
          const int c = nq_check(e, b, s.bound1, s.bound2, topbit, s.endbit);
          c2 += c == 2;
          c4 += c == 4;
          c8 += c == 8;
        }
      } else {
        if (y < s.bound1) bm &= ~s.forbid;
        if (s.side) NQ_BOUND2(y, d, bm);
        fli = fl;
        ivi = NQ_IV(fl);
        if (y == e - 1) {
          NQ_ROW_N2(s.side, l, mask & ~d, r, bm, fl, 0u, 0u, 0u, 0u, 0u, 0u);
        } else if (y == e - 2) {
          NQ_ROW_N3(s.side, l, mask & ~d, r, bm, fli, ivi, 0u, 0u, 0u, 0u, 0u);
        } else if (y == e - 3) {
          NQ_ROW_N4(s.side, l, mask & ~d, r, bm, fli, ivi, 0u, 0u, 0u, 0u);
        } else if (y == e - 4) {
          NQ_ROW_N5(s.side, l, mask & ~d, r, bm, 0u, 0u, fli, ivi, 0u);
        } else if (y == e - 5) {
          NQ_ROW_N6(s.side, l, mask & ~d, r, bm, 0u, 0u, fli, ivi);
        } else if (y == e - 6) {
          NQ_ROW_N7(s.side, l, mask & ~d, r, bm, 0u, 0u, fli, ivi);
        } else if (y == e - 7) {
          NQ_ROW_N8(s.side, l, mask & ~d, r, bm, 0u, 0u, fli, ivi);
        } else if (y == e - 8) {
          STK(0).z = d;
          NQ_ROW_N9(s.side, l, mask & ~d, r, bm, 0u, 0u, fli, ivi);
        } else {
          nodes += popcount(bm);
          if ((s.filt >> y) & 1u) bm = nq_keep(e - y - 1, ~mask, s.lastmask, l, d, r, bm);
          if (bm) {
            STK(0) = NQ_U4(bm, l, d, r);
            live = 1;
          }
        }
        nodes += ni;
        c8 += c8i + lc[4];
        c2 += lc[1];
        c4 += lc[2];
        lc[1] = lc[2] = lc[4] = 0;
        ni = c8i = 0;
      }
    } else { /* a search saved by an earlier launch */
      live = sv[SV_LIVE];
      fl = sv[SV_FL];
      for (int k = 0; k <= 31 - (int)clz(live); k++)
        STK(k) = NQ_U4(sv[SV_STACK + 4 * k], sv[SV_STACK + 4 * k + 1], sv[SV_STACK + 4 * k + 2],
                       sv[SV_STACK + 4 * k + 3]);
    }
    uint slowv = NQ_SLOWV(), ivw = NQ_IV(fl);
    if (s.side) {
      NQ_WALK(1)
    } else {
      NQ_WALK(0)
    }
    if (live) { /* the budget is spent: save the search where it stands */
      if (!held) {
        for (int i = 0; i < 8; i++)
          sv[SV_REC + i] = (uint)t[4 * i] | (uint)t[4 * i + 1] << 8 | (uint)t[4 * i + 2] << 16 |
                           (uint)t[4 * i + 3] << 24;
      }
      sv[SV_OWN] = own;
      sv[SV_LIVE] = live;
      sv[SV_FL] = fl;
      for (int k = 0; k <= 31 - (int)clz(live); k++) {
        const uint4 v = STK(k);
        sv[SV_STACK + 4 * k] = v.x;
        sv[SV_STACK + 4 * k + 1] = v.y;
        sv[SV_STACK + 4 * k + 2] = v.z;
        sv[SV_STACK + 4 * k + 3] = v.w;
      }
      stat[gid] = NQ_RUNNING | own << 2;
    }
#if NQ_CORRUPT
    if (!held && idx == 0 && !live) c4++;
#endif
    if (live) {
      NQ_FLUSH();
      return;
    }
    held = 0;
  }
#undef NQ_FLUSH
}
