/* nq-admin status: the job's progress as a table (default) or JSON (--json), once or --watch. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"

#define BAR_WIDTH 40

static void bar(double percent, char *buf) {
  int full = (int)(percent / 100.0 * BAR_WIDTH + 0.5);
  if (full < 0) full = 0;
  if (full > BAR_WIDTH) full = BAR_WIDTH;
  buf[0] = '[';
  for (int i = 0; i < BAR_WIDTH; i++) buf[1 + i] = i < full ? '#' : '.';
  buf[BAR_WIDTH + 1] = ']';
  buf[BAR_WIDTH + 2] = '\0';
}

/* 1234567 -> "1.23e+06" only when large; keeps small rates readable. */
static void rate_str(double v, char *buf, size_t len) {
  if (v >= 1e6) snprintf(buf, len, "%.3g", v);
  else if (v >= 100) snprintf(buf, len, "%.0f", v);
  else snprintf(buf, len, "%.2f", v);
}

static void counts_line(const char *label, const json_t *t) {
  printf("%-10s TOTAL %s  UNIQUE %s  COUNT2 %s  COUNT4 %s  COUNT8 %s\n", label,
         adm_str(t, "total"), adm_str(t, "unique"), adm_str(t, "c2"), adm_str(t, "c4"),
         adm_str(t, "c8"));
}

/* Who can vote (the one-owner situation shows here, not only in the server's log) and the units
 * that cannot finish as the fleet stands, with why. */
static void print_stalled(const json_t *st, int done) {
  const json_t *x = adm_get(st, "stalled");
  /* Not counted yet (a fresh server), or a finished job (nothing to vote on). */
  if (done || !json_is_object(x) || adm_int(x, "at") == 0) return;
  const char *key = adm_str(x, "distinct");
  printf("voters     %lld %s(s) can vote, %lld online  (quorum %lld by %s)\n",
         (long long)adm_int(x, "keys"), key, (long long)adm_int(x, "keys_online"),
         (long long)adm_int(x, "quorum"), key);
  if (adm_int(x, "units") > 0)
    printf("STALLED    %lld unit(s) cannot finish as the fleet stands: %s\n",
           (long long)adm_int(x, "units"), adm_str(x, "message"));
}

/* The human table of one status object. */
/* What the answer rests on, and what the job waits for besides results (issue 30). */
static void trust_lines(const json_t *st, int done) {
  long long owners = (long long)adm_int(st, "trust.trusted_owners");
  long long active = (long long)adm_int(st, "trust.trusted_active");
  long long contested = (long long)adm_int(st, "units.contested");
  long long spot = (long long)adm_int(st, "units.spot_checks");
  if (owners > 0)
    printf("trust      %lld trusted owner(s), %lld of their clients active: a disagreement is "
           "settled by a trusted owner's result, never by votes\n", owners, active);
  else
    printf("trust      no trusted owner: the answer rests on votes alone (nq-admin owner trust "
           "NAME)\n");
  if (contested > 0)
    printf("contested  %lld unit(s) whose results disagree: waiting for a trusted owner's "
           "result%s (nq-admin units --state disputed)\n", contested,
           owners == 0 ? " (there is none: nq-admin owner trust NAME)"
           : active == 0 ? " (none is active)" : "");
  if (spot > 0)
    printf("spot       %lld verified unit(s) waiting for a check by %s%s\n", spot,
           active > 0 ? "a trusted owner" : "another owner",
           owners > 0 && !done ? "; the job is done only after them" : "");
}

