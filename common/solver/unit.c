/* nq: the work-unit model -- settings, rule replay, generator, text form.
 *
 * The rules here are the seed's (Takahashi's) pruning rules, applied row by row. The generator and
 * the validator both go through nq_unit_row_allowed(), so a prefix is accepted exactly when the
 * generator could have emitted it, and the units of (N, d) partition the search exactly.
 */
#include "nq/unit.h"
#include "nq/nq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nq_unit_depth_check(int n, int depth, char *errbuf, size_t errlen) {
  if (n < NQ_UNIT_MIN_N || n > NQ_MAX_N)
    return nq_errorf(errbuf, errlen, NQ_ERANGE, "N=%d has no units: units exist for N=%d..%d", n,
                     NQ_UNIT_MIN_N, NQ_MAX_N);
  if (depth < 2 || depth > n - 1)
    return nq_errorf(errbuf, errlen, NQ_ERANGE,
                     "depth %d is out of range for N=%d: the depth (rows in a unit's prefix) "
                     "must be 2..%d", depth, n, n - 1);
  return 0;
}

int nq_unit_effective_depth(int n, int depth) {
  if (depth > n - 1) depth = n - 1;
  return depth < 2 ? 2 : depth;
}

/* Part-level settings (everything but the attack masks), derived from N, part and BOUND1. */
static void unit_settings(int n, nq_part_t part, int bound1, nq_unit_state_t *st) {
  memset(st, 0, sizeof *st);
  st->mask = n == 32 ? 0xffffffffu : ((1u << n) - 1);
  st->topbit = 1u << (n - 1);
  st->bound1 = bound1;
  if (part == NQ_PART_SIDE) {
    st->bound2 = n - 1 - bound1;
    st->sidemask = st->topbit | 1u;
    st->endbit = st->topbit >> bound1;
    uint32_t last = st->topbit | 1u;
    for (int i = 1; i < bound1; i++) last |= (last >> 1) | (last << 1);
    st->lastmask = last & st->mask;
  }
}

static void place(nq_unit_state_t *st, int row, uint32_t bit) {
  st->board[row] = bit;
  st->left = (st->left | bit) << 1;
  st->down |= bit;
  st->right = (st->right | bit) >> 1;
}

static int check_header(int n, nq_part_t part, int bound1, int depth, char *errbuf,
                        size_t errlen) {
  if (n < NQ_UNIT_MIN_N || n > NQ_MAX_N)
    return nq_errorf(errbuf, errlen, NQ_ERANGE, "N=%d out of range %d..%d", n, NQ_UNIT_MIN_N,
                     NQ_MAX_N);
  if (depth < 2 || depth > n - 1)
    return nq_errorf(errbuf, errlen, NQ_ERANGE, "prefix length %d out of range 2..%d", depth,
                     n - 1);
  if (part == NQ_PART_CORNER) {
    if (bound1 < 2 || bound1 > n - 2)
      return nq_errorf(errbuf, errlen, NQ_EINVAL, "corner BOUND1=%d outside 2..%d", bound1, n - 2);
  } else if (part == NQ_PART_SIDE) {
    if (bound1 < 1 || bound1 >= n - 1 - bound1)
      return nq_errorf(errbuf, errlen, NQ_EINVAL,
                       "side BOUND1=%d must satisfy 1 <= BOUND1 < N-1-BOUND1", bound1);
  } else {
    return nq_errorf(errbuf, errlen, NQ_EINVAL, "unknown part %d", (int)part);
  }
  return 0;
}

