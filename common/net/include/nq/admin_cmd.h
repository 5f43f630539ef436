/* nq: the admin commands -- one row each (as tmux's cmd_entry): the command's name on the wire,
 * the typed view of its request (the fields it takes, their types and bounds), the core's handler
 * that runs it and the typed view of its reply (docs/protocol.md, "Admin").
 *
 *   X(ENUM, name, request view, handler, reply view)
 *
 * The network library expands the name and request columns (nq_admin_req_pack/_parse, proto.c);
 * the core (server/core/admin_cmd.c) expands the handler and reply columns into the table it
 * dispatches through, for the server's admin sessions and nq-admin's local mode alike; nq-admin
 * reads a reply through the row's reply view (nq/admin_view.h). The handler and reply columns are
 * names only here: nothing of common/ refers to them.
 *
 * Adding a command: a row here, its request view below (or a shared one), its handler in the
 * core's family file (server/core/admin_*.c) and its reply view in nq/admin_view.h.
 */
#ifndef NQ_ADMIN_CMD_H
#define NQ_ADMIN_CMD_H

#include <stdint.h>

#include "nq/unit.h"
#include "nq/view.h"

#define NQ_ADMIN_CMD_MAP(X)                                                                        \
  X(STATUS, status, none, srv_adm_status, status)                                                  \
  X(CLIENTS, clients, none, srv_adm_clients, clients)                                              \
  X(CLIENT_ADD, client_add, q_client_add, srv_adm_client_add, client_added)                        \
  X(CLIENT_BAN, client_ban, q_name, srv_adm_client_ban, client_banned)                             \
  X(JOBS, jobs, none, srv_adm_jobs, jobs)                                                          \
  X(UNITS, units, q_units, srv_adm_units, units)                                                   \
  X(UNIT_RETRY, unit_retry, q_unit_retry, srv_adm_unit_retry, unit)                                \
  X(JOB_ARCHIVE, job_archive, q_job, srv_adm_job_remove, job_removed)                              \
  X(JOB_DELETE, job_delete, q_job, srv_adm_job_remove, job_removed)                                \
  X(OWNERS, owners, none, srv_adm_owners, owners)                                                  \
  X(OWNER_ADD, owner_add, q_name, srv_adm_owner_add, owner_key)                                    \
  X(OWNER_BAN, owner_ban, q_name, srv_adm_owner_ban, owner_banned)                                 \
  X(CLIENT_UNBAN, client_unban, q_name, srv_adm_client_unban, client_unbanned)                     \
  X(UNIT_REOPEN, unit_reopen, q_unit, srv_adm_unit_reopen, unit)                                   \
  X(OWNER_TRUST, owner_trust, q_name, srv_adm_owner_trust, owner_trusted)                          \
  X(OWNER_UNTRUST, owner_untrust, q_name, srv_adm_owner_trust, owner_trusted)                      \
  X(JOB_ADD, job_add, q_job_add, srv_adm_job_add, queued)                                          \
  X(JOB_LIST, job_list, q_all, srv_adm_job_list, queue)                                            \
  X(JOB_CANCEL, job_cancel, q_id, srv_adm_job_cancel, queued)                                      \
  X(JOB_NEXT, job_next, q_force, srv_adm_job_next, job_next)                                       \
  X(OWNER_UNBAN, owner_unban, q_name, srv_adm_owner_unban, owner_unbanned)                         \
  X(OWNER_REKEY, owner_rekey, q_name, srv_adm_owner_rekey, owner_key)                              \
  X(SIGNUPS, signups, q_all, srv_adm_signups, signups)                                             \
  X(OWNER_APPROVE, owner_approve, q_id, srv_adm_signup_decide, signup)                             \
  X(OWNER_REJECT, owner_reject, q_id, srv_adm_signup_decide, signup)                               \
  X(NEWS_ADD, news_add, q_news_add, srv_adm_news_add, news_item)                                   \
  X(NEWS_LIST, news, none, srv_adm_news, news)                                                     \
  X(NEWS_REMOVE, news_remove, q_id, srv_adm_news_remove, news)                                     \
  X(TEAMS, teams, none, srv_adm_teams, teams)                                                      \
  X(TEAM_ADD, team_add, q_team, srv_adm_team, teams)                                               \
  X(TEAM_RENAME, team_rename, q_team_rename, srv_adm_team, teams)                                  \
  X(TEAM_REMOVE, team_remove, q_team, srv_adm_team, teams)

typedef enum {
#define NQ_ADMIN_ENUM_ONE(e, name, req, fn, reply) NQ_ADMIN_##e,
  NQ_ADMIN_CMD_MAP(NQ_ADMIN_ENUM_ONE)
#undef NQ_ADMIN_ENUM_ONE
  NQ_ADMIN_NCMDS
} nq_admin_cmd_t;

/* ---- the requests' views ------------------------------------------------------------------- */

/* The TEXT checks (nq_proto_name_valid, nq_proto_news_text_valid) are proto.h's. */

/* A command without arguments. */
typedef struct nq_view_none_s {
  int unused;
} nq_view_none_t;
extern const nq_view_t nq_view_none_desc;

