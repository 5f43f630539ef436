/* nq-server: the scheduler -- leases, reissue, quorum, trust (contracts in sched.h, model in
 * docs/store.md). All state lives in the store; this file holds the rules and the SQL they need. */
#include "sched.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#define WANT_MAX 256

void srv_sched_config_default(srv_sched_config_t *cfg) {
  cfg->lease_seconds = 3600;
  cfg->lease_min = 60;
  cfg->max_outstanding = 16;
  cfg->ban_threshold = 3;
  cfg->retry_after = 30;
}

int srv_sched_init(srv_sched_t *s, srv_store_t *st, int64_t job_id,
                   const srv_sched_config_t *cfg) {
  memset(s, 0, sizeof *s);
  s->store = st;
  if (cfg) s->cfg = *cfg;
  else srv_sched_config_default(&s->cfg);
  if (s->cfg.lease_seconds < 1 || s->cfg.lease_min < 1 || s->cfg.max_outstanding < 1 ||
      s->cfg.ban_threshold < 0)
    return srv_store_failf(st, NQ_ERANGE, "scheduler config out of range");
  return srv_job_get(st, job_id, &s->job);
}

nq_nowork_reason_t srv_nowork_code(srv_nowork_t why) {
  assert(why != SRV_NOWORK_NONE); /* something was leased: the answer is work, not no_work */
  switch (why) {
  case SRV_NOWORK_CAP: return NQ_NOWORK_CAP;
  case SRV_NOWORK_DONE: return NQ_NOWORK_DONE;
  default: return NQ_NOWORK_NONE_PENDING;
  }
}

nq_ack_status_t srv_result_ack(srv_result_status_t st) {
  switch (st) {
  case SRV_RESULT_DUPLICATE: return NQ_ACK_DUPLICATE;
  case SRV_RESULT_LATE: return NQ_ACK_LATE;
  default: return NQ_ACK_ACCEPTED;
  }
}

/* ---- helpers ------------------------------------------------------------------------------ */

typedef struct idvec_s {
  int64_t *v;
  size_t n, cap;
} idvec_t;

static int idvec_push(idvec_t *iv, int64_t x) {
  if (iv->n == iv->cap) {
    size_t cap = iv->cap ? iv->cap * 2 : 16;
    int64_t *p = realloc(iv->v, cap * sizeof *p);
    if (!p) return NQ_ENOMEM;
    iv->v = p;
    iv->cap = cap;
  }
  iv->v[iv->n++] = x;
  return 0;
}

/* The group-commit contract: the caller owns the transaction, so acks follow its commit. */
static int need_tx(srv_sched_t *s) {
  if (srv_store_in_tx(s->store)) return 0;
  return srv_store_failf(s->store, NQ_ETXN, "scheduler call outside a transaction");
}

/* The client must exist and not be banned; its activity is recorded. */
static int client_ok(srv_sched_t *s, int64_t client_id, int64_t now) {
  srv_client_t c;
  int rc = srv_client_get(s->store, client_id, &c);
  if (rc) return rc;
  if (c.banned) return srv_store_failf(s->store, NQ_EBANNED, "client %s is banned", c.name);
  return srv_client_touch(s->store, client_id, now);
}

static int step_done(srv_store_t *st, sqlite3_stmt *q, const char *what) {
  int sr = sqlite3_step(q);
  sqlite3_reset(q);
  return sr == SQLITE_DONE || sr == SQLITE_ROW ? 0 : srv_store_fail(st, what);
}

/* Run one UPDATE with up to three integer parameters. */
static int exec3(srv_store_t *st, const char *sql, int64_t a, int64_t b, int64_t c) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, sql, &q);
  if (rc) return rc;
  int np = sqlite3_bind_parameter_count(q);
  if (np >= 1) sqlite3_bind_int64(q, 1, a);
  if (np >= 2) sqlite3_bind_int64(q, 2, b);
  if (np >= 3) sqlite3_bind_int64(q, 3, c);
  return step_done(st, q, sql);
}

/* ---- expiry ------------------------------------------------------------------------------- */

/* Leases past their deadline become expired; their units need a replica again. A unit with
 * several expired leases is refreshed once per lease, which is harmless (refresh recounts). */
