/* nq: the admin views -- every JSON object the admin API answers with (the `data` of an
 * admin_reply, nq-admin's --json output, docs/operations.md) and the public status and history
 * behind the page (docs/http.md), each as a typed view (nq/view.h): one field list below, one
 * struct, one pack, one parse.
 *
 * The admin commands' family files (server/core/admin_*.c; web.c for the public additions) fill
 * the structs and pack them; each command's row (nq/admin_cmd.h) names its reply's view. nq-admin
 * (admin/cmd_*.c) and the page (server/web_page.c) parse the JSON into them and read
 * members, never keys. The lists ({"clients": [...]} and the like) are packed element by element
 * as the store walks them (nq_view_pack of the element view), and parsed whole.
 *
 * Keys are a stable interface for scripts: add fields (OPT when an older server lacks them),
 * never rename or drop one. The field order is the JSON key order of the output.
 */
#ifndef NQ_ADMIN_VIEW_H
#define NQ_ADMIN_VIEW_H

#include "nq/states.h"
#include "nq/view.h"

/* The keys of the COUNTS fields: the name columns of the enum tables (nq/states.h). */
extern const nq_view_names_t NQ_UNIT_STATE_view_names;
extern const nq_view_names_t NQ_STALL_REASON_view_names;

/* ---- pieces of the status view -------------------------------------------------------------- */

/* Job totals, all decimal strings; solve_nodes (units' nodes plus the plan's split nodes, as
 * nq-solve counts N) only in a finished job's "final" whose split nodes are known. */
#define NQ_VIEW_TOTALS(F)                                                                        \
  F(U128, total, REQ, 0)                                                                         \
  F(U128, unique, REQ, 0)                                                                        \
  F(U128, c2, REQ, 0)                                                                            \
  F(U128, c4, REQ, 0)                                                                            \
  F(U128, c8, REQ, 0)                                                                            \
  F(U128, nodes, REQ, 0)                                                                         \
  F(U128, solve_nodes, OPT, 0)
NQ_VIEW_STRUCT(totals, NQ_VIEW_TOTALS)

/* One job (the jobs list, status.job). */
#define NQ_VIEW_JOB(F)                                                                           \
  F(INT, id, REQ, 0)                                                                             \
  F(INT, n, REQ, 0)                                                                              \
  F(INT, depth, REQ, 0)                                                                          \
  F(INT, min_depth, REQ, 0)                                                                      \
  F(REAL, unit_seconds, REQ, 0)                                                                  \
  F(INT, quorum, REQ, 0)                                                                         \
  F(INT, max_results, REQ, 0)                                                                    \
  F(STR, state, REQ, 0)                                                                          \
  F(INT, created, REQ, 0)                                                                        \
  F(INT, finished, REQ, 0)                                                                       \
  F(INT, archived, REQ, 0)                                                                       \
  F(INT, units, REQ, 0)                                                                          \
  F(U128, internal, NULL, 0)                                                                     \
  F(REAL, est_nodes, NULL, 0)                                                                    \
  F(REAL, est_se, NULL, 0)                                                                       \
  F(INT, seed, REQ, 0)                                                                           \
  F(OBJ, final, NULL, totals)
NQ_VIEW_STRUCT(job, NQ_VIEW_JOB)

/* The published counts for N (strings as the table has them). */
#define NQ_VIEW_KNOWN(F)                                                                         \
  F(STR, total, REQ, 0)                                                                          \
  F(STR, unique, REQ, 0)                                                                         \
  F(STR, c2, REQ, 0)                                                                             \
  F(STR, c4, REQ, 0)                                                                             \
  F(STR, c8, REQ, 0)
NQ_VIEW_STRUCT(known, NQ_VIEW_KNOWN)

/* status.units: the job's units per state (one key per unit state), and the waiting kinds. */
#define NQ_VIEW_UNIT_COUNTS(F)                                                                   \
  F(INT, total, REQ, 0)                                                                          \
  F(COUNTS, state, REQ, NQ_UNIT_STATE)                                                           \
  F(INT, blocked, REQ, 0)                                                                        \
  F(INT, spot_checks, REQ, 0)                                                                    \
  F(INT, contested, REQ, 0)                                                                      \
  F(INT, spot_dropped, OPT, 0)
