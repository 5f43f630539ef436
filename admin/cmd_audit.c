/* nq-admin: audit -- recompute a random sample of verified units with the reference solver on
 * the operator's machine (docs/reliability.md, "The audit"). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "admin.h"
#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/solver_pool.h"
#include "nq/versions.h"

typedef struct {
  nq_admin_audit_unit_t *v;
  int n;
} drawn_t;

static int keep_unit(const nq_admin_audit_unit_t *u, void *arg) {
  drawn_t *d = arg;
  d->v[d->n++] = *u;
  return 0;
}

/* The reference solver's count of one unit, on `threads` threads (the solver pool with the
 * reference kernel: the same tasks, each by plain recursion). */
static int recount(const char *text, int threads, nq_counts_t *out) {
  nq_unit_t u;
  nq_subject_t s;
  nq_run_t *run = NULL;
  char why[200];
  int rc = nq_unit_parse(text, &u, why, sizeof why);
  if (rc == 0) rc = nq_subject_unit(&s, &u);
  if (rc == 0) rc = nq_run_new(&s, NULL, &run, NULL, 0);
  if (rc == 0) rc = nq_run_set_kernel(run, "reference");
  nq_solve_opts_t so = {.threads = threads};
  if (rc == 0) rc = nq_run_solve(run, &so, out);
  nq_run_free(run);
  return rc;
}

/* Compare, and on a disagreement settle the unit with the reference count (nq/admin_db.h: it is
 * re-opened, verified with the reference's answer, its results judged against it, the owners of
 * the results that disagree banned) and say so on stderr whatever the output format. Returns 1
 * for a mismatch, 0 for agreement, < 0 on failure. */
static int judge(adm_backend_t *b, const nq_admin_audit_unit_t *u, const nq_counts_t *c) {
  /* The stored nodes come from u->solver; they compare with the reference's where that version
   * walks the same tree at the unit's N (nq/versions.h). */
  int nodes = nq_solver_same_tree(u->solver, NQ_SOLVER_VERSION, atoi(u->text));
  if (c->c2 == u->stored.c2 && c->c4 == u->stored.c4 && c->c8 == u->stored.c8 &&
      (!nodes || c->nodes == u->stored.nodes))
    return 0;
  fprintf(stderr, "nq-admin audit: DISAGREEMENT on unit %" PRId64 " %s: the store says c2=%" PRIu64
          " c4=%" PRIu64 " c8=%" PRIu64 " nodes=%" PRIu64 ", the reference solver counts c2=%"
          PRIu64 " c4=%" PRIu64 " c8=%" PRIu64 " nodes=%" PRIu64 "\n", u->id, u->text,
          u->stored.c2, u->stored.c4, u->stored.c8, u->stored.nodes, c->c2, c->c4, c->c8,
          c->nodes);
  int banned = 0, jr = 0;
  char err[512];
  if (nq_admin_db_audit_settle(b->db, u->id, c, (int64_t)time(NULL), &banned, &jr, err,
                               sizeof err) != 0) {
    fprintf(stderr, "nq-admin audit: %s\n", err);
    return -1;
  }
  fprintf(stderr, "nq-admin audit: unit %" PRId64 " RE-OPENED and settled by the reference count: "
          "every result judged against it, %d client(s) banned for disagreeing%s\n", u->id,
          banned, jr ? "; the finished job runs again" : "");
  return 1;
}

static void print_audit(const adm_opts_t *o, const nq_admin_audit_t *a, int64_t verified) {
  if (o->json) {
    json_t *j = json_pack("{s:I, s:i, s:I, s:i, s:i, s:I, s:f, s:s, s:s}", "at", (json_int_t)a->at,
                          "sample", a->sample, "seed", (json_int_t)a->seed, "checked", a->checked,
                          "mismatched", a->mismatched, "verified", (json_int_t)verified,
                          "seconds", a->seconds, "outcome", a->outcome, "detail", a->detail);
    adm_print_json(j, 0);
    json_decref(j);
    return;
  }
  printf("audit: %d of %lld verified unit(s) recomputed with the reference solver (seed %" PRIu64
         ", %.1f s): %s%s%s\n", a->checked, (long long)verified, a->seed, a->seconds,
         !strcmp(a->outcome, "disagree") ? "DISAGREED, re-opened and settled: " : a->outcome,
         !strcmp(a->outcome, "disagree") ? a->detail : "",
         !strcmp(a->outcome, "empty") ? " (no verified unit yet)" : "");
}

