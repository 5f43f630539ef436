/* nq: typed views -- a JSON object that crosses a boundary (the admin API's replies to nq-admin,
 * the public status behind the page) as a C struct with one pack and one parse, the way
 * nq/proto.h treats the wire's messages (docs/style.md, "Options and messages").
 *
 * A view is declared once, as an X-macro list of its fields in JSON key order:
 *
 *   #define NQ_VIEW_OWNER(F) F(STR, name, REQ, 0) F(INT, id, REQ, 0) F(BOOL, banned, REQ, 0)
 *   NQ_VIEW_STRUCT(owner, NQ_VIEW_OWNER)            -> typedef struct {...} nq_view_owner_t
 *   NQ_VIEW_DEFINE(owner, NQ_VIEW_OWNER) (one .c)   -> const nq_view_t nq_view_owner_desc
 *
 * and the one generic pack (nq_view_pack: struct -> JSON) and parse (nq_view_parse: JSON ->
 * struct) walk that table, so a key is written and read in exactly one place. Each entry is
 * F(KIND, member, FLAG, SUB):
 *
 *   KIND  C member                       JSON
 *   INT   int64_t m                      integer
 *   BOOL  int m                          true / false
 *   REAL  double m                       number (packed as a real)
 *   STR   const char *m                  string (never null)
 *   STRN  const char *m                  string, or null when m is NULL
 *   U128  nq_u128 m                      string of decimal digits (values above 64 bits)
 *   OBJ   nq_view_SUB_t m                object of view SUB
 *   ARR   nq_view_SUB_t *m; size_t n_m   array of objects of view SUB
 *   INTS  int64_t *m; size_t n_m         array of integers
 *   COUNTS int64_t m[SUB##_N]            one integer key per name of the SUB enum table (inline)
 *
 *   FLAG  REQ: always present, never null (a missing key or a null is a parse error);
 *         NULL: present, null when the member has_m is 0;
 *         OPT: absent when has_m is 0 (older servers, keys a reply has only sometimes).
 *
 * Parse never yields a silent 0 or "": a missing key, a null where none may be, or a wrong JSON
 * type is NQ_EPROTO with a message naming the field by its path ("status.progress.percent: is
 * missing"). Strings of a parsed struct point into the JSON and live as long as it does; arrays
 * are allocated and released by nq_view_free (nothing else). In a struct given to pack, every
 * pointer is the caller's.
 */
#ifndef NQ_VIEW_H
#define NQ_VIEW_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "nq/solver.h"

typedef enum {
  NQ_VK_INT,
  NQ_VK_BOOL,
  NQ_VK_REAL,
  NQ_VK_STR,
  NQ_VK_STRN,
  NQ_VK_U128,
  NQ_VK_OBJ,
  NQ_VK_ARR,
  NQ_VK_INTS,
  NQ_VK_COUNTS
} nq_view_kind_t;

typedef enum { NQ_VF_REQ, NQ_VF_NULL, NQ_VF_OPT } nq_view_flag_t;

struct nq_view_s;

/* The names of an enum's values, in value order (an X-macro table's name column). */
typedef struct nq_view_names_s {
  const char *const *names;
  int n;
} nq_view_names_t;

typedef struct nq_view_field_s {
  const char *key;
  nq_view_kind_t kind;
  nq_view_flag_t flag;
  size_t off;                   /* the member */
  size_t has_off;               /* NULL / OPT: the int has_<member> */
  size_t count_off;             /* ARR / INTS: the size_t n_<member> */
  const struct nq_view_s *sub;  /* OBJ / ARR: the element's view */
  const nq_view_names_t *names; /* COUNTS: the keys */
} nq_view_field_t;

typedef struct nq_view_s {
  const char *name; /* the path prefix of parse errors */
  size_t size;      /* sizeof the struct (array elements) */
  const nq_view_field_t *fields;
  size_t nfields;
} nq_view_t;

/* A new object of view v from the struct at s; NULL when memory runs out or a STR member is
 * NULL. */
json_t *nq_view_pack(const nq_view_t *v, const void *s);
/* Fill the struct at s (zeroed first) from the object j: 0, or NQ_EPROTO (err names the field
 * and what is wrong with it; s is then freed and zeroed) or NQ_ENOMEM. On success release it
 * with nq_view_free. */
int nq_view_parse(const nq_view_t *v, const json_t *j, void *s, char *err, size_t errlen);
/* Release what a parse allocated (its arrays, recursively) and zero the struct. */
void nq_view_free(const nq_view_t *v, void *s);

/* ---- declaring views ---------------------------------------------------------------------- */

#define NQV_M_INT(m, sub) int64_t m;
#define NQV_M_BOOL(m, sub) int m;
#define NQV_M_REAL(m, sub) double m;
#define NQV_M_STR(m, sub) const char *m;
#define NQV_M_STRN(m, sub) const char *m;
#define NQV_M_U128(m, sub) nq_u128 m;
#define NQV_M_OBJ(m, sub) nq_view_##sub##_t m;
#define NQV_M_ARR(m, sub)                                                                        \
  nq_view_##sub##_t *m;                                                                          \
  size_t n_##m;
