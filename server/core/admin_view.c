/* nq: the admin views' field tables (nq/admin_view.h), generated from their field lists. */
#include "nq/admin_view.h"

static const char *const unit_state_names[] = {NQ_UNIT_STATE_MAP(NQ_ENUM_NAME_ONE)};
const nq_view_names_t NQ_UNIT_STATE_view_names = {unit_state_names, NQ_UNIT_STATE_N};
static const char *const stall_reason_names[] = {NQ_STALL_REASON_MAP(NQ_ENUM_NAME_ONE)};
const nq_view_names_t NQ_STALL_REASON_view_names = {stall_reason_names, NQ_STALL_REASON_N};

#define NQV_T nq_view_totals_t
NQ_VIEW_DEFINE(totals, NQ_VIEW_TOTALS)
#undef NQV_T
#define NQV_T nq_view_job_t
NQ_VIEW_DEFINE(job, NQ_VIEW_JOB)
#undef NQV_T
#define NQV_T nq_view_known_t
NQ_VIEW_DEFINE(known, NQ_VIEW_KNOWN)
#undef NQV_T
#define NQV_T nq_view_unit_counts_t
NQ_VIEW_DEFINE(unit_counts, NQ_VIEW_UNIT_COUNTS)
#undef NQV_T
#define NQV_T nq_view_trust_t
NQ_VIEW_DEFINE(trust, NQ_VIEW_TRUST)
#undef NQV_T
#define NQV_T nq_view_progress_t
NQ_VIEW_DEFINE(progress, NQ_VIEW_PROGRESS)
#undef NQV_T
#define NQV_T nq_view_rate_t
NQ_VIEW_DEFINE(rate, NQ_VIEW_RATE)
#undef NQV_T
#define NQV_T nq_view_stall_by_t
NQ_VIEW_DEFINE(stall_by, NQ_VIEW_STALL_BY)
#undef NQV_T
#define NQV_T nq_view_stalled_t
NQ_VIEW_DEFINE(stalled, NQ_VIEW_STALLED)
#undef NQV_T
#define NQV_T nq_view_fleet_t
NQ_VIEW_DEFINE(fleet, NQ_VIEW_FLEET)
#undef NQV_T
#define NQV_T nq_view_backup_t
NQ_VIEW_DEFINE(backup, NQ_VIEW_BACKUP)
#undef NQV_T
#define NQV_T nq_view_news_item_t
NQ_VIEW_DEFINE(news_item, NQ_VIEW_NEWS_ITEM)
#undef NQV_T
#define NQV_T nq_view_news_t
NQ_VIEW_DEFINE(news, NQ_VIEW_NEWS)
#undef NQV_T
#define NQV_T nq_view_team_t
NQ_VIEW_DEFINE(team, NQ_VIEW_TEAM)
#undef NQV_T
#define NQV_T nq_view_teams_t
NQ_VIEW_DEFINE(teams, NQ_VIEW_TEAMS)
#undef NQV_T
#define NQV_T nq_view_volunteer_t
NQ_VIEW_DEFINE(volunteer, NQ_VIEW_VOLUNTEER)
#undef NQV_T
#define NQV_T nq_view_volunteers_t
NQ_VIEW_DEFINE(volunteers, NQ_VIEW_VOLUNTEERS)
#undef NQV_T
#define NQV_T nq_view_signup_t
NQ_VIEW_DEFINE(signup, NQ_VIEW_SIGNUP)
#undef NQV_T
#define NQV_T nq_view_signups_t
NQ_VIEW_DEFINE(signups, NQ_VIEW_SIGNUPS)
#undef NQV_T
#define NQV_T nq_view_cert_t
NQ_VIEW_DEFINE(cert, NQ_VIEW_CERT)
#undef NQV_T
#define NQV_T nq_view_kernels_t
NQ_VIEW_DEFINE(kernels, NQ_VIEW_KERNELS)
#undef NQV_T
#define NQV_T nq_view_audit_t
NQ_VIEW_DEFINE(audit, NQ_VIEW_AUDIT)
#undef NQV_T
#define NQV_T nq_view_audits_t
NQ_VIEW_DEFINE(audits, NQ_VIEW_AUDITS)
#undef NQV_T
#define NQV_T nq_view_replica_t
NQ_VIEW_DEFINE(replica, NQ_VIEW_REPLICA)
#undef NQV_T
#define NQV_T nq_view_running_t
NQ_VIEW_DEFINE(running, NQ_VIEW_RUNNING)
#undef NQV_T
#define NQV_T nq_view_unit_t
NQ_VIEW_DEFINE(unit, NQ_VIEW_UNIT)
#undef NQV_T
#define NQV_T nq_view_leader_t
NQ_VIEW_DEFINE(leader, NQ_VIEW_LEADER)
#undef NQV_T
#define NQV_T nq_view_server_t
NQ_VIEW_DEFINE(server, NQ_VIEW_SERVER)
#undef NQV_T
#define NQV_T nq_view_root_t
NQ_VIEW_DEFINE(root, NQ_VIEW_ROOT)
#undef NQV_T
#define NQV_T nq_view_status_t
NQ_VIEW_DEFINE(status, NQ_VIEW_STATUS)
#undef NQV_T
#define NQV_T nq_view_sample_t
NQ_VIEW_DEFINE(sample, NQ_VIEW_SAMPLE)
#undef NQV_T
#define NQV_T nq_view_history_t
NQ_VIEW_DEFINE(history, NQ_VIEW_HISTORY)
#undef NQV_T
#define NQV_T nq_view_client_t
NQ_VIEW_DEFINE(client, NQ_VIEW_CLIENT)
#undef NQV_T
#define NQV_T nq_view_owner_t
NQ_VIEW_DEFINE(owner, NQ_VIEW_OWNER)
#undef NQV_T
#define NQV_T nq_view_queued_t
NQ_VIEW_DEFINE(queued, NQ_VIEW_QUEUED)
#undef NQV_T
#define NQV_T nq_view_clients_t
NQ_VIEW_DEFINE(clients, NQ_VIEW_CLIENTS)
#undef NQV_T
#define NQV_T nq_view_owners_t
NQ_VIEW_DEFINE(owners, NQ_VIEW_OWNERS)
#undef NQV_T
#define NQV_T nq_view_jobs_t
NQ_VIEW_DEFINE(jobs, NQ_VIEW_JOBS)
#undef NQV_T
#define NQV_T nq_view_units_t
NQ_VIEW_DEFINE(units, NQ_VIEW_UNITS)
#undef NQV_T
#define NQV_T nq_view_queue_t
NQ_VIEW_DEFINE(queue, NQ_VIEW_QUEUE)
#undef NQV_T
#define NQV_T nq_view_client_added_t
NQ_VIEW_DEFINE(client_added, NQ_VIEW_CLIENT_ADDED)
#undef NQV_T
#define NQV_T nq_view_client_banned_t
NQ_VIEW_DEFINE(client_banned, NQ_VIEW_CLIENT_BANNED)
#undef NQV_T
#define NQV_T nq_view_client_unbanned_t
NQ_VIEW_DEFINE(client_unbanned, NQ_VIEW_CLIENT_UNBANNED)
#undef NQV_T
#define NQV_T nq_view_owner_key_t
NQ_VIEW_DEFINE(owner_key, NQ_VIEW_OWNER_KEY)
#undef NQV_T
#define NQV_T nq_view_owner_banned_t
NQ_VIEW_DEFINE(owner_banned, NQ_VIEW_OWNER_BANNED)
#undef NQV_T
#define NQV_T nq_view_owner_unbanned_t
NQ_VIEW_DEFINE(owner_unbanned, NQ_VIEW_OWNER_UNBANNED)
#undef NQV_T
#define NQV_T nq_view_owner_trusted_t
NQ_VIEW_DEFINE(owner_trusted, NQ_VIEW_OWNER_TRUSTED)
#undef NQV_T
#define NQV_T nq_view_retried_t
NQ_VIEW_DEFINE(retried, NQ_VIEW_RETRIED)
#undef NQV_T
#define NQV_T nq_view_job_removed_t
NQ_VIEW_DEFINE(job_removed, NQ_VIEW_JOB_REMOVED)
#undef NQV_T
#define NQV_T nq_view_job_next_t
NQ_VIEW_DEFINE(job_next, NQ_VIEW_JOB_NEXT)
#undef NQV_T

