/* nq/opts.h: options declared once -- types, bounds, defaults, environment, errors, --help and
 * the man page from the table; and every program's table checked (no name or letter twice,
 * every default accepted). */
#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli.h"
#include "cli_opts.h"
#include "nq/job_opts.h"
#include "nq/nq.h"
#include "nq/opts.h"
#include "srv_opts.h"
#include "testutil.h"

/* ---- a table of every type ---------------------------------------------------------------- */

typedef struct demo_s {
  int flag, count, level;
  int64_t big;
  uint64_t seed;
  double rate;
  const char *name, *path;
  int odd; /* set by a program's own parser: odd numbers only */
} demo_t;

static int set_odd(void *base, const nq_opt_t *o, const char *v, char *err, size_t len) {
  int x = atoi(v);
  if (x % 2 == 0) return nq_errorf(err, len, NQ_EINVAL, "expected an odd number, got '%s'", v);
  ((demo_t *)base)->odd = x;
  return 0;
}

static const nq_opt_t demo_table[] = {
    {NQ_OPT_SECTION, .help = "Demo:"},
    {NQ_OPT_FLAG, "flag", 'f', .off = offsetof(demo_t, flag), .help = "a flag"},
    {NQ_OPT_INT, "count", 'c', .off = offsetof(demo_t, count), .arg = "N", .lo = 1, .hi = 1024,
     .def = "8", .env = "NQ_TEST_OPTS_COUNT", .help = "how many"},
    {NQ_OPT_INT64, "big", .off = offsetof(demo_t, big), .arg = "B", .lo = -5,
     .hi = INT64_MAX, .help = "a big one"},
    {NQ_OPT_UINT64, "seed", .off = offsetof(demo_t, seed), .arg = "S", .help = "any u64"},
    {NQ_OPT_DOUBLE, "rate", .off = offsetof(demo_t, rate), .arg = "R", .dlo = 0.5, .dhi = 86400,
     .def = "60", .help = "a rate"},
    {NQ_OPT_STRING, "name", .off = offsetof(demo_t, name), .arg = "NAME", .help = "a name"},
    {NQ_OPT_STRING, "path", .off = offsetof(demo_t, path), .arg = "P",
     .flags = NQ_OPTF_EMPTY_OK, .help = "may be empty"},
    {NQ_OPT_ENUM, "level", .off = offsetof(demo_t, level), .choices = "idle|low|normal",
     .def = "low", .help = "a level"},
    {NQ_OPT_INT, "odd", .arg = "K", .set = set_odd, .help = "odd numbers"},
    {NQ_OPT_FLAG, "secret", .off = offsetof(demo_t, flag), .flags = NQ_OPTF_HIDDEN,
     .help = "not listed"},
    {NQ_OPT_END}};

static void demo_init(nq_opts_t *o, demo_t *d) {
  memset(o, 0, sizeof *o);
  memset(d, 0, sizeof *d);
  o->prog = "demo";
  o->usage = "demo [options] ARG";
  o->about = "A demonstration.";
  o->summary = "the demo";
  o->group[0] = (nq_opt_group_t){demo_table, d};
}

/* Parse a NULL-terminated argument list (after "demo"); returns nq_opts_parse's answer. */
static int demo_parse(nq_opts_t *o, demo_t *d, char *err, size_t len, ...) {
  char *argv[32];
  int argc = 0;
  va_list ap;
  va_start(ap, len);
  argv[argc++] = "demo";
  for (char *a; argc < 31 && (a = va_arg(ap, char *)) != NULL;) argv[argc++] = a;
  va_end(ap);
  argv[argc] = NULL;
  demo_init(o, d);
  err[0] = 0;
  return nq_opts_parse(o, argc, argv, err, len);
}

START_TEST(types_and_defaults) {
  nq_opts_t o;
  demo_t d;
  char err[300];
  unsetenv("NQ_TEST_OPTS_COUNT");
  ck_assert_int_eq(demo_parse(&o, &d, err, sizeof err, (char *)NULL), 0);
  ck_assert_int_eq(d.count, 8); /* the table's defaults */
  ck_assert(d.rate == 60);
  ck_assert_int_eq(d.level, 1);
  ck_assert_int_eq(d.flag, 0);
  ck_assert_int_eq(nq_opts_given(&o, "count"), 0);
  ck_assert_int_eq(demo_parse(&o, &d, err, sizeof err, "-f", "--count", "1024", "--big",
                              "9223372036854775807", "--seed", "18446744073709551615", "--rate",
                              "0.5", "--name", "x", "--path=", "--level", "normal", "--odd", "7",
                              "operand", "-c", "3", (char *)NULL),
                   0);
  ck_assert_int_eq(d.flag, 1);
  ck_assert_int_eq(d.count, 3); /* the last one wins */
  ck_assert_int_eq(nq_opts_given(&o, "count"), 2);
  ck_assert(d.big == INT64_MAX);
  ck_assert(d.seed == UINT64_MAX);
  ck_assert(d.rate == 0.5);
  ck_assert_str_eq(d.name, "x");
  ck_assert_str_eq(d.path, "");
  ck_assert_int_eq(d.level, 2);
  ck_assert_int_eq(d.odd, 7);
  ck_assert_int_eq(o.optind, 19); /* the operand, moved last (argc 20) */
}
END_TEST