/* units: a unit state name or "all" (the store judges the name); at most `limit`, 0: all. */
#define NQ_VIEW_Q_UNITS(F) F(STR, state, REQ, 0) F(INTR, limit, ZERO, (0, INT32_MAX))
NQ_VIEW_STRUCT(q_units, NQ_VIEW_Q_UNITS)
/* A client's or an owner's name (client_ban, owner_add, owner_trust, ...). */
#define NQ_VIEW_Q_NAME(F) F(STR, name, REQ, 0)
NQ_VIEW_STRUCT(q_name, NQ_VIEW_Q_NAME)
/* client_add: the owner it belongs to (NULL: the owner `default`). */
#define NQ_VIEW_Q_CLIENT_ADD(F) F(STR, name, REQ, 0) F(STR, owner, ZERO, 0)
NQ_VIEW_STRUCT(q_client_add, NQ_VIEW_Q_CLIENT_ADD)
/* unit_reopen: the unit, by its id or its text. */
#define NQ_VIEW_Q_UNIT(F) F(REF, unit, REQ, 0)
NQ_VIEW_STRUCT(q_unit, NQ_VIEW_Q_UNIT)
/* unit_retry: one unit, every disputed unit, or those with a result of one client; `extra` more
 * results (0: the job's quorum). */
#define NQ_VIEW_Q_UNIT_RETRY(F)                                                                    \
  F(REF, unit, ONE, 0)                                                                             \
  F(BOOL, all_disputed, ONE, 0)                                                                    \
  F(STR, client, ONE, 0)                                                                           \
  F(INTR, extra, ZERO, (1, NQ_PROTO_RETRY_EXTRA_MAX))
NQ_VIEW_STRUCT(q_unit_retry, NQ_VIEW_Q_UNIT_RETRY)
/* job_archive, job_delete: the job's N; force: even while clients hold leases. */
#define NQ_VIEW_Q_JOB(F) F(INTR, n, REQ, (NQ_UNIT_MIN_N, NQ_MAX_N)) F(BOOL, force, ZERO, 0)
NQ_VIEW_STRUCT(q_job, NQ_VIEW_Q_JOB)
/* job_add: N and its settings, 0 = the default (the core checks them together, nq/job_opts.h);
 * diverse_kernels absent: N's default. */
#define NQ_VIEW_Q_JOB_ADD(F)                                                                       \
  F(INTR, n, REQ, (NQ_UNIT_MIN_N, NQ_MAX_N))                                                       \
  F(INTR, depth, ZERO, (0, NQ_MAX_N))                                                              \
  F(INTR, max_depth, ZERO, (0, NQ_MAX_N))                                                          \
  F(REALR, unit_seconds, ZERO, (0, 1000000000000))                                                 \
  F(INTR, quorum, ZERO, (0, 1000))                                                                 \
  F(INTR, max_results, ZERO, (0, 1000))                                                            \
  F(INTR, diverse_kernels, OPT, (0, 8))
NQ_VIEW_STRUCT(q_job_add, NQ_VIEW_Q_JOB_ADD)
/* job_list, signups: every entry kept, not only the open ones. */
#define NQ_VIEW_Q_ALL(F) F(BOOL, all, ZERO, 0)
NQ_VIEW_STRUCT(q_all, NQ_VIEW_Q_ALL)
/* job_cancel (a queued job), owner_approve, owner_reject (a sign-up request), news_remove. */
#define NQ_VIEW_Q_ID(F) F(INTR, id, REQ, (1, INT64_MAX))
NQ_VIEW_STRUCT(q_id, NQ_VIEW_Q_ID)
/* job_next: even while the served job runs. */
#define NQ_VIEW_Q_FORCE(F) F(BOOL, force, ZERO, 0)
NQ_VIEW_STRUCT(q_force, NQ_VIEW_Q_FORCE)
#define NQ_VIEW_Q_NEWS_ADD(F) F(TEXT, text, REQ, nq_proto_news_text_valid)
NQ_VIEW_STRUCT(q_news_add, NQ_VIEW_Q_NEWS_ADD)
#define NQ_VIEW_Q_TEAM(F) F(TEXT, name, REQ, nq_proto_name_valid)
NQ_VIEW_STRUCT(q_team, NQ_VIEW_Q_TEAM)
#define NQ_VIEW_Q_TEAM_RENAME(F)                                                                   \
  F(TEXT, name, REQ, nq_proto_name_valid) F(TEXT, to, REQ, nq_proto_name_valid)
NQ_VIEW_STRUCT(q_team_rename, NQ_VIEW_Q_TEAM_RENAME)

/* One admin request: the command and its arguments, in the member named after it
 * (req.q.units.state, req.q.client_ban.name). Requests hold no arrays: a parsed one needs no
 * release; its strings point into the message. */
typedef struct nq_admin_req_s {
  nq_admin_cmd_t cmd;
  union {
#define NQ_ADMIN_Q_ONE(e, name, req, fn, reply) nq_view_##req##_t name;
    NQ_ADMIN_CMD_MAP(NQ_ADMIN_Q_ONE)
#undef NQ_ADMIN_Q_ONE
  } q;
} nq_admin_req_t;

const char *nq_admin_cmd_name(nq_admin_cmd_t c); /* "status", "client_add", ... */
/* The command named `name`, or -1. */
int nq_admin_cmd_find(const char *name);
/* The view of command c's request. */
const nq_view_t *nq_admin_req_view(nq_admin_cmd_t c);

#endif
