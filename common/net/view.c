/* nq: the generic pack and parse of typed views (nq/view.h): one walk over a view's field table
 * in each direction. */
#include "nq/view.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/json.h"
#include "nq/nq.h"

#define AT(s, off, type) ((type *)((char *)(s) + (off)))
#define CAT(s, off, type) ((const type *)((const char *)(s) + (off)))

/* ---- pack ----------------------------------------------------------------------------------- */

static json_t *pack_u128(nq_u128 v) {
  char buf[48];
  return json_string(nq_u128_str(v, buf));
}

static json_t *pack_value(const nq_view_field_t *f, const void *s) {
  const void *p = CAT(s, f->off, char);
  switch (f->kind) {
  case NQ_VK_INT:
  case NQ_VK_INTR: return json_integer((json_int_t) * (const int64_t *)p);
  case NQ_VK_REALR: return json_real(*(const double *)p);
  case NQ_VK_TEXT: return *(const char *const *)p ? json_string(*(const char *const *)p) : NULL;
  case NQ_VK_REF: {
    const nq_view_ref_t *r = p;
    return r->text ? json_string(r->text) : json_integer((json_int_t)r->id);
  }
  case NQ_VK_I32: return json_integer(*(const int *)p);
  case NQ_VK_U64: {
    uint64_t v = *(const uint64_t *)p;
    char buf[24];
    if (v <= (uint64_t)INT64_MAX) return json_integer((json_int_t)v);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    return json_string(buf);
  }
  case NQ_VK_CHARS: return json_string(p);
  case NQ_VK_BOOL: return json_boolean(*(const int *)p);
  case NQ_VK_REAL: return json_real(*(const double *)p);
  case NQ_VK_STR: return *(const char *const *)p ? json_string(*(const char *const *)p) : NULL;
  case NQ_VK_STRN:
    return *(const char *const *)p ? json_string(*(const char *const *)p) : json_null();
  case NQ_VK_U128: return pack_u128(*(const nq_u128 *)p);
  case NQ_VK_OBJ: return nq_view_pack(f->sub, p);
  case NQ_VK_ARR:
  case NQ_VK_INTS: {
    size_t n = *CAT(s, f->count_off, size_t);
    const char *elems = *(const char *const *)p;
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++) {
      json_t *e = f->kind == NQ_VK_ARR ? nq_view_pack(f->sub, elems + i * f->sub->size)
                                       : json_integer(((const int64_t *)elems)[i]);
      if (!e || json_array_append_new(arr, e) != 0) {
        json_decref(arr);
        return NULL;
      }
    }
    return arr;
  }
  case NQ_VK_COUNTS: break; /* inline: pack_fields */
  }
  return NULL;
}

/* 1 when the member of f in s is 0 (false, NULL): a ZERO or ONE field then stays out. */
static int is_zero(const nq_view_field_t *f, const void *s) {
  const void *p = CAT(s, f->off, char);
  switch (f->kind) {
  case NQ_VK_INT:
  case NQ_VK_INTR: return *(const int64_t *)p == 0;
  case NQ_VK_BOOL: return *(const int *)p == 0;
  case NQ_VK_REAL:
  case NQ_VK_REALR: return *(const double *)p == 0;
  case NQ_VK_STR:
  case NQ_VK_STRN:
  case NQ_VK_TEXT: return *(const char *const *)p == NULL;
  case NQ_VK_REF: {
    const nq_view_ref_t *r = p;
    return r->text == NULL && r->id == 0;
  }
  case NQ_VK_U128: return *(const nq_u128 *)p == 0;
  case NQ_VK_I32: return *(const int *)p == 0;
  case NQ_VK_U64: return *(const uint64_t *)p == 0;
  case NQ_VK_CHARS: return *(const char *)p == '\0';
  default: return 0;
  }
}