#define NQV_M_INTS(m, sub)                                                                       \
  int64_t *m;                                                                                    \
  size_t n_##m;
#define NQV_M_COUNTS(m, sub) int64_t m[sub##_N];
#define NQV_H_REQ(m)
#define NQV_H_NULL(m) int has_##m;
#define NQV_H_OPT(m) int has_##m;
#define NQV_MEMBER(kind, m, flag, sub) NQV_M_##kind(m, sub) NQV_H_##flag(m)

/* typedef struct nq_view_NAME_s { members } nq_view_NAME_t; and the typed entry points. */
#define NQ_VIEW_STRUCT(name, FIELDS)                                                             \
  typedef struct nq_view_##name##_s {                                                            \
    FIELDS(NQV_MEMBER)                                                                           \
  } nq_view_##name##_t;                                                                          \
  extern const nq_view_t nq_view_##name##_desc;                                                  \
  static inline json_t *nq_view_##name##_pack(const nq_view_##name##_t *s) {                     \
    return nq_view_pack(&nq_view_##name##_desc, s);                                              \
  }                                                                                              \
  static inline int nq_view_##name##_parse(const json_t *j, nq_view_##name##_t *s, char *err,    \
                                           size_t errlen) {                                      \
    return nq_view_parse(&nq_view_##name##_desc, j, s, err, errlen);                             \
  }                                                                                              \
  static inline void nq_view_##name##_free(nq_view_##name##_t *s) {                              \
    nq_view_free(&nq_view_##name##_desc, s);                                                     \
  }

/* The field table, in one .c file, with NQV_T defined as the view's struct type:
 *   #define NQV_T nq_view_owner_t
 *   NQ_VIEW_DEFINE(owner, NQ_VIEW_OWNER)
 *   #undef NQV_T */
#define NQV_HAS_REQ(T, m) 0
#define NQV_HAS_NULL(T, m) offsetof(T, has_##m)
#define NQV_HAS_OPT(T, m) offsetof(T, has_##m)
#define NQV_CNT_INT(T, m) 0
#define NQV_CNT_BOOL(T, m) 0
#define NQV_CNT_REAL(T, m) 0
#define NQV_CNT_STR(T, m) 0
#define NQV_CNT_STRN(T, m) 0
#define NQV_CNT_U128(T, m) 0
#define NQV_CNT_OBJ(T, m) 0
#define NQV_CNT_ARR(T, m) offsetof(T, n_##m)
#define NQV_CNT_INTS(T, m) offsetof(T, n_##m)
#define NQV_CNT_COUNTS(T, m) 0
#define NQV_SUB_INT(sub) NULL
#define NQV_SUB_BOOL(sub) NULL
#define NQV_SUB_REAL(sub) NULL
#define NQV_SUB_STR(sub) NULL
#define NQV_SUB_STRN(sub) NULL
#define NQV_SUB_U128(sub) NULL
#define NQV_SUB_OBJ(sub) &nq_view_##sub##_desc
#define NQV_SUB_ARR(sub) &nq_view_##sub##_desc
#define NQV_SUB_INTS(sub) NULL
#define NQV_SUB_COUNTS(sub) NULL
#define NQV_NAMES_INT(sub) NULL
#define NQV_NAMES_BOOL(sub) NULL
#define NQV_NAMES_REAL(sub) NULL
#define NQV_NAMES_STR(sub) NULL
#define NQV_NAMES_STRN(sub) NULL
#define NQV_NAMES_U128(sub) NULL
#define NQV_NAMES_OBJ(sub) NULL
#define NQV_NAMES_ARR(sub) NULL
#define NQV_NAMES_INTS(sub) NULL
#define NQV_NAMES_COUNTS(sub) &sub##_view_names
/* NQV_T is the struct type of the view being defined. */
#define NQV_ENTRY(kind, m, flag, sub)                                                            \
  {#m,                                                                                           \
   NQ_VK_##kind,                                                                                 \
   NQ_VF_##flag,                                                                                 \
   offsetof(NQV_T, m),                                                                           \
   NQV_HAS_##flag(NQV_T, m),                                                                     \
   NQV_CNT_##kind(NQV_T, m),                                                                     \
   NQV_SUB_##kind(sub),                                                                          \
   NQV_NAMES_##kind(sub)},
#define NQ_VIEW_DEFINE(name, FIELDS)                                                             \
  static const nq_view_field_t nq_view_##name##_fields[] = {FIELDS(NQV_ENTRY)};                  \
  const nq_view_t nq_view_##name##_desc = {                                                      \
      #name, sizeof(nq_view_##name##_t), nq_view_##name##_fields,                                \
      sizeof nq_view_##name##_fields / sizeof nq_view_##name##_fields[0]};

#endif