/* Replay the prefix under the rules; fills st on success. */
static int replay(const nq_unit_t *u, nq_unit_state_t *st, char *errbuf, size_t errlen) {
  int rc = check_header(u->n, u->part, u->bound1, u->depth, errbuf, errlen);
  if (rc) return rc;
  unit_settings(u->n, u->part, u->bound1, st);
  for (int y = 0; y < u->depth; y++) {
    if (u->prefix[y] >= u->n)
      return nq_errorf(errbuf, errlen, NQ_EINVAL, "row %d: column %d outside the board", y,
                       u->prefix[y]);
  }
  int first = 1;
  if (u->part == NQ_PART_CORNER) {
    if (u->prefix[0] != 0)
      return nq_errorf(errbuf, errlen, NQ_EINVAL, "corner part: row 0 must be column 0");
    if (u->prefix[1] != u->bound1)
      return nq_errorf(errbuf, errlen, NQ_EINVAL,
                       "corner part: row 1 is column %d but BOUND1 is %d", u->prefix[1], u->bound1);
    place(st, 0, 1u);
    place(st, 1, 1u << u->bound1);
    first = 2;
  } else {
    if (u->prefix[0] != u->bound1)
      return nq_errorf(errbuf, errlen, NQ_EINVAL, "side part: row 0 is column %d but BOUND1 is %d",
                       u->prefix[0], u->bound1);
    place(st, 0, 1u << u->bound1);
  }
  for (int y = first; y < u->depth; y++) {
    int pruned;
    uint32_t ok =
        nq_unit_row_allowed(st, u->part, y, st->left, st->down, st->right, st->board, &pruned);
    uint32_t bit = 1u << u->prefix[y];
    if (pruned == 2)
      return nq_errorf(errbuf, errlen, NQ_EINVAL,
                       "row %d: the rows above already reject the board in a rotation check "
                       "(a dead node), search cut here", y);
    if (pruned == 3)
      return nq_errorf(errbuf, errlen, NQ_EINVAL,
                       "row %d: the rows above leave a row below no column, or a free column no "
                       "row (a blocked node), search cut here", y);
    if (pruned)
      return nq_errorf(errbuf, errlen, NQ_EINVAL,
                       "row %d = BOUND2: no corner queen yet, search cut here", y);
    if (!(ok & bit)) {
      if ((st->left | st->down | st->right) & bit)
        return nq_errorf(errbuf, errlen, NQ_EINVAL, "row %d: column %d is attacked", y,
                         u->prefix[y]);
      return nq_errorf(errbuf, errlen, NQ_EINVAL, "row %d: column %d breaks the BOUND rules", y,
                       u->prefix[y]);
    }
    place(st, y, bit);
  }
  return 0;
}

int nq_unit_validate(const nq_unit_t *u, char *errbuf, size_t errlen) {
  nq_unit_state_t st;
  return replay(u, &st, errbuf, errlen);
}

int nq_unit_state(const nq_unit_t *u, nq_unit_state_t *st) {
  return replay(u, st, NULL, 0);
}

int nq_unit_format(const nq_unit_t *u, char *buf, size_t len) {
  char tmp[NQ_UNIT_TEXT_MAX];
  int off = snprintf(tmp, sizeof tmp, "%d:%c:%d:", u->n, u->part == NQ_PART_SIDE ? 's' : 'c',
                     u->bound1);
  for (int y = 0; y < u->depth && y < NQ_MAX_N; y++)
    off += snprintf(tmp + off, sizeof tmp - (size_t)off, y ? ",%d" : "%d", u->prefix[y]);
  if ((size_t)off >= len) return NQ_ERANGE;
  memcpy(buf, tmp, (size_t)off + 1);
  return off;
}

/* Strict decimal: 1-2 digits, no sign, no leading zero (so every unit has one text). */
static int parse_small(const char **p, int *out) {
  const char *s = *p;
  if (*s < '0' || *s > '9') return -1;
  int v = 0, digits = 0;
  while (*s >= '0' && *s <= '9') {
    if (++digits > 2) return -1;
    v = v * 10 + (*s - '0');
    s++;
  }
  if (digits == 2 && **p == '0') return -1;
  *p = s;
  *out = v;
  return 0;
}

int nq_unit_parse(const char *text, nq_unit_t *out, char *errbuf, size_t errlen) {
  nq_unit_t u;
  memset(&u, 0, sizeof u);
  if (!text) return nq_errorf(errbuf, errlen, NQ_EINVAL, "no unit text");
  size_t tl = strnlen(text, NQ_UNIT_TEXT_MAX);
  if (tl == 0 || tl >= NQ_UNIT_TEXT_MAX)
    return nq_errorf(errbuf, errlen, NQ_EINVAL, "unit text empty or longer than %d",
                     NQ_UNIT_TEXT_MAX - 1);
  const char *p = text;
  if (parse_small(&p, &u.n) || *p++ != ':')
    return nq_errorf(errbuf, errlen, NQ_EINVAL, "expected N:part:BOUND1:columns, bad N");
  if (u.n < NQ_UNIT_MIN_N || u.n > NQ_MAX_N)
    return nq_errorf(errbuf, errlen, NQ_ERANGE, "N=%d out of range %d..%d", u.n, NQ_UNIT_MIN_N,
                     NQ_MAX_N);
  if ((*p != 'c' && *p != 's') || p[1] != ':')
    return nq_errorf(errbuf, errlen, NQ_EINVAL, "part must be 'c' (corner) or 's' (side)");
  u.part = *p == 's' ? NQ_PART_SIDE : NQ_PART_CORNER;
  p += 2;
  if (parse_small(&p, &u.bound1) || *p++ != ':')
    return nq_errorf(errbuf, errlen, NQ_EINVAL, "bad BOUND1");
  for (;;) {
    int col;
    if (u.depth >= NQ_MAX_N || parse_small(&p, &col))
      return nq_errorf(errbuf, errlen, NQ_EINVAL, "bad column list at offset %d", (int)(p - text));
    if (col >= u.n) return nq_errorf(errbuf, errlen, NQ_EINVAL, "column %d outside the board", col);
    u.prefix[u.depth++] = (uint8_t)col;
    if (*p == '\0') break;
    if (*p++ != ',')
      return nq_errorf(errbuf, errlen, NQ_EINVAL, "unexpected character at offset %d",
                       (int)(p - 1 - text));
  }
  int rc = nq_unit_validate(&u, errbuf, errlen);
  if (rc) return rc;
  *out = u;
  return 0;
}