static int expire_sweep(srv_store_t *st, int64_t now, int64_t *n_expired) {
  idvec_t units = {0};
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "SELECT unit_id FROM assignments "
                              "WHERE state = 'leased' AND deadline <= ?1", &q);
  if (rc) goto out;
  sqlite3_bind_int64(q, 1, now);
  int sr;
  while ((sr = sqlite3_step(q)) == SQLITE_ROW)
    if ((rc = idvec_push(&units, sqlite3_column_int64(q, 0))) != 0) break;
  sqlite3_reset(q);
  if (rc) { rc = srv_store_failf(st, rc, "expire: out of memory"); goto out; }
  if (sr != SQLITE_ROW && sr != SQLITE_DONE) { rc = srv_store_fail(st, "expire scan"); goto out; }
  if (units.n == 0) goto out;
  rc = exec3(st, "UPDATE assignments SET state = 'expired' "
                 "WHERE state = 'leased' AND deadline <= ?1", now, 0, 0);
  for (size_t i = 0; i < units.n && rc == 0; i++) rc = srv_store_unit_refresh(st, units.v[i]);
out:
  if (n_expired) *n_expired = rc ? 0 : (int64_t)units.n;
  free(units.v);
  return rc;
}

int srv_sched_expire(srv_sched_t *s, int64_t now, int64_t *n_expired) {
  int rc = need_tx(s);
  if (rc == 0) rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  return srv_store_release(s->store, expire_sweep(s->store, now, n_expired));
}

int srv_sched_next_deadline(srv_sched_t *s, int64_t *deadline) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(s->store, "SELECT coalesce(min(deadline), 0) FROM assignments "
                                    "WHERE state = 'leased'", &q);
  if (rc) return rc;
  if (sqlite3_step(q) == SQLITE_ROW) *deadline = sqlite3_column_int64(q, 0);
  else rc = srv_store_fail(s->store, "next deadline");
  sqlite3_reset(q);
  return rc;
}

/* ---- get_work ----------------------------------------------------------------------------- */

/* Re-send the client's live leases (at most `want` of them); *held gets how many it holds. */
static int resend_held(srv_sched_t *s, int64_t client_id, int want, srv_work_t *out, int *n_out,
                       int *held) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(s->store, "SELECT a.id, a.unit_id, u.text, a.deadline "
                                    "FROM assignments a JOIN units u ON u.id = a.unit_id "
                                    "WHERE a.client_id = ?1 AND a.state = 'leased' ORDER BY a.id", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, client_id);
  int sr;
  *held = 0;
  while ((sr = sqlite3_step(q)) == SQLITE_ROW) {
    (*held)++;
    if (*n_out >= want) continue;
    srv_work_t *w = &out[(*n_out)++];
    w->id = sqlite3_column_int64(q, 0);
    w->unit_id = sqlite3_column_int64(q, 1);
    const char *t = (const char *)sqlite3_column_text(q, 2);
    snprintf(w->unit, sizeof w->unit, "%s", t ? t : "");
    w->deadline = sqlite3_column_int64(q, 3);
    w->resent = 1;
  }
  if (sr != SQLITE_DONE) rc = srv_store_fail(s->store, "resend");
  sqlite3_reset(q);
  return rc;
}

/* Units being worked on that still need a replica: leasing them first finishes quorums sooner,
 * which both verifies work earlier and exposes bad clients earlier. A unit is never given to a
 * client that holds or reported an assignment for it; one whose lease merely expired (no result)
 * may get it again, on the same assignment row (see lease_new): otherwise a job with few clients
 * stalls for good once every eligible client has let a lease of one unit expire. */
static const char *const sql_pick_open =
    "SELECT id, text FROM units WHERE job_id = ?1 AND need > 0 "
    "AND state IN ('leased', 'awaiting') AND NOT EXISTS (SELECT 1 FROM assignments a "
    "WHERE a.unit_id = units.id AND a.client_id = ?2 AND a.state != 'expired') "
    "ORDER BY idx LIMIT ?3";
static const char *const sql_pick_pending =
    "SELECT id, text FROM units WHERE job_id = ?1 AND state = 'pending' AND need > 0 "
    "AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.unit_id = units.id "
    "AND a.client_id = ?2 AND a.state != 'expired') ORDER BY idx LIMIT ?3";

int64_t srv_sched_lease_for(const srv_sched_config_t *cfg, double mean, int ahead) {
  int64_t max = cfg->lease_seconds, min = cfg->lease_min < max ? cfg->lease_min : max;
  if (mean < 0 || ahead < 0) return max;
  double x = LEASE_SLACK * mean * (ahead + 1); /* seconds, rounded up below */
  if (!(x < (double)(max - min))) return max;  /* also catches NaN */
  int64_t up = (int64_t)x;
  if ((double)up < x) up++;
  return min + up;
}

/* The client's expected seconds per unit in this job: the mean of its last LEASE_HISTORY reported
 * solve times (newest first through assignments_client_reported), or -1 with fewer than
 * LEASE_HISTORY_MIN of them. */
