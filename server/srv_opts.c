/* nq-server: its options, declared once (srv_opts.h). */
#include "srv_opts.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "nq/nq.h"
#include "nq/proto.h"

static int set_listen(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  if (srv_config_set_listen(base, v) != 0)
    return nq_errorf(err, len, NQ_EINVAL, "expected ADDR:PORT, got '%s'", v);
  return 0;
}

static int set_hostname(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  srv_config_t *cfg = base;
  int n = 0;
  while (cfg->hostnames[n]) n++;
  if (n == SRV_MAX_HOSTNAMES)
    return nq_errorf(err, len, NQ_ERANGE, "at most %d --hostname options", SRV_MAX_HOSTNAMES);
  if (!*v) return nq_errorf(err, len, NQ_EINVAL, "expected a name or address, got ''");
  cfg->hostnames[n] = v;
  return 0;
}

static int set_http(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  srv_config_t *cfg = base;
  int off = !strcmp(v, "off");
  if (!off && srv_http_cfg_set_listen(&cfg->http, v) != 0)
    return nq_errorf(err, len, NQ_EINVAL, "expected ADDR:PORT or off, got '%s'", v);
  cfg->http_off = off;
  cfg->http_required = !off;
  return 0;
}

static int set_http_timeout(void *base, const nq_opt_t *opt, const char *v, char *err,
                            size_t len) {
  static const nq_opt_t secs = {NQ_OPT_INT, "http-timeout", .lo = 1, .hi = 3600};
  srv_config_t *cfg = base;
  struct { int s; } x;
  char why[200];
  if (nq_opt_set(&secs, &x, v, why, sizeof why) != 0)
    return nq_errorf(err, len, NQ_ERANGE, "expected an integer 1..3600, got '%s'", v);
  cfg->http.request_ms = 1000 * x.s;
  cfg->http.idle_ms = 3 * cfg->http.request_ms;
  return 0;
}

static int set_page_url(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  size_t n = strlen(v), i;
  for (i = 0; i < n && v[i] >= 0x20 && v[i] <= 0x7e; i++) {
  }
  if (n < 1 || n > NQ_PROTO_PAGE_MAX || i < n)
    return nq_errorf(err, len, NQ_EINVAL, "expected 1..%d printable ASCII characters",
                     NQ_PROTO_PAGE_MAX);
  ((srv_config_t *)base)->page_url = v;
  return 0;
}

#define DAYS(d) ((d) * 86400LL)
#define S_INT(nm, field, a, l, h, d, hlp)                                                        \
  {NQ_OPT_INT, nm, .off = offsetof(srv_config_t, field), .arg = a, .lo = l, .hi = h, .def = d,   \
   .help = hlp}
#define S_FLAG(nm, field, hlp) {NQ_OPT_FLAG, nm, .off = offsetof(srv_config_t, field), .help = hlp}
#define S_CALL(nm, a, fn, flg, hlp) {NQ_OPT_STRING, nm, .arg = a, .set = fn, .flags = flg, .help = hlp}

