/* nq-client: test-only fault injection (contracts in fault.h). */
#include "fault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef NQ_TEST_HOOKS
static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

int cli_kernel_can_run(const char *kernel) {
  const char *lacks = env("NQ_TEST_KERNEL_LACKS");
  if (lacks && kernel && strcmp(lacks, kernel) == 0) return 0;
  return nq_kernel_available(kernel);
}

int cli_fault_kernel(const char *backend, nq_counts_t *c) {
  const char *k = env("NQ_TEST_KERNEL_FAULT");
  if (!k || !backend || strcmp(k, backend) != 0 || c->c4 == 0) return 0;
  c->c4 += 1;
  return 1;
}

const char *cli_fault_describe(void) {
  static char buf[160];
  const char *f = env("NQ_TEST_KERNEL_FAULT"), *l = env("NQ_TEST_KERNEL_LACKS");
  if (!f && !l) return NULL;
  snprintf(buf, sizeof buf, "TEST BUILD fault injection:%s%.16s%s%.16s", f ? " kernel miscounts COUNT4: " : "",
           f ? f : "", l ? " kernel missing: " : "", l ? l : "");
  return buf;
}
#else
int cli_kernel_can_run(const char *kernel) { return nq_kernel_available(kernel); }
int cli_fault_kernel(const char *backend, nq_counts_t *c) {
  (void)backend;
  (void)c;
  return 0;
}
const char *cli_fault_describe(void) { return NULL; }
#endif
