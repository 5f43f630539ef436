/* nq: the evidence file's one pack and one parse (nq/evidence.h, docs/evidence.md). */
#include "nq/evidence.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "nq/hash.h"
#include "nq/json.h"
#include "nq/nq.h"

#define DISTINCT_NAME(e, name) name,
static const char *const distinct_names[NQ_EV_DISTINCT_N] = {NQ_EV_DISTINCT_MAP(DISTINCT_NAME)};
#undef DISTINCT_NAME

const char *nq_ev_distinct_name(nq_ev_distinct_t d) {
  return (unsigned)d < NQ_EV_DISTINCT_N ? distinct_names[d] : "?";
}

int nq_ev_distinct_parse(const char *name) {
  int i = nq_name_index(distinct_names, NQ_EV_DISTINCT_N, name);
  return i < 0 ? NQ_EINVAL : i;
}

#define SETTLED_NAME(e, name) name,
static const char *const settled_names[NQ_EV_SETTLED_N] = {NQ_EV_SETTLED_MAP(SETTLED_NAME)};
#undef SETTLED_NAME

const char *nq_ev_settled_name(nq_ev_settled_t s) {
  return (unsigned)s < NQ_EV_SETTLED_N ? settled_names[s] : "?";
}

int nq_ev_settled_parse(const char *name) {
  int i = nq_name_index(settled_names, NQ_EV_SETTLED_N, name);
  return i < 0 ? NQ_EINVAL : i;
}

size_t nq_ev_signed_message(const unsigned char digest[32], char out[NQ_EV_SIGNED_MSG_MAX]) {
  char hex[65];
  nq_hex_encode(digest, 32, hex);
  return (size_t)snprintf(out, NQ_EV_SIGNED_MSG_MAX, "nq-evidence sha256 %s", hex);
}

/* ---- writing -------------------------------------------------------------------------------- */

struct nq_ev_writer_s {
  FILE *f;
  nq_sha256_ctx_t *hash;
};

int nq_ev_writer_begin(FILE *f, nq_ev_writer_t **out) {
  *out = NULL;
  nq_ev_writer_t *w = calloc(1, sizeof *w);
  if (!w) return NQ_ENOMEM;
  int rc = nq_sha256_begin(&w->hash);
  if (rc) {
    free(w);
    return rc;
  }
  w->f = f;
  *out = w;
  return 0;
}

void nq_ev_writer_free(nq_ev_writer_t *w) {
  if (!w) return;
  if (w->hash) nq_sha256_end(w->hash, NULL);
  free(w);
}

/* Write o (consumed) as one compact line, keys in insertion order, and hash it. */
static int put_line(nq_ev_writer_t *w, json_t *o) {
  if (!o) return NQ_ENOMEM;
  char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
  json_decref(o);
  if (!s) return NQ_ENOMEM;
  size_t n = strlen(s);
  s[n] = '\n'; /* the NUL's byte becomes the line's end: n + 1 bytes go out */
  int rc = 0;
  if (fwrite(s, 1, n + 1, w->f) != n + 1) rc = NQ_EIO;
  else rc = nq_sha256_add(w->hash, s, n + 1);
  free(s);
  return rc;
}

static json_t *u128_json(nq_u128 v) {
  char buf[48];
  return json_string(nq_u128_str(v, buf));
}

static int set_u64(json_t *o, const char *k, uint64_t v) { return nq_msg_set_u64(o, k, v); }

