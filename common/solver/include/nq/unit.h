/* nq: the work-unit model.
 *
 * A unit is (N, part, BOUND1, prefix): the prefix is the column of each of the first d rows.
 * Column c is bit c of a row bitmap (the seed's convention: the corner part has row 0 = bit 0).
 * Every derived setting and the left/down/right masks at row d are recomputed from these, so a
 * unit is small, exact and checkable. Units are produced by the same rule-applying search as the
 * solver, cut at depth d, so for every N and d the units partition the search exactly.
 *
 * Text form (database, wire, command line):  N:part:BOUND1:c0,c1,...,c(d-1)
 *   e.g. "18:c:5:0,5,12"  (corner part, row 0 at column 0, row 1 at BOUND1=5)
 *        "18:s:3:3,0,10"  (side part, row 0 at column BOUND1=3)
 */
#ifndef NQ_UNIT_H
#define NQ_UNIT_H

#include <stdint.h>
#include <stddef.h>

#define NQ_MIN_N 1
#define NQ_MAX_N 32
#define NQ_UNIT_MIN_N 4   /* units exist for N >= 4; N = 1..3 are answered directly */
#define NQ_UNIT_TEXT_MAX 128

typedef enum { NQ_PART_CORNER = 0, NQ_PART_SIDE = 1 } nq_part_t;

typedef struct nq_unit_s {
  int n;          /* board size, NQ_UNIT_MIN_N..NQ_MAX_N */
  nq_part_t part;
  int bound1;     /* corner: row-1 column, 2..N-2; side: row-0 column, 1.., 2*BOUND1 < N-1 */
  int depth;      /* prefix length d, 2..N-1 */
  uint8_t prefix[NQ_MAX_N]; /* prefix[r] = column of the queen in row r, r < depth */
} nq_unit_t;

/* The search state of a unit at row `depth`, recomputed from the prefix. */
typedef struct nq_unit_state_s {
  uint32_t mask, topbit, endbit, sidemask, lastmask;
  int bound1, bound2;
  uint32_t left, down, right; /* attack masks for row `depth` */
  uint32_t board[NQ_MAX_N];   /* board[r] = 1 << prefix[r] for r < depth */
} nq_unit_state_t;

/* nq-solver-4's blocked nodes: a node on one of the rows N-1-nq_unit_look(N)..N-4 (and >= 2), in
 * either part, is blocked when the placed rows leave one of the rows below it no column (the
 * side part's row N-1: none outside LASTMASK), or leave one of its free columns open on none of
 * the rows y..N-1. No solution lies below it. The kernels test it on the steps that make those
 * rows. Below N = NQ_UNIT_LOOK5_N the rule is nq-solver-3's, rows N-5 and N-4 (look 4); from
 * there on it adds row N-6 (look 5), which cuts 11-15% of the nodes at N=20-23 and made the SIMD
 * kernels 2-11% faster there (the scalar one 2-3% slower); below N=20 it was no faster
 * (docs/design.md, docs/performance.md). NQ_UNIT_LOOK_MAX: the largest look of any N. */
#define NQ_UNIT_LOOK5_N 20
#define NQ_UNIT_LOOK_MAX 5

/* The look of N: the blocked test's rows are N-1-look..N-4. */
static inline int nq_unit_look(int n) { return n >= NQ_UNIT_LOOK5_N ? 5 : 4; }

/* The test of nq_unit_blocked for a node with rows (1..NQ_UNIT_LOOK_MAX) rows below it, attack
 * masks l, d, r (its row's), notmask the bits outside the board and lastmask the columns its last
 * row may not use. Without a data-dependent branch: the scalar kernel runs it on every child of
 * two or three rows' steps (an early exit there made it about 1.5x slower), so l << j and
 * r >> j are made one step a row and the rows' blocked words kept in a running maximum (~0: a
 * row without a column) and a running AND (the columns no row can take). */