NQ_VIEW_STRUCT(unit_counts, NQ_VIEW_UNIT_COUNTS)

#define NQ_VIEW_TRUST(F)                                                                         \
  F(INT, trusted_owners, REQ, 0)                                                                 \
  F(INT, trusted_active, REQ, 0)                                                                 \
  F(STR, rests_on, REQ, 0)
NQ_VIEW_STRUCT(trust, NQ_VIEW_TRUST)

#define NQ_VIEW_PROGRESS(F)                                                                      \
  F(REAL, percent, REQ, 0)                                                                       \
  F(REAL, units_percent, REQ, 0)                                                                 \
  F(STR, method, REQ, 0)                                                                         \
  F(U128, verified_nodes, REQ, 0)                                                                \
  F(STR, estimated_nodes, REQ, 0)                                                                \
  F(INT, leased, REQ, 0)                                                                         \
  F(REAL, leased_done, REQ, 0)                                                                   \
  F(U128, units_estimate, NULL, 0)                                                               \
  F(U128, verified_estimate, NULL, 0)                                                            \
  F(REAL, calibration, NULL, 0)
NQ_VIEW_STRUCT(progress, NQ_VIEW_PROGRESS)

#define NQ_VIEW_RATE(F)                                                                          \
  F(INT, window, REQ, 0)                                                                         \
  F(INT, results, REQ, 0)                                                                        \
  F(REAL, results_per_s, REQ, 0)                                                                 \
  F(REAL, nodes_per_s, REQ, 0)                                                                   \
  F(INT, eta_s, NULL, 0)                                                                         \
  F(INT, elapsed_s, REQ, 0)
NQ_VIEW_STRUCT(rate, NQ_VIEW_RATE)

/* status.stalled.by: stalled units per reason (one key per reason; a reason a server older than
 * it does not send counts 0). */
#define NQ_VIEW_STALL_BY(F) F(COUNTS, reason, OPT, NQ_STALL_REASON)
NQ_VIEW_STRUCT(stall_by, NQ_VIEW_STALL_BY)

#define NQ_VIEW_STALLED(F)                                                                       \
  F(INT, units, REQ, 0)                                                                          \
  F(OBJ, by, REQ, stall_by)                                                                      \
  F(INT, keys, REQ, 0)                                                                           \
  F(INT, keys_online, REQ, 0)                                                                    \
  F(INT, quorum, REQ, 0)                                                                         \
  F(STR, distinct, REQ, 0)                                                                       \
  F(INT, window, REQ, 0)                                                                         \
  F(INT, at, REQ, 0)                                                                             \
  F(STRN, message, REQ, 0)
NQ_VIEW_STRUCT(stalled, NQ_VIEW_STALLED)

/* status.clients: the fleet's counts. */
#define NQ_VIEW_FLEET(F)                                                                         \
  F(INT, active, REQ, 0)                                                                         \
  F(INT, known, REQ, 0)                                                                          \
  F(INT, banned, REQ, 0)                                                                         \
  F(INT, suspect, REQ, 0)                                                                        \
  F(INT, paused, OPT, 0)
NQ_VIEW_STRUCT(fleet, NQ_VIEW_FLEET)

#define NQ_VIEW_BACKUP(F)                                                                        \
  F(INT, last_good, NULL, 0)                                                                     \
  F(STRN, file, REQ, 0)                                                                          \
  F(INT, failed_at, NULL, 0)                                                                     \
  F(STRN, error, REQ, 0)
NQ_VIEW_STRUCT(backup, NQ_VIEW_BACKUP)

/* status.cert: the server certificate in use (srv_cert.h), as the server last recorded it. */
#define NQ_VIEW_CERT(F)                                                                          \
  F(STR, file, REQ, 0)                                                                           \
  F(STR, names, REQ, 0)                                                                          \
  F(INT, not_after, REQ, 0)                                                                      \
  F(REAL, days_left, REQ, 0)                                                                     \
  F(INT, warn_days, REQ, 0)                                                                      \
  F(BOOL, expiring, REQ, 0)