int nq_ev_write_header(nq_ev_writer_t *w, const nq_ev_header_t *h) {
  json_t *o = json_object();
  if (!o) return NQ_ENOMEM;
  int bad = 0;
  bad |= json_object_set_new(o, "type", json_string("header"));
  bad |= json_object_set_new(o, "format", json_string(NQ_EV_FORMAT));
  bad |= json_object_set_new(o, "version", json_integer(NQ_EV_VERSION));
  bad |= json_object_set_new(o, "n", json_integer(h->n));
  bad |= json_object_set_new(o, "job", json_integer(h->job));
  bad |= json_object_set_new(o, "solver", json_string(h->solver));
  bad |= json_object_set_new(o, "software", json_string(h->software));
  bad |= json_object_set_new(o, "depth", json_integer(h->depth));
  bad |= json_object_set_new(o, "min_depth", json_integer(h->min_depth));
  bad |= json_object_set_new(o, "unit_seconds", json_real(h->unit_seconds));
  bad |= set_u64(o, "seed", h->seed);
  if (!h->has_internal) {
    json_decref(o);
    return NQ_EINVAL; /* the format requires the split nodes */
  }
  bad |= set_u64(o, "internal", h->internal);
  bad |= json_object_set_new(o, "quorum", json_integer(h->quorum));
  bad |= json_object_set_new(o, "max_results", json_integer(h->max_results));
  bad |= json_object_set_new(o, "quorum_distinct", json_string(nq_ev_distinct_name(h->distinct)));
  bad |= set_u64(o, "units", h->units);
  bad |= json_object_set_new(o, "created", json_integer(h->created));
  bad |= json_object_set_new(o, "finished", json_integer(h->finished));
  bad |= json_object_set_new(o, "exported", json_integer(h->exported));
  if (bad) {
    json_decref(o);
    return NQ_EINVAL; /* a string that is not UTF-8, or out of memory */
  }
  return put_line(w, o);
}

static json_t *result_json(const nq_ev_result_t *r) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = 0;
  bad |= json_object_set_new(o, "client", json_string(r->client));
  bad |= json_object_set_new(o, "owner", json_string(r->owner));
  if (r->net) bad |= json_object_set_new(o, "net", json_integer(r->net));
  bad |= json_object_set_new(o, "state", json_string(r->state));
  bad |= json_object_set_new(o, "spot", json_boolean(r->spot));
  bad |= json_object_set_new(o, "voided", json_boolean(r->voided));
  if (r->settles) bad |= json_object_set_new(o, "settles", json_true());
  bad |= json_object_set_new(o, "solver", json_string(r->solver));
  bad |= json_object_set_new(o, "backend", json_string(r->backend));
  bad |= set_u64(o, "c2", r->c2) | set_u64(o, "c4", r->c4) | set_u64(o, "c8", r->c8);
  bad |= set_u64(o, "nodes", r->nodes);
  bad |= json_object_set_new(o, "reported", json_integer(r->reported));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

int nq_ev_write_unit(nq_ev_writer_t *w, const nq_ev_unit_t *u) {
  if (u->nresults < 0 || u->nresults > NQ_EV_RESULTS_MAX) return NQ_EINVAL;
  json_t *o = json_object(), *rs = json_array();
  int bad = !o || !rs;
  bad |= json_object_set_new(o, "type", json_string("unit"));
  bad |= json_object_set_new(o, "text", json_string(u->text));
  bad |= json_object_set_new(o, "state", json_string(u->state));
  bad |= set_u64(o, "c2", u->c2) | set_u64(o, "c4", u->c4) | set_u64(o, "c8", u->c8);
  bad |= set_u64(o, "nodes", u->nodes);
  bad |= json_object_set_new(o, "nodes_solver", json_string(u->nodes_solver));
  bad |= (unsigned)u->settled >= NQ_EV_SETTLED_N;
  if (!bad) bad |= json_object_set_new(o, "settled", json_string(nq_ev_settled_name(u->settled)));
  bad |= json_object_set_new(o, "verified_at", json_integer(u->verified_at));
  for (int i = 0; !bad && i < u->nresults; i++) {
    json_t *r = result_json(&u->results[i]);
    bad |= !r || json_array_append_new(rs, r);
  }
  if (!bad) {
    bad = json_object_set_new(o, "results", rs);
    rs = NULL;
  }
  if (bad) {
    json_decref(rs);
    json_decref(o);
    return NQ_EINVAL;
  }
  return put_line(w, o);
}

int nq_ev_write_totals(nq_ev_writer_t *w, const nq_ev_totals_t *t) {
  json_t *o = json_object();
  if (!o) return NQ_ENOMEM;
  int bad = 0;
  bad |= json_object_set_new(o, "type", json_string("totals"));
  bad |= set_u64(o, "units", t->units);
  bad |= json_object_set_new(o, "c2", u128_json(t->c2));
  bad |= json_object_set_new(o, "c4", u128_json(t->c4));
  bad |= json_object_set_new(o, "c8", u128_json(t->c8));
  bad |= json_object_set_new(o, "nodes", u128_json(t->nodes));
  bad |= json_object_set_new(o, "total", u128_json(t->total));
  bad |= json_object_set_new(o, "unique", u128_json(t->unique));
  if (bad) {
    json_decref(o);
    return NQ_ENOMEM;
  }
  return put_line(w, o);
}