START_TEST(bad_values) {
  static const struct {
    const char *opt, *value, *want;
  } bad[] = {
      {"--count", "0", "--count: expected an integer 1..1024, got '0'"},
      {"--count", "1025", "--count: expected an integer 1..1024"},
      {"--count", "12x", "--count: expected an integer"},
      {"--count", "", "--count: expected an integer"},
      {"--count", " 5", "--count: expected an integer"},
      {"--count", "99999999999999999999", "--count: expected an integer"},
      {"--big", "-6", "--big: expected an integer -5.."},
      {"--big", "9223372036854775808", "--big: expected"},
      {"--seed", "-1", "--seed: expected an integer 0..18446744073709551615"},
      {"--seed", "18446744073709551616", "--seed: expected"},
      {"--rate", "0.4", "--rate: expected a number 0.5..86400, got '0.4'"},
      {"--rate", "nan", "--rate: expected a number"},
      {"--rate", "1e999", "--rate: expected a number"},
      {"--rate", "5s", "--rate: expected a number"},
      {"--name", "", "--name: expected a value"},
      {"--level", "high", "--level: expected idle, low or normal, got 'high'"},
      {"--odd", "4", "--odd: expected an odd number, got '4'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    nq_opts_t o;
    demo_t d;
    char err[300];
    int rc = demo_parse(&o, &d, err, sizeof err, (char *)bad[i].opt, (char *)bad[i].value,
                        (char *)NULL);
    ck_assert_msg(rc < 0, "%s %s accepted", bad[i].opt, bad[i].value);
    ck_assert_msg(strstr(err, bad[i].want) != NULL, "%s %s: %s", bad[i].opt, bad[i].value, err);
  }
  /* A refused value changes nothing. */
  demo_t d = {.count = 5};
  char err[300];
  ck_assert_int_ne(nq_opt_set(&demo_table[2], &d, "0", err, sizeof err), 0);
  ck_assert_int_eq(d.count, 5);
}
END_TEST

START_TEST(unknown_and_missing) {
  nq_opts_t o;
  demo_t d;
  char err[300];
  ck_assert_int_eq(demo_parse(&o, &d, err, sizeof err, "--bogus", (char *)NULL), NQ_EINVAL);
  ck_assert_str_eq(err, "unknown option '--bogus'");
  ck_assert_int_eq(demo_parse(&o, &d, err, sizeof err, "-z", (char *)NULL), NQ_EINVAL);
  ck_assert_str_eq(err, "unknown option '-z'");
  ck_assert_int_eq(demo_parse(&o, &d, err, sizeof err, "--count", (char *)NULL), NQ_EINVAL);
  ck_assert_str_eq(err, "--count: needs a value");
  ck_assert_int_eq(demo_parse(&o, &d, err, sizeof err, "-c", (char *)NULL), NQ_EINVAL);
  ck_assert_str_eq(err, "--count: needs a value");
  ck_assert_int_eq(demo_parse(&o, &d, err, sizeof err, "--flag=1", (char *)NULL), NQ_EINVAL);
  ck_assert_str_eq(err, "--flag: takes no value");
  ck_assert_int_eq(demo_parse(&o, &d, err, sizeof err, "--version", (char *)NULL), NQ_EINVAL);
}
END_TEST

START_TEST(environment) {
  nq_opts_t o;
  demo_t d;
  char err[300];
  setenv("NQ_TEST_OPTS_COUNT", "17", 1);
  ck_assert_int_eq(demo_parse(&o, &d, err, sizeof err, (char *)NULL), 0);
  ck_assert_int_eq(d.count, 17);
  /* The command line wins over the environment. */
  ck_assert_int_eq(demo_parse(&o, &d, err, sizeof err, "--count", "2", (char *)NULL), 0);
  ck_assert_int_eq(d.count, 2);
  /* A bad value in the environment names the variable. */
  setenv("NQ_TEST_OPTS_COUNT", "lots", 1);
  ck_assert_int_ne(demo_parse(&o, &d, err, sizeof err, (char *)NULL), 0);
  ck_assert_msg(strstr(err, "NQ_TEST_OPTS_COUNT: expected an integer 1..1024"), "%s", err);
  unsetenv("NQ_TEST_OPTS_COUNT");
}
END_TEST

static char *capture(void (*fn)(const nq_opts_t *, FILE *), const nq_opts_t *o) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_ptr_nonnull(f);
  fn(o, f);
  fclose(f);
  return buf;
}

