/* nq-server: the store's reads for the evidence file (store_export.h). */
#include "store_export.h"

#include <stdlib.h>
#include <string.h>

#include "nq/nq.h"
#include "nq/versions.h"
#include "store_int.h"

static void published_row(sqlite3_stmt *s, void *out) {
  nq_u128 *v = out;
  v[0] = col_u128(s, 0);
  v[1] = col_u128(s, 1);
}

int srv_export_begin(srv_store_t *st, int64_t job_id, srv_job_t *job, nq_u128 *total,
                     nq_u128 *unique) {
  if (!sqlite3_get_autocommit(st->db)) {
    snprintf(st->err, sizeof st->err, "export: a transaction is open");
    return NQ_ETXN;
  }
  int rc = srv_store_exec(st, "BEGIN DEFERRED");
  if (rc) return rc;
  nq_u128 v[2] = {0, 0};
  rc = srv_job_get(st, job_id, job);
  if (rc == 0)
    rc = srv_store_one(st, "SELECT total, uniq FROM jobs WHERE id = ?1", NULL, job_id,
                       published_row, v, "job");
  *total = v[0];
  *unique = v[1];
  if (rc) srv_export_end(st);
  return rc;
}

void srv_export_end(srv_store_t *st) {
  if (!sqlite3_get_autocommit(st->db)) sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL);
}

/* One row per (unit, result), the units by id (the primary key: no sort) and each unit's
 * results by client (the UNIQUE (unit_id, client_id, evidence) index: no sort either); a unit without a
 * result still has its row (the LEFT JOIN). The networks are numbered once, in their order. */
static const char EXPORT_SQL[] =
    "WITH nets AS MATERIALIZED (SELECT net, row_number() OVER (ORDER BY net) AS k"
    "              FROM (SELECT DISTINCT net FROM assignments WHERE net IS NOT NULL)) "
    "SELECT u.id, u.text, u.state, u.c2, u.c4, u.c8, u.nodes, coalesce(u.verified_at, 0),"
    "       a.id, a.state, a.c2, a.c4, a.c8, a.nodes, a.solver, a.backend, a.spot, a.voided,"
    "       coalesce(a.reported_at, 0), c.name, o.name, (SELECT k FROM nets WHERE nets.net = a.net),"
    "       u.contest, coalesce(u.settled_by, 0), o.trusted "
    "FROM units u"
    " LEFT JOIN assignments a ON a.unit_id = u.id"
    "   AND a.state IN ('reported', 'valid', 'invalid', 'late')"
    " LEFT JOIN clients c ON c.id = a.client_id"
    " LEFT JOIN owners o ON o.id = c.owner_id "
    "WHERE u.id BETWEEN ?1 AND ?2 ORDER BY u.id, a.client_id";

static void unit_row(sqlite3_stmt *s, nq_ev_unit_t *u) {
  memset(u, 0, offsetof(nq_ev_unit_t, results));
  col_str(s, 1, u->text, sizeof u->text);
  col_str(s, 2, u->state, sizeof u->state);
  u->c2 = col_u64(s, 3);
  u->c4 = col_u64(s, 4);
  u->c8 = col_u64(s, 5);
  u->nodes = col_u64(s, 6);
  u->verified_at = col_i64(s, 7);
}

static void result_row(sqlite3_stmt *s, nq_ev_result_t *r) {
  memset(r, 0, sizeof *r);
  r->id = col_i64(s, 8);
  col_str(s, 9, r->state, sizeof r->state);
  r->c2 = col_u64(s, 10);
  r->c4 = col_u64(s, 11);
  r->c8 = col_u64(s, 12);
  r->nodes = col_u64(s, 13);
  col_str(s, 14, r->solver, sizeof r->solver);
  col_str(s, 15, r->backend, sizeof r->backend);
  r->spot = col_i64(s, 16) != 0;
  r->voided = col_i64(s, 17) != 0;
  r->reported = col_i64(s, 18);
  col_str(s, 19, r->client, sizeof r->client);
  col_str(s, 20, r->owner, sizeof r->owner);
  r->net = col_i64(s, 21);
}