static int has_value(const nq_view_field_t *f, const void *s) {
  switch (f->flag) {
  case NQ_VF_REQ: return 1;
  case NQ_VF_ZERO:
  case NQ_VF_ONE: return !is_zero(f, s);
  default: return *CAT(s, f->has_off, int);
  }
}

/* The fields of v from s into obj; 0 or NQ_ENOMEM. */
static int pack_fields(const nq_view_t *v, const void *s, json_t *obj) {
  for (size_t i = 0; i < v->nfields; i++) {
    const nq_view_field_t *f = &v->fields[i];
    int has = has_value(f, s);
    if ((f->flag == NQ_VF_ZERO || f->flag == NQ_VF_ONE) && !has) continue;
    /* A table of counts is always sent whole (an optional one only parses without some keys). */
    if (f->flag == NQ_VF_OPT && !has && f->kind != NQ_VK_COUNTS) continue;
    if (f->kind == NQ_VK_COUNTS) {
      const int64_t *c = CAT(s, f->off, int64_t);
      for (int k = 0; k < f->names->n; k++)
        if (json_object_set_new(obj, f->names->names[k], json_integer(c[k])) != 0)
          return NQ_ENOMEM;
      continue;
    }
    json_t *val = has ? pack_value(f, s) : json_null();
    if (!val || json_object_set_new(obj, f->key, val) != 0) return NQ_ENOMEM;
  }
  return 0;
}

int nq_view_pack_into(const nq_view_t *v, const void *s, json_t *obj) {
  return pack_fields(v, s, obj);
}

json_t *nq_view_pack(const nq_view_t *v, const void *s) {
  json_t *o = json_object();
  if (o && pack_fields(v, s, o) != 0) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* ---- parse ---------------------------------------------------------------------------------- */

typedef struct {
  char *err;
  size_t len;
} perr_t;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(perr_t *e, const char *path, const char *fmt, ...) {
  if (e->err && e->len) {
    int n = snprintf(e->err, e->len, "%s: ", path);
    if (n >= 0 && (size_t)n < e->len) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(e->err + n, e->len - (size_t)n, fmt, ap);
      va_end(ap);
    }
  }
  return NQ_EPROTO;
}

static int parse_obj(const nq_view_t *v, const json_t *j, void *s, const char *path, perr_t *e);

static const char *kind_name(nq_view_kind_t k) {
  switch (k) {
  case NQ_VK_INT:
  case NQ_VK_INTR: return "an integer";
  case NQ_VK_REALR: return "a number";
  case NQ_VK_TEXT: return "a string";
  case NQ_VK_REF: return "an id (integer) or a text (string)";
  case NQ_VK_I32: return "an integer of 32 bits";
  case NQ_VK_U64: return "an integer 0..2^64-1 (a decimal string above 2^63-1)";
  case NQ_VK_CHARS: return "a string";
  case NQ_VK_BOOL: return "true or false";
  case NQ_VK_REAL: return "a number";
  case NQ_VK_STR:
  case NQ_VK_STRN: return "a string";
  case NQ_VK_U128: return "a string of decimal digits below 2^128";
  case NQ_VK_OBJ: return "an object";
  case NQ_VK_ARR: return "an array of objects";
  case NQ_VK_INTS: return "an array of integers";
  case NQ_VK_COUNTS: return "an integer";
  }
  return "?";
}

/* An array field: each element parsed into a fresh array. */
static int parse_array(const nq_view_field_t *f, const json_t *a, void *s, const char *path,
                       perr_t *e) {
  size_t n = json_array_size(a), esize = f->kind == NQ_VK_ARR ? f->sub->size : sizeof(int64_t);
  char *elems = n ? calloc(n, esize) : NULL;
  if (n && !elems) return NQ_ENOMEM;
  *AT(s, f->off, char *) = elems;
  *AT(s, f->count_off, size_t) = n;
  char sub[256];
  for (size_t i = 0; i < n; i++) {
    const json_t *x = json_array_get(a, i);
    snprintf(sub, sizeof sub, "%.200s[%zu]", path, i);
    if (f->kind == NQ_VK_INTS) {
      if (!json_is_integer(x)) return fail(e, sub, "is not an integer");
      ((int64_t *)elems)[i] = (int64_t)json_integer_value(x);
    } else {
      if (!json_is_object(x)) return fail(e, sub, "is not an object");
      int rc = parse_obj(f->sub, x, elems + i * esize, sub, e);
      if (rc) return rc;
    }
  }
  return 0;
}

