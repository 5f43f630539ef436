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

static void counts_line(const char *label, const nq_view_totals_t *t) {
  char a[48], b[48], c[48], d[48], e[48];
  printf("%-10s TOTAL %s  UNIQUE %s  COUNT2 %s  COUNT4 %s  COUNT8 %s\n", label,
         nq_u128_str(t->total, a), nq_u128_str(t->unique, b), nq_u128_str(t->c2, c),
         nq_u128_str(t->c4, d), nq_u128_str(t->c8, e));
}

static void known_line(const nq_view_known_t *k) {
  printf("%-10s TOTAL %s  UNIQUE %s  COUNT2 %s  COUNT4 %s  COUNT8 %s\n", "published", k->total,
         k->unique, k->c2, k->c4, k->c8);
}

/* Who can vote (the one-owner situation shows here, not only in the server's log) and the units
 * that cannot finish as the fleet stands, with why. */
static void print_stalled(const nq_view_stalled_t *x, int done) {
  /* Not counted yet (a fresh server), or a finished job (nothing to vote on). */
  if (done || x->at == 0) return;
  printf("voters     %lld %s(s) can vote, %lld online  (quorum %lld by %s)\n", (long long)x->keys,
         x->distinct, (long long)x->keys_online, (long long)x->quorum, x->distinct);
  if (x->units > 0)
    printf("STALLED    %lld unit(s) cannot finish as the fleet stands: %s\n",
           (long long)x->units, x->message ? x->message : "");
}

/* What the answer rests on, and what the job waits for besides results (issue 30). */
static void trust_lines(const nq_view_status_t *st) {
  long long owners = (long long)st->trust.trusted_owners;
  long long active = (long long)st->trust.trusted_active;
  long long contested = (long long)st->units.contested;
  long long spot = (long long)st->units.spot_checks;
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
           owners > 0 && !st->done ? "; the job is done only after them (one that no client "
                                     "online may take is dropped 600 s after its unit was "
                                     "verified)" : "");
  if (st->units.has_spot_dropped && st->units.spot_dropped > 0)
    printf("spot       %lld spot check(s) dropped: no client that may take them was online for "
           "600 s after their units were verified; the job %s without them\n",
           (long long)st->units.spot_dropped, st->done ? "finished" : "goes on");
}

/* The kernel rule and the reference audits (absent from an older server: nothing said). */
static void evidence_lines(const nq_view_status_t *st) {
  if (st->has_kernels && st->kernels.diverse > 0)
    printf("kernels    a unit needs %lld different kernel(s), each the one the server named; "
           "%lld verified unit(s) rest on 2 or more (a guard against one honest kernel's bug, not "
           "against colluding clients)\n", (long long)st->kernels.diverse,
           (long long)st->kernels.units_two_kernels);
  else if (st->has_kernels)
    printf("kernels    no kernel rule (--diverse-kernels 0); %lld verified unit(s) rest on 2 "
           "kernels or more\n", (long long)st->kernels.units_two_kernels);
  const nq_view_audits_t *a = &st->audits;
  if (st->has_audits && a->count > 0) {
    char at[64];
    const nq_view_audit_t *l = &a->last;
    int bad = a->has_last && !strcmp(l->outcome, "disagree");
    printf("audits     %lld by the reference solver, %lld disagreed; last %s: %lld of %lld "
           "unit(s) recomputed (seed %lld), %s%s%s\n", (long long)a->count,
           (long long)a->disagreed, adm_time(l->at, at, sizeof at), (long long)l->checked,
           (long long)l->sample, (long long)l->seed,
           bad ? "DISAGREED (re-opened): " : a->has_last ? l->outcome : "",
           bad ? l->detail : "", "");
  } else if (st->has_audits) {
    printf("audits     none yet (nq-admin audit --sample K recomputes K verified units with the "
           "reference solver)\n");
  }
  if (st->has_evidence_key)
    printf("evidence   signed with key %s (nq-verify FILE --key %s)\n", st->evidence_key,
           st->evidence_key);
}

