/* nq: the wire contract -- value structs <-> JSON objects for every message (see proto.h and
 * docs/protocol.md). The checks here are the protocol's; nothing else parses a message. */
#include "nq/proto.h"
#include "nq/hash.h"
#include "nq/nq.h"
#include "nq/unit.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- names ----------------------------------------------------------------------------------- */

/* The name columns of the tables in nq/proto.h. */
#define NAME_ONE(e, name) name,
static const char *const type_names[NQ_MSG_COUNT] = {NQ_MSG_TYPE_MAP(NAME_ONE)};
static const char *const err_names[NQ_ERR_COUNT] = {NQ_ERRCODE_MAP(NAME_ONE)};
static const char *const nowork_names[] = {NQ_NOWORK_MAP(NAME_ONE)};
static const char *const ack_names[] = {NQ_ACK_MAP(NAME_ONE)};
static const char *const job_state_names[] = {NQ_JOB_STATE_MAP(NAME_ONE)};
static const char *const signup_state_names[] = {NQ_SIGNUP_STATE_MAP(NAME_ONE)};
#undef NAME_ONE
/* The name column of the admin commands' rows (nq/admin_cmd.h): the wire's name is the C one. */
#define ADMIN_NAME_ONE(e, name, req, fn, reply) #name,
static const char *const admin_names[NQ_ADMIN_NCMDS] = {NQ_ADMIN_CMD_MAP(ADMIN_NAME_ONE)};
#undef ADMIN_NAME_ONE

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* The index of name in a table of n names, or -1. */
static int lookup(const char *const *names, int n, const char *name) {
  return nq_name_index(names, n, name);
}

const char *nq_msg_type_name(nq_msg_type_t t) {
  return (unsigned)t < NQ_MSG_COUNT ? type_names[t] : "";
}

nq_msg_type_t nq_msg_type(const json_t *msg, const char **name) {
  const char *s = NULL;
  if (nq_msg_get_str(msg, "type", &s) != 0) s = NULL;
  if (name) *name = s;
  int i = lookup(type_names, NQ_MSG_COUNT, s);
  return i < 0 ? NQ_MSG_NONE : (nq_msg_type_t)i;
}

const char *nq_errcode_name(nq_errcode_t c) {
  return (unsigned)c < NQ_ERR_COUNT ? err_names[c] : "";
}

nq_errcode_t nq_errcode_parse(const char *name) {
  int i = lookup(err_names, NQ_ERR_COUNT, name);
  return i <= NQ_ERR_NONE ? NQ_ERR_OTHER : (nq_errcode_t)i;
}

const char *nq_nowork_reason_name(nq_nowork_reason_t r) {
  return (unsigned)r < (unsigned)NELEM(nowork_names) ? nowork_names[r] : "";
}

const char *nq_ack_status_name(nq_ack_status_t s) {
  return (unsigned)s < (unsigned)NELEM(ack_names) ? ack_names[s] : "";
}

const char *nq_admin_cmd_name(nq_admin_cmd_t c) {
  return (unsigned)c < NQ_ADMIN_NCMDS ? admin_names[c] : "";
}

int nq_proto_name_valid(const char *name) {
  size_t n = name ? strlen(name) : 0;
  if (n < 1 || n > NQ_PROTO_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
          c == '.' || c == '_' || c == '-'))
      return 0;
  }
  return 1;
}

/* ---- building and refusing ------------------------------------------------------------------- */

/* Set key to a new value, remembering the first failure (allocation) in *ok. */
static void put(json_t *o, const char *key, json_t *v, int *ok) {
  if (!v || json_object_set_new(o, key, v) != 0) *ok = 0;
}

static void put_u64(json_t *o, const char *key, uint64_t v, int *ok) {
  if (nq_msg_set_u64(o, key, v) != 0) *ok = 0;
}

/* A new {"type": t} object; *ok is 0 if it could not be made. */
static json_t *msg_new(nq_msg_type_t t, int *ok) {
  json_t *o = json_object();
  *ok = o != NULL;
  if (o) put(o, "type", json_string(type_names[t]), ok);
  return o;
}

/* The object, or NULL (released) if any part of it failed. */
static json_t *msg_done(json_t *o, int ok) {
  if (ok) return o;
  json_decref(o);
  return NULL;
}

