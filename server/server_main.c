/* nq-server: command line, start-up banner, the loop. See docs/server.md. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/log.h"
#include "nq/nq.h"
#include "nq/plan.h"
#include "nq/unit.h"
#include "srv.h"
#include "srv_opts.h"
#include "store_kernels.h"
#include "web.h"

/* The options are declared once, in srv_opts.c; exits 0 after --help, 2 on a bad one. */
static void parse_args(srv_config_t *cfg, int argc, char **argv) {
  nq_opts_t o;
  nq_jobopts_t job;
  char err[400];
  srv_opts_init(&o, cfg, &job);
  int rc = nq_opts_main(&o, argc, argv, 2);
  if (rc >= 0) exit(rc);
  if (o.optind < argc) {
    fprintf(stderr, "nq-server: unexpected argument '%s'\n", argv[o.optind]);
    exit(2);
  }
  if (srv_opts_job(cfg, &job, err, sizeof err) != 0) {
    fprintf(stderr, "nq-server: %s\n", err);
    exit(2);
  }
  if (!cfg->cert_file != !cfg->key_file) {
    fprintf(stderr, "nq-server: --cert and --key go together (a certificate chain and its "
            "private key)\n");
    exit(2);
  }
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
  if (cfg.cert_file)
    printf("certificate: %s (from --cert: clients verify it against their system's trust "
           "store, no --ca)\n", cfg.cert_file);
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