/* Contested units (issue 30) are said above: the rest resolve by votes. The status object
 * lists at most SRV_STATUS_DISPUTED_MAX disputed units: the count is the job's, and "more" is
 * what this table does not show. */
static void disputed_lines(const nq_view_status_t *st) {
  long long nd = (long long)(st->units.state[NQ_UNIT_DISPUTED] - st->units.contested);
  long long shown = 0;
  if (nd <= 0) return;
  printf("disputed   %lld unit(s) resolving by more replicas, %lld blocked at their cap (need "
         "nq-admin unit retry; nq-admin units --state disputed):\n", nd,
         (long long)st->units.blocked);
  for (size_t i = 0; i < st->n_disputed && shown < 20; i++) {
    const nq_view_unit_t *u = &st->disputed[i];
    if (!strcmp(u->contest, "contested")) continue;
    shown++;
    printf("  unit %lld  %s  results %lld\n", (long long)u->id, u->unit, (long long)u->results);
  }
  if (nd > shown) printf("  ... and %lld more\n", nd - shown);
}

/* The rate line: speed, and the ETA or why there is none. */
static void rate_line(const nq_view_status_t *st) {
  char b1[64], b2[64], b3[96], b4[32];
  const nq_view_rate_t *r = &st->rate;
  rate_str(r->results_per_s, b1, sizeof b1);
  rate_str(r->nodes_per_s, b2, sizeof b2);
  if (st->done)
    snprintf(b3, sizeof b3, "finished in %s", adm_duration(r->elapsed_s, b4, sizeof b4));
  else if (r->has_eta_s && st->clients.has_paused && st->clients.paused > 0)
    snprintf(b3, sizeof b3, "ETA %s (%lld client(s) paused)",
             adm_duration(r->eta_s, b4, sizeof b4), (long long)st->clients.paused);
  else if (r->has_eta_s)
    snprintf(b3, sizeof b3, "ETA %s", adm_duration(r->eta_s, b4, sizeof b4));
  else if (st->clients.has_paused && st->clients.paused > 0 && st->stalled.units == 0)
    snprintf(b3, sizeof b3, "ETA unknown: %lld client(s) paused", (long long)st->clients.paused);
  else if (st->stalled.units > 0)
    snprintf(b3, sizeof b3, "no ETA: every unit left is stalled");
  else
    snprintf(b3, sizeof b3, "ETA unknown (no results yet)");
  /* Blocked disputes stop the job whatever the rate says: the ETA says so. */
  if (!st->done && st->units.blocked > 0) {
    size_t l = strlen(b3);
    snprintf(b3 + l, sizeof b3 - l, ", but %lld unit(s) blocked", (long long)st->units.blocked);
  }
  printf("rate       %s results/s  %s nodes/s  (last %llds)  %s\n", b1, b2, (long long)r->window,
         b3);
}

