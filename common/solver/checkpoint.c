/* nq: checkpoints -- subjects, the checkpoint record and its file (see checkpoint.h). */
#include "nq/checkpoint.h"

#include "nq/files.h"
#include "nq/hash.h"
#include "nq/json.h"
#include "nq/nq.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUM_LINE "sha256 "

/* ---- subjects ------------------------------------------------------------------------------ */

int nq_subject_unit(nq_subject_t *s, const nq_unit_t *u) {
  memset(s, 0, sizeof *s);
  int rc = nq_unit_validate(u, NULL, 0);
  if (rc) return rc;
  s->n = u->n;
  s->depth = u->depth;
  s->unit = *u;
  return 0;
}

int nq_subject_whole(nq_subject_t *s, int n, int depth) {
  memset(s, 0, sizeof *s);
  if (n < NQ_UNIT_MIN_N || n > NQ_MAX_N || depth < 2) return NQ_ERANGE;
  s->whole = 1;
  s->n = n;
  s->depth = nq_unit_effective_depth(n, depth);
  return 0;
}

int nq_subject_equal(const nq_subject_t *a, const nq_subject_t *b) {
  if (a->whole != b->whole || a->n != b->n || a->depth != b->depth) return 0;
  if (a->whole) return 1;
  return a->unit.part == b->unit.part && a->unit.bound1 == b->unit.bound1 &&
         memcmp(a->unit.prefix, b->unit.prefix, (size_t)a->depth) == 0;
}

char *nq_subject_str(const nq_subject_t *s, char *buf, size_t len) {
  if (s->whole) snprintf(buf, len, "N=%d (depth %d)", s->n, s->depth);
  else if (nq_unit_format(&s->unit, buf, len) < 0 && len) buf[0] = '\0';
  return buf;
}

/* ---- the record ---------------------------------------------------------------------------- */

static size_t bitmap_bytes(uint32_t ntasks) {
  return ((size_t)ntasks + 7) / 8;
}

int nq_ckpt_init(nq_ckpt_t *c, const nq_subject_t *s, int cut_depth, uint32_t ntasks,
                 const uint8_t hash[NQ_CKPT_HASH_LEN]) {
  memset(c, 0, sizeof *c);
  if (ntasks > NQ_CKPT_TASKS_MAX) return NQ_ERANGE;
  c->subject = *s;
  c->cut_depth = cut_depth;
  c->ntasks = ntasks;
  memcpy(c->cut_hash, hash, NQ_CKPT_HASH_LEN);
  c->done = calloc(bitmap_bytes(ntasks) ? bitmap_bytes(ntasks) : 1, 1);
  return c->done ? 0 : NQ_ENOMEM;
}

void nq_ckpt_free(nq_ckpt_t *c) {
  free(c->done);
  memset(c, 0, sizeof *c);
}

int nq_ckpt_task_done(const nq_ckpt_t *c, uint32_t i) {
  return i < c->ntasks && (c->done[i / 8] >> (i % 8) & 1);
}

double nq_ckpt_fraction(const nq_ckpt_t *c, uint64_t est_nodes) {
  if (c->ndone >= c->ntasks) return 1.0;
  double f = est_nodes > 0 ? (double)c->sum.nodes / (double)est_nodes
                           : (double)c->ndone / (double)c->ntasks;
  /* An estimate may be low: only a finished solve is done. */
  return f < 0 ? 0 : f > 0.999 ? 0.999 : f;
}

/* ---- the file ------------------------------------------------------------------------------ */

