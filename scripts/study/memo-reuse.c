/* Study: could a walk count the last K rows of a board without finding each solution,
 * by counting each distinct "rest of the board" once and looking the count up after that (a cache
 * of subproblems, the way a transfer matrix or a memoised search counts)? nq's kernels count the
 * last 4 rows without a walk, from small tables per column and per gap; this measures how often a
 * rest of K rows comes back, per N and K, and what a hit would save.
 *
 * Walks the plain N-queens tree (no symmetry, one queen a row, rows top to bottom, the bitmask
 * walk every nq kernel does) down to the nodes with K rows left (queens on rows 0..N-K-1: nq's
 * nodes on row N-K). There the rest of the board is a subproblem: the K free columns and, for each
 * of the K rows, its open squares (free columns the placed queens do not attack). Its count of
 * completions depends on nothing else, and not on where it sits: two rests that are one shifted
 * sideways have the same count, so the key is the K+1 masks shifted down to the lowest free
 * column. "exact" keys are that; "mirror" keys are also the same as their left-right mirror.
 *
 * Per N and K one line:
 *   above       nodes above the rests (queens on rows 0..N-K-1)
 *   rests       nodes with K rows left: the subproblems the walk meets
 *   exact       distinct rests, shifted; reuse_x = rests / exact
 *   mirror      distinct rests, shifted and mirrored; reuse_m = rests / mirror (nq's units count
 *               half of row 0 and a mirror image once: the reuse a cache could add to that is
 *               about reuse_m / 2)
 *   sub/rest    nodes below a rest, on average: the work a cache hit saves
 *   gain_x      plain nodes / (above + the nodes below each exact rest once): what a perfect
 *               cache (free look-ups) of exact rests saves; 1.00 is nothing
 *   MiB_x       the exact cache's least size: its keys and counts (4 bytes a mask, 8 a count)
 *   solutions   checked against OEIS A000170
 *
 * Every figure is an exact count; there is no timing.
 *
 * With --timed, per N and K instead: the same walk counting each rest by its own walk, and with a
 * cache of at most 64 MiB (a thread's share, this study's bound: the most slots, a power of two,
 * that fit), direct-mapped (a slot per hash of the exact key, a newer key evicts an older one),
 * each twice, alternating, the least CPU seconds of each:
 *   plain_s cached_s  the two times; ratio plain_s / cached_s (> 1: the cache pays)
 *   hits%             the rests the cache answered
 *   MiB               the cache's size
 * The walk is this file's plain recursive one, several times slower per node than nq's kernels:
 * a cache that does not pay against it pays less against them.
 *
 *   cc -O2 -o memo-reuse scripts/study/memo-reuse.c && ./memo-reuse 10 15 5 6 8
 *   ./memo-reuse --timed 14 17 5 6 8
 *   (arguments: NMIN NMAX K...; N <= 24, 2 <= K <= 12, K < N)
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KMAX 12

/* A000170, solutions of N = 1..24. */
static const uint64_t a000170[25] = {0,          1,          0,           0,           2,
                                     10,         4,          40,          92,          352,
                                     724,        2680,       14200,       73712,       365596,
                                     2279184,    14772512,   95815104,    666090624,   4968057848,
                                     39029188884ull, 314666222712ull, 2691008701644ull,
                                     24233937684440ull, 227514171973736ull};

/* An open-addressed set of keys (K+1 masks) with each key's count of completions. */
typedef struct {
  uint32_t *keys;   /* slots * width masks; a key's first mask (the free columns) is never 0 */
  uint64_t *counts; /* per slot */
  uint64_t slots, used;
  int width;
} set_t;

static int n, k;
static uint32_t full;
static set_t exact, mirror;
static uint64_t above, rests, below_all, below_exact, solutions;

static void set_init(set_t *s, int width)
{
  s->width = width;
  s->slots = 1u << 16;
  s->used = 0;
  s->keys = calloc(s->slots * (uint64_t)width, sizeof *s->keys);
  s->counts = calloc(s->slots, sizeof *s->counts);
  if (!s->keys || !s->counts) {
    fprintf(stderr, "memo-reuse: out of memory\n");
    exit(1);
  }
}

static void set_free(set_t *s)
{
  free(s->keys);
  free(s->counts);
}

