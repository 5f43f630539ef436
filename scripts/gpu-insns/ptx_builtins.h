/* The OpenCL built-ins the GPU kernel uses in its search, for clang's nvptx64 target without an
 * OpenCL library (libclc): each as the PTX instruction a driver's compiler makes of it, so that
 * scripts/bench-gpu-insns.sh can read the kernel's loops in PTX. Included after clang's OpenCL
 * header (-finclude-default-header). The ids and atomics outside the loops stay calls. */
#define popcount(x) ((uint)__builtin_popcount(x))
#define clz(x) ((uint)__builtin_clz(x))
#define min(a, b) ((a) < (b) ? (a) : (b))
