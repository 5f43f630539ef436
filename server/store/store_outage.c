/* nq-server: the store's part of an outage that costs nothing (srv_outage.h, docs/store.md
 * "Outages"): the leases live when the server went down get the downtime back. */
#include "store_outage.h"
#include "store_int.h"

int srv_asg_shift_leases(srv_store_t *st, int64_t alive_at, int64_t by, int64_t *n) {
  /* Deadline and issue move together: the hold limit (issued + hold) moves with the lease, so a
   * client that goes on reporting progress keeps the unit as long as it would have without the
   * outage. The partial index assignments_leased serves the range. */
  static const char *sql = "UPDATE assignments SET deadline = deadline + ?2, issued = issued + ?2 "
                           "WHERE state = 'leased' AND deadline > ?1";
  if (n) *n = 0;
  if (by <= 0) return 0;
  int rc = srv_store_savepoint(st);
  if (rc) return rc;
  sqlite3_stmt *s;
  if ((rc = srv_store_stmt(st, sql, &s)) == 0) {
    sqlite3_bind_int64(s, 1, alive_at);
    sqlite3_bind_int64(s, 2, by);
    rc = srv_store_step(st, s, "extend leases");
    if (rc == 0 && n) *n = sqlite3_changes(st->db);
  }
  return srv_store_release(st, rc);
}
