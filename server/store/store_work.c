/* nq-server: the store's units and assignments -- what the scheduler reads and changes -- and the
 * scheduler's queries as typed functions (see store_work.h, layer 2 of store.h; docs/store.md
 * for the model). */
#include "store_work.h"
#include "store_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The refresh multiplies in SQL what SRV_DISPUTE_FACTOR says in C. */
#define DISPUTE_FACTOR_SQL "3"
_Static_assert(SRV_DISPUTE_FACTOR == 3, "DISPUTE_FACTOR_SQL must match SRV_DISPUTE_FACTOR");

/* ---- units -------------------------------------------------------------------------------- */

static const char *const unit_state_names[SRV_UNIT_NSTATES] = {
    NQ_UNIT_STATE_MAP(NQ_ENUM_NAME_ONE)};

const char *srv_unit_state_name(srv_unit_state_t s) {
  return (unsigned)s < SRV_UNIT_NSTATES ? unit_state_names[s] : "?";
}

int srv_unit_state_parse(const char *name) {
  int i = nq_name_index(unit_state_names, SRV_UNIT_NSTATES, name);
  return i < 0 ? NQ_EINVAL : i;
}

#define UNIT_COLS "id, job_id, idx, text, state, live, results, c2, c4, c8, nodes, verified_at, " \
                  "extra_results, part, est_nodes, best, others, spot, contest"
#define UNIT_COLS_U "u.id, u.job_id, u.idx, u.text, u.state, u.live, u.results, u.c2, u.c4, " \
                    "u.c8, u.nodes, u.verified_at, u.extra_results, u.part, u.est_nodes, " \
                    "u.best, u.others, u.spot, u.contest"

/* A unit from columns k.. of s (UNIT_COLS). */
static void unit_row(sqlite3_stmt *s, int k, srv_unit_info_t *u) {
  char state[16], part[4];
  memset(u, 0, sizeof *u);
  u->id = col_i64(s, k + 0);
  u->job_id = col_i64(s, k + 1);
  u->idx = col_i64(s, k + 2);
  col_str(s, k + 3, u->text, sizeof u->text);
  col_str(s, k + 4, state, sizeof state);
  int st = srv_unit_state_parse(state);
  u->state = st < 0 ? SRV_UNIT_PENDING : (srv_unit_state_t)st;
  u->live = sqlite3_column_int(s, k + 5);
  u->results = sqlite3_column_int(s, k + 6);
  u->counts.c2 = col_u64(s, k + 7);
  u->counts.c4 = col_u64(s, k + 8);
  u->counts.c8 = col_u64(s, k + 9);
  u->counts.nodes = col_u64(s, k + 10);
  u->verified_at = col_i64(s, k + 11);
  u->extra_results = sqlite3_column_int(s, k + 12);
  col_str(s, k + 13, part, sizeof part);
  u->part = part[0] ? part[0] : '?';
  u->est_nodes = sqlite3_column_type(s, k + 14) == SQLITE_NULL ? -1 : col_i64(s, k + 14);
  u->best = sqlite3_column_int(s, k + 15);
  u->others = sqlite3_column_int(s, k + 16);
  u->spot = sqlite3_column_int(s, k + 17);
  u->contest = sqlite3_column_int(s, k + 18);
}

int srv_unit_get(srv_store_t *st, int64_t unit_id, srv_unit_info_t *out) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT " UNIT_COLS " FROM units WHERE id = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, unit_id);
  int sr = sqlite3_step(s);
  if (sr == SQLITE_ROW) unit_row(s, 0, out);
  else if (sr == SQLITE_DONE) rc = srv_store_failf(st, NQ_ENOTFOUND, "no unit %lld", (long long)unit_id);
  else rc = srv_store_fail(st, "unit get");
  sqlite3_reset(s);
  return rc;
}

/* The text of unit `id` parsed; NQ_ENOTFOUND without such a unit. */
static int unit_at(srv_store_t *st, int64_t id, nq_unit_t *u) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT text FROM units WHERE id = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, id);
  int sr = sqlite3_step(s);
  if (sr == SQLITE_ROW) {
    if (nq_unit_parse((const char *)sqlite3_column_text(s, 0), u, NULL, 0) != 0)
      rc = srv_store_failf(st, NQ_EIO, "unit %lld: stored text does not parse", (long long)id);
  } else {
    rc = sr == SQLITE_DONE ? NQ_ENOTFOUND : srv_store_fail(st, "unit text");
  }
  sqlite3_reset(s);
  return rc;
}

/* Units are stored in the generator's order with consecutive ids (first_unit + idx), so a text
 * is found by a binary search over the job's id range (nq_unit_cmp): about 25 reads of the rowid
 * table at 30 million units, and no index on the text. */
int srv_unit_find_text(srv_store_t *st, int64_t job_id, const char *text, srv_unit_info_t *out) {
  if (!text) return srv_store_failf(st, NQ_EINVAL, "no unit text");
  srv_job_t job;
  nq_unit_t want, u;
  int rc = srv_job_get(st, job_id, &job);
  if (rc) return rc;
  if (nq_unit_parse(text, &want, NULL, 0) != 0 || want.n != job.n)
    return srv_store_failf(st, NQ_ENOTFOUND, "no unit %s", text);
  int64_t lo = job.first_unit, hi = job.first_unit + job.units - 1;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if ((rc = unit_at(st, mid, &u)) != 0) break;
    int c = nq_unit_cmp(&u, &want);
    if (c == 0) return srv_unit_get(st, mid, out);
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  if (rc && rc != NQ_ENOTFOUND) return rc;
  return srv_store_failf(st, NQ_ENOTFOUND, "no unit %s", text);
}

/* One statement per state, each with its state as a literal so that the partial index for it
 * applies (a bound parameter would hide it from the planner): pending, leased, awaiting and
 * disputed units come from their partial indexes; verified ones and "all" walk the job's id range
 * in order. */
#define UNIT_LIST(where) "SELECT " UNIT_COLS " FROM units WHERE job_id = ?1 AND " where \
                         " AND id BETWEEN ?2 AND ?3 ORDER BY id LIMIT ?4"
static const char *const unit_list_sql[SRV_UNIT_NSTATES + 1] = {
    UNIT_LIST("state = 'pending'"),  UNIT_LIST("state = 'leased'"),
    UNIT_LIST("state = 'awaiting'"), UNIT_LIST("state = 'verified'"),
    UNIT_LIST("state = 'disputed'"), UNIT_LIST("1")};

