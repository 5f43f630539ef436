/* nq-admin: option parsing, the two backends (database / server) and small output helpers. */
#include <errno.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "nq/switches.h"
#include "nq/addr.h"
#include "nq/files.h"
#include "nq/nq.h"
#include "nq/opts.h"

/* ---- options -------------------------------------------------------------------------------- */

/* --seed: recorded as given (has_seed), since 0 is a seed too. */
static int set_seed(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  static const nq_opt_t seed = {NQ_OPT_INT64, "seed", .lo = 0, .hi = INT64_MAX};
  adm_opts_t *o = base;
  struct { int64_t s; } x;
  char why[200];
  if (nq_opt_set(&seed, &x, v, why, sizeof why) != 0)
    return nq_errorf(err, len, NQ_ERANGE, "expected an integer 0..2^63-1, got '%s'", v);
  o->seed = (uint64_t)x.s;
  o->has_seed = 1;
  return 0;
}

#define A_STR(nm, field, a, hlp)                                                                 \
  {NQ_OPT_STRING, nm, .off = offsetof(adm_opts_t, field), .arg = a, .flags = NQ_OPTF_EMPTY_OK,   \
   .help = hlp}
#define A_INT(nm, field, a, l, h, hlp)                                                           \
  {NQ_OPT_INT, nm, .off = offsetof(adm_opts_t, field), .arg = a, .lo = l, .hi = h, .help = hlp}
#define A_FLAG(nm, field, hlp) {NQ_OPT_FLAG, nm, .off = offsetof(adm_opts_t, field), .help = hlp}

/* Every command's options, declared once (nq/opts.h); a command reads those it needs. The
 * backend's come first: adm_usage lists them under every command. */
static const nq_opt_t adm_backend_table[] = {
    {NQ_OPT_SECTION, .help = "backend:"},
    A_STR("data", data, "DIR", "local mode: open DIR/nq.db (default " ADM_DEFAULT_DATA ")"),
    A_STR("server", server, "HOST:PORT", "remote mode, with --ca and a token"),
    A_STR("ca", ca, "CA.pem", "remote mode: the CA of the server's certificate"),
    A_STR("token", token, "T", "remote mode: the admin token (visible in ps: prefer a file)"),
    {NQ_OPT_STRING, "token-file", .off = offsetof(adm_opts_t, token_file), .arg = "F",
     .flags = NQ_OPTF_EMPTY_OK,
     .help = "remote mode: read the admin token from F (else $NQ_ADMIN_TOKEN, else "
             "DATA/admin.token)"},
    A_STR("hostname", hostname, "NAME", "remote mode: the name to verify in the certificate "
          "(default: HOST)"),
    A_FLAG("json", json, "machine-readable output (stable keys, docs/operations.md)"),
    {NQ_OPT_END}};

static const nq_opt_t adm_cmd_table[] = {
    {NQ_OPT_SECTION, .help = "command options:"},
    A_INT("n", n, "N", 1, 64, "local mode: the job for this N (default: the newest running job)"),
    {NQ_OPT_DOUBLE, "watch", .off = offsetof(adm_opts_t, watch), .arg = "S", .dlo = 0.1,
     .dhi = 86400, .help = "status: again every S seconds"},
    A_STR("state", state, "STATE", "units: only units in this state"),
    A_INT("limit", limit, "K", 1, INT_MAX, "units: at most K"),
    A_INT("extra", extra, "K", 1, NQ_PROTO_RETRY_EXTRA_MAX,
          "unit retry: K more results (default: the job's quorum)"),
    A_FLAG("force", force, "job archive/delete while clients hold leases"),
    A_FLAG("all", all, "job list: started, cancelled and failed entries too; owner requests: "
           "decided ones too"),
    A_FLAG("all-disputed", all_disputed, "unit retry: every disputed unit"),
    A_STR("client", client, "NAME", "unit retry: the client to give the unit to"),
    A_STR("out", out, "FILE", "export: the evidence file"),
    A_STR("quorum-distinct", distinct, "M", "export: client, owner or network"),
    A_STR("to", to, "FILE", "backup: the copy to write"),
    A_INT("sample", sample, "K", 1, 10000, "audit: units recomputed"),
    {NQ_OPT_INT64, "seed", .arg = "S", .set = set_seed,
     .help = "audit: the sample's seed (0..2^63-1)"},
    A_INT("threads", threads, "T", 1, 1024, "audit: solver threads (default: the online CPUs)"),
    {NQ_OPT_INT64, "at", .off = offsetof(adm_opts_t, at), .arg = "T", .lo = 1, .hi = INT64_MAX,
     .help = "export: the export time recorded, Unix seconds (default: now)"},
    A_STR("owner", owner, "NAME", "client add: the owner"),
    A_STR("bundle", bundle, "DIR", "owner add, owner rekey: write a volunteer's bundle to DIR"),
    A_STR("address", address, "HOST:PORT", "the server volunteers dial, for --bundle"),
    {NQ_OPT_END}};

