/* nq-admin jobs / job add|list|cancel|archive|delete / units --state S / unit retry UNIT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "nq/plan.h"

int adm_cmd_jobs(const adm_cmd_t *cmd, adm_opts_t *o) {
  json_t *d = NULL;
  int rc;
  if (o->argc > 0) {
    fprintf(stderr, "nq-admin jobs: unexpected argument '%s'\n", o->argv[0]);
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  nq_admin_req_t req = {.cmd = NQ_ADMIN_JOBS};
  nq_view_jobs_t v;
  if ((rc = adm_call_view(o, 0, &req, &d, &v)) != 0) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else {
    char t1[64], t2[64], total[48];
    printf("%-4s %-4s %-6s %-8s %-6s %-8s %9s  %-23s  %-23s  %s\n", "ID", "N", "DEPTH", "UNIT-S",
           "QUORUM", "STATE", "UNITS", "CREATED", "FINISHED", "TOTAL");
    for (size_t i = 0; i < v.n_jobs; i++) {
      const nq_view_job_t *j = &v.jobs[i];
      char depth[16], secs[16];
      long long d0 = j->min_depth, d1 = j->depth;
      if (d0 && d0 != d1) snprintf(depth, sizeof depth, "%lld-%lld", d0, d1);
      else snprintf(depth, sizeof depth, "%lld", d1);
      if (j->unit_seconds > 0) snprintf(secs, sizeof secs, "%g", j->unit_seconds);
      else snprintf(secs, sizeof secs, "-");
      printf("%-4lld %-4lld %-6s %-8s %-6lld %-8s %9lld  %-23s  %-23s  %s\n", (long long)j->id,
             (long long)j->n, depth, secs, (long long)j->quorum, j->state, (long long)j->units,
             adm_time(j->created, t1, sizeof t1),
             j->finished ? adm_time(j->finished, t2, sizeof t2) : "-",
             j->has_final ? nq_u128_str(j->final.total, total) : "-");
    }
  }
  nq_view_jobs_free(&v);
  json_decref(d);
  return 0;
}

/* A number, or "-" when the server has none (null). */
static const char *num_or_dash(int has, double v, const char *fmt, char *buf, size_t len) {
  if (!has) return "-";
  snprintf(buf, len, fmt, v);
  return buf;
}

/* The live leases of a unit: who runs it, how far it is, its rate and ETA (last progress). */
static void print_running(const nq_view_unit_t *u) {
  for (size_t i = 0; i < u->n_running; i++) {
    const nq_view_running_t *r = &u->running[i];
    char pct[32], rate[32], eta[32];
    printf("    running on %-20s %7s done  %10s nodes/s  ETA %s\n", r->client,
           num_or_dash(r->has_percent, r->percent, "%.1f%%", pct, sizeof pct),
           num_or_dash(r->has_nodes_per_s, r->nodes_per_s, "%.3g", rate, sizeof rate),
           r->has_eta_s ? adm_duration(r->eta_s, eta, sizeof eta) : "unknown (no progress yet)");
  }
}

static void print_unit(const nq_view_unit_t *u) {
  /* A contested unit is disputed in the store; it is shown as what it waits for. */
  const char *contest = u->contest;
  printf("%-8lld %-6lld %-24s %-9s %4lld %7lld", (long long)u->id, (long long)u->idx, u->unit,
         !strcmp(contest, "contested") ? "contested" : u->state, (long long)u->live,
         (long long)u->results);
  if (!strcmp(u->state, "verified"))
    printf("  c2 %lld c4 %lld c8 %lld nodes %lld", (long long)u->c2, (long long)u->c4,
           (long long)u->c8, (long long)u->nodes);
  if (!strcmp(contest, "trusted") || !strcmp(contest, "audit"))
    printf("  settled by %s", !strcmp(contest, "trusted") ? "a trusted owner" : "an audit");
  putchar('\n');
  for (size_t i = 0; i < u->n_replicas; i++) {
    const nq_view_replica_t *r = &u->replicas[i];
    const char *vote = r->voided ? ", voided" : !r->votes ? ", no vote" : "";
    printf("    result from %-20s c2 %lld c4 %lld c8 %lld nodes %lld (%s, %s, %s%s)\n", r->client,
           (long long)r->c2, (long long)r->c4, (long long)r->c8, (long long)r->nodes, r->solver,
           r->backend ? r->backend : "backend unknown", r->state, vote);
  }
  print_running(u);
}