static int expected_seconds(srv_sched_t *s, int64_t client_id, double *mean) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(s->store, "SELECT count(*), coalesce(avg(x), 0) FROM ("
                                    "SELECT max(a.seconds, 0) AS x FROM assignments a "
                                    "JOIN units u ON u.id = a.unit_id "
                                    "WHERE a.client_id = ?1 AND a.seconds IS NOT NULL "
                                    "AND u.job_id = ?2 ORDER BY a.id DESC LIMIT ?3)", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, client_id);
  sqlite3_bind_int64(q, 2, s->job.id);
  sqlite3_bind_int(q, 3, LEASE_HISTORY);
  *mean = -1;
  if (sqlite3_step(q) == SQLITE_ROW) {
    if (sqlite3_column_int(q, 0) >= LEASE_HISTORY_MIN) *mean = sqlite3_column_double(q, 1);
  } else {
    rc = srv_store_fail(s->store, "expected seconds");
  }
  sqlite3_reset(q);
  return rc;
}

/* Pick up to `room` units with `sql` and lease each to the client; `ahead` counts the client's
 * assignments before the first of them (it grows by one per lease), `mean` is its expected seconds
 * per unit. The picks are read completely before any insert, so the SELECT never sees its own
 * writes. */
static int lease_new(srv_sched_t *s, const char *sql, int64_t client_id, int64_t now, int room,
                     int ahead, double mean, srv_work_t *out, int *n_out) {
  sqlite3_stmt *q;
  int first = *n_out;
  int rc = srv_store_stmt(s->store, sql, &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, s->job.id);
  sqlite3_bind_int64(q, 2, client_id);
  sqlite3_bind_int(q, 3, room);
  int sr;
  while ((sr = sqlite3_step(q)) == SQLITE_ROW && *n_out - first < room) {
    srv_work_t *w = &out[(*n_out)++];
    memset(w, 0, sizeof *w);
    w->unit_id = sqlite3_column_int64(q, 0);
    const char *t = (const char *)sqlite3_column_text(q, 1);
    snprintf(w->unit, sizeof w->unit, "%s", t ? t : "");
  }
  sqlite3_reset(q);
  if (sr != SQLITE_DONE && sr != SQLITE_ROW) return srv_store_fail(s->store, "pick units");
  /* A new row, or the client's own expired one for the unit leased again (same id: still one
   * assignment, so at most one result, per unit and client). */
  if ((rc = srv_store_stmt(s->store, "INSERT INTO assignments(unit_id, client_id, issued, "
                                     "deadline) VALUES (?1, ?2, ?3, ?4) "
                                     "ON CONFLICT(unit_id, client_id) DO UPDATE SET "
                                     "state = 'leased', issued = excluded.issued, "
                                     "deadline = excluded.deadline WHERE state = 'expired' "
                                     "RETURNING id", &q)) != 0)
    return rc;
  for (int i = first; i < *n_out && rc == 0; i++) {
    srv_work_t *w = &out[i];
    w->deadline = now + srv_sched_lease_for(&s->cfg, mean, ahead + (i - first));
    sqlite3_bind_int64(q, 1, w->unit_id);
    sqlite3_bind_int64(q, 2, client_id);
    sqlite3_bind_int64(q, 3, now);
    sqlite3_bind_int64(q, 4, w->deadline);
    if (sqlite3_step(q) != SQLITE_ROW) {
      rc = srv_store_fail(s->store, "lease");
      sqlite3_reset(q);
      break;
    }
    w->id = sqlite3_column_int64(q, 0);
    sqlite3_reset(q);
    rc = srv_store_unit_refresh(s->store, w->unit_id);
  }
  return rc;
}

int srv_sched_get_work(srv_sched_t *s, int64_t client_id, int want, int64_t now, srv_work_t *out,
                       int *n_out, srv_nowork_t *why) {
  *n_out = 0;
  *why = SRV_NOWORK_PENDING;
  if (want < 1 || want > WANT_MAX)
    return srv_store_failf(s->store, NQ_EINVAL, "want %d outside 1..%d", want, WANT_MAX);
  int rc = need_tx(s);
  if (rc == 0) rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  int held = 0;
  if ((rc = client_ok(s, client_id, now)) != 0) goto out;
  if ((rc = expire_sweep(s->store, now, NULL)) != 0) goto out;
  if ((rc = srv_job_get(s->store, s->job.id, &s->job)) != 0) goto out;
  if (s->job.state == SRV_JOB_DONE) {
    *why = SRV_NOWORK_DONE;
    goto out;
  }
  if ((rc = resend_held(s, client_id, want, out, n_out, &held)) != 0) goto out;
  int room = want - *n_out;
  if (room > s->cfg.max_outstanding - held) room = s->cfg.max_outstanding - held;
  double mean = -1;
  if (room > 0 && (rc = expected_seconds(s, client_id, &mean)) != 0) goto out;
  int before = *n_out;
  if (room > 0) rc = lease_new(s, sql_pick_open, client_id, now, room, held, mean, out, n_out);
  int leased = *n_out - before;
  room -= leased;
  if (rc == 0 && room > 0)
    rc = lease_new(s, sql_pick_pending, client_id, now, room, held + leased, mean, out, n_out);
out:
  rc = srv_store_release(s->store, rc);
  if (rc) *n_out = 0;
  else if (*n_out > held) *why = SRV_NOWORK_NONE; /* something new was leased */
  else if (*why != SRV_NOWORK_DONE && held >= s->cfg.max_outstanding) *why = SRV_NOWORK_CAP;
  return rc;
}