#if defined(__GNUC__)
__attribute__((format(NQ_PRINTF, 5, 6)))
#endif
static int refuse(nq_proto_err_t *err, nq_errcode_t code, int fatal, int64_t id, const char *fmt,
                  ...) {
  if (err) {
    err->code = code;
    err->fatal = fatal;
    err->id = id;
    err->min_version = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return NQ_EPROTO;
}

/* The fatal bad_message most refusals are. */
#define BAD(...) refuse(err, NQ_ERR_BAD_MESSAGE, 1, -1, __VA_ARGS__)

/* "1" or "1..2": the versions this build speaks, for messages. */
static const char *versions_text(void) {
  static char buf[32];
  if (NQ_PROTO_VERSION_MIN == NQ_PROTO_VERSION_MAX)
    snprintf(buf, sizeof buf, "%d", NQ_PROTO_VERSION_MAX);
  else
    snprintf(buf, sizeof buf, "%d..%d", NQ_PROTO_VERSION_MIN, NQ_PROTO_VERSION_MAX);
  return buf;
}

static int version_ok(int64_t v) {
  return v >= NQ_PROTO_VERSION_MIN && v <= NQ_PROTO_VERSION_MAX;
}

/* ---- hello / welcome ------------------------------------------------------------------------- */

json_t *nq_hello_pack(const nq_hello_t *h) {
  int ok;
  json_t *o = msg_new(NQ_MSG_HELLO, &ok);
  if (!o) return NULL;
  int64_t lo = h->v_min ? h->v_min : NQ_PROTO_VERSION_MIN;
  int64_t hi = h->v_max ? h->v_max : NQ_PROTO_VERSION_MAX;
  put(o, "v", json_integer(h->v ? h->v : hi), &ok);
  put(o, "v_min", json_integer(lo), &ok);
  put(o, "v_max", json_integer(hi), &ok);
  put(o, "role", json_string(h->role == NQ_ROLE_ADMIN ? "admin" : "client"), &ok);
  if (h->token) put(o, "token", json_string(h->token), &ok);
  if (h->enrol) put(o, "enrol", json_string(h->enrol), &ok);
  if (h->name) put(o, "name", json_string(h->name), &ok);
  if (h->solver) put(o, "solver", json_string(h->solver), &ok);
  if (h->threads) put(o, "threads", json_integer(h->threads), &ok);
  if (h->software) put(o, "software", json_string(h->software), &ok);
  if (h->public_name) put(o, "public_name", json_string(h->public_name), &ok);
  if (h->wait) put(o, "wait", json_true(), &ok);
  if (h->kernel) put(o, "kernel", json_string(h->kernel), &ok);
  return msg_done(o, ok);
}

/* The version to speak with a peer that speaks lo..hi: the highest both do, or the refusal. */
static int negotiate(int64_t lo, int64_t hi, int64_t *speak, nq_proto_err_t *err) {
  if (hi < NQ_PROTO_VERSION_MIN) {
    refuse(err, NQ_ERR_UPGRADE_REQUIRED, 1, -1,
           "this server needs protocol version %d or newer; the client speaks only %lld..%lld: "
           "upgrade the client", NQ_PROTO_VERSION_MIN, (long long)lo, (long long)hi);
    if (err) err->min_version = NQ_PROTO_VERSION_MIN;
    return NQ_EPROTO;
  }
  if (lo > NQ_PROTO_VERSION_MAX)
    return refuse(err, NQ_ERR_VERSION, 1, -1,
                  "protocol versions %lld..%lld not supported; this server speaks %s (it is older "
                  "than the client)", (long long)lo, (long long)hi, versions_text());
  *speak = hi < NQ_PROTO_VERSION_MAX ? hi : NQ_PROTO_VERSION_MAX;
  return 0;
}

/* 1 if s is 1..max printable ASCII characters. */
static int text_valid(const char *s, size_t max) {
  size_t n = strlen(s);
  if (n < 1 || n > max) return 0;
  for (; *s; s++)
    if (*s < 0x20 || *s > 0x7e) return 0;
  return 1;
}

int nq_hello_parse(const json_t *m, nq_hello_t *h, nq_proto_err_t *err) {
  memset(h, 0, sizeof *h);
  if (nq_msg_get_int(m, "v", 0, NQ_PROTO_V_LIMIT, &h->v) != 0 ||
      nq_msg_opt_int(m, "v_min", 0, NQ_PROTO_V_LIMIT, h->v, &h->v_min) != 0 ||
      nq_msg_opt_int(m, "v_max", 0, NQ_PROTO_V_LIMIT, h->v, &h->v_max) != 0 ||
      h->v_min > h->v || h->v > h->v_max)
    return BAD("hello: v, v_min, v_max must be integers 0..%d with v_min <= v <= v_max",
               NQ_PROTO_V_LIMIT);
  if (negotiate(h->v_min, h->v_max, &h->speak, err) != 0) return NQ_EPROTO;
  const char *role = NULL, *bad = NULL;
  int64_t threads = 0;
  if (nq_msg_get_str(m, "role", &role) || (strcmp(role, "client") && strcmp(role, "admin")))
    bad = "role must be \"client\" or \"admin\"";
  else if (nq_msg_opt_str(m, "token", NULL, &h->token))
    bad = "token must be a string";
  else if (nq_msg_opt_str(m, "enrol", NULL, &h->enrol))
    bad = "enrol must be a string";
  else if (nq_msg_opt_str(m, "name", NULL, &h->name))
    bad = "name must be a string";
  else if (nq_msg_opt_str(m, "solver", NULL, &h->solver) ||
           (h->solver && (!*h->solver || strlen(h->solver) > NQ_PROTO_SOLVER_MAX)))
    bad = "solver must be a string of 1..64 characters";
  else if (nq_msg_opt_str(m, "software", NULL, &h->software) ||
           (h->software && !text_valid(h->software, NQ_PROTO_SOFTWARE_MAX)))
    bad = "software must be 1..64 printable ASCII characters";
  else if (nq_msg_opt_int(m, "threads", 1, NQ_PROTO_THREADS_MAX, 0, &threads))
    bad = "threads must be an integer 1..1024";
  if (!bad) {
    h->role = strcmp(role, "admin") ? NQ_ROLE_CLIENT : NQ_ROLE_ADMIN;
    h->threads = (int)threads;
    if (h->role == NQ_ROLE_ADMIN && (h->enrol || !h->token))
      bad = "role admin needs token (and no enrol)";
    else if (h->role == NQ_ROLE_CLIENT && (h->token != NULL) == (h->enrol != NULL))
      bad = "role client needs exactly one of token and enrol";
    else if (h->enrol && !nq_proto_name_valid(h->name))
      bad = "enrol needs a name of 1..64 characters [A-Za-z0-9._-]";
    else if (nq_msg_opt_str(m, "public_name", NULL, &h->public_name) ||
             (h->public_name && !nq_proto_name_valid(h->public_name)))
      bad = "public_name must be a name of 1..64 characters [A-Za-z0-9._-]";
    else if (json_object_get(m, "wait") && !json_is_boolean(json_object_get(m, "wait")))
      bad = "wait must be a boolean";
    else if (nq_msg_opt_str(m, "kernel", NULL, &h->kernel) ||
             (h->kernel && !text_valid(h->kernel, NQ_PROTO_BACKEND_MAX)))
      bad = "kernel must be 1..128 printable ASCII characters";
    h->wait = json_is_true(json_object_get(m, "wait"));
  }
  if (bad) return BAD("hello: %s", bad);
  return 0;
}

/* ---- news ----------------------------------------------------------------------------------- */

static json_t *news_items_pack(const nq_news_t *n) {
  json_t *a = json_array();
  int ok = a != NULL;
  for (int i = 0; ok && i < n->n && i < NQ_PROTO_NEWS_MAX; i++) {
    json_t *o = json_object();
    ok = o && json_array_append_new(a, o) == 0;
    if (!ok) break;
    put(o, "id", json_integer(n->items[i].id), &ok);
    put(o, "at", json_integer(n->items[i].at), &ok);
    put(o, "text", n->items[i].text ? json_string(n->items[i].text) : NULL, &ok);
  }
  if (!ok) {
    json_decref(a);
    return NULL;
  }
  return a;
}

int nq_proto_news_text_valid(const char *t) {
  size_t n = strlen(t);
  if (n < 1 || n > NQ_PROTO_NEWS_TEXT_MAX) return 0;
  for (; *t; t++)
    if ((unsigned char)*t < 0x20 || *t == 0x7f) return 0;
  return 1;
}

/* items (may be NULL: none) into *n; -1 when malformed. */
static int news_items_parse(const json_t *items, nq_news_t *n) {
  memset(n, 0, sizeof *n);
  if (!items) return 0;
  if (!json_is_array(items) || json_array_size(items) > NQ_PROTO_NEWS_MAX) return -1;
  for (size_t i = 0; i < json_array_size(items); i++) {
    const json_t *o = json_array_get(items, i);
    nq_news_item_t *it = &n->items[i];
    if (!json_is_object(o) || nq_msg_get_int(o, "id", 1, INT64_MAX, &it->id) ||
        nq_msg_get_int(o, "at", 0, INT64_MAX, &it->at) || nq_msg_get_str(o, "text", &it->text) ||
        !nq_proto_news_text_valid(it->text))
      return -1;
  }
  n->n = (int)json_array_size(items);
  return 0;
}

json_t *nq_news_pack(const nq_news_t *n) {
  int ok;
  json_t *o = msg_new(NQ_MSG_NEWS, &ok);
  if (o) put(o, "items", news_items_pack(n), &ok);
  return msg_done(o, ok);
}

int nq_news_parse(const json_t *m, nq_news_t *n, nq_proto_err_t *err) {
  const json_t *items = json_object_get(m, "items");
  if (!items || news_items_parse(items, n) != 0)
    return BAD("news: items must be an array of at most %d {id >= 1, at, text of 1..%d bytes "
               "without control characters}", NQ_PROTO_NEWS_MAX, NQ_PROTO_NEWS_TEXT_MAX);
  return 0;
}

json_t *nq_welcome_pack(const nq_welcome_t *w) {
  int ok;
  json_t *o = msg_new(NQ_MSG_WELCOME, &ok);
  if (!o) return NULL;
  json_t *job = json_object();
  put(o, "v", json_integer(w->v), &ok);
  put(o, "job", job, &ok);
  if (job) {
    put(job, "n", json_integer(w->job_n), &ok);
    put(job, "depth", json_integer(w->job_depth), &ok);
    put(job, "state", json_string(job_state_names[(unsigned)w->job_state < NELEM(job_state_names)
                                                      ? w->job_state : NQ_JOB_RUNNING]), &ok);
  }
  put(o, "max_outstanding", json_integer(w->max_outstanding), &ok);
  put(o, "progress_interval", json_integer(w->progress_interval), &ok);
  if (w->client) put(o, "client", json_string(w->client), &ok);
  if (w->token) put(o, "token", json_string(w->token), &ok);
  if (w->shown_as) put(o, "shown_as", json_string(w->shown_as), &ok);
  if (w->page) put(o, "page", json_string(w->page), &ok);
  if (w->credit) put(o, "credit", json_string(w->credit), &ok);
  if (w->evidence_key) put(o, "evidence_key", json_string(w->evidence_key), &ok);
  if (w->news.n > 0) put(o, "news", news_items_pack(&w->news), &ok);
  return msg_done(o, ok);
}

int nq_welcome_parse(const json_t *m, nq_welcome_t *w, nq_proto_err_t *err) {
  memset(w, 0, sizeof *w);
  if (nq_msg_get_int(m, "v", INT64_MIN, INT64_MAX, &w->v) != 0)
    return BAD("welcome: field v must be an integer");
  if (!version_ok(w->v))
    return refuse(err, NQ_ERR_VERSION, 1, -1,
                  "the server speaks protocol version %lld; this side speaks %s",
                  (long long)w->v, versions_text());
  const json_t *job = json_object_get(m, "job");
  const char *state = NULL;
  int64_t n, depth, mo, pi;
  if (!json_is_object(job) || nq_msg_get_int(job, "n", 1, NQ_MAX_N, &n) ||
      nq_msg_get_int(job, "depth", 1, NQ_MAX_N, &depth) || nq_msg_get_str(job, "state", &state) ||
      lookup(job_state_names, NELEM(job_state_names), state) < 0)
    return BAD("welcome: job must be {n, depth, state \"running\"|\"done\"|\"waiting\"}");
  if (nq_msg_get_int(m, "max_outstanding", 1, NQ_PROTO_OUTSTANDING_MAX, &mo) ||
      nq_msg_get_int(m, "progress_interval", 1, INT32_MAX, &pi))
    return BAD("welcome: max_outstanding must be 1..256 and progress_interval >= 1");
  if (nq_msg_opt_str(m, "client", NULL, &w->client) || nq_msg_opt_str(m, "token", NULL, &w->token))
    return BAD("welcome: client and token must be strings");
  nq_u128 credit;
  if (nq_msg_opt_str(m, "shown_as", NULL, &w->shown_as) ||
      (w->shown_as && !text_valid(w->shown_as, NQ_PROTO_SHOWN_MAX)) ||
      nq_msg_opt_str(m, "page", NULL, &w->page) ||
      (w->page && !text_valid(w->page, NQ_PROTO_PAGE_MAX)) ||
      nq_msg_opt_str(m, "credit", NULL, &w->credit) ||
      (w->credit && nq_u128_parse(w->credit, &credit) != 0))
    return BAD("welcome: shown_as (1..88) and page (1..255) must be printable ASCII, credit a "
               "decimal string");
  unsigned char fpr[32];
  if (nq_msg_opt_str(m, "evidence_key", NULL, &w->evidence_key) ||
      (w->evidence_key && nq_hex_decode(w->evidence_key, sizeof fpr, fpr) != 0))
    return BAD("welcome: evidence_key must be 64 lowercase hex digits");
  if (news_items_parse(json_object_get(m, "news"), &w->news) != 0)
    return BAD("welcome: news must be an array of at most %d {id >= 1, at, text}",
               NQ_PROTO_NEWS_MAX);
  w->job_n = (int)n;
  w->job_depth = (int)depth;
  w->job_state = (nq_job_state_t)lookup(job_state_names, NELEM(job_state_names), state);
  w->max_outstanding = (int)mo;
  w->progress_interval = (int)pi;
  return 0;
}

/* ---- signup / signup_reply ------------------------------------------------------------------ */

/* 1 if s is 1..NQ_PROTO_TICKET_MAX lower-case hex digits. */
static int ticket_valid(const char *s) {
  size_t n = strlen(s);
  if (n < 1 || n > NQ_PROTO_TICKET_MAX) return 0;
  for (; *s; s++)
    if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))) return 0;
  return 1;
}

