/* nq-server: the message handlers (docs/protocol.md). Each runs inside the batch transaction opened
 * by srv.c and only prepares its reply; srv.c sends it after the commit. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nq/certs.h"
#include "nq/frame.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "srv.h"
#include "status.h"

/* err_code meaning "close without an error frame" (bye, or a peer's own fatal error). */
static const char CLOSE_QUIET[] = "";

void srv_proto_fatal(srv_req_t *r, const char *code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err_msg, sizeof r->err_msg, fmt, ap);
  va_end(ap);
  json_decref(r->reply);
  r->reply = NULL;
  r->err_code = code;
  r->sc->state = SRV_CONN_DEAD;
}

/* A non-fatal error reply about assignment `id` (id < 0: none). */
static void reply_error(srv_req_t *r, const char *code, const char *message, int64_t id) {
  nq_error_msg_t e = {nq_errcode_parse(code), code, message, 0, id};
  r->reply = nq_error_pack(&e);
}

/* Map a scheduler failure that is fatal for the connection. */
static void sched_fatal(srv_t *s, srv_req_t *r, int rc, const char *what) {
  if (rc == NQ_EBANNED) {
    srv_proto_fatal(r, "banned", "client %s is banned", r->sc->name);
  } else if (rc == NQ_ENOTFOUND) {
    srv_proto_fatal(r, "auth", "client %s no longer exists", r->sc->name);
  } else {
    nq_log(NQ_LOG_ERROR, "%s for %s: %s", what, r->sc->name, srv_store_errmsg(s->store));
    srv_proto_fatal(r, "internal", "store failure; retry later");
  }
}

static int name_valid(const char *name) {
  size_t n = strlen(name);
  if (n < 1 || n > SRV_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
          c == '.' || c == '_' || c == '-'))
      return 0;
  }
  return 1;
}

/* ---- hello ---- */

typedef struct hello_s {
  const char *role, *token, *enrol, *name, *solver, *software;
  int64_t threads;
} hello_t;

/* Type-check every field of a hello. Returns 0, or sets the fatal error and returns -1. */
static int hello_parse(srv_req_t *r, hello_t *h) {
  const json_t *m = r->msg;
  int64_t v;
  int rc = nq_msg_get_int(m, "v", INT64_MIN, INT64_MAX, &v);
  if (rc) {
    srv_proto_fatal(r, "bad_message", "hello: field v must be an integer");
    return -1;
  }
  if (v != NQ_PROTOCOL_VERSION) {
    srv_proto_fatal(r, "version", "protocol version %lld not supported; this server speaks %d",
                    (long long)v, NQ_PROTOCOL_VERSION);
    return -1;
  }
  const char *bad = NULL;
  if (nq_msg_get_str(m, "role", &h->role) ||
      (strcmp(h->role, "client") != 0 && strcmp(h->role, "admin") != 0))
    bad = "role must be \"client\" or \"admin\"";
  else if (nq_msg_opt_str(m, "token", NULL, &h->token))
    bad = "token must be a string";
  else if (nq_msg_opt_str(m, "enrol", NULL, &h->enrol))
    bad = "enrol must be a string";
  else if (nq_msg_opt_str(m, "name", NULL, &h->name))
    bad = "name must be a string";
  else if (nq_msg_opt_str(m, "solver", NULL, &h->solver) ||
           (h->solver && (!*h->solver || strlen(h->solver) > SRV_SOLVER_MAX)))
    bad = "solver must be a string of 1..64 characters";
  else if (nq_msg_opt_str(m, "software", NULL, &h->software))
    bad = "software must be a string";
  else if (nq_msg_opt_int(m, "threads", 1, 1024, 1, &h->threads))
    bad = "threads must be an integer 1..1024";
  else if (!strcmp(h->role, "admin") && (h->enrol || !h->token))
    bad = "role admin needs token (and no enrol)";
  else if (!strcmp(h->role, "client") && (h->token != NULL) == (h->enrol != NULL))
    bad = "role client needs exactly one of token and enrol";
  else if (h->enrol && (!h->name || !name_valid(h->name)))
    bad = "enrol needs a name of 1..64 characters [A-Za-z0-9._-]";
  if (bad) {
    srv_proto_fatal(r, "bad_message", "hello: %s", bad);
    return -1;
  }
  return 0;
}

