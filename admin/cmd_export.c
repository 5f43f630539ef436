/* nq-admin: export -- a finished job's evidence file (docs/evidence.md). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "nq/nq.h"

/* The file appears under its name only once it is whole: written to NAME.tmp.PID, flushed to
 * disk, then renamed over NAME; on any failure the temporary file is removed. */
static int export_to(adm_backend_t *b, const adm_opts_t *o, nq_ev_distinct_t distinct,
                     nq_admin_export_t *info) {
  char tmp[1100], err[2400] = "";
  int to_stdout = !strcmp(o->out, "-"), rc;
  FILE *f = stdout;
  if (!to_stdout) {
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", o->out, (long)getpid()) >= (int)sizeof tmp) {
      fprintf(stderr, "nq-admin export: --out path too long\n");
      return ADM_EXIT_USAGE;
    }
    if (!(f = fopen(tmp, "wbx"))) {
      fprintf(stderr, "nq-admin export: cannot create %s: %s\n", tmp, strerror(errno));
      return ADM_EXIT_FAIL;
    }
  }
  rc = nq_admin_db_export(b->db, distinct, o->names, o->at ? o->at : (int64_t)time(NULL), f, info, err,
                          sizeof err);
  if (!to_stdout) {
    int bad = rc == 0 && (fflush(f) != 0 || fsync(fileno(f)) != 0);
    bad |= fclose(f) != 0 && rc == 0;
    if (bad) {
      snprintf(err, sizeof err, "writing %s: %s", tmp, strerror(errno));
      rc = NQ_EIO;
    } else if (rc == 0 && rename(tmp, o->out) != 0) {
      snprintf(err, sizeof err, "renaming %s to %s: %s", tmp, o->out, strerror(errno));
      rc = NQ_EIO;
    }
  } else if (rc == 0 && fflush(f) != 0) {
    snprintf(err, sizeof err, "writing stdout: %s", strerror(errno));
    rc = NQ_EIO;
  }
  if (rc != 0) {
    if (!to_stdout) unlink(tmp);
    fprintf(stderr, "nq-admin export: %s\n", err);
    return ADM_EXIT_FAIL;
  }
  return ADM_EXIT_OK;
}

int adm_cmd_export(const adm_cmd_t *cmd, adm_opts_t *o) {
  if (o->argc > 0 || !o->out) {
    fprintf(stderr, "nq-admin export: %s%s\n",
            o->argc ? "unexpected argument " : "--out FILE is required", o->argc ? o->argv[0] : "");
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  int distinct = nq_ev_distinct_parse(o->distinct ? o->distinct : "owner");
  if (distinct < 0) {
    fprintf(stderr, "nq-admin export: --quorum-distinct wants client, owner or network, not '%s'\n",
            o->distinct);
    return ADM_EXIT_USAGE;
  }
  if (o->server) {
    fprintf(stderr, "nq-admin export: local mode only (--data DIR on the server's machine); "
                    "the export is not offered over the admin protocol yet\n");
    return ADM_EXIT_USAGE;
  }
  adm_backend_t b;
  int rc = adm_open(&b, o, 1);
  if (rc != 0) return rc;
  nq_admin_export_t info;
  rc = export_to(&b, o, (nq_ev_distinct_t)distinct, &info);
  adm_close(&b);
  if (rc != ADM_EXIT_OK) return rc;
  char t[48], u[48];
  /* With --out -, the file is stdout: the summary goes to stderr. */
  FILE *sum = strcmp(o->out, "-") ? stdout : stderr;
  if (o->json)
    fprintf(sum, "{\"n\":%d,\"units\":%llu,\"total\":\"%s\",\"unique\":\"%s\",\"file\":\"%s\","
            "\"root\":\"%s\",\"leaves\":%llu,\"names\":%s}\n",
            info.n, (unsigned long long)info.units, nq_u128_str(info.total, t),
            nq_u128_str(info.unique, u), o->out, info.root, (unsigned long long)info.leaves,
            o->names ? "true" : "false");
  else
    fprintf(sum, "exported N=%d: %llu units, TOTAL %s UNIQUE %s, root %s over %llu results%s -> "
            "%s\n", info.n, (unsigned long long)info.units, nq_u128_str(info.total, t),
            nq_u128_str(info.unique, u), info.root, (unsigned long long)info.leaves,
            o->names ? "" : " (names pseudonymised)", o->out);
  return ADM_EXIT_OK;
}