/* The last line carries the digest of every byte before it, so it is written unhashed; signed,
 * it also carries the public key and the signature of the digest's message. */
static int writer_end(nq_ev_writer_t *w, const unsigned char *priv) {
  unsigned char md[32], pub[NQ_SIGN_KEY_BYTES], sig[NQ_SIGN_SIG_BYTES];
  char hex[65], msg[NQ_EV_SIGNED_MSG_MAX], pubhex[2 * NQ_SIGN_KEY_BYTES + 1],
      sighex[2 * NQ_SIGN_SIG_BYTES + 1];
  int rc = nq_sha256_end(w->hash, md);
  w->hash = NULL;
  if (rc == 0 && priv) {
    size_t n = nq_ev_signed_message(md, msg);
    if ((rc = nq_sign_public(priv, pub)) == 0) rc = nq_sign(priv, msg, n, sig);
    nq_hex_encode(pub, sizeof pub, pubhex);
    nq_hex_encode(sig, sizeof sig, sighex);
  }
  if (rc == 0) {
    nq_hex_encode(md, sizeof md, hex);
    int e = priv ? fprintf(w->f, "{\"type\":\"sha256\",\"sha256\":\"%s\",\"key\":\"%s\","
                                  "\"signature\":\"%s\"}\n", hex, pubhex, sighex)
                 : fprintf(w->f, "{\"type\":\"sha256\",\"sha256\":\"%s\"}\n", hex);
    if (e < 0 || fflush(w->f) != 0) rc = NQ_EIO;
  }
  nq_ev_writer_free(w);
  return rc;
}

int nq_ev_writer_end(nq_ev_writer_t *w) { return writer_end(w, NULL); }

int nq_ev_writer_end_signed(nq_ev_writer_t *w, const unsigned char priv[NQ_SIGN_KEY_BYTES]) {
  return writer_end(w, priv);
}

/* ---- parsing -------------------------------------------------------------------------------- */

typedef struct pctx_s {
  char *err;
  size_t errlen;
} pctx_t;

static int perr(pctx_t *p, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (p->err && p->errlen) vsnprintf(p->err, p->errlen, fmt, ap);
  va_end(ap);
  return rc;
}

/* The reason a field read failed, in words. */
static int field_err(pctx_t *p, int rc, const char *where, const char *key) {
  return perr(p, rc == NQ_ERANGE ? NQ_ERANGE : NQ_EINVAL, "%s: field \"%s\" %s", where, key,
              rc == NQ_ERANGE ? "is out of range" : "is missing or of the wrong type");
}

static int get_int(pctx_t *p, const json_t *o, const char *where, const char *key, int64_t min,
                   int64_t max, int64_t *out) {
  int rc = nq_msg_get_int(o, key, min, max, out);
  return rc ? field_err(p, rc, where, key) : 0;
}

static int get_u64(pctx_t *p, const json_t *o, const char *where, const char *key, uint64_t *out) {
  int rc = nq_msg_get_u64(o, key, out);
  if (rc == 0 && *out > (uint64_t)INT64_MAX) rc = NQ_ERANGE; /* counts are below 2^63 */
  return rc ? field_err(p, rc, where, key) : 0;
}

/* A string field of at most len - 1 bytes, without NUL bytes, copied into buf. */
static int get_str(pctx_t *p, const json_t *o, const char *where, const char *key, char *buf,
                   size_t len) {
  const json_t *v = json_object_get(o, key);
  if (!json_is_string(v)) return field_err(p, NQ_EINVAL, where, key);
  size_t n = json_string_length(v);
  if (n >= len || memchr(json_string_value(v), 0, n))
    return perr(p, NQ_ERANGE, "%s: field \"%s\" is longer than %zu bytes or holds a NUL", where,
                key, len - 1);
  memcpy(buf, json_string_value(v), n + 1);
  return 0;
}

static int get_bool(pctx_t *p, const json_t *o, const char *where, const char *key, int *out) {
  int rc = nq_msg_get_bool(o, key, out);
  return rc ? field_err(p, rc, where, key) : 0;
}

static int get_u128(pctx_t *p, const json_t *o, const char *where, const char *key, nq_u128 *out) {
  const json_t *v = json_object_get(o, key);
  const char *s = json_string_value(v);
  if (!s || json_string_length(v) > 40 || nq_u128_parse(s, out) != 0)
    return perr(p, NQ_EINVAL, "%s: field \"%s\" is not a string of decimal digits below 2^128",
                where, key);
  return 0;
}