START_TEST(help_and_man) {
  nq_opts_t o;
  demo_t d;
  demo_init(&o, &d);
  char *h = capture(nq_opts_help, &o);
  ck_assert_msg(!strncmp(h, "usage: demo [options] ARG\nA demonstration.\nDemo:\n", 48), "%s", h);
  for (const nq_opt_t *p = demo_table; p->type != NQ_OPT_END; p++) {
    if (p->type == NQ_OPT_SECTION) continue;
    char want[64];
    snprintf(want, sizeof want, "--%s", p->name);
    if (p->flags & NQ_OPTF_HIDDEN) ck_assert_msg(!strstr(h, want), "%s listed", want);
    else ck_assert_msg(strstr(h, want) != NULL, "%s missing:\n%s", want, h);
  }
  /* Bounds, default and variable from the table; letters; help and no --version here. */
  ck_assert_ptr_nonnull(strstr(h, "  -c, --count N         how many (1..1024, default 8; "
                                  "$NQ_TEST_OPTS_COUNT too)\n"));
  ck_assert_ptr_nonnull(strstr(h, "  --level idle|low|normal\n                        a level "
                                  "(default low)\n"));
  ck_assert_ptr_nonnull(strstr(h, "  -h, --help            this text\n"));
  ck_assert_ptr_null(strstr(h, "--version"));
  for (char *l = h; *l;) { /* no line over 79 columns */
    size_t n = strcspn(l, "\n");
    ck_assert_msg(n <= 79, "long line: %.*s", (int)n, l);
    l += n + (l[n] != 0);
  }
  free(h);
  char *m = capture(nq_opts_man, &o);
  ck_assert_msg(!strncmp(m, ".TH \"DEMO\" 1", 12), "%s", m);
  ck_assert_ptr_nonnull(strstr(m, ".SH NAME\ndemo \\- the demo\n"));
  ck_assert_ptr_nonnull(strstr(m, ".B \\-c, \\-\\-count N\nhow many (1..1024, default 8;"));
  ck_assert_ptr_nonnull(strstr(m, ".SH ENVIRONMENT\n.TP\n.B NQ_TEST_OPTS_COUNT\n"));
  ck_assert_ptr_null(strstr(m, "secret"));
  free(m);
  /* --help through the parser: printed, and NQ_OPTS_DONE. */
  char err[300];
  fflush(stdout);
  ck_assert_int_eq(demo_parse(&o, &d, err, sizeof err, "--help", (char *)NULL), NQ_OPTS_DONE);
}
END_TEST

/* ---- the table's own check ---------------------------------------------------------------- */

