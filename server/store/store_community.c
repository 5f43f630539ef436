/* nq-server: the store's news and teams (see store_community.h; schema 023). */
#include "store_community.h"
#include "store_int.h"

#include <string.h>

#include "nq/hash.h"

int srv_news_add(srv_store_t *st, const char *text, int64_t now, srv_news_t *out) {
  size_t n = text ? strlen(text) : 0;
  if (n < 1 || n > SRV_NEWS_TEXT_MAX)
    return srv_store_failf(st, NQ_EINVAL, "news: 1..%d bytes of text", SRV_NEWS_TEXT_MAX);
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f)
      return srv_store_failf(st, NQ_EINVAL, "news: no control characters (one line)");
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "INSERT INTO news(at, text) VALUES (?1, ?2)", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, now);
  sqlite3_bind_text(s, 2, text, -1, SQLITE_STATIC);
  if ((rc = srv_store_step(st, s, "news insert")) != 0) return rc;
  if (out) {
    out->id = sqlite3_last_insert_rowid(st->db);
    out->at = now;
    snprintf(out->text, sizeof out->text, "%s", text);
  }
  return 0;
}

int srv_news_list(srv_store_t *st, int limit, srv_news_cb cb, void *arg) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT id, at, text FROM news ORDER BY id DESC LIMIT ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, limit > 0 ? limit : -1);
  int sr = SQLITE_DONE;
  while (rc == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    srv_news_t n;
    n.id = col_i64(s, 0);
    n.at = col_i64(s, 1);
    col_str(s, 2, n.text, sizeof n.text);
    rc = cb(&n, arg);
  }
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, "news list");
  sqlite3_reset(s);
  return rc;
}

int srv_news_remove(srv_store_t *st, int64_t id) {
  int rc = srv_store_exec3(st, "DELETE FROM news WHERE id = ?1", id, 0, 0, "news remove");
  if (rc == 0 && sqlite3_changes(st->db) == 0)
    return srv_store_failf(st, NQ_ENOTFOUND, "no news item %lld", (long long)id);
  return rc;
}

#define TEAM_COLS "t.id, t.created, t.name, (SELECT count(*) FROM owners o WHERE o.team_id = t.id)"

static void team_row(sqlite3_stmt *s, void *out) {
  srv_team_t *t = out;
  memset(t, 0, sizeof *t);
  t->id = col_i64(s, 0);
  t->created = col_i64(s, 1);
  col_str(s, 2, t->name, sizeof t->name);
  t->owners = col_i64(s, 3);
}

int srv_team_find(srv_store_t *st, const char *name, srv_team_t *out) {
  if (!name) return NQ_EINVAL;
  return srv_store_one(st, "SELECT " TEAM_COLS " FROM teams t WHERE t.name = ?1", name, 0,
                       team_row, out, "team");
}

int srv_team_add(srv_store_t *st, const char *name, int64_t now, srv_team_t *out) {
  if (!nq_proto_name_valid(name)) return srv_store_failf(st, NQ_EINVAL, "bad team name");
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "INSERT INTO teams(name, created) VALUES (?1, ?2)", &s);
  if (rc) return rc;
  sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 2, now);
  if ((rc = srv_store_step(st, s, "team insert")) != 0) return rc;
  srv_team_t tmp;
  return srv_team_find(st, name, out ? out : &tmp);
}

int srv_team_rename(srv_store_t *st, const char *name, const char *to) {
  srv_team_t t;
  if (!nq_proto_name_valid(to)) return srv_store_failf(st, NQ_EINVAL, "bad team name");
  int rc = srv_team_find(st, name, &t);
  if (rc) return rc;
  sqlite3_stmt *s;
  if ((rc = srv_store_stmt(st, "UPDATE teams SET name = ?2 WHERE id = ?1", &s)) != 0) return rc;
  sqlite3_bind_int64(s, 1, t.id);
  sqlite3_bind_text(s, 2, to, -1, SQLITE_STATIC);
  return srv_store_step(st, s, "team rename");
}

int srv_team_remove(srv_store_t *st, const char *name) {
  srv_team_t t;
  int rc = srv_team_find(st, name, &t);
  if (rc == 0) rc = srv_store_exec3(st, "UPDATE owners SET team_id = NULL WHERE team_id = ?1",
                                    t.id, 0, 0, "team members");
  if (rc == 0) rc = srv_store_exec3(st, "DELETE FROM teams WHERE id = ?1", t.id, 0, 0,
                                    "team remove");
  return rc;
}