/* Compare the SHA-256 of `secret` with the hash stored under meta key `key`. */
static int secret_matches(srv_t *s, const char *key, const char *secret) {
  char want[SRV_HASH_MAX + 1], got[65];
  if (srv_meta_get(s->store, key, want, sizeof want) != 0) return 0;
  if (nq_sha256_hex(secret, got) != 0) return 0;
  return nq_secure_streq(want, got);
}

static json_t *welcome_new(srv_t *s, const char *client, const char *token) {
  const srv_job_t *j = &s->sched.job;
  int interval = s->cfg.lease_seconds / 4;
  if (interval < 1) interval = 1;
  json_t *w = json_pack("{s:s, s:i, s:{s:i, s:i, s:s}, s:i, s:i}", "type", "welcome", "v",
                        NQ_PROTOCOL_VERSION, "job", "n", j->n, "depth", j->depth, "state",
                        s->job_done ? "done" : "running", "max_outstanding",
                        s->cfg.max_outstanding, "progress_interval", interval);
  if (w && client) json_object_set_new(w, "client", json_string(client));
  if (w && token) json_object_set_new(w, "token", json_string(token));
  return w;
}

/* Enrolment: a new client with a fresh token, returned once in the welcome. */
static int hello_enrol(srv_t *s, srv_req_t *r, const hello_t *h, int64_t now, char *token) {
  char hash[65];
  srv_client_t cl;
  if (!secret_matches(s, SRV_META_ENROL_HASH, h->enrol)) {
    srv_proto_fatal(r, "auth", "wrong enrolment key");
    return -1;
  }
  if (nq_random_token(token, SRV_SECRET_BYTES) != 0 || nq_sha256_hex(token, hash) != 0) {
    srv_proto_fatal(r, "internal", "cannot make a token");
    return -1;
  }
  int rc = srv_client_enrol(s->store, h->name, hash, now, &cl);
  if (rc == NQ_EINVAL) {
    srv_proto_fatal(r, "bad_message", "hello: bad client name");
    return -1;
  }
  if (rc != 0) {
    nq_log(NQ_LOG_ERROR, "enrol %s: %s", h->name, srv_store_errmsg(s->store));
    srv_proto_fatal(r, "internal", "enrolment failed; retry later");
    return -1;
  }
  r->sc->client_id = cl.id;
  snprintf(r->sc->name, sizeof r->sc->name, "%s", cl.name);
  nq_log(NQ_LOG_INFO, "enrolled client %s from %s", cl.name, nq_conn_peer(r->sc->conn));
  return 0;
}

static int hello_token(srv_t *s, srv_req_t *r, const hello_t *h, int64_t now) {
  char hash[65];
  srv_client_t cl;
  if (nq_sha256_hex(h->token, hash) != 0) {
    srv_proto_fatal(r, "internal", "cannot hash the token");
    return -1;
  }
  int rc = srv_client_find_token(s->store, hash, &cl);
  if (rc == NQ_ENOTFOUND) {
    srv_proto_fatal(r, "auth", "unknown token");
    return -1;
  }
  if (rc != 0) {
    nq_log(NQ_LOG_ERROR, "token lookup: %s", srv_store_errmsg(s->store));
    srv_proto_fatal(r, "internal", "store failure; retry later");
    return -1;
  }
  if (cl.banned) {
    srv_proto_fatal(r, "banned", "client %s is banned", cl.name);
    return -1;
  }
  srv_client_touch(s->store, cl.id, now); /* informative; a failure here is not worth a refusal */
  r->sc->client_id = cl.id;
  snprintf(r->sc->name, sizeof r->sc->name, "%s", cl.name);
  return 0;
}

