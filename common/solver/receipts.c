/* nq: a volunteer's receipts and their check against the evidence file (nq/receipts.h). */
#include "nq/receipts.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "nq/evidence.h"
#include "nq/hash.h"
#include "nq/merkle.h"
#include "nq/nq.h"

int nq_receipt_format(const nq_receipt_t *r, char *out, size_t len) {
  char hex[65];
  nq_hex_encode(r->leaf, sizeof r->leaf, hex);
  int n = snprintf(out, len, "%lld %lld %s %s\n", (long long)r->job, (long long)r->id, r->unit, hex);
  return n > 0 && (size_t)n < len ? n : NQ_EINVAL;
}

/* A decimal number of 1..18 digits (no sign, no leading zero but "0") ending at a space. */
static int parse_num(const char **p, const char *end, int64_t *out) {
  const char *s = *p;
  int64_t v = 0;
  int d = 0;
  while (s < end && *s >= '0' && *s <= '9') {
    if (++d > 18) return NQ_EINVAL; /* before the digit is added: 19 digits overflow int64_t */
    v = v * 10 + (*s++ - '0');
  }
  if (d == 0 || (d > 1 && **p == '0') || s == end || *s != ' ') return NQ_EINVAL;
  *out = v;
  *p = s + 1;
  return 0;
}

int nq_receipt_parse(const char *line, size_t len, nq_receipt_t *out) {
  const char *p = line, *end = line + len;
  memset(out, 0, sizeof *out);
  if (parse_num(&p, end, &out->job) || parse_num(&p, end, &out->id) || out->id < 1)
    return NQ_EINVAL;
  size_t n = 0;
  while (p + n < end && p[n] != ' ') {
    char c = p[n];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == ':' || c == ','))
      return NQ_EINVAL;
    if (++n >= NQ_UNIT_TEXT_MAX) return NQ_EINVAL;
  }
  if (n == 0 || p + n == end) return NQ_EINVAL;
  memcpy(out->unit, p, n);
  out->unit[n] = '\0';
  p += n + 1;
  char hex[65];
  if (end - p != 64) return NQ_EINVAL;
  memcpy(hex, p, 64);
  hex[64] = '\0';
  return nq_hex_decode(hex, sizeof out->leaf, out->leaf) == 0 ? 0 : NQ_EINVAL;
}

/* ---- the check ------------------------------------------------------------------------------ */

typedef struct kept_s {
  nq_receipt_t r;
  int found;
} kept_t;

typedef struct rcheck_s {
  kept_t *k;
  size_t n;
  nq_receipts_report_t *rep;
  FILE *out;
  int max_named;
  char *err;
  size_t errlen;
  const char *unit;     /* the unit being read */
} rcheck_t;

static int by_id(const void *a, const void *b) {
  const kept_t *x = a, *y = b;
  return x->r.id < y->r.id ? -1 : x->r.id > y->r.id;
}

/* The first problem goes to err, each (up to max_named of a kind) to out. */
static void problem(rcheck_t *c, uint64_t nth, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (c->err[0] == '\0') snprintf(c->err, c->errlen, "%s", msg);
  if (c->out && nth <= (uint64_t)c->max_named) fprintf(c->out, "%s\n", msg);
}

/* Load the receipts of job from path, sorted by id. */
static int load(rcheck_t *c, const char *path, int64_t job) {
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(c->err, c->errlen, "cannot open %s: %s", path, strerror(errno));
    return NQ_EIO;
  }
  char line[NQ_RECEIPT_LINE_MAX + 2];
  size_t cap = 0;
  int rc = 0;
  while (fgets(line, sizeof line, f)) {
    size_t len = strlen(line);
    if (len == 0 || line[len - 1] != '\n') { /* too long or cut: skip the rest of it */
      int ch;
      while (len == sizeof line - 1 && (ch = getc(f)) != EOF && ch != '\n') {}
      c->rep->bad_lines++;
      continue;
    }
    nq_receipt_t r;
    if (nq_receipt_parse(line, len - 1, &r) != 0) {
      c->rep->bad_lines++;
      continue;
    }
    if (r.job != job) {
      c->rep->other_jobs++;
      continue;
    }
    if (c->n == NQ_RECEIPTS_MAX) {
      snprintf(c->err, c->errlen, "%s: more than %d receipts of job %lld", path, NQ_RECEIPTS_MAX,
               (long long)job);
      rc = NQ_ETOOBIG;
      break;
    }
    if (c->n == cap) {
      size_t nc = cap ? 2 * cap : 256;
      kept_t *k = realloc(c->k, nc * sizeof *k);
      if (!k) {
        rc = NQ_ENOMEM;
        snprintf(c->err, c->errlen, "out of memory");
        break;
      }
      c->k = k;
      cap = nc;
    }
    c->k[c->n++] = (kept_t){r, 0};
  }
  if (rc == 0 && ferror(f)) {
    snprintf(c->err, c->errlen, "reading %s: %s", path, strerror(errno));
    rc = NQ_EIO;
  }
  fclose(f);
  if (rc == 0 && c->n) qsort(c->k, c->n, sizeof *c->k, by_id);
  c->rep->kept = c->n;
  return rc;
}

