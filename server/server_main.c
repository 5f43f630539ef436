/* nq-server: command line, start-up banner, the loop. See docs/server.md. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/job_opts.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/plan.h"
#include "nq/unit.h"
#include "srv.h"
#include "store_kernels.h"
#include "web.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: nq-server [--n N] [options]\n"
          "Coordinate the distributed count of the N-Queens solutions for board size N.\n"
          "Without --n it serves the job the data directory runs, else the next queued one\n"
          "(nq-admin job add); when a job is done the next queued job starts\n"
          "(docs/operations.md, \"The job queue\").\n"
          "\n"
          "The job:\n");
  nq_jobopts_usage(f, 1);
  fprintf(f,
          "The server:\n"
          "  --quorum-distinct M   what makes two results independent: client, owner or\n"
          "                        network (their /24 or /64) (default owner; every client\n"
          "                        enrolled with the server's own key has the owner `default`:\n"
          "                        give volunteers their own keys, nq-admin owner add)\n"
          "  --spot-check P        percent of verified units re-issued to yet another owner;\n"
          "                        a disagreement re-opens the unit (0..100, default 2)\n"
          "  --hold-factor K       a lease never runs past issue + K x max(lease-seconds, the\n"
          "                        unit's estimated time); progress that does not advance\n"
          "                        never extends it (1..1000, default 8)\n"
          "  --max-results M       results without a quorum before a unit is disputed (default 5)\n"
          "  --listen ADDR:PORT    listen address (default 0.0.0.0:7447; [::]:PORT for IPv6)\n"
          "  --data DIR            data directory (default ./nq-data)\n"
          "  --lease-seconds S     longest lease: from issue while a client's speed is unknown,\n"
          "                        and from each progress (default 3600)\n"
          "  --lease-min S         shortest lease from issue; leases are sized from the client's\n"
          "                        recent solve times, queue included (default 60)\n"
          "  --max-outstanding K   assignments one client may hold (default 16)\n"
          "  --max-conns C         concurrent connections; more are answered `busy` (default 1024)\n"
          "  --retry-after S       how long a client is told to wait when the server is full\n"
          "                        (`busy`) or has no work for it (default 30)\n"
          "  --idle-timeout S      close connections silent this long, 0 = never (default 300)\n"
          "  --hello-timeout S     TLS handshake + hello must finish within S s (default 10)\n"
          "  --max-preauth-per-addr N\n"
          "                        connections not yet logged in per address (IPv4, IPv6 /64);\n"
          "                        more are dropped at once, 0 = no limit (default 16)\n"
          "  --max-preauth N       connections not yet logged in, in all; past N, or when the\n"
          "                        server is full, the oldest is closed to admit a new one\n"
          "                        (default --max-conns / 2)\n"
          "  --enrol-per-addr N    enrolments per address: N at once, N more per hour,\n"
          "                        0 = no limit (default 20)\n"
          "  --max-clients N       enrolled clients at most, 0 = no cap (default 100000)\n"
          "  --keep-default-enrol  keep enrolment with the server's own enrol.key (owner\n"
          "                        `default`) open once owners exist (nq-admin owner add);\n"
          "                        without it such an enrolment is refused `enrol_closed`\n"
          "  --auth-fail-limit N   failed logins per address and minute before each further\n"
          "                        refusal is delayed, 0 = never (default 20)\n"
          "  --auth-fail-delay S   delay of such a refusal (default 5)\n"
          "  --log-summary S       interval of the refusal summaries in the log (default 10)\n"
          "  --hostname NAME       extra name/IP in the server certificate (repeatable)\n"
          "  --ban-threshold T     auto-ban after T invalid results, 0 = never (default 3)\n"
          "  --exit-when-done      exit 0 shortly after the job is finished and none is queued\n"
          "  --backup-dir DIR      take scheduled online backups of the database into DIR,\n"
          "                        each checked before it counts (docs/operations.md)\n"
          "  --backup-every S      seconds between backups (default 3600)\n"
          "  --backup-keep K       good backups kept, the oldest removed (default 24)\n"
          "  --outage-max S        after a stop or crash, leases live at that moment are\n"
          "                        extended by the downtime, at most S seconds (default 604800,\n"
          "                        0 = never): clients that come back keep their units\n"
          "  --http ADDR:PORT      the public status page, /metrics and /api/* (default\n"
          "                        127.0.0.1:7448; `off` for none; see docs/http.md)\n"
          "  --http-max-conns K    concurrent HTTP connections; more get 503 (default 64)\n"
          "  --http-max-per-addr K HTTP connections per address (IPv4, IPv6 /64); more get\n"
          "                        429, 0 = no limit (default 8)\n"
          "  --http-timeout S      an HTTP request must arrive whole within S seconds (default\n"
          "                        10); a connection idle 3*S seconds is closed\n"
          "  --page-url URL        the public page's address that clients are told (default:\n"
          "                        http://ADDR:PORT/ of --http unless it is a wildcard)\n"
          "  --help                this text\n"
          "  --version             the software and protocol versions\n"
          "Environment: NQ_LOG_LEVEL=error|warn|info|debug.\n");
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
  enum { O_RETRY = 200 }; /* a separate enum, so that options added below merge cleanly */
  enum { O_LISTEN = 256, O_DATA, O_LEASE,
         O_LEASEMIN, O_MAXOUT, O_MAXCONN, O_IDLE, O_HOST, O_BAN, O_EXIT, O_DISTINCT, O_SPOT,
         O_HOLD, O_HTTP, O_HTTPMAX, O_HTTPADDR, O_HTTPTIME, O_PAGEURL, O_HELP, O_HELLO,
         O_PREAUTH, O_PREAUTHALL, O_ENROL, O_MAXCLI,
         O_AFLIMIT, O_AFDELAY, O_SUMMARY, O_VERSION, O_BKDIR, O_BKEVERY, O_BKKEEP, O_OUTMAX,
         O_KEEPENROL };
  static const struct option own[] = {
      {"listen", required_argument, 0, O_LISTEN},
      {"data", required_argument, 0, O_DATA},
      {"lease-seconds", required_argument, 0, O_LEASE},
      {"lease-min", required_argument, 0, O_LEASEMIN},
      {"max-outstanding", required_argument, 0, O_MAXOUT},
      {"max-conns", required_argument, 0, O_MAXCONN},
      {"retry-after", required_argument, 0, O_RETRY},
      {"idle-timeout", required_argument, 0, O_IDLE},
      {"hostname", required_argument, 0, O_HOST},
      {"ban-threshold", required_argument, 0, O_BAN},
      {"exit-when-done", no_argument, 0, O_EXIT},
      {"quorum-distinct", required_argument, 0, O_DISTINCT},
      {"spot-check", required_argument, 0, O_SPOT},
      {"hold-factor", required_argument, 0, O_HOLD},
      {"http", required_argument, 0, O_HTTP},
      {"http-max-conns", required_argument, 0, O_HTTPMAX},
      {"http-max-per-addr", required_argument, 0, O_HTTPADDR},
      {"http-timeout", required_argument, 0, O_HTTPTIME},
      {"page-url", required_argument, 0, O_PAGEURL},
      {"hello-timeout", required_argument, 0, O_HELLO},
      {"max-preauth-per-addr", required_argument, 0, O_PREAUTH},
      {"max-preauth", required_argument, 0, O_PREAUTHALL},
      {"enrol-per-addr", required_argument, 0, O_ENROL},
      {"max-clients", required_argument, 0, O_MAXCLI},
      {"auth-fail-limit", required_argument, 0, O_AFLIMIT},
      {"auth-fail-delay", required_argument, 0, O_AFDELAY},
      {"log-summary", required_argument, 0, O_SUMMARY},
      {"backup-dir", required_argument, 0, O_BKDIR},
      {"backup-every", required_argument, 0, O_BKEVERY},
      {"backup-keep", required_argument, 0, O_BKKEEP},
      {"outage-max", required_argument, 0, O_OUTMAX},
      {"keep-default-enrol", no_argument, 0, O_KEEPENROL},
      {"help", no_argument, 0, O_HELP},
      {"version", no_argument, 0, O_VERSION},
      {0, 0, 0, 0}};
  /* The job's options come from their one table (nq/job_opts.h), shared with nq-admin job add. */
  struct option opts[sizeof own / sizeof own[0] + NQ_JOBOPT_COUNT];
  int nopts = 0, nhost = 0, c;
  nq_jobopts_t job;
  nq_jobopts_default(&job);
  nq_jobopts_getopt(opts, &nopts, 1);
  memcpy(opts + nopts, own, sizeof own);
  char err[200];
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (nq_jobopt_is(c)) {
      if (nq_jobopt_set(&job, c, optarg, err, sizeof err) != 0) {
        fprintf(stderr, "nq-server: %s\n", err);
        exit(2);
      }
      continue;
    }
    switch (c) {
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
    case O_RETRY: cfg->retry_after = int_arg("retry-after", optarg, 1, NQ_RETRY_AFTER_MAX); break;
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
    case O_DISTINCT:
      if ((cfg->quorum_distinct = srv_distinct_parse(optarg)) < 0) {
        fprintf(stderr, "nq-server: --quorum-distinct: expected client, owner or network, got "
                "'%s'\n", optarg);
        exit(2);
      }
      break;
    case O_SPOT: {
      char *end;
      cfg->spot_check = strtod(optarg, &end);
      if (!*optarg || *end || !(cfg->spot_check >= 0 && cfg->spot_check <= 100)) {
        fprintf(stderr, "nq-server: --spot-check: expected a percentage 0..100, got '%s'\n",
                optarg);
        exit(2);
      }
      break;
    }
    case O_HOLD: cfg->hold_factor = int_arg("hold-factor", optarg, 1, 1000); break;
    case O_HTTP:
      cfg->http_off = !strcmp(optarg, "off");
      cfg->http_required = !cfg->http_off;
      if (!cfg->http_off && srv_http_cfg_set_listen(&cfg->http, optarg) != 0) {
        fprintf(stderr, "nq-server: --http: expected ADDR:PORT or off, got '%s'\n", optarg);
        exit(2);
      }
      break;
    case O_HTTPMAX: cfg->http.max_conns = int_arg("http-max-conns", optarg, 1, 100000); break;
    case O_HTTPADDR:
      cfg->http.max_per_addr = int_arg("http-max-per-addr", optarg, 0, 100000);
      break;
    case O_PAGEURL: {
      size_t n = strlen(optarg), i;
      for (i = 0; i < n && optarg[i] >= 0x20 && optarg[i] <= 0x7e; i++) {
      }
      if (n < 1 || n > NQ_PROTO_PAGE_MAX || i < n) {
        fprintf(stderr, "nq-server: --page-url: expected 1..%d printable ASCII characters\n",
                NQ_PROTO_PAGE_MAX);
        exit(2);
      }
      cfg->page_url = optarg;
      break;
    }
    case O_HTTPTIME:
      cfg->http.request_ms = 1000 * int_arg("http-timeout", optarg, 1, 3600);
      cfg->http.idle_ms = 3 * cfg->http.request_ms;
      break;
    case O_HELLO: cfg->hello_timeout = int_arg("hello-timeout", optarg, 1, 3600); break;
    case O_PREAUTH:
      cfg->max_preauth_per_addr = int_arg("max-preauth-per-addr", optarg, 0, 1000000);
      break;
    case O_PREAUTHALL: cfg->max_preauth = int_arg("max-preauth", optarg, 1, 1000000); break;
    case O_ENROL: cfg->enrol_per_addr = int_arg("enrol-per-addr", optarg, 0, 1000000); break;
    case O_MAXCLI: cfg->max_clients = int_arg("max-clients", optarg, 0, 1000000000); break;
    case O_AFLIMIT: cfg->auth_fail_limit = int_arg("auth-fail-limit", optarg, 0, 1000000); break;
    case O_AFDELAY: cfg->auth_fail_delay = int_arg("auth-fail-delay", optarg, 1, 600); break;
    case O_SUMMARY: cfg->summary_seconds = int_arg("log-summary", optarg, 1, 3600); break;
    case O_BKDIR:
      if (!*optarg) {
        fprintf(stderr, "nq-server: --backup-dir: expected a directory\n");
        exit(2);
      }
      cfg->backup_dir = optarg;
      break;
    case O_BKEVERY: cfg->backup_every = int_arg("backup-every", optarg, 1, 30 * 86400); break;
    case O_BKKEEP: cfg->backup_keep = int_arg("backup-keep", optarg, 1, 100000); break;
    case O_OUTMAX: cfg->outage_max = int_arg("outage-max", optarg, 0, 365 * 86400); break;
    case O_KEEPENROL: cfg->keep_default_enrol = 1; break;
    case O_HELP: usage(stdout); exit(0);
    case O_VERSION: nq_print_version("nq-server"); exit(0);
    default: usage(stderr); exit(2);
    }
  }
  if (optind < argc) {
    fprintf(stderr, "nq-server: unexpected argument '%s'\n", argv[optind]);
    exit(2);
  }
  /* Without --n the data directory says which job to serve (srv_init); the other job options
   * then describe nothing and are refused rather than ignored. */
  if (job.n == 0) {
    nq_jobopts_t none;
    nq_jobopts_default(&none);
    if (memcmp(&job, &none, sizeof job) != 0) {
      fprintf(stderr, "nq-server: the job options (--depth, --unit-seconds, --max-depth, "
              "--quorum, --max-results, --diverse-kernels) go with --n; to queue a job: nq-admin job add N ...\n");
      exit(2);
    }
  } else if (nq_jobopts_check(&job, err, sizeof err) != 0) {
    fprintf(stderr, "nq-server: %s\n", err);
    exit(2);
  }
  cfg->n = job.n;
  cfg->depth = job.depth;
  cfg->unit_seconds = job.unit_seconds;
  cfg->max_depth = job.max_depth;
  cfg->quorum = job.quorum;
  cfg->max_results = job.max_results;
  cfg->diverse_kernels = job.diverse_kernels;
}