/* ---- progress ----------------------------------------------------------------------------- */

/* An expired lease may be revived while its unit is undecided and still short of replicas, i.e.
 * nobody has been given the unit in its place; otherwise the client's work would be redundant. */
static int revive(srv_sched_t *s, const srv_asg_info_t *a, int64_t deadline) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(s->store, "SELECT need FROM units WHERE id = ?1 "
                                    "AND state NOT IN ('verified', 'disputed')", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, a->unit_id);
  int sr = sqlite3_step(q);
  int need = sr == SQLITE_ROW ? sqlite3_column_int(q, 0) : 0;
  sqlite3_reset(q);
  if (sr != SQLITE_ROW && sr != SQLITE_DONE) return srv_store_fail(s->store, "revive");
  if (need <= 0)
    return srv_store_failf(s->store, NQ_ENOTFOUND, "assignment %lld expired and was reissued",
                           (long long)a->id);
  rc = exec3(s->store, "UPDATE assignments SET state = 'leased', deadline = ?2 WHERE id = ?1",
             a->id, deadline, 0);
  if (rc == 0) rc = srv_store_unit_refresh(s->store, a->unit_id);
  return rc;
}

static int progress_locked(srv_sched_t *s, int64_t client_id, int64_t asg_id, int64_t now,
                           int64_t *deadline) {
  srv_asg_info_t a;
  int rc = srv_asg_get(s->store, asg_id, &a);
  if (rc) return rc;
  /* The protocol does not tell a client whether someone else's assignment exists. */
  if (a.client_id != client_id)
    return srv_store_failf(s->store, NQ_ENOTFOUND, "no assignment %lld", (long long)asg_id);
  int64_t d = now + s->cfg.lease_seconds;
  if (a.state == SRV_ASG_LEASED) {
    /* Never shorten a lease: a late or reordered progress must not pull the deadline back. */
    if (d < a.deadline) d = a.deadline;
    rc = exec3(s->store, "UPDATE assignments SET deadline = ?2 WHERE id = ?1", asg_id, d, 0);
  } else if (a.state == SRV_ASG_EXPIRED) {
    rc = revive(s, &a, d);
  } else {
    rc = srv_store_failf(s->store, NQ_ENOTFOUND, "assignment %lld already reported",
                         (long long)asg_id);
  }
  if (rc == 0) *deadline = d;
  return rc;
}

int srv_sched_progress(srv_sched_t *s, int64_t client_id, int64_t assignment_id, int64_t now,
                       int64_t *deadline) {
  int rc = need_tx(s);
  if (rc == 0) rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  rc = client_ok(s, client_id, now);
  if (rc == 0) rc = progress_locked(s, client_id, assignment_id, now, deadline);
  return srv_store_release(s->store, rc);
}

/* ---- result: validation ------------------------------------------------------------------- */

/* The assignment as the result handler needs it. */
typedef struct asg_ctx_s {
  int64_t id, client_id, unit_id, job_id;
  int reported;            /* a result is already in */
  char unit[NQ_UNIT_TEXT_MAX];
  char part;               /* 'c' or 's' */
  srv_unit_state_t ustate;
} asg_ctx_t;

static int asg_load(srv_sched_t *s, int64_t asg_id, asg_ctx_t *a) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(s->store, "SELECT a.client_id, a.reported_at IS NOT NULL, u.id, "
                                    "u.job_id, u.text, u.part, u.state FROM assignments a "
                                    "JOIN units u ON u.id = a.unit_id WHERE a.id = ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, asg_id);
  int sr = sqlite3_step(q);
  if (sr == SQLITE_ROW) {
    memset(a, 0, sizeof *a);
    a->id = asg_id;
    a->client_id = sqlite3_column_int64(q, 0);
    a->reported = sqlite3_column_int(q, 1);
    a->unit_id = sqlite3_column_int64(q, 2);
    a->job_id = sqlite3_column_int64(q, 3);
    snprintf(a->unit, sizeof a->unit, "%s", (const char *)sqlite3_column_text(q, 4));
    const char *part = (const char *)sqlite3_column_text(q, 5);
    a->part = part ? part[0] : '?';
    int st = srv_unit_state_parse((const char *)sqlite3_column_text(q, 6));
    a->ustate = st < 0 ? SRV_UNIT_PENDING : (srv_unit_state_t)st;
  } else if (sr == SQLITE_DONE) {
    rc = srv_store_failf(s->store, NQ_ENOTFOUND, "no assignment %lld", (long long)asg_id);
  } else {
    rc = srv_store_fail(s->store, "assignment load");
  }
  sqlite3_reset(q);
  return rc;
}

