/* OpenCL C as C: just enough of it for common/solver/gpu_kernel.cl to compile as a C function
 * (clang), so that the kernel's own source can run on the CPU under an
 * instruction counter (scripts/bench-gpu-insns.sh). Work-items run one after another: the driver
 * (gpu_insns.c) sets the ids before each call. Address-space qualifiers are empty (a __local
 * array is the call's own: a work-item's saved search is reloaded from its slot), and vector
 * literals are C's (NQ_U4).
 */
#ifndef NQ_CL_SHIM_H
#define NQ_CL_SHIM_H

#include <stddef.h>
#include <stdint.h>

typedef unsigned char uchar;
typedef unsigned int uint;
typedef unsigned long ulong;
/* OpenCL's uint4 as four words: one 16-byte load or store on a GPU, four scalar ones here (not
 * the x86 vector unit's extract and insert instructions). */
typedef struct { uint x, y, z, w; } uint4;

#define __kernel
#define __global
#define __constant const
#define __private
#define __local
#define NQ_U4(a, b, c, d) ((uint4){(a), (b), (c), (d)})
#define reqd_work_group_size(x, y, z) unused

static size_t shim_gid, shim_lid;
static inline size_t get_global_id(int d) { return (void)d, shim_gid; }
static inline size_t get_local_id(int d) { return (void)d, shim_lid; }

static inline uint popcount(uint x) { return (uint)__builtin_popcount(x); }
static inline uint clz(uint x) { return x ? (uint)__builtin_clz(x) : 32u; }
static inline uint min(uint a, uint b) { return a < b ? a : b; }
static inline uint atomic_inc(volatile uint *p) { return (*p)++; }
static inline uint atomic_add(volatile uint *p, uint v) {
  uint o = *p;
  *p = o + v;
  return o;
}

#endif