/* The first line: the record as one compact JSON object (keys in a fixed order). */
static char *body_encode(const nq_ckpt_t *c) {
  size_t nb = bitmap_bytes(c->ntasks);
  char hash[2 * NQ_CKPT_HASH_LEN + 1], subj[NQ_UNIT_TEXT_MAX];
  char *bits = malloc(2 * nb + 1);
  if (!bits) return NULL;
  nq_hex_encode(c->done, nb, bits);
  nq_hex_encode(c->cut_hash, NQ_CKPT_HASH_LEN, hash);
  json_t *o = json_object(), *cut = json_object(), *done = json_object();
  int ok = o && cut && done;
  if (ok) {
    ok &= json_object_set_new(o, "format", json_string(NQ_CKPT_FORMAT)) == 0;
    ok &= json_object_set_new(o, "solver", json_string(NQ_SOLVER_VERSION)) == 0;
    if (c->subject.whole) {
      ok &= json_object_set_new(o, "n", json_integer(c->subject.n)) == 0;
      ok &= json_object_set_new(o, "depth", json_integer(c->subject.depth)) == 0;
    } else {
      ok &= json_object_set_new(o, "unit", json_string(nq_subject_str(&c->subject, subj,
                                                                        sizeof subj))) == 0;
    }
    ok &= json_object_set_new(cut, "depth", json_integer(c->cut_depth)) == 0;
    ok &= json_object_set_new(cut, "tasks", json_integer(c->ntasks)) == 0;
    ok &= json_object_set_new(cut, "hash", json_string(hash)) == 0;
    ok &= json_object_set(o, "cut", cut) == 0;
    ok &= json_object_set_new(done, "tasks", json_integer(c->ndone)) == 0;
    ok &= nq_msg_set_u64(done, "c2", c->sum.c2) == 0;
    ok &= nq_msg_set_u64(done, "c4", c->sum.c4) == 0;
    ok &= nq_msg_set_u64(done, "c8", c->sum.c8) == 0;
    ok &= nq_msg_set_u64(done, "nodes", c->sum.nodes) == 0;
    ok &= json_object_set(o, "done", done) == 0;
    ok &= json_object_set_new(o, "seconds", json_real(c->seconds)) == 0;
    ok &= json_object_set_new(o, "finished", json_string(bits)) == 0;
  }
  char *s = ok ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(cut);
  json_decref(done);
  json_decref(o);
  free(bits);
  return s;
}

int nq_ckpt_encode(const nq_ckpt_t *c, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  char *body = body_encode(c);
  if (!body) return NQ_ENOMEM;
  size_t bl = strlen(body);
  unsigned char md[NQ_CKPT_HASH_LEN];
  int rc = nq_sha256(body, bl, md);
  char *buf = rc ? NULL : malloc(bl + 1 + strlen(SUM_LINE) + 2 * NQ_CKPT_HASH_LEN + 2);
  if (!rc && !buf) rc = NQ_ENOMEM;
  if (!rc) {
    char hex[2 * NQ_CKPT_HASH_LEN + 1];
    nq_hex_encode(md, sizeof md, hex);
    *len = (size_t)sprintf(buf, "%s\n" SUM_LINE "%s\n", body, hex);
    *out = buf;
  }
  free(body);
  return rc;
}

/* A refusal: the reason in err, NQ_EINVAL returned. */
#define refuse(err, errlen, ...) nq_errorf((err), (errlen), NQ_EINVAL, __VA_ARGS__)

/* The two lines: the body (returned, NUL-terminated copy) if the second line is the body's
 * checksum. */
static int split_checked(const char *buf, size_t len, char **body, char *err, size_t errlen) {
  *body = NULL;
  const char *nl = memchr(buf, '\n', len);
  if (!nl) return refuse(err, errlen, "truncated: no checksum line");
  size_t bl = (size_t)(nl - buf);
  const char *sum = nl + 1;
  size_t sl = len - bl - 1, want = strlen(SUM_LINE) + 2 * NQ_CKPT_HASH_LEN + 1;
  if (sl != want || memcmp(sum, SUM_LINE, strlen(SUM_LINE)) != 0 || sum[sl - 1] != '\n')
    return refuse(err, errlen, "truncated or malformed checksum line");
  char hex[2 * NQ_CKPT_HASH_LEN + 1];
  memcpy(hex, sum + strlen(SUM_LINE), 2 * NQ_CKPT_HASH_LEN);
  hex[2 * NQ_CKPT_HASH_LEN] = '\0';
  unsigned char md[NQ_CKPT_HASH_LEN], want_md[NQ_CKPT_HASH_LEN];
  if (nq_hex_decode(hex, NQ_CKPT_HASH_LEN, want_md) != 0)
    return refuse(err, errlen, "malformed checksum");
  if (nq_sha256(buf, bl, md) != 0) return refuse(err, errlen, "cannot compute the checksum");
  if (memcmp(md, want_md, sizeof md) != 0)
    return refuse(err, errlen, "checksum mismatch (the file is damaged)");
  if (memchr(buf, '\0', bl)) return refuse(err, errlen, "NUL byte in the record");
  *body = malloc(bl + 1);
  if (!*body) return NQ_ENOMEM;
  memcpy(*body, buf, bl);
  (*body)[bl] = '\0';
  return 0;
}