NQ_VIEW_STRUCT(cert, NQ_VIEW_CERT)

#define NQ_VIEW_KERNELS(F)                                                                       \
  F(INT, diverse, REQ, 0)                                                                        \
  F(INT, units_two_kernels, REQ, 0)
NQ_VIEW_STRUCT(kernels, NQ_VIEW_KERNELS)

/* One reference audit (nq-admin audit). */
#define NQ_VIEW_AUDIT(F)                                                                         \
  F(INT, at, REQ, 0)                                                                             \
  F(INT, sample, REQ, 0)                                                                         \
  F(INT, seed, REQ, 0)                                                                           \
  F(INT, checked, REQ, 0)                                                                        \
  F(INT, mismatched, REQ, 0)                                                                     \
  F(REAL, seconds, REQ, 0)                                                                       \
  F(STR, outcome, REQ, 0)                                                                        \
  F(STR, detail, REQ, 0)
NQ_VIEW_STRUCT(audit, NQ_VIEW_AUDIT)

#define NQ_VIEW_AUDITS(F)                                                                        \
  F(INT, count, REQ, 0)                                                                          \
  F(INT, disagreed, REQ, 0)                                                                      \
  F(OBJ, last, NULL, audit)
NQ_VIEW_STRUCT(audits, NQ_VIEW_AUDITS)

/* ---- units ---------------------------------------------------------------------------------- */

/* A result that took part in a unit's vote. */
#define NQ_VIEW_REPLICA(F)                                                                       \
  F(INT, assignment, REQ, 0)                                                                     \
  F(STR, client, REQ, 0)                                                                         \
  F(STR, state, REQ, 0)                                                                          \
  F(INT, c2, REQ, 0)                                                                             \
  F(INT, c4, REQ, 0)                                                                             \
  F(INT, c8, REQ, 0)                                                                             \
  F(INT, nodes, REQ, 0)                                                                          \
  F(STR, solver, REQ, 0)                                                                         \
  F(STRN, backend, REQ, 0)                                                                       \
  F(INT, reported_at, REQ, 0)                                                                    \
  F(BOOL, votes, REQ, 0)                                                                         \
  F(BOOL, voided, REQ, 0)
NQ_VIEW_STRUCT(replica, NQ_VIEW_REPLICA)

/* A live lease and its last progress report (null: not reported, or absurd). */
#define NQ_VIEW_RUNNING(F)                                                                       \
  F(INT, assignment, REQ, 0)                                                                     \
  F(STR, client, REQ, 0)                                                                         \
  F(INT, issued, REQ, 0)                                                                         \
  F(INT, deadline, REQ, 0)                                                                       \
  F(REAL, percent, NULL, 0)                                                                      \
  F(REAL, seconds, NULL, 0)                                                                      \
  F(INT, nodes, NULL, 0)                                                                         \
  F(REAL, nodes_per_s, NULL, 0)                                                                  \
  F(INT, eta_s, NULL, 0)                                                                         \
  F(INT, progress_at, REQ, 0)
NQ_VIEW_STRUCT(running, NQ_VIEW_RUNNING)

/* One unit (units, status.disputed); a verified one has its counts; replicas for a verified,
 * disputed or awaiting one, running with live leases. unit_reopen adds job_reopened, unit_retry
 * extra_results .. job_done. */