/* Every view above, for the tests and the fuzz target that walk them all. */
const nq_view_t *const nq_views_all[] = {
    &nq_view_totals_desc,         &nq_view_job_desc,           &nq_view_known_desc,
    &nq_view_unit_counts_desc,    &nq_view_trust_desc,         &nq_view_progress_desc,
    &nq_view_rate_desc,           &nq_view_stall_by_desc,      &nq_view_stalled_desc,
    &nq_view_fleet_desc,          &nq_view_backup_desc,        &nq_view_kernels_desc,
    &nq_view_audit_desc,          &nq_view_audits_desc,        &nq_view_replica_desc,
    &nq_view_running_desc,        &nq_view_unit_desc,          &nq_view_leader_desc,
    &nq_view_server_desc,         &nq_view_status_desc,        &nq_view_sample_desc,
    &nq_view_history_desc,        &nq_view_client_desc,        &nq_view_owner_desc,
    &nq_view_queued_desc,         &nq_view_clients_desc,       &nq_view_owners_desc,
    &nq_view_jobs_desc,           &nq_view_units_desc,         &nq_view_queue_desc,
    &nq_view_client_added_desc,   &nq_view_client_banned_desc, &nq_view_client_unbanned_desc,
    &nq_view_owner_key_desc,      &nq_view_owner_banned_desc,  &nq_view_owner_unbanned_desc,
    &nq_view_owner_trusted_desc,  &nq_view_retried_desc,       &nq_view_job_removed_desc,
    &nq_view_job_next_desc,       &nq_view_cert_desc,          &nq_view_signup_desc,
    &nq_view_signups_desc,        &nq_view_news_item_desc,     &nq_view_news_desc,
    &nq_view_team_desc,           &nq_view_teams_desc,         &nq_view_volunteer_desc,
    &nq_view_volunteers_desc};
const size_t nq_views_all_n = sizeof nq_views_all / sizeof *nq_views_all;
