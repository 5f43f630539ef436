/* nq: typed views -- a JSON object that crosses a boundary (the admin commands' requests and
 * replies, the public status behind the page, the client's status file) as a C struct with one
 * pack and one parse, the way nq/proto.h treats the wire's messages (docs/style.md, "Options and
 * messages"). The one JSON struct codec of the project: a program's own JSON objects are views.
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
 *   INTR  int64_t m                      integer in SUB = (lo, hi), both included
 *   REALR double m                       number in SUB = (lo, hi), both included
 *   TEXT  const char *m                  string that SUB(m) (int (*)(const char *)) accepts
 *   REF   nq_view_ref_t m                an id (integer) or a text (string): one thing, named
 *                                        either way (a unit by its id or its text)
 *   I32   int m                          integer INT_MIN..INT_MAX
 *   U64   uint64_t m                     integer, or above INT64_MAX a string of decimal digits
 *                                        (nq_msg_set_u64's form, nq/json.h)
 *   CHARS char m[SUB]                    string of at most SUB - 1 bytes, copied into m (a
 *                                        struct that outlives its JSON: a file's record)
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
 *         OPT: absent when has_m is 0 (older servers, keys a reply has only sometimes);
 *         ZERO: absent when the member is 0 (false, NULL); absent or null parses as 0 -- a
 *         request's optional argument whose default is 0;
 *         ONE: as ZERO, and exactly one of the view's ONE fields is present (not 0, not false):
 *         a request that names its target one of several ways.
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
  NQ_VK_INTR,
  NQ_VK_REALR,
  NQ_VK_TEXT,
  NQ_VK_REF,
  NQ_VK_I32,
  NQ_VK_U64,
  NQ_VK_CHARS,
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

typedef enum { NQ_VF_REQ, NQ_VF_NULL, NQ_VF_OPT, NQ_VF_ZERO, NQ_VF_ONE } nq_view_flag_t;

/* A REF member: text when not NULL, else id. */
typedef struct nq_view_ref_s {
  int64_t id;
  const char *text;
} nq_view_ref_t;

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
  int64_t lo, hi;               /* INTR, REALR: the bounds; CHARS: hi is the array's size */
  int (*check)(const char *);   /* TEXT: 1 when the string is acceptable */
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
/* The same with the errors' paths starting at `path` instead of the view's name. */
int nq_view_parse_at(const nq_view_t *v, const json_t *j, void *s, const char *path, char *err,
                     size_t errlen);
/* The fields of v from s into the object obj (a message that has more keys): 0 or NQ_ENOMEM
 * (or NQ_EINVAL when a STR member is NULL). */
int nq_view_pack_into(const nq_view_t *v, const void *s, json_t *obj);
/* Release what a parse allocated (its arrays, recursively) and zero the struct. */
void nq_view_free(const nq_view_t *v, void *s);

/* ---- declaring views ---------------------------------------------------------------------- */