static inline __attribute__((always_inline)) uint32_t nq_unit_blocked_rows(
    int rows, uint32_t notmask, uint32_t lastmask, uint32_t l, uint32_t d, uint32_t r) {
  const uint32_t x0 = d | notmask; /* taken columns, and the bits outside the board */
  uint32_t all = x0 | l | r, top = 0, lj = l, rj = r; /* all: row y's blocked columns so far */
#pragma GCC unroll 8
  for (int j = 1; j <= NQ_UNIT_LOOK_MAX; j++) {
    if (j > rows) break;
    lj += lj;
    rj >>= 1;
    const uint32_t blk = (j == rows ? x0 | lastmask : x0) | lj | rj;
    top = blk > top ? blk : top;
    all &= blk;
  }
  return (top == ~0u) | (all != x0); /* a row without a column, or a free column without a row */
}

/* Whether the node on row y with attack masks l, d, r (row y's) is blocked. mask: the board's
 * columns; lastmask: the columns row N-1 may not use (0 in the corner part); e = N-1. */
static inline int nq_unit_blocked(uint32_t mask, uint32_t lastmask, int e, int y, uint32_t l,
                                  uint32_t d, uint32_t r) {
  if (y < 2 || y < e - nq_unit_look(e + 1) || y > e - 3) return 0;
  return (int)nq_unit_blocked_rows(e - y, ~mask, lastmask, l, d, r);
}

/* Whether a side-part node on row y (2 <= y; board[r] = its row r's column bit, r < y) is dead
 * (nq-solver-2): the placed rows set one of the side part's rotation checks' flags and already
 * reject the board in that check's first step, so no solution below it counts; the search counts
 * it as a node and does not go below it. The 90-degree check (column 0 on row BOUND2) rejects
 * when the queen on column 1 is below row N-1-c1 (c1: row 1's column), decided once rows
 * 0..N-1-c1 are placed without it; the 270-degree check (column N-1 on row BOUND1) when the
 * queen on column N-2 is above row c1, decided once it is placed. Only rows <= N-4 are tested:
 * the fast kernels count rows N-3..N-1 from their parents' free columns. docs/design.md. */
static inline int nq_unit_dead(const nq_unit_state_t *st, int y, const uint32_t *board) {
  const int e = __builtin_ctz(st->topbit); /* N-1 */
  if (y < 2 || y > e - 3) return 0;
  const int c1 = __builtin_ctz(board[1]), y90 = e - c1;
  int r;
  if (y > st->bound2 && board[st->bound2] == 1u && y > y90) {
    for (r = 0; r <= y90 && board[r] != 2u; r++) {}
    if (r > y90) return 1;
  }
  if (y > st->bound1 && board[st->bound1] == st->topbit)
    for (r = 0; r < c1 && r < y; r++)
      if (board[r] == st->topbit >> 1) return 1;
  return 0;
}

/* Whether the node on row y of a unit's search is cut (counts one node, nothing below it): 2 dead
 * (side part, nq_unit_dead), 3 blocked (nq_unit_blocked), else 0. */
static inline int nq_unit_cut(const nq_unit_state_t *st, nq_part_t part, int y, uint32_t l,
                              uint32_t d, uint32_t r, const uint32_t *board) {
  if (part == NQ_PART_SIDE && nq_unit_dead(st, y, board)) return 2;
  const int e = __builtin_ctz(st->topbit);
  if (nq_unit_blocked(st->mask, part == NQ_PART_SIDE ? st->lastmask : 0, e, y, l, d, r)) return 3;
  return 0;
}

/* The columns the search may try at row y (0 < y < N-1) of a unit with the settings in st, given
 * the attack masks l, d, r and the columns of rows < y (board); 0 with *pruned set when the side
 * part's BOUND2 rule cuts the whole node (1), the node is dead (2, nq_unit_dead) or blocked (3,
 * nq_unit_blocked). Rows 0 (and row 1 of the corner part) are fixed by part and BOUND1 and are
 * not asked. This is the one home of the per-row rules: the generator, the validator and the
 * estimator (estimate.c) all go through it. Inline because the estimator's probes call it once
 * a row. */
