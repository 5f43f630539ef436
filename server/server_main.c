/* nq-server: command line, start-up banner, the loop. See docs/server.md. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/log.h"
#include "nq/nq.h"
#include "nq/unit.h"
#include "srv.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: nq-server --n N [options]\n"
          "Coordinate the distributed count of the N-Queens solutions for board size N.\n"
          "\n"
          "  --n N                 board size (%d..%d), required\n"
          "  --depth D             prefix depth of the work units (default 3)\n"
          "  --quorum Q            agreeing results from distinct clients per unit (default 2)\n"
          "  --max-results M       results without a quorum before a unit is disputed (default 5)\n"
          "  --listen ADDR:PORT    listen address (default 0.0.0.0:7447; [::]:PORT for IPv6)\n"
          "  --data DIR            data directory (default ./nq-data)\n"
          "  --lease-seconds S     longest lease: from issue while a client's speed is unknown,\n"
          "                        and from each progress (default 3600)\n"
          "  --lease-min S         shortest lease from issue; leases are sized from the client's\n"
          "                        recent solve times, queue included (default 60)\n"
          "  --max-outstanding K   assignments one client may hold (default 16)\n"
          "  --max-conns C         concurrent connections; more are answered `busy` (default 1024)\n"
          "  --idle-timeout S      close connections silent this long, 0 = never (default 300)\n"
          "  --hostname NAME       extra name/IP in the server certificate (repeatable)\n"
          "  --ban-threshold T     auto-ban after T invalid results, 0 = never (default 3)\n"
          "  --exit-when-done      exit 0 shortly after the job is finished\n"
          "  --help                this text\n"
          "  --version             the software and protocol versions\n"
          "Environment: NQ_LOG_LEVEL=error|warn|info|debug.\n",
          NQ_UNIT_MIN_N, NQ_MAX_N);
}

/* Parse a decimal integer option within [min, max]; exits with status 2 on error. */
static int int_arg(const char *opt, const char *v, long min, long max) {
  char *end;
  long x = strtol(v, &end, 10);
  if (!*v || *end || x < min || x > max) {
    fprintf(stderr, "nq-server: --%s: expected an integer %ld..%ld, got '%s'\n", opt, min, max, v);
    exit(2);
  }
  return (int)x;
}

