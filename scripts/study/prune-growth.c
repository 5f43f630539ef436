/* Study: how fast does a walk's tree grow per N under each pruning rule, and how fast
 * would it grow under the best rule there can be? Walks the plain N-queens tree (no symmetry,
 * one queen a row, rows top to bottom, the bitmask walk every nq kernel does) and counts, per
 * rule, the nodes it visits (a node: a queen placed on a row; row 0's included). Rows are named
 * as nq names its nodes: nq's node "on row y" has rows 0..y-1 placed, so it is this walk's node
 * whose queen went on row y-1.
 *
 *   plain     no pruning: every non-attacked square is a child
 *   blk45     nq-solver-3's rule: a node on row N-5 or N-4 whose rows below leave a row without a
 *             free, non-attacked column, or a free column non-attacked on no row below, is counted
 *             and has no children
 *   blk46..48 the same test on rows N-6 (N-7, N-8) to N-4
 *   blkall    the same test on every row
 *   hall      a node on any row is cut when its rows below and its free columns have no perfect
 *             matching on the non-attacked squares (Hall's condition: the strongest test that
 *             looks at rows and columns only)
 *   oracle    the nodes with a solution below them (or that are one): the tree an exact walk
 *             with a perfect test would visit, the floor of every pruning rule
 *
 * and the solutions, checked against OEIS A000170. Per N and rule one line: nodes, upper (the
 * nodes on nq's rows <= N-4, queens on rows <= N-5: nq's kernels count the rows below from
 * tables, so these are the nodes that cost a step or a leaf evaluation), and both as a ratio to
 * the line of N-1 (the growth the rule leaves). Each count is exact; there is no timing (work
 * per node differs per rule).
 *
 *   cc -O2 -o prune-growth scripts/study/prune-growth.c && ./prune-growth 8 16
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { PLAIN, BLK45, BLK46, BLK47, BLK48, BLKALL, HALL, ORACLE, NRULES };
static const char *rule_name[NRULES] = {"plain", "blk45", "blk46", "blk47", "blk48", "blkall",
                                        "hall",  "oracle"};
/* The first of nq's rows (as N less it) each blocked rule tests; they all stop at row N-4. */
static const int blk_from[NRULES] = {[BLK45] = 5, [BLK46] = 6, [BLK47] = 7, [BLK48] = 8};

static int n;
static uint32_t full;
static uint64_t nodes[NRULES], upper[NRULES];

/* The rows below a node are rows depth+1..n-1; ld and rd are the diagonal masks as seen on row
 * depth+1, cols the taken columns. Row depth+1+t sees (ld << t) | (rd >> t). */
static uint32_t open_on(uint32_t cols, uint32_t ld, uint32_t rd, int t)
{
  return ~(cols | (ld << t) | (rd >> t)) & full;
}

static int blocked(uint32_t cols, uint32_t ld, uint32_t rd, int depth)
{
  uint32_t seen = 0;
  for (int t = 0; depth + 1 + t < n; t++) {
    uint32_t o = open_on(cols, ld, rd, t);
    if (!o) return 1;
    seen |= o;
  }
  return seen != (~cols & full);
}

/* Perfect matching of rows depth+1..n-1 to the free columns on open squares (Kuhn's algorithm:
 * rows are few, a bitmask per row). */
static int match_row(const uint32_t *adj, int r, int *col_row, uint32_t *visited)
{
  uint32_t cand = adj[r] & ~*visited;
  while (cand) {
    int c = __builtin_ctz(cand);
    cand &= cand - 1;
    *visited |= 1u << c;
    if (col_row[c] < 0 || match_row(adj, col_row[c], col_row, visited)) {
      col_row[c] = r;
      return 1;
    }
  }
  return 0;
}

static int hall_cut(uint32_t cols, uint32_t ld, uint32_t rd, int depth)
{
  uint32_t adj[32];
  int col_row[32], rows = n - depth - 1;
  for (int t = 0; t < rows; t++) adj[t] = open_on(cols, ld, rd, t);
  for (int c = 0; c < n; c++) col_row[c] = -1;
  for (int t = 0; t < rows; t++) {
    uint32_t visited = 0;
    if (!match_row(adj, t, col_row, &visited)) return 1;
  }
  return 0;
}

/* Walks the subtree of a node just placed on row depth (masks as seen on row depth+1) under one
 * rule; returns its solutions. A node counts once its subtree is walked: under ORACLE (the plain
 * walk) only if it has a solution below it or is one. */
static uint64_t walk(int rule, uint32_t cols, uint32_t ld, uint32_t rd, int depth)
{
  uint64_t s = 0;
  int cut = 0;
  if (depth == n - 1)
    s = 1;
  else if (blk_from[rule] && depth + 1 >= n - blk_from[rule] && depth + 1 <= n - 4)
    cut = blocked(cols, ld, rd, depth);
  else if (rule == BLKALL)
    cut = blocked(cols, ld, rd, depth);
  else if (rule == HALL)
    cut = hall_cut(cols, ld, rd, depth);
  uint32_t avail = depth == n - 1 || cut ? 0 : open_on(cols, ld, rd, 0);
  while (avail) {
    uint32_t bit = avail & -avail;
    avail ^= bit;
    s += walk(rule, cols | bit, ((ld | bit) << 1) & full, (rd | bit) >> 1, depth + 1);
  }
  if (rule != ORACLE || s) {
    nodes[rule]++;
    upper[rule] += depth <= n - 5; /* nq's row depth + 1 <= N-4 */
  }
  return s;
}

static uint64_t run(int rule)
{
  uint64_t s = 0;
  nodes[rule] = upper[rule] = 0;
  for (int c = 0; c < n; c++) {
    uint32_t bit = 1u << c;
    s += walk(rule, bit, (bit << 1) & full, bit >> 1, 0);
  }
  return s;
}

int main(int argc, char **argv)
{
  static const uint64_t a000170[] = {1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712,
                                     365596, 2279184, 14772512, 95815104, 666090624};
  int lo = argc > 1 ? atoi(argv[1]) : 8, hi = argc > 2 ? atoi(argv[2]) : lo;
  if (lo < 6 || hi > 18 || lo > hi) {
    fprintf(stderr, "usage: %s N_FROM [N_TO]   (6 <= N <= 18)\n", argv[0]);
    return 2;
  }
  printf("%3s %-7s %16s %16s %8s %8s %14s %5s\n", "N", "rule", "nodes", "upper", "x_prev",
         "up_prev", "solutions", "check");
  int bad = 0;
  uint64_t prev[NRULES] = {0}, prev_up[NRULES] = {0};
  for (n = lo; n <= hi; n++) {
    full = (1u << n) - 1;
    for (int r = 0; r < NRULES; r++) {
      uint64_t sol = run(r), nd = nodes[r], up = upper[r];
      int ok = sol == a000170[n];
      printf("%3d %-7s %16" PRIu64 " %16" PRIu64 " %8.3f %8.3f %14" PRIu64 " %5s\n", n,
             rule_name[r], nd, up, prev[r] ? (double)nd / prev[r] : 0.0,
             prev_up[r] ? (double)up / prev_up[r] : 0.0, sol, ok ? "ok" : "WRONG");
      fflush(stdout);
      prev[r] = nd;
      prev_up[r] = up;
      bad |= !ok;
    }
  }
  return bad;
}
