/* nq: what the fast kernel's files share. common/solver/solver_fast.c sets up a unit (its settings,
 * the chunk buffers) and picks the variant through its table of kernels; the variants are
 * solver_scalar.c (portable), solver_x86.c (avx512 with its row N-3 tables, avx2) and
 * solver_neon.c (arm64); solver_batch.c holds the code they all use (the side part's rotation
 * check and board rebuild, PF_270's subtrees searched apart). The calls go one way: solver_fast.c
 * -> its table -> a variant -> solver_batch.c; solver_fast.c also uses solver_batch.c. Internal:
 * not installed, included by those files only. The search itself is described at the top of
 * solver_fast.c. */
#ifndef NQ_SOLVER_BATCH_H
#define NQ_SOLVER_BATCH_H

#include "nq/solver.h"
#include "solver_simd.h"

#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(NQ_NO_SIMD)
#define NQ_HAVE_X86_SIMD 1
#else
#define NQ_HAVE_X86_SIMD 0
#endif
#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(NQ_NO_SIMD)
#define NQ_HAVE_NEON 1
#else
#define NQ_HAVE_NEON 0
#endif

/* ---- what every variant shares: the unit's settings, and the counts ---- */

typedef struct kctx_s {
  int n, y0, side;
  uint32_t mask, sidemask, lastmask, topbit, endbit;
  int bound1, bound2;
  int y90, y270; /* side part: the rows whose step decides PF_S90/R90 and PF_S270/R270, or -1 */
  int ylate, late; /* the row whose step decides part of a check whose row is a leaf's (bits:
                      1 PF_90's, 2 PF_270's), or -1 (see flags_plan) */
  /* nq-solver-2's dead nodes (see ref_dead in solver_ref.c; side part, children on rows <= N-4):
   * the step of row p90 makes a child with PF_90 and PF_R90 dead (or -1: none); the steps of
   * rows p270lo..p270hi one with PF_270 and, on rows < c1, column N-2 taken (on the others,
   * PF_R270). Each is found once, on the row where its last fact is placed (see prune_plan). */
  int c1, p90, p270lo, p270hi;
  uint32_t rowmask[NQ_MAX_N];  /* mask minus the columns rows < BOUND1 may not use */
  uint32_t board[NQ_MAX_N];    /* rows < y0 from the unit; deeper rows filled by the search */
  uint64_t nodes, c2, c4, c8;
} kctx_t;

/* ---- batched search: chunk buffers, parent words, side-part leaves ---- */

#define LV_CAP 1024           /* nodes one row's chunk holds before its children are searched */
#define LV_STRIDE (LV_CAP + 32) /* room for one vector store past the cap, and the zero padding */
#define LEAFQ 32                /* side-part solutions whose boards are rebuilt together */

typedef struct bctx_s {
  kctx_t k;
  uint32_t *L[NQ_MAX_N], *D[NQ_MAX_N], *R[NQ_MAX_N], *B[NQ_MAX_N], *P[NQ_MAX_N];
  void *mem;
  int leaf_tab; /* AVX-512: row N-3 chunks by leaf512_tab (see there) */
  int leaf4;    /* AVX-512: row N-4 chunks by leaf512_four (see there); the queued side-part
                   solutions then come from row N-4 nodes (see side_leaf4) */
  int pk;       /* the P words are packed into the L and D words (see PK_SH) */
  /* PF_270's subtrees searched apart (see nq_chain_plan): the rows' second set of arrays,
   * whether the search is in such a subtree now, and whether row BOUND1's step sends its
   * PF_270 children there */
  uint32_t *aL[NQ_MAX_N], *aD[NQ_MAX_N], *aR[NQ_MAX_N], *aB[NQ_MAX_N], *aP[NQ_MAX_N];
  int chain270, split270;
  /* side-part solutions waiting for the rotation check (see side_leaf) */
  int nq;
  uint32_t q_idx[LEAFQ], q_c3[LEAFQ], q_bit[LEAFQ], q_c2[LEAFQ], q_c1[LEAFQ];
  uint32_t q_board[LEAFQ][NQ_MAX_N];
} bctx_t;

/* A side-part node's P word: its parent's index in the row above, and two flags that say whether
 * a placed row already makes the rotation check necessary (see side_class: column 0 on row
 * BOUND2, column N-1 on row BOUND1). A solution with neither flag and whose last row is not
 * ENDBIT counts in COUNT8 at once; only the others rebuild their board. */
#define PF_90 (1u << 30)
#define PF_270 (1u << 31)
#define PF_FLAGS (PF_90 | PF_270)
/* The first step of the flags' checks, decided by the search (the avx512 and avx2 variants with
 * their table leaves, see flags_plan in solver_x86.c). The PF_90 check compares row 1's column c1 with the
 * row of the queen on column 1 counted from the bottom, so row N-1-c1 decides its first step; the
 * PF_270 check compares it with the row of the queen on column N-2 from the top, so row c1 does.
 * S: the check passes there (as if no flag); R: it rejects the board (no solution below counts);
 * neither: the whole check is needed. Only the table leaves read them (flag_class, leaf256_body);
 * every other path treats a flag as "check" whatever they say. Bits 26..31 of a flag word are the six
 * flags, in this order (flag_class indexes a table with them). */
#define PF_S90 (1u << 26)
#define PF_R90 (1u << 27)
#define PF_S270 (1u << 28)
#define PF_R270 (1u << 29)
#define PF_DEC (PF_S90 | PF_R90 | PF_S270 | PF_R270)
_Static_assert(PF_90 == 1u << 30 && PF_270 == 1u << 31, "flag_class's table order");
#define P_IDX (~(PF_FLAGS | PF_DEC))