json_t *nq_signup_pack(const nq_signup_t *su) {
  int ok;
  json_t *o = msg_new(NQ_MSG_SIGNUP, &ok);
  if (!o) return NULL;
  put(o, "v", json_integer(su->v ? su->v : NQ_PROTO_VERSION), &ok);
  put(o, "name", su->name ? json_string(su->name) : NULL, &ok);
  if (su->public_name) put(o, "public_name", json_string(su->public_name), &ok);
  if (su->team) put(o, "team", json_string(su->team), &ok);
  if (su->software) put(o, "software", json_string(su->software), &ok);
  if (su->ticket) put(o, "ticket", json_string(su->ticket), &ok);
  return msg_done(o, ok);
}

int nq_signup_parse(const json_t *m, nq_signup_t *su, nq_proto_err_t *err) {
  memset(su, 0, sizeof *su);
  if (nq_msg_get_int(m, "v", 0, NQ_PROTO_V_LIMIT, &su->v) != 0)
    return BAD("signup: v must be an integer 0..%d", NQ_PROTO_V_LIMIT);
  if (!version_ok(su->v))
    return refuse(err, su->v < NQ_PROTO_VERSION_MIN ? NQ_ERR_UPGRADE_REQUIRED : NQ_ERR_VERSION,
                  1, -1, "signup: protocol version %lld not spoken; this server speaks %s",
                  (long long)su->v, versions_text());
  if (nq_msg_get_str(m, "name", &su->name) || !nq_proto_name_valid(su->name))
    return BAD("signup: name must be 1..64 characters [A-Za-z0-9._-]");
  if (nq_msg_opt_str(m, "public_name", NULL, &su->public_name) ||
      (su->public_name && !nq_proto_name_valid(su->public_name)))
    return BAD("signup: public_name must be 1..64 characters [A-Za-z0-9._-]");
  if (nq_msg_opt_str(m, "team", NULL, &su->team) || (su->team && !nq_proto_name_valid(su->team)))
    return BAD("signup: team must be 1..64 characters [A-Za-z0-9._-]");
  if (nq_msg_opt_str(m, "software", NULL, &su->software) ||
      (su->software && !text_valid(su->software, NQ_PROTO_SOFTWARE_MAX)))
    return BAD("signup: software must be 1..64 printable ASCII characters");
  if (nq_msg_opt_str(m, "ticket", NULL, &su->ticket) || (su->ticket && !ticket_valid(su->ticket)))
    return BAD("signup: ticket must be 1..128 characters [0-9a-f]");
  return 0;
}