/* Numbers no correct solver can produce are refused before anything is stored. */
static int result_check(srv_store_t *st, const asg_ctx_t *a, const char *unit_text,
                        const nq_counts_t *c, double seconds, const char *solver) {
  if (!unit_text || strcmp(unit_text, a->unit) != 0)
    return srv_store_failf(st, NQ_EINVAL, "assignment %lld is unit %s, not %s", (long long)a->id,
                           a->unit, unit_text ? unit_text : "(none)");
  if (!c) return srv_store_failf(st, NQ_EINVAL, "no counts");
  if (c->c2 > INT64_MAX || c->c4 > INT64_MAX || c->c8 > INT64_MAX || c->nodes > INT64_MAX)
    return srv_store_failf(st, NQ_EINVAL, "count above 2^63-1");
  if (c->count1 != 0) return srv_store_failf(st, NQ_EINVAL, "count1 is only for N = 1");
  if (c->nodes < 1) return srv_store_failf(st, NQ_EINVAL, "nodes must be >= 1");
  if ((nq_u128)c->c2 + c->c4 + c->c8 > c->nodes)
    return srv_store_failf(st, NQ_EINVAL, "more solutions than nodes");
  if (a->part == 'c' && (c->c2 || c->c4))
    return srv_store_failf(st, NQ_EINVAL, "corner unit with COUNT2/COUNT4 solutions");
  if (!(seconds >= 0) || !isfinite(seconds))
    return srv_store_failf(st, NQ_EINVAL, "bad seconds");
  if (!solver || !*solver || strlen(solver) > SRV_SOLVER_MAX)
    return srv_store_failf(st, NQ_EINVAL, "bad solver version");
  return 0;
}

static int result_store(srv_store_t *st, int64_t asg_id, const nq_counts_t *c, double seconds,
                        const char *solver, const char *state, int late, int64_t now) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "UPDATE assignments SET state = ?2, late = ?3, c2 = ?4, c4 = ?5, "
                              "c8 = ?6, nodes = ?7, seconds = ?8, solver = ?9, reported_at = ?10 "
                              "WHERE id = ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, asg_id);
  sqlite3_bind_text(q, 2, state, -1, SQLITE_STATIC);
  sqlite3_bind_int(q, 3, late);
  sqlite3_bind_int64(q, 4, (int64_t)c->c2);
  sqlite3_bind_int64(q, 5, (int64_t)c->c4);
  sqlite3_bind_int64(q, 6, (int64_t)c->c8);
  sqlite3_bind_int64(q, 7, (int64_t)c->nodes);
  sqlite3_bind_double(q, 8, seconds);
  sqlite3_bind_text(q, 9, solver, -1, SQLITE_STATIC);
  sqlite3_bind_int64(q, 10, now);
  return step_done(st, q, "store result");
}

/* ---- result: trust ------------------------------------------------------------------------ */

static const char *const sql_mark_valid = "UPDATE assignments SET state = 'valid' WHERE id = ?1";
static const char *const sql_mark_invalid =
    "UPDATE assignments SET state = 'invalid' WHERE id = ?1";
static const char *const sql_count_valid = "UPDATE clients SET valid = valid + 1 WHERE id = ?1";
static const char *const sql_count_invalid =
    "UPDATE clients SET invalid = invalid + 1 WHERE id = ?1";

/* Ban a client once its invalid results reach the threshold and outnumber its valid ones: a rare
 * honest loss (a flipped bit) among many agreeing results is tolerated, a liar is not. */
static int maybe_ban(srv_sched_t *s, int64_t client_id, int64_t now, srv_result_info_t *info) {
  if (s->cfg.ban_threshold <= 0) return 0;
  srv_client_t c;
  int rc = srv_client_get(s->store, client_id, &c);
  if (rc || c.banned || c.invalid < s->cfg.ban_threshold || c.invalid <= c.valid) return rc;
  rc = srv_client_ban(s->store, client_id, now);
  if (rc == 0) info->banned++;
  return rc;
}