int main(int argc, char **argv) {
  srv_config_t cfg;
  srv_config_default(&cfg);
  cfg.handle_signals = 1;
  cfg.http_off = 0;
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
    /* Settings that cannot make a job (a depth out of range, units that could overflow 64-bit
     * counts, another job for N) are the operator's to change: usage-like, status 2. */
    return rc == NQ_ERANGE || rc == NQ_EOVERFLOW || rc == NQ_EEXIST ? 2 : rc == NQ_EBUSY ? 3 : 1;
  }
  const srv_job_t *j = &s->sched.job;
  char depth[32];
  if (j->min_depth && j->min_depth != j->depth)
    snprintf(depth, sizeof depth, "%d-%d", j->min_depth, j->depth);
  else
    snprintf(depth, sizeof depth, "%d", j->depth);
  printf("nq-server %s listening on %s\n", NQ_VERSION_STRING, s->bound);
  if (srv_web_bound(s)) printf("status page: http://%s/\n", srv_web_bound(s));
  printf("job: N=%d depth=%s units=%lld", j->n, depth, (long long)j->units);
  if (j->unit_seconds > 0) printf(" unit-seconds=%g", j->unit_seconds);
  if (j->est_nodes > 0) printf(" est-nodes=%.4g", j->est_nodes);
  int kernels = 0;
  srv_job_kernels_get(s->store, j->id, &kernels);
  printf(" quorum=%d max-results=%d state=%s diverse-kernels=%d\n", j->quorum, j->max_results,
         s->job_done ? "done" : "running", kernels);
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
