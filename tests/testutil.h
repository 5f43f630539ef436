/* Helpers shared by the check suites. */
#ifndef NQ_TESTUTIL_H
#define NQ_TESTUTIL_H

#include <check.h>
#include <stdint.h>
#include "nq/unit.h"

/* Run a suite in fork mode; returns the number of failures (the main's exit status). */
int tu_run_suite(Suite *s);
/* Directory holding the built programs (NQ_BIN_DIR from ctest, else "."). */
const char *tu_bin_dir(void);
/* A fresh empty temporary directory (mkdtemp under $TMPDIR or /tmp); caller frees. */
char *tu_tmpdir(const char *tag);
/* rm -rf of a directory made by tu_tmpdir. */
void tu_rmtree(const char *dir);
/* A free TCP port on 127.0.0.1 (bind to port 0, read it back, close). */
int tu_free_port(void);
/* The monotonic clock in seconds (deadlines), and a sleep. */
double tu_now_s(void);
void tu_sleep_ms(int ms);
/* Start argv[0] with argv in a child that dies with the test process (PR_SET_PDEATHSIG), its
 * stdout and stderr appended to log (NULL: /dev/null). Returns its pid, or -1. */
int tu_spawn(char *const argv[], const char *log);
/* A blocking TCP connection to 127.0.0.1:port, or -1. */
int tu_tcp_connect(int port);
/* An nq_unit_cb that counts the units it is given in *(int *)arg. */
int tu_count_unit(const nq_unit_t *u, void *arg);

/* xorshift64* from a fixed seed, so that a failure names the same units every run (each test
 * runs in its own fork, from the seed). */
uint64_t tu_rng(void);
/* XORs x into tu_rng's state: a test's own sequence (say, per N), the same every run. */
void tu_rng_mix(uint64_t x);
/* A reservoir of up to 64 of the units an nq_unit_cb is given (zero it first), drawn with
 * tu_rng. */
typedef struct tu_pick_s {
  nq_unit_t v[64];
  int len;
  uint64_t seen;
} tu_pick_t;
int tu_pick_cb(const nq_unit_t *u, void *arg);
/* A cut unit (nq_unit_cut: dead or blocked) counts one node and nothing else in the reference
 * and in every fast kernel this CPU has, has no children, and a prefix one row below it (on a
 * free column) is refused with its reason. Returns the cut (2 dead, 3 blocked). */
int tu_check_cut_unit(const nq_unit_t *u);
/* A random unit of N at depth d (2 <= d <= N-1) that the generator's tree holds: a random
 * depth-2 unit, then random children down to depth d (never a cut unit above d). */
nq_unit_t tu_random_unit(int n, int d);

#endif