/* Mark one result valid or invalid and count it for its client. */
static int judge(srv_sched_t *s, int64_t asg_id, int64_t client_id, int valid, int64_t now,
                 srv_result_info_t *info) {
  int rc = exec3(s->store, valid ? sql_mark_valid : sql_mark_invalid, asg_id, 0, 0);
  if (rc == 0) rc = exec3(s->store, valid ? sql_count_valid : sql_count_invalid, client_id, 0, 0);
  if (rc == 0 && !valid) rc = maybe_ban(s, client_id, now, info);
  return rc;
}

/* ---- result: quorum ----------------------------------------------------------------------- */

typedef struct res_s {
  int64_t id, client_id;
  uint64_t c2, c4, c8, nodes;
  char solver[SRV_SOLVER_MAX + 1];
  int member; /* in the winning group */
} res_t;

/* The undecided results of a unit, oldest first. */
static int res_load(srv_store_t *st, int64_t unit_id, res_t **out, int *count) {
  sqlite3_stmt *q;
  res_t *v = NULL;
  int n = 0, cap = 0, sr;
  int rc = srv_store_stmt(st, "SELECT id, client_id, c2, c4, c8, nodes, solver FROM assignments "
                              "WHERE unit_id = ?1 AND state = 'reported' ORDER BY id", &q);
  if (rc) goto out;
  sqlite3_bind_int64(q, 1, unit_id);
  while ((sr = sqlite3_step(q)) == SQLITE_ROW) {
    if (n == cap) {
      cap = cap ? cap * 2 : 8;
      res_t *p = realloc(v, (size_t)cap * sizeof *p);
      if (!p) { rc = srv_store_failf(st, NQ_ENOMEM, "results: out of memory"); break; }
      v = p;
    }
    res_t *r = &v[n++];
    memset(r, 0, sizeof *r);
    r->id = sqlite3_column_int64(q, 0);
    r->client_id = sqlite3_column_int64(q, 1);
    r->c2 = (uint64_t)sqlite3_column_int64(q, 2);
    r->c4 = (uint64_t)sqlite3_column_int64(q, 3);
    r->c8 = (uint64_t)sqlite3_column_int64(q, 4);
    r->nodes = (uint64_t)sqlite3_column_int64(q, 5);
    const char *sv = (const char *)sqlite3_column_text(q, 6);
    snprintf(r->solver, sizeof r->solver, "%s", sv ? sv : "");
  }
  sqlite3_reset(q);
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, "results load");
out:
  if (rc) { free(v); v = NULL; n = 0; }
  *out = v;
  *count = n;
  return rc;
}

static int same_counts(const res_t *a, const res_t *b) {
  return a->c2 == b->c2 && a->c4 == b->c4 && a->c8 == b->c8;
}

/* Results of one counts class and one solver version: their nodes must agree too. */
static int same_kind(const res_t *a, const res_t *b) {
  return same_counts(a, b) && strcmp(a->solver, b->solver) == 0;
}

/* The largest set of mutually agreeing results with the counts of r[anchor]. Agreement is not
 * transitive across solver versions, so: within the class, take for each solver version the
 * nodes value most results share (the oldest on a tie); results of different versions agree on
 * counts alone. With mark, the chosen results get member = 1. Results are few (<= max_results
 * plus late ones), so the quadratic scans cost nothing. */
static int group(res_t *r, int n, int anchor, int mark) {
  int total = 0;
  for (int i = 0; i < n; i++) {
    if (!same_counts(&r[i], &r[anchor])) continue;
    int first = 1;
    for (int j = 0; j < i && first; j++) first = !same_kind(&r[j], &r[i]);
    if (!first) continue; /* this solver version was handled at its first result */
    int best = 0, best_j = i;
    for (int j = i; j < n; j++) {
      if (!same_kind(&r[j], &r[i])) continue;
      int k = 0;
      for (int m = 0; m < n; m++) k += same_kind(&r[m], &r[j]) && r[m].nodes == r[j].nodes;
      if (k > best) { best = k; best_j = j; }
    }
    total += best;
    for (int m = 0; mark && m < n; m++)
      if (same_kind(&r[m], &r[best_j]) && r[m].nodes == r[best_j].nodes) r[m].member = 1;
  }
  return total;
}

/* The biggest agreeing group over all counts classes; *anchor gets a result of it. */
static int best_group(res_t *r, int n, int *anchor) {
  int best = 0;
  *anchor = 0;
  for (int i = 0; i < n; i++) {
    int g = group(r, n, i, 0);
    if (g > best) { best = g; *anchor = i; }
  }
  return best;
}

/* Close a unit (verified or disputed): no more replicas; leases still out are released, so the
 * holders learn from `progress` that the work is no longer needed. */