json_t *nq_signup_reply_pack(const nq_signup_reply_t *r) {
  int ok;
  json_t *o = msg_new(NQ_MSG_SIGNUP_REPLY, &ok);
  if (!o) return NULL;
  int st = (unsigned)r->state < NELEM(signup_state_names) ? (int)r->state : NQ_SIGNUP_PENDING;
  put(o, "state", json_string(signup_state_names[st]), &ok);
  if (st == NQ_SIGNUP_JOINED) {
    put(o, "owner", r->owner ? json_string(r->owner) : NULL, &ok);
    put(o, "owner_key", r->owner_key ? json_string(r->owner_key) : NULL, &ok);
    put(o, "client", r->client ? json_string(r->client) : NULL, &ok);
    put(o, "token", r->token ? json_string(r->token) : NULL, &ok);
  } else {
    put(o, "request", json_integer(r->request), &ok);
    put(o, "retry_after", json_integer(r->retry_after), &ok);
    if (r->ticket) put(o, "ticket", json_string(r->ticket), &ok);
  }
  return msg_done(o, ok);
}

int nq_signup_reply_parse(const json_t *m, nq_signup_reply_t *r, nq_proto_err_t *err) {
  memset(r, 0, sizeof *r);
  const char *state = NULL;
  int st = -1;
  if (nq_msg_get_str(m, "state", &state) ||
      (st = lookup(signup_state_names, NELEM(signup_state_names), state)) < 0)
    return BAD("signup_reply: state must be \"joined\" or \"pending\"");
  r->state = (nq_signup_state_t)st;
  if (r->state == NQ_SIGNUP_JOINED) {
    if (nq_msg_get_str(m, "owner", &r->owner) || !nq_proto_name_valid(r->owner) ||
        nq_msg_get_str(m, "owner_key", &r->owner_key) || !text_valid(r->owner_key, 128) ||
        nq_msg_get_str(m, "client", &r->client) || !nq_proto_name_valid(r->client) ||
        nq_msg_get_str(m, "token", &r->token) || !text_valid(r->token, 128))
      return BAD("signup_reply: joined needs owner and client names, owner_key and token "
                 "(1..128 printable ASCII)");
    return 0;
  }
  if (nq_msg_get_int(m, "request", 1, INT64_MAX, &r->request) ||
      nq_msg_get_int(m, "retry_after", 1, NQ_RETRY_AFTER_MAX, &r->retry_after) ||
      nq_msg_opt_str(m, "ticket", NULL, &r->ticket) || (r->ticket && !ticket_valid(r->ticket)))
    return BAD("signup_reply: pending needs request >= 1, retry_after 1..%d and an optional "
               "ticket of [0-9a-f]", NQ_RETRY_AFTER_MAX);
  return 0;
}

