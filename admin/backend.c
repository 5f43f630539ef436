/* nq-admin: option parsing, the two backends (database / server) and small output helpers. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "nq/addr.h"
#include "nq/files.h"
#include "nq/nq.h"

/* ---- options -------------------------------------------------------------------------------- */

enum { OPT_SERVER = 1000, OPT_CA, OPT_TOKEN, OPT_TOKEN_FILE, OPT_HOSTNAME, OPT_DATA, OPT_N,
       OPT_JSON, OPT_WATCH, OPT_STATE, OPT_LIMIT, OPT_EXTRA, OPT_FORCE, OPT_ALL_DISPUTED,
       OPT_CLIENT, OPT_OUT, OPT_DISTINCT, OPT_TO, OPT_HELP, OPT_ALL, OPT_SAMPLE, OPT_SEED,
       OPT_THREADS, OPT_AT, OPT_OWNER, OPT_BUNDLE, OPT_ADDRESS };

static const struct option long_opts[] = {
    {"server", required_argument, NULL, OPT_SERVER},
    {"ca", required_argument, NULL, OPT_CA},
    {"token", required_argument, NULL, OPT_TOKEN},
    {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"hostname", required_argument, NULL, OPT_HOSTNAME},
    {"data", required_argument, NULL, OPT_DATA},
    {"n", required_argument, NULL, OPT_N},
    {"json", no_argument, NULL, OPT_JSON},
    {"watch", required_argument, NULL, OPT_WATCH},
    {"state", required_argument, NULL, OPT_STATE},
    {"limit", required_argument, NULL, OPT_LIMIT},
    {"extra", required_argument, NULL, OPT_EXTRA},
    {"force", no_argument, NULL, OPT_FORCE},
    {"all", no_argument, NULL, OPT_ALL},
    {"all-disputed", no_argument, NULL, OPT_ALL_DISPUTED},
    {"client", required_argument, NULL, OPT_CLIENT},
    {"out", required_argument, NULL, OPT_OUT},
    {"quorum-distinct", required_argument, NULL, OPT_DISTINCT},
    {"to", required_argument, NULL, OPT_TO},
    {"sample", required_argument, NULL, OPT_SAMPLE},
    {"seed", required_argument, NULL, OPT_SEED},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"at", required_argument, NULL, OPT_AT},
    {"help", no_argument, NULL, OPT_HELP},
    {"owner", required_argument, NULL, OPT_OWNER},
    {"bundle", required_argument, NULL, OPT_BUNDLE},
    {"address", required_argument, NULL, OPT_ADDRESS},
    {NULL, 0, NULL, 0}};

void adm_usage(const adm_cmd_t *cmd, FILE *f) {
  fprintf(f, "usage: nq-admin %s %s\n%s\n", cmd->name, cmd->usage, cmd->help);
  if (!strcmp(cmd->name, "job")) { /* nq-server's job options, from their one table */
    fprintf(f, "job add (as nq-server's job options):\n");
    nq_jobopts_usage(f, 0);
  }
  fprintf(f,
          "backend:\n"
          "  --data DIR             local mode: open DIR/nq.db (default %s)\n"
          "  --server HOST:PORT     remote mode, with --ca CA.pem and --token T | --token-file F\n"
          "                         (or $NQ_ADMIN_TOKEN); --hostname NAME to verify another name\n"
          "  --json                 machine-readable output (stable keys, docs/operations.md)\n",
          ADM_DEFAULT_DATA);
}

static int bad(const adm_cmd_t *cmd, const char *what, const char *arg) {
  fprintf(stderr, "nq-admin %s: %s%s%s\n", cmd->name, what, arg ? ": " : "", arg ? arg : "");
  adm_usage(cmd, stderr);
  return ADM_EXIT_USAGE;
}

static int parse_long(const char *s, long min, long max, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < min || v > max) return NQ_EINVAL;
  *out = v;
  return 0;
}