int srv_unit_list(srv_store_t *st, int64_t job_id, int state, int limit, srv_unit_cb cb,
                  void *arg) {
  if (state >= SRV_UNIT_NSTATES) return srv_store_failf(st, NQ_EINVAL, "bad unit state");
  srv_job_t job;
  int rc = srv_job_get(st, job_id, &job);
  if (rc) return rc;
  sqlite3_stmt *s;
  if ((rc = srv_store_stmt(st, unit_list_sql[state < 0 ? SRV_UNIT_NSTATES : state], &s)) != 0)
    return rc;
  sqlite3_bind_int64(s, 1, job_id);
  sqlite3_bind_int64(s, 2, job.first_unit);
  sqlite3_bind_int64(s, 3, job.first_unit + job.units - 1);
  sqlite3_bind_int(s, 4, limit > 0 ? limit : -1);
  int sr = SQLITE_DONE;
  while (rc == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    srv_unit_info_t u;
    unit_row(s, 0, &u);
    rc = cb(&u, arg);
  }
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, "unit list");
  sqlite3_reset(s);
  return rc;
}

/* Recount live leases and results from the assignments (no counter drift), then derive the open
 * unit's state and need. Verified and disputed units keep their state and need 0. */
int srv_store_unit_refresh(srv_store_t *st, int64_t unit_id) {
  static const char *count_sql =
      "UPDATE units SET "
      "live = (SELECT count(*) FROM assignments a WHERE a.unit_id = units.id AND a.state = 'leased'), "
      "results = (SELECT count(*) FROM assignments a WHERE a.unit_id = units.id "
      "           AND a.reported_at IS NOT NULL) "
      "WHERE id = ?1";
  /* need: the agreeing votes the best group still lacks for a strict majority of at least
   * quorum, within the cap on results (three times as many while disputed), less the replicas
   * out; none for a contested unit (schema 014: only a trusted owner's result settles it, and
   * such a replica is picked by srv_unit_pick_contested). spot: a verified unit's spot check is
   * leased (2) or done (3) by its assignments. */
  static const char *derive_sql =
      "UPDATE units SET "
      "state = CASE WHEN state = 'verified' OR state = 'disputed' THEN state "
      "             WHEN results > 0 THEN 'awaiting' WHEN live > 0 THEN 'leased' "
      "             ELSE 'pending' END, "
      "need = CASE WHEN state = 'verified' OR contest = 1 THEN 0 ELSE "
      "  max(0, min(max((SELECT quorum FROM jobs j WHERE j.id = units.job_id) - best, "
      "                 others - best + 1), "
      "             (SELECT max_results FROM jobs j WHERE j.id = units.job_id) "
      "             * (CASE WHEN state = 'disputed' THEN " DISPUTE_FACTOR_SQL " ELSE 1 END) "
      "             + extra_results - results) "
      "         - live) END, "
      "spot = CASE WHEN state != 'verified' OR spot = 0 THEN spot "
      "  WHEN EXISTS (SELECT 1 FROM assignments a WHERE a.unit_id = units.id AND a.spot = 1 "
      "               AND a.reported_at IS NOT NULL) THEN 3 "
      "  WHEN EXISTS (SELECT 1 FROM assignments a WHERE a.unit_id = units.id AND a.spot = 1 "
      "               AND a.state = 'leased') THEN 2 "
      "  ELSE 1 END "
      "WHERE id = ?1";
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, count_sql, &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, unit_id);
  if ((rc = srv_store_step(st, s, "unit recount")) != 0) return rc;
  if ((rc = srv_store_stmt(st, derive_sql, &s)) != 0) return rc;
  sqlite3_bind_int64(s, 1, unit_id);
  return srv_store_step(st, s, "unit state");
}

/* Re-open a disputed unit: allow `extra` results beyond those it has, back to awaiting, and let
 * the refresh derive its need (quorum - best, capped by the new allowance). Results kept aside
 * while it was disputed by an older server ('late') vote again. */
static int unit_retry_locked(srv_store_t *st, int64_t unit_id, int extra) {
  srv_unit_info_t u;
  int rc = srv_unit_get(st, unit_id, &u);
  if (rc) return rc;
  if (u.state != SRV_UNIT_DISPUTED && u.state != SRV_UNIT_AWAITING)
    return srv_store_failf(st, NQ_ESTATE, "unit %lld (%s) is %s, not disputed or awaiting",
                           (long long)u.id, u.text, srv_unit_state_name(u.state));
  /* Recount first: the allowance is relative to every result the unit has, late ones included. */
  if ((rc = srv_store_unit_refresh(st, unit_id)) != 0) return rc;
  if ((rc = srv_store_exec3(st, "UPDATE assignments SET state = 'reported' WHERE unit_id = ?1 "
                                "AND state = 'late'", unit_id, 0, 0, "unit retry")) != 0)
    return rc;
  /* Its voters are asked again for kernel evidence (schema 018): what they could not add then
   * they may now (a kernel refused by mistake, a result that no longer votes). */
  if (srv_store_schema_has(st, 18) &&
      (rc = srv_store_exec3(st, "DELETE FROM assignments WHERE unit_id = ?1 AND evidence = 2",
                            unit_id, 0, 0, "unit retry")) != 0)
    return rc;
  if ((rc = srv_store_exec3(st, "UPDATE units SET state = 'awaiting', extra_results = "
                                "max(0, results - (SELECT max_results FROM jobs j WHERE j.id = "
                                "units.job_id)) + ?2 WHERE id = ?1 AND "
                                "(state = 'disputed' OR state = 'awaiting')",
                            unit_id, extra, 0, "unit retry")) != 0)
    return rc;
  return srv_store_unit_refresh(st, unit_id);
}

/* A voided result votes again when its client can vote (neither it nor its owner banned, not
 * suspect) and no result that votes disagrees with it: the disagreement that voided it was
 * settled against the other side. */
int srv_unit_restore_votes(srv_store_t *st, int64_t unit_id, int64_t *n) {
  static const char *sql =
      "UPDATE assignments SET voided = 0 WHERE unit_id = ?1 AND voided = 1 "
      "AND reported_at IS NOT NULL AND client_id IN (SELECT c.id FROM clients c JOIN owners o "
      "ON o.id = c.owner_id WHERE c.banned = 0 AND c.suspect = 0 AND o.banned = 0) "
      "AND NOT EXISTS (SELECT 1 FROM assignments b JOIN clients c ON c.id = b.client_id "
      "JOIN owners o ON o.id = c.owner_id WHERE b.unit_id = ?1 AND b.voided = 0 "
      "AND b.reported_at IS NOT NULL AND c.banned = 0 AND c.suspect = 0 AND o.banned = 0 "
      "AND (b.c2 != assignments.c2 OR b.c4 != assignments.c4 OR b.c8 != assignments.c8))";
  *n = 0;
  int rc = srv_store_exec3(st, sql, unit_id, 0, 0, "restore votes");
  if (rc == 0) *n = sqlite3_changes(st->db);
  return rc;
}