/* One present, non-null value x of field f. */
static int parse_value(const nq_view_field_t *f, const json_t *x, void *s, const char *path,
                       perr_t *e) {
  void *p = AT(s, f->off, char);
  switch (f->kind) {
  case NQ_VK_INT:
  case NQ_VK_COUNTS:
    if (!json_is_integer(x)) break;
    *(int64_t *)p = (int64_t)json_integer_value(x);
    return 0;
  case NQ_VK_INTR:
    if (!json_is_integer(x)) break;
    *(int64_t *)p = (int64_t)json_integer_value(x);
    if (*(int64_t *)p < f->lo || *(int64_t *)p > f->hi)
      return fail(e, path, "is not in %lld..%lld", (long long)f->lo, (long long)f->hi);
    return 0;
  case NQ_VK_REALR:
    if (!json_is_number(x)) break;
    *(double *)p = json_number_value(x);
    if (!(*(double *)p >= (double)f->lo && *(double *)p <= (double)f->hi))
      return fail(e, path, "is not a number in %lld..%lld", (long long)f->lo, (long long)f->hi);
    return 0;
  case NQ_VK_TEXT:
    if (!json_is_string(x)) break;
    *(const char **)p = json_string_value(x);
    if (!f->check(*(const char **)p)) return fail(e, path, "is not acceptable");
    return 0;
  case NQ_VK_REF:
    if (json_is_integer(x)) ((nq_view_ref_t *)p)->id = (int64_t)json_integer_value(x);
    else if (json_is_string(x)) ((nq_view_ref_t *)p)->text = json_string_value(x);
    else break;
    return 0;
  case NQ_VK_BOOL:
    if (!json_is_boolean(x)) break;
    *(int *)p = json_is_true(x);
    return 0;
  case NQ_VK_I32:
    if (!json_is_integer(x) || json_integer_value(x) < INT_MIN || json_integer_value(x) > INT_MAX)
      break;
    *(int *)p = (int)json_integer_value(x);
    return 0;
  case NQ_VK_U64:
    if (nq_json_u64(x, (uint64_t *)p) != 0) break; /* the one spelling nq_msg_set_u64 writes */
    return 0;
  case NQ_VK_CHARS:
    if (!json_is_string(x)) break;
    if (json_string_length(x) >= (size_t)f->hi)
      return fail(e, path, "is longer than %lld bytes", (long long)f->hi - 1);
    memcpy(p, json_string_value(x), json_string_length(x) + 1);
    return 0;
  case NQ_VK_REAL:
    if (!json_is_number(x)) break;
    *(double *)p = json_number_value(x);
    return 0;
  case NQ_VK_STR:
  case NQ_VK_STRN:
    if (!json_is_string(x)) break;
    *(const char **)p = json_string_value(x);
    return 0;
  case NQ_VK_U128:
    if (!json_is_string(x) || json_string_length(x) > 40 ||
        nq_u128_parse(json_string_value(x), (nq_u128 *)p) != 0)
      break;
    return 0;
  case NQ_VK_OBJ:
    if (!json_is_object(x)) break;
    return parse_obj(f->sub, x, p, path, e);
  case NQ_VK_ARR:
  case NQ_VK_INTS:
    if (!json_is_array(x)) break;
    return parse_array(f, x, s, path, e);
  }
  return fail(e, path, "is not %s", kind_name(f->kind));
}