static const nq_opt_t adm_job_heading[] = {
    {NQ_OPT_SECTION, .help = "job add (as nq-server's job options):"}, {NQ_OPT_END}};

static void cmd_help(const nq_opts_t *p, FILE *f) {
  adm_usage(p->data, f);
}

void adm_backend_help(FILE *f) {
  nq_opts_help_table(adm_backend_table, NULL, f);
}

/* nq-admin's command line for cmd into o: the backend's and the commands' options, and job
 * add's (nq/job_opts.h, without --n: N is an argument). */
static void adm_opts_init(nq_opts_t *p, const adm_cmd_t *cmd, adm_opts_t *o) {
  memset(p, 0, sizeof *p);
  p->prog = "nq-admin";
  p->help = cmd_help;
  p->data = cmd;
  p->group[0] = (nq_opt_group_t){adm_backend_table, o};
  p->group[1] = (nq_opt_group_t){adm_cmd_table, o};
  p->group[2] = (nq_opt_group_t){adm_job_heading, NULL};
  p->group[3] = (nq_opt_group_t){nq_jobopts_table + 1, &o->job};
}

void adm_usage(const adm_cmd_t *cmd, FILE *f) {
  fprintf(f, "usage: nq-admin %s %s\n%s\n", cmd->name, cmd->usage, cmd->help);
  if (!strcmp(cmd->name, "job")) { /* nq-server's job options, from their one table */
    fprintf(f, "job add (as nq-server's job options):\n");
    nq_opts_help_table(nq_jobopts_table + 1, NULL, f);
  }
  nq_opts_help_table(adm_backend_table, NULL, f);
}

void adm_man(const adm_cmd_t *cmds, size_t ncmds, FILE *f) {
  nq_opts_t p;
  adm_opts_t o;
  char usage[4096];
  size_t n = (size_t)snprintf(usage, sizeof usage, "nq-admin COMMAND [options]");
  for (size_t i = 0; i < ncmds && n < sizeof usage; i++)
    n += (size_t)snprintf(usage + n, sizeof usage - n, "\nnq-admin %s %s", cmds[i].name,
                          cmds[i].usage);
  memset(&o, 0, sizeof o);
  adm_opts_init(&p, NULL, &o);
  p.summary = "watch and steer an nq-server";
  p.usage = usage;
  p.about = "Every command works on the database directly (local mode, --data DIR) or on a "
            "running server over TLS with the admin token (remote mode, --server).";
  nq_opts_man(&p, f);
}

static int bad(const adm_cmd_t *cmd, const char *what, const char *arg) {
  fprintf(stderr, "nq-admin %s: %s%s%s\n", cmd->name, what, arg ? ": " : "", arg ? arg : "");
  adm_usage(cmd, stderr);
  return ADM_EXIT_USAGE;
}

int adm_parse(const adm_cmd_t *cmd, int argc, char **argv, adm_opts_t *o) {
  memset(o, 0, sizeof *o);
  nq_jobopts_default(&o->job);
  /* getopt wants argv[0] to be the program; hand it the command name in that slot. */
  char **av = calloc((size_t)argc + 2, sizeof *av);
  if (!av) return ADM_EXIT_FAIL;
  av[0] = (char *)cmd->name;
  for (int i = 0; i < argc; i++) av[i + 1] = argv[i];
  nq_opts_t p;
  char err[400];
  adm_opts_init(&p, cmd, o);
  int rc = nq_opts_parse(&p, argc + 1, av, err, sizeof err);
  if (rc == NQ_OPTS_DONE) {
    o->help = 1; /* --help: cmd_help printed the command's usage */
    rc = 0;
  } else if (rc != 0) {
    rc = bad(cmd, err, NULL);
  }
  for (int i = 0; rc == 0 && i < NQ_JOBOPT_COUNT - 1; i++)
    o->job_given |= nq_opts_given(&p, nq_jobopts_table[i + 1].name) > 0;
  if (rc == 0 && o->job_given && strcmp(cmd->name, "job") != 0)
    rc = bad(cmd, "a job option goes with `job add N`", NULL);
  /* getopt permuted av so the positional arguments come last. */
  for (int i = p.optind; rc == 0 && !o->help && i < argc + 1; i++) {
    if (o->argc == ADM_MAX_ARGS) rc = bad(cmd, "too many arguments", av[i]);
    else o->argv[o->argc++] = av[i];
  }
  free(av);
  return rc;
}

