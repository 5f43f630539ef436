/* nq-admin backup --to FILE / restore FILE: backups of the data directory's database, and the
 * key files kept beside them, on the server's machine (local mode only; nq/backup.h does the
 * work, docs/operations.md the drill). */
#include <stdio.h>
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
  /* The keys go beside the backup (FILE's directory / keys), where restore looks for them. */
  char bdir[1100];
  const char *slash = strrchr(o->to, '/');
  snprintf(bdir, sizeof bdir, "%.*s", !slash ? 1 : slash == o->to ? 1 : (int)(slash - o->to),
           !slash ? "." : slash == o->to ? "/" : o->to);
  int written = 0;
  rc = nq_backup_keys_keep(dir, bdir, &written, err, sizeof err);
  if (rc) {
    fprintf(stderr, "nq-admin backup: the database is backed up, but keeping the keys beside it "
            "FAILED (%s): %s\n", nq_strerror(rc), err);
    return ADM_EXIT_FAIL;
  }
  if (o->json) {
    json_t *j = info_json(o->to, &info);
    json_object_set_new(j, "keys_written", json_integer(written));
    adm_print_json(j, 0);
    json_decref(j);
  } else {
    print_info("backup", o->to, &info);
    printf("took %.2f s; the key files are kept in %s/" NQ_BACKUP_KEYS_DIR " (%d written)\n",
           info.seconds, bdir, written);
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
  /* The database is not the whole fleet: the CA and the server's keys are files beside it, put
   * back from the copies kept with the backups; a server on a database with enrolled clients
   * refuses to start without the CA (nq-server --new-ca). */
  nq_backup_keys_t k;
  int krc = nq_backup_keys_restore(file, dir, &k, err, sizeof err);
  if (krc)
    fprintf(stderr, "nq-admin restore: the database is restored, but putting the keys back "
            "FAILED (%s): %s\n", nq_strerror(krc), err);
  int locked_out = k.ca_missing && info.clients > 0;
  if (k.missing[0])
    fprintf(stderr, "nq-admin restore: %s: %s lacks %s, and %s has no copy: copy them from the "
            "old data directory (or where you keep its keys) before starting nq-server%s\n",
            locked_out ? "ERROR" : "WARNING", dir, k.missing, k.kept,
            locked_out ? "; without ca.pem and ca.key it refuses this database, which has "
                         "enrolled clients (--new-ca makes a new CA, and every client then needs "
                         "the new ca.pem)"
                       : "");
  if (k.differs[0])
    fprintf(stderr, "nq-admin restore: WARNING: %s in %s differ from the copies kept in %s; "
            "they were left as they are\n", k.differs, dir, k.kept);
  if (!k.evkey[0])
    fprintf(stderr, "nq-admin restore: WARNING: the backup holds no evidence signing key: the "
            "server makes a new one, and evidence it signed before verifies only with the old "
            "key\n");
  if (o->json) {
    json_t *j = info_json(file, &info);
    json_object_set_new(j, "data", json_string(dir));
    json_object_set_new(j, "moved_aside", aside[0] ? json_string(aside) : json_null());
    json_object_set_new(j, "keys_kept_in", json_string(k.kept));
    json_object_set_new(j, "keys_copied", json_string(k.copied));
    json_object_set_new(j, "missing_keys", json_string(k.missing));
    json_object_set_new(j, "keys_differ", json_string(k.differs));
    json_object_set_new(j, "evidence_key", k.evkey[0] ? json_string(k.evkey) : json_null());
    adm_print_json(j, 0);
    json_decref(j);
  } else {
    print_info("restored", file, &info);
    printf("into %s/nq.db%s%s\n", dir, aside[0] ? "; the database it replaced is now " : "",
           aside);
    printf("keys: %s%s from %s%s%s; evidence signing key %s\n",
           k.copied[0] ? "put back " : "none to put back", k.copied, k.kept,
           k.missing[0] ? "; MISSING " : "", k.missing, k.evkey[0] ? k.evkey : "NONE");
  }
  return krc || locked_out ? ADM_EXIT_FAIL : 0;
}