static uint64_t hash_key(const uint32_t *w, int width)
{
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < width; i++) {
    h = (h ^ w[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return h;
}

/* The slot of key w: its own, or the empty one where it would go. */
static uint64_t set_slot(const set_t *s, const uint32_t *w)
{
  uint64_t i = hash_key(w, s->width) & (s->slots - 1);
  while (s->keys[i * s->width] && memcmp(&s->keys[i * s->width], w, s->width * sizeof *w))
    i = (i + 1) & (s->slots - 1);
  return i;
}

static void set_grow(set_t *s)
{
  set_t old = *s;
  s->slots *= 2;
  s->used = 0;
  s->keys = calloc(s->slots * (uint64_t)s->width, sizeof *s->keys);
  s->counts = calloc(s->slots, sizeof *s->counts);
  if (!s->keys || !s->counts) {
    fprintf(stderr, "memo-reuse: out of memory at %" PRIu64 " slots\n", s->slots);
    exit(1);
  }
  for (uint64_t i = 0; i < old.slots; i++) {
    const uint32_t *w = &old.keys[i * old.width];
    if (!w[0]) continue;
    uint64_t j = set_slot(s, w);
    memcpy(&s->keys[j * s->width], w, s->width * sizeof *w);
    s->counts[j] = old.counts[i];
    s->used++;
  }
  set_free(&old);
}

/* Whether w was new: then it is added with count c. */
static int set_add(set_t *s, const uint32_t *w, uint64_t c)
{
  if (2 * (s->used + 1) > s->slots) set_grow(s);
  uint64_t i = set_slot(s, w);
  if (s->keys[i * s->width]) return 0;
  memcpy(&s->keys[i * s->width], w, s->width * sizeof *w);
  s->counts[i] = c;
  s->used++;
  return 1;
}

/* Completions of a rest: open[t] are row t's open squares, cols the columns its own queens took,
 * ld and rd the diagonals they attack on row t. Adds the nodes it makes to *nodes. */
static uint64_t count_rest(const uint32_t *open, int t, uint32_t cols, uint32_t ld, uint32_t rd,
                           uint64_t *nodes)
{
  if (t == k) return 1;
  uint64_t c = 0;
  uint32_t av = open[t] & ~(cols | ld | rd);
  while (av) {
    uint32_t b = av & -av;
    av ^= b;
    ++*nodes;
    c += count_rest(open, t + 1, cols | b, (ld | b) << 1, (rd | b) >> 1, nodes);
  }
  return c;
}

static uint32_t reverse_bits(uint32_t x, int width)
{
  uint32_t r = 0;
  for (int b = 0; b < width; b++)
    if (x >> b & 1) r |= 1u << (width - 1 - b);
  return r;
}

/* The exact key w (K+1 masks) of a node with K rows left: cols the taken columns, ld and rd the
 * diagonals attacked on the next row. Returns the width of the free columns' span. */
static int rest_key(uint32_t cols, uint32_t ld, uint32_t rd, uint32_t *w)
{
  uint32_t free_cols = ~cols & full;
  int lo = __builtin_ctz(free_cols);
  w[0] = free_cols >> lo;
  for (int t = 0; t < k; t++) w[t + 1] = (free_cols & ~((ld << t) | (rd >> t))) >> lo;
  return 32 - __builtin_clz(free_cols) - lo;
}

/* A node with K rows left: its rest counted, added to both sets. */
static void rest(uint32_t cols, uint32_t ld, uint32_t rd)
{
  uint32_t w[KMAX + 1], m[KMAX + 1];
  int span = rest_key(cols, ld, rd, w);
  uint64_t nodes = 0, c = count_rest(w + 1, 0, 0, 0, 0, &nodes);
  rests++;
  below_all += nodes;
  solutions += c;
  if (set_add(&exact, w, c)) below_exact += nodes;
  for (int i = 0; i <= k; i++) m[i] = reverse_bits(w[i], span);
  set_add(&mirror, memcmp(m, w, sizeof(uint32_t) * (k + 1)) < 0 ? m : w, c);
}

/* --timed: a bounded cache, direct-mapped (a slot per hash, the newest key wins), of exact rests
 * and their counts, or none (slots == 0). */
static uint32_t *cache_keys;
static uint64_t *cache_counts, cache_slots, hits;

static void rest_timed(uint32_t cols, uint32_t ld, uint32_t rd)
{
  uint32_t w[KMAX + 1];
  rest_key(cols, ld, rd, w);
  rests++;
  uint64_t nodes = 0;
  if (!cache_slots) {
    solutions += count_rest(w + 1, 0, 0, 0, 0, &nodes);
    return;
  }
  uint64_t i = hash_key(w, k + 1) & (cache_slots - 1);
  uint32_t *key = &cache_keys[i * (k + 1)];
  if (!memcmp(key, w, (k + 1) * sizeof *w)) {
    hits++;
    solutions += cache_counts[i];
    return;
  }
  memcpy(key, w, (k + 1) * sizeof *w);
  cache_counts[i] = count_rest(w + 1, 0, 0, 0, 0, &nodes);
  solutions += cache_counts[i];
}

static int timed;

static void walk(int depth, uint32_t cols, uint32_t ld, uint32_t rd)
{
  if (depth == n - k) {
    if (timed)
      rest_timed(cols, ld, rd);
    else
      rest(cols, ld, rd);
    return;
  }
  uint32_t av = ~(cols | ld | rd) & full;
  while (av) {
    uint32_t b = av & -av;
    av ^= b;
    above++;
    walk(depth + 1, cols | b, ((ld | b) << 1) & full, (rd | b) >> 1);
  }
}

static double cpu_seconds(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One walk of N with a cache of `slots` slots (0: none): its CPU seconds. */
static double timed_walk(uint64_t slots)
{
  cache_slots = slots;
  cache_keys = slots ? calloc(slots * (k + 1), sizeof *cache_keys) : NULL;
  cache_counts = slots ? calloc(slots, sizeof *cache_counts) : NULL;
  if (slots && (!cache_keys || !cache_counts)) {
    fprintf(stderr, "memo-reuse: out of memory\n");
    exit(1);
  }
  if (slots) memset(cache_keys, 0xff, slots * (k + 1) * sizeof *cache_keys); /* paged in, no key */
  rests = hits = solutions = 0;
  double t0 = cpu_seconds();
  walk(0, 0, 0, 0);
  double t = cpu_seconds() - t0;
  free(cache_keys);
  free(cache_counts);
  return t;
}

/* --timed: per N and K, the walk without a cache and with one of at most 64 MiB (the bound
 * for a thread), each twice, alternating; the least CPU seconds of each. */
static int run_timed(int nmin, int nmax, int argc, char **argv)
{
  printf("%3s %3s %10s %10s %8s %7s %7s %15s %s\n", "N", "K", "plain_s", "cached_s", "ratio",
         "hits%", "MiB", "solutions", "check");
  int bad = 0;
  timed = 1;
  for (n = nmin; n <= nmax; n++)
    for (int a = 4; a < argc; a++) {
      k = atoi(argv[a]);
      if (k < 2 || k > KMAX || k >= n) continue;
      full = (1u << n) - 1;
      uint64_t slots = 1;
      while (slots * 2 * ((k + 1) * 4 + 8) <= 64u << 20) slots *= 2;
      double plain = 1e300, cached = 1e300;
      int ok = 1;
      for (int r = 0; r < 2; r++) {
        double t = timed_walk(0);
        ok &= solutions == a000170[n];
        if (t < plain) plain = t;
        t = timed_walk(slots);
        ok &= solutions == a000170[n];
        if (t < cached) cached = t;
      }
      bad |= !ok;
      printf("%3d %3d %10.3f %10.3f %8.2f %7.1f %7.1f %15" PRIu64 " %s\n", n, k, plain, cached,
             plain / cached, 100.0 * hits / rests, slots * ((k + 1) * 4.0 + 8) / (1 << 20),
             solutions, ok ? "ok" : "WRONG");
      fflush(stdout);
    }
  return bad;
}

int main(int argc, char **argv)
{
  int timed_arg = argc > 1 && !strcmp(argv[1], "--timed");
  if (argc < 4 + timed_arg) {
    fprintf(stderr, "usage: %s [--timed] NMIN NMAX K...\n", argv[0]);
    return 2;
  }
  int nmin = atoi(argv[1 + timed_arg]), nmax = atoi(argv[2 + timed_arg]);
  if (nmin < 4 || nmax > 24 || nmin > nmax) {
    fprintf(stderr, "memo-reuse: 4 <= NMIN <= NMAX <= 24\n");
    return 2;
  }
  if (timed_arg) return run_timed(nmin, nmax, argc, argv);
  printf("%3s %3s %13s %12s %12s %8s %12s %8s %8s %8s %9s %15s %s\n", "N", "K", "above", "rests",
         "exact", "reuse_x", "mirror", "reuse_m", "sub/rest", "gain_x", "MiB_x", "solutions",
         "check");
  int bad = 0;
  for (n = nmin; n <= nmax; n++)
    for (int a = 3; a < argc; a++) {
      k = atoi(argv[a]);
      if (k < 2 || k > KMAX || k >= n) continue;
      full = (1u << n) - 1;
      above = rests = below_all = below_exact = solutions = 0;
      set_init(&exact, k + 1);
      set_init(&mirror, k + 1);
      walk(0, 0, 0, 0);
      int ok = solutions == a000170[n];
      bad |= !ok;
      printf("%3d %3d %13" PRIu64 " %12" PRIu64 " %12" PRIu64 " %8.2f %12" PRIu64
             " %8.2f %8.1f %8.2f %9.1f %15" PRIu64 " %s\n",
             n, k, above, rests, exact.used, (double)rests / exact.used, mirror.used,
             (double)rests / mirror.used, (double)below_all / rests,
             (double)(above + below_all) / (above + below_exact),
             exact.used * ((k + 1) * 4.0 + 8) / (1 << 20), solutions, ok ? "ok" : "WRONG");
      fflush(stdout);
      set_free(&exact);
      set_free(&mirror);
    }
  return bad;
}