#define NQV_M_INT(m, sub) int64_t m;
#define NQV_M_INTR(m, sub) int64_t m;
#define NQV_M_REALR(m, sub) double m;
#define NQV_M_TEXT(m, sub) const char *m;
#define NQV_M_REF(m, sub) nq_view_ref_t m;
#define NQV_M_I32(m, sub) int m;
#define NQV_M_U64(m, sub) uint64_t m;
#define NQV_M_CHARS(m, sub) char m[sub];
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
#define NQV_H_ZERO(m)
#define NQV_H_ONE(m)
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
#define NQV_HAS_ZERO(T, m) 0
#define NQV_HAS_ONE(T, m) 0
#define NQV_CNT_INT(T, m) 0
#define NQV_CNT_INTR(T, m) 0
#define NQV_CNT_REALR(T, m) 0
#define NQV_CNT_TEXT(T, m) 0
#define NQV_CNT_REF(T, m) 0
#define NQV_CNT_I32(T, m) 0
#define NQV_CNT_U64(T, m) 0
#define NQV_CNT_CHARS(T, m) 0
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
#define NQV_SUB_INTR(sub) NULL
#define NQV_SUB_REALR(sub) NULL
#define NQV_SUB_TEXT(sub) NULL
#define NQV_SUB_REF(sub) NULL
#define NQV_SUB_I32(sub) NULL
#define NQV_SUB_U64(sub) NULL
#define NQV_SUB_CHARS(sub) NULL
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
#define NQV_NAMES_INTR(sub) NULL
#define NQV_NAMES_REALR(sub) NULL
#define NQV_NAMES_TEXT(sub) NULL
#define NQV_NAMES_REF(sub) NULL
#define NQV_NAMES_I32(sub) NULL
#define NQV_NAMES_U64(sub) NULL
#define NQV_NAMES_CHARS(sub) NULL
#define NQV_NAMES_BOOL(sub) NULL
#define NQV_NAMES_REAL(sub) NULL
#define NQV_NAMES_STR(sub) NULL
#define NQV_NAMES_STRN(sub) NULL
#define NQV_NAMES_U128(sub) NULL
#define NQV_NAMES_OBJ(sub) NULL
#define NQV_NAMES_ARR(sub) NULL
#define NQV_NAMES_INTS(sub) NULL
#define NQV_NAMES_COUNTS(sub) &sub##_view_names
/* The bounds of INTR and REALR (SUB is "(lo, hi)"), the check of TEXT (SUB is the function). */
#define NQV_FIRST(a, b) a
#define NQV_SECOND(a, b) b
#define NQV_LO_INTR(sub) NQV_FIRST sub
#define NQV_HI_INTR(sub) NQV_SECOND sub
#define NQV_LO_REALR(sub) NQV_FIRST sub
#define NQV_HI_REALR(sub) NQV_SECOND sub
#define NQV_CHECK_TEXT(sub) sub
#define NQV_LO_NONE(sub) 0
#define NQV_HI_NONE(sub) 0
#define NQV_CHECK_NONE(sub) NULL
#define NQV_LO_INT NQV_LO_NONE
#define NQV_HI_INT NQV_HI_NONE
#define NQV_CHECK_INT NQV_CHECK_NONE
#define NQV_LO_BOOL NQV_LO_NONE
#define NQV_HI_BOOL NQV_HI_NONE
#define NQV_CHECK_BOOL NQV_CHECK_NONE
#define NQV_LO_REAL NQV_LO_NONE
#define NQV_HI_REAL NQV_HI_NONE
#define NQV_CHECK_REAL NQV_CHECK_NONE
#define NQV_LO_STR NQV_LO_NONE
#define NQV_HI_STR NQV_HI_NONE
#define NQV_CHECK_STR NQV_CHECK_NONE
#define NQV_LO_STRN NQV_LO_NONE
#define NQV_HI_STRN NQV_HI_NONE
#define NQV_CHECK_STRN NQV_CHECK_NONE
#define NQV_LO_U128 NQV_LO_NONE
#define NQV_HI_U128 NQV_HI_NONE
#define NQV_CHECK_U128 NQV_CHECK_NONE
#define NQV_LO_OBJ NQV_LO_NONE
#define NQV_HI_OBJ NQV_HI_NONE
#define NQV_CHECK_OBJ NQV_CHECK_NONE
#define NQV_LO_ARR NQV_LO_NONE
#define NQV_HI_ARR NQV_HI_NONE
#define NQV_CHECK_ARR NQV_CHECK_NONE
#define NQV_LO_INTS NQV_LO_NONE
#define NQV_HI_INTS NQV_HI_NONE
#define NQV_CHECK_INTS NQV_CHECK_NONE
#define NQV_LO_COUNTS NQV_LO_NONE
#define NQV_HI_COUNTS NQV_HI_NONE
#define NQV_CHECK_COUNTS NQV_CHECK_NONE
#define NQV_CHECK_INTR NQV_CHECK_NONE
#define NQV_CHECK_REALR NQV_CHECK_NONE
#define NQV_LO_TEXT NQV_LO_NONE
#define NQV_HI_TEXT NQV_HI_NONE
#define NQV_LO_REF NQV_LO_NONE
#define NQV_HI_REF NQV_HI_NONE
#define NQV_CHECK_REF NQV_CHECK_NONE
#define NQV_LO_I32 NQV_LO_NONE
#define NQV_HI_I32 NQV_HI_NONE
#define NQV_CHECK_I32 NQV_CHECK_NONE
#define NQV_LO_U64 NQV_LO_NONE
#define NQV_HI_U64 NQV_HI_NONE
#define NQV_CHECK_U64 NQV_CHECK_NONE
#define NQV_LO_CHARS NQV_LO_NONE
#define NQV_HI_CHARS(sub) (sub)
#define NQV_CHECK_CHARS NQV_CHECK_NONE
/* NQV_T is the struct type of the view being defined. */
#define NQV_ENTRY(kind, m, flag, sub)                                                            \
  {#m,                                                                                           \
   NQ_VK_##kind,                                                                                 \
   NQ_VF_##flag,                                                                                 \
   offsetof(NQV_T, m),                                                                           \
   NQV_HAS_##flag(NQV_T, m),                                                                     \
   NQV_CNT_##kind(NQV_T, m),                                                                     \
   NQV_SUB_##kind(sub),                                                                          \
   NQV_NAMES_##kind(sub),                                                                        \
   NQV_LO_##kind(sub),                                                                           \
   NQV_HI_##kind(sub),                                                                           \
   NQV_CHECK_##kind(sub)},
#define NQ_VIEW_DEFINE(name, FIELDS)                                                             \
  static const nq_view_field_t nq_view_##name##_fields[] = {FIELDS(NQV_ENTRY)};                  \
  const nq_view_t nq_view_##name##_desc = {                                                      \
      #name, sizeof(nq_view_##name##_t), nq_view_##name##_fields,                                \
      sizeof nq_view_##name##_fields / sizeof nq_view_##name##_fields[0]};

#endif