/* The human table of one status view. */
static void print_table(const nq_view_status_t *st) {
  char b1[64], b2[64], pbar[BAR_WIDTH + 3];
  const nq_view_job_t *job = &st->job;
  int done = st->done;
  long long d0 = job->min_depth, d1 = job->depth;
  if (d0 && d0 != d1) snprintf(b2, sizeof b2, "depths %lld-%lld", d0, d1);
  else snprintf(b2, sizeof b2, "depth %lld", d1);
  if (job->unit_seconds > 0)
    snprintf(b2 + strlen(b2), sizeof b2 - strlen(b2), " (units of ~%gs)", job->unit_seconds);
  printf("job %lld: N=%lld  %s  quorum %lld  -- %s  (started %s)\n", (long long)job->id,
         (long long)job->n, b2, (long long)job->quorum, done ? "DONE" : job->state,
         adm_time(job->created, b1, sizeof b1));
  double pct = st->progress.percent;
  bar(pct, pbar);
  const char *method = st->progress.method;
  printf("progress   %s %6.2f%%  (%s)\n", pbar, pct,
         !strcmp(method, "estimate") ? "of the estimated work"
         : !strcmp(method, "nodes")  ? "weighted by node counts"
         : !strcmp(method, "done")   ? "complete"
                                     : "share of verified units");
  const int64_t *n = st->units.state;
  printf("units      total %lld  pending %lld  leased %lld  awaiting quorum %lld  verified %lld"
         "  disputed %lld\n",
         (long long)st->units.total, (long long)n[NQ_UNIT_PENDING], (long long)n[NQ_UNIT_LEASED],
         (long long)n[NQ_UNIT_AWAITING], (long long)n[NQ_UNIT_VERIFIED],
         (long long)n[NQ_UNIT_DISPUTED]);
  if (st->progress.leased > 0)
    printf("running    %lld lease(s), %.2f unit(s) of work done by their last progress "
           "(nq-admin units --state leased)\n",
           (long long)st->progress.leased, st->progress.leased_done);
  if (done && st->has_final) {
    const nq_view_totals_t *f = &st->final;
    char a[48], b[48], c[48];
    counts_line("answer", f);
    if (f->has_solve_nodes)
      printf("%-10s %s (units) + %s (split nodes of the plan) = %s, as nq-solve %lld counts\n",
             "nodes", nq_u128_str(f->nodes, a),
             job->has_internal ? nq_u128_str(job->internal, b) : "", nq_u128_str(f->solve_nodes, c),
             (long long)job->n);
    else
      printf("%-10s %s\n", "nodes", nq_u128_str(f->nodes, a));
  } else if (!done) {
    counts_line("verified", &st->verified);
  }
  if (st->has_known && done) known_line(&st->known);
  printf("%-10s %s\n", "check", st->match_text);
  rate_line(st);
  printf("clients    active %lld  known %lld  banned %lld  suspect %lld\n",
         (long long)st->clients.active, (long long)st->clients.known,
         (long long)st->clients.banned, (long long)st->clients.suspect);
  print_stalled(&st->stalled, done);
  const nq_view_backup_t *bk = &st->backup;
  char bt[64];
  if (bk->has_failed_at && bk->failed_at > 0)
    printf("backup     FAILING since %s: %s\n", adm_time(bk->failed_at, bt, sizeof bt),
           bk->error ? bk->error : "");
  if (bk->has_last_good && bk->last_good > 0)
    printf("backup     last good %s (%s ago): %s\n", adm_time(bk->last_good, bt, sizeof bt),
           adm_duration(st->now - bk->last_good, b1, sizeof b1), bk->file ? bk->file : "");
  if (st->has_cert) {
    const nq_view_cert_t *c = &st->cert;
    char ct[64];
    if (c->expiring)
      printf("cert       WARN: %s %s %s (%.1f days; under the %lld-day warning): renew it, the "
             "server re-reads it\n", c->file, c->days_left < 0 ? "EXPIRED" : "expires",
             adm_time(c->not_after, ct, sizeof ct), c->days_left, (long long)c->warn_days);
    else
      printf("cert       %s (%s) expires %s (%.0f days)\n", c->file, c->names,
             adm_time(c->not_after, ct, sizeof ct), c->days_left);
  }
  trust_lines(st);
  evidence_lines(st);
  disputed_lines(st);
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
    nq_view_status_t v;
    nq_admin_req_t req = {.cmd = NQ_ADMIN_STATUS};
    if ((rc = adm_request(&b, &req, &st)) != 0) break;
    if ((rc = adm_view(&nq_view_status_desc, st, &v)) != 0) {
      json_decref(st);
      break;
    }
    if (o->json) {
      adm_print_json(st, o->watch > 0);
    } else {
      if (o->watch > 0 && tty) fputs("\033[H\033[2J", stdout); /* redraw in place */
      else if (o->watch > 0) puts("--");
      print_table(&v);
    }
    int done = v.done;
    if (done && v.has_match && !v.match) rc = ADM_EXIT_MISMATCH;
    nq_view_status_free(&v);
    json_decref(st);
    if (o->watch <= 0 || done) break;
    sleep_s(o->watch);
  }
  adm_close(&b);
  return rc;
}