/* ---- backends ------------------------------------------------------------------------------- */

/* The token for remote mode: --token, --token-file, $NQ_ADMIN_TOKEN, or DATA/admin.token. */
static int load_token(adm_backend_t *b, const adm_opts_t *o) {
  const char *env = nq_switch_get(NQ_SW_ADMIN_TOKEN);
  char path[1100];
  const char *file = o->token_file;
  if (o->token) {
    snprintf(b->token, sizeof b->token, "%s", o->token);
    return 0;
  }
  if (!file && env && *env) {
    snprintf(b->token, sizeof b->token, "%s", env);
    return 0;
  }
  if (!file && o->data) {
    if (nq_path_join(path, sizeof path, o->data, "admin.token") != 0) {
      fprintf(stderr, "nq-admin: --data path too long\n");
      return ADM_EXIT_USAGE;
    }
    file = path;
  }
  if (!file) {
    fprintf(stderr, "nq-admin: remote mode needs the admin token: --token T, --token-file F or "
                    "$NQ_ADMIN_TOKEN\n");
    return ADM_EXIT_USAGE;
  }
  int rc = nq_file_read_line(file, b->token, sizeof b->token);
  if (rc != 0) {
    fprintf(stderr, "nq-admin: cannot read the admin token from %s: %s\n", file,
            rc == NQ_EINVAL     ? "empty file"
            : rc == NQ_ENOTFOUND ? "no such file"
            : rc == NQ_EIO       ? strerror(errno)
                                 : nq_strerror(rc));
    return ADM_EXIT_FAIL;
  }
  return 0;
}

static int open_remote(adm_backend_t *b, const adm_opts_t *o) {
  if (nq_hostport_parse(o->server, b->host, sizeof b->host, &b->port, 0) != 0) {
    fprintf(stderr, "nq-admin: --server wants HOST:PORT, not '%s'\n", o->server);
    return ADM_EXIT_USAGE;
  }
  snprintf(b->hostname, sizeof b->hostname, "%s", o->hostname ? o->hostname : b->host);
  if (o->ca) {
    snprintf(b->ca, sizeof b->ca, "%s", o->ca);
  } else if (o->data) {
    if (nq_path_join(b->ca, sizeof b->ca, o->data, "ca.pem") != 0) {
      fprintf(stderr, "nq-admin: --data path too long\n");
      return ADM_EXIT_USAGE;
    }
  } else {
    fprintf(stderr, "nq-admin: remote mode needs --ca CA.pem (the server's CA certificate)\n");
    return ADM_EXIT_USAGE;
  }
  struct stat sb;
  if (stat(b->ca, &sb) != 0) {
    fprintf(stderr, "nq-admin: cannot read the CA certificate %s: %s\n", b->ca, strerror(errno));
    return ADM_EXIT_FAIL;
  }
  snprintf(b->desc, sizeof b->desc, "server %s", o->server);
  b->remote = 1;
  return load_token(b, o);
}

static int open_local(adm_backend_t *b, const adm_opts_t *o, int need_job) {
  const char *dir = o->data ? o->data : ADM_DEFAULT_DATA;
  char path[1100], err[1400] = "";
  struct stat sb;
  if (nq_path_join(path, sizeof path, dir, "nq.db") != 0) {
    fprintf(stderr, "nq-admin: --data path too long\n");
    return ADM_EXIT_USAGE;
  }
  snprintf(b->desc, sizeof b->desc, "database %s", path);
  /* Never create a database here: opening a missing file would make an empty one. */
  if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fprintf(stderr,
            "nq-admin: no database at %s (%s); point --data at the server's data directory, "
            "or use --server HOST:PORT for a remote server\n",
            path, stat(path, &sb) != 0 ? strerror(errno) : "not a regular file");
    return ADM_EXIT_FAIL;
  }
  if (nq_admin_db_open(path, o->n, need_job, &b->db, err, sizeof err) != 0) {
    fprintf(stderr, "nq-admin: %s\n", err);
    return ADM_EXIT_FAIL;
  }
  return 0;
}