const nq_opt_t srv_opts_table[] = {
    {NQ_OPT_SECTION, .help = "The server:"},
    {NQ_OPT_STRING, "listen", .arg = "ADDR:PORT", .set = set_listen, .def = "0.0.0.0:7447",
     .help = "listen address ([::]:PORT for IPv6)"},
    {NQ_OPT_STRING, "data", .off = offsetof(srv_config_t, data_dir), .arg = "DIR",
     .def = "./nq-data", .help = "data directory"},
    S_INT("max-conns", max_conns, "C", 1, 1000000, "1024",
          "concurrent connections; more are answered `busy`"),
    S_INT("idle-timeout", idle_timeout, "S", 0, DAYS(30), "300",
          "close connections silent this long, 0 = never"),
    S_INT("hello-timeout", hello_timeout, "S", 1, 3600, "10",
          "TLS handshake + hello must finish within S s"),
    S_INT("max-preauth-per-addr", max_preauth_per_addr, "N", 0, 1000000, "16",
          "connections not yet logged in per address (IPv4, IPv6 /64); more are dropped at "
          "once, 0 = no limit"),
    S_INT("max-preauth", max_preauth, "N", 1, 1000000, NULL,
          "connections not yet logged in, in all; past N, or when the server is full, the "
          "oldest is closed to admit a new one (default --max-conns / 2)"),
    S_INT("enrol-per-addr", enrol_per_addr, "N", 0, 1000000, "20",
          "enrolments per address: N at once, N more per hour, 0 = no limit"),
    S_INT("max-clients", max_clients, "N", 0, 1000000000, "100000",
          "enrolled clients at most, 0 = no cap"),
    S_FLAG("new-ca", new_ca,
           "make a new CA when ca.pem or ca.key is missing even though the database has "
           "enrolled clients (each then needs the new ca.pem); without it such a start is "
           "refused, naming the files to put back"),
    S_FLAG("keep-default-enrol", keep_default_enrol,
           "keep enrolment with the server's own enrol.key (owner `default`) open once owners "
           "exist (nq-admin owner add); without it such an enrolment is refused `enrol_closed`"),
    S_INT("auth-fail-limit", auth_fail_limit, "N", 0, 1000000, "20",
          "failed logins per address and minute before each further refusal is delayed, "
          "0 = never"),
    S_INT("auth-fail-delay", auth_fail_delay, "S", 1, 600, "5", "delay of such a refusal"),
    S_INT("log-summary", summary_seconds, "S", 1, 3600, "10",
          "interval of the refusal summaries in the log"),
    {NQ_OPT_STRING, "cert", .off = offsetof(srv_config_t, cert_file), .arg = "FILE",
     .help = "serve this PEM certificate chain (leaf first; e.g. an ACME client's "
             "fullchain.pem) instead of the private CA's; with --key. Re-read on SIGHUP and when "
             "the files change"},
    {NQ_OPT_STRING, "key", .off = offsetof(srv_config_t, key_file), .arg = "FILE",
     .help = "the private key of --cert (PEM)"},
    {NQ_OPT_ENUM, "signup", .off = offsetof(srv_config_t, signup), .arg = "MODE",
     .choices = "off|open|approve", .def = "off",
     .help = "volunteers joining by themselves (nq-client --join): off, open (at once) or "
             "approve (each waits for nq-admin owner approve); bounded by the --signup-* limits"},
    S_INT("signup-per-addr", signup_per_addr, "N", 1, 1000000, "3",
          "sign-ups admitted per address (IPv4, IPv6 /64) and hour"),
    S_INT("signup-per-net", signup_per_net, "N", 1, 1000000, "10",
          "sign-ups admitted per network (IPv4 /24, IPv6 /48) and hour"),
    S_INT("signup-per-day", signup_per_day, "N", 1, 10000000, "200",
          "sign-ups admitted per day in all"),
    S_INT("signup-pending", signup_pending, "N", 1, 1000000, "100",
          "sign-up requests waiting for the operator at most (--signup approve)"),
    S_INT("signup-poll", signup_poll, "S", 1, NQ_RETRY_AFTER_MAX, "60",
          "a waiting sign-up asks again after S seconds"),
    S_INT("cert-check", cert_check, "S", 1, 86400, "60",
          "seconds between looks at the certificate files for a change"),
    S_INT("cert-warn-days", cert_warn_days, "D", 1, 3650, "14",
          "a certificate that expires within D days is a warning (log, status, /metrics)"),
    S_CALL("hostname", "NAME", set_hostname, NQ_OPTF_REPEAT,
           "extra name/IP in the server certificate (repeatable)"),
    S_FLAG("export-names", export_names,
           "/api/export writes the clients' and owners' names (default: a pseudonym for each)"),
    S_FLAG("exit-when-done", exit_when_done,
           "exit 0 shortly after the job is finished and none is queued"),
    {NQ_OPT_STRING, "backup-dir", .off = offsetof(srv_config_t, backup_dir), .arg = "DIR",
     .help = "take scheduled online backups of the database into DIR, each checked before it "
             "counts (docs/operations.md)"},
    S_INT("backup-every", backup_every, "S", 1, DAYS(30), "3600", "seconds between backups"),
    S_INT("backup-keep", backup_keep, "K", 1, 100000, "24",
          "good backups kept, the oldest removed"),
    S_INT("outage-max", outage_max, "S", 0, DAYS(365), "604800",
          "after a stop or crash, leases live at that moment are extended by the downtime, at "
          "most S seconds (0 = never): clients that come back keep their units"),
    S_CALL("http", "ADDR:PORT", set_http, 0,
           "the public status page, /metrics and /api/* (default 127.0.0.1:7448; `off` for "
           "none; see docs/http.md)"),
    {NQ_OPT_INT, "http-max-conns", .off = offsetof(srv_config_t, http.max_conns), .arg = "K",
     .lo = 1, .hi = 100000, .flags = NQ_OPTF_SHOWDEF,
     .help = "concurrent HTTP connections; more get 503"},
    {NQ_OPT_INT, "http-max-per-addr", .off = offsetof(srv_config_t, http.max_per_addr),
     .arg = "K", .lo = 0, .hi = 100000, .flags = NQ_OPTF_SHOWDEF,
     .help = "HTTP connections per address (IPv4, IPv6 /64); more get 429, 0 = no limit"},
    S_CALL("http-timeout", "S", set_http_timeout, 0,
           "an HTTP request must arrive whole within S seconds (1..3600, default 10); a "
           "connection idle 3*S seconds is closed"),
    S_CALL("page-url", "URL", set_page_url, 0,
           "the public page's address that clients are told (default: http://ADDR:PORT/ of "
           "--http unless it is a wildcard)"),
    {NQ_OPT_END}};