int srv_unit_retry(srv_store_t *st, int64_t unit_id, int extra, int64_t now,
                   srv_unit_info_t *out) {
  (void)now;
  if (extra < 1 || extra > SRV_RETRY_EXTRA_MAX)
    return srv_store_failf(st, NQ_EINVAL, "extra %d outside 1..%d", extra, SRV_RETRY_EXTRA_MAX);
  int rc = srv_store_savepoint(st);
  if (rc) return rc;
  rc = srv_store_release(st, unit_retry_locked(st, unit_id, extra));
  srv_unit_info_t tmp;
  if (rc == 0) rc = srv_unit_get(st, unit_id, out ? out : &tmp);
  return rc;
}

/* ---- assignments -------------------------------------------------------------------------- */

static const char *const asg_state_names[SRV_ASG_NSTATES] = {
    SRV_ASG_STATE_MAP(NQ_ENUM_NAME_OF)};

const char *srv_asg_state_name(srv_asg_state_t s) {
  return (unsigned)s < SRV_ASG_NSTATES ? asg_state_names[s] : "?";
}

#define ASG_COLS "id, unit_id, client_id, state, issued, deadline, reported_at, late, " \
                 "c2, c4, c8, nodes, seconds, solver, progress, progress_seconds, progress_nodes, " \
                 "progress_at, net, spot, voided, " ASG_WHO("client_id", "voided") ", backend, " \
                 "hold_until"
#define ASG_COLS_A "a.id, a.unit_id, a.client_id, a.state, a.issued, a.deadline, a.reported_at, " \
                   "a.late, a.c2, a.c4, a.c8, a.nodes, a.seconds, a.solver, a.progress, " \
                   "a.progress_seconds, a.progress_nodes, a.progress_at, a.net, a.spot, a.voided, " \
                   ASG_WHO("a.client_id", "a.voided") ", a.backend, a.hold_until, " \
                   "(SELECT w.self_joined FROM clients c JOIN owners w ON w.id = c.owner_id " \
                   "WHERE c.id = a.client_id)"
#define ASG_NCOLS 26

/* The owner of the assignment's client, and whether its vote counts not (voided, or the client is
 * banned or suspect). */
#define ASG_WHO(client, voided) \
  "(SELECT c.owner_id FROM clients c WHERE c.id = " client "), " \
  "(" voided " OR (SELECT c.banned OR c.suspect FROM clients c WHERE c.id = " client "))"

static srv_asg_state_t asg_state_parse(const char *name) {
  int i = nq_name_index(asg_state_names, SRV_ASG_NSTATES, name);
  return i < 0 ? SRV_ASG_LEASED : (srv_asg_state_t)i;
}

/* An assignment from columns 0.. of s (ASG_COLS). */
static void asg_row(sqlite3_stmt *s, void *out) {
  srv_asg_info_t *a = out;
  char state[16];
  memset(a, 0, sizeof *a);
  a->id = col_i64(s, 0);
  a->unit_id = col_i64(s, 1);
  a->client_id = col_i64(s, 2);
  col_str(s, 3, state, sizeof state);
  a->state = asg_state_parse(state);
  a->issued = col_i64(s, 4);
  a->deadline = col_i64(s, 5);
  a->reported_at = col_i64(s, 6);
  a->late = sqlite3_column_int(s, 7);
  a->counts.c2 = col_u64(s, 8);
  a->counts.c4 = col_u64(s, 9);
  a->counts.c8 = col_u64(s, 10);
  a->counts.nodes = col_u64(s, 11);
  a->seconds = sqlite3_column_double(s, 12);
  col_str(s, 13, a->solver, sizeof a->solver);
  a->progress_at = col_i64(s, 17);
  a->progress = sqlite3_column_type(s, 14) == SQLITE_NULL ? -1 : sqlite3_column_double(s, 14);
  a->progress_seconds =
      sqlite3_column_type(s, 15) == SQLITE_NULL ? -1 : sqlite3_column_double(s, 15);
  a->progress_nodes = col_u64(s, 16);
  col_str(s, 18, a->net, sizeof a->net);
  a->spot = sqlite3_column_int(s, 19);
  a->voided = sqlite3_column_int(s, 20);
  a->owner_id = col_i64(s, 21);
  a->novote = sqlite3_column_int(s, 22);
  col_str(s, 23, a->backend, sizeof a->backend);
  a->hold_until = col_i64(s, 24);
  a->self_joined = sqlite3_column_int(s, 25);
}

int srv_asg_get(srv_store_t *st, int64_t asg_id, srv_asg_info_t *out) {
  return srv_store_one(st, "SELECT " ASG_COLS " FROM assignments WHERE id = ?1", NULL, asg_id,
                       asg_row, out, "assignment");
}

/* Walk the assignments of one unit that `sql` (ASG_COLS, ?1 = unit id) selects. */
static int asg_list(srv_store_t *st, const char *sql, int64_t unit_id, srv_asg_cb cb, void *arg,
                    const char *what) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, sql, &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, unit_id);
  int sr = SQLITE_DONE;
  while (rc == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    srv_asg_info_t a;
    asg_row(s, &a);
    rc = cb(&a, arg);
  }
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, what);
  sqlite3_reset(s);
  return rc;
}

int srv_asg_list_unit(srv_store_t *st, int64_t unit_id, srv_asg_cb cb, void *arg) {
  return asg_list(st, "SELECT " ASG_COLS " FROM assignments WHERE unit_id = ?1 ORDER BY id",
                  unit_id, cb, arg, "assignment list");
}

int srv_asg_list_reported(srv_store_t *st, int64_t unit_id, srv_asg_cb cb, void *arg) {
  return asg_list(st, "SELECT " ASG_COLS " FROM assignments WHERE unit_id = ?1 "
                      "AND state = 'reported' ORDER BY id", unit_id, cb, arg, "results load");
}

