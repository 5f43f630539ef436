/* nq-client: receipts kept in the state folder and checked against the evidence (receipts.h). */
#include "receipts.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nq/files.h"
#include "nq/hash.h"
#include "nq/nq.h"

/* The job of the file's last line (-1: empty or unreadable), and the file's size. */
static int64_t last_job(FILE *f, long *size) {
  char buf[NQ_RECEIPT_LINE_MAX + 1];
  if (fseek(f, 0, SEEK_END) != 0 || (*size = ftell(f)) <= 0) return -1;
  long from = *size > NQ_RECEIPT_LINE_MAX ? *size - NQ_RECEIPT_LINE_MAX : 0;
  if (fseek(f, from, SEEK_SET) != 0) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  if (n == 0 || buf[n - 1] != '\n') return -1;
  buf[n - 1] = '\0';
  char *line = strrchr(buf, '\n');
  nq_receipt_t r;
  line = line ? line + 1 : buf;
  return nq_receipt_parse(line, strlen(line), &r) == 0 ? r.job : -1;
}

/* A new job: keep only the lines of job `keep` (the one before; -1: none), in one atomic
 * replace. */
static int prune(const char *state, const char *path, int64_t keep) {
  char *all = NULL, *out = NULL;
  size_t len = 0, used = 0;
  int rc = nq_file_read(path, (size_t)CLI_RECEIPTS_MAX_BYTES + NQ_RECEIPT_LINE_MAX, &all, &len);
  if (rc) return rc;
  if (!(out = malloc(len + 1))) {
    free(all);
    return NQ_ENOMEM;
  }
  for (char *p = all, *nl; p < all + len && (nl = memchr(p, '\n', (size_t)(all + len - p)));
       p = nl + 1) {
    nq_receipt_t r;
    if (nq_receipt_parse(p, (size_t)(nl - p), &r) != 0 || r.job != keep) continue;
    memcpy(out + used, p, (size_t)(nl - p) + 1);
    used += (size_t)(nl - p) + 1;
  }
  rc = nq_file_replace_volatile(state, NQ_RECEIPTS_FILE, out, used, 0644);
  free(all);
  free(out);
  return rc;
}

int cli_receipt_keep(const char *state, const nq_ack_t *a) {
  return cli_receipt_keep_max(state, a, CLI_RECEIPTS_MAX_BYTES);
}

int cli_receipt_keep_max(const char *state, const nq_ack_t *a, long max_bytes) {
  if (!a->has_receipt || !state) return 0;
  nq_receipt_t r = {.job = a->job, .id = a->id};
  char line[NQ_RECEIPT_LINE_MAX], path[4096];
  if (snprintf(r.unit, sizeof r.unit, "%s", a->unit) >= (int)sizeof r.unit ||
      nq_hex_decode(a->leaf, sizeof r.leaf, r.leaf) != 0)
    return NQ_EINVAL;
  int n = nq_receipt_format(&r, line, sizeof line);
  if (n < 0 || nq_path_join(path, sizeof path, state, NQ_RECEIPTS_FILE) != 0) return NQ_EINVAL;
  FILE *f = fopen(path, "a+");
  if (!f) return NQ_EIO;
  long size = 0;
  int64_t last = last_job(f, &size);
  int rc = 0;
  /* A new job: the job before it stays, unless it fills the bound (then the new job's go in
   * its place: the running job's receipts matter more than a finished one's). */
  for (int pass = 0; last >= 0 && last != r.job && pass < 2; pass++) {
    if (pass == 1 && size + n <= max_bytes) break;
    fclose(f);
    if ((rc = prune(state, path, pass == 0 ? last : -1)) != 0) return rc;
    if (!(f = fopen(path, "a+"))) return NQ_EIO;
    last_job(f, &size);
  }
  if (size + n > max_bytes) rc = NQ_ETOOBIG;
  else if (fwrite(line, 1, (size_t)n, f) != (size_t)n) rc = NQ_EIO;
  if (fclose(f) != 0 && rc == 0) rc = NQ_EIO;
  return rc;
}

int cli_receipts_check(const char *state, const char *evidence, const char *root, int json,
                       FILE *out, FILE *err) {
  char path[4096], why[1024];
  if (nq_path_join(path, sizeof path, state, NQ_RECEIPTS_FILE) != 0) {
    fprintf(err, "nq-client status: --state path too long\n");
    return 3;
  }
  FILE *ev = fopen(evidence, "rb");
  if (!ev) {
    fprintf(err, "nq-client status: cannot open %s: %s\n", evidence, strerror(errno));
    return 3;
  }
  nq_receipts_report_t r;
  int rc = nq_receipts_check(ev, path, root, json ? NULL : err, 20, &r, why, sizeof why);
  fclose(ev);
  if (rc < 0) {
    fprintf(err, "nq-client status: %s\n", why);
    return 3;
  }
  if (rc == 0 && r.kept == 0) {
    snprintf(why, sizeof why, "no receipt of job %lld in %.900s", (long long)r.job, path);
    rc = 1;
  }
  if (json) {
    json_t *o = json_pack("{s:s, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:b}", "evidence",
                          evidence, "ok", rc == 0, "job", (json_int_t)r.job, "receipts",
                          (json_int_t)r.kept, "found", (json_int_t)r.found, "valid",
                          (json_int_t)r.valid, "missing", (json_int_t)r.missing, "changed",
                          (json_int_t)(r.changed + r.unit_differs), "root", r.root, "leaves",
                          (json_int_t)r.leaves, "root_ok", r.root_ok);
    if (o && rc) json_object_set_new(o, "error", json_string(why));
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (t) fprintf(out, "%s\n", t);
    free(t);
    json_decref(o);
    return rc;
  }
  fprintf(out, "receipts   %llu of job %lld: %llu in the file (%llu valid), %llu missing, %llu "
          "changed\n", (unsigned long long)r.kept, (long long)r.job, (unsigned long long)r.found,
          (unsigned long long)r.valid, (unsigned long long)r.missing,
          (unsigned long long)(r.changed + r.unit_differs));
  fprintf(out, "root       %s over %llu results%s\n", r.root, (unsigned long long)r.leaves,
          !r.root_ok ? ": WRONG" : root ? ": the file's, and the one given" : ": the file's "
          "(compare it with the root the server published, or give it with --root)");
  if (rc) fprintf(err, "nq-client status: FAILED: %s\n", why);
  else fprintf(out, "every receipt of this client is in the file under its root\n");
  return rc;
}
