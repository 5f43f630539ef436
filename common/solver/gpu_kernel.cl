/* nq: the OpenCL kernel of the GPU backend (nq-solver-4, OpenCL C 1.2).
 *
 * One work-item searches one subtree held in its slot: a prefix of `depth` rows (a unit of the
 * generator, cut below a pool task by the host, common/solver/gpu_opencl.c). The search is the
 * reference's (common/solver/solver_ref.c) made iterative: a stack of the rows' remaining
 * candidates and attack masks, no recursion, the same rules in the same order, so every node the
 * reference counts is counted here -- dead and blocked nodes as one node each, nothing below
 * them -- and the side part's leaves go through the same rotation check. A launch runs each
 * work-item for at most `budget` nodes, then saves its search in the slot, so a launch's time is
 * bounded whatever the subtree's size; the next launch resumes it, and the host can split what a
 * saved search has left into new subtrees for idle slots. Each slot keeps its c2, c4, c8 and
 * node count; the host adds them up per task (no 64-bit atomics, which OpenCL 1.2 does not
 * promise).
 *
 * A subtree record is 32 bytes: byte 0 the depth d (2..N-1), bytes 1..d the columns of rows
 * 0..d-1. The part and BOUND1 follow from them: the corner part has row 0 in column 0 (BOUND1 is
 * row 1's column), the side part row 0 in column BOUND1 >= 1.
 *
 * NQ_CORRUPT (a build option the tests use) adds one to slot 0's COUNT4 each time its subtree is
 * searched: the self-test must refuse such a device.
 */
#ifndef NQ_CORRUPT
#define NQ_CORRUPT 0
#endif

#define NQ_REC 32
/* Work-items of a work-group (the host launches exactly these) and stack rows: a subtree has at
 * most NQ_ROWS rows below its prefix (NQ_GPU_ROWS_MAX, given by the host), so its search keeps
 * at most NQ_ROWS rows of candidates on the stack. */
#define NQ_GROUP 64
#ifndef NQ_ROWS
#define NQ_ROWS 12
#endif

/* ref_blocked: a node on one of the rows N-1-look..N-4 (and >= 2) whose placed rows leave a row
 * below it no column (row N-1: none outside lastmask), or a free column no row from y down.
 * look: nq/unit.h's nq_unit_look(N), given by the host with N. */
static int nq_blocked(int e, int look, int y, uint mask, uint l, uint d, uint r, uint lastmask) {
  if (y < 2 || y < e - look || y > e - 3) return 0;
  uint open = 0;
  for (int row = y; row <= e; row++) {
    const int k = row - y;
    uint cols = mask & ~d & ~(l << k) & ~(r >> k);
    if (row == e) cols &= ~lastmask;
    if (row > y && cols == 0) return 1;
    open |= cols;
  }
  return (mask & ~d & ~open) != 0;
}

/* ref_dead: a side-part node on a row <= N-4 whose placed rows already reject the board in the
 * 90- or 270-degree check. */
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

/* The stacks live in local memory, row-major across the group's work-items (consecutive
 * work-items, consecutive words: no bank conflicts); private arrays indexed by the row would
 * spill to the device's slow per-thread memory. */
#define STK(a, row) stk[((a) * NQ_ROWS + (row)) * NQ_GROUP + lid]

/* A slot's saved search (global memory, NQ_SLOT words a slot): the node to visit next (row y,
 * masks l, d, r), the columns of rows 0..y-1, and the stack rows of rows depth..y-1 (remaining
 * candidates and the masks they came with). */
#define NQ_SLOT (5 + 32 + 4 * NQ_ROWS)
#define SV_Y 0
#define SV_L 1
#define SV_D 2
#define SV_R 3
#define SV_BOARD 5
#define SV_STACK (5 + 32)

/* Slot states (stat[]): the host fills a slot (FRESH), the kernel runs it for at most `budget`
 * nodes a launch (RUNNING between launches) until its subtree is searched (DONE); the host takes
 * its counts and empties it. */
#define NQ_EMPTY 0u
#define NQ_FRESH 1u
#define NQ_RUNNING 2u
#define NQ_DONE 3u