static void print_table(const json_t *st) {
  char b1[64], b2[64], b3[96], b4[32], pbar[BAR_WIDTH + 3];
  const json_t *job = adm_get(st, "job");
  int done = json_is_true(adm_get(st, "done"));
  long long d0 = adm_int(job, "min_depth"), d1 = adm_int(job, "depth");
  if (d0 && d0 != d1) snprintf(b2, sizeof b2, "depths %lld-%lld", d0, d1);
  else snprintf(b2, sizeof b2, "depth %lld", d1);
  if (adm_real(job, "unit_seconds") > 0)
    snprintf(b2 + strlen(b2), sizeof b2 - strlen(b2), " (units of ~%gs)",
             adm_real(job, "unit_seconds"));
  printf("job %lld: N=%lld  %s  quorum %lld  -- %s  (started %s)\n",
         (long long)adm_int(job, "id"), (long long)adm_int(job, "n"), b2,
         (long long)adm_int(job, "quorum"), done ? "DONE" : adm_str(job, "state"),
         adm_time(adm_int(job, "created"), b1, sizeof b1));
  double pct = adm_real(st, "progress.percent");
  bar(pct, pbar);
  const char *method = adm_str(st, "progress.method");
  printf("progress   %s %6.2f%%  (%s)\n", pbar, pct,
         !strcmp(method, "estimate") ? "of the estimated work"
         : !strcmp(method, "nodes")  ? "weighted by node counts"
         : !strcmp(method, "done")   ? "complete"
                                     : "share of verified units");
  printf("units      total %lld  pending %lld  leased %lld  awaiting quorum %lld  verified %lld"
         "  disputed %lld\n",
         (long long)adm_int(st, "units.total"), (long long)adm_int(st, "units.pending"),
         (long long)adm_int(st, "units.leased"), (long long)adm_int(st, "units.awaiting"),
         (long long)adm_int(st, "units.verified"), (long long)adm_int(st, "units.disputed"));
  if (adm_int(st, "progress.leased") > 0)
    printf("running    %lld lease(s), %.2f unit(s) of work done by their last progress "
           "(nq-admin units --state leased)\n",
           (long long)adm_int(st, "progress.leased"), adm_real(st, "progress.leased_done"));
  if (done) {
    counts_line("answer", adm_get(st, "final"));
    if (adm_get(st, "final.solve_nodes"))
      printf("%-10s %s (units) + %s (split nodes of the plan) = %s, as nq-solve %lld counts\n",
             "nodes", adm_str(st, "final.nodes"), adm_str(job, "internal"),
             adm_str(st, "final.solve_nodes"), (long long)adm_int(job, "n"));
    else
      printf("%-10s %s\n", "nodes", adm_str(st, "final.nodes"));
  } else {
    counts_line("verified", adm_get(st, "verified"));
  }
  const json_t *known = adm_get(st, "known");
  if (json_is_object(known) && done) counts_line("published", known);
  printf("%-10s %s\n", "check", adm_str(st, "match_text"));
  rate_str(adm_real(st, "rate.results_per_s"), b1, sizeof b1);
  rate_str(adm_real(st, "rate.nodes_per_s"), b2, sizeof b2);
  const json_t *eta = adm_get(adm_get(st, "rate"), "eta_s");
  if (done)
    snprintf(b3, sizeof b3, "finished in %s",
             adm_duration(adm_int(st, "rate.elapsed_s"), b4, sizeof b4));
  else if (json_is_integer(eta))
    snprintf(b3, sizeof b3, "ETA %s", adm_duration(json_integer_value(eta), b4, sizeof b4));
  else if (adm_int(st, "stalled.units") > 0)
    snprintf(b3, sizeof b3, "no ETA: every unit left is stalled");
  else
    snprintf(b3, sizeof b3, "ETA unknown (no results yet)");
  /* Blocked disputes stop the job whatever the rate says: the ETA says so. */
  if (!done && adm_int(st, "units.blocked") > 0) {
    size_t l = strlen(b3);
    snprintf(b3 + l, sizeof b3 - l, ", but %lld unit(s) blocked",
             (long long)adm_int(st, "units.blocked"));
  }
  printf("rate       %s results/s  %s nodes/s  (last %llds)  %s\n", b1, b2,
         (long long)adm_int(st, "rate.window"), b3);
  printf("clients    active %lld  known %lld  banned %lld  suspect %lld\n",
         (long long)adm_int(st, "clients.active"), (long long)adm_int(st, "clients.known"),
         (long long)adm_int(st, "clients.banned"), (long long)adm_int(st, "clients.suspect"));
  print_stalled(st, done);
  char bt[64];
  if (adm_int(st, "backup.failed_at") > 0)
    printf("backup     FAILING since %s: %s\n", adm_time(adm_int(st, "backup.failed_at"), bt,
           sizeof bt), adm_str(st, "backup.error"));
  if (adm_int(st, "backup.last_good") > 0)
    printf("backup     last good %s (%s ago): %s\n", adm_time(adm_int(st, "backup.last_good"), bt,
           sizeof bt), adm_duration(adm_int(st, "now") - adm_int(st, "backup.last_good"), b1,
           sizeof b1), adm_str(st, "backup.file"));
  trust_lines(st, done);
  if (adm_get(st, "kernels") && adm_int(st, "kernels.diverse") > 0)
    printf("kernels    a unit needs %lld different kernel(s); %lld verified unit(s) rest on 2 "
           "or more\n", (long long)adm_int(st, "kernels.diverse"),
           (long long)adm_int(st, "kernels.units_two_kernels"));
  else if (adm_get(st, "kernels"))
    printf("kernels    no kernel rule (--diverse-kernels 0); %lld verified unit(s) rest on 2 "
           "kernels or more\n", (long long)adm_int(st, "kernels.units_two_kernels"));
  if (adm_int(st, "audits.count") > 0) {
    char at[64];
    int bad = !strcmp(adm_str(st, "audits.last.outcome"), "disagree");
    printf("audits     %lld by the reference solver, %lld disagreed; last %s: %lld of %lld "
           "unit(s) recomputed (seed %lld), %s%s%s\n", (long long)adm_int(st, "audits.count"),
           (long long)adm_int(st, "audits.disagreed"),
           adm_time(adm_int(st, "audits.last.at"), at, sizeof at),
           (long long)adm_int(st, "audits.last.checked"),
           (long long)adm_int(st, "audits.last.sample"), (long long)adm_int(st, "audits.last.seed"),
           bad ? "DISAGREED (re-opened): " : adm_str(st, "audits.last.outcome"),
           bad ? adm_str(st, "audits.last.detail") : "", "");
  } else if (adm_get(st, "audits")) {
    printf("audits     none yet (nq-admin audit --sample K recomputes K verified units with the "
           "reference solver)\n");
  }
  /* Contested units (issue 30) are said above: the rest resolve by votes. The status object
   * lists at most SRV_STATUS_DISPUTED_MAX disputed units: the count is the job's, and "more" is
   * what this table does not show. */
  const json_t *disp = adm_get(st, "disputed");
  long long nd = (long long)(adm_int(st, "units.disputed") - adm_int(st, "units.contested"));
  long long shown = 0;
  if (nd > 0) {
    printf("disputed   %lld unit(s) resolving by more replicas, %lld blocked at their cap (need "
           "nq-admin unit retry; nq-admin units --state disputed):\n", nd,
           (long long)adm_int(st, "units.blocked"));
    for (size_t i = 0; i < json_array_size(disp) && shown < 20; i++) {
      const json_t *u = json_array_get(disp, i);
      if (!strcmp(adm_str(u, "contest"), "contested")) continue;
      shown++;
      printf("  unit %lld  %s  results %lld\n", (long long)adm_int(u, "id"), adm_str(u, "unit"),
             (long long)adm_int(u, "results"));
    }
    if (nd > shown) printf("  ... and %lld more\n", nd - shown);
  }
  fflush(stdout);
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

int adm_cmd_status(const adm_cmd_t *cmd, adm_opts_t *o) {
  adm_backend_t b;
  int rc;
  if (o->argc > 0) {
    fprintf(stderr, "nq-admin status: unexpected argument '%s'\n", o->argv[0]);
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  if ((rc = adm_open(&b, o, 1)) != 0) return rc;
  int tty = isatty(STDOUT_FILENO);
  for (;;) {
    json_t *st = NULL;
    nq_admin_req_t req = {.cmd = NQ_ADMIN_STATUS};
    if ((rc = adm_request(&b, &req, &st)) != 0) break;
    int done = json_is_true(adm_get(st, "done"));
    if (o->json) {
      adm_print_json(st, o->watch > 0);
    } else {
      if (o->watch > 0 && tty) fputs("\033[H\033[2J", stdout); /* redraw in place */
      else if (o->watch > 0) puts("--");
      print_table(st);
    }
    if (done && json_is_false(adm_get(st, "match"))) rc = ADM_EXIT_MISMATCH;
    json_decref(st);
    if (o->watch <= 0 || done) break;
    sleep_s(o->watch);
  }
  adm_close(&b);
  return rc;
}