int srv_team_list(srv_store_t *st, srv_team_cb cb, void *arg) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT " TEAM_COLS " FROM teams t ORDER BY t.name", &s);
  if (rc) return rc;
  int sr = SQLITE_DONE;
  while (rc == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    srv_team_t t;
    team_row(s, &t);
    rc = cb(&t, arg);
  }
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, "team list");
  sqlite3_reset(s);
  return rc;
}

int srv_owner_set_team(srv_store_t *st, int64_t owner_id, int64_t team_id) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "UPDATE owners SET team_id = ?2 WHERE id = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, owner_id);
  if (team_id > 0) sqlite3_bind_int64(s, 2, team_id);
  else sqlite3_bind_null(s, 2);
  return srv_store_step(st, s, "owner team");
}

int srv_owner_team(srv_store_t *st, int64_t owner_id, char *name, size_t len) {
  sqlite3_stmt *s;
  name[0] = 0;
  int rc = srv_store_stmt(st, "SELECT t.name FROM owners o JOIN teams t ON t.id = o.team_id "
                              "WHERE o.id = ?1", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, owner_id);
  int sr = sqlite3_step(s);
  if (sr == SQLITE_ROW) col_str(s, 0, name, len);
  else if (sr != SQLITE_DONE) rc = srv_store_fail(st, "owner team");
  sqlite3_reset(s);
  return rc;
}

int srv_volunteer_list(srv_store_t *st, srv_volunteer_cb cb, void *arg) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT o.id, o.public_name, coalesce(o.enrol_hash, o.name), "
                              "coalesce(t.name, ''), coalesce(t.id, 0), count(c.id), "
                              "coalesce(sum(c.valid), 0), coalesce(sum(c.credit_hi), 0), "
                              "coalesce(sum(c.credit_lo), 0), o.banned "
                              "FROM owners o LEFT JOIN clients c ON c.owner_id = o.id "
                              "LEFT JOIN teams t ON t.id = o.team_id WHERE o.id != 1 "
                              "GROUP BY o.id ORDER BY o.id", &s);
  if (rc) return rc;
  int sr = SQLITE_DONE;
  while (rc == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    srv_volunteer_t v;
    memset(&v, 0, sizeof v);
    v.owner_id = col_i64(s, 0);
    const char *pub = (const char *)sqlite3_column_text(s, 1);
    if (pub && *pub) {
      v.named = 1;
      snprintf(v.display, sizeof v.display, "%s", pub);
    } else {
      char h[65] = "000000";
      const char *k = (const char *)sqlite3_column_text(s, 2);
      if (k) nq_sha256_hex(k, h);
      snprintf(v.display, sizeof v.display, "anonymous-%.6s", h);
    }
    col_str(s, 3, v.team, sizeof v.team);
    v.team_id = col_i64(s, 4);
    v.machines = col_i64(s, 5);
    v.verified = col_i64(s, 6);
    v.credit = col_split(s, 7);
    v.banned = sqlite3_column_int(s, 9);
    rc = cb(&v, arg);
  }
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, "volunteers");
  sqlite3_reset(s);
  return rc;
}

int srv_owner_machines(srv_store_t *st, int64_t owner_id, srv_name_cb cb, void *arg) {
  sqlite3_stmt *s;
  int rc = srv_store_stmt(st, "SELECT public_name, credit_hi, credit_lo, valid FROM clients "
                              "WHERE owner_id = ?1 AND public_name IS NOT NULL AND "
                              "public_name != '' ORDER BY public_name", &s);
  if (rc) return rc;
  sqlite3_bind_int64(s, 1, owner_id);
  int sr = SQLITE_DONE;
  while (rc == 0 && (sr = sqlite3_step(s)) == SQLITE_ROW) {
    char name[SRV_NAME_MAX + 1];
    col_str(s, 0, name, sizeof name);
    nq_u128 c = col_split(s, 1);
    rc = cb(name, &c, col_i64(s, 3), arg);
  }
  if (rc == 0 && sr != SQLITE_DONE) rc = srv_store_fail(st, "owner machines");
  sqlite3_reset(s);
  return rc;
}
