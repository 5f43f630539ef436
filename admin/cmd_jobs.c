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
  if ((rc = adm_call(o, 0, &req, &d)) != 0) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else {
    const json_t *list = adm_get(d, "jobs");
    char t1[64], t2[64];
    printf("%-4s %-4s %-6s %-8s %-6s %-8s %9s  %-23s  %-23s  %s\n", "ID", "N", "DEPTH", "UNIT-S",
           "QUORUM", "STATE", "UNITS", "CREATED", "FINISHED", "TOTAL");
    for (size_t i = 0; i < json_array_size(list); i++) {
      const json_t *j = json_array_get(list, i);
      const char *total = adm_str(j, "final.total");
      char depth[16], secs[16];
      long long d0 = adm_int(j, "min_depth"), d1 = adm_int(j, "depth");
      if (d0 && d0 != d1) snprintf(depth, sizeof depth, "%lld-%lld", d0, d1);
      else snprintf(depth, sizeof depth, "%lld", d1);
      if (adm_real(j, "unit_seconds") > 0) snprintf(secs, sizeof secs, "%g", adm_real(j, "unit_seconds"));
      else snprintf(secs, sizeof secs, "-");
      printf("%-4lld %-4lld %-6s %-8s %-6lld %-8s %9lld  %-23s  %-23s  %s\n",
             (long long)adm_int(j, "id"), (long long)adm_int(j, "n"), depth, secs,
             (long long)adm_int(j, "quorum"), adm_str(j, "state"), (long long)adm_int(j, "units"),
             adm_time(adm_int(j, "created"), t1, sizeof t1),
             adm_int(j, "finished") ? adm_time(adm_int(j, "finished"), t2, sizeof t2) : "-",
             total[0] ? total : "-");
    }
  }
  json_decref(d);
  return 0;
}

/* A number, or "-" when the server has none (null). */
static const char *num_or_dash(const json_t *v, const char *fmt, char *buf, size_t len) {
  if (!json_is_number(v)) return "-";
  snprintf(buf, len, fmt, json_number_value(v));
  return buf;
}

/* The live leases of a unit: who runs it, how far it is, its rate and ETA (last progress). */
static void print_running(const json_t *u) {
  const json_t *run = adm_get(u, "running");
  for (size_t i = 0; i < json_array_size(run); i++) {
    const json_t *r = json_array_get(run, i);
    char pct[32], rate[32], eta[32];
    const json_t *e = adm_get(r, "eta_s");
    printf("    running on %-20s %7s done  %10s nodes/s  ETA %s\n", adm_str(r, "client"),
           num_or_dash(adm_get(r, "percent"), "%.1f%%", pct, sizeof pct),
           num_or_dash(adm_get(r, "nodes_per_s"), "%.3g", rate, sizeof rate),
           json_is_integer(e) ? adm_duration(json_integer_value(e), eta, sizeof eta)
                              : "unknown (no progress yet)");
  }
}

static void print_unit(const json_t *u) {
  /* A contested unit (issue 30) is disputed in the store; it is shown as what it waits for. */
  const char *contest = adm_str(u, "contest");
  printf("%-8lld %-6lld %-24s %-9s %4lld %7lld", (long long)adm_int(u, "id"),
         (long long)adm_int(u, "idx"), adm_str(u, "unit"),
         !strcmp(contest, "contested") ? "contested" : adm_str(u, "state"),
         (long long)adm_int(u, "live"), (long long)adm_int(u, "results"));
  if (!strcmp(adm_str(u, "state"), "verified"))
    printf("  c2 %lld c4 %lld c8 %lld nodes %lld", (long long)adm_int(u, "c2"),
           (long long)adm_int(u, "c4"), (long long)adm_int(u, "c8"),
           (long long)adm_int(u, "nodes"));
  if (!strcmp(contest, "trusted") || !strcmp(contest, "audit"))
    printf("  settled by %s", !strcmp(contest, "trusted") ? "a trusted owner" : "an audit");
  putchar('\n');
  const json_t *reps = adm_get(u, "replicas");
  for (size_t i = 0; i < json_array_size(reps); i++) {
    const json_t *r = json_array_get(reps, i);
    const json_t *be = adm_get(r, "backend");
    const char *vote = json_is_true(adm_get(r, "voided"))   ? ", voided"
                       : json_is_false(adm_get(r, "votes")) ? ", no vote"
                                                              : "";
    printf("    result from %-20s c2 %lld c4 %lld c8 %lld nodes %lld (%s, %s, %s%s)\n",
           adm_str(r, "client"), (long long)adm_int(r, "c2"), (long long)adm_int(r, "c4"),
           (long long)adm_int(r, "c8"), (long long)adm_int(r, "nodes"), adm_str(r, "solver"),
           json_is_string(be) ? json_string_value(be) : "backend unknown", adm_str(r, "state"),
           vote);
  }
  print_running(u);
}