#define NQ_VIEW_UNIT(F)                                                                          \
  F(INT, id, REQ, 0)                                                                             \
  F(INT, idx, REQ, 0)                                                                            \
  F(STR, unit, REQ, 0)                                                                           \
  F(STR, state, REQ, 0)                                                                          \
  F(INT, live, REQ, 0)                                                                           \
  F(INT, results, REQ, 0)                                                                        \
  F(STR, contest, REQ, 0)                                                                        \
  F(INT, c2, OPT, 0)                                                                             \
  F(INT, c4, OPT, 0)                                                                             \
  F(INT, c8, OPT, 0)                                                                             \
  F(INT, nodes, OPT, 0)                                                                          \
  F(INT, verified_at, OPT, 0)                                                                    \
  F(ARR, replicas, OPT, replica)                                                                 \
  F(ARR, running, OPT, running)                                                                  \
  F(BOOL, job_reopened, OPT, 0)                                                                  \
  F(INT, extra_results, OPT, 0)                                                                  \
  F(INT, max_results, OPT, 0)                                                                    \
  F(INT, added, OPT, 0)                                                                          \
  F(INT, restored, OPT, 0)                                                                       \
  F(BOOL, job_done, OPT, 0)
NQ_VIEW_STRUCT(unit, NQ_VIEW_UNIT)

/* ---- the status view ------------------------------------------------------------------------ */

/* /api/status adds these to the status (and leaves out `disputed`). */
#define NQ_VIEW_LEADER(F)                                                                        \
  F(INT, rank, REQ, 0)                                                                           \
  F(STR, name, REQ, 0)                                                                           \
  F(BOOL, named, REQ, 0)                                                                         \
  F(U128, credit, REQ, 0)                                                                        \
  F(INT, results, REQ, 0)
NQ_VIEW_STRUCT(leader, NQ_VIEW_LEADER)

#define NQ_VIEW_SERVER(F)                                                                        \
  F(STR, version, REQ, 0)                                                                        \
  F(INT, protocol, REQ, 0)
NQ_VIEW_STRUCT(server, NQ_VIEW_SERVER)

/* One news item (news, news_add). */
#define NQ_VIEW_NEWS_ITEM(F)                                                                     \
  F(INT, id, REQ, 0)                                                                             \
  F(INT, at, REQ, 0)                                                                             \
  F(STR, text, REQ, 0)
NQ_VIEW_STRUCT(news_item, NQ_VIEW_NEWS_ITEM)
#define NQ_VIEW_NEWS(F) F(ARR, news, REQ, news_item)
NQ_VIEW_STRUCT(news, NQ_VIEW_NEWS)

/* One team (teams, team_add, team_rename; /api/teams): credit is its owners' summed. */
#define NQ_VIEW_TEAM(F)                                                                          \
  F(INT, rank, REQ, 0)                                                                           \
  F(STR, name, REQ, 0)                                                                           \
  F(INT, owners, REQ, 0)                                                                         \
  F(U128, credit, REQ, 0)
NQ_VIEW_STRUCT(team, NQ_VIEW_TEAM)
#define NQ_VIEW_TEAMS(F) F(ARR, teams, REQ, team)
NQ_VIEW_STRUCT(teams, NQ_VIEW_TEAMS)

/* One volunteer (an owner other than `default`, not banned; /api/volunteers, /v/NAME): its
 * public name, or anonymous- and six hex digits when it chose none. */
#define NQ_VIEW_VOLUNTEER(F)                                                                     \
  F(INT, rank, REQ, 0)                                                                           \
  F(STR, name, REQ, 0)                                                                           \
  F(BOOL, named, REQ, 0)                                                                         \
  F(STRN, team, REQ, 0)                                                                          \
  F(INT, machines, REQ, 0)                                                                       \
  F(INT, verified, REQ, 0)                                                                       \
  F(U128, credit, REQ, 0)
NQ_VIEW_STRUCT(volunteer, NQ_VIEW_VOLUNTEER)
#define NQ_VIEW_VOLUNTEERS(F) F(ARR, volunteers, REQ, volunteer)
NQ_VIEW_STRUCT(volunteers, NQ_VIEW_VOLUNTEERS)