static void h_hello(srv_t *s, srv_req_t *r, int64_t now) {
  hello_t h;
  memset(&h, 0, sizeof h);
  if (hello_parse(r, &h) != 0) return;
  srv_conn_t *sc = r->sc;
  if (!strcmp(h.role, "admin")) {
    if (!secret_matches(s, SRV_META_ADMIN_HASH, h.token)) {
      srv_proto_fatal(r, "auth", "wrong admin token");
      return;
    }
    sc->state = SRV_CONN_ADMIN;
    snprintf(sc->name, sizeof sc->name, "admin");
    nq_log(NQ_LOG_INFO, "admin connected from %s", nq_conn_peer(sc->conn));
    r->reply = welcome_new(s, NULL, NULL);
    return;
  }
  char token[2 * SRV_SECRET_BYTES + 1];
  int enrolled = h.enrol != NULL;
  if ((enrolled ? hello_enrol(s, r, &h, now, token) : hello_token(s, r, &h, now)) != 0) return;
  sc->state = SRV_CONN_CLIENT;
  nq_log(NQ_LOG_INFO, "client %s connected from %s (%s, %lld threads, %s)", sc->name,
         nq_conn_peer(sc->conn), h.solver ? h.solver : "?", (long long)h.threads,
         h.software ? h.software : "?");
  r->reply = welcome_new(s, sc->name, enrolled ? token : NULL);
}

/* ---- client requests ---- */

static void h_get_work(srv_t *s, srv_req_t *r, int64_t now) {
  int64_t want;
  if (nq_msg_get_int(r->msg, "want", 1, 256, &want) != 0) {
    srv_proto_fatal(r, "bad_message", "get_work: want must be an integer 1..256");
    return;
  }
  srv_work_t *out = malloc((size_t)want * sizeof *out);
  if (!out) {
    srv_proto_fatal(r, "internal", "out of memory");
    return;
  }
  int n = 0;
  srv_nowork_t why = SRV_NOWORK_NONE;
  int rc = srv_sched_get_work(&s->sched, r->sc->client_id, (int)want, now, out, &n, &why);
  if (rc != 0) {
    sched_fatal(s, r, rc, "get_work");
  } else if (n > 0) {
    json_t *a = json_array();
    for (int i = 0; i < n && a; i++)
      json_array_append_new(
          a, json_pack("{s:I, s:s, s:I, s:I}", "id", (json_int_t)out[i].id, "unit", out[i].unit,
                       "deadline", (json_int_t)out[i].deadline, "lease",
                       (json_int_t)(out[i].deadline > now ? out[i].deadline - now : 0)));
    r->reply = json_pack("{s:s, s:o}", "type", "work", "assignments", a);
  } else {
    r->reply = json_pack("{s:s, s:i, s:s}", "type", "no_work", "retry_after",
                         s->cfg.retry_after, "reason", srv_nowork_reason(why));
  }
  free(out);
}

static void h_progress(srv_t *s, srv_req_t *r, int64_t now) {
  int64_t id;
  uint64_t nodes;
  if (nq_msg_get_int(r->msg, "id", 0, INT64_MAX, &id) != 0) {
    srv_proto_fatal(r, "bad_message", "progress: id must be a non-negative integer");
    return;
  }
  /* nodes is informative, but when present it must be a count. */
  if (json_object_get(r->msg, "nodes") && nq_msg_get_u64(r->msg, "nodes", &nodes) != 0) {
    srv_proto_fatal(r, "bad_message", "progress: nodes must be a non-negative integer");
    return;
  }
  int64_t deadline = 0;
  int rc = srv_sched_progress(&s->sched, r->sc->client_id, id, now, &deadline);
  if (rc == 0)
    r->reply = json_pack("{s:s, s:I, s:I}", "type", "lease", "id", (json_int_t)id, "deadline",
                         (json_int_t)deadline);
  else if (rc == NQ_ENOTFOUND)
    reply_error(r, "unknown_assignment", "no such running assignment of this client", id);
  else
    sched_fatal(s, r, rc, "progress");
}