static int unit_close(srv_store_t *st, int64_t unit_id) {
  int rc = exec3(st, "UPDATE assignments SET state = 'expired' WHERE unit_id = ?1 "
                     "AND state = 'leased'", unit_id, 0, 0);
  if (rc == 0) rc = srv_store_unit_refresh(st, unit_id);
  return rc;
}

/* When no unit of the job is open or disputed, the job is done: its final totals are the sum of
 * the verified units, written in the same transaction as the last verification. */
static int job_finish_check(srv_sched_t *s, int64_t job_id, int64_t now, srv_result_info_t *info) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(s->store, "SELECT 1 FROM units WHERE job_id = ?1 AND state IN "
                          "('pending', 'leased', 'awaiting', 'disputed') LIMIT 1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, job_id);
  int sr = sqlite3_step(q);
  sqlite3_reset(q);
  if (sr == SQLITE_ROW) return 0;
  if (sr != SQLITE_DONE) return srv_store_fail(s->store, "job open units");
  srv_stats_t stats;
  if ((rc = srv_store_stats(s->store, job_id, now, 0, 0, &stats)) != 0) return rc;
  const nq_totals_t *t = &stats.verified;
  char c2[40], c4[40], c8[40], nodes[40], total[40], uniq[40];
  if ((rc = srv_store_stmt(s->store, "UPDATE jobs SET state = 'done', finished = ?2, c2 = ?3, "
                           "c4 = ?4, c8 = ?5, nodes = ?6, total = ?7, uniq = ?8 WHERE id = ?1",
                           &q)) != 0)
    return rc;
  sqlite3_bind_int64(q, 1, job_id);
  sqlite3_bind_int64(q, 2, now);
  sqlite3_bind_text(q, 3, nq_u128_str(t->c2, c2), -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 4, nq_u128_str(t->c4, c4), -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 5, nq_u128_str(t->c8, c8), -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 6, nq_u128_str(t->nodes, nodes), -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 7, nq_u128_str(nq_totals_total(t), total), -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 8, nq_u128_str(nq_totals_unique(t), uniq), -1, SQLITE_STATIC);
  if ((rc = step_done(s->store, q, "job done")) == 0) info->job_done = 1;
  return rc;
}

/* The unit reached its quorum: store its counts, judge every result, close it. The unit's nodes
 * are those of the oldest winning result (they can differ between solver versions). */