/* A state `units --state` takes: a unit state's name (their one table) or "all". */
static int units_state_known(const char *state) {
  const nq_view_names_t *n = &NQ_UNIT_STATE_view_names;
  for (int i = 0; i < n->n; i++)
    if (!strcmp(state, n->names[i])) return 1;
  return !strcmp(state, "all");
}

int adm_cmd_units(const adm_cmd_t *cmd, adm_opts_t *o) {
  json_t *d = NULL;
  int rc;
  if (!o->state || o->argc > 0) {
    fprintf(stderr, "nq-admin units: %s\n", o->argc > 0 ? "unexpected argument" : "--state is required");
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  if (!units_state_known(o->state)) {
    fprintf(stderr, "nq-admin units: unknown state '%s'\n", o->state);
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  nq_admin_req_t req = {.cmd = NQ_ADMIN_UNITS, .q.units = {o->state, o->limit}};
  nq_view_units_t v;
  if ((rc = adm_call_view(o, 1, &req, &d, &v)) != 0) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else {
    printf("%-8s %-6s %-24s %-9s %4s %7s\n", "ID", "IDX", "UNIT", "STATE", "LIVE", "RESULTS");
    for (size_t i = 0; i < v.n_units; i++) print_unit(&v.units[i]);
    printf("%zu unit(s) %s\n", v.n_units, o->state);
    if ((!strcmp(o->state, "disputed") || !strcmp(o->state, "awaiting")) && v.n_units > 0)
      printf("to resolve one: nq-admin unit retry ID [--extra K]   (more replicas; see "
             "docs/operations.md)\n");
  }
  nq_view_units_free(&v);
  json_decref(d);
  return 0;
}

/* unit retry UNIT | unit retry --all-disputed | unit retry --client NAME | unit reopen UNIT:
 * UNIT all digits is an id, anything else a unit text ("8:s:3:3,0,5"). */
int adm_cmd_unit(const adm_cmd_t *cmd, adm_opts_t *o) {
  json_t *d = NULL;
  int rc;
  const char *sub = o->argc >= 1 ? o->argv[0] : "";
  int reopen = !strcmp(sub, "reopen"), many = o->all_disputed || o->client;
  int want = many ? 1 : 2;
  if ((!reopen && strcmp(sub, "retry") != 0) || o->argc != want || (reopen && many) ||
      (o->all_disputed && o->client)) {
    if (o->argc >= 1 && !reopen && strcmp(sub, "retry") != 0)
      fprintf(stderr, "nq-admin unit: unknown subcommand '%s' (retry or reopen)\n", sub);
    else if (many && (reopen || (o->all_disputed && o->client)))
      fprintf(stderr, "nq-admin unit: --all-disputed or --client go with retry, one of them\n");
    else
      fprintf(stderr, "nq-admin unit: %s\n", o->argc > want ? "too many arguments"
                                                            : "missing argument");
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  nq_view_ref_t unit = {0, NULL};
  if (!many) {
    const char *arg = o->argv[1];
    size_t digits = strspn(arg, "0123456789");
    if (digits > 0 && digits < 19 && arg[digits] == '\0') unit.id = strtoll(arg, NULL, 10);
    else unit.text = arg;
  }
  nq_admin_req_t req = {.cmd = NQ_ADMIN_UNIT_REOPEN, .q.unit_reopen = {unit}};
  if (!reopen)
    req = (nq_admin_req_t){.cmd = NQ_ADMIN_UNIT_RETRY,
                           .q.unit_retry = {unit, o->all_disputed, o->client, o->extra}};
  nq_view_retried_t m;
  nq_view_unit_t u;
  /* Several units answer with their own view, not the row's (one unit). */
  if (many && (rc = adm_call(o, 1, &req, &d)) == 0 &&
      (rc = adm_view(&nq_view_retried_desc, d, &m)) != 0)
    json_decref(d);
  if (!many) rc = adm_call_view(o, 1, &req, &d, &u);
  if (rc) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else if (many) {
    printf("%lld unit(s) re-opened for up to %lld more result(s) each", (long long)m.retried,
           (long long)m.added);
    if (m.awaiting > 0)
      printf(" (%lld awaiting: %lld vote(s) restored, %lld unit(s) verified by them%s)",
             (long long)m.awaiting, (long long)m.restored, (long long)m.verified,
             m.job_done ? "; the job is done" : "");
    putchar('\n');
  } else if (reopen) {
    printf("unit %lld (%s) re-opened: now %s; its %lld result(s) no longer vote; it is verified "
           "again by a quorum of fresh results%s\n",
           (long long)u.id, u.unit, u.state, (long long)u.results,
           u.has_job_reopened && u.job_reopened ? " (the finished job runs again)" : "");
  } else if (!strcmp(u.state, "verified")) {
    printf("unit %lld (%s) verified by its restored votes (%lld result(s) vote again)%s\n",
           (long long)u.id, u.unit, (long long)u.restored,
           u.has_job_done && u.job_done ? "; the job is done" : "");
  } else {
    printf("unit %lld (%s) re-opened: now %s with %lld result(s), %lld vote(s) restored; up to "
           "%lld more (cap %lld results); verified once one answer has a strict majority of at "
           "least a quorum\n",
           (long long)u.id, u.unit, u.state, (long long)u.results, (long long)u.restored,
           (long long)(u.max_results - u.results), (long long)u.max_results);
  }
  if (many) nq_view_retried_free(&m);
  else nq_view_unit_free(&u);
  json_decref(d);
  return 0;
}

/* A queue entry's --diverse-kernels: the number, or "default" (N's) when it was not given. */
static const char *queued_kernels(const nq_view_queued_t *q, char *buf, size_t len) {
  int64_t k = q->diverse_kernels;
  if (k < 0) return "default";
  snprintf(buf, len, "%lld", (long long)k);
  return buf;
}

/* "depth 8", "units of 7200 s (max depth 12)" or "units of 7200 s": how a queued job is cut. */
static const char *queued_units(const nq_view_queued_t *q, char *buf, size_t len) {
  long long depth = q->depth, max_depth = q->max_depth;
  double secs = q->unit_seconds, dflt = NQ_PLAN_DEFAULT_UNIT_SECONDS;
  if (depth) snprintf(buf, len, "depth %lld", depth);
  else if (max_depth) snprintf(buf, len, "%g s, max depth %lld", secs > 0 ? secs : dflt, max_depth);
  else snprintf(buf, len, "%g s", secs > 0 ? secs : dflt);
  return buf;
}

/* job add N [job options]: queue a job (it starts when the running one is done). */
static int job_add(const adm_cmd_t *cmd, adm_opts_t *o) {
  char *end = NULL;
  long n = o->argc == 2 ? strtol(o->argv[1], &end, 10) : 0;
  if (o->argc != 2 || !end || *end || n < 4 || n > 32) {
    fprintf(stderr, "nq-admin job add: %s\n", o->argc != 2 ? "wants N (one board size)"
                                                           : "N must be a board size 4..32");
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  nq_jobopts_t job = o->job;
  job.n = (int)n;
  char err[200];
  if (nq_jobopts_check(&job, err, sizeof err) != 0) {
    fprintf(stderr, "nq-admin job add: %s\n", err);
    return ADM_EXIT_USAGE;
  }
  nq_admin_req_t req = {.cmd = NQ_ADMIN_JOB_ADD,
                        .q.job_add = {.n = job.n,
                                      .depth = job.depth,
                                      .max_depth = job.max_depth,
                                      .unit_seconds = job.unit_seconds,
                                      .quorum = job.quorum,
                                      .max_results = job.max_results,
                                      .diverse_kernels = job.diverse_kernels,
                                      .has_diverse_kernels = job.diverse_kernels >= 0}};
  json_t *d = NULL;
  nq_view_queued_t q;
  int rc = adm_call_view(o, 0, &req, &d, &q);
  if (rc) return rc;
  char units[64], kernels[24];
  if (o->json) adm_print_json(d, 0);
  else
    printf("queued job %lld: N=%lld, units of %s, quorum %lld, max-results %lld, "
           "diverse-kernels %s; number %lld in the queue: it starts when the jobs before it are "
           "done\n", (long long)q.id, (long long)q.n, queued_units(&q, units, sizeof units),
           (long long)q.quorum, (long long)q.max_results,
           queued_kernels(&q, kernels, sizeof kernels), (long long)q.position);
  json_decref(d);
  return 0;
}

/* job list [--all]: the queue, next first. */
static int job_list(const adm_cmd_t *cmd, adm_opts_t *o) {
  if (o->argc != 1) {
    fprintf(stderr, "nq-admin job list: unexpected argument '%s'\n", o->argv[1]);
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  nq_admin_req_t req = {.cmd = NQ_ADMIN_JOB_LIST, .q.job_list.all = o->all};
  json_t *d = NULL;
  nq_view_queue_t v;
  int rc = adm_call_view(o, 0, &req, &d, &v);
  if (rc) return rc;
  if (o->json) {
    adm_print_json(d, 0);
    nq_view_queue_free(&v);
    json_decref(d);
    return 0;
  }
  printf("%-4s %-4s %-24s %-6s %-7s %-8s %-9s %-23s  %s\n", "ID", "N", "UNITS", "QUORUM",
         "MAX-RES", "KERNELS", "STATE", "ADDED", "JOB / ERROR");
  for (size_t i = 0; i < v.n_queue; i++) {
    const nq_view_queued_t *q = &v.queue[i];
    char units[64], t[64], job[32], kernels[24];
    const char *state = q->state;
    snprintf(job, sizeof job, "job %lld", (long long)(q->has_job_id ? q->job_id : 0));
    printf("%-4lld %-4lld %-24s %-6lld %-7lld %-8s %-9s %-23s  %s\n", (long long)q->id,
           (long long)q->n, queued_units(q, units, sizeof units), (long long)q->quorum,
           (long long)q->max_results, queued_kernels(q, kernels, sizeof kernels), state,
           adm_time(q->added, t, sizeof t),
           !strcmp(state, "started")  ? job
           : !strcmp(state, "failed") ? (q->error ? q->error : "")
                                      : "-");
  }
  if (v.n_queue == 0)
    printf("(%s)\n", o->all ? "nothing was ever queued" : "no job queued: nq-admin job add N");
  nq_view_queue_free(&v);
  json_decref(d);
  return 0;
}

/* job next [--force]: the operator's word to a running server: the next queued job now. */
static int job_next(const adm_cmd_t *cmd, adm_opts_t *o) {
  if (o->argc != 1) {
    fprintf(stderr, "nq-admin job next: unexpected argument '%s'\n", o->argv[1]);
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  nq_admin_req_t req = {.cmd = NQ_ADMIN_JOB_NEXT, .q.job_next.force = o->force};
  json_t *d = NULL;
  nq_view_job_next_t v;
  int rc = adm_call_view(o, 0, &req, &d, &v);
  if (rc) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else {
    printf("the server starts queued job %lld (N=%lld) now", (long long)v.next.id,
           (long long)v.next.n);
    if (v.has_set_aside)
      printf("; job %lld is set aside (its leases released; it resumes when its N is queued "
             "again)", (long long)v.set_aside);
    printf("\n");
  }
  json_decref(d);
  return 0;
}

/* job cancel ID: take a queued job back. */
static int job_cancel(const adm_cmd_t *cmd, adm_opts_t *o) {
  char *end = NULL;
  long long id = o->argc == 2 ? strtoll(o->argv[1], &end, 10) : 0;
  if (o->argc != 2 || !end || *end || id < 1) {
    fprintf(stderr, "nq-admin job cancel: %s\n", o->argc != 2 ? "wants the queued job's ID"
                    : "ID must be a queued job's id (a positive integer: nq-admin job list)");
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  nq_admin_req_t req = {.cmd = NQ_ADMIN_JOB_CANCEL, .q.job_cancel.id = id};
  json_t *d = NULL;
  nq_view_queued_t q;
  int rc = adm_call_view(o, 0, &req, &d, &q);
  if (rc) return rc;
  if (o->json) adm_print_json(d, 0);
  else printf("queued job %lld (N=%lld) cancelled\n", (long long)q.id, (long long)q.n);
  json_decref(d);
  return 0;
}

/* job archive N | job delete N [--force]: the job for N that is not archived (delete: else the
 * newest archived one). In local mode the data directory's lock is taken, so no server runs. */
int adm_cmd_job(const adm_cmd_t *cmd, adm_opts_t *o) {
  json_t *d = NULL;
  int rc;
  const char *sub = o->argc >= 1 ? o->argv[0] : "";
  if (!strcmp(sub, "add")) return job_add(cmd, o);
  if (!strcmp(sub, "list")) return job_list(cmd, o);
  if (!strcmp(sub, "cancel")) return job_cancel(cmd, o);
  if (!strcmp(sub, "next")) return job_next(cmd, o);
  if (o->job_given) {
    fprintf(stderr, "nq-admin job %s: the job options go with `job add N`\n", sub);
    return ADM_EXIT_USAGE;
  }
  int del = !strcmp(sub, "delete");
  char *end = NULL;
  long n = o->argc == 2 ? strtol(o->argv[1], &end, 10) : 0;
  if (o->argc != 2 || (!del && strcmp(sub, "archive") != 0) || !end || *end || n < 4 || n > 32) {
    if (o->argc >= 1 && !del && strcmp(sub, "archive") != 0)
      fprintf(stderr, "nq-admin job: unknown subcommand '%s' (add, list, cancel, next, archive "
              "or delete)\n", sub);
    else
      fprintf(stderr, "nq-admin job: %s\n", o->argc != 2 ? "wants a subcommand and N"
                                                        : "N must be a board size 4..32");
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  /* job_archive and job_delete take the same view (q_job). */
  nq_admin_req_t req = {.cmd = del ? NQ_ADMIN_JOB_DELETE : NQ_ADMIN_JOB_ARCHIVE,
                        .q.job_archive = {n, o->force}};
  nq_view_job_removed_t v;
  if ((rc = adm_call_exclusive(o, &req, &d)) != 0) return rc;
  if ((rc = adm_view(nq_admin_reply_view(req.cmd), d, &v)) != 0) {
    json_decref(d);
    return rc;
  }
  if (o->json) {
    adm_print_json(d, 0);
  } else {
    printf("job %lld (N=%lld, %lld units) %s", (long long)v.id, (long long)v.n,
           (long long)v.units, del ? "deleted" : "archived");
    if (v.released) printf("; %lld lease(s) released", (long long)v.released);
    printf("; the next nq-server --n %lld in this data directory makes a new job (same CA)\n",
           (long long)v.n);
  }
  json_decref(d);
  return 0;
}