/* Read the result fields: wrong types are fatal bad_message, impossible values (negative) are
 * the non-fatal bad_result. Returns 0, or -1 with r's reply/error set. */
static int result_parse(srv_req_t *r, int64_t *id, const char **unit, nq_counts_t *c,
                        double *seconds, const char **solver) {
  const json_t *m = r->msg;
  if (nq_msg_get_int(m, "id", 0, INT64_MAX, id) != 0) {
    srv_proto_fatal(r, "bad_message", "result: id must be a non-negative integer");
    return -1;
  }
  static const char *const keys[4] = {"c2", "c4", "c8", "nodes"};
  uint64_t *dst[4] = {&c->c2, &c->c4, &c->c8, &c->nodes};
  memset(c, 0, sizeof *c);
  int range = 0;
  for (int i = 0; i < 4; i++) {
    int rc = nq_msg_get_u64(m, keys[i], dst[i]);
    if (rc == NQ_ERANGE) {
      range = 1;
    } else if (rc != 0) {
      srv_proto_fatal(r, "bad_message", "result: %s must be an integer", keys[i]);
      return -1;
    }
  }
  const json_t *sec = json_object_get(m, "seconds");
  if (nq_msg_get_str(m, "unit", unit) != 0 || nq_msg_get_str(m, "solver", solver) != 0 ||
      !json_is_number(sec)) {
    srv_proto_fatal(r, "bad_message", "result: unit and solver must be strings, seconds a number");
    return -1;
  }
  *seconds = json_number_value(sec);
  if (range || *seconds < 0) {
    reply_error(r, "bad_result", "impossible numbers", *id);
    return -1;
  }
  return 0;
}

static void h_result(srv_t *s, srv_req_t *r, int64_t now) {
  int64_t id;
  const char *unit, *solver;
  nq_counts_t c;
  double seconds;
  if (result_parse(r, &id, &unit, &c, &seconds, &solver) != 0) return;
  srv_result_info_t info;
  memset(&info, 0, sizeof info);
  int rc = srv_sched_result(&s->sched, r->sc->client_id, id, unit, &c, seconds, solver, now, &info);
  switch (rc) {
  case 0:
    r->reply = json_pack("{s:s, s:I, s:s}", "type", "ack", "id", (json_int_t)id, "status",
                         srv_result_status_name(info.status));
    if (info.unit_disputed)
      nq_log(NQ_LOG_WARN, "unit of assignment %lld is disputed", (long long)id);
    if (info.banned) {
      nq_log(NQ_LOG_WARN, "%d client(s) auto-banned", info.banned);
      s->ban_pending = 1;
    }
    if (info.job_done) s->done_pending = 1;
    break;
  case NQ_ENOTFOUND:
    reply_error(r, "unknown_assignment", "no such assignment", id);
    break;
  case NQ_EAUTH:
    reply_error(r, "not_yours", "the assignment belongs to another client", id);
    break;
  case NQ_EINVAL:
    reply_error(r, "bad_result", srv_store_errmsg(s->store), id);
    break;
  default:
    sched_fatal(s, r, rc, "result");
  }
}

/* ---- admin, bye, error ---- */