static inline uint32_t nq_unit_row_allowed(const nq_unit_state_t *st, nq_part_t part, int y,
                                           uint32_t l, uint32_t d, uint32_t r,
                                           const uint32_t *board, int *pruned) {
  uint32_t bm = st->mask & ~(l | d | r);
  *pruned = nq_unit_cut(st, part, y, l, d, r, board);
  if (*pruned) return 0;
  if (part == NQ_PART_CORNER) {
    if (y < st->bound1) bm &= ~2u;
    return bm;
  }
  if (y < st->bound1) {
    bm &= ~st->sidemask;
  } else if (y == st->bound2) {
    if (!(d & st->sidemask)) {
      *pruned = 1;
      return 0;
    }
    if ((d & st->sidemask) != st->sidemask) bm &= st->sidemask;
  }
  return bm;
}

/* Parse the text form with full validation: the unit must be one the generator could emit.
 * On error returns NQ_EINVAL or NQ_ERANGE and, if errbuf is given, a one-line reason. */
int nq_unit_parse(const char *text, nq_unit_t *out, char *errbuf, size_t errlen);

/* Format a unit; returns the length written (< NQ_UNIT_TEXT_MAX) or a negative error. */
int nq_unit_format(const nq_unit_t *u, char *buf, size_t len);

/* Validate a unit struct (same rules as the parser). */
int nq_unit_validate(const nq_unit_t *u, char *errbuf, size_t errlen);

/* Recompute the search state at row u->depth. Returns NQ_EINVAL if the prefix breaks a rule. */
int nq_unit_state(const nq_unit_t *u, nq_unit_state_t *st);

/* Check a requested unit depth (prefix length) for N: units exist for N in
 * NQ_UNIT_MIN_N..NQ_MAX_N and have depth 2..N-1. Returns 0, or NQ_ERANGE with a one-line reason
 * naming the valid range in errbuf (if given). Every depth taken from a user goes through this:
 * a depth out of range is an error, never clamped. */
int nq_unit_depth_check(int n, int depth, char *errbuf, size_t errlen);

/* min(d, N-1), never below 2: the depth nq_units_generate uses for a request of d. Kept for
 * callers that pass internal depths; input from users goes through nq_unit_depth_check. */
int nq_unit_effective_depth(int n, int depth);

/* Generate every unit of N at depth d, in a stable order (corner part by BOUND1, then side part by
 * BOUND1, prefixes in increasing bit order). Calls cb for each; a non-zero return stops the walk
 * and is returned. Returns 0, or NQ_ERANGE for N outside NQ_UNIT_MIN_N..NQ_MAX_N or d < 2. */
typedef int (*nq_unit_cb)(const nq_unit_t *u, void *arg);
int nq_units_generate(int n, int depth, nq_unit_cb cb, void *arg);

/* The number of units nq_units_generate(n, depth) emits (= the nodes on row depth), in *count.
 * About 30 ns a unit. Same return values. */
int nq_units_count(int n, int depth, uint64_t *count);

/* The generator's order (the order of nq_units_generate, nq_unit_children and every plan of
 * nq/plan.h): the corner part before the side part, then the prefixes' columns compared row by
 * row, a prefix before its extensions. <0, 0 or >0. Units of one N only. The store finds a unit
 * among millions by its text with a binary search in this order. */
int nq_unit_cmp(const nq_unit_t *a, const nq_unit_t *b);

/* Generate the children of unit u one row deeper (u->depth + 1 must be <= N-1): exactly the units
 * the generator emits at depth u->depth + 1 below u's prefix (possibly none). */
int nq_unit_children(const nq_unit_t *u, nq_unit_cb cb, void *arg);

#endif