/* The AVX-512 side part, N <= PK_SH: a node's P word is not stored in an array of its own; its
 * flags are in its D word (bits 26..31, above every column) and its parent's index in its L
 * word's bits PK_SH..31 (above every column: L's bits >= N are never read as columns), so a step
 * stores three arrays instead of four. An index is < LV_CAP = 2^10, so PK_SH + 10 <= 32. */
#define PK_SH NQ_FAST_PACK_MAX_N
_Static_assert(LV_CAP <= 1024 && PK_SH + 10 <= 32 && PK_SH <= 26, "packed P word does not fit");

/* Whether row y is one of PF_270's dead-child rows p270lo..p270hi (kctx_t). */
static inline int prune270_row(const kctx_t *k, int y) { return y >= k->p270lo && y <= k->p270hi; }

/* Whether the step of row y can make a child dead in the current chunk: PF_90's row, or a
 * PF_270 row in PF_270's subtrees (chain270) or on row BOUND1, which sets the flag (the
 * SIMD variants' row rule; see nq_chain_plan below). */
static inline int prune_step(const kctx_t *k, int y, int chain270) {
  return y == k->p90 || (prune270_row(k, y) && (chain270 || y == k->bound1));
}

/* Whether the step of row y makes children on the rows where nq-solver-4's blocked nodes are
 * (nq_unit_blocked, rows N-1-nq_unit_look(N)..N-4; both parts): those steps test every child
 * (the variants' row rule SR_L, RULE_LA, R256_L). */
static inline int look_step(const kctx_t *k, int y) {
  return y + 1 >= k->n - 1 - nq_unit_look(k->n) && y + 1 <= k->n - 4;
}

/* Rebuild and classify the queued side-part solutions (solver_batch.c). */
void nq_side_flush(bctx_t *c);
/* Classify a complete side-part board b (rows 0..N-1) and count it in k's c2, c4 or c8, or not at
 * all when it is not its orbit's representative (the rotation check, as ref_check). */
void nq_side_count(kctx_t *k, const uint32_t *b);

/* PF_270's subtrees searched apart (every variant; solver_batch.c). A dead child of PF_270's
 * check has PF_270 (column N-1 on row BOUND1) and, on rows BOUND1..c1, column N-2 taken (see
 * kctx_t): testing every child on those rows for it cost about as much as the dead subtrees
 * it cut. So row BOUND1's step stores its children with PF_270 in the rows' second set of
 * arrays (aL..aP), and their subtrees are searched with the rows' pointers swapped to that set
 * (nq_swap_sets; the rows above are shared, so the rotation check's board rebuild walks up as
 * before) and chain270 set; only there do the rows p270lo..p270hi test. nq_chain_plan sets
 * split270 (row BOUND1 is searched) or chain270 (the unit's prefix holds row BOUND1 with
 * column N-1). */
void nq_swap_sets(bctx_t *c, int y);
void nq_chain_plan(bctx_t *c);
/* Search a chunk of row y of PF_270's subtrees (in the second set) with a variant's side-part
 * row function: the sets swapped and chain270 set around it. Inline, so that side is a direct
 * call in each variant. */
static inline void nq_chain_search(bctx_t *c, int y, int n,
                                   void (*side)(bctx_t *c, int y, int n)) {
  nq_swap_sets(c, y);
  c->chain270 = 1;
  side(c, y, n);
  c->chain270 = 0;
  nq_swap_sets(c, y);
}

/* A side-part solution that needs the rotation check: its row N-3 node is entry idx (a P word)
 * of that row's chunk and took column bit; rows N-2 and N-1 are c2 and c1. */
static inline void side_leaf(bctx_t *c, uint32_t idx, uint32_t bit, uint32_t c2, uint32_t c1) {
  int j = c->nq;
  c->q_idx[j] = idx & P_IDX;
  c->q_bit[j] = bit;
  c->q_c2[j] = c2;
  c->q_c1[j] = c1;
  if (++c->nq == LEAFQ) nq_side_flush(c);
}

/* The same for leaf512_four: its row N-4 node is entry idx of that row's chunk and took column c3;
 * rows N-3, N-2 and N-1 are bit, c2 and c1. */
static inline void side_leaf4(bctx_t *c, uint32_t idx, uint32_t c3, uint32_t bit, uint32_t c2,
                              uint32_t c1) {
  c->q_c3[c->nq] = c3;
  side_leaf(c, idx, bit, c2, c1);
}

/* A row's five arrays are consecutive, LV_STRIDE apart (see bctx_alloc): one base pointer. */
#define AL 0
#define AD LV_STRIDE
#define AR (2 * LV_STRIDE)
#define AB (3 * LV_STRIDE)
#define AP (4 * LV_STRIDE)

/* ---- the variants' entry points: named only in solver_fast.c's table of kernels ---- */

/* Each searches the unit of c from its one node on row y0 (set up by solve_batched, the CPU
 * able to run it); the *_cpu_has tests say whether this CPU (and OS) can. */
void nq_scalar_search(bctx_t *c, int y0);
#if NQ_HAVE_X86_SIMD
int nq_avx2_cpu_has(void);
void nq_avx2_search(bctx_t *c, int y0);
int nq_avx512_cpu_has(void);
void nq_avx512_search(bctx_t *c, int y0);
#endif
#if NQ_HAVE_NEON
void nq_neon_search(bctx_t *c, int y0);
#endif

#endif