/* The status of one job (nq-admin status, /api/status; docs/operations.md). */
#define NQ_VIEW_STATUS(F)                                                                        \
  F(INT, now, REQ, 0)                                                                            \
  F(BOOL, done, REQ, 0)                                                                          \
  F(OBJ, job, REQ, job)                                                                          \
  F(OBJ, units, REQ, unit_counts)                                                                \
  F(OBJ, trust, REQ, trust)                                                                      \
  F(INT, results, REQ, 0)                                                                        \
  F(OBJ, progress, REQ, progress)                                                                \
  F(OBJ, rate, REQ, rate)                                                                        \
  F(OBJ, stalled, REQ, stalled)                                                                  \
  F(OBJ, verified, REQ, totals)                                                                  \
  F(OBJ, final, NULL, totals)                                                                    \
  F(OBJ, known, NULL, known)                                                                     \
  F(BOOL, match, NULL, 0)                                                                        \
  F(STR, match_text, REQ, 0)                                                                     \
  F(OBJ, clients, REQ, fleet)                                                                    \
  F(OBJ, backup, REQ, backup)                                                                    \
  F(OBJ, kernels, OPT, kernels)                                                                  \
  F(OBJ, audits, OPT, audits)                                                                    \
  F(ARR, disputed, OPT, unit)                                                                    \
  F(ARR, leaderboard, OPT, leader)                                                               \
  F(OBJ, server, OPT, server)                                                                    \
  F(STR, evidence_key, OPT, 0)                                                                   \
  F(OBJ, cert, OPT, cert)                                                                        \
  F(ARR, news, OPT, news_item)                                                                   \
  F(ARR, volunteers, OPT, volunteer)                                                             \
  F(ARR, teams, OPT, team)
NQ_VIEW_STRUCT(status, NQ_VIEW_STATUS)

/* /api/history: the job's samples, with the rates between them (null for the first). */
#define NQ_VIEW_SAMPLE(F)                                                                        \
  F(INT, t, REQ, 0)                                                                              \
  F(INT, verified, REQ, 0)                                                                       \
  F(INT, results, REQ, 0)                                                                        \
  F(U128, verified_nodes, REQ, 0)                                                                \
  F(REAL, share, REQ, 0)                                                                         \
  F(REAL, results_per_s, NULL, 0)                                                                \
  F(REAL, nodes_per_s, NULL, 0)
NQ_VIEW_STRUCT(sample, NQ_VIEW_SAMPLE)

#define NQ_VIEW_HISTORY(F)                                                                       \
  F(INT, n, REQ, 0)                                                                              \
  F(INT, interval, REQ, 0)                                                                       \
  F(INT, max_samples, REQ, 0)                                                                    \
  F(ARR, samples, REQ, sample)
NQ_VIEW_STRUCT(history, NQ_VIEW_HISTORY)

/* ---- the lists ------------------------------------------------------------------------------ */

#define NQ_VIEW_CLIENT(F)                                                                        \
  F(STR, name, REQ, 0)                                                                           \
  F(INT, id, REQ, 0)                                                                             \
  F(INT, created, REQ, 0)                                                                        \
  F(INT, last_seen, REQ, 0)                                                                      \
  F(BOOL, active, REQ, 0)                                                                        \
  F(INT, valid, REQ, 0)                                                                          \
  F(INT, invalid, REQ, 0)                                                                        \
  F(BOOL, banned, REQ, 0)                                                                        \
  F(INT, outstanding, REQ, 0)                                                                    \
  F(STR, owner, REQ, 0)                                                                          \
  F(BOOL, suspect, REQ, 0)                                                                       \
  F(STR, network, REQ, 0)                                                                        \
  F(STRN, software, REQ, 0)                                                                      \
  F(INT, protocol, REQ, 0)                                                                       \
  F(INT, lapses, REQ, 0)                                                                         \
  F(BOOL, hoarding, REQ, 0)                                                                      \
  F(STR, backends, REQ, 0)                                                                       \
  F(U128, credit, REQ, 0)                                                                        \
  F(STRN, public_name, REQ, 0)                                                                   \
  F(STR, display_name, REQ, 0)
NQ_VIEW_STRUCT(client, NQ_VIEW_CLIENT)