static const nq_opt_t job_heading[] = {{NQ_OPT_SECTION, .help = "The job:"}, {NQ_OPT_END}};

/* A default the table refuses is a bug in the table: test_opts checks every one. */
static void table_defaults(const nq_opt_t *table, void *base) {
  char err[200];
  int rc = nq_opts_table_defaults(table, base, err, sizeof err);
  assert(rc == 0);
  (void)rc;
}

void srv_config_default(srv_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  nq_jobopts_default(&cfg->job);
  srv_sched_config_default(&cfg->sched);
  /* The program turns the page on (nq-server's default is 127.0.0.1:7448); a server embedded
   * in a test does not listen on a fixed port unless asked. */
  srv_http_cfg_default(&cfg->http);
  cfg->http_off = 1;
  cfg->sweep_ms = 5000;
  cfg->exit_grace_ms = 2000;
  table_defaults(srv_opts_table, cfg);
}

void srv_opts_init(nq_opts_t *o, srv_config_t *cfg, nq_jobopts_t *job) {
  memset(o, 0, sizeof *o);
  nq_jobopts_default(job);
  o->prog = "nq-server";
  o->summary = "coordinator of a distributed N-Queens count";
  o->usage = "nq-server [--n N] [options]";
  o->about = "Coordinate the distributed count of the N-Queens solutions for board size N.\n"
             "Without --n it serves the job the data directory runs, else the next queued one\n"
             "(nq-admin job add); when a job is done the next queued job starts\n"
             "(docs/operations.md, \"The job queue\").\n";
  o->epilog = "Environment: NQ_LOG_LEVEL=error|warn|info|debug.";
  o->version = nq_print_version;
  o->group[0] = (nq_opt_group_t){job_heading, NULL};
  o->group[1] = (nq_opt_group_t){nq_jobopts_table, job};
  o->group[2] = (nq_opt_group_t){srv_opts_table, cfg};
  o->group[3] = (nq_opt_group_t){srv_sched_opts_table, &cfg->sched};
}

int srv_opts_job(srv_config_t *cfg, const nq_jobopts_t *job, char *err, size_t errlen) {
  if (job->n == 0) {
    nq_jobopts_t none;
    nq_jobopts_default(&none);
    if (memcmp(job, &none, sizeof *job) != 0)
      return nq_errorf(err, errlen, NQ_EINVAL, "the job options (--depth, --unit-seconds, "
                       "--max-depth, --quorum, --max-results, --diverse-kernels) go with --n; "
                       "to queue a job: nq-admin job add N ...");
  } else {
    int rc = nq_jobopts_check(job, err, errlen);
    if (rc != 0) return rc;
  }
  cfg->job = *job;
  return 0;
}