static void parse_args(srv_config_t *cfg, int argc, char **argv) {
  enum { O_N = 256, O_DEPTH, O_QUORUM, O_MAXRES, O_LISTEN, O_DATA, O_LEASE, O_LEASEMIN, O_MAXOUT,
         O_MAXCONN, O_IDLE, O_HOST, O_BAN, O_EXIT, O_HELP, O_VERSION };
  static const struct option opts[] = {
      {"n", required_argument, 0, O_N},
      {"depth", required_argument, 0, O_DEPTH},
      {"quorum", required_argument, 0, O_QUORUM},
      {"max-results", required_argument, 0, O_MAXRES},
      {"listen", required_argument, 0, O_LISTEN},
      {"data", required_argument, 0, O_DATA},
      {"lease-seconds", required_argument, 0, O_LEASE},
      {"lease-min", required_argument, 0, O_LEASEMIN},
      {"max-outstanding", required_argument, 0, O_MAXOUT},
      {"max-conns", required_argument, 0, O_MAXCONN},
      {"idle-timeout", required_argument, 0, O_IDLE},
      {"hostname", required_argument, 0, O_HOST},
      {"ban-threshold", required_argument, 0, O_BAN},
      {"exit-when-done", no_argument, 0, O_EXIT},
      {"help", no_argument, 0, O_HELP},
      {"version", no_argument, 0, O_VERSION},
      {0, 0, 0, 0}};
  int nhost = 0, c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case O_N: cfg->n = int_arg("n", optarg, NQ_UNIT_MIN_N, NQ_MAX_N); break;
    case O_DEPTH: cfg->depth = int_arg("depth", optarg, 2, NQ_MAX_N - 1); break;
    case O_QUORUM: cfg->quorum = int_arg("quorum", optarg, 1, 100); break;
    case O_MAXRES: cfg->max_results = int_arg("max-results", optarg, 1, 1000); break;
    case O_LISTEN:
      if (srv_config_set_listen(cfg, optarg) != 0) {
        fprintf(stderr, "nq-server: --listen: expected ADDR:PORT, got '%s'\n", optarg);
        exit(2);
      }
      break;
    case O_DATA: cfg->data_dir = optarg; break;
    case O_LEASE: cfg->lease_seconds = int_arg("lease-seconds", optarg, 1, 30 * 86400); break;
    case O_LEASEMIN: cfg->lease_min = int_arg("lease-min", optarg, 1, 30 * 86400); break;
    case O_MAXOUT: cfg->max_outstanding = int_arg("max-outstanding", optarg, 1, 256); break;
    case O_MAXCONN: cfg->max_conns = int_arg("max-conns", optarg, 1, 1000000); break;
    case O_IDLE: cfg->idle_timeout = int_arg("idle-timeout", optarg, 0, 30 * 86400); break;
    case O_HOST:
      if (nhost == SRV_MAX_HOSTNAMES) {
        fprintf(stderr, "nq-server: at most %d --hostname options\n", SRV_MAX_HOSTNAMES);
        exit(2);
      }
      cfg->hostnames[nhost++] = optarg;
      break;
    case O_BAN: cfg->ban_threshold = int_arg("ban-threshold", optarg, 0, 1000000); break;
    case O_EXIT: cfg->exit_when_done = 1; break;
    case O_HELP: usage(stdout); exit(0);
    case O_VERSION: nq_print_version("nq-server"); exit(0);
    default: usage(stderr); exit(2);
    }
  }
  if (optind < argc) {
    fprintf(stderr, "nq-server: unexpected argument '%s'\n", argv[optind]);
    exit(2);
  }
  if (cfg->n == 0) {
    fprintf(stderr, "nq-server: --n is required\n");
    usage(stderr);
    exit(2);
  }
  if (cfg->max_results < cfg->quorum) {
    fprintf(stderr, "nq-server: --max-results must be >= --quorum\n");
    exit(2);
  }
}

int main(int argc, char **argv) {
  srv_config_t cfg;
  srv_config_default(&cfg);
  cfg.handle_signals = 1;
  parse_args(&cfg, argc, argv);
  nq_log_init("nq-server", NQ_LOG_INFO);
  /* A peer resetting its connection must not kill us through a write (conn.h). */
  signal(SIGPIPE, SIG_IGN);

  uv_loop_t loop;
  if (uv_loop_init(&loop) != 0) {
    fprintf(stderr, "nq-server: cannot create the event loop\n");
    return 1;
  }
  srv_t *s = calloc(1, sizeof *s);
  char err[512] = "";
  int rc = s ? srv_init(s, &loop, &cfg, err, sizeof err) : NQ_ENOMEM;
  if (rc != 0) {
    fprintf(stderr, "nq-server: %s (%s)\n", err[0] ? err : "start failed", nq_strerror(rc));
    free(s);
    uv_loop_close(&loop);
    return 1;
  }
  const srv_job_t *j = &s->sched.job;
  printf("nq-server %s listening on %s\n", NQ_VERSION_STRING, s->bound);
  printf("job: N=%d depth=%d units=%lld quorum=%d max-results=%d state=%s\n", j->n, j->depth,
         (long long)j->units, j->quorum, j->max_results, s->job_done ? "done" : "running");
  printf("data: %s\nca: %s\nenrol key: %s\nadmin token: %s\n", s->dd.dir, s->dd.ca_cert,
         s->dd.enrol_key, s->dd.admin_token);
  fflush(stdout);

  uv_run(&loop, UV_RUN_DEFAULT);
  int code = s->exit_code;
  srv_free(s);
  free(s);
  rc = uv_loop_close(&loop);
  if (rc != 0) nq_log(NQ_LOG_WARN, "event loop closed with handles open: %s", uv_strerror(rc));
  nq_log(NQ_LOG_INFO, "stopped");
  return code;
}