#define NQ_VIEW_OWNER(F)                                                                         \
  F(STR, name, REQ, 0)                                                                           \
  F(INT, id, REQ, 0)                                                                             \
  F(INT, created, REQ, 0)                                                                        \
  F(BOOL, banned, REQ, 0)                                                                        \
  F(BOOL, has_key, REQ, 0)                                                                       \
  F(INT, clients, REQ, 0)                                                                        \
  F(BOOL, trusted, REQ, 0)                                                                       \
  F(U128, credit, REQ, 0)                                                                        \
  F(BOOL, self_joined, OPT, 0)                                                                   \
  F(STR, public_name, OPT, 0)
NQ_VIEW_STRUCT(owner, NQ_VIEW_OWNER)

/* A job queue entry (job list, job add with its position, job cancel, job next). */
#define NQ_VIEW_QUEUED(F)                                                                        \
  F(INT, id, REQ, 0)                                                                             \
  F(INT, n, REQ, 0)                                                                              \
  F(INT, depth, REQ, 0)                                                                          \
  F(REAL, unit_seconds, REQ, 0)                                                                  \
  F(INT, max_depth, REQ, 0)                                                                      \
  F(INT, quorum, REQ, 0)                                                                         \
  F(INT, max_results, REQ, 0)                                                                    \
  F(INT, diverse_kernels, REQ, 0)                                                                \
  F(STR, state, REQ, 0)                                                                          \
  F(INT, added, REQ, 0)                                                                          \
  F(INT, changed, REQ, 0)                                                                        \
  F(INT, job_id, NULL, 0)                                                                        \
  F(STRN, error, REQ, 0)                                                                         \
  F(INT, position, OPT, 0)
NQ_VIEW_STRUCT(queued, NQ_VIEW_QUEUED)

#define NQ_VIEW_CLIENTS(F) F(ARR, clients, REQ, client)
NQ_VIEW_STRUCT(clients, NQ_VIEW_CLIENTS)
/* One sign-up request (nq-client --join; signups, owner_approve, owner_reject). */
#define NQ_VIEW_SIGNUP(F)                                                                        \
  F(INT, id, REQ, 0)                                                                             \
  F(INT, at, REQ, 0)                                                                             \
  F(STR, addr, REQ, 0)                                                                           \
  F(STR, net, REQ, 0)                                                                            \
  F(STR, state, REQ, 0)                                                                          \
  F(STR, client, REQ, 0)                                                                         \
  F(STRN, public_name, REQ, 0)                                                                   \
  F(STRN, team, REQ, 0)                                                                          \
  F(STRN, owner, REQ, 0)                                                                         \
  F(INT, decided, REQ, 0)
NQ_VIEW_STRUCT(signup, NQ_VIEW_SIGNUP)
#define NQ_VIEW_SIGNUPS(F) F(ARR, signups, REQ, signup)
NQ_VIEW_STRUCT(signups, NQ_VIEW_SIGNUPS)

#define NQ_VIEW_OWNERS(F) F(ARR, owners, REQ, owner)
NQ_VIEW_STRUCT(owners, NQ_VIEW_OWNERS)
#define NQ_VIEW_JOBS(F) F(ARR, jobs, REQ, job)
NQ_VIEW_STRUCT(jobs, NQ_VIEW_JOBS)
#define NQ_VIEW_UNITS(F) F(ARR, units, REQ, unit)
NQ_VIEW_STRUCT(units, NQ_VIEW_UNITS)
#define NQ_VIEW_QUEUE(F) F(ARR, queue, REQ, queued)
NQ_VIEW_STRUCT(queue, NQ_VIEW_QUEUE)

/* ---- the commands' replies ------------------------------------------------------------------ */

/* client_add: the token is shown only here. */
#define NQ_VIEW_CLIENT_ADDED(F)                                                                  \
  F(STR, name, REQ, 0)                                                                           \
  F(STR, owner, REQ, 0)                                                                          \
  F(STR, token, REQ, 0)
NQ_VIEW_STRUCT(client_added, NQ_VIEW_CLIENT_ADDED)

