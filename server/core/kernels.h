/* nq-server: which kernel an assignment names (kernel-diverse verification;
 * docs/reliability.md, "Kernel-diverse verification"). Pure: no store, no clock.
 *
 * A job with diverse_kernels K >= 2 verifies a unit only when its agreeing results came from at
 * least K different kernels. Rather than wait for luck, the server names a kernel in each
 * replica it leases of such a unit: among the kernels the client can run -- its ladder, guessed
 * from the most capable backend of its recent results (an AVX-512 machine runs avx512, avx2, scalar and the
 * reference; an AVX2 one avx2, scalar, reference; ARM neon, scalar, reference) less the ones it
 * refused -- the one least represented among the unit's voting results and live leases, the
 * client's own first on a tie (a GPU client, whose backend is none of these, runs its own while
 * the unit has no result of it, then what most CPUs run: avx2, scalar, reference). So a fleet of identical machines makes diverse replicas (the
 * second replica of a unit runs the next kernel down), and a kernel that miscounts is outvoted
 * by two others instead of agreeing with itself. A client's own kernel is learned from the
 * results it computed with a kernel of its own choice (none named): until then nothing is named
 * to it for a unit with nothing yet, and what most CPUs run (avx2, scalar, reference) otherwise.
 */
#ifndef SRV_KERNELS_H
#define SRV_KERNELS_H

#include <stddef.h>

/* The client's own kernel, from the backends of its recent results (space-separated): a GPU
 * label when there is one (a GPU client: its named replicas ran on its CPU), else the most capable
 * CPU kernel among them (named replicas ran lower ones), else "" (none yet). Written to buf. */
void srv_kernel_native(const char *backends, char *buf, size_t len);

/* The kernel to name (a static string), or NULL to leave the choice to the client. native: the
 * backend of the client's newest result ("" unknown); present: the unit's kernels, one entry per
 * voting result or live lease, comma-separated; refused: the kernels the client refused. */
const char *srv_kernel_choose(const char *native, const char *present, const char *refused);

/* How many times slower than the client's own kernel (`native`) a replica with `kernel` is
 * expected to run, >= 1 (1 when either is unknown or they are the same): leases and hold limits
 * are scaled by it. The figures are measured (docs/reliability.md). */
double srv_kernel_slowdown(const char *native, const char *kernel);

#endif
