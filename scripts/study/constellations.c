/* Study: would constellation-style pre-placement shrink the tree nq walks?
 *
 * Not part of the build or the tests: scripts/study-constellations.sh compiles and runs it.
 *
 * A constellation is the queens of the border: the column of the queen on row 0 (a) and on row
 * N-1 (b), the row of the queen on column 0 (c) and on column N-1 (d). A corner queen serves its
 * row and its column (a == 0 iff c == 0, a == N-1 iff d == 0, b == 0 iff c == N-1, b == N-1 iff
 * d == N-1), and the two to four queens must not attack each other. Every solution has exactly
 * one constellation, and the eight symmetries of the square map constellations to
 * constellations, so only one constellation per orbit (the one whose (a, b, c, d) is smallest)
 * is searched, and its solutions weigh its orbit size.
 *
 * The inner rows 1..N-2 are walked by a plain recursive bitmap search written like nq's reference
 * solver (common/solver/solver_ref.c): the border queens' column and diagonal attacks are folded into a
 * mask per row; a row that holds a border queen (row c or d) allows only that queen's column.
 *
 * Node count, defined like nq's (docs/design.md): one node per visit of a row, i.e. per partial
 * board "rows < y placed" that the search looks at, dead ends and the last searched row's visits
 * included. nq visits rows 2..N-1 of its depth-2 units (its last visit is row N-1, the leaf test);
 * here the search visits rows 1..N-2 of each canonical constellation (its last visit is row N-2,
 * whose free columns are the solutions, row N-1 being placed). Visits of forced rows (those that
 * hold a border queen) are counted as nodes and also reported apart.
 *
 * UNIQUE and COUNT2/4/8: a solution orbit meets the orbit of exactly one canonical constellation
 * C, and the solutions of C in it form one orbit of C's stabiliser H. So each solution of C is
 * counted iff it is the smallest of its H-images, in the class given by its own stabiliser (which
 * lies in H): order 1 -> COUNT8, 2 -> COUNT4, 4 -> COUNT2. For trivial H every solution counts in
 * COUNT8 without a test.
 *
 * A frame of width W (--width 2) generalises it: the queens of rows 0..W-1 and N-W..N-1 and of
 * columns 0..W-1 and N-W..N-1; the inner rows W..N-W-1 are searched, the rows that hold a frame
 * column's queen being forced. Width 1 is the constellation above.
 *
 * Usage: constellations [--width W] N [N...]          walk each N, one table row per N
 *        constellations [--width W] --units N [N...]  count frames (and their splits by the
 *                                                     queens of rows W and N-W-1) only
 *        constellations --plain N [N...]              the plain tree, no symmetry, no frame
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXN 32
#define MAXW 2

/* Published values (common/solver/known.c: A000170, A002562, COUNT2/4/8), the check of every row. */
static const struct {
  int n;
  unsigned long long total, unique, c2, c4, c8;
} known[] = {
    {4, 2, 1, 1, 0, 0},
    {5, 10, 2, 1, 0, 1},
    {6, 4, 1, 0, 1, 0},
    {7, 40, 6, 0, 2, 4},
    {8, 92, 12, 0, 1, 11},
    {9, 352, 46, 0, 4, 42},
    {10, 724, 92, 0, 3, 89},
    {11, 2680, 341, 0, 12, 329},
    {12, 14200, 1787, 4, 18, 1765},
    {13, 73712, 9233, 4, 32, 9197},
    {14, 365596, 45752, 0, 105, 45647},
    {15, 2279184, 285053, 0, 310, 284743},
    {16, 14772512, 1846955, 32, 734, 1846189},
    {17, 95815104, 11977939, 64, 2006, 11975869},
    {18, 666090624, 83263591, 0, 4526, 83259065},
    {19, 4968057848ULL, 621012754, 0, 11046, 621001708},
    {20, 39029188884ULL, 4878666808ULL, 240, 36035, 4878630533ULL},
};