__kernel __attribute__((reqd_work_group_size(NQ_GROUP, 1, 1)))
void nq_run(__global const uchar *recs, __global uint *stat, __global uint *save,
            __global ulong *out, const uint nslots, const int n, const uint budget,
            const int look) {
  __local uint stk[4 * NQ_ROWS * NQ_GROUP];
  const size_t gid = get_global_id(0);
  const int lid = (int)get_local_id(0);
  if (gid >= nslots) return;
  const uint status = stat[gid];
  if (status != NQ_FRESH && status != NQ_RUNNING) return;
  __global const uchar *t = recs + (size_t)NQ_REC * gid;
  __global uint *sv = save + (size_t)NQ_SLOT * gid;
  __global ulong *o = out + 4 * gid;
  const int depth = t[0], e = n - 1;
  const uint mask = n == 32 ? 0xffffffffu : ((1u << n) - 1u), topbit = 1u << e;
  const int side = t[1] != 0;
  const int bound1 = side ? t[1] : t[2], bound2 = side ? e - bound1 : 0;
  uint sidemask = 0, endbit = 0, lastmask = 0;
  if (side) {
    sidemask = topbit | 1u;
    endbit = topbit >> bound1;
    uint last = topbit | 1u;
    for (int i = 1; i < bound1; i++) last |= (last >> 1) | (last << 1);
    lastmask = last & mask;
  }
  uint board[32];
  uint l = 0, d = 0, r = 0;
  int y = depth;
  ulong c2 = 0, c4 = 0, c8 = 0, nodes = 0;
  if (status == NQ_FRESH) {
    for (int i = 0; i < depth; i++) {
      const uint bit = 1u << t[1 + i];
      board[i] = bit;
      l = (l | bit) << 1;
      d |= bit;
      r = (r | bit) >> 1;
    }
  } else {
    y = (int)sv[SV_Y];
    l = sv[SV_L];
    d = sv[SV_D];
    r = sv[SV_R];
    for (int i = 0; i < y; i++) board[i] = sv[SV_BOARD + i];
    for (int k = 0; k < y - depth; k++)
      for (int a = 0; a < 4; a++) STK(a, k) = sv[SV_STACK + 4 * k + a];
    c2 = o[0];
    c4 = o[1];
    c8 = o[2];
    nodes = o[3];
  }
  const int c1 = t[2], y90 = e - c1, y270 = c1; /* row 1's column (see ref_dead) */
  uint steps = 0, done = 1;
  for (;;) {
    if (steps++ == budget) { /* this launch's share: save where the search stands */
      sv[SV_Y] = (uint)y;
      sv[SV_L] = l;
      sv[SV_D] = d;
      sv[SV_R] = r;
      for (int i = 0; i < y; i++) sv[SV_BOARD + i] = board[i];
      for (int k = 0; k < y - depth; k++)
        for (int a = 0; a < 4; a++) sv[SV_STACK + 4 * k + a] = STK(a, k);
      done = 0;
      break;
    }
    /* Visit the node on row y with attack masks l, d, r: one node, then its children. */
    nodes++;
    uint next = 0;
    const uint bitmap = mask & ~(l | d | r);
    const int cut = (side && nq_dead(e, y, board, bound1, bound2, topbit, y90, y270)) ||
                    nq_blocked(e, look, y, mask, l, d, r, side ? lastmask : 0u);
    if (!cut && y == e) {
      if (!side) {
        c8 += bitmap != 0;
      } else if (bitmap && !(bitmap & lastmask)) {
        board[e] = bitmap;
        const int k = nq_check(e, board, bound1, bound2, topbit, endbit);
        c2 += k == 2;
        c4 += k == 4;
        c8 += k == 8;
      }
    } else if (!cut) {
      next = bitmap;
      if (!side) {
        if (y < bound1) next &= ~2u;
      } else if (y < bound1) {
        next &= ~sidemask;
      } else if (y == bound2) {
        if (!(d & sidemask)) next = 0;
        else if ((d & sidemask) != sidemask) next &= sidemask;
      }
    }
    int k = y - depth; /* the stack row of row y */
    if (next) {
      STK(0, k) = next;
      STK(1, k) = l;
      STK(2, k) = d;
      STK(3, k) = r;
    } else {
      do {
        k--;
      } while (k >= 0 && !STK(0, k));
      if (k < 0) break;
      y = depth + k;
    }
    const uint cand = STK(0, k), bit = cand & (0u - cand);
    STK(0, k) = cand ^ bit;
    board[y] = bit;
    l = (STK(1, k) | bit) << 1;
    d = STK(2, k) | bit;
    r = (STK(3, k) | bit) >> 1;
    y++;
  }
#if NQ_CORRUPT
  if (done && gid == 0) c4++;
#endif
  o[0] = c2;
  o[1] = c4;
  o[2] = c8;
  o[3] = nodes;
  stat[gid] = done ? NQ_DONE : NQ_RUNNING;
}
