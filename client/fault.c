/* nq-client: test-only fault injection (contracts in fault.h). */
#include "fault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/nq.h"

#ifdef NQ_TEST_HOOKS
#include "nq/test_hooks.h"

int cli_kernel_can_run(const char *kernel) {
  const char *lacks = nq_test_hook(NQ_HOOK_TEST_KERNEL_LACKS);
  if (lacks && kernel && strcmp(lacks, kernel) == 0) return 0;
  return nq_kernel_available(kernel);
}

int cli_fault_kernel(const char *backend, nq_counts_t *c) {
  const char *k = nq_test_hook(NQ_HOOK_TEST_KERNEL_FAULT);
  if (!k || !backend || strcmp(k, backend) != 0 || c->c4 == 0) return 0;
  c->c4 += 1;
  return 1;
}

int cli_fault_lie(void) {
  const char *f = nq_test_hook(NQ_HOOK_CLIENT_FAULT);
  if (!f) return 0;
  if (strcmp(f, "lie") == 0) return 1;
  fprintf(stderr, "nq-client: NQ_CLIENT_FAULT knows only 'lie'\n");
  return NQ_EINVAL;
}

void cli_fault_gpu(nq_gpu_opts_t *o) {
  const char *fa = nq_test_hook(NQ_HOOK_GPU_FAIL_AFTER), *co = nq_test_hook(NQ_HOOK_GPU_CORRUPT);
  if (fa && !o->fail_after) o->fail_after = (unsigned)strtoul(fa, NULL, 10);
  if (co && !strcmp(co, "1")) o->corrupt = 1;
}

const char *cli_fault_describe(void) {
  static char buf[160];
  const char *f = nq_test_hook(NQ_HOOK_TEST_KERNEL_FAULT), *l = nq_test_hook(NQ_HOOK_TEST_KERNEL_LACKS);
  if (!f && !l) return NULL;
  snprintf(buf, sizeof buf, "TEST BUILD fault injection:%s%.16s%s%.16s", f ? " kernel miscounts COUNT4: " : "",
           f ? f : "", l ? " kernel missing: " : "", l ? l : "");
  return buf;
}
#else
int cli_fault_lie(void) { return 0; }
void cli_fault_gpu(nq_gpu_opts_t *o) { (void)o; }
int cli_kernel_can_run(const char *kernel) { return nq_kernel_available(kernel); }
int cli_fault_kernel(const char *backend, nq_counts_t *c) {
  (void)backend;
  (void)c;
  return 0;
}
const char *cli_fault_describe(void) { return NULL; }
#endif
