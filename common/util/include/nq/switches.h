/* nq: the switchboard -- every NQ_* environment variable that a program of nq reads, listed once
 * with its kind, its readers and what it does (docs/design.md, "Switches", is the same list).
 *
 * Three kinds:
 *   user    a setting for people and packages (a secret's file, the log level);
 *   tuning  a kernel's optional step turned off, or a probe picked, for benchmarks: the counts
 *           are the same either way (the suites check each);
 *   test    a fault injected for the tests: listed in nq/test_hooks.h, which only a test build
 *           (NQ_TEST_HOOKS: nq-client-test) may include. An installed program has no code that
 *           reads them; the ctest check_switches finds none of their names in nq-client,
 *           nq-server, nq-admin, nq-solve or nq-verify.
 * Code reads a variable through nq_switch_get with its enum, never by a getenv of its name: the ctest
 * check_switches fails on a getenv of an NQ_ name anywhere else.
 */
#ifndef NQ_SWITCHES_H
#define NQ_SWITCHES_H

/* X(id, kind, readers, what) */
#define NQ_SWITCH_MAP(X)                                                                           \
  X(LOG_LEVEL, USER, "every program", "error|warn|info|debug: the log level, over the default")   \
  X(ADMIN_TOKEN, USER, "nq-admin", "the admin token for --server, when no --token(-file) is given") \
  X(TOKEN_FILE, USER, "nq-client", "a file holding the client's token, when no credential is given") \
  X(SCHEMA_DIR, USER, "nq-server, nq-admin", "the folder of the schema migrations (NNN_*.sql)")  \
  X(KERNEL, TUNING, "every solver", "avx512|avx2|neon|scalar: the fast kernel, over the best one") \
  X(LEAF, TUNING, "the avx512 kernel", "0: no row N-3 leaf tables")                              \
  X(LEAF4, TUNING, "the avx512 kernel", "0: no row N-4 leaf tables")                             \
  X(LEAF2, TUNING, "the avx2 kernel", "0: no AVX2 leaf")                                         \
  X(PACK, TUNING, "the x86 kernels", "0: no packed side part")                                   \
  X(FLAGDEC, TUNING, "the x86 kernels", "0: the symmetry flags not decided by the search")       \
  X(EST_PROBE, TUNING, "nq-solve --estimate, nq-server's planner", "plain: the probe without pdep")

typedef enum {
#define NQ_SWITCH_ENUM(id, kind, readers, what) NQ_SW_##id,
  NQ_SWITCH_MAP(NQ_SWITCH_ENUM)
#undef NQ_SWITCH_ENUM
  NQ_SW_COUNT
} nq_switch_t;

typedef enum { NQ_SWITCH_USER, NQ_SWITCH_TUNING } nq_switch_kind_t;

/* The variable's value, or NULL when it is unset or empty. */
const char *nq_switch_get(nq_switch_t sw);
/* Its name ("NQ_LOG_LEVEL"), kind, readers and one line of what it does. */
const char *nq_switch_name(nq_switch_t sw);
nq_switch_kind_t nq_switch_kind(nq_switch_t sw);
const char *nq_switch_readers(nq_switch_t sw);
const char *nq_switch_what(nq_switch_t sw);

#endif