static int parse_header(pctx_t *p, const json_t *o, nq_ev_header_t *h) {
  const char *w = "header";
  char fmt[32];
  int64_t v;
  int rc;
  memset(h, 0, sizeof *h);
  if ((rc = get_str(p, o, w, "format", fmt, sizeof fmt))) return rc;
  if (strcmp(fmt, NQ_EV_FORMAT))
    return perr(p, NQ_EINVAL, "header: format \"%s\" is not " NQ_EV_FORMAT, fmt);
  if ((rc = get_int(p, o, w, "version", 1, INT32_MAX, &v))) return rc;
  if (v < NQ_EV_VERSION_MIN || v > NQ_EV_VERSION)
    return perr(p, NQ_ERANGE, "header: format version %lld; this program reads versions %d..%d",
                (long long)v, NQ_EV_VERSION_MIN, NQ_EV_VERSION);
  h->version = (int)v;
  if ((rc = get_int(p, o, w, "n", NQ_UNIT_MIN_N, NQ_MAX_N, &v))) return rc;
  h->n = (int)v;
  if ((rc = get_int(p, o, w, "job", 0, INT64_MAX, &h->job))) return rc;
  if ((rc = get_str(p, o, w, "solver", h->solver, sizeof h->solver))) return rc;
  if ((rc = get_str(p, o, w, "software", h->software, sizeof h->software))) return rc;
  if ((rc = get_int(p, o, w, "depth", 2, NQ_MAX_N - 1, &v))) return rc;
  h->depth = (int)v;
  if ((rc = get_int(p, o, w, "min_depth", 2, h->depth, &v))) return rc;
  h->min_depth = (int)v;
  const json_t *us = json_object_get(o, "unit_seconds");
  if (!json_is_number(us) || !(json_number_value(us) >= 0 && json_number_value(us) <= 1e12))
    return perr(p, NQ_EINVAL, "header: field \"unit_seconds\" is not a number 0..1e12");
  h->unit_seconds = json_number_value(us);
  if ((rc = nq_msg_get_u64(o, "seed", &h->seed))) return field_err(p, rc, w, "seed");
  /* Required: it bounds nq-verify's walk of the split nodes (docs/evidence.md). */
  if ((rc = get_u64(p, o, w, "internal", &h->internal))) return rc;
  h->has_internal = 1;
  if ((rc = get_int(p, o, w, "quorum", 1, 1000, &v))) return rc;
  h->quorum = (int)v;
  if ((rc = get_int(p, o, w, "max_results", h->quorum, 100000, &v))) return rc;
  h->max_results = (int)v;
  char d[16];
  if ((rc = get_str(p, o, w, "quorum_distinct", d, sizeof d))) return rc;
  if ((rc = nq_ev_distinct_parse(d)) < 0)
    return perr(p, NQ_EINVAL, "header: quorum_distinct \"%s\" is not client, owner or network", d);
  h->distinct = (nq_ev_distinct_t)rc;
  if ((rc = get_u64(p, o, w, "units", &h->units))) return rc;
  if ((rc = get_int(p, o, w, "created", 0, INT64_MAX, &h->created))) return rc;
  if ((rc = get_int(p, o, w, "finished", 0, INT64_MAX, &h->finished))) return rc;
  return get_int(p, o, w, "exported", 0, INT64_MAX, &h->exported);
}

static int parse_result(pctx_t *p, const json_t *o, nq_ev_result_t *r) {
  const char *w = "result";
  int rc;
  memset(r, 0, sizeof *r);
  if (!json_is_object(o)) return perr(p, NQ_EINVAL, "unit: a result is not an object");
  if ((rc = get_str(p, o, w, "client", r->client, sizeof r->client))) return rc;
  if ((rc = get_str(p, o, w, "owner", r->owner, sizeof r->owner))) return rc;
  if (json_object_get(o, "net") && (rc = get_int(p, o, w, "net", 1, INT64_MAX, &r->net)))
    return rc;
  if ((rc = get_str(p, o, w, "state", r->state, sizeof r->state))) return rc;
  if ((rc = get_bool(p, o, w, "spot", &r->spot)) || (rc = get_bool(p, o, w, "voided", &r->voided)))
    return rc;
  if (json_object_get(o, "settles") && (rc = get_bool(p, o, w, "settles", &r->settles))) return rc;
  if ((rc = get_str(p, o, w, "solver", r->solver, sizeof r->solver))) return rc;
  if ((rc = get_str(p, o, w, "backend", r->backend, sizeof r->backend))) return rc;
  if ((rc = get_u64(p, o, w, "c2", &r->c2)) || (rc = get_u64(p, o, w, "c4", &r->c4)) ||
      (rc = get_u64(p, o, w, "c8", &r->c8)) || (rc = get_u64(p, o, w, "nodes", &r->nodes)))
    return rc;
  return get_int(p, o, w, "reported", 0, INT64_MAX, &r->reported);
}

