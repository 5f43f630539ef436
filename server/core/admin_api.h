/* nq-server: the admin API -- the operators' commands (the protocol's `admin` requests,
 * docs/protocol.md) over the store, and the JSON views of the store they answer with (the `data`
 * objects of `admin_reply`). One implementation serves the server's admin sessions and nq-admin's
 * local mode (through the public nq/admin_db.h), so both print the same thing. Each command is a
 * row of nq/admin_cmd.h; admin_cmd.c dispatches through the rows to the handlers, one file per
 * family (admin_status.c, admin_clients.c, admin_units.c, admin_jobs.c, admin_public.c).
 *
 * Each object is a typed view (nq/admin_view.h: its fields, their JSON keys and types, in one
 * list): the builders fill the view's struct and pack it, and nq-admin and the page parse it
 * back. Key names are a stable interface for scripts (docs/operations.md lists them): add keys,
 * never rename or drop one. Values above 64 bits (job totals) are decimal strings; per-unit
 * counts are JSON integers.
 *
 * Every builder returns a new reference the caller json_decref()s, or NULL on failure; then
 * srv_store_errmsg(st) says why (or the allocation failed). Nothing here changes the store except
 * srv_admin_call for client_add, client_ban, unit_retry, job_archive, job_delete, job_add and
 * job_cancel.
 */
#ifndef SRV_ADMIN_API_H
#define SRV_ADMIN_API_H

#include <jansson.h>
#include <stdint.h>

#include "nq/proto.h"
#include "nq/unit.h"
#include "sched.h"
#include "store_api.h"

/* A client counts as active when seen within this many seconds; rates use this window. */
/* The server certificate in use, recorded by the server (srv_cert.c) for status in both modes. */
#define SRV_META_TLS_CERT "tls_cert"             /* "<not_after> <warn_days> <file>" */
#define SRV_META_TLS_CERT_NAMES "tls_cert_names" /* "nq.example.org, ..." */
#define SRV_STATUS_ACTIVE_WINDOW 600
#define SRV_STATUS_RATE_WINDOW 300
/* Disputed units listed inside the status object (the `units` command lists all of them). */
#define SRV_STATUS_DISPUTED_MAX 100

/* Numbers computed from client reports, for JSON: a real only when it is finite (the
 * views' NULL fields); whole seconds rounded, clamped to 0..SRV_SECONDS_MAX (100 years), so that
 * no report can make a view fail or an int64 conversion undefined: srv_seconds returns 0 for NaN
 * (the view shows null), else 1 and *out (admin_int.h). */
#define SRV_SECONDS_MAX 3.15576e9

/* The status object of one job at time `now`: job, unit counts per state, progress (percent
 * weighted by node counts, see docs/operations.md), verified partial counts, the final answer and
 * its check against the published table when done, rates and ETA, clients, disputed units, and
 * the stalled units (store_stall.h; from the store's short cache) that the ETA leaves out. cfg:
 * the scheduler's settings, for --quorum-distinct (NULL = the defaults, by owner). */
json_t *srv_status_json(srv_store_t *st, const srv_job_t *job, const srv_sched_config_t *cfg,
                        int64_t now);

/* {"clients": [...]}: every client by name with its trust counters and activity. */
json_t *srv_clients_json(srv_store_t *st, int64_t now);

/* {"jobs": [...]}: every job, oldest first, with final totals once done. */
json_t *srv_jobs_json(srv_store_t *st);

/* {"units": [...]}: units of a job in idx order; state < 0 means every state; limit <= 0 means no
 * limit. Disputed units carry their results ("replicas") so the operator can see the vote; units
 * with live leases carry them ("running": client, percent done, rate and ETA at `now`, from the
 * last progress report). */
json_t *srv_units_json(srv_store_t *st, int64_t job_id, int state, int limit, int64_t now);

/* One job as an object (used by jobs and status). */
json_t *srv_job_json(const srv_job_t *job);

/* What a command did besides its reply, for the server to act on once the batch has committed
 * (and to log). */
typedef struct srv_admin_effects_s {
  int banned;                  /* client_ban: close the banned client's open connections */
  int reopened;                /* unit_retry re-opened a disputed unit ... */
  int64_t added;               /* ... for this many more results ... */
  char unit[NQ_UNIT_TEXT_MAX]; /* ... this one */
  int64_t reopened_units;      /* client_ban, owner_ban, unit_reopen, unit_retry: units re-opened */
  int job_reopened;            /* ... and the finished job runs again */
  int queued;                  /* job_add: a job was queued (a waiting server starts it) */
  int next;                    /* job_next: start the next queued job now (1), even though the
                                * served job runs (2: --force) */
  int job_done;                /* unit_retry verified the job's last unit */
  int news;                    /* news_add: tell the connected clients */
} srv_admin_effects_t;

/* {"news": [...]}: the newest `limit` items (0: all), newest first. */
json_t *srv_news_json(srv_store_t *st, int limit);
/* {"teams": [...]} ranked by their owners' credit; {"volunteers": [...]} ranked by credit (the
 * first `limit`, 0: all): the public lists (docs/http.md). */
json_t *srv_teams_json(srv_store_t *st);
json_t *srv_volunteers_json(srv_store_t *st, int limit);
/* Every volunteer not banned, most credit first (a malloc'ed array; the caller frees it). */
int srv_volunteers_ranked(srv_store_t *st, srv_volunteer_t **out, size_t *n);

/* {"owners": [...]}: every owner by name (docs/operations.md). */
json_t *srv_owners_json(srv_store_t *st, int64_t now);

/* Run one admin request for the server's job `job` at time `now`. `serving` is the id of the job a
 * running server serves (its admin sessions), 0 in nq-admin's local mode: job_archive refuses that
 * job, and job_delete only runs in local mode. On success returns 0 with *data
 * (a new reference: the `data` object of the admin_reply) and *fx. Otherwise returns a negative
 * code, *data is NULL and *err is the error frame to answer with, non-fatal: bad_message (units of
 * an unknown state, a bad client name), not_found, exists, bad_state (unit_retry of a unit that is
 * not disputed), or internal (the store failed; its reason is in the message). client_add
 * returns the new token in *data, the only place it is ever shown. Mutations are atomic on their
 * own (they join an open transaction, or commit by themselves). cfg: the scheduler's settings
 * (the server's; NULL = the defaults, nq-admin's local mode) for the commands that count votes
 * again: client_ban and owner_ban (they re-open the units the banned helped verify) and
 * unit_reopen. */
int srv_admin_call(srv_store_t *st, const srv_job_t *job, int64_t serving,
                   const srv_sched_config_t *cfg, const nq_admin_req_t *req, int64_t now,
                   json_t **data, srv_admin_effects_t *fx, nq_proto_err_t *err);

#endif