/* ---- work ------------------------------------------------------------------------------------ */

json_t *nq_get_work_pack(const nq_get_work_t *g) {
  int ok;
  json_t *o = msg_new(NQ_MSG_GET_WORK, &ok);
  if (o) put(o, "want", json_integer(g->want), &ok);
  return msg_done(o, ok);
}

int nq_get_work_parse(const json_t *m, nq_get_work_t *g, nq_proto_err_t *err) {
  int64_t want;
  if (nq_msg_get_int(m, "want", 1, NQ_PROTO_WANT_MAX, &want) != 0)
    return BAD("get_work: want must be an integer 1..256");
  g->want = (int)want;
  return 0;
}

json_t *nq_work_pack(const nq_work_t *w) {
  int ok;
  json_t *o = msg_new(NQ_MSG_WORK, &ok);
  if (!o) return NULL;
  json_t *arr = json_array();
  put(o, "assignments", arr, &ok);
  for (int i = 0; ok && i < w->n; i++) {
    const nq_assignment_t *a = &w->a[i];
    json_t *e = json_object();
    if (!e || json_array_append_new(arr, e) != 0) {
      ok = 0;
      break;
    }
    put(e, "id", json_integer(a->id), &ok);
    put(e, "unit", a->unit ? json_string(a->unit) : NULL, &ok);
    put(e, "deadline", json_integer(a->deadline), &ok);
    put(e, "lease", json_integer(a->lease), &ok);
    if (a->kernel) put(e, "kernel", json_string(a->kernel), &ok);
  }
  return msg_done(o, ok);
}

int nq_work_parse(const json_t *m, nq_work_t *w, nq_proto_err_t *err) {
  const json_t *arr = json_object_get(m, "assignments");
  size_t n = json_array_size(arr);
  w->n = 0;
  if (!json_is_array(arr) || n < 1 || n > NQ_PROTO_WANT_MAX)
    return BAD("work: assignments must be an array of 1..256");
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_array_get(arr, i);
    nq_assignment_t *a = &w->a[i];
    if (!json_is_object(e) || nq_msg_get_int(e, "id", 0, INT64_MAX, &a->id) ||
        nq_msg_get_str(e, "unit", &a->unit) || !a->unit[0] ||
        strlen(a->unit) >= NQ_UNIT_TEXT_MAX ||
        nq_msg_get_int(e, "deadline", 0, INT64_MAX, &a->deadline) ||
        nq_msg_get_int(e, "lease", 0, NQ_PROTO_LEASE_MAX, &a->lease))
      return BAD("work: assignment %zu must be {id, unit, deadline, lease 0..%d}", i,
                 NQ_PROTO_LEASE_MAX);
    if (nq_msg_opt_str(e, "kernel", NULL, &a->kernel) ||
        (a->kernel && !nq_proto_kernel_valid(a->kernel)))
      return BAD("work: assignment %zu: kernel must be 1..%d of [a-z0-9_-]", i,
                 NQ_KERNEL_NAME_MAX - 1);
  }
  w->n = (int)n;
  return 0;
}

json_t *nq_no_work_pack(const nq_no_work_t *nw) {
  int ok;
  json_t *o = msg_new(NQ_MSG_NO_WORK, &ok);
  if (!o) return NULL;
  put(o, "retry_after", json_integer(nw->retry_after), &ok);
  put(o, "reason", json_string(nq_nowork_reason_name(nw->reason)), &ok);
  return msg_done(o, ok);
}

int nq_no_work_parse(const json_t *m, nq_no_work_t *nw, nq_proto_err_t *err) {
  const char *reason = NULL;
  int r = -1;
  if (nq_msg_get_int(m, "retry_after", 0, INT64_MAX, &nw->retry_after) ||
      nq_msg_get_str(m, "reason", &reason) ||
      (r = lookup(nowork_names, NELEM(nowork_names), reason)) < 0)
    return BAD("no_work: needs retry_after >= 0 and reason none_pending|cap|done|waiting");
  nw->reason = (nq_nowork_reason_t)r;
  return 0;
}

/* ---- progress / lease ------------------------------------------------------------------------ */