static int parse_unit(pctx_t *p, const json_t *o, nq_ev_unit_t *u) {
  const char *w = "unit";
  int rc;
  u->nresults = 0;
  if ((rc = get_str(p, o, w, "text", u->text, sizeof u->text))) return rc;
  if ((rc = get_str(p, o, w, "state", u->state, sizeof u->state))) return rc;
  if ((rc = get_u64(p, o, w, "c2", &u->c2)) || (rc = get_u64(p, o, w, "c4", &u->c4)) ||
      (rc = get_u64(p, o, w, "c8", &u->c8)) || (rc = get_u64(p, o, w, "nodes", &u->nodes)))
    return rc;
  if ((rc = get_str(p, o, w, "nodes_solver", u->nodes_solver, sizeof u->nodes_solver))) return rc;
  u->settled = NQ_EV_SETTLED_QUORUM; /* a version 1 line: the quorum's rule */
  if (json_object_get(o, "settled")) {
    char how[16];
    if ((rc = get_str(p, o, w, "settled", how, sizeof how))) return rc;
    if ((rc = nq_ev_settled_parse(how)) < 0)
      return perr(p, NQ_EINVAL, "unit: settled \"%s\" is not quorum, trusted or audit", how);
    u->settled = (nq_ev_settled_t)rc;
  }
  if ((rc = get_int(p, o, w, "verified_at", 0, INT64_MAX, &u->verified_at))) return rc;
  const json_t *rs = json_object_get(o, "results");
  if (!json_is_array(rs)) return perr(p, NQ_EINVAL, "unit: field \"results\" is not an array");
  if (json_array_size(rs) > NQ_EV_RESULTS_MAX)
    return perr(p, NQ_ERANGE, "unit: more than %d results", NQ_EV_RESULTS_MAX);
  for (size_t i = 0; i < json_array_size(rs); i++) {
    if ((rc = parse_result(p, json_array_get(rs, i), &u->results[i]))) return rc;
    u->nresults++;
  }
  return 0;
}

static int parse_totals(pctx_t *p, const json_t *o, nq_ev_totals_t *t) {
  const char *w = "totals";
  int rc;
  if ((rc = get_u64(p, o, w, "units", &t->units))) return rc;
  if ((rc = get_u128(p, o, w, "c2", &t->c2)) || (rc = get_u128(p, o, w, "c4", &t->c4)) ||
      (rc = get_u128(p, o, w, "c8", &t->c8)) || (rc = get_u128(p, o, w, "nodes", &t->nodes)) ||
      (rc = get_u128(p, o, w, "total", &t->total)) || (rc = get_u128(p, o, w, "unique", &t->unique)))
    return rc;
  return 0;
}