/* The subject: "unit" (a unit text) or "n" and "depth" (all of N), never both. */
static int subject_decode(const json_t *o, nq_subject_t *s, char *err, size_t errlen) {
  const char *text;
  int64_t n, d;
  int has_unit = json_object_get(o, "unit") != NULL;
  int has_n = json_object_get(o, "n") != NULL || json_object_get(o, "depth") != NULL;
  if (has_unit == has_n) return refuse(err, errlen, "needs either unit or n and depth");
  if (has_unit) {
    nq_unit_t u;
    char why[120];
    if (nq_msg_get_str(o, "unit", &text) != 0) return refuse(err, errlen, "unit: not a string");
    if (nq_unit_parse(text, &u, why, sizeof why) != 0)
      return refuse(err, errlen, "unit: %s", why);
    return nq_subject_unit(s, &u) == 0 ? 0 : refuse(err, errlen, "unit: invalid");
  }
  if (nq_msg_get_int(o, "n", NQ_UNIT_MIN_N, NQ_MAX_N, &n) != 0 ||
      nq_msg_get_int(o, "depth", 2, NQ_MAX_N - 1, &d) != 0 ||
      d != nq_unit_effective_depth((int)n, (int)d))
    return refuse(err, errlen, "n and depth: out of range");
  return nq_subject_whole(s, (int)n, (int)d) == 0 ? 0 : refuse(err, errlen, "n: out of range");
}

/* The cut: {"depth", "tasks", "hash"}. */
static int cut_decode(const json_t *o, nq_ckpt_t *c, char *err, size_t errlen) {
  const json_t *cut = json_object_get(o, "cut");
  int64_t depth, tasks;
  const char *hash;
  if (!json_is_object(cut) || json_object_size(cut) != 3 ||
      nq_msg_get_int(cut, "depth", c->subject.whole ? 2 : c->subject.depth, c->subject.n - 1,
                     &depth) != 0 ||
      nq_msg_get_int(cut, "tasks", 0, NQ_CKPT_TASKS_MAX, &tasks) != 0 ||
      nq_msg_get_str(cut, "hash", &hash) != 0 ||
      nq_hex_decode(hash, NQ_CKPT_HASH_LEN, c->cut_hash) != 0)
    return refuse(err, errlen, "cut: needs depth (from the subject's to N-1), tasks (0..%u) "
                  "and a 64-digit hash", NQ_CKPT_TASKS_MAX);
  c->cut_depth = (int)depth;
  c->ntasks = (uint32_t)tasks;
  return 0;
}

/* The finished tasks: the bitmap and {"tasks", "c2", "c4", "c8", "nodes"}, which must agree. */
static int done_decode(const json_t *o, nq_ckpt_t *c, char *err, size_t errlen) {
  const json_t *done = json_object_get(o, "done");
  const char *bits;
  int64_t ndone;
  size_t nb = bitmap_bytes(c->ntasks);
  if (!json_is_object(done) || json_object_size(done) != 5 ||
      nq_msg_get_int(done, "tasks", 0, c->ntasks, &ndone) != 0 ||
      nq_msg_get_u64(done, "c2", &c->sum.c2) != 0 || nq_msg_get_u64(done, "c4", &c->sum.c4) != 0 ||
      nq_msg_get_u64(done, "c8", &c->sum.c8) != 0 ||
      nq_msg_get_u64(done, "nodes", &c->sum.nodes) != 0)
    return refuse(err, errlen, "done: needs tasks (0..cut tasks), c2, c4, c8 and nodes");
  if (nq_msg_get_str(o, "finished", &bits) != 0 || strlen(bits) != 2 * nb ||
      nq_hex_decode(bits, nb, c->done) != 0)
    return refuse(err, errlen, "finished: needs %zu hex digits", 2 * nb);
  uint32_t set = 0;
  for (size_t i = 0; i < nb; i++) set += (uint32_t)__builtin_popcount(c->done[i]);
  if (c->ntasks % 8 && (c->done[nb - 1] >> (c->ntasks % 8)))
    return refuse(err, errlen, "finished: bits set beyond the last task");
  if (set != (uint64_t)ndone)
    return refuse(err, errlen, "finished: %u tasks marked, done.tasks says %lld", set,
                  (long long)ndone);
  c->ndone = set;
  /* Every task counts at least its own node; a solution is a node; a corner unit has no
   * COUNT2/COUNT4 solutions. */
  const nq_counts_t *s = &c->sum;
  int corner = !c->subject.whole && c->subject.unit.part == NQ_PART_CORNER;
  if (s->nodes > (uint64_t)INT64_MAX || s->c2 > s->nodes || s->c4 > s->nodes - s->c2 ||
      s->c8 > s->nodes - s->c2 - s->c4 || s->nodes < set || (corner && (s->c2 || s->c4)))
    return refuse(err, errlen, "done: impossible counts");
  return 0;
}

