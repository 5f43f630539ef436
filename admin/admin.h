/* nq-admin: the operator's command-line tool -- shared pieces of the command files.
 *
 * Every command talks to a backend: either the database directly (local mode, --data DIR, the
 * default ./nq-data) or a running server over TLS with the admin token (remote mode, --server).
 * Both answer the same `admin` requests (nq/proto.h) with the same JSON (the server library's admin
 * API builds it, nq/admin_db.h), so a command's code does not care which one it has.
 */
#ifndef ADM_ADMIN_H
#define ADM_ADMIN_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "nq/addr.h"
#include "nq/admin_db.h"
#include "nq/admin_view.h"
#include "nq/job_opts.h"
#include "nq/proto.h"

/* Exit statuses of nq-admin. */
enum { ADM_EXIT_OK = 0, ADM_EXIT_FAIL = 1, ADM_EXIT_USAGE = 2, ADM_EXIT_MISMATCH = 3 };

#define ADM_DEFAULT_DATA "./nq-data"
#define ADM_MAX_ARGS 8

/* Options every command understands (parsed by adm_parse). */
typedef struct adm_opts_s {
  const char *server;     /* HOST:PORT: remote mode */
  const char *ca;         /* CA certificate for remote mode */
  const char *token;      /* admin token (remote) */
  const char *token_file; /* file holding the admin token */
  const char *hostname;   /* name to verify in the server certificate (default: HOST) */
  const char *data;       /* data directory (local mode) */
  int n;                  /* local mode: the job for this N (0: the newest running job) */
  int json;               /* --json */
  double watch;           /* --watch S (0: once) */
  const char *state;      /* --state (units) */
  int limit;              /* --limit (units) */
  int extra;              /* --extra K (unit retry; 0: the job's quorum) */
  int force;              /* --force (job archive/delete while clients hold leases) */
  int all_disputed;       /* --all-disputed (unit retry) */
  const char *client;     /* --client NAME (unit retry) */
  const char *out;        /* --out FILE (export) */
  const char *distinct;   /* --quorum-distinct client|owner|network (export) */
  const char *to;         /* --to FILE (backup) */
  int all;                /* --all (job list: started, cancelled and failed entries too) */
  nq_jobopts_t job;       /* job add: the job's options (nq/job_opts.h); N is an argument */
  int job_given;          /* a job option was given */
  int sample;             /* --sample K (audit) */
  uint64_t seed;          /* --seed S (audit) */
  int has_seed;
  int threads;            /* --threads T (audit; 0: the online CPUs) */
  int64_t at;             /* --at T (export: the export time recorded; 0: now) */
  const char *owner;      /* --owner NAME (client add) */
  const char *bundle;     /* --bundle DIR (owner add, owner rekey) */
  const char *address;    /* --address HOST:PORT (the server volunteers dial, for --bundle) */
  int help;               /* --help */
  int argc;               /* positional arguments (they point into the process's argv) */
  char *argv[ADM_MAX_ARGS];
} adm_opts_t;

/* A command: the table entry in admin_main.c. */
typedef struct adm_cmd_s {
  const char *name;
  const char *usage;  /* one line: arguments and options */
  const char *help;   /* a few lines shown by --help */
  int (*handler)(const struct adm_cmd_s *cmd, adm_opts_t *o);
} adm_cmd_t;

/* Parse argv (after the command name) into o, from the option table in backend.c. Unknown
 * options and bad values print the reason and the command's usage to stderr; --help prints the
 * usage to stdout and sets o->help. Returns 0 or ADM_EXIT_USAGE. */
int adm_parse(const adm_cmd_t *cmd, int argc, char **argv, adm_opts_t *o);
/* Print "usage: nq-admin NAME USAGE" plus the help text and the common options. */
void adm_usage(const adm_cmd_t *cmd, FILE *f);
/* The backend options' --help lines (every command takes them). */
void adm_backend_help(FILE *f);
/* nq-admin's man page (nq-admin --man): the commands' usage lines and every option. */
void adm_man(const adm_cmd_t *cmds, size_t ncmds, FILE *f);

/* The backend of one command run. */
typedef struct adm_backend_s {
  int remote;
  /* local */
  nq_admin_db_t *db;
  /* remote */
  char host[NQ_HOST_MAX];
  int port;
  char hostname[NQ_HOST_MAX];
  char ca[1024];
  char token[256];
  char desc[1200]; /* "database ./nq-data/nq.db" or "server 10.0.0.1:7543", for messages */
} adm_backend_t;

/* Open the backend the options ask for. need_job: local mode must find a job (status, units).
 * On failure prints a one-line reason to stderr and returns ADM_EXIT_FAIL / ADM_EXIT_USAGE. */
int adm_open(adm_backend_t *b, const adm_opts_t *o, int need_job);
void adm_close(adm_backend_t *b);
/* One request on a backend opened for it and closed after: adm_open + adm_request + adm_close. */
int adm_call(const adm_opts_t *o, int need_job, const nq_admin_req_t *req, json_t **data);
/* The same in local mode with the data directory's lock held (no server may run on it); remote
 * mode as adm_call. */