int srv_asg_get_unit(srv_store_t *st, int64_t asg_id, srv_asg_info_t *a, srv_unit_info_t *u) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT " ASG_COLS_A ", " UNIT_COLS_U " FROM assignments a "
                              "JOIN units u ON u.id = a.unit_id WHERE a.id = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, asg_id);
  int sr = sqlite3_step(s);
  if (sr == SQLITE_ROW) {
    asg_row(s, a);
    unit_row(s, ASG_NCOLS, u);
  } else if (sr == SQLITE_DONE) {
    rc = srv_store_failf(st, NQ_ENOTFOUND, "no assignment %lld", (long long)asg_id);
  } else {
    rc = srv_store_fail(st, "assignment load");
  }
  sqlite3_reset(s);
  return rc;
}

/* ---- the scheduler's queries (sched.c) --------------------------------------------------- */

/* Expire the leases that select_sql names (it selects their unit_id; ?1 = arg) with update_sql
 * (?1 = arg), and refresh their units; *n (may be NULL) gets how many. The sweep, a ban, a job's
 * release. */
static int expire_leases(srv_store_t *st, const char *select_sql, const char *update_sql,
                         int64_t arg, int64_t *n_expired) {
  int64_t *units = NULL;
  int n = 0;
  int rc = srv_store_id_list(st, select_sql, arg, 0, &units, &n);
  if (rc || n == 0) goto out;
  rc = srv_store_exec3(st, update_sql, arg, 0, 0, "expire");
  /* A unit with several expired leases is refreshed once per lease: harmless, refresh recounts. */
  for (int i = 0; i < n && rc == 0; i++) rc = srv_store_unit_refresh(st, units[i]);
out:
  if (n_expired) *n_expired = rc ? 0 : (int64_t)n;
  free(units);
  return rc;
}

int srv_asg_expire_due(srv_store_t *st, int64_t now, int64_t *n_expired) {
  /* Each lease that runs out without a result is one lapse of its client (schema 011), counted
   * before the leases change state. Through the partial index assignments_leased. */
  int rc = srv_store_exec3(st, "UPDATE clients SET lapses = lapses + (SELECT count(*) FROM "
                               "assignments a WHERE a.client_id = clients.id AND "
                               "a.state = 'leased' AND a.deadline <= ?1) WHERE id IN (SELECT "
                               "client_id FROM assignments WHERE state = 'leased' AND "
                               "deadline <= ?1)", now, 0, 0, "count lapses");
  if (rc) return rc;
  return expire_leases(st, "SELECT unit_id FROM assignments "
                                     "WHERE state = 'leased' AND deadline <= ?1",
                                 "UPDATE assignments SET state = 'expired' "
                                 "WHERE state = 'leased' AND deadline <= ?1",
                                 now, n_expired);
}

int srv_asg_next_deadline(srv_store_t *st, int64_t *deadline) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "SELECT coalesce(min(deadline), 0) FROM assignments "
                              "WHERE state = 'leased'", &q);
  if (rc) return rc;
  if (sqlite3_step(q) == SQLITE_ROW) *deadline = sqlite3_column_int64(q, 0);
  else rc = srv_store_fail(st, "next deadline");
  sqlite3_reset(q);
  return rc;
}

int srv_asg_held(srv_store_t *st, int64_t client_id, srv_work_t *out, int max, int *n,
                 int *held) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "SELECT a.id, a.unit_id, u.text, a.deadline "
                              "FROM assignments a JOIN units u ON u.id = a.unit_id "
                              "WHERE a.client_id = ?1 AND a.state = 'leased' ORDER BY a.id", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, client_id);
  int sr;
  *held = 0;
  while ((sr = sqlite3_step(q)) == SQLITE_ROW) {
    (*held)++;
    if (*n >= max) continue;
    srv_work_t *w = &out[(*n)++];
    memset(w, 0, sizeof *w);
    w->id = sqlite3_column_int64(q, 0);
    w->unit_id = sqlite3_column_int64(q, 1);
    col_str(q, 2, w->unit, sizeof w->unit);
    w->deadline = sqlite3_column_int64(q, 3);
    w->resent = 1;
  }
  if (sr != SQLITE_DONE) rc = srv_store_fail(st, "resend");
  sqlite3_reset(q);
  return rc;
}

/* Units being worked on that still need a replica (disputed ones too); units back to pending
 * after their leases expired; untouched units, from the job's fresh cursor on (schema 005: no
 * index holds them, and every unit below the cursor was touched). A unit is never given to a
 * client when a client of the same key (itself; one of its owner; one on its network: the
 * --quorum-distinct mode) holds or reported an assignment for it; one whose lease merely expired
 * (no result) may get it again, on the same assignment row (srv_asg_lease). An untouched unit
 * has no assignment at all. One statement per mode, so each is planned once. */
#define PICK_KEY_CLIENT "a.client_id = ?2"
#define PICK_KEY_OWNER \
  "a.client_id IN (SELECT o.id FROM clients o WHERE o.owner_id = " \
  "(SELECT owner_id FROM clients WHERE id = ?2))"
#define PICK_KEY_NETWORK \
  "(a.client_id = ?2 OR a.net = (SELECT net FROM clients WHERE id = ?2))"
/* A key's expired row past its hold limit (schema 011) keeps the unit from that key until the
 * replica has waited ?5 s (--lease-seconds) for another key since the lease ran out: re-asking
 * at once does not restart the hold. ?4 is now. */
#define PICK_MINE(key) \
  "NOT EXISTS (SELECT 1 FROM assignments a WHERE a.unit_id = units.id AND " key \
  " AND (a.state != 'expired' OR (a.hold_until BETWEEN 1 AND ?4 AND a.deadline > ?4 - ?5)))"
/* The hold a new lease of the unit inherits from an expired row of the same key still inside
 * its hold (0: none, a fresh hold). */
#define PICK_HOLD(key) \
  "coalesce((SELECT max(a.hold_until) FROM assignments a WHERE a.unit_id = units.id AND " key \
  " AND a.state = 'expired' AND a.hold_until > ?4), 0)"
#define PICK_OPEN(key) \
  "SELECT id, text, coalesce(est_nodes, -1), " PICK_HOLD(key) " FROM units WHERE job_id = ?1 " \
  "AND need > 0 AND (state = 'leased' OR state = 'awaiting' OR state = 'disputed') AND " \
  PICK_MINE(key) " ORDER BY id LIMIT ?3"
#define PICK_RETURNED(key) \
  "SELECT id, text, coalesce(est_nodes, -1), " PICK_HOLD(key) " FROM units WHERE job_id = ?1 " \
  "AND state = 'pending' AND touched = 1 AND need > 0 AND " PICK_MINE(key) " ORDER BY id LIMIT ?3"