START_TEST(self_check) {
  demo_t d;
  nq_opts_t o;
  char err[300];
  demo_init(&o, &d);
  ck_assert_int_eq(nq_opts_check(&o, err, sizeof err), 0);
  static const nq_opt_t dup_name[] = {
      {NQ_OPT_FLAG, "a", .help = "x"}, {NQ_OPT_FLAG, "a", .help = "y"}, {NQ_OPT_END}};
  static const nq_opt_t dup_letter[] = {
      {NQ_OPT_FLAG, "a", 'x', .help = "x"}, {NQ_OPT_FLAG, "b", 'x', .help = "y"}, {NQ_OPT_END}};
  static const nq_opt_t bad_def[] = {
      {NQ_OPT_INT, "a", .off = offsetof(demo_t, count), .lo = 1, .hi = 5, .def = "6",
       .help = "x"},
      {NQ_OPT_END}};
  static const nq_opt_t builtin[] = {{NQ_OPT_FLAG, "help", .help = "x"}, {NQ_OPT_END}};
  static const nq_opt_t letter_h[] = {{NQ_OPT_FLAG, "hat", 'h', .help = "x"}, {NQ_OPT_END}};
  static const nq_opt_t no_help[] = {{NQ_OPT_FLAG, "a", .help = NULL}, {NQ_OPT_END}};
  static const struct {
    const nq_opt_t *t;
    const char *want;
  } bad[] = {{dup_name, "--a is declared twice"},
             {dup_letter, "-x is declared twice (--a, --b)"},
             {bad_def, "a default is refused: --a: expected an integer 1..5, got '6'"},
             {builtin, "built in"},
             {letter_h, "built in"},
             {no_help, "no help"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    o.group[0] = (nq_opt_group_t){bad[i].t, &d};
    ck_assert_int_eq(nq_opts_check(&o, err, sizeof err), NQ_EINVAL);
    ck_assert_msg(strstr(err, bad[i].want) != NULL, "%zu: %s", i, err);
    /* The parser refuses to run a broken table. */
    char *argv[] = {"demo", NULL};
    ck_assert_int_eq(nq_opts_parse(&o, 1, argv, err, sizeof err), NQ_EINVAL);
  }
  /* Across groups too: the same name in two tables. */
  o.group[0] = (nq_opt_group_t){demo_table, &d};
  o.group[1] = (nq_opt_group_t){demo_table, &d};
  ck_assert_int_eq(nq_opts_check(&o, err, sizeof err), NQ_EINVAL);
}
END_TEST

/* ---- the programs' tables ----------------------------------------------------------------- */

START_TEST(server_table) {
  nq_opts_t o;
  srv_config_t cfg;
  nq_jobopts_t job;
  char err[400];
  srv_config_default(&cfg);
  srv_opts_init(&o, &cfg, &job);
  ck_assert_msg(nq_opts_check(&o, err, sizeof err) == 0, "%s", err);
  /* The scheduler's defaults, once: the server's embedded config is the scheduler's own. */
  srv_sched_config_t sc;
  srv_sched_config_default(&sc);
  ck_assert(memcmp(&sc, &cfg.sched, sizeof sc) == 0);
  ck_assert_int_eq(sc.lease_seconds, 3600);
  ck_assert_int_eq(sc.quorum_distinct, SRV_DISTINCT_OWNER);
  ck_assert(sc.spot_check == 2.0);
  ck_assert_int_eq(cfg.job.quorum, 2);
  ck_assert_int_eq(cfg.listen_port, 7447);
  char *argv[] = {"nq-server", "--n", "10", "--quorum-distinct", "network", "--lease-seconds",
                  "120", "--spot-check", "0", "--hostname", "a", "--hostname", "b", "--listen",
                  "127.0.0.1:9", "--http", "off", NULL};
  ck_assert_msg(nq_opts_parse(&o, 17, argv, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(srv_opts_job(&cfg, &job, err, sizeof err), 0);
  ck_assert_int_eq(cfg.job.n, 10);
  ck_assert_int_eq(cfg.sched.quorum_distinct, SRV_DISTINCT_NETWORK);
  ck_assert_int_eq(cfg.sched.lease_seconds, 120);
  ck_assert(cfg.sched.spot_check == 0);
  ck_assert_str_eq(cfg.hostnames[1], "b");
  ck_assert_ptr_null(cfg.hostnames[2]);
  ck_assert_str_eq(cfg.listen_host, "127.0.0.1");
  ck_assert_int_eq(cfg.http_off, 1);
  /* Job options without --n. */
  srv_config_default(&cfg);
  srv_opts_init(&o, &cfg, &job);
  char *argv2[] = {"nq-server", "--quorum", "3", NULL};
  ck_assert_int_eq(nq_opts_parse(&o, 3, argv2, err, sizeof err), 0);
  ck_assert_int_ne(srv_opts_job(&cfg, &job, err, sizeof err), 0);
  ck_assert_ptr_nonnull(strstr(err, "go with --n"));
  char *argv3[] = {"nq-server", "--spot-check", "101", NULL};
  ck_assert_int_ne(nq_opts_parse(&o, 3, argv3, err, sizeof err), 0);
  ck_assert_str_eq(err, "--spot-check: expected a number 0..100, got '101'");
}
END_TEST

START_TEST(client_tables) {
  nq_opts_t o;
  cli_config_t cfg;
  cli_args_t args;
  char err[400];
  cli_config_default(&cfg);
  cli_opts_init(&o, &cfg, &args);
  ck_assert_msg(nq_opts_check(&o, err, sizeof err) == 0, "%s", err);
  char *argv[] = {"nq-client", "--server", "localhost:7447", "--threads", "3", "--priority",
                  "low", "--pause-between", "22:00-07:00", "--max-units", "4", NULL};
  ck_assert_msg(nq_opts_parse(&o, 11, argv, err, sizeof err) == 0, "%s", err);
  ck_assert_str_eq(cfg.host, "localhost");
  ck_assert_int_eq(cfg.port, 7447);
  ck_assert_int_eq(cfg.threads, 3);
  ck_assert_int_eq(cfg.priority, NQ_PRIO_LOW);
  ck_assert_int_eq(cfg.pause_window, 1);
  ck_assert(args.max_units == 4);
  char *argv2[] = {"nq-client", "--threads", "1025", NULL};
  ck_assert_int_ne(nq_opts_parse(&o, 3, argv2, err, sizeof err), 0);
  ck_assert_str_eq(err, "--threads: expected an integer 0..1024, got '1025'");
  cli_status_args_t sa;
  cli_status_opts_init(&o, &sa, "/tmp/x");
  ck_assert_msg(nq_opts_check(&o, err, sizeof err) == 0, "%s", err);
  ck_assert_str_eq(sa.state, "/tmp/x");
}
END_TEST

START_TEST(job_table) {
  nq_opts_t o = {.prog = "job"};
  nq_jobopts_t job;
  char err[300];
  nq_jobopts_default(&job);
  o.group[0] = (nq_opt_group_t){nq_jobopts_table, &job};
  ck_assert_msg(nq_opts_check(&o, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq(job.quorum, 2);
  ck_assert_int_eq(job.max_results, 5);
  ck_assert_int_eq(job.diverse_kernels, -1);
}
END_TEST

/* Run a command line through the shell; its stdout and stderr in out, its exit status back. */
static int run(const char *cmd, char *out, size_t len) {
  char full[2048];
  snprintf(full, sizeof full, "%s 2>&1", cmd);
  FILE *p = popen(full, "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(out, 1, len - 1, p);
  out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Every program: its table passes the check nq_opts_parse runs first (--help exits 0 and lists
 * options), its man page comes from the table, and a bad number is a clear error. */
START_TEST(programs) {
  static const struct {
    const char *prog, *bad, *want;
  } p[] = {
      {"nq-server", "--max-conns 10x", "nq-server: --max-conns: expected an integer 1..1000000"},
      {"nq-client", "--cpu-limit 0", "nq-client: --cpu-limit: expected an integer 1..100"},
      {"nq-solve", "8 --threads -1", "nq-solve: --threads: expected an integer 0..256"},
      {"nq-verify", "f --threads 0", "nq-verify: --threads: expected an integer 1..1024"},
      {"nq-admin", "units --limit 0", "nq-admin units: --limit: expected an integer"},
      /* atoi took these as 1 and 0 before: now they are errors naming the option. */
      {"nq-loadgen", "--conns 1x", "nq-loadgen: --conns: expected an integer 1..100000, got '1x'"},
      {"nq-netem", "--drop-every soon", "nq-netem: --drop-every: expected an integer 0..86400"},
  };
  char cmd[1024], out[65536];
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
    snprintf(cmd, sizeof cmd, "'%s/%s' %s", tu_bin_dir(), p[i].prog,
             strcmp(p[i].prog, "nq-admin") ? "--help" : "units --help");
    ck_assert_msg(run(cmd, out, sizeof out) == 0, "%s: %s", cmd, out);
    ck_assert_msg(strstr(out, "usage: ") == out, "%s: %s", cmd, out);
    snprintf(cmd, sizeof cmd, "'%s/%s' --man", tu_bin_dir(), p[i].prog);
    ck_assert_msg(run(cmd, out, sizeof out) == 0, "%s: %s", cmd, out);
    ck_assert_msg(!strncmp(out, ".TH ", 4) && strstr(out, ".SH OPTIONS\n"), "%s: %s", cmd, out);
    snprintf(cmd, sizeof cmd, "'%s/%s' %s", tu_bin_dir(), p[i].prog, p[i].bad);
    ck_assert_msg(run(cmd, out, sizeof out) == 2, "%s: %s", cmd, out);
    ck_assert_msg(strstr(out, p[i].want) != NULL, "%s: %s", cmd, out);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("opts");
  TCase *tc = tcase_create("table");
  tcase_add_test(tc, types_and_defaults);
  tcase_add_test(tc, bad_values);
  tcase_add_test(tc, unknown_and_missing);
  tcase_add_test(tc, environment);
  tcase_add_test(tc, help_and_man);
  tcase_add_test(tc, self_check);
  suite_add_tcase(s, tc);
  TCase *tp = tcase_create("programs");
  tcase_add_test(tp, server_table);
  tcase_add_test(tp, client_tables);
  tcase_add_test(tp, job_table);
  tcase_add_test(tp, programs);
  tcase_set_timeout(tp, 60);
  suite_add_tcase(s, tp);
  return tu_run_suite(s);
}