static int on_leaf(const nq_ev_result_t *r, const unsigned char leaf[32], void *arg) {
  rcheck_t *c = arg;
  kept_t key = {.r.id = r->id};
  kept_t *k = c->n ? bsearch(&key, c->k, c->n, sizeof *c->k, by_id) : NULL;
  if (!k || k->found) return 0;
  k->found = 1;
  c->rep->found++;
  char a[65], b[65];
  if (strcmp(k->r.unit, c->unit)) {
    c->rep->unit_differs++;
    problem(c, c->rep->unit_differs, "receipt of result %lld: the file lists it under unit %s, "
            "the receipt under %s", (long long)r->id, c->unit, k->r.unit);
  } else if (memcmp(k->r.leaf, leaf, 32)) {
    c->rep->changed++;
    nq_hex_encode(leaf, 32, a);
    nq_hex_encode(k->r.leaf, 32, b);
    problem(c, c->rep->changed, "receipt of result %lld: CHANGED: the file's leaf is %s, the "
            "receipt's %s (the result was changed after the server acknowledged it)",
            (long long)r->id, a, b);
  } else {
    c->rep->valid += !strcmp(r->state, "valid") && !r->voided;
  }
  return 0;
}

/* Read the evidence: the header's job (then the receipts), each unit's leaves, the totals' root,
 * the checksum. */
static int read_evidence(rcheck_t *c, FILE *ev, const char *path, const char *pin, int *failed) {
  nq_ev_reader_t *rd = NULL;
  nq_ev_line_t *ln = malloc(sizeof *ln);
  nq_merkle_t *m = malloc(sizeof *m);
  const char *line;
  size_t len;
  uint64_t lineno = 0;
  char why[512];
  int rc = ln && m ? nq_ev_reader_begin(ev, &rd) : NQ_ENOMEM, have_header = 0, have_totals = 0;
  int64_t job = 0;
  if (m) nq_merkle_init(m);
  while (rc == 0 && (rc = nq_ev_reader_next(rd, &line, &len, &lineno)) == 1) {
    rc = 0;
    if (nq_ev_parse_line(line, len, ln, why, sizeof why) != 0) {
      snprintf(c->err, c->errlen, "evidence line %llu: %s", (unsigned long long)lineno, why);
      rc = NQ_EINVAL;
    } else if (ln->type == NQ_EV_HEADER) {
      if (have_header) {
        snprintf(c->err, c->errlen, "evidence line %llu: a second header", (unsigned long long)lineno);
        rc = NQ_EINVAL;
      } else {
        have_header = 1;
        job = c->rep->job = ln->header.job;
        rc = load(c, path, job);
      }
    } else if (!have_header) {
      snprintf(c->err, c->errlen, "evidence line 1 is not the header");
      rc = NQ_EINVAL;
    } else if (ln->type == NQ_EV_UNIT) {
      c->unit = ln->unit.text;
      rc = nq_ev_unit_leaves(job, &ln->unit, m, on_leaf, c);
    } else if (ln->type == NQ_EV_TOTALS) {
      unsigned char root[32];
      have_totals = 1;
      if ((rc = nq_merkle_root(m, root)) != 0) break;
      nq_hex_encode(root, sizeof root, c->rep->root);
      c->rep->leaves = m->leaves;
      char file_root[65] = "";
      if (ln->totals.has_root) nq_hex_encode(ln->totals.root, 32, file_root);
      c->rep->root_ok = ln->totals.has_root && !strcmp(file_root, c->rep->root) &&
                        ln->totals.leaves == m->leaves && (!pin || !strcmp(pin, c->rep->root));
      if (!ln->totals.has_root)
        problem(c, 1, "the file carries no root: it was written before evidence format 3");
      else if (strcmp(file_root, c->rep->root) || ln->totals.leaves != m->leaves)
        problem(c, 1, "ROOT MISMATCH: the file's root is %s, but its %llu results hash to %s: a "
                "result was changed, added or removed after the root was taken", file_root,
                (unsigned long long)m->leaves, c->rep->root);
      else if (pin && strcmp(pin, c->rep->root))
        problem(c, 1, "ROOT MISMATCH: the file's root is %s, not the published root %s",
                c->rep->root, pin);
    } else if (ln->type == NQ_EV_SHA256) {
      unsigned char md[32];
      if ((rc = nq_ev_reader_digest(rd, md)) != 0) break;
      if (memcmp(md, ln->sha256, 32))
        problem(c, 1, "checksum mismatch: the file was changed after it was written");
    }
  }
  if (rc == NQ_EINVAL && c->err[0] == '\0')
    snprintf(c->err, c->errlen, "evidence line %llu: cut short or holds a NUL",
             (unsigned long long)lineno);
  else if (rc < 0 && c->err[0] == '\0')
    snprintf(c->err, c->errlen, "reading the evidence: %s", nq_strerror(rc));
  if (rc == 0 && !have_totals) {
    snprintf(c->err, c->errlen, "the evidence has no totals line: truncated?");
    rc = NQ_EINVAL;
  }
  *failed = c->err[0] != '\0';
  nq_ev_reader_free(rd);
  free(ln);
  free(m);
  return rc;
}

int nq_receipts_check(FILE *ev, const char *receipts_path, const char *pin_root, FILE *out,
                      int max_named, nq_receipts_report_t *rep, char *err, size_t errlen) {
  rcheck_t c = {.rep = rep, .out = out, .max_named = max_named, .err = err, .errlen = errlen};
  int failed = 0;
  memset(rep, 0, sizeof *rep);
  err[0] = '\0';
  int rc = read_evidence(&c, ev, receipts_path, pin_root, &failed);
  if (rc == 0) {
    for (size_t i = 0; i < c.n; i++) {
      if (c.k[i].found) continue;
      rep->missing++;
      problem(&c, rep->missing, "receipt of result %lld (unit %s): MISSING: the file has no "
              "such result", (long long)c.k[i].r.id, c.k[i].r.unit);
    }
    failed = err[0] != '\0';
  }
  free(c.k);
  if (rc) return rc < 0 ? rc : NQ_EIO;
  return failed ? 1 : 0;
}