/* A spot check goes to a client of yet another key: none of the unit's assignments, expired ones
 * included (a colluder that let its lease lapse must not check its own lie), shares its key. */
#define PICK_SPOT(key) \
  "SELECT id, text, coalesce(est_nodes, -1), 0 FROM units WHERE job_id = ?1 AND spot = 1 " \
  "AND NOT EXISTS (SELECT 1 FROM " \
  "assignments a WHERE a.unit_id = units.id AND " key ") ORDER BY id LIMIT ?3"
/* --quorum-distinct owner with --self-joined-distinct owner-and-network (schema 022): a client is
 * also kept from a unit that a client on its network holds or reported when either of them
 * belongs to an owner that joined by itself (nq-client --join), as such results would not vote
 * apart (sched.c, same_voter). */
#define PICK_KEY_OWNER_NET \
  "(" PICK_KEY_OWNER " OR (a.net != '' AND a.net = (SELECT net FROM clients WHERE id = ?2) AND (" \
  "(SELECT w.self_joined FROM clients c JOIN owners w ON w.id = c.owner_id WHERE c.id = ?2) = 1 " \
  "OR (SELECT w.self_joined FROM clients c JOIN owners w ON w.id = c.owner_id " \
  "WHERE c.id = a.client_id) = 1)))"
static const char *const sql_pick_open_net = PICK_OPEN(PICK_KEY_OWNER_NET);
static const char *const sql_pick_returned_net = PICK_RETURNED(PICK_KEY_OWNER_NET);
static const char *const sql_pick_spot_net = PICK_SPOT(PICK_KEY_OWNER_NET);
static const char *const sql_pick_open[SRV_DISTINCT_NMODES] = {
    PICK_OPEN(PICK_KEY_CLIENT), PICK_OPEN(PICK_KEY_OWNER), PICK_OPEN(PICK_KEY_NETWORK)};
static const char *const sql_pick_returned[SRV_DISTINCT_NMODES] = {
    PICK_RETURNED(PICK_KEY_CLIENT), PICK_RETURNED(PICK_KEY_OWNER),
    PICK_RETURNED(PICK_KEY_NETWORK)};
static const char *const sql_pick_spot[SRV_DISTINCT_NMODES] = {
    PICK_SPOT(PICK_KEY_CLIENT), PICK_SPOT(PICK_KEY_OWNER), PICK_SPOT(PICK_KEY_NETWORK)};
static const char *const sql_pick_fresh =
    "SELECT id, text, coalesce(est_nodes, -1), 0 FROM units WHERE id BETWEEN "
    "(SELECT fresh FROM job_stats WHERE job_id = ?1) "
    "AND (SELECT first_unit + units - 1 FROM jobs WHERE id = ?1) AND job_id = ?1 "
    "AND touched = 0 AND state = 'pending' ORDER BY id LIMIT ?3";

/* One table of names, the evidence file's (srv_distinct_t is built from its map). */
const char *srv_distinct_name(srv_distinct_t d) {
  return nq_ev_distinct_name((nq_ev_distinct_t)d);
}

int srv_distinct_parse(const char *name) { return nq_ev_distinct_parse(name); }

/* Append up to `room` picks of `sql` to out. */
static int pick(srv_store_t *st, const char *sql, const srv_pick_t *pk, int room,
                srv_work_t *out, int *n) {
  sqlite3_stmt *q;
  int first = *n;
  int rc = srv_store_stmt(st, sql, &q);
  if (rc) return rc;
  int np = sqlite3_bind_parameter_count(q);
  sqlite3_bind_int64(q, 1, pk->job_id);
  if (np >= 2) sqlite3_bind_int64(q, 2, pk->client_id);
  sqlite3_bind_int(q, 3, room);
  if (np >= 4) sqlite3_bind_int64(q, 4, pk->now);
  if (np >= 5) sqlite3_bind_int64(q, 5, pk->cooldown);
  int sr;
  while (*n - first < room && (sr = sqlite3_step(q)) == SQLITE_ROW) {
    srv_work_t *w = &out[(*n)++];
    memset(w, 0, sizeof *w);
    w->unit_id = sqlite3_column_int64(q, 0);
    col_str(q, 1, w->unit, sizeof w->unit);
    w->est_nodes = sqlite3_column_int64(q, 2);
    w->hold_until = sqlite3_column_int64(q, 3);
  }
  if (*n - first >= room) sr = SQLITE_DONE;
  sqlite3_reset(q);
  return sr == SQLITE_DONE ? 0 : srv_store_fail(st, "pick units");
}

int srv_unit_pick(srv_store_t *st, const srv_pick_t *pk, int in_progress, int room,
                  srv_work_t *out, int *n) {
  srv_distinct_t d = pk->distinct;
  if ((unsigned)d >= SRV_DISTINCT_NMODES)
    return srv_store_failf(st, NQ_EINVAL, "bad distinct mode");
  int net = d == SRV_DISTINCT_OWNER && pk->self_net;
  if (in_progress) return pick(st, net ? sql_pick_open_net : sql_pick_open[d], pk, room, out, n);
  int first = *n;
  int rc = pick(st, net ? sql_pick_returned_net : sql_pick_returned[d], pk, room, out, n);
  if (rc == 0 && *n - first < room) rc = pick(st, sql_pick_fresh, pk, room - (*n - first), out, n);
  return rc;
}

int srv_unit_pick_spot(srv_store_t *st, const srv_pick_t *pk, int room, srv_work_t *out,
                       int *n) {
  if ((unsigned)pk->distinct >= SRV_DISTINCT_NMODES)
    return srv_store_failf(st, NQ_EINVAL, "bad distinct mode");
  int net = pk->distinct == SRV_DISTINCT_OWNER && pk->self_net;
  return pick(st, net ? sql_pick_spot_net : sql_pick_spot[pk->distinct], pk, room, out, n);
}

/* Kernel evidence (schema 018): the client's own voting result is on the unit, its evidence row
 * is absent or expired. */
static const char *const sql_pick_evidence =
    "SELECT id, text, coalesce(est_nodes, -1), 0 FROM units WHERE job_id = ?1 AND kshort = 1 "
    "AND need > 0 AND state = 'awaiting' AND EXISTS (SELECT 1 FROM assignments a WHERE "
    "a.unit_id = units.id AND a.client_id = ?2 AND a.reported_at IS NOT NULL AND a.voided = 0) "
    "AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.unit_id = units.id AND "
    "a.client_id = ?2 AND ((a.evidence = 1 AND a.state != 'expired') OR a.evidence = 2)) "
    "ORDER BY id LIMIT ?3";