/* The eight symmetries of the n x n square acting on (row, column). */
static void sym_apply(int g, int n, int r, int c, int *ro, int *co) {
  int m = n - 1;
  switch (g) {
  case 0: *ro = r, *co = c; break;          /* identity */
  case 1: *ro = c, *co = m - r; break;      /* 90 degrees */
  case 2: *ro = m - r, *co = m - c; break;  /* 180 degrees */
  case 3: *ro = m - c, *co = r; break;      /* 270 degrees */
  case 4: *ro = r, *co = m - c; break;      /* mirror left-right */
  case 5: *ro = m - r, *co = c; break;      /* mirror top-bottom */
  case 6: *ro = c, *co = r; break;          /* main diagonal */
  default: *ro = m - c, *co = m - r; break; /* anti-diagonal */
  }
}

typedef struct sum_s {
  long all, canon, canon_sym;
  unsigned long long nodes, forced_nodes, total, unique, c2, c4, c8, split;
  double cpu_s;
} sum_t;

typedef struct walk_s {
  int n, first, last;        /* the searched rows: first..last */
  uint32_t rowok[MAXN];      /* columns a queen of row y may take, frame attacks removed */
  int forced[MAXN];          /* 1 for the inner rows that hold a frame column's queen */
  int nstab, stab[8];        /* the frame's stabiliser, identity left out */
  int col[MAXN];             /* the board: the column of each row's queen */
  unsigned long long nodes, forced_nodes, sols, c2, c4, c8;
} walk_t;

/* The frame being enumerated: its lines (rows and columns 0..W-1, N-W..N-1) and its queens. */
typedef struct frame_s {
  int n, w, nl, units_only;
  int line[2 * MAXW];
  int qr[4 * MAXW], qc[4 * MAXW], nq;
  sum_t *s;
} frame_t;

static int frame_free(const frame_t *f, int r, int c) {
  for (int i = 0; i < f->nq; i++)
    if (f->qr[i] == r || f->qc[i] == c || abs(f->qr[i] - r) == abs(f->qc[i] - c)) return 0;
  return 1;
}

static int frame_line(const frame_t *f, int v) {
  for (int i = 0; i < f->nl; i++)
    if (f->line[i] == v) return i;
  return -1;
}

/* A frame's key under symmetry g: the column of each frame row's queen, then the row of each
 * frame column's queen (each frame line holds exactly one queen, and g maps lines to lines). */
static void frame_key(const frame_t *f, int g, int key[4 * MAXW]) {
  for (int i = 0; i < f->nq; i++) {
    int r, c, k;
    sym_apply(g, f->n, f->qr[i], f->qc[i], &r, &c);
    if ((k = frame_line(f, r)) >= 0) key[k] = c;
    if ((k = frame_line(f, c)) >= 0) key[f->nl + k] = r;
  }
}

/* The inner rows, one call per node, as the reference solver walks its units. */
static void walk_classify(walk_t *w);
static void walk_rows(walk_t *w, int y, uint32_t left, uint32_t down, uint32_t right) {
  uint32_t bitmap = w->rowok[y] & ~(left | down | right), bit;
  w->nodes++;
  if (w->forced[y]) {
    /* The forced queen's own attacks are folded into every inner row's mask, so no inner queen
     * can attack it: a forced row never ends a branch (a pass-through a kernel would skip). */
    if (!bitmap) abort();
    w->forced_nodes++;
  }
  if (y == w->last) {
    while (bitmap) {
      bitmap ^= bit = bitmap & (0u - bitmap);
      w->sols++;
      if (w->nstab) {
        w->col[y] = __builtin_ctz(bit);
        walk_classify(w);
      } else {
        w->c8++;
      }
    }
    return;
  }
  while (bitmap) {
    bitmap ^= bit = bitmap & (0u - bitmap);
    w->col[y] = __builtin_ctz(bit);
    walk_rows(w, y + 1, (left | bit) << 1, down | bit, (right | bit) >> 1);
  }
}

/* A solution of a symmetric frame: count it iff it is the smallest of its images under the
 * stabiliser, in the class of its own stabiliser's order. */
static void walk_classify(walk_t *w) {
  int n = w->n, fix = 1, img[MAXN];
  for (int i = 0; i < w->nstab; i++) {
    for (int r = 0; r < n; r++) {
      int ro, co;
      sym_apply(w->stab[i], n, r, w->col[r], &ro, &co);
      img[ro] = co;
    }
    int cmp = 0;
    for (int r = 0; r < n && !cmp; r++) cmp = (img[r] > w->col[r]) - (img[r] < w->col[r]);
    if (cmp < 0) return;
    if (cmp == 0) fix++;
  }
  if (fix == 1) w->c8++;
  else if (fix == 2) w->c4++;
  else w->c2++;
}