int adm_open(adm_backend_t *b, const adm_opts_t *o, int need_job) {
  memset(b, 0, sizeof *b);
  if (o->server) return open_remote(b, o);
  if (o->ca || o->token || o->token_file || o->hostname) {
    fprintf(stderr, "nq-admin: --ca/--token/--token-file/--hostname need --server HOST:PORT\n");
    return ADM_EXIT_USAGE;
  }
  return open_local(b, o, need_job);
}

void adm_close(adm_backend_t *b) {
  nq_admin_db_close(b->db);
  b->db = NULL;
  memset(b->token, 0, sizeof b->token);
}

/* ---- requests ------------------------------------------------------------------------------- */

int adm_call(const adm_opts_t *o, int need_job, const nq_admin_req_t *req, json_t **data) {
  adm_backend_t b;
  *data = NULL;
  int rc = adm_open(&b, o, need_job);
  if (rc) return rc;
  rc = adm_request(&b, req, data);
  adm_close(&b);
  return rc;
}

int adm_call_exclusive(const adm_opts_t *o, const nq_admin_req_t *req, json_t **data) {
  if (o->server) return adm_call(o, 0, req, data);
  const char *dir = o->data ? o->data : ADM_DEFAULT_DATA;
  char err[1200] = "";
  int fd = -1;
  int rc = nq_admin_db_lock(dir, &fd, err, sizeof err);
  if (rc) {
    fprintf(stderr, "nq-admin: %s%s\n", err,
            rc == NQ_EBUSY ? ": stop it first (or, for a job it does not serve, use --server)" : "");
    return ADM_EXIT_FAIL;
  }
  rc = adm_call(o, 0, req, data);
  close(fd);
  return rc;
}

int adm_request(adm_backend_t *b, const nq_admin_req_t *req, json_t **data) {
  char err[2100] = "";
  nq_proto_err_t refusal;
  int rc;
  *data = NULL;
  memset(&refusal, 0, sizeof refusal);
  if (b->remote) {
    rc = adm_remote_call(b, req, data, &refusal, err, sizeof err);
    if (rc != 0) {
      fprintf(stderr, "nq-admin: %s\n", err);
      return ADM_EXIT_FAIL;
    }
  } else {
    nq_admin_db_call(b->db, req, nq_now_wall(), data, &refusal);
  }
  if (!*data) {
    fprintf(stderr, "nq-admin: %s refused '%s': %s (%s)\n", b->desc, nq_admin_cmd_name(req->cmd),
            refusal.message, nq_errcode_name(refusal.code));
    return ADM_EXIT_FAIL;
  }
  return 0;
}

/* ---- output helpers ------------------------------------------------------------------------- */

void adm_print_json(const json_t *v, int compact) {
  char *s = json_dumps(v, JSON_PRESERVE_ORDER | (compact ? JSON_COMPACT : JSON_INDENT(2)));
  if (s) {
    fputs(s, stdout);
    fputc('\n', stdout);
    free(s);
  }
  fflush(stdout);
}

int adm_view(const nq_view_t *v, const json_t *data, void *out) {
  char err[400];
  int rc = nq_view_parse(v, data, out, err, sizeof err);
  if (rc == 0) return 0;
  fprintf(stderr, "nq-admin: a reply this nq-admin cannot read: %s\n", err);
  return ADM_EXIT_FAIL;
}

int adm_call_view(const adm_opts_t *o, int need_job, const nq_admin_req_t *req, json_t **data,
                  void *out) {
  int rc = adm_call(o, need_job, req, data);
  if (rc == 0 && (rc = adm_view(nq_admin_reply_view(req->cmd), *data, out)) != 0) {
    json_decref(*data);
    *data = NULL;
  }
  return rc;
}

char *adm_time(int64_t t, char *buf, size_t len) {
  struct tm tm;
  time_t tt = (time_t)t;
  if (t <= 0 || !gmtime_r(&tt, &tm)) snprintf(buf, len, "never");
  else strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

char *adm_duration(int64_t s, char *buf, size_t len) {
  if (s < 0) s = 0;
  if (s >= 86400)
    snprintf(buf, len, "%lldd%02lldh%02lldm", (long long)(s / 86400), (long long)(s % 86400 / 3600),
             (long long)(s % 3600 / 60));
  else if (s >= 3600)
    snprintf(buf, len, "%lldh%02lldm%02llds", (long long)(s / 3600), (long long)(s % 3600 / 60),
             (long long)(s % 60));
  else if (s >= 60)
    snprintf(buf, len, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  else
    snprintf(buf, len, "%llds", (long long)s);
  return buf;
}