#define PICK_TAIL(key) \
  "SELECT id, text, coalesce(est_nodes, -1), 0 FROM units WHERE job_id = ?1 AND need = 0 " \
  "AND live > 0 AND contest = 0 AND (state = 'leased' OR state = 'awaiting') AND " \
  "results + live < (SELECT max_results FROM jobs j WHERE j.id = units.job_id) + extra_results " \
  "AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.unit_id = units.id AND " \
  "a.state = 'leased' AND a.issued > ?4 - ?5) AND " PICK_MINE(key) " ORDER BY id LIMIT ?3"
static const char *const sql_pick_tail[SRV_DISTINCT_NMODES] = {
    PICK_TAIL(PICK_KEY_CLIENT), PICK_TAIL(PICK_KEY_OWNER), PICK_TAIL(PICK_KEY_NETWORK)};

int srv_unit_pick_tail(srv_store_t *st, const srv_pick_t *pk, int64_t stale_before, int room,
                       srv_work_t *out, int *n) {
  if ((unsigned)pk->distinct >= SRV_DISTINCT_NMODES)
    return srv_store_failf(st, NQ_EINVAL, "bad distinct mode");
  /* ?5 is the cooldown in PICK_MINE too: a key's own expired row past its hold keeps the unit
   * from it until stale_before; the tail pick uses the same bound for both. */
  srv_pick_t p = *pk;
  p.cooldown = pk->now - stale_before;
  return pick(st, sql_pick_tail[pk->distinct], &p, room, out, n);
}

int srv_asg_evidence_none(srv_store_t *st, int64_t unit_id, int64_t client_id, int64_t now) {
  return srv_store_exec3(st, "INSERT OR IGNORE INTO assignments(unit_id, client_id, issued, "
                             "deadline, state, evidence) VALUES (?1, ?2, ?3, ?3, 'expired', 2)",
                         unit_id, client_id, now, "no kernel evidence");
}

int srv_unit_pick_evidence(srv_store_t *st, const srv_pick_t *pk, int room, srv_work_t *out,
                           int *n) {
  int first = *n;
  int rc = pick(st, sql_pick_evidence, pk, room, out, n);
  for (int i = first; i < *n; i++) out[i].evidence = 1;
  return rc;
}

int srv_client_recent_seconds(srv_store_t *st, int64_t client_id, int64_t job_id, int history,
                              int *count, double *mean) {
  sqlite3_stmt *q;
  /* Newest first through the partial index assignments_client_reported (schema 003). */
  int rc = srv_store_stmt(st, "SELECT count(*), coalesce(avg(x), 0) FROM ("
                              "SELECT max(a.seconds, 0) AS x FROM assignments a "
                              "JOIN units u ON u.id = a.unit_id "
                              "WHERE a.client_id = ?1 AND a.seconds IS NOT NULL "
                              "AND u.job_id = ?2 ORDER BY a.id DESC LIMIT ?3)", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, client_id);
  sqlite3_bind_int64(q, 2, job_id);
  sqlite3_bind_int(q, 3, history);
  if (sqlite3_step(q) == SQLITE_ROW) {
    *count = sqlite3_column_int(q, 0);
    *mean = sqlite3_column_double(q, 1);
  } else {
    rc = srv_store_fail(st, "expected seconds");
  }
  sqlite3_reset(q);
  return rc;
}

int srv_client_backends(srv_store_t *st, int64_t client_id, char *buf, size_t len) {
  sqlite3_stmt *q;
  /* Newest first through the partial index assignments_client_reported (schema 003). */
  int rc = srv_store_stmt(st, "SELECT coalesce(group_concat(b, ' '), '') FROM (SELECT DISTINCT "
                              "backend AS b FROM (SELECT backend FROM assignments WHERE "
                              "client_id = ?1 AND seconds IS NOT NULL ORDER BY id DESC LIMIT ?2) "
                              "WHERE backend IS NOT NULL ORDER BY b)", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, client_id);
  sqlite3_bind_int(q, 2, SRV_BACKENDS_HISTORY);
  if (sqlite3_step(q) == SQLITE_ROW)
    col_str(q, 0, buf, len);
  else
    rc = srv_store_fail(st, "client backends");
  sqlite3_reset(q);
  return rc;
}

/* A new row, or the client's own expired one for the unit leased again (same id: still one
 * assignment, so at most one result, per unit, client and kind: a vote, or kernel evidence). The client's network goes with it;
 * the hold limit is the caller's (kept across re-leases, see srv_unit_pick). */
static int asg_lease(srv_store_t *st, const srv_work_t *w, int64_t client_id, int64_t now,
                     int spot, int64_t *asg_id) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "INSERT INTO assignments(unit_id, client_id, issued, deadline, "
                              "spot, net, hold_until, evidence) VALUES (?1, ?2, ?3, ?4, ?5, "
                              "(SELECT net FROM clients WHERE id = ?2), ?6, ?7) "
                              "ON CONFLICT(unit_id, client_id, evidence) DO UPDATE "
                              "SET state = 'leased', issued = excluded.issued, "
                              "deadline = excluded.deadline, spot = excluded.spot, "
                              "net = excluded.net, hold_until = excluded.hold_until "
                              "WHERE state = 'expired' RETURNING id", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, w->unit_id);
  sqlite3_bind_int64(q, 2, client_id);
  sqlite3_bind_int64(q, 3, now);
  sqlite3_bind_int64(q, 4, w->deadline);
  sqlite3_bind_int(q, 5, spot);
  sqlite3_bind_int64(q, 6, w->hold_until);
  sqlite3_bind_int(q, 7, w->evidence ? 1 : 0);
  if (sqlite3_step(q) != SQLITE_ROW) {
    rc = srv_store_fail(st, "lease");
    sqlite3_reset(q);
    return rc;
  }
  *asg_id = sqlite3_column_int64(q, 0);
  sqlite3_reset(q);
  /* Its first lease: from now on the unit is in the partial indexes (and, by trigger, behind the
   * job's fresh cursor). */
  rc = srv_store_exec3(st, "UPDATE units SET touched = 1 WHERE id = ?1 AND touched = 0",
                       w->unit_id, 0, 0, "touch");
  return rc ? rc : srv_store_unit_refresh(st, w->unit_id);
}

int srv_asg_lease_work(srv_store_t *st, srv_work_t *w, int64_t client_id, int64_t now, int spot) {
  return asg_lease(st, w, client_id, now, spot, &w->id);
}