/* Fold the frame queens' attacks into the per-row masks of a walk. */
static void walk_setup(walk_t *w, const frame_t *f) {
  int n = f->n;
  uint32_t mask = (n == 32) ? ~0u : (1u << n) - 1;
  memset(w, 0, sizeof *w);
  w->n = n;
  w->first = f->w;
  w->last = n - f->w - 1;
  for (int y = w->first; y <= w->last; y++) {
    uint32_t att = 0;
    for (int i = 0; i < f->nq; i++) {
      int dy = y - f->qr[i], c = f->qc[i];
      att |= 1u << c;
      if (c + dy >= 0 && c + dy < n) att |= 1u << (c + dy);
      if (c - dy >= 0 && c - dy < n) att |= 1u << (c - dy);
    }
    w->rowok[y] = mask & ~att;
  }
  for (int i = 0; i < f->nq; i++) {
    w->col[f->qr[i]] = f->qc[i];
    if (f->qr[i] >= w->first && f->qr[i] <= w->last)
      w->rowok[f->qr[i]] = 1u << f->qc[i], w->forced[f->qr[i]] = 1;
  }
}

/* Sub-units of a frame split by the queens of its first and last searched rows: the pairs of
 * columns those rows can take beside the frame queens and each other. */
static unsigned long long split_count(const walk_t *w) {
  unsigned long long s = 0;
  int gap = w->last - w->first;
  for (int c1 = 0; c1 < w->n; c1++) {
    if (!(w->rowok[w->first] >> c1 & 1)) continue;
    for (int c2 = 0; c2 < w->n; c2++)
      if ((w->rowok[w->last] >> c2 & 1) && c1 != c2 && abs(c1 - c2) != gap) s++;
  }
  return s;
}

/* A complete frame: keep it iff its key is the smallest of its eight images; walk it. */
static void frame_done(frame_t *f) {
  sum_t *s = f->s;
  int key[4 * MAXW], img[4 * MAXW], stab[8], nstab = 0;
  frame_key(f, 0, key);
  s->all++;
  for (int g = 1; g < 8; g++) {
    frame_key(f, g, img);
    int i;
    for (i = 0; i < 2 * f->nl && img[i] == key[i]; i++) {}
    if (i == 2 * f->nl) stab[nstab++] = g; /* g fixes the frame */
    else if (img[i] < key[i]) return;      /* an image is smaller: not the canonical one */
  }
  int orbit = 8 / (1 + nstab);
  walk_t w;
  walk_setup(&w, f);
  s->canon++;
  s->canon_sym += nstab > 0;
  s->split += split_count(&w);
  if (f->units_only) return;
  w.nstab = nstab;
  memcpy(w.stab, stab, sizeof stab);
  walk_rows(&w, w.first, 0, 0, 0);
  s->nodes += w.nodes;
  s->forced_nodes += w.forced_nodes;
  s->total += (unsigned long long)orbit * w.sols;
  s->c2 += w.c2;
  s->c4 += w.c4;
  s->c8 += w.c8;
}

/* The queens of the frame columns not served by a frame row's queen, on inner rows. */
static void frame_cols(frame_t *f, int i) {
  if (i == f->nl) {
    frame_done(f);
    return;
  }
  int c = f->line[i];
  for (int j = 0; j < f->nq; j++)
    if (f->qc[j] == c) {
      frame_cols(f, i + 1);
      return;
    }
  for (int r = f->w; r < f->n - f->w; r++) {
    if (!frame_free(f, r, c)) continue;
    f->qr[f->nq] = r, f->qc[f->nq++] = c;
    frame_cols(f, i + 1);
    f->nq--;
  }
}

/* The queens of the frame rows, one per row, any column. */
static void frame_rows(frame_t *f, int i) {
  if (i == f->nl) {
    frame_cols(f, 0);
    return;
  }
  int r = f->line[i];
  for (int c = 0; c < f->n; c++) {
    if (!frame_free(f, r, c)) continue;
    f->qr[f->nq] = r, f->qc[f->nq++] = c;
    frame_rows(f, i + 1);
    f->nq--;
  }
}