/* client_ban: released leases, re-opened units. */
#define NQ_VIEW_CLIENT_BANNED(F)                                                                 \
  F(STR, name, REQ, 0)                                                                           \
  F(BOOL, banned, REQ, 0)                                                                        \
  F(INT, released, REQ, 0)                                                                       \
  F(INT, reopened, REQ, 0)
NQ_VIEW_STRUCT(client_banned, NQ_VIEW_CLIENT_BANNED)

#define NQ_VIEW_CLIENT_UNBANNED(F)                                                               \
  F(STR, name, REQ, 0)                                                                           \
  F(BOOL, banned, REQ, 0)                                                                        \
  F(BOOL, suspect, REQ, 0)
NQ_VIEW_STRUCT(client_unbanned, NQ_VIEW_CLIENT_UNBANNED)

/* owner_add, owner_rekey: the enrolment key is shown only here. */
#define NQ_VIEW_OWNER_KEY(F)                                                                     \
  F(STR, name, REQ, 0)                                                                           \
  F(INT, id, REQ, 0)                                                                             \
  F(STR, enrol_key, REQ, 0)
NQ_VIEW_STRUCT(owner_key, NQ_VIEW_OWNER_KEY)

#define NQ_VIEW_OWNER_BANNED(F)                                                                  \
  F(STR, name, REQ, 0)                                                                           \
  F(BOOL, banned, REQ, 0)                                                                        \
  F(INT, clients, REQ, 0)                                                                        \
  F(INT, reopened, REQ, 0)
NQ_VIEW_STRUCT(owner_banned, NQ_VIEW_OWNER_BANNED)

#define NQ_VIEW_OWNER_UNBANNED(F)                                                                \
  F(STR, name, REQ, 0)                                                                           \
  F(BOOL, banned, REQ, 0)                                                                        \
  F(INT, clients_banned, REQ, 0)
NQ_VIEW_STRUCT(owner_unbanned, NQ_VIEW_OWNER_UNBANNED)

/* owner_trust, owner_untrust. */
#define NQ_VIEW_OWNER_TRUSTED(F)                                                                 \
  F(STR, name, REQ, 0)                                                                           \
  F(BOOL, trusted, REQ, 0)                                                                       \
  F(INT, trusted_owners, REQ, 0)                                                                 \
  F(INT, recounted, REQ, 0)
NQ_VIEW_STRUCT(owner_trusted, NQ_VIEW_OWNER_TRUSTED)

/* unit_retry --all-disputed | --client NAME. */
#define NQ_VIEW_RETRIED(F)                                                                       \
  F(INT, retried, REQ, 0)                                                                        \
  F(INT, added, REQ, 0)                                                                          \
  F(INTS, units, REQ, 0)                                                                         \
  F(INT, awaiting, REQ, 0)                                                                       \
  F(INT, restored, REQ, 0)                                                                       \
  F(INT, verified, REQ, 0)                                                                       \
  F(BOOL, job_done, REQ, 0)
NQ_VIEW_STRUCT(retried, NQ_VIEW_RETRIED)

/* job_archive, job_delete. */
#define NQ_VIEW_JOB_REMOVED(F)                                                                   \
  F(INT, id, REQ, 0)                                                                             \
  F(INT, n, REQ, 0)                                                                              \
  F(STR, state, REQ, 0)                                                                          \
  F(INT, units, REQ, 0)                                                                          \
  F(INT, released, REQ, 0)                                                                       \
  F(BOOL, deleted, REQ, 0)
NQ_VIEW_STRUCT(job_removed, NQ_VIEW_JOB_REMOVED)

/* job_next: the entry started, and the served job set aside (null: none). */
#define NQ_VIEW_JOB_NEXT(F)                                                                      \
  F(OBJ, next, REQ, queued)                                                                      \
  F(INT, set_aside, NULL, 0)
NQ_VIEW_STRUCT(job_next, NQ_VIEW_JOB_NEXT)

/* Every view declared above (admin_view.c): what test_views and fuzz_srv_view walk. */
extern const nq_view_t *const nq_views_all[];
extern const size_t nq_views_all_n;

#endif