static int parse_obj(const nq_view_t *v, const json_t *j, void *s, const char *path, perr_t *e) {
  char sub[256];
  int ones = 0, one_fields = 0;
  for (size_t i = 0; i < v->nfields; i++) {
    const nq_view_field_t *f = &v->fields[i];
    if (f->kind == NQ_VK_COUNTS) {
      for (int k = 0; k < f->names->n; k++) {
        const char *key = f->names->names[k];
        snprintf(sub, sizeof sub, "%.200s.%.50s", path, key);
        const json_t *x = json_object_get(j, key);
        /* An optional table takes a key it lacks as 0 (a peer older than a new row). */
        if (!x && f->flag == NQ_VF_OPT) {
          AT(s, f->off, int64_t)[k] = 0;
          continue;
        }
        if (!x) return fail(e, sub, "is missing");
        if (!json_is_integer(x)) return fail(e, sub, "is not an integer");
        AT(s, f->off, int64_t)[k] = (int64_t)json_integer_value(x);
      }
      continue;
    }
    snprintf(sub, sizeof sub, "%.200s.%.50s", path, f->key);
    const json_t *x = json_object_get(j, f->key);
    int zero = f->flag == NQ_VF_ZERO || f->flag == NQ_VF_ONE;
    one_fields += f->flag == NQ_VF_ONE;
    if (!x && (f->flag == NQ_VF_OPT || zero)) continue;
    if (!x) return fail(e, sub, "is missing");
    if (json_is_null(x)) {
      if (f->flag == NQ_VF_NULL || f->kind == NQ_VK_STRN || zero) continue;
      return fail(e, sub, "is null, not %s", kind_name(f->kind));
    }
    if (!zero && f->flag != NQ_VF_REQ) *AT(s, f->has_off, int) = 1;
    int rc = parse_value(f, x, s, sub, e);
    if (rc) return rc;
    ones += f->flag == NQ_VF_ONE && !is_zero(f, s);
  }
  if (one_fields && ones != 1) {
    char keys[200] = "";
    size_t at = 0;
    for (size_t i = 0; i < v->nfields && at < sizeof keys; i++)
      if (v->fields[i].flag == NQ_VF_ONE) {
        int n = snprintf(keys + at, sizeof keys - at, "%s`%s`", at ? ", " : "", v->fields[i].key);
        at += n > 0 ? (size_t)n : 0;
      }
    return fail(e, path, "needs exactly one of %s", keys);
  }
  return 0;
}

int nq_view_parse_at(const nq_view_t *v, const json_t *j, void *s, const char *path, char *err,
                     size_t errlen) {
  perr_t e = {err, errlen};
  memset(s, 0, v->size);
  if (err && errlen) err[0] = '\0';
  int rc = json_is_object(j) ? parse_obj(v, j, s, path, &e) : fail(&e, path, "is not an object");
  if (rc == NQ_ENOMEM && err && errlen) snprintf(err, errlen, "out of memory");
  if (rc) nq_view_free(v, s);
  return rc;
}

int nq_view_parse(const nq_view_t *v, const json_t *j, void *s, char *err, size_t errlen) {
  return nq_view_parse_at(v, j, s, v->name, err, errlen);
}

/* ---- free ----------------------------------------------------------------------------------- */

static void free_fields(const nq_view_t *v, void *s) {
  for (size_t i = 0; i < v->nfields; i++) {
    const nq_view_field_t *f = &v->fields[i];
    if (f->kind == NQ_VK_OBJ) {
      free_fields(f->sub, AT(s, f->off, char));
    } else if (f->kind == NQ_VK_ARR || f->kind == NQ_VK_INTS) {
      char *elems = *AT(s, f->off, char *);
      size_t n = *AT(s, f->count_off, size_t);
      for (size_t k = 0; f->kind == NQ_VK_ARR && elems && k < n; k++)
        free_fields(f->sub, elems + k * f->sub->size);
      free(elems);
    }
  }
}

void nq_view_free(const nq_view_t *v, void *s) {
  if (!s) return;
  free_fields(v, s);
  memset(s, 0, v->size);
}
