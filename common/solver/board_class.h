/* nq: the rotation check of a complete side-part board, written once for the reference
 * (solver_ref.c) and the batch kernel (solver_batch.c). The GPU kernel (gpu_kernel.cl), which is
 * OpenCL C, keeps its own copy; test_gpu holds it to the reference on every unit it counts.
 *
 * b[0..n-1] holds one bit per row (the queen's column); topbit = 1 << (n-1), endbit =
 * topbit >> bound1 (the unit's settings, solver_batch.h). Returns 0 when the board is not its
 * orbit's representative (a rotation of it is smaller), else the size class of its orbit: 2
 * (symmetric under a 90-degree turn), 4 (under 180 degrees) or 8. Takahashi's test, in order:
 * 90 degrees when column 0 is on row bound2, 180 when the last row holds endbit, 270 when row
 * bound1 holds the top bit. Inline, so each caller's machine code is what it was with its own copy.
 */
#ifndef NQ_BOARD_CLASS_H
#define NQ_BOARD_CLASS_H

#include <stdint.h>

static inline int nq_board_class(const uint32_t *b, int n, int bound1, int bound2, uint32_t topbit,
                                 uint32_t endbit) {
  int e = n - 1, own, you;
  uint32_t bit, ptn;
  if (b[bound2] == 1) { /* 90 degrees */
    for (ptn = 2, own = 1; own <= e; own++, ptn <<= 1) {
      bit = 1;
      for (you = e; b[you] != ptn && b[own] >= bit; you--) bit <<= 1;
      if (b[own] > bit) return 0;
      if (b[own] < bit) break;
    }
    if (own > e) return 2;
  }
  if (b[e] == endbit) { /* 180 degrees */
    for (you = e - 1, own = 1; own <= e; own++, you--) {
      bit = 1;
      for (ptn = topbit; ptn != b[you] && b[own] >= bit; ptn >>= 1) bit <<= 1;
      if (b[own] > bit) return 0;
      if (b[own] < bit) break;
    }
    if (own > e) return 4;
  }
  if (b[bound1] == topbit) { /* 270 degrees */
    for (ptn = topbit >> 1, own = 1; own <= e; own++, ptn >>= 1) {
      bit = 1;
      for (you = 0; b[you] != ptn && b[own] >= bit; you++) bit <<= 1;
      if (b[own] > bit) return 0;
      if (b[own] < bit) break;
    }
  }
  return 8;
}

#endif