static void run_n(int n, int width, int units_only, sum_t *s) {
  frame_t f;
  memset(&f, 0, sizeof f);
  memset(s, 0, sizeof *s);
  f.n = n, f.w = width, f.nl = 2 * width, f.units_only = units_only, f.s = s;
  for (int i = 0; i < width; i++) f.line[i] = i, f.line[width + i] = n - width + i;
  clock_t t0 = clock();
  frame_rows(&f, 0);
  s->unique = s->c2 + s->c4 + s->c8;
  s->cpu_s = (double)(clock() - t0) / CLOCKS_PER_SEC;
}

/* The plain tree for scale: every board, no symmetry, no frame; a node per visit of rows 1..N-1
 * (a board with rows < y placed), as nq counts from the rows below its unit prefix. */
static unsigned long long plain_rows(int last, uint32_t mask, int y, uint32_t left, uint32_t down,
                                     uint32_t right) {
  uint32_t bitmap = mask & ~(left | down | right), bit;
  unsigned long long nodes = 1;
  if (y == last) return nodes;
  while (bitmap) {
    bitmap ^= bit = bitmap & (0u - bitmap);
    nodes += plain_rows(last, mask, y + 1, (left | bit) << 1, down | bit, (right | bit) >> 1);
  }
  return nodes;
}

int main(int argc, char **argv) {
  int units_only = 0, plain = 0, width = 1, i = 1, bad = 0;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!strcmp(argv[i], "--units")) units_only = 1;
    else if (!strcmp(argv[i], "--plain")) plain = 1;
    else if (!strcmp(argv[i], "--width") && i + 1 < argc) width = atoi(argv[++i]);
    else break;
  }
  if (i >= argc || width < 1 || width > MAXW) {
    fprintf(stderr,
            "usage: %s [--width 1|2] [--units] N [N...] | --plain N [N...]\n"
            "       (walks: 4W+1 <= N <= 20; --units: N <= 31)\n",
            argv[0]);
    return 2;
  }
  if (plain)
    printf("%3s %16s %16s %8s\n", "N", "plain_nodes", "plain_nodes/8", "cpu_s");
  else if (units_only)
    printf("%3s %2s %9s %9s %6s %14s\n", "N", "W", "all", "canon", "sym", "split");
  else
    printf("%3s %2s %9s %8s %4s %14s %12s %15s %9s %3s %5s %9s %5s %8s %10s\n", "N", "W", "all",
           "canon", "sym", "nodes", "forced", "total", "unique", "c2", "c4", "c8", "check",
           "cpu_s", "split");
  for (; i < argc; i++) {
    int n = atoi(argv[i]);
    if (n < 4 * width + 1 || n > 31 || (!units_only && n > 20)) {
      fprintf(stderr, "N=%s out of range\n", argv[i]);
      return 2;
    }
    if (plain) {
      uint32_t mask = (1u << n) - 1;
      unsigned long long nodes = 0;
      clock_t t0 = clock();
      for (int c = 0; c < n; c++) nodes += plain_rows(n - 1, mask, 1, 2u << c, 1u << c, (1u << c) >> 1);
      printf("%3d %16llu %16.0f %8.3f\n", n, nodes, nodes / 8.0,
             (double)(clock() - t0) / CLOCKS_PER_SEC);
      fflush(stdout);
      continue;
    }
    sum_t s;
    run_n(n, width, units_only, &s);
    if (units_only) {
      printf("%3d %2d %9ld %9ld %6ld %14llu\n", n, width, s.all, s.canon, s.canon_sym, s.split);
    } else {
      const char *check = "-";
      for (size_t j = 0; j < sizeof known / sizeof known[0]; j++)
        if (known[j].n == n) {
          check = "ok";
          if (known[j].total != s.total || known[j].unique != s.unique || known[j].c2 != s.c2 ||
              known[j].c4 != s.c4 || known[j].c8 != s.c8)
            check = "WRONG", bad = 1;
        }
      printf("%3d %2d %9ld %8ld %4ld %14llu %12llu %15llu %9llu %3llu %5llu %9llu %5s %8.3f %10llu\n",
             n, width, s.all, s.canon, s.canon_sym, s.nodes, s.forced_nodes, s.total, s.unique,
             s.c2, s.c4, s.c8, check, s.cpu_s, s.split);
    }
    fflush(stdout);
  }
  return bad;
}
