/* nq: the reference solver -- Takahashi's algorithm as the seed's step 12 writes it: recursive
 * Backtrack1 (corner part) and Backtrack2 (side part) and the rotation Check. It is kept plain on
 * purpose: the tests hold the fast solver to it, unit by unit, nodes included.
 */
#include "nq/solver.h"
#include "nq/nq.h"

#include <string.h>

#include "board_class.h" /* the rotation check, shared with the batch kernel */

typedef struct ref_s {
  int sizee;                  /* N - 1: the last row */
  uint32_t mask, topbit, endbit, sidemask, lastmask;
  int bound1, bound2;
  int y90, y270; /* side part: N-1-c1 and c1, c1 the column of row 1 (see ref_dead) */
  uint32_t board[NQ_MAX_N];
  nq_counts_t c;
} ref_t;

/* Classify a side-part leaf: compare the board with its 90, 180 and 270-degree rotations
 * (board_class.h); count it once in the class of its orbit size, or not at all when it is not the
 * orbit's representative. */
static void ref_check(ref_t *q) {
  switch (nq_board_class(q->board, q->sizee + 1, q->bound1, q->bound2, q->topbit, q->endbit)) {
  case 2: q->c.c2++; break;
  case 4: q->c.c4++; break;
  case 8: q->c.c8++; break;
  default: break;
  }
}

/* Whether the node on row y (masks left, down, right) is blocked (nq-solver-4): it is on one of
 * the rows N-1-nq_unit_look(N)..N-4 (N-5 and N-4 below N=20, N-6..N-4 from there on; and >= 2),
 * and the placed rows leave a row below it without a column (the side part's last row: without
 * one outside LASTMASK), or leave one of the free columns open on no row from y down. Each free
 * column needs a row of its own and each row a column, so no solution lies below it. Written out
 * row by row, apart from nq_unit_blocked. */
static int ref_blocked(const ref_t *q, int y, uint32_t left, uint32_t down, uint32_t right,
                       uint32_t lastmask) {
  const int look = nq_unit_look(q->sizee + 1);
  if (y < 2 || y < q->sizee - look || y > q->sizee - 3) return 0;
  uint32_t open = 0; /* the columns some row y..N-1 can take */
  for (int row = y; row <= q->sizee; row++) {
    int k = row - y;
    uint32_t cols = q->mask & ~down & ~(left << k) & ~(right >> k);
    if (row == q->sizee) cols &= ~lastmask;
    if (row > y && cols == 0) return 1;
    open |= cols;
  }
  return (q->mask & ~down & ~open) != 0;
}

/* Corner part: row 0 at column 0, so every solution is the representative of an 8-orbit. */
static void ref_backtrack1(ref_t *q, int y, uint32_t left, uint32_t down, uint32_t right) {
  uint32_t bitmap = q->mask & ~(left | down | right), bit;
  q->c.nodes++;
  if (ref_blocked(q, y, left, down, right, 0)) return;
  if (y == q->sizee) {
    if (bitmap) {
      q->board[y] = bitmap;
      q->c.c8++;
    }
    return;
  }
  if (y < q->bound1) bitmap &= ~2u; /* column 1 is the corner's mirror; rows < BOUND1 skip it */
  while (bitmap) {
    bitmap ^= q->board[y] = bit = bitmap & (0u - bitmap);
    ref_backtrack1(q, y + 1, (left | bit) << 1, down | bit, (right | bit) >> 1);
  }
}

/* Whether the side-part node on row y (rows < y placed) is dead (nq-solver-2): one of
 * ref_check's flags is set by the placed rows, and the first step of that flag's check is decided
 * by them and rejects the board, so no solution below it counts.
 * - The 90-degree check (column 0 on row BOUND2) compares row 1's column c1 with the row of the
 *   queen on column 1 counted from the bottom: it rejects when that queen is below row N-1-c1,
 *   which is decided once rows 0..N-1-c1 are placed without it.
 * - The 270-degree check (column N-1 on row BOUND1) compares c1 with the row of the queen on
 *   column N-2 counted from the top: it rejects when that queen is above row c1, which is decided
 *   once it is placed. (The 90- and 180-degree checks, which run first, cannot save such a
 *   board: they count it only if it is its own 90- or 180-degree turn, and then that first step
 *   compares equal rows, or the same rows as the 90-degree check's.)
 * Only nodes on rows <= N-4 are tested: the fast kernels count rows N-3..N-1 from their parents'
 * free columns. */
