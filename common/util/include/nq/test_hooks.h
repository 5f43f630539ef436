/* nq: the test switches -- NQ_* environment variables that inject a fault, read by test builds
 * only (compiled with NQ_TEST_HOOKS: nq-client-test). The user and tuning switches are in
 * nq/switches.h; docs/design.md, "Switches", lists all of them. An installed program includes
 * none of this: the ctest check_switches finds none of these names in nq-client, nq-server,
 * nq-admin, nq-solve or nq-verify.
 */
#ifndef NQ_TEST_HOOKS_H
#define NQ_TEST_HOOKS_H

#ifndef NQ_TEST_HOOKS
#error "nq/test_hooks.h is for test builds only (NQ_TEST_HOOKS)"
#endif

#include <stdlib.h>

/* X(id, what) */
#define NQ_TEST_HOOK_MAP(X)                                                                        \
  X(CLIENT_FAULT, "lie: every result reports COUNT8 + 1")                                         \
  X(TEST_KERNEL_FAULT, "K: results computed by kernel K report COUNT4 + 1 (a kernel's bug)")      \
  X(TEST_KERNEL_LACKS, "K: this machine is taken to lack kernel K")                               \
  X(GPU_FAIL_AFTER, "K: every OpenCL device fails at the launch after K (the self-test's aside)") \
  X(GPU_CORRUPT, "1: the kernel is built to miscount, so the self-test must refuse the device")

typedef enum {
#define NQ_TEST_HOOK_ENUM(id, what) NQ_HOOK_##id,
  NQ_TEST_HOOK_MAP(NQ_TEST_HOOK_ENUM)
#undef NQ_TEST_HOOK_ENUM
  NQ_HOOK_COUNT
} nq_test_hook_t;

/* The hook's value, or NULL when it is unset or empty. */
static inline const char *nq_test_hook(nq_test_hook_t h) {
  static const char *const names[NQ_HOOK_COUNT] = {
#define NQ_TEST_HOOK_NAME(id, what) [NQ_HOOK_##id] = "NQ_" #id,
      NQ_TEST_HOOK_MAP(NQ_TEST_HOOK_NAME)
#undef NQ_TEST_HOOK_NAME
  };
  const char *v = (int)h >= 0 && h < NQ_HOOK_COUNT ? getenv(names[h]) : NULL;
  return v && *v ? v : NULL;
}

#endif