json_t *nq_progress_pack(const nq_progress_t *p) {
  int ok;
  json_t *o = msg_new(NQ_MSG_PROGRESS, &ok);
  if (!o) return NULL;
  put(o, "id", json_integer(p->id), &ok);
  if (p->has_nodes) put_u64(o, "nodes", p->nodes, &ok);
  if (p->has_fraction) put(o, "fraction", json_real(p->fraction), &ok);
  if (p->has_seconds) put(o, "seconds", json_real(p->seconds), &ok);
  if (p->paused) put(o, "paused", json_true(), &ok);
  return msg_done(o, ok);
}

int nq_progress_parse(const json_t *m, nq_progress_t *p, nq_proto_err_t *err) {
  memset(p, 0, sizeof *p);
  if (nq_msg_get_int(m, "id", 0, INT64_MAX, &p->id) != 0)
    return BAD("progress: id must be a non-negative integer");
  /* nodes is informative, but when present it must be a count. */
  if (json_object_get(m, "nodes")) {
    if (nq_msg_get_u64(m, "nodes", &p->nodes) != 0 || p->nodes > (uint64_t)INT64_MAX)
      return BAD("progress: nodes must be a non-negative integer");
    p->has_nodes = 1;
  }
  const json_t *f = json_object_get(m, "fraction"), *sec = json_object_get(m, "seconds");
  if (f) {
    p->fraction = json_is_number(f) ? json_number_value(f) : -1;
    if (!(p->fraction >= 0 && p->fraction <= 1)) /* NaN fails too */
      return BAD("progress: fraction must be a number 0..1");
    p->has_fraction = 1;
  }
  if (sec) {
    p->seconds = json_is_number(sec) ? json_number_value(sec) : -1;
    if (!(p->seconds >= 0 && p->seconds < 1e15))
      return BAD("progress: seconds must be a number >= 0");
    p->has_seconds = 1;
  }
  const json_t *pz = json_object_get(m, "paused");
  if (pz) {
    if (!json_is_boolean(pz)) return BAD("progress: paused must be true or false");
    p->paused = json_is_true(pz);
  }
  return 0;
}

json_t *nq_lease_pack(const nq_lease_t *l) {
  int ok;
  json_t *o = msg_new(NQ_MSG_LEASE, &ok);
  if (!o) return NULL;
  put(o, "id", json_integer(l->id), &ok);
  put(o, "deadline", json_integer(l->deadline), &ok);
  return msg_done(o, ok);
}

int nq_lease_parse(const json_t *m, nq_lease_t *l, nq_proto_err_t *err) {
  if (nq_msg_get_int(m, "id", 0, INT64_MAX, &l->id) ||
      nq_msg_get_int(m, "deadline", 0, INT64_MAX, &l->deadline))
    return BAD("lease: needs id and deadline, non-negative integers");
  return 0;
}

/* ---- result / ack ---------------------------------------------------------------------------- */

json_t *nq_result_pack(const nq_result_t *r) {
  int ok;
  json_t *o = msg_new(NQ_MSG_RESULT, &ok);
  if (!o) return NULL;
  put(o, "id", json_integer(r->id), &ok);
  put(o, "unit", json_string(r->unit), &ok); /* "" too: the server judges it, as any unit */
  put_u64(o, "c2", r->counts.c2, &ok);
  put_u64(o, "c4", r->counts.c4, &ok);
  put_u64(o, "c8", r->counts.c8, &ok);
  put_u64(o, "nodes", r->counts.nodes, &ok);
  put(o, "seconds", json_real(r->seconds), &ok);
  put(o, "solver", json_string(r->solver), &ok);
  if (r->backend[0]) put(o, "backend", json_string(r->backend), &ok);
  return msg_done(o, ok);
}

int nq_proto_kernel_valid(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n >= NQ_KERNEL_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
          s[i] == '-'))
      return 0;
  return 1;
}

/* result.backend: 1..NQ_PROTO_BACKEND_MAX printable ASCII characters. */
static int backend_valid(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > NQ_PROTO_BACKEND_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] < 0x20 || s[i] > 0x7e) return 0;
  return 1;
}

int nq_result_parse(const json_t *m, nq_result_t *r, nq_proto_err_t *err) {
  memset(r, 0, sizeof *r);
  if (nq_msg_get_int(m, "id", 0, INT64_MAX, &r->id) != 0)
    return BAD("result: id must be a non-negative integer");
  static const char *const keys[4] = {"c2", "c4", "c8", "nodes"};
  uint64_t *dst[4] = {&r->counts.c2, &r->counts.c4, &r->counts.c8, &r->counts.nodes};
  int range = 0;
  for (int i = 0; i < 4; i++) {
    int rc = nq_msg_get_u64(m, keys[i], dst[i]);
    if (rc == NQ_ERANGE || (rc == 0 && *dst[i] > (uint64_t)INT64_MAX)) range = 1;
    else if (rc != 0) return BAD("result: %s must be an integer", keys[i]);
  }
  const json_t *sec = json_object_get(m, "seconds");
  const char *unit = NULL, *solver = NULL, *backend = NULL;
  if (nq_msg_get_str(m, "unit", &unit) || nq_msg_get_str(m, "solver", &solver) ||
      !json_is_number(sec))
    return BAD("result: unit and solver must be strings, seconds a number");
  if (nq_msg_opt_str(m, "backend", NULL, &backend) || (backend && !backend_valid(backend)))
    return BAD("result: backend must be a string of 1..%d printable ASCII characters",
               NQ_PROTO_BACKEND_MAX);
  r->seconds = json_number_value(sec);
  /* Wrong types are a broken client; impossible values may be a bug in one result only. */
  if (range || r->seconds < 0)
    return refuse(err, NQ_ERR_BAD_RESULT, 0, r->id, "impossible numbers");
  size_t nu = strlen(unit), ns = strlen(solver);
  if (nu >= sizeof r->unit || ns >= sizeof r->solver) /* (an empty one is the server's check) */
    return refuse(err, NQ_ERR_BAD_RESULT, 0, r->id, "unit or solver too long");
  memcpy(r->unit, unit, nu + 1);
  memcpy(r->solver, solver, ns + 1);
  if (backend) memcpy(r->backend, backend, strlen(backend) + 1); /* <= NQ_PROTO_BACKEND_MAX */
  return 0;
}