int nq_ev_parse_line(const char *line, size_t len, nq_ev_line_t *out, char *err, size_t errlen) {
  pctx_t p = {err, errlen};
  json_error_t jerr;
  if (err && errlen) err[0] = '\0';
  json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!o) return perr(&p, NQ_EINVAL, "not JSON: %s (column %d)", jerr.text, jerr.column);
  int rc;
  char type[16];
  if (!json_is_object(o)) {
    rc = perr(&p, NQ_EINVAL, "a line is not a JSON object");
  } else if ((rc = get_str(&p, o, "line", "type", type, sizeof type)) != 0) {
  } else if (!strcmp(type, "header")) {
    out->type = NQ_EV_HEADER;
    rc = parse_header(&p, o, &out->header);
  } else if (!strcmp(type, "unit")) {
    out->type = NQ_EV_UNIT;
    rc = parse_unit(&p, o, &out->unit);
  } else if (!strcmp(type, "totals")) {
    out->type = NQ_EV_TOTALS;
    rc = parse_totals(&p, o, &out->totals);
  } else if (!strcmp(type, "sha256")) {
    char hex[160];
    out->type = NQ_EV_SHA256;
    out->has_sig = 0;
    if ((rc = get_str(&p, o, "sha256", "sha256", hex, sizeof hex)) == 0 &&
        nq_hex_decode(hex, 32, out->sha256) != 0)
      rc = perr(&p, NQ_EINVAL, "sha256: not 64 lowercase hex digits");
    /* Signed: both the key and the signature, or neither. */
    int hk = json_object_get(o, "key") != NULL, hs = json_object_get(o, "signature") != NULL;
    if (rc == 0 && hk != hs) rc = perr(&p, NQ_EINVAL, "sha256: a key without a signature or a "
                                       "signature without a key");
    if (rc == 0 && hk) {
      if ((rc = get_str(&p, o, "sha256", "key", hex, sizeof hex)) == 0 &&
          nq_hex_decode(hex, NQ_SIGN_KEY_BYTES, out->key) != 0)
        rc = perr(&p, NQ_EINVAL, "sha256: the key is not 64 lowercase hex digits");
      if (rc == 0 && (rc = get_str(&p, o, "sha256", "signature", hex, sizeof hex)) == 0 &&
          nq_hex_decode(hex, NQ_SIGN_SIG_BYTES, out->sig) != 0)
        rc = perr(&p, NQ_EINVAL, "sha256: the signature is not 128 lowercase hex digits");
      out->has_sig = rc == 0;
    }
  } else {
    rc = perr(&p, NQ_EINVAL, "unknown line type \"%s\"", type);
  }
  json_decref(o);
  return rc;
}

/* ---- the line reader ------------------------------------------------------------------------ */

struct nq_ev_reader_s {
  FILE *f;
  nq_sha256_ctx_t *hash; /* every byte before the current line */
  char *buf;
  size_t len;            /* the current line's length (0 before the first) */
  int have;              /* a current line exists (to be hashed at the next call) */
  uint64_t lineno;
};

int nq_ev_reader_begin(FILE *f, nq_ev_reader_t **out) {
  *out = NULL;
  nq_ev_reader_t *r = calloc(1, sizeof *r);
  if (!r) return NQ_ENOMEM;
  r->buf = malloc(NQ_EV_LINE_MAX + 2);
  int rc = r->buf ? nq_sha256_begin(&r->hash) : NQ_ENOMEM;
  if (rc) {
    free(r->buf);
    free(r);
    return rc;
  }
  r->f = f;
  *out = r;
  return 0;
}

void nq_ev_reader_free(nq_ev_reader_t *r) {
  if (!r) return;
  if (r->hash) nq_sha256_end(r->hash, NULL);
  free(r->buf);
  free(r);
}

int nq_ev_reader_next(nq_ev_reader_t *r, const char **line, size_t *len, uint64_t *lineno) {
  int c = getc_unlocked(r->f);
  if (c == EOF) return ferror(r->f) ? NQ_EIO : 0; /* the last line stays out of the digest */
  /* A next line exists: the current one goes into the digest before its buffer is reused. */
  if (r->have && r->hash) {
    r->buf[r->len] = '\n';
    int rc = nq_sha256_add(r->hash, r->buf, r->len + 1);
    if (rc) return rc;
  }
  r->have = 0;
  size_t n = 0;
  while (c != EOF && c != '\n' && n <= NQ_EV_LINE_MAX) {
    r->buf[n++] = (char)c;
    c = getc_unlocked(r->f);
  }
  if (c == EOF && ferror(r->f)) return NQ_EIO;
  r->lineno++;
  *lineno = r->lineno;
  if (n > NQ_EV_LINE_MAX) return NQ_ETOOBIG;
  if (c == EOF) return NQ_EINVAL; /* the last line lacks its newline: cut short */
  if (memchr(r->buf, 0, n)) return NQ_EINVAL;
  r->buf[n] = '\0';
  r->len = n;
  r->have = 1;
  *line = r->buf;
  *len = n;
  return 1;
}

int nq_ev_reader_digest(nq_ev_reader_t *r, unsigned char out[32]) {
  if (!r->hash) return NQ_ESTATE;
  int rc = nq_sha256_end(r->hash, out);
  r->hash = NULL;
  return rc;
}
