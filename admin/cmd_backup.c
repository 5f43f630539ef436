/* nq-admin backup --to FILE / restore FILE: backups of the data directory's database, on the
 * server's machine (local mode only; nq/backup.h does the work, docs/operations.md the drill). */
#include <stdio.h>
#include <sys/stat.h>
#include <string.h>

#include "admin.h"
#include "nq/backup.h"
#include "nq/files.h"
#include "nq/nq.h"

/* Both commands work on files of the server's machine: remote mode has nothing to offer. */
static int local_only(const adm_cmd_t *cmd, const adm_opts_t *o) {
  if (!o->server) return 0;
  fprintf(stderr, "nq-admin %s: runs on the server's machine, on its data directory (--data "
          "DIR), not over --server\n", cmd->name);
  return ADM_EXIT_USAGE;
}

static json_t *info_json(const char *file, const nq_backup_info_t *i) {
  return json_pack("{s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "file", file, "schema",
                   i->schema, "taken", (json_int_t)i->taken, "jobs", (json_int_t)i->jobs, "units",
                   (json_int_t)i->units, "assignments", (json_int_t)i->assignments, "results",
                   (json_int_t)i->results, "clients", (json_int_t)i->clients, "bytes",
                   (json_int_t)i->bytes, "seconds", i->seconds);
}

static void print_info(const char *what, const char *file, const nq_backup_info_t *i) {
  char t[64];
  printf("%s %s: checked good (schema %d, taken %s): %lld job(s), %lld units, %lld results, "
         "%lld clients, %lld bytes\n", what, file, i->schema, adm_time(i->taken, t, sizeof t),
         (long long)i->jobs, (long long)i->units, (long long)i->results, (long long)i->clients,
         (long long)i->bytes);
}

int adm_cmd_backup(const adm_cmd_t *cmd, adm_opts_t *o) {
  int rc = local_only(cmd, o);
  if (rc) return rc;
  if (!o->to || !o->to[0] || o->argc > 0) {
    fprintf(stderr, "nq-admin backup: %s\n", o->argc > 0 ? "unexpected argument" : "--to FILE is "
            "required");
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  const char *dir = o->data ? o->data : ADM_DEFAULT_DATA;
  char db[1100], err[1200] = "";
  if (nq_path_join(db, sizeof db, dir, "nq.db") != 0) {
    fprintf(stderr, "nq-admin backup: --data path too long\n");
    return ADM_EXIT_USAGE;
  }
  FILE *probe = fopen(db, "rb");
  if (!probe) {
    fprintf(stderr, "nq-admin backup: no database at %s\n", db);
    return ADM_EXIT_FAIL;
  }
  fclose(probe);
  nq_backup_info_t info;
  rc = nq_backup_take(db, o->to, nq_now_wall(), &info, err, sizeof err);
  if (rc) {
    fprintf(stderr, "nq-admin backup: FAILED (%s): %s\n", nq_strerror(rc), err);
    return ADM_EXIT_FAIL;
  }
  if (o->json) {
    json_t *j = info_json(o->to, &info);
    adm_print_json(j, 0);
    json_decref(j);
  } else {
    print_info("backup", o->to, &info);
    printf("took %.2f s\n", info.seconds);
  }
  return 0;
}

int adm_cmd_restore(const adm_cmd_t *cmd, adm_opts_t *o) {
  int rc = local_only(cmd, o);
  if (rc) return rc;
  if (o->argc != 1) {
    fprintf(stderr, "nq-admin restore: expected one backup FILE\n");
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  const char *file = o->argv[0], *dir = o->data ? o->data : ADM_DEFAULT_DATA;
  char aside[1200] = "", err[1200] = "";
  nq_backup_info_t info;
  rc = nq_backup_restore(file, dir, nq_now_wall(), &info, aside, sizeof aside, err, sizeof err);
  if (rc) {
    fprintf(stderr, "nq-admin restore: refused (%s): %s%s\n", nq_strerror(rc), err,
            rc == NQ_EBUSY                           ? ": stop the server first"
            : rc == NQ_ECORRUPT || rc == NQ_ESCHEMA ? "; nothing was changed"
                                                     : "");
    return ADM_EXIT_FAIL;
  }
  /* The database is not the whole fleet: the CA and the server's keys are files beside it, and
   * a server on a database with clients refuses to start without the CA (nq-server --new-ca). */
  static const char *const keys[] = {"ca.pem", "ca.key", "server.pem", "server.key", "enrol.key",
                                     "admin.token"};
  char missing[200] = "";
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    char p[1200];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, keys[i]);
    if (stat(p, &sb) != 0) {
      size_t l = strlen(missing);
      snprintf(missing + l, sizeof missing - l, "%s%s", l ? " " : "", keys[i]);
    }
  }
  if (missing[0])
    fprintf(stderr, "nq-admin restore: WARNING: %s lacks %s: copy them from the old data "
            "directory (or where you keep its keys) before starting nq-server; without ca.pem "
            "and ca.key it refuses a database with enrolled clients (--new-ca makes a new CA, "
            "and every client then needs the new ca.pem)\n", dir, missing);
  if (o->json) {
    json_t *j = info_json(file, &info);
    json_object_set_new(j, "data", json_string(dir));
    json_object_set_new(j, "moved_aside", aside[0] ? json_string(aside) : json_null());
    json_object_set_new(j, "missing_keys", json_string(missing));
    adm_print_json(j, 0);
    json_decref(j);
  } else {
    print_info("restored", file, &info);
    printf("into %s/nq.db%s%s\n", dir, aside[0] ? "; the database it replaced is now " : "",
           aside);
  }
  return 0;
}
