/* nq: the fast kernel's shared code, which every variant (solver_scalar.c, solver_x86.c,
 * solver_neon.c) uses and which calls none of them: the side part's rotation check, the board
 * rebuild of its queued solutions, and PF_270's subtrees searched apart (the second set of
 * chunk arrays). The search itself is described at the top of solver_fast.c; the types and the
 * inline helpers are in solver_batch.h. */
#include "solver_batch.h"

#include "board_class.h"

#include <string.h>

static void side_count(kctx_t *k, const uint32_t *b) {
  switch (nq_board_class(b, k->n, k->bound1, k->bound2, k->topbit, k->endbit)) {
  case 2: k->c2++; break;
  case 4: k->c4++; break;
  case 8: k->c8++; break;
  default: break;
  }
}

void nq_side_count(kctx_t *k, const uint32_t *b) { side_count(k, b); }

/* Rebuild the boards of the queued side-part solutions and classify them. Each board is found
 * by walking up the parent indices from its row N-3 node (row N-4 with leaf512_four, c->leaf4);
 * the walks are done side by side, row by row, so their (dependent, cache-missing) loads overlap.
 * Must run before the chunk they point into is overwritten: the search of that row flushes the
 * queue before it returns. */
void nq_side_flush(bctx_t *c) {
  kctx_t *k = &c->k;
  const int e = k->n - 1, nq = c->nq;
  for (int j = 0; j < nq; j++) {
    uint32_t *b = c->q_board[j];
    memcpy(b, k->board, (size_t)k->y0 * sizeof *b); /* rows < y0 */
    if (c->leaf4) b[e - 3] = c->q_c3[j];
    b[e - 2] = c->q_bit[j];
    b[e - 1] = c->q_c2[j];
    b[e] = c->q_c1[j];
  }
  for (int y = c->leaf4 ? e - 3 : e - 2; y > k->y0; y--) {
    const uint32_t *P = c->P[y], *D = c->D[y], *Dup = c->D[y - 1];
    for (int j = 0; j < nq; j++) {
      uint32_t idx = c->q_idx[j];
      uint32_t par = c->pk ? c->L[y][idx] >> PK_SH : P[idx] & P_IDX;
      c->q_board[j][y - 1] = (D[idx] ^ Dup[par]) & k->mask;
      c->q_idx[j] = par;
    }
  }
  for (int j = 0; j < nq; j++) side_count(k, c->q_board[j]);
  c->nq = 0;
}

void nq_swap_sets(bctx_t *c, int y) {
  for (int r = y; r < c->k.n - 2; r++) {
    uint32_t *t;
    t = c->L[r], c->L[r] = c->aL[r], c->aL[r] = t;
    t = c->D[r], c->D[r] = c->aD[r], c->aD[r] = t;
    t = c->R[r], c->R[r] = c->aR[r], c->aR[r] = t;
    t = c->B[r], c->B[r] = c->aB[r], c->aB[r] = t;
    t = c->P[r], c->P[r] = c->aP[r], c->aP[r] = t;
  }
}

void nq_chain_plan(bctx_t *c) {
  const kctx_t *k = &c->k;
  if (!k->side) return;
  if (k->bound1 >= k->y0)
    c->split270 = k->bound1 < k->p270hi;
  else
    c->chain270 = k->p270lo <= k->p270hi && (c->P[k->y0][0] & PF_270);
}
