/* nq: internal interface of the fast kernel's variants (common/solver/solver_fast.c, solver_x86.c). Not
 * installed: tests and benchmarks use it to run one variant on purpose and compare it with the
 * others.
 *
 * Every variant returns exactly the counts of nq_ref_solve_unit, nodes included.
 *   scalar  row-batched search in portable C, one child per step, branch-free
 *   avx2    the same, 8 lanes of 32 bits (AVX2; lane permutations from tables, not pdep/pext)
 *   avx512  the same, 16 lanes of 32 bits in two lane groups (AVX-512F/VL/BW + BMI2)
 *   neon    the same as avx2 (without its row N-3 leaf), 4 lanes of 32 bits (arm64 builds only)
 * nq_fast_solve_unit() picks the best variant the CPU supports, unless the environment variable
 * NQ_KERNEL (scalar | avx2 | avx512 | neon | auto) asks for another; a variant the CPU lacks falls back
 * to the best one it has.
 */
#ifndef NQ_SOLVER_SIMD_H
#define NQ_SOLVER_SIMD_H

#include "nq/solver.h"

typedef enum {
  NQ_KERNEL_AUTO = 0,
  NQ_KERNEL_SCALAR = 1,
  NQ_KERNEL_AVX2 = 2,
  NQ_KERNEL_AVX512 = 3,
  NQ_KERNEL_NEON = 4
} nq_kernel_t;

#define NQ_KERNEL_COUNT 5

/* Non-zero when this CPU (and OS) can run the variant; AUTO and SCALAR always can. */
int nq_fast_kernel_available(nq_kernel_t k);
/* "auto", "scalar", "avx2", "avx512", "neon". */
const char *nq_fast_kernel_name(nq_kernel_t k);
/* The variant nq_fast_solve_unit uses now (NQ_KERNEL honoured, never AUTO). */
nq_kernel_t nq_fast_kernel_selected(void);
/* Make nq_fast_solve_unit use variant k from now on (every thread); AUTO means the best one the
 * CPU has. NQ_ENODEV (and no change) if the CPU lacks k. For tests and benchmarks. */
int nq_fast_kernel_set(nq_kernel_t k);
/* Solve with one variant. NQ_EINVAL for an invalid unit, NQ_ENODEV if the CPU lacks the variant;
 * AUTO means the best available one (ignoring NQ_KERNEL). */
int nq_fast_solve_unit_kernel(const nq_unit_t *u, nq_counts_t *out, nq_kernel_t k);

/* The avx512 variant counts each node of row N-3 with its subtree from two small tables (rows
 * N-3..N-1 at once, see leaf512_tab in solver_x86.c) where the CPU also has AVX512-VBMI,
 * VPOPCNTDQ and CD and N <= 28; otherwise it makes those rows' nodes one by one as the other
 * variants do. Same counts either way. nq_fast_leaf_table_set(0) turns the tables off and (1) back
 * on, for every thread (NQ_ENODEV for 1 where the CPU lacks them); NQ_LEAF=0 in the environment
 * starts with them off. For tests and benchmarks. nq_fast_leaf_table_in_use() says whether the
 * avx512 variant uses them now. */
int nq_fast_leaf_table_set(int on);
int nq_fast_leaf_table_in_use(void);

/* With those tables, the avx512 variant also counts each node of row N-4 with its subtree at once
 * (rows N-4..N-1, from per-column tables over the 24 orders of its four free columns: see
 * leaf512_four in solver_x86.c) in the units whose rows N-4..N-1 have no BOUND1 rule; the other
 * units (and rows) use the row N-3 tables. Same counts either way. nq_fast_leaf_four_set(0) turns
 * that off and (1) back on, for every thread (NQ_ENODEV for 1 in a build without x86 SIMD);
 * NQ_LEAF4=0 in the environment starts with it off. For tests and benchmarks.
 * nq_fast_leaf_four_in_use() says whether it is on (it takes effect only where the row N-3
 * tables are in use). */
int nq_fast_leaf_four_set(int on);
int nq_fast_leaf_four_in_use(void);

/* With their table leaves, the avx512 and avx2 variants' side part decides during the search the
 * first step of the rotation checks that the flags PF_90 and PF_270 ask for (which row holds the
 * queen on column 1, or N-2, against row 1's column: see PF_S90 in solver_batch.h), so that the
 * leaves count, or drop, most of those solutions at once instead of rebuilding their boards. Same
 * counts either way. (The rejecting first steps on rows <= N-5 are decided in every case: the
 * search needs them for its dead nodes, nq_unit_dead.) nq_fast_flag_decide_set(0) turns the rest
 * off and (1) back on, for every thread
 * (NQ_ENODEV for 1 in a build without x86 SIMD); NQ_FLAGDEC=0 in the environment starts with it
 * off. For tests and benchmarks. nq_fast_flag_decide_in_use() says whether it is on. */
int nq_fast_flag_decide_set(int on);
int nq_fast_flag_decide_in_use(void);

/* The avx2 variant counts each node of row N-3 with its subtree at once too (rows N-3..N-1 from
 * per-lane tests of its three free columns, see leaf256_tab in solver_x86.c), N <= 28, except in
 * side units with BOUND1 on row N-3. Same counts either way. nq_fast_leaf_avx2_set(0) turns that
 * off and (1) back on, for every thread (NQ_ENODEV for 1 in a build without x86 SIMD);
 * NQ_LEAF2=0 in the environment starts with it off. For tests and benchmarks.
 * nq_fast_leaf_avx2_in_use() says whether it is on. */
int nq_fast_leaf_avx2_set(int on);
int nq_fast_leaf_avx2_in_use(void);

/* The avx512 variant's side part, N <= NQ_FAST_PACK_MAX_N: a node's parent index and flags ride
 * in the spare high bits of its L and D words instead of an array of their own (see PK_SH in
 * solver_batch.h). Same counts either way. nq_fast_side_pack_set(0) turns that off and (1) back on, for every thread
 * (NQ_ENODEV for 1 in a build without x86 SIMD); NQ_PACK=0 in the environment starts with it
 * off. For tests and benchmarks. nq_fast_side_pack_in_use() says whether it is on. */
#define NQ_FAST_PACK_MAX_N 22
int nq_fast_side_pack_set(int on);
int nq_fast_side_pack_in_use(void);

#endif