/* What the export keeps of a unit's results beside the line: each one's assignment id and
 * whether its owner is trusted. */
typedef struct unit_aux_s {
  int64_t aid[NQ_EV_RESULTS_MAX];
  int trusted[NQ_EV_RESULTS_MAX];
  int contest;
  int64_t settled_by;
} unit_aux_t;

/* The unit's settling path, its settling result and the version its nodes come from
 * (docs/evidence.md, "How a unit is settled"):
 *   trusted: the result that settled it (units.settled_by; for a unit settled before schema 020,
 *            the oldest valid result of a trusted owner with the unit's counts and nodes);
 *   audit:   the reference solver's version;
 *   quorum:  among the valid voting results with the unit's nodes, the tree with the most of
 *            them, the oldest result of it (the scheduler's nodes_tree, whose votes reached the
 *            quorum). */
static void unit_finish(nq_ev_unit_t *u, const unit_aux_t *x) {
  int n = atoi(u->text), pick = -1;
  u->settled = x->contest == SRV_CONTEST_TRUSTED ? NQ_EV_SETTLED_TRUSTED
               : x->contest == SRV_CONTEST_AUDIT ? NQ_EV_SETTLED_AUDIT
                                                 : NQ_EV_SETTLED_QUORUM;
  if (u->settled == NQ_EV_SETTLED_AUDIT) {
    snprintf(u->nodes_solver, sizeof u->nodes_solver, "%s", NQ_SOLVER_VERSION);
    return;
  }
  for (int i = 0; i < u->nresults; i++) {
    const nq_ev_result_t *r = &u->results[i];
    if (strcmp(r->state, "valid") || r->voided || r->nodes != u->nodes) continue;
    if (u->settled == NQ_EV_SETTLED_TRUSTED) {
      int cand = x->settled_by ? x->aid[i] == x->settled_by : x->trusted[i];
      if (cand && (pick < 0 || x->settled_by || x->aid[i] < x->aid[pick])) pick = i;
      continue;
    }
    int k = 0, kp = 0;
    for (int j = 0; j < u->nresults; j++) {
      const nq_ev_result_t *q = &u->results[j];
      if (strcmp(q->state, "valid") || q->voided || q->nodes != u->nodes) continue;
      k += nq_solver_same_tree(q->solver, r->solver, n);
      if (pick >= 0) kp += nq_solver_same_tree(q->solver, u->results[pick].solver, n);
    }
    if (pick < 0 || k > kp || (k == kp && x->aid[i] < x->aid[pick])) pick = i;
  }
  if (pick < 0) return; /* nq-verify names what is missing */
  snprintf(u->nodes_solver, sizeof u->nodes_solver, "%s", u->results[pick].solver);
  if (u->settled == NQ_EV_SETTLED_TRUSTED) u->results[pick].settles = 1;
}

int srv_export_units(srv_store_t *st, const srv_job_t *job, nq_ev_unit_t *u,
                     srv_export_unit_cb cb, void *arg) {
  sqlite3_stmt *s;
  unit_aux_t *x = malloc(sizeof *x);
  if (!x) return srv_store_failf(st, NQ_ENOMEM, "export: out of memory");
  int rc = srv_store_stmt(st, EXPORT_SQL, &s);
  if (rc) {
    free(x);
    return rc;
  }
  sqlite3_bind_int64(s, 1, job->first_unit);
  sqlite3_bind_int64(s, 2, job->first_unit + job->units - 1);
  int64_t cur = 0; /* the unit being filled */
  int sr;
  while (rc == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    int64_t id = col_i64(s, 0);
    if (id != cur) {
      if (cur) {
        unit_finish(u, x);
        if ((rc = cb(u, arg)) != 0) break;
      }
      unit_row(s, u);
      x->contest = (int)col_i64(s, 22);
      x->settled_by = col_i64(s, 23);
      cur = id;
    }
    if (sqlite3_column_type(s, 8) == SQLITE_NULL) continue; /* a unit without results */
    if (u->nresults == NQ_EV_RESULTS_MAX) {
      snprintf(st->err, sizeof st->err, "export: unit %s has more than %d results", u->text,
               NQ_EV_RESULTS_MAX);
      rc = NQ_ERANGE;
      break;
    }
    x->aid[u->nresults] = col_i64(s, 8);
    x->trusted[u->nresults] = col_i64(s, 24) != 0;
    result_row(s, &u->results[u->nresults++]);
  }
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, "export units");
  if (rc == 0 && cur) {
    unit_finish(u, x);
    rc = cb(u, arg);
  }
  sqlite3_reset(s);
  free(x);
  return rc;
}

