/* nq-server: the store's side of trusted resolution (schema 014): trusted owners,
 * contested units and who may pick them. The rules are the scheduler's (sched.c, "trusted
 * resolution"); docs/store.md describes the model, docs/reliability.md what it proves. */
#include "store_trusted.h"
#include "store_int.h"

#include <string.h>

static const char *const contest_names[SRV_CONTEST_N] = {SRV_CONTEST_MAP(NQ_ENUM_NAME_OF)};

const char *srv_contest_name(int contest) {
  return contest >= 0 && contest < SRV_CONTEST_N ? contest_names[contest] : "?";
}

/* One integer of a query with up to two integer parameters. */
static int one_i64(srv_store_t *st, const char *sql, int64_t a, int64_t b, int64_t *out,
                   const char *what) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, sql, &s);
  if (rc) return rc;
  int np = sqlite3_bind_parameter_count(s);
  if (np >= 1) sqlite3_bind_int64(s, 1, a);
  if (np >= 2) sqlite3_bind_int64(s, 2, b);
  if (sqlite3_step(s) == SQLITE_ROW) *out = col_i64(s, 0);
  else rc = srv_store_fail(st, what);
  sqlite3_reset(s);
  return rc;
}

int srv_owner_count_named(srv_store_t *st, int64_t *n) {
  return one_i64(st, "SELECT count(*) FROM owners WHERE id != 1", 0, 0, n, "owner count");
}

int srv_trust_counts(srv_store_t *st, int64_t active_since, int64_t *owners, int64_t *active) {
  int64_t o = 0, a = 0;
  /* Owners are few; their clients are reached through clients_owner. */
  int rc = one_i64(st, "SELECT count(*) FROM owners WHERE trusted = 1 AND banned = 0", 0, 0, &o,
                   "trusted owners");
  if (rc == 0 && o > 0 && active)
    rc = one_i64(st, "SELECT count(*) FROM owners o CROSS JOIN clients c ON c.owner_id = o.id "
                     "WHERE o.trusted = 1 AND o.banned = 0 AND c.banned = 0 "
                     "AND c.last_seen >= ?1", active_since, 0, &a, "trusted clients");
  if (owners) *owners = rc ? 0 : o;
  if (active) *active = rc ? 0 : a;
  return rc;
}

int srv_client_trusted(srv_store_t *st, int64_t client_id, int *trusted) {
  int64_t t = -1;
  int rc = one_i64(st, "SELECT coalesce((SELECT o.trusted = 1 AND o.banned = 0 FROM clients c "
                       "JOIN owners o ON o.id = c.owner_id WHERE c.id = ?1), -1)", client_id, 0,
                   &t, "client trusted");
  if (rc == 0 && t < 0) rc = srv_store_failf(st, NQ_ENOTFOUND, "no such client");
  *trusted = rc == 0 && t > 0;
  return rc;
}

int srv_unit_contest(srv_store_t *st, int64_t unit_id) {
  int rc = srv_store_exec3(st, "UPDATE units SET state = 'disputed', contest = 1 WHERE id = ?1 "
                               "AND state != 'verified'", unit_id, 0, 0, "contest");
  /* Its replicas in flight are untrusted work that settles nothing: given back. */
  if (rc == 0)
    rc = srv_store_exec3(st, "UPDATE assignments SET state = 'expired' WHERE unit_id = ?1 "
                             "AND state = 'leased'", unit_id, 0, 0, "contest leases");
  return rc ? rc : srv_store_unit_refresh(st, unit_id);
}

int srv_unit_uncontest(srv_store_t *st, int64_t unit_id) {
  int rc = srv_store_exec3(st, "UPDATE units SET state = 'awaiting', contest = 0 WHERE id = ?1 "
                               "AND contest = 1", unit_id, 0, 0, "uncontest");
  return rc ? rc : srv_store_unit_refresh(st, unit_id);
}

int srv_unit_set_contest(srv_store_t *st, int64_t unit_id, srv_contest_t c) {
  return srv_store_exec3(st, "UPDATE units SET contest = ?2 WHERE id = ?1", unit_id, c, 0,
                         "unit contest");
}

int srv_unit_set_settled_by(srv_store_t *st, int64_t unit_id, int64_t asg_id) {
  return srv_store_exec3(st, "UPDATE units SET settled_by = nullif(?2, 0) WHERE id = ?1", unit_id,
                         asg_id, 0, "unit settled_by");
}

int srv_job_contested(srv_store_t *st, int64_t job_id, int64_t *n) {
  return one_i64(st, "SELECT count(*) FROM units WHERE job_id = ?1 AND contest = 1", job_id, 0, n,
                 "contested");
}

int srv_unit_pick_contested(srv_store_t *st, const srv_pick_t *pk, int room, srv_work_t *out,
                            int *n) {
  sqlite3_stmt *q;
  int rc = srv_store_stmt(st, "SELECT id, text, coalesce(est_nodes, -1) FROM units "
                              "WHERE job_id = ?1 AND contest = 1 AND NOT EXISTS (SELECT 1 FROM "
                              "assignments a WHERE a.unit_id = units.id AND (a.state = 'leased' "
                              "OR (a.reported_at IS NOT NULL AND a.client_id IN (SELECT o.id "
                              "FROM clients o WHERE o.owner_id = (SELECT owner_id FROM clients "
                              "WHERE id = ?2))))) ORDER BY id LIMIT ?3", &q);
  if (rc) return rc;
  sqlite3_bind_int64(q, 1, pk->job_id);
  sqlite3_bind_int64(q, 2, pk->client_id);
  sqlite3_bind_int(q, 3, room);
  int sr, first = *n;
  while (*n - first < room && (sr = sqlite3_step(q)) == SQLITE_ROW) {
    srv_work_t *w = &out[(*n)++];
    memset(w, 0, sizeof *w);
    w->unit_id = col_i64(q, 0);
    col_str(q, 1, w->unit, sizeof w->unit);
    w->est_nodes = col_i64(q, 2);
  }
  if (*n - first >= room) sr = SQLITE_DONE;
  sqlite3_reset(q);
  return sr == SQLITE_DONE ? 0 : srv_store_fail(st, "pick contested");
}
