/* nq-client: test-only fault injection (docs/design.md, "Switches": the list of every NQ_*
 * variable).
 *
 * Compiled in only where NQ_TEST_HOOKS is defined: the test binary nq-client-test that the
 * build makes beside nq-client when the check suites are built (never installed, never packaged:
 * packaging/install.cmake names nq-client). In nq-client these are no-ops and no environment
 * variable is read. In nq-client-test:
 *   NQ_TEST_KERNEL_FAULT=K  results computed by kernel K (their backend is K) report COUNT4 + 1
 *                           on every unit with COUNT4 solutions: a kernel bug with the right node
 *                           count, the kind the node fingerprint does not catch;
 *   NQ_TEST_KERNEL_LACKS=K  this machine is taken to lack kernel K: an assignment naming it is
 *                           refused (no_kernel), as on a CPU without it;
 *   NQ_CLIENT_FAULT=lie     every result reports COUNT8 + 1: a liar, for the tests of quorum,
 *                           bans, spot checks and trusted owners;
 *   NQ_GPU_FAIL_AFTER=K     every device fails at the launch after K;
 *   NQ_GPU_CORRUPT=1        the device kernels are built to miscount (the self-test refuses them).
 * The names and what they do are listed once, in nq/test_hooks.h.
 */
#ifndef CLI_FAULT_H
#define CLI_FAULT_H

#include "nq/gpu.h"
#include "nq/solver.h"

/* 1 when this machine can run the named kernel (nq_kernel_available, less NQ_TEST_KERNEL_LACKS). */
int cli_kernel_can_run(const char *kernel);
/* NQ_TEST_KERNEL_FAULT on a result computed by `backend`; returns 1 when it changed c. */
int cli_fault_kernel(const char *backend, nq_counts_t *c);
/* NQ_CLIENT_FAULT: 1 for `lie`, 0 when unset (always in nq-client), NQ_EINVAL for anything else
 * (said on stderr). */
int cli_fault_lie(void);
/* NQ_GPU_FAIL_AFTER / NQ_GPU_CORRUPT into the devices' options (nothing in nq-client). */
void cli_fault_gpu(nq_gpu_opts_t *o);
/* A line for the start-up log naming the faults in force, or NULL. */
const char *cli_fault_describe(void);

#endif