int adm_cmd_units(const adm_cmd_t *cmd, adm_opts_t *o) {
  json_t *d = NULL;
  int rc;
  if (!o->state || o->argc > 0) {
    fprintf(stderr, "nq-admin units: %s\n", o->argc > 0 ? "unexpected argument" : "--state is required");
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  static const char *states[] = {"pending", "leased", "awaiting", "verified", "disputed", "all"};
  int known = 0;
  for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) known |= !strcmp(o->state, states[i]);
  if (!known) {
    fprintf(stderr, "nq-admin units: unknown state '%s'\n", o->state);
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  nq_admin_req_t req = {.cmd = NQ_ADMIN_UNITS, .state = o->state, .limit = o->limit};
  if ((rc = adm_call(o, 1, &req, &d)) != 0) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else {
    const json_t *list = adm_get(d, "units");
    printf("%-8s %-6s %-24s %-9s %4s %7s\n", "ID", "IDX", "UNIT", "STATE", "LIVE", "RESULTS");
    for (size_t i = 0; i < json_array_size(list); i++) print_unit(json_array_get(list, i));
    printf("%zu unit(s) %s\n", json_array_size(list), o->state);
    if ((!strcmp(o->state, "disputed") || !strcmp(o->state, "awaiting")) &&
        json_array_size(list) > 0)
      printf("to resolve one: nq-admin unit retry ID [--extra K]   (more replicas; see "
             "docs/operations.md)\n");
  }
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
  nq_admin_req_t req = {.cmd = reopen ? NQ_ADMIN_UNIT_REOPEN : NQ_ADMIN_UNIT_RETRY,
                        .extra = o->extra, .all_disputed = o->all_disputed, .client = o->client};
  if (!many) {
    const char *arg = o->argv[1];
    size_t digits = strspn(arg, "0123456789");
    if (digits > 0 && digits < 19 && arg[digits] == '\0') req.unit_id = strtoll(arg, NULL, 10);
    else req.unit_text = arg;
  }
  if ((rc = adm_call(o, 1, &req, &d)) != 0) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else if (many) {
    printf("%lld unit(s) re-opened for up to %lld more result(s) each",
           (long long)adm_int(d, "retried"), (long long)adm_int(d, "added"));
    if (adm_int(d, "awaiting") > 0)
      printf(" (%lld awaiting: %lld vote(s) restored, %lld unit(s) verified by them%s)",
             (long long)adm_int(d, "awaiting"), (long long)adm_int(d, "restored"),
             (long long)adm_int(d, "verified"),
             json_is_true(adm_get(d, "job_done")) ? "; the job is done" : "");
    putchar('\n');
  } else if (reopen) {
    printf("unit %lld (%s) re-opened: now %s; its %lld result(s) no longer vote; it is verified "
           "again by a quorum of fresh results%s\n",
           (long long)adm_int(d, "id"), adm_str(d, "unit"), adm_str(d, "state"),
           (long long)adm_int(d, "results"),
           json_is_true(adm_get(d, "job_reopened")) ? " (the finished job runs again)" : "");
  } else if (!strcmp(adm_str(d, "state"), "verified")) {
    printf("unit %lld (%s) verified by its restored votes (%lld result(s) vote again)%s\n",
           (long long)adm_int(d, "id"), adm_str(d, "unit"), (long long)adm_int(d, "restored"),
           json_is_true(adm_get(d, "job_done")) ? "; the job is done" : "");
  } else {
    printf("unit %lld (%s) re-opened: now %s with %lld result(s), %lld vote(s) restored; up to "
           "%lld more (cap %lld results); verified once one answer has a strict majority of at "
           "least a quorum\n",
           (long long)adm_int(d, "id"), adm_str(d, "unit"), adm_str(d, "state"),
           (long long)adm_int(d, "results"), (long long)adm_int(d, "restored"),
           (long long)(adm_int(d, "max_results") - adm_int(d, "results")),
           (long long)adm_int(d, "max_results"));
  }
  json_decref(d);
  return 0;
}

/* A queue entry's --diverse-kernels: the number, or "default" (N's) when it was not given. */
static const char *queued_kernels(const json_t *q, char *buf, size_t len) {
  json_int_t k = adm_int(q, "diverse_kernels");
  if (k < 0) return "default";
  snprintf(buf, len, "%lld", (long long)k);
  return buf;
}

/* "depth 8", "units of 7200 s (max depth 12)" or "units of 7200 s": how a queued job is cut. */
static const char *queued_units(const json_t *q, char *buf, size_t len) {
  long long depth = adm_int(q, "depth"), max_depth = adm_int(q, "max_depth");
  double secs = adm_real(q, "unit_seconds"), dflt = NQ_PLAN_DEFAULT_UNIT_SECONDS;
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
  nq_admin_req_t req = {.cmd = NQ_ADMIN_JOB_ADD, .job_n = job.n, .depth = job.depth,
                        .max_depth = job.max_depth, .unit_seconds = job.unit_seconds,
                        .quorum = job.quorum, .max_results = job.max_results,
                        .diverse_kernels = job.diverse_kernels};
  json_t *d = NULL;
  int rc = adm_call(o, 0, &req, &d);
  if (rc) return rc;
  char units[64], kernels[24];
  if (o->json) adm_print_json(d, 0);
  else
    printf("queued job %lld: N=%lld, units of %s, quorum %lld, max-results %lld, "
           "diverse-kernels %s; number %lld in the queue: it starts when the jobs before it are "
           "done\n", (long long)adm_int(d, "id"), (long long)adm_int(d, "n"),
           queued_units(d, units, sizeof units), (long long)adm_int(d, "quorum"),
           (long long)adm_int(d, "max_results"), queued_kernels(d, kernels, sizeof kernels),
           (long long)adm_int(d, "position"));
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
  nq_admin_req_t req = {.cmd = NQ_ADMIN_JOB_LIST, .all = o->all};
  json_t *d = NULL;
  int rc = adm_call(o, 0, &req, &d);
  if (rc) return rc;
  if (o->json) {
    adm_print_json(d, 0);
    json_decref(d);
    return 0;
  }
  const json_t *list = adm_get(d, "queue");
  printf("%-4s %-4s %-24s %-6s %-7s %-8s %-9s %-23s  %s\n", "ID", "N", "UNITS", "QUORUM",
         "MAX-RES", "KERNELS", "STATE", "ADDED", "JOB / ERROR");
  for (size_t i = 0; i < json_array_size(list); i++) {
    const json_t *q = json_array_get(list, i);
    char units[64], t[64], job[32], kernels[24];
    const char *state = adm_str(q, "state");
    snprintf(job, sizeof job, "job %lld", (long long)adm_int(q, "job_id"));
    printf("%-4lld %-4lld %-24s %-6lld %-7lld %-8s %-9s %-23s  %s\n", (long long)adm_int(q, "id"),
           (long long)adm_int(q, "n"), queued_units(q, units, sizeof units),
           (long long)adm_int(q, "quorum"), (long long)adm_int(q, "max_results"),
           queued_kernels(q, kernels, sizeof kernels), state,
           adm_time(adm_int(q, "added"), t, sizeof t),
           !strcmp(state, "started") ? job : !strcmp(state, "failed") ? adm_str(q, "error") : "-");
  }
  if (json_array_size(list) == 0)
    printf("(%s)\n", o->all ? "nothing was ever queued" : "no job queued: nq-admin job add N");
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
  nq_admin_req_t req = {.cmd = NQ_ADMIN_JOB_NEXT, .force = o->force};
  json_t *d = NULL;
  int rc = adm_call(o, 0, &req, &d);
  if (rc) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else {
    printf("the server starts queued job %lld (N=%lld) now", (long long)adm_int(d, "next.id"),
           (long long)adm_int(d, "next.n"));
    if (json_is_integer(adm_get(d, "set_aside")))
      printf("; job %lld is set aside (its leases released; it resumes when its N is queued "
             "again)", (long long)adm_int(d, "set_aside"));
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
  nq_admin_req_t req = {.cmd = NQ_ADMIN_JOB_CANCEL, .queue_id = id};
  json_t *d = NULL;
  int rc = adm_call(o, 0, &req, &d);
  if (rc) return rc;
  if (o->json) adm_print_json(d, 0);
  else printf("queued job %lld (N=%lld) cancelled\n", (long long)adm_int(d, "id"),
              (long long)adm_int(d, "n"));
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
  nq_admin_req_t req = {.cmd = del ? NQ_ADMIN_JOB_DELETE : NQ_ADMIN_JOB_ARCHIVE, .job_n = (int)n,
                        .force = o->force};
  if ((rc = adm_call_exclusive(o, &req, &d)) != 0) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else {
    printf("job %lld (N=%lld, %lld units) %s", (long long)adm_int(d, "id"),
           (long long)adm_int(d, "n"), (long long)adm_int(d, "units"), del ? "deleted" : "archived");
    if (adm_int(d, "released"))
      printf("; %lld lease(s) released", (long long)adm_int(d, "released"));
    printf("; the next nq-server --n %lld in this data directory makes a new job (same CA)\n",
           (long long)adm_int(d, "n"));
  }
  json_decref(d);
  return 0;
}