/* ---- the root ------------------------------------------------------------------------------ */

/* The leaf's fields of a result, as the export writes them (result_row's columns). */
#define LEAF_COLS "u.text, a.id, a.solver, a.backend, a.c2, a.c4, a.c8, a.nodes, " \
                  "coalesce(a.reported_at, 0)"

static void leaf_row(sqlite3_stmt *s, int at, char *unit, size_t ulen, nq_ev_result_t *r) {
  memset(r, 0, sizeof *r);
  col_str(s, at, unit, ulen);
  r->id = col_i64(s, at + 1);
  col_str(s, at + 2, r->solver, sizeof r->solver);
  col_str(s, at + 3, r->backend, sizeof r->backend);
  r->c2 = col_u64(s, at + 4);
  r->c4 = col_u64(s, at + 5);
  r->c8 = col_u64(s, at + 6);
  r->nodes = col_u64(s, at + 7);
  r->reported = col_i64(s, at + 8);
}

/* The leaves of each unit, as the writer adds them (nq_ev_unit_leaves). */
typedef struct root_ctx_s {
  int64_t job;
  nq_merkle_t *m;
} root_ctx_t;

static int root_unit(const nq_ev_unit_t *u, void *arg) {
  root_ctx_t *c = arg;
  return nq_ev_unit_leaves(c->job, u, c->m, NULL, NULL);
}

int srv_export_root(srv_store_t *st, const srv_job_t *job, nq_merkle_t *m) {
  nq_merkle_init(m);
  nq_ev_unit_t *u = malloc(sizeof *u);
  if (!u) return srv_store_failf(st, NQ_ENOMEM, "root: out of memory");
  root_ctx_t c = {job->id, m};
  /* The export's own walk (no sort: units by id, results by index), so the root is the file's
   * by construction; each unit's results are put in id order by nq_ev_unit_leaves. */
  int rc = srv_export_units(st, job, u, root_unit, &c);
  free(u);
  if (rc == NQ_ETLS || rc == NQ_EINVAL) rc = srv_store_failf(st, rc, "root: %s", nq_strerror(rc));
  return rc;
}

int srv_result_leaf(srv_store_t *st, int64_t assignment_id, int64_t *job_id, char *unit,
                    size_t ulen, unsigned char leaf[32]) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT u.job_id, " LEAF_COLS " FROM assignments a JOIN units u"
                              " ON u.id = a.unit_id WHERE a.id = ?1 AND a.state IN ('reported', "
                              "'valid', 'invalid', 'late')", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, assignment_id);
  int sr = sqlite3_step(s);
  if (sr == SQLITE_ROW) {
    nq_ev_result_t r;
    *job_id = col_i64(s, 0);
    leaf_row(s, 1, unit, ulen, &r);
    rc = nq_ev_leaf(*job_id, unit, &r, leaf);
    if (rc) rc = srv_store_failf(st, rc, "leaf: %s", nq_strerror(rc));
  } else {
    rc = sr == SQLITE_DONE ? NQ_ENOTFOUND : srv_store_fail(st, "leaf");
  }
  sqlite3_reset(s);
  return rc;
}