static void h_admin(srv_t *s, srv_req_t *r, int64_t now) {
  json_t *rep = srv_admin_reply(s->store, &s->sched.job, r->msg, now);
  if (!rep) {
    srv_proto_fatal(r, "internal", "out of memory");
    return;
  }
  const char *code = json_string_value(json_object_get(rep, "code"));
  if (code && !strcmp(code, "internal")) {
    nq_log(NQ_LOG_ERROR, "admin command: %s", srv_store_errmsg(s->store));
    json_decref(rep);
    srv_proto_fatal(r, "internal", "store failure; retry later");
    return;
  }
  /* A ban takes effect on the client's open connection too, once the batch has committed. */
  const char *cmd = json_string_value(json_object_get(r->msg, "cmd"));
  const char *type = json_string_value(json_object_get(rep, "type"));
  if (cmd && type && !strcmp(cmd, "client_ban") && !strcmp(type, "admin_reply"))
    s->ban_pending = 1;
  if (cmd && type && !strcmp(cmd, "unit_retry") && !strcmp(type, "admin_reply")) {
    const json_t *d = json_object_get(rep, "data");
    const char *unit = json_string_value(json_object_get(d, "unit"));
    nq_log(NQ_LOG_INFO, "admin: disputed unit %s re-opened for %lld more result(s)",
           unit ? unit : "?", (long long)json_integer_value(json_object_get(d, "added")));
  }
  r->reply = rep;
}

static void h_bye(srv_t *s, srv_req_t *r, int64_t now) {
  (void)s;
  (void)now;
  srv_proto_fatal(r, CLOSE_QUIET, "bye");
}

static void h_error(srv_t *s, srv_req_t *r, int64_t now) {
  (void)s;
  (void)now;
  const char *code = json_string_value(json_object_get(r->msg, "code"));
  const char *msg = json_string_value(json_object_get(r->msg, "message"));
  int fatal = json_is_true(json_object_get(r->msg, "fatal"));
  nq_log(NQ_LOG_INFO, "%s sent error %s: %s", r->sc->name, code ? code : "?", msg ? msg : "");
  if (fatal) srv_proto_fatal(r, CLOSE_QUIET, "peer error");
}

/* ---- dispatch ---- */

enum { R_HELLO = 1, R_CLIENT = 2, R_ADMIN = 4 };

static const struct {
  const char *type;
  int roles; /* states in which the message is valid */
  void (*fn)(srv_t *s, srv_req_t *r, int64_t now);
} handlers[] = {
    {"hello", R_HELLO, h_hello},
    {"get_work", R_CLIENT, h_get_work},
    {"progress", R_CLIENT, h_progress},
    {"result", R_CLIENT, h_result},
    {"admin", R_ADMIN, h_admin},
    {"bye", R_CLIENT | R_ADMIN, h_bye},
    {"error", R_CLIENT | R_ADMIN, h_error},
};

void srv_proto_handle(srv_t *s, srv_req_t *r, int64_t now) {
  const char *type;
  if (nq_msg_get_str(r->msg, "type", &type) != 0) {
    srv_proto_fatal(r, "unknown_type", "the message has no string field type");
    return;
  }
  size_t i, n = sizeof handlers / sizeof handlers[0];
  for (i = 0; i < n; i++)
    if (!strcmp(handlers[i].type, type)) break;
  if (i == n) {
    srv_proto_fatal(r, "unknown_type", "unknown message type \"%.40s\"", type);
    return;
  }
  srv_conn_state_t st = r->sc->state;
  int role = st == SRV_CONN_AWAIT_HELLO ? R_HELLO : st == SRV_CONN_CLIENT ? R_CLIENT : R_ADMIN;
  if (!(handlers[i].roles & role)) {
    if (role == R_HELLO)
      srv_proto_fatal(r, "not_hello", "the first message must be hello, not %s", type);
    else if (!strcmp(type, "hello"))
      srv_proto_fatal(r, "not_hello", "hello was already received");
    else
      srv_proto_fatal(r, "unknown_type", "%s is not valid for role %s", type,
                      role == R_CLIENT ? "client" : "admin");
    return;
  }
  handlers[i].fn(s, r, now);
  /* Every request but a peer's error frame is answered; a reply that could not be built (out of
   * memory) must not leave a pipelining client waiting forever. */
  if (!r->reply && !r->err_code && strcmp(type, "error") != 0)
    srv_proto_fatal(r, "internal", "out of memory");
}