static int ref_dead(const ref_t *q, int y) {
  const uint32_t *b = q->board;
  if (y > q->sizee - 3 || q->y90 < 0) return 0;
  int r;
  if (y > q->bound2 && b[q->bound2] == 1 && y > q->y90) {
    for (r = 0; r <= q->y90 && b[r] != 2; r++) {}
    if (r > q->y90) return 1; /* column 1 is on a row below N-1-c1 */
  }
  if (y > q->bound1 && b[q->bound1] == q->topbit) {
    for (r = 0; r < q->y270 && r < y; r++)
      if (b[r] == q->topbit >> 1) return 1; /* column N-2 is on a row above c1 */
  }
  return 0;
}

/* Side part: row 0 at column BOUND1; SIDEMASK/LASTMASK keep only candidate representatives. */
static void ref_backtrack2(ref_t *q, int y, uint32_t left, uint32_t down, uint32_t right) {
  uint32_t bitmap = q->mask & ~(left | down | right), bit;
  q->c.nodes++;
  if (ref_dead(q, y) || ref_blocked(q, y, left, down, right, q->lastmask)) return;
  if (y == q->sizee) {
    if (bitmap && !(bitmap & q->lastmask)) {
      q->board[y] = bitmap;
      ref_check(q);
    }
    return;
  }
  if (y < q->bound1) {
    bitmap &= ~q->sidemask;
  } else if (y == q->bound2) {
    if (!(down & q->sidemask)) return;
    if ((down & q->sidemask) != q->sidemask) bitmap &= q->sidemask;
  }
  while (bitmap) {
    bitmap ^= q->board[y] = bit = bitmap & (0u - bitmap);
    ref_backtrack2(q, y + 1, (left | bit) << 1, down | bit, (right | bit) >> 1);
  }
}

int nq_ref_solve_unit(const nq_unit_t *u, nq_counts_t *out) {
  nq_unit_state_t st;
  int rc = nq_unit_state(u, &st);
  if (rc) return rc;
  ref_t q;
  memset(&q, 0, sizeof q);
  q.sizee = u->n - 1;
  q.mask = st.mask;
  q.topbit = st.topbit;
  q.endbit = st.endbit;
  q.sidemask = st.sidemask;
  q.lastmask = st.lastmask;
  q.bound1 = st.bound1;
  q.bound2 = st.bound2;
  memcpy(q.board, st.board, sizeof q.board);
  q.y90 = q.y270 = -1;
  if (u->depth >= 2) { /* row 1's column c1 is the unit's */
    int c1 = 0;
    while (!(q.board[1] >> c1 & 1)) c1++;
    q.y270 = c1;
    q.y90 = q.sizee - c1;
  }
  if (u->part == NQ_PART_CORNER)
    ref_backtrack1(&q, u->depth, st.left, st.down, st.right);
  else
    ref_backtrack2(&q, u->depth, st.left, st.down, st.right);
  *out = q.c;
  return 0;
}

/* N = 1..3 have no units: answer them directly (see solver.h for N = 1). */
int nq_small_n(int n, nq_counts_t *out) {
  memset(out, 0, sizeof *out);
  if (n < NQ_MIN_N || n > NQ_MAX_N) return NQ_ERANGE;
  if (n >= NQ_UNIT_MIN_N) return NQ_EINVAL;
  out->count1 = n == 1;
  return 0;
}

typedef struct ref_sum_s {
  nq_counts_t total;
  int rc;
} ref_sum_t;

static int ref_sum_cb(const nq_unit_t *u, void *arg) {
  ref_sum_t *s = arg;
  nq_counts_t c;
  s->rc = nq_ref_solve_unit(u, &c);
  if (s->rc) return s->rc;
  nq_counts_add(&s->total, &c);
  return 0;
}

/* The whole of N: the seed's loops over BOUND1 are the depth-2 units (row-0/row-1 prefixes). */
int nq_ref_solve_n(int n, nq_counts_t *out) {
  if (n < NQ_UNIT_MIN_N) return nq_small_n(n, out);
  if (n > NQ_MAX_N) return NQ_ERANGE;
  ref_sum_t s;
  memset(&s, 0, sizeof s);
  int rc = nq_units_generate(n, 2, ref_sum_cb, &s);
  if (rc) return rc;
  *out = s.total;
  return 0;
}