int srv_asg_lease(srv_store_t *st, int64_t unit_id, int64_t client_id, int64_t now,
                  int64_t deadline, int64_t *asg_id) {
  srv_work_t w = {.unit_id = unit_id, .deadline = deadline, .hold_until = deadline};
  return asg_lease(st, &w, client_id, now, 0, asg_id);
}

int srv_asg_set_deadline(srv_store_t *st, int64_t asg_id, int64_t deadline) {
  return srv_store_exec3(st, "UPDATE assignments SET deadline = ?2 WHERE id = ?1", asg_id, deadline,
                         0, "extend lease");
}

int srv_asg_set_progress(srv_store_t *st, int64_t asg_id, const nq_progress_t *p, int64_t now) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "UPDATE assignments SET progress = ?2, progress_seconds = ?3, "
                              "progress_nodes = ?4, progress_at = ?5 WHERE id = ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, asg_id);
  if (p->has_fraction) sqlite3_bind_double(q, 2, p->fraction);
  else sqlite3_bind_null(q, 2);
  if (p->has_seconds) sqlite3_bind_double(q, 3, p->seconds);
  else sqlite3_bind_null(q, 3);
  if (p->has_nodes) sqlite3_bind_int64(q, 4, (int64_t)p->nodes);
  else sqlite3_bind_null(q, 4);
  sqlite3_bind_int64(q, 5, now);
  return srv_store_step(st, q, "store progress");
}

int srv_asg_revive(srv_store_t *st, int64_t asg_id, int64_t unit_id, int64_t deadline) {
  sqlite3_stmt *q;
  /* A disputed unit is undecided too (schema 006): it takes replicas. */
  int rc = srv_store_stmt(st, "SELECT need FROM units WHERE id = ?1 AND state != 'verified'", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, unit_id);
  int sr = sqlite3_step(q);
  int need = sr == SQLITE_ROW ? sqlite3_column_int(q, 0) : 0;
  sqlite3_reset(q);
  if (sr != SQLITE_ROW && sr != SQLITE_DONE) return srv_store_fail(st, "revive");
  if (sr == SQLITE_DONE)
    return srv_store_failf(st, NQ_ENOTFOUND, "assignment %lld expired and its unit is decided",
                           (long long)asg_id);
  if (need <= 0)
    return srv_store_failf(st, NQ_EEXPIRED, "assignment %lld expired and was reissued",
                           (long long)asg_id);
  rc = srv_store_exec3(st, "UPDATE assignments SET state = 'leased', deadline = ?2 WHERE id = ?1",
                       asg_id, deadline, 0, "revive");
  if (rc == 0) rc = srv_store_unit_refresh(st, unit_id);
  return rc;
}

int srv_asg_set_result(srv_store_t *st, int64_t asg_id, const nq_counts_t *c, double seconds,
                       const char *solver, srv_asg_state_t state, int late, int64_t now) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "UPDATE assignments SET state = ?2, late = ?3, c2 = ?4, c4 = ?5, "
                              "c8 = ?6, nodes = ?7, seconds = ?8, solver = ?9, reported_at = ?10 "
                              "WHERE id = ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, asg_id);
  sqlite3_bind_text(q, 2, srv_asg_state_name(state), -1, SQLITE_STATIC);
  sqlite3_bind_int(q, 3, late);
  sqlite3_bind_int64(q, 4, (int64_t)c->c2);
  sqlite3_bind_int64(q, 5, (int64_t)c->c4);
  sqlite3_bind_int64(q, 6, (int64_t)c->c8);
  sqlite3_bind_int64(q, 7, (int64_t)c->nodes);
  sqlite3_bind_double(q, 8, seconds);
  sqlite3_bind_text(q, 9, solver, -1, SQLITE_STATIC);
  sqlite3_bind_int64(q, 10, now);
  rc = srv_store_step(st, q, "store result");
  /* A result works off one lapse (schema 011). */
  if (rc == 0)
    rc = srv_store_exec3(st, "UPDATE clients SET lapses = lapses - 1 WHERE id = (SELECT "
                             "client_id FROM assignments WHERE id = ?1) AND lapses > 0",
                         asg_id, 0, 0, "lapses");
  return rc;
}

int srv_asg_set_backend(srv_store_t *st, int64_t asg_id, const char *backend) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "UPDATE assignments SET backend = ?2 WHERE id = ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, asg_id);
  sqlite3_bind_text(q, 2, backend, -1, SQLITE_STATIC);
  return srv_store_step(st, q, "store result backend");
}

int srv_asg_judge(srv_store_t *st, int64_t asg_id, int64_t client_id, int valid) {
  int rc = srv_store_exec3(st, valid ? "UPDATE assignments SET state = 'valid' WHERE id = ?1"
                                     : "UPDATE assignments SET state = 'invalid' WHERE id = ?1",
                           asg_id, 0, 0, "judge");
  if (rc == 0)
    rc = srv_store_exec3(st, valid ? "UPDATE clients SET valid = valid + 1 WHERE id = ?1"
                                   : "UPDATE clients SET invalid = invalid + 1 WHERE id = ?1",
                         client_id, 0, 0, "trust count");
  return rc;
}

int srv_client_recent_invalid(srv_store_t *st, int64_t client_id, int window, int *invalid) {
  /* The partial index assignments_client_reported (client_id, id) walks the client's results
   * newest first; the walk stops after `window` judged ones. */
  static const char *sql =
      "SELECT coalesce(sum(state = 'invalid'), 0) FROM (SELECT state FROM assignments "
      "WHERE client_id = ?1 AND seconds IS NOT NULL AND (state = 'valid' OR state = 'invalid') "
      "ORDER BY id DESC LIMIT ?2)";
  sqlite3_stmt *s;
  *invalid = 0;
  int rc = srv_store_stmt(st, sql, &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, client_id);
  sqlite3_bind_int(s, 2, window);
  if (sqlite3_step(s) == SQLITE_ROW) *invalid = sqlite3_column_int(s, 0);
  else rc = srv_store_fail(st, "recent results");
  sqlite3_reset(s);
  return rc;
}

int srv_unit_set_votes(srv_store_t *st, int64_t unit_id, int best, int others) {
  int rc = srv_store_exec3(st, "UPDATE units SET best = ?2, others = ?3 WHERE id = ?1", unit_id,
                           best, others, "votes");
  return rc ? rc : srv_store_unit_refresh(st, unit_id);
}