int nq_ckpt_decode(const char *buf, size_t len, nq_ckpt_t *c, char *err, size_t errlen) {
  memset(c, 0, sizeof *c);
  if (err && errlen) err[0] = '\0';
  if (len > NQ_CKPT_FILE_MAX) return refuse(err, errlen, "too big (%zu bytes)", len);
  char *body = NULL;
  int rc = split_checked(buf, len, &body, err, errlen);
  if (rc) return rc;
  json_error_t je;
  json_t *o = json_loads(body, JSON_REJECT_DUPLICATES, &je);
  free(body);
  const char *fmt, *solver;
  double secs = -1;
  if (!json_is_object(o)) {
    rc = refuse(err, errlen, "not a JSON object");
    goto out;
  }
  if (nq_msg_get_str(o, "format", &fmt) != 0 || strcmp(fmt, NQ_CKPT_FORMAT) != 0) {
    rc = refuse(err, errlen, "format is not %s", NQ_CKPT_FORMAT);
    goto out;
  }
  if (nq_msg_get_str(o, "solver", &solver) != 0 || strcmp(solver, NQ_SOLVER_VERSION) != 0) {
    /* The file's own string goes into a one-line message: control characters become '?'. */
    char seen[NQ_SOLVER_VERSION_MAX + 1] = "?";
    const char *sv = json_string_value(json_object_get(o, "solver"));
    for (size_t i = 0; sv && sv[i] && i < NQ_SOLVER_VERSION_MAX; i++, seen[i] = '\0')
      seen[i] = (unsigned char)sv[i] < 0x20 || sv[i] == 0x7f ? '?' : sv[i];
    rc = refuse(err, errlen, "written by solver %s, this is %s", seen, NQ_SOLVER_VERSION);
    goto out;
  }
  if ((rc = subject_decode(o, &c->subject, err, errlen)) != 0) goto out;
  if ((rc = cut_decode(o, c, err, errlen)) != 0) goto out;
  c->done = calloc(bitmap_bytes(c->ntasks) ? bitmap_bytes(c->ntasks) : 1, 1);
  if (!c->done) {
    rc = NQ_ENOMEM;
    goto out;
  }
  if ((rc = done_decode(o, c, err, errlen)) != 0) goto out;
  const json_t *js = json_object_get(o, "seconds");
  if (json_is_number(js)) secs = json_number_value(js);
  if (!isfinite(secs) || secs < 0 || secs > 1e12) {
    rc = refuse(err, errlen, "seconds: needs a number >= 0");
    goto out;
  }
  c->seconds = secs;
  /* Exactly the keys above: anything else is not a record this version wrote. */
  if (json_object_size(o) != (c->subject.whole ? 8u : 7u))
    rc = refuse(err, errlen, "unexpected fields");
out:
  json_decref(o);
  if (rc) nq_ckpt_free(c);
  return rc;
}

int nq_ckpt_save(const char *dir, const char *name, const nq_ckpt_t *c) {
  char *buf;
  size_t len;
  int rc = nq_ckpt_encode(c, &buf, &len);
  if (rc) return rc;
  rc = nq_file_replace(dir, name, buf, len, 0600);
  free(buf);
  return rc;
}

int nq_ckpt_load(const char *path, nq_ckpt_t *c, char *err, size_t errlen) {
  char *buf = NULL;
  size_t len = 0;
  memset(c, 0, sizeof *c);
  int rc = nq_file_read(path, NQ_CKPT_FILE_MAX, &buf, &len);
  if (rc == NQ_ETOOBIG) return refuse(err, errlen, "too big (over %d bytes)", NQ_CKPT_FILE_MAX);
  if (rc == 0) rc = nq_ckpt_decode(buf, len, c, err, errlen);
  free(buf);
  return rc;
}