int adm_call_exclusive(const adm_opts_t *o, const nq_admin_req_t *req, json_t **data);

/* Run one admin request and return its `data` object (new reference) in *data. On a refusal or
 * failure prints "nq-admin: ..." to stderr and returns non-zero (ADM_EXIT_FAIL). */
int adm_request(adm_backend_t *b, const nq_admin_req_t *req, json_t **data);

/* Remote mode: one TLS session (hello as admin, one request, bye). Returns 0 with either *data
 * (the admin_reply's data, new reference) or, when the server refused the request, *data NULL and
 * *refusal. On failure returns a negative NQ_E* code and a one-line reason in err: NQ_EIO (cannot
 * connect), NQ_ETLS (handshake / certificate), NQ_EAUTH (the server refused the token),
 * NQ_EPROTO (unexpected answer). */
int adm_remote_call(const adm_backend_t *b, const nq_admin_req_t *req, json_t **data,
                    nq_proto_err_t *refusal, char *err, size_t errlen);

/* Print a JSON value to stdout: indented (compact when compact is set), then a newline. */
void adm_print_json(const json_t *v, int compact);

/* Read a reply (`data`) as its typed view v (nq/admin_view.h) into out: 0 (release it with
 * nq_view_free; its strings live as long as data), or prints which field is missing or
 * mistyped ("nq-admin: a reply this nq-admin cannot read: status.job.n: is missing") and returns
 * ADM_EXIT_FAIL. Replies are read only this way, never by key. */
int adm_view(const nq_view_t *v, const json_t *data, void *out);
/* adm_call, then adm_view of its reply through the command's reply view (the row's,
 * nq_admin_reply_view): 0 with *data and *out (the struct of that view), or an exit status and
 * neither. */
int adm_call_view(const adm_opts_t *o, int need_job, const nq_admin_req_t *req, json_t **data,
                  void *out);
/* Format Unix time as "2026-11-23 08:17:03 UTC" ("never" for 0). Returns buf. */
char *adm_time(int64_t t, char *buf, size_t len);
/* Format seconds as "1h02m03s" etc. Returns buf. */
char *adm_duration(int64_t s, char *buf, size_t len);

/* Files that carry secrets instead of a command line (bundle.c). */
typedef struct adm_bundle_s {
  char dir[4096];
  char address[NQ_HOST_MAX + 8]; /* HOST:PORT as given */
  char host[NQ_HOST_MAX];
  int port;
  char ca_path[4096];
  char *ca; /* the CA certificate's text */
  size_t ca_len;
} adm_bundle_t;
/* Before the request that makes the secret: the address (--address, else --server), the CA
 * (remote: --ca; local: DATA/ca.pem), and the directory (made 0700, or an empty one). Local mode
 * warns when the server certificate does not name the address's host. Prints why and returns
 * ADM_EXIT_USAGE / ADM_EXIT_FAIL, or 0 (then adm_bundle_free). */
int adm_bundle_prepare(const adm_opts_t *o, adm_bundle_t *b);
/* Write DIR/enrol.key (0600), ca.pem, client.env (NQ_SERVER, NQ_SECRET=--enrol-file),
 * install.sh (0755: the package's setup) and README.txt, each create-new. 0 or an NQ_E* code. */
int adm_bundle_write(const adm_bundle_t *b, const char *owner, const char *key);
void adm_bundle_free(adm_bundle_t *b);
/* A secret file (the secret and a newline, mode 0600, never overwriting): adm_secret_check before
 * the request (prints why it cannot be written; ADM_EXIT_*), adm_secret_write after (NQ_E*). */
int adm_secret_check(const char *path);
int adm_secret_write(const char *path, const char *secret);

/* Command handlers (cmd_*.c). */
int adm_cmd_status(const adm_cmd_t *cmd, adm_opts_t *o);
int adm_cmd_clients(const adm_cmd_t *cmd, adm_opts_t *o);
int adm_cmd_client(const adm_cmd_t *cmd, adm_opts_t *o);
int adm_cmd_jobs(const adm_cmd_t *cmd, adm_opts_t *o);
int adm_cmd_units(const adm_cmd_t *cmd, adm_opts_t *o);
int adm_cmd_unit(const adm_cmd_t *cmd, adm_opts_t *o);
int adm_cmd_owners(const adm_cmd_t *cmd, adm_opts_t *o);
int adm_cmd_owner(const adm_cmd_t *cmd, adm_opts_t *o);
int adm_cmd_news(const adm_cmd_t *cmd, adm_opts_t *o);
int adm_cmd_team(const adm_cmd_t *cmd, adm_opts_t *o);
int adm_cmd_job(const adm_cmd_t *cmd, adm_opts_t *o);
int adm_cmd_export(const adm_cmd_t *cmd, adm_opts_t *o);
int adm_cmd_backup(const adm_cmd_t *cmd, adm_opts_t *o);
int adm_cmd_restore(const adm_cmd_t *cmd, adm_opts_t *o);
int adm_cmd_audit(const adm_cmd_t *cmd, adm_opts_t *o);

#endif