int srv_unit_set_spot(srv_store_t *st, int64_t unit_id, int spot) {
  return srv_store_exec3(st, "UPDATE units SET spot = ?2 WHERE id = ?1 AND state = 'verified'",
                         unit_id, spot, 0, "spot");
}

/* A decided unit takes no more replicas: the leases still out are released, so their holders
 * learn from `progress` that the work is no longer needed. */
static int unit_close(srv_store_t *st, int64_t unit_id) {
  int rc = srv_store_exec3(st, "UPDATE assignments SET state = 'expired' WHERE unit_id = ?1 "
                               "AND state = 'leased'", unit_id, 0, 0, "release leases");
  return rc ? rc : srv_store_unit_refresh(st, unit_id);
}

int srv_unit_verify(srv_store_t *st, int64_t unit_id, const nq_counts_t *c, int64_t now) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "UPDATE units SET state = 'verified', c2 = ?2, c4 = ?3, c8 = ?4, "
                              "nodes = ?5, verified_at = ?6, need = 0 WHERE id = ?1", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, unit_id);
  sqlite3_bind_int64(q, 2, (int64_t)c->c2);
  sqlite3_bind_int64(q, 3, (int64_t)c->c4);
  sqlite3_bind_int64(q, 4, (int64_t)c->c8);
  sqlite3_bind_int64(q, 5, (int64_t)c->nodes);
  sqlite3_bind_int64(q, 6, now);
  if ((rc = srv_store_step(st, q, "verify")) != 0) return rc;
  return unit_close(st, unit_id);
}

/* A disputed unit keeps its replicas out: it needs more votes, not fewer. */
int srv_unit_dispute(srv_store_t *st, int64_t unit_id) {
  int rc = srv_store_exec3(st, "UPDATE units SET state = 'disputed' WHERE id = ?1", unit_id, 0, 0,
                           "dispute");
  return rc ? rc : srv_store_unit_refresh(st, unit_id);
}

/* ---- a job's and a client's leases -------------------------------------------------------- */

#define JOB_LEASES_WHERE "FROM assignments a JOIN units u ON u.id = a.unit_id " \
                         "WHERE a.state = 'leased' AND u.job_id = ?1"

int srv_job_leases(srv_store_t *st, const srv_job_t *job, int64_t *leases) {
  sqlite3_stmt *s;
  /* Through the partial index of leased assignments: as many rows as leases in the store. */
  int rc = srv_store_stmt(st, "SELECT count(*) " JOB_LEASES_WHERE, &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, job->id);
  if (sqlite3_step(s) == SQLITE_ROW) *leases = col_i64(s, 0);
  else rc = srv_store_fail(st, "job leases");
  sqlite3_reset(s);
  return rc;
}

int srv_job_release_leases(srv_store_t *st, const srv_job_t *job, int64_t *n) {
  int rc = srv_store_savepoint(st);
  if (rc) return rc;
  rc = expire_leases(st, "SELECT a.unit_id " JOB_LEASES_WHERE,
                     "UPDATE assignments SET state = 'expired' WHERE state = 'leased' "
                     "AND unit_id IN (SELECT a.unit_id " JOB_LEASES_WHERE ")",
                     job->id, n);
  return srv_store_release(st, rc);
}

int srv_client_release_leases(srv_store_t *st, int64_t client_id, int64_t *n) {
  return expire_leases(st, "SELECT unit_id FROM assignments WHERE client_id = ?1 "
                           "AND state = 'leased'",
                       "UPDATE assignments SET state = 'expired' "
                       "WHERE client_id = ?1 AND state = 'leased'",
                       client_id, n);
}

/* ---- counters and completion ------------------------------------------------------------- */

int srv_store_counters(srv_store_t *st, int64_t job_id, srv_stats_t *out) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT pending, leased, awaiting, verified, disputed, results, "
                              "c2_hi, c2_lo, c4_hi, c4_lo, c8_hi, c8_lo, nodes_hi, nodes_lo, "
                              "vest_hi, vest_lo, est_hi, est_lo, est_units FROM job_stats "
                              "WHERE job_id = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, job_id);
  int sr = sqlite3_step(s);
  if (sr == SQLITE_ROW) {
    for (int i = 0; i < SRV_UNIT_NSTATES; i++) out->units[i] = col_i64(s, i);
    out->results = col_i64(s, 5);
    memset(&out->verified, 0, sizeof out->verified);
    out->verified.c2 = col_split(s, 6);
    out->verified.c4 = col_split(s, 8);
    out->verified.c8 = col_split(s, 10);
    out->verified.nodes = col_split(s, 12);
    out->est_verified = col_split(s, 14);
    out->est_total = col_split(s, 16);
    out->est_units = col_i64(s, 18);
  } else if (sr == SQLITE_DONE) {
    rc = srv_store_failf(st, NQ_ENOTFOUND, "no counters for job %lld", (long long)job_id);
  } else {
    rc = srv_store_fail(st, "job counters");
  }
  sqlite3_reset(s);
  return rc;
}

int srv_job_finish_if_complete(srv_store_t *st, int64_t job_id, int64_t now, int *done) {
  srv_stats_t c;
  *done = 0;
  int rc = srv_store_counters(st, job_id, &c);
  if (rc) return rc;
  if (c.units[SRV_UNIT_PENDING] + c.units[SRV_UNIT_LEASED] + c.units[SRV_UNIT_AWAITING] +
      c.units[SRV_UNIT_DISPUTED] > 0)
    return 0;
  const nq_totals_t *t = &c.verified;
  char c2[40], c4[40], c8[40], nodes[40], total[40], uniq[40];
  sqlite3_stmt *q;
  if ((rc = srv_store_stmt(st, "UPDATE jobs SET state = 'done', finished = ?2, c2 = ?3, "
                               "c4 = ?4, c8 = ?5, nodes = ?6, total = ?7, uniq = ?8 "
                               "WHERE id = ?1 AND state = 'running'", &q)) != 0)
    return rc;
  sqlite3_bind_int64(q, 1, job_id);
  sqlite3_bind_int64(q, 2, now);
  sqlite3_bind_text(q, 3, nq_u128_str(t->c2, c2), -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 4, nq_u128_str(t->c4, c4), -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 5, nq_u128_str(t->c8, c8), -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 6, nq_u128_str(t->nodes, nodes), -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 7, nq_u128_str(nq_totals_total(t), total), -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 8, nq_u128_str(nq_totals_unique(t), uniq), -1, SQLITE_STATIC);
  if ((rc = srv_store_step(st, q, "job done")) == 0) *done = sqlite3_changes(st->db) > 0;
  return rc;
}