json_t *nq_ack_pack(const nq_ack_t *a) {
  int ok;
  json_t *o = msg_new(NQ_MSG_ACK, &ok);
  if (!o) return NULL;
  put(o, "id", json_integer(a->id), &ok);
  put(o, "status", json_string(nq_ack_status_name(a->status)), &ok);
  if (a->has_receipt)
    put(o, "receipt", json_pack("{s:I, s:s, s:s}", "job", (json_int_t)a->job, "unit",
                                a->unit ? a->unit : "", "leaf", a->leaf ? a->leaf : ""), &ok);
  if (a->credit) put(o, "credit", json_string(a->credit), &ok);
  return msg_done(o, ok);
}

/* A receipt's unit text: the characters a unit's text is made of (nq_unit_format). */
static int receipt_unit_ok(const char *u) {
  size_t n = strlen(u);
  return n > 0 && n < NQ_UNIT_TEXT_MAX && strspn(u, "0123456789abcdefghijklmnopqrstuvwxyz:,") == n;
}

int nq_ack_parse(const json_t *m, nq_ack_t *a, nq_proto_err_t *err) {
  const char *status = NULL;
  int s = -1;
  nq_u128 credit;
  a->credit = NULL;
  if (nq_msg_get_int(m, "id", 0, INT64_MAX, &a->id) || nq_msg_get_str(m, "status", &status) ||
      (s = lookup(ack_names, NELEM(ack_names), status)) < 0)
    return BAD("ack: needs id and status accepted|duplicate|late");
  if (nq_msg_opt_str(m, "credit", NULL, &a->credit) ||
      (a->credit && nq_u128_parse(a->credit, &credit) != 0))
    return BAD("ack: credit must be a decimal string");
  a->status = (nq_ack_status_t)s;
  a->has_receipt = 0;
  a->job = 0;
  a->unit = a->leaf = NULL;
  const json_t *r = json_object_get(m, "receipt");
  if (r) {
    unsigned char leaf[32];
    if (!json_is_object(r) || nq_msg_get_int(r, "job", 0, INT64_MAX, &a->job) ||
        nq_msg_get_str(r, "unit", &a->unit) || !receipt_unit_ok(a->unit) ||
        nq_msg_get_str(r, "leaf", &a->leaf) || strlen(a->leaf) != 64 ||
        nq_hex_decode(a->leaf, sizeof leaf, leaf) != 0)
      return BAD("ack: receipt must be {job, unit, leaf: 64 lowercase hex digits}");
    a->has_receipt = 1;
  }
  return 0;
}

/* ---- admin ----------------------------------------------------------------------------------- */

/* The request views' field tables (nq/admin_cmd.h). */
const nq_view_t nq_view_none_desc = {"none", sizeof(nq_view_none_t), NULL, 0};
#define NQV_T nq_view_q_units_t
NQ_VIEW_DEFINE(q_units, NQ_VIEW_Q_UNITS)
#undef NQV_T
#define NQV_T nq_view_q_name_t
NQ_VIEW_DEFINE(q_name, NQ_VIEW_Q_NAME)
#undef NQV_T
#define NQV_T nq_view_q_client_add_t
NQ_VIEW_DEFINE(q_client_add, NQ_VIEW_Q_CLIENT_ADD)
#undef NQV_T
#define NQV_T nq_view_q_unit_t
NQ_VIEW_DEFINE(q_unit, NQ_VIEW_Q_UNIT)
#undef NQV_T
#define NQV_T nq_view_q_unit_retry_t
NQ_VIEW_DEFINE(q_unit_retry, NQ_VIEW_Q_UNIT_RETRY)
#undef NQV_T
#define NQV_T nq_view_q_job_t
NQ_VIEW_DEFINE(q_job, NQ_VIEW_Q_JOB)
#undef NQV_T
#define NQV_T nq_view_q_job_add_t
NQ_VIEW_DEFINE(q_job_add, NQ_VIEW_Q_JOB_ADD)
#undef NQV_T
#define NQV_T nq_view_q_all_t
NQ_VIEW_DEFINE(q_all, NQ_VIEW_Q_ALL)
#undef NQV_T
#define NQV_T nq_view_q_id_t
NQ_VIEW_DEFINE(q_id, NQ_VIEW_Q_ID)
#undef NQV_T
#define NQV_T nq_view_q_force_t
NQ_VIEW_DEFINE(q_force, NQ_VIEW_Q_FORCE)
#undef NQV_T
#define NQV_T nq_view_q_news_add_t
NQ_VIEW_DEFINE(q_news_add, NQ_VIEW_Q_NEWS_ADD)
#undef NQV_T
#define NQV_T nq_view_q_team_t
NQ_VIEW_DEFINE(q_team, NQ_VIEW_Q_TEAM)
#undef NQV_T
#define NQV_T nq_view_q_team_rename_t
NQ_VIEW_DEFINE(q_team_rename, NQ_VIEW_Q_TEAM_RENAME)
#undef NQV_T

/* The name and request columns of the commands' rows. */
static const nq_view_t *const admin_req_views[NQ_ADMIN_NCMDS] = {
#define REQ_VIEW_ONE(e, name, req, fn, reply) &nq_view_##req##_desc,
    NQ_ADMIN_CMD_MAP(REQ_VIEW_ONE)
#undef REQ_VIEW_ONE
};