static int unit_verify(srv_sched_t *s, int64_t unit_id, int64_t job_id, res_t *r, int n,
                       int anchor, int64_t now, srv_result_info_t *info) {
  group(r, n, anchor, 1);
  int w = 0;
  while (!r[w].member) w++;
  sqlite3_stmt *q;
  int rc = srv_store_stmt(s->store, "UPDATE units SET state = 'verified', c2 = ?2, c4 = ?3, "
                          "c8 = ?4, nodes = ?5, verified_at = ?6, need = 0 WHERE id = ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, unit_id);
  sqlite3_bind_int64(q, 2, (int64_t)r[w].c2);
  sqlite3_bind_int64(q, 3, (int64_t)r[w].c4);
  sqlite3_bind_int64(q, 4, (int64_t)r[w].c8);
  sqlite3_bind_int64(q, 5, (int64_t)r[w].nodes);
  sqlite3_bind_int64(q, 6, now);
  if ((rc = step_done(s->store, q, "verify")) != 0) return rc;
  if ((rc = unit_close(s->store, unit_id)) != 0) return rc;
  /* Valid ones first, so a client's wins are counted before its losses are weighed for a ban. */
  for (int pass = 1; pass >= 0 && rc == 0; pass--)
    for (int i = 0; i < n && rc == 0; i++)
      if (r[i].member == pass) rc = judge(s, r[i].id, r[i].client_id, pass, now, info);
  if (rc == 0) info->unit_verified = 1;
  if (rc == 0) rc = job_finish_check(s, job_id, now, info);
  return rc;
}

/* After a new result for an undecided unit: verify it, dispute it, or leave it open. */
static int quorum_check(srv_sched_t *s, const asg_ctx_t *a, int64_t now, srv_result_info_t *info) {
  srv_job_t job;
  res_t *r = NULL;
  int n = 0, anchor = 0;
  int rc = srv_job_get(s->store, a->job_id, &job);
  if (rc == 0) rc = res_load(s->store, a->unit_id, &r, &n);
  if (rc) goto out;
  int best = best_group(r, n, &anchor);
  rc = exec3(s->store, "UPDATE units SET best = ?2 WHERE id = ?1", a->unit_id, best, 0);
  if (rc == 0) rc = srv_store_unit_refresh(s->store, a->unit_id);
  if (rc) goto out;
  /* The cap counts every result of the unit (as `need` does), so results that arrived while it
   * was disputed, before an operator retry, use up its allowance too. */
  srv_unit_info_t u;
  if ((rc = srv_unit_get(s->store, a->unit_id, &u)) != 0) goto out;
  if (best >= job.quorum) {
    rc = unit_verify(s, a->unit_id, a->job_id, r, n, anchor, now, info);
  } else if (u.results >= job.max_results + u.extra_results) {
    rc = exec3(s->store, "UPDATE units SET state = 'disputed', need = 0 WHERE id = ?1",
               a->unit_id, 0, 0);
    if (rc == 0) rc = unit_close(s->store, a->unit_id);
    if (rc == 0) info->unit_disputed = 1;
  }
out:
  free(r);
  return rc;
}

/* A result for an already verified unit is judged against the winners: same counts, and the same
 * nodes as every valid result of the same solver version. */
static int judge_late(srv_sched_t *s, const asg_ctx_t *a, const nq_counts_t *c,
                      const char *solver, int64_t now, srv_result_info_t *info) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(s->store, "SELECT u.c2 = ?2 AND u.c4 = ?3 AND u.c8 = ?4 AND NOT EXISTS "
                          "(SELECT 1 FROM assignments v WHERE v.unit_id = u.id AND "
                          "v.state = 'valid' AND v.solver = ?5 AND v.nodes != ?6) "
                          "FROM units u WHERE u.id = ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, a->unit_id);
  sqlite3_bind_int64(q, 2, (int64_t)c->c2);
  sqlite3_bind_int64(q, 3, (int64_t)c->c4);
  sqlite3_bind_int64(q, 4, (int64_t)c->c8);
  sqlite3_bind_text(q, 5, solver, -1, SQLITE_STATIC);
  sqlite3_bind_int64(q, 6, (int64_t)c->nodes);
  int sr = sqlite3_step(q);
  int valid = sr == SQLITE_ROW ? sqlite3_column_int(q, 0) : 0;
  sqlite3_reset(q);
  if (sr != SQLITE_ROW) return srv_store_fail(s->store, "late judge");
  return judge(s, a->id, a->client_id, valid, now, info);
}

static int result_locked(srv_sched_t *s, int64_t client_id, int64_t asg_id, const char *unit_text,
                         const nq_counts_t *c, double seconds, const char *solver, int64_t now,
                         srv_result_info_t *info) {
  asg_ctx_t a;
  int rc = asg_load(s, asg_id, &a);
  if (rc) return rc;
  if (a.client_id != client_id)
    return srv_store_failf(s->store, NQ_EAUTH, "assignment %lld is not yours", (long long)asg_id);
  if ((rc = client_ok(s, client_id, now)) != 0) return rc;
  if ((rc = result_check(s->store, &a, unit_text, c, seconds, solver)) != 0) return rc;
  if (a.reported) {
    info->status = SRV_RESULT_DUPLICATE;
    return 0;
  }
  if (a.ustate == SRV_UNIT_VERIFIED) {
    info->status = SRV_RESULT_LATE;
    rc = result_store(s->store, asg_id, c, seconds, solver, "reported", 1, now);
    if (rc == 0) rc = srv_store_unit_refresh(s->store, a.unit_id);
    if (rc == 0) rc = judge_late(s, &a, c, solver, now, info);
  } else if (a.ustate == SRV_UNIT_DISPUTED) {
    /* No consensus to judge against: keep it for the operator. */
    info->status = SRV_RESULT_LATE;
    rc = result_store(s->store, asg_id, c, seconds, solver, "late", 1, now);
    if (rc == 0) rc = srv_store_unit_refresh(s->store, a.unit_id);
  } else {
    info->status = SRV_RESULT_ACCEPTED;
    rc = result_store(s->store, asg_id, c, seconds, solver, "reported", 0, now);
    if (rc == 0) rc = quorum_check(s, &a, now, info);
  }
  return rc;
}

int srv_sched_result(srv_sched_t *s, int64_t client_id, int64_t assignment_id,
                     const char *unit_text, const nq_counts_t *counts, double seconds,
                     const char *solver, int64_t now, srv_result_info_t *info) {
  srv_result_info_t tmp;
  if (!info) info = &tmp;
  memset(info, 0, sizeof *info);
  int rc = need_tx(s);
  if (rc == 0) rc = srv_store_savepoint(s->store);
  if (rc) return rc;
  rc = srv_store_release(s->store, result_locked(s, client_id, assignment_id, unit_text, counts,
                                                 seconds, solver, now, info));
  if (rc) memset(info, 0, sizeof *info);
  return rc;
}