int adm_cmd_audit(const adm_cmd_t *cmd, adm_opts_t *o) {
  if (o->argc > 0 || o->sample < 1) {
    fprintf(stderr, "nq-admin audit: %s%s\n",
            o->argc ? "unexpected argument " : "--sample K is required", o->argc ? o->argv[0] : "");
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  if (o->server) {
    fprintf(stderr, "nq-admin audit: local mode only (--data DIR on the server's machine): the "
                    "units are read from the database and recomputed here\n");
    return ADM_EXIT_USAGE;
  }
  nq_admin_audit_t a;
  memset(&a, 0, sizeof a);
  a.sample = o->sample;
  a.seed = o->has_seed ? o->seed : ((uint64_t)time(NULL) << 20 ^ (uint64_t)getpid()) & INT64_MAX;
  int threads = o->threads > 0 ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (threads < 1) threads = 1;
  adm_backend_t b;
  int rc = adm_open(&b, o, 1);
  if (rc != 0) return rc;
  drawn_t d = {calloc((size_t)o->sample, sizeof *d.v), 0};
  char err[512];
  int64_t verified = 0;
  if (!d.v) {
    fprintf(stderr, "nq-admin audit: out of memory\n");
    rc = ADM_EXIT_FAIL;
    goto out;
  }
  /* Contested units first (results that disagree, waiting for a trusted owner's result): the
   * reference count settles up to K of them, whoever is online. */
  int64_t contested = 0;
  if (nq_admin_db_audit_contested(b.db, o->sample, &contested, keep_unit, &d, err,
                                  sizeof err) != 0) {
    fprintf(stderr, "nq-admin audit: %s\n", err);
    rc = ADM_EXIT_FAIL;
    goto out;
  }
  for (int i = 0; i < d.n; i++) {
    nq_counts_t c;
    int banned = 0, jr = 0;
    int r = recount(d.v[i].text, threads, &c);
    if (r == 0)
      r = nq_admin_db_audit_settle(b.db, d.v[i].id, &c, (int64_t)time(NULL), &banned, &jr, err,
                                   sizeof err);
    if (r != 0) {
      fprintf(stderr, "nq-admin audit: contested unit %s: %s\n", d.v[i].text,
              r == NQ_EIO ? err : nq_strerror(r));
      rc = ADM_EXIT_FAIL;
      goto out;
    }
    fprintf(stderr, "nq-admin audit: contested unit %" PRId64 " %s settled by the reference "
            "count: %d client(s) banned for disagreeing\n", d.v[i].id, d.v[i].text, banned);
  }
  if (contested > 0)
    printf("audit: %d of %lld contested unit(s) settled by the reference solver%s\n", d.n,
           (long long)contested, contested > d.n ? " (run it again for the rest)" : "");
  d.n = 0;
  if (nq_admin_db_audit_draw(b.db, o->sample, a.seed, &verified, keep_unit, &d, err,
                             sizeof err) != 0) {
    fprintf(stderr, "nq-admin audit: %s\n", err);
    rc = ADM_EXIT_FAIL;
    goto out;
  }
  double t0 = nq_now_mono();
  for (int i = 0; i < d.n; i++) {
    nq_counts_t c;
    int r = recount(d.v[i].text, threads, &c);
    if (r != 0) {
      fprintf(stderr, "nq-admin audit: unit %s: %s\n", d.v[i].text, nq_strerror(r));
      rc = ADM_EXIT_FAIL;
      goto out;
    }
    a.checked++;
    if ((r = judge(&b, &d.v[i], &c)) < 0) {
      rc = ADM_EXIT_FAIL;
      goto out;
    }
    if (r > 0) {
      size_t l = strlen(a.detail);
      if (l + strlen(d.v[i].text) + 2 < sizeof a.detail)
        snprintf(a.detail + l, sizeof a.detail - l, "%s%s", l ? " " : "", d.v[i].text);
      a.mismatched++;
    }
  }
  a.seconds = nq_now_mono() - t0;
  a.at = (int64_t)time(NULL);
  snprintf(a.outcome, sizeof a.outcome, "%s",
           a.checked == 0 ? "empty" : a.mismatched ? "disagree" : "agree");
  if (nq_admin_db_audit_record(b.db, &a, err, sizeof err) != 0) {
    fprintf(stderr, "nq-admin audit: %s\n", err);
    rc = ADM_EXIT_FAIL;
    goto out;
  }
  print_audit(o, &a, verified);
  rc = a.mismatched ? ADM_EXIT_MISMATCH : ADM_EXIT_OK;
out:
  free(d.v);
  adm_close(&b);
  return rc;
}