/* ---- generator ---- */

typedef struct gen_s {
  nq_unit_t u;
  nq_unit_state_t st;
  int target;
  nq_unit_cb cb;
  void *arg;
} gen_t;

/* Depth-first walk from row y (rows < y placed in g->u / g->st) down to row g->target. */
static int gen_walk(gen_t *g, int y) {
  if (y == g->target) return g->cb(&g->u, g->arg);
  int pruned;
  uint32_t bm =
      nq_unit_row_allowed(&g->st, g->u.part, y, g->st.left, g->st.down, g->st.right,
                          g->st.board, &pruned);
  nq_unit_state_t saved = g->st;
  while (bm) {
    uint32_t bit = bm & (0u - bm);
    bm ^= bit;
    g->u.prefix[y] = (uint8_t)__builtin_ctz(bit);
    place(&g->st, y, bit);
    int rc = gen_walk(g, y + 1);
    g->st = saved;
    if (rc) return rc;
  }
  return 0;
}

int nq_units_generate(int n, int depth, nq_unit_cb cb, void *arg) {
  if (n < NQ_UNIT_MIN_N || n > NQ_MAX_N || depth < 2) return NQ_ERANGE;
  gen_t g;
  memset(&g, 0, sizeof g);
  g.cb = cb;
  g.arg = arg;
  g.target = nq_unit_effective_depth(n, depth);
  g.u.n = n;
  g.u.depth = g.target;
  g.u.part = NQ_PART_CORNER;
  for (int b1 = 2; b1 <= n - 2; b1++) {
    g.u.bound1 = b1;
    unit_settings(n, NQ_PART_CORNER, b1, &g.st);
    g.u.prefix[0] = 0;
    g.u.prefix[1] = (uint8_t)b1;
    place(&g.st, 0, 1u);
    place(&g.st, 1, 1u << b1);
    int rc = gen_walk(&g, 2);
    if (rc) return rc;
  }
  g.u.part = NQ_PART_SIDE;
  for (int b1 = 1; b1 < n - 1 - b1; b1++) {
    g.u.bound1 = b1;
    unit_settings(n, NQ_PART_SIDE, b1, &g.st);
    g.u.prefix[0] = (uint8_t)b1;
    place(&g.st, 0, 1u << b1);
    int rc = gen_walk(&g, 1);
    if (rc) return rc;
  }
  return 0;
}

/* Depth-first with the lowest column first (gen_walk takes the lowest bit first), the corner
 * part's loop before the side part's: so lexicographic on (part, columns). */
int nq_unit_cmp(const nq_unit_t *a, const nq_unit_t *b) {
  if (a->part != b->part) return a->part == NQ_PART_CORNER ? -1 : 1;
  int d = a->depth < b->depth ? a->depth : b->depth;
  for (int r = 0; r < d; r++)
    if (a->prefix[r] != b->prefix[r]) return a->prefix[r] < b->prefix[r] ? -1 : 1;
  return (a->depth > b->depth) - (a->depth < b->depth);
}

static int count_cb(const nq_unit_t *u, void *arg) {
  (void)u;
  (*(uint64_t *)arg)++;
  return 0;
}

int nq_units_count(int n, int depth, uint64_t *count) {
  *count = 0;
  return nq_units_generate(n, depth, count_cb, count);
}

int nq_unit_children(const nq_unit_t *u, nq_unit_cb cb, void *arg) {
  if (u->depth + 1 > u->n - 1) return NQ_ERANGE;
  gen_t g;
  memset(&g, 0, sizeof g);
  int rc = nq_unit_state(u, &g.st);
  if (rc) return rc;
  g.u = *u;
  g.cb = cb;
  g.arg = arg;
  g.target = u->depth + 1;
  g.u.depth = g.target;
  return gen_walk(&g, u->depth);
}