int adm_parse(const adm_cmd_t *cmd, int argc, char **argv, adm_opts_t *o) {
  memset(o, 0, sizeof *o);
  /* getopt wants argv[0] to be the program; hand it the command name in that slot. */
  char **av = calloc((size_t)argc + 2, sizeof *av);
  if (!av) return ADM_EXIT_FAIL;
  av[0] = (char *)cmd->name;
  for (int i = 0; i < argc; i++) av[i + 1] = argv[i];
  int ac = argc + 1, c, rc = 0;
  long v;
  /* job add's options come from their one table (nq/job_opts.h), shared with nq-server. */
  struct option opts[sizeof long_opts / sizeof long_opts[0] + NQ_JOBOPT_COUNT];
  int nopts = 0;
  char err[200];
  nq_jobopts_default(&o->job);
  nq_jobopts_getopt(opts, &nopts, 0);
  memcpy(opts + nopts, long_opts, sizeof long_opts);
  optind = 1;
  opterr = 0;
  while (rc == 0 && (c = getopt_long(ac, av, "h", opts, NULL)) != -1) {
    if (nq_jobopt_is(c)) {
      if (strcmp(cmd->name, "job") != 0)
        rc = bad(cmd, "a job option goes with `job add N`", av[optind - 1]);
      else if (nq_jobopt_set(&o->job, c, optarg, err, sizeof err) != 0)
        rc = bad(cmd, err, NULL);
      else
        o->job_given = 1;
      continue;
    }
    switch (c) {
    case OPT_SERVER: o->server = optarg; break;
    case OPT_CA: o->ca = optarg; break;
    case OPT_TOKEN: o->token = optarg; break;
    case OPT_TOKEN_FILE: o->token_file = optarg; break;
    case OPT_HOSTNAME: o->hostname = optarg; break;
    case OPT_DATA: o->data = optarg; break;
    case OPT_JSON: o->json = 1; break;
    case OPT_FORCE: o->force = 1; break;
    case OPT_ALL: o->all = 1; break;
    case OPT_ALL_DISPUTED: o->all_disputed = 1; break;
    case OPT_CLIENT: o->client = optarg; break;
    case OPT_TO: o->to = optarg; break;
    case OPT_STATE: o->state = optarg; break;
    case OPT_OUT: o->out = optarg; break;
    case OPT_DISTINCT: o->distinct = optarg; break;
    case OPT_OWNER: o->owner = optarg; break;
    case OPT_BUNDLE: o->bundle = optarg; break;
    case OPT_ADDRESS: o->address = optarg; break;
    case 'h':
    case OPT_HELP: o->help = 1; break;
    case OPT_N:
      if (parse_long(optarg, 1, 64, &v)) rc = bad(cmd, "--n wants an integer 1..64", optarg);
      else o->n = (int)v;
      break;
    case OPT_LIMIT:
      if (parse_long(optarg, 1, INT_MAX, &v)) rc = bad(cmd, "--limit wants a positive integer", optarg);
      else o->limit = (int)v;
      break;
    case OPT_EXTRA:
      if (parse_long(optarg, 1, NQ_PROTO_RETRY_EXTRA_MAX, &v))
        rc = bad(cmd, "--extra wants an integer 1..1000", optarg);
      else o->extra = (int)v;
      break;
    case OPT_SAMPLE:
      if (parse_long(optarg, 1, 10000, &v)) rc = bad(cmd, "--sample wants an integer 1..10000", optarg);
      else o->sample = (int)v;
      break;
    case OPT_THREADS:
      if (parse_long(optarg, 1, 1024, &v)) rc = bad(cmd, "--threads wants an integer 1..1024", optarg);
      else o->threads = (int)v;
      break;
    case OPT_AT:
      if (parse_long(optarg, 1, LONG_MAX, &v)) rc = bad(cmd, "--at wants Unix seconds", optarg);
      else o->at = (int64_t)v;
      break;
    case OPT_SEED: {
      char *end;
      errno = 0;
      unsigned long long sd = strtoull(optarg, &end, 10);
      if (end == optarg || *end || errno || optarg[0] == '-' || sd > INT64_MAX)
        rc = bad(cmd, "--seed wants an integer 0..2^63-1", optarg);
      else o->seed = sd, o->has_seed = 1;
      break;
    }
    case OPT_WATCH: {
      char *end;
      o->watch = strtod(optarg, &end);
      if (end == optarg || *end || !(o->watch >= 0.1 && o->watch <= 86400))
        rc = bad(cmd, "--watch wants seconds (0.1..86400)", optarg);
      break;
    }
    case ':': rc = bad(cmd, "option needs a value", av[optind - 1]); break;
    default: rc = bad(cmd, "unknown option", av[optind - 1]); break;
    }
  }
  /* getopt permuted av so the positional arguments come last. */
  for (int i = optind; rc == 0 && i < ac; i++) {
    if (o->argc == ADM_MAX_ARGS) rc = bad(cmd, "too many arguments", av[i]);
    else o->argv[o->argc++] = av[i];
  }
  free(av);
  return rc;
}

/* ---- backends ------------------------------------------------------------------------------- */

/* The token for remote mode: --token, --token-file, $NQ_ADMIN_TOKEN, or DATA/admin.token. */
static int load_token(adm_backend_t *b, const adm_opts_t *o) {
  const char *env = getenv("NQ_ADMIN_TOKEN");
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

/* Walk "a.b.c" through nested objects. */
const json_t *adm_get(const json_t *o, const char *path) {
  char key[64];
  while (o && *path) {
    size_t l = strcspn(path, ".");
    if (l >= sizeof key) return NULL;
    memcpy(key, path, l);
    key[l] = '\0';
    o = json_object_get(o, key);
    path += l + (path[l] == '.');
  }
  return o;
}

int64_t adm_int(const json_t *o, const char *path) {
  const json_t *v = adm_get(o, path);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

double adm_real(const json_t *o, const char *path) {
  const json_t *v = adm_get(o, path);
  return json_is_number(v) ? json_number_value(v) : 0.0;
}

const char *adm_str(const json_t *o, const char *path) {
  const json_t *v = adm_get(o, path);
  return json_is_string(v) ? json_string_value(v) : "";
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
