/* Helpers shared by the check suites. */
#ifndef NQ_TESTUTIL_H
#define NQ_TESTUTIL_H

#include <check.h>
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

#endif