const nq_view_t *nq_admin_req_view(nq_admin_cmd_t c) {
  return (unsigned)c < NQ_ADMIN_NCMDS ? admin_req_views[c] : NULL;
}

int nq_admin_cmd_find(const char *name) {
  return name ? lookup(admin_names, NQ_ADMIN_NCMDS, name) : -1;
}

json_t *nq_admin_req_pack(const nq_admin_req_t *r) {
  int ok;
  if ((unsigned)r->cmd >= NQ_ADMIN_NCMDS) return NULL;
  json_t *o = msg_new(NQ_MSG_ADMIN, &ok);
  if (!o) return NULL;
  put(o, "cmd", json_string(nq_admin_cmd_name(r->cmd)), &ok);
  if (ok && nq_view_pack_into(admin_req_views[r->cmd], &r->q, o) != 0) ok = 0;
  return msg_done(o, ok);
}

int nq_admin_req_parse(const json_t *m, nq_admin_req_t *r, nq_proto_err_t *err) {
  memset(r, 0, sizeof *r);
  const char *cmd = NULL;
  char why[NQ_PROTO_ERRMSG_MAX];
  if (nq_msg_get_str(m, "cmd", &cmd) != 0)
    return refuse(err, NQ_ERR_BAD_MESSAGE, 0, -1, "admin: `cmd` must be a string");
  int c = nq_admin_cmd_find(cmd);
  if (c < 0) return refuse(err, NQ_ERR_BAD_MESSAGE, 0, -1, "admin: unknown cmd");
  r->cmd = (nq_admin_cmd_t)c;
  /* A request view holds no arrays: a refused parse leaves nothing to release. */
  if (nq_view_parse_at(admin_req_views[c], m, &r->q, cmd, why, sizeof why) != 0)
    return refuse(err, NQ_ERR_BAD_MESSAGE, 0, -1, "%s (docs/protocol.md, \"Admin\")", why);
  return 0;
}

json_t *nq_admin_reply_pack(const nq_admin_reply_t *r) {
  int ok;
  json_t *o = msg_new(NQ_MSG_ADMIN_REPLY, &ok);
  if (!o) return NULL;
  put(o, "cmd", json_string(nq_admin_cmd_name(r->cmd)), &ok);
  put(o, "data", r->data ? json_incref(r->data) : NULL, &ok);
  return msg_done(o, ok);
}

int nq_admin_reply_parse(const json_t *m, nq_admin_reply_t *r, nq_proto_err_t *err) {
  const char *cmd = NULL;
  int c = -1;
  json_t *data = json_object_get(m, "data");
  if (nq_msg_get_str(m, "cmd", &cmd) || (c = lookup(admin_names, NQ_ADMIN_NCMDS, cmd)) < 0 ||
      !json_is_object(data))
    return BAD("admin_reply: needs a known cmd and a data object");
  r->cmd = (nq_admin_cmd_t)c;
  r->data = data;
  return 0;
}

/* ---- error / bye ----------------------------------------------------------------------------- */

json_t *nq_error_pack(const nq_error_msg_t *e) {
  const char *code = e->code == NQ_ERR_OTHER && e->name ? e->name : nq_errcode_name(e->code);
  int ok;
  json_t *o = msg_new(NQ_MSG_ERROR, &ok);
  if (!o) return NULL;
  put(o, "code", json_string(code[0] ? code : "error"), &ok);
  put(o, "message", json_string(e->message ? e->message : ""), &ok);
  put(o, "fatal", json_boolean(e->fatal), &ok);
  if (e->id >= 0) put(o, "id", json_integer(e->id), &ok);
  if (e->min_version > 0) put(o, "min_version", json_integer(e->min_version), &ok);
  if (e->retry_after > 0) put(o, "retry_after", json_integer(e->retry_after), &ok);
  return msg_done(o, ok);
}

json_t *nq_error_new(nq_errcode_t code, const char *message, int fatal) {
  nq_error_msg_t e = {code, NULL, message, fatal, -1, 0, 0};
  return nq_error_pack(&e);
}

int nq_error_parse(const json_t *m, nq_error_msg_t *e, nq_proto_err_t *err) {
  memset(e, 0, sizeof *e);
  const json_t *fatal = json_object_get(m, "fatal");
  if (nq_msg_get_str(m, "code", &e->name) || nq_msg_opt_str(m, "message", "", &e->message) ||
      (fatal && !json_is_null(fatal) && !json_is_boolean(fatal)) ||
      nq_msg_opt_int(m, "id", 0, INT64_MAX, -1, &e->id) ||
      nq_msg_opt_int(m, "min_version", 1, NQ_PROTO_V_LIMIT, 0, &e->min_version) ||
      nq_msg_opt_int(m, "retry_after", 1, NQ_RETRY_AFTER_MAX, 0, &e->retry_after))
    return BAD("error: needs code (string); message, fatal (boolean), id, min_version and "
               "retry_after (integers in range) when present");
  e->code = nq_errcode_parse(e->name);
  e->fatal = json_is_true(fatal);
  return 0;
}

json_t *nq_bye_pack(void) {
  int ok;
  json_t *o = msg_new(NQ_MSG_BYE, &ok);
  return msg_done(o, ok);
}

/* ---- field helpers --------------------------------------------------------------------------- */

void nq_print_version(const char *prog) {
  printf("%s %s\n", prog, NQ_VERSION_STRING);
  if (NQ_PROTO_VERSION_MIN == NQ_PROTO_VERSION_MAX)
    printf("protocol %d, solver %s\n", NQ_PROTO_VERSION_MAX, NQ_SOLVER_VERSION);
  else
    printf("protocol %d..%d, solver %s\n", NQ_PROTO_VERSION_MIN, NQ_PROTO_VERSION_MAX,
           NQ_SOLVER_VERSION);
}
