/* nq-verify: the checks of an evidence file (verify.h, docs/evidence.md).
 *
 * Two passes over the file, each in bounded memory whatever the number of units:
 *   1. the framing and the checksum: every line ends in "\n", the last line is the sha256 line,
 *      and it names the SHA-256 of every byte before it (an edit that did not recompute it fails
 *      here, before anything is believed);
 *   2. the content, line by line: the header, each unit (its text valid for N, its place in the
 *      tiling, its verification rule, its share of the sums, maybe a sample slot), the totals.
 * The tiling is checked by walking the generator's tree alongside the units, which the file
 * lists in the generator's order (nq_unit_cmp): the walk holds one level of children per row
 * (at most N levels of at most N nodes), so it needs no set of the units seen.
 */
#include "verify.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "nq/nq.h"
#include "nq/solver.h"
#include "nq/hash.h"
#include "nq/merkle.h"
#include "nq/sign.h"
#include "nq/unit.h"
#include "nq/versions.h"

/* ---- the tiling walk ------------------------------------------------------------------------
 * Level 0 holds the depth-2 nodes (the generator's roots); level k + 1 the children of the node
 * of level k being expanded. `next` is the first node of a level not yet covered; the expected
 * node is the top level's next one. A unit equal to it covers it (and its subtree); a unit below
 * it makes it a split node (expanded); a unit after it means it is covered by nothing. */
typedef struct level_s {
  nq_unit_t *kids;
  int n, cap, next;
} level_t;

typedef struct walk_s {
  level_t lv[NQ_MAX_N + 1];
  int top;          /* -1: the whole tree is covered */
  int max_depth;    /* the deepest unit's depth (the header's) */
  uint64_t split;   /* split nodes so far */
  uint64_t limit;   /* the header's split nodes (UINT64_MAX: not known) */
} walk_t;

static int push_kid(const nq_unit_t *u, void *arg) {
  level_t *l = arg;
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    nq_unit_t *k = realloc(l->kids, (size_t)cap * sizeof *k);
    if (!k) return NQ_ENOMEM;
    l->kids = k;
    l->cap = cap;
  }
  l->kids[l->n++] = *u;
  return 0;
}

static void walk_free(walk_t *w) {
  for (int i = 0; i <= NQ_MAX_N; i++) free(w->lv[i].kids);
}

/* Drop the exhausted levels; top -1 once everything is covered. */
static void walk_settle(walk_t *w) {
  while (w->top >= 0 && w->lv[w->top].next == w->lv[w->top].n) w->top--;
}

static int walk_init(walk_t *w, const nq_ev_header_t *h) {
  memset(w, 0, sizeof *w);
  w->max_depth = h->depth;
  w->limit = h->has_internal ? h->internal : UINT64_MAX;
  int rc = nq_units_generate(h->n, 2, push_kid, &w->lv[0]);
  w->top = 0;
  walk_settle(w);
  return rc;
}

/* Whether a is a proper ancestor of b (a shorter prefix of the same part). */
static int is_ancestor(const nq_unit_t *a, const nq_unit_t *b) {
  return a->part == b->part && a->depth < b->depth &&
         memcmp(a->prefix, b->prefix, (size_t)a->depth) == 0;
}

static int same_node(const nq_unit_t *a, const nq_unit_t *b) {
  return a->part == b->part && a->depth == b->depth &&
         memcmp(a->prefix, b->prefix, (size_t)a->depth) == 0;
}

/* Split the expected node: it counts as a split node and its children (made by
 * nq_unit_children, the generator's own rule) take its place, a level deeper; a node without
 * children simply ends there. 1: split with children; 0: split, none; NQ_ERANGE (a node on the
 * last row cannot be split); NQ_ENOMEM. */
static int walk_split(walk_t *w) {
  level_t *l = &w->lv[w->top];
  nq_unit_t e = l->kids[l->next];
  if (e.depth + 1 > e.n - 1 || w->top + 1 > NQ_MAX_N) return NQ_ERANGE;
  level_t *c = &w->lv[w->top + 1];
  c->n = c->next = 0;
  int rc = nq_unit_children(&e, push_kid, c);
  if (rc) return rc;
  l->next++;
  w->split++;
  if (c->n) {
    w->top++;
    return 1;
  }
  walk_settle(w);
  return 0;
}

/* Whether the expected node may be a split node with no unit below it: a node above the deepest
 * unit (a flat job's shallower rows have dead ends, nodes whose subtree stops before the units'
 * row: the generator emits no unit for them, and they hold no solution, which is a node on row
 * N-1), as long as the split nodes stay within the header's count of them (which bounds the
 * walk's work on a real gap). */
static int walk_may_split(const walk_t *w) {
  const level_t *l = &w->lv[w->top];
  return l->kids[l->next].depth < w->max_depth && w->split < w->limit;
}

/* Feed the next unit u (units strictly increasing in nq_unit_cmp, checked by the caller). 0, or
 * NQ_EINVAL with the reason in err; NQ_ENOMEM. */
static int walk_feed(walk_t *w, const nq_unit_t *u, char *err, size_t errlen) {
  char et[NQ_UNIT_TEXT_MAX];
  for (;;) {
    if (w->top < 0) {
      snprintf(err, errlen, "lies beyond the end of the search tree: every node is already covered");
      return NQ_EINVAL;
    }
    level_t *l = &w->lv[w->top];
    const nq_unit_t *e = &l->kids[l->next];
    if (same_node(e, u)) {
      l->next++;
      walk_settle(w);
      return 0;
    }
    nq_unit_format(e, et, sizeof et);
    if (is_ancestor(e, u)) {
      int rc = walk_split(w);
      if (rc == NQ_ENOMEM) return rc;
      if (rc != 1) {
        snprintf(err, errlen, "lies below %s, a node with no children in the search", et);
        return NQ_EINVAL;
      }
      continue;
    }
    if (nq_unit_cmp(u, e) < 0) {
      snprintf(err, errlen, "lies inside a subtree an earlier unit already covers (next free node: %s)",
               et);
      return NQ_EINVAL;
    }
    if (walk_may_split(w)) {
      int rc = walk_split(w);
      if (rc == NQ_ENOMEM) return rc;
      if (rc >= 0) continue;
    }
    snprintf(err, errlen, "comes after node %s, which no unit covers: the units leave a gap", et);
    return NQ_EINVAL;
  }
}

/* After the last unit: what is left must be split nodes with no unit below them. 0 when the tree
 * is done; NQ_EINVAL with the first uncovered node in err; NQ_ENOMEM. */
static int walk_finish(walk_t *w, char *err, size_t errlen) {
  while (w->top >= 0) {
    int rc = walk_may_split(w) ? walk_split(w) : NQ_ERANGE;
    if (rc == NQ_ENOMEM) return rc;
    if (rc < 0) {
      const level_t *l = &w->lv[w->top];
      nq_unit_format(&l->kids[l->next], err, errlen);
      return NQ_EINVAL;
    }
  }
  return 0;
}

/* ---- the sample (a reservoir of K units, Algorithm R over a splitmix64 stream) -------------- */
typedef struct sample_s {
  nq_unit_t u;
  nq_counts_t c;
  int cmp_nodes; /* the recorded nodes come from this program's solver version */
  uint64_t line;
} sample_t;

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* ---- one run -------------------------------------------------------------------------------- */
typedef struct vrun_s {
  const verify_opts_t *o;
  verify_report_t *rep;
  char *err;
  size_t errlen;
  uint64_t line;
  nq_ev_line_t *ln;     /* the parsed line (large: on the heap) */
  walk_t walk;
  nq_unit_t prev;
  int have_prev;
  nq_totals_t sums;
  sample_t *res;        /* the reservoir (o->sample slots), NULL when every unit is recounted */
  uint64_t nres, rng;
  int all;              /* recount every unit inline */
  uint64_t nlines;      /* the file's lines (pass 1) */
  nq_merkle_t tree;     /* the results' leaves (docs/evidence.md, "The root and the receipts") */
} vrun_t;

static int fail(vrun_t *v, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(v->err, v->errlen, "line %llu: %s", (unsigned long long)v->line, msg);
  return VERIFY_FAILED;
}

/* Two results of one unit independent under the header's rule? */
static int same_key(const nq_ev_header_t *h, const nq_ev_result_t *a, const nq_ev_result_t *b) {
  switch (h->distinct) {
  case NQ_EV_DISTINCT_CLIENT: return !strcmp(a->client, b->client);
  case NQ_EV_DISTINCT_OWNER: return !strcmp(a->owner, b->owner);
  default: return a->net == b->net;
  }
}

/* Whether result r's nodes must equal the unit's: its solver version walks the tree the unit's
 * nodes come from (nq/versions.h). */
static int same_tree(const nq_ev_header_t *h, const char *a, const char *b) {
  return nq_solver_same_tree(a, b, h->n);
}

/* The votes of distinct keys among the unit's voting valid results; with tree_of non-NULL only
 * those of that version's tree whose nodes equal the unit's (the agreed node count). */
static int count_votes(const nq_ev_header_t *h, const nq_ev_unit_t *u, const char *tree_of) {
  int votes = 0;
  for (int i = 0; i < u->nresults; i++) {
    const nq_ev_result_t *r = &u->results[i];
    if (strcmp(r->state, "valid") || r->voided) continue;
    if (tree_of && (!same_tree(h, r->solver, tree_of) || r->nodes != u->nodes)) continue;
    int first = 1;
    for (int j = 0; j < i && first; j++) {
      const nq_ev_result_t *q = &u->results[j];
      if (strcmp(q->state, "valid") || q->voided) continue;
      if (tree_of && (!same_tree(h, q->solver, tree_of) || q->nodes != u->nodes)) continue;
      first = !same_key(h, r, q);
    }
    votes += first;
  }
  return votes;
}

/* The job's rule, as the store applies it (docs/store.md, "A hostile fleet"), by the way the unit
 * was settled (docs/evidence.md, "How a unit is settled"). Every result marked valid names a
 * solver version nq knows and agrees with the recorded counts (and with the nodes where its
 * version walks the tree the nodes come from). Then:
 *   quorum:  the valid results that vote (not voided) come from at least `quorum` distinct keys,
 *            and so do those of the nodes' tree with the unit's nodes (the agreed node count);
 *   trusted: one valid, voting result is marked as the trusted owner's that settled it, with the
 *            unit's counts and nodes (they are its);
 *   audit:   the operator's reference count: the nodes come from this program's tree, and the
 *            unit is recomputed here whatever the sample (unless --sample 0). */
static int check_rule(vrun_t *v, const nq_ev_unit_t *u) {
  const nq_ev_header_t *h = &v->rep->header;
  int backends = 0, settler = 0;
  if (strcmp(u->state, "verified"))
    return fail(v, "unit %s: not verified (state %s)", u->text, u->state);
  if (!nq_solver_known(u->nodes_solver))
    return fail(v, "unit %s: its nodes come from solver version \"%s\", which nq does not know",
                u->text, u->nodes_solver);
  for (int i = 0; i < u->nresults; i++) {
    const nq_ev_result_t *r = &u->results[i];
    v->rep->results++;
    v->rep->spot_results += r->spot != 0;
    if (r->settles && (strcmp(r->state, "valid") || r->voided || u->settled != NQ_EV_SETTLED_TRUSTED))
      return fail(v, "unit %s: the result of client %s is marked as the one that settled the unit, "
                  "but the unit was settled by %s or the result is not a valid vote", u->text,
                  r->client, nq_ev_settled_name(u->settled));
    if (strcmp(r->state, "valid")) {
      v->rep->invalid_results += !strcmp(r->state, "invalid");
      continue;
    }
    if (!nq_solver_known(r->solver))
      return fail(v, "unit %s: the result of client %s names solver version \"%s\", which nq "
                  "does not know", u->text, r->client, r->solver);
    if (r->c2 != u->c2 || r->c4 != u->c4 || r->c8 != u->c8 ||
        (same_tree(h, r->solver, u->nodes_solver) && r->nodes != u->nodes))
      return fail(v, "unit %s: the result of client %s is marked valid but disagrees with the "
                  "unit's counts", u->text, r->client);
    int newb = r->backend[0] != '\0';
    for (int j = 0; j < i && newb; j++)
      newb = strcmp(u->results[j].state, "valid") || strcmp(u->results[j].backend, r->backend);
    backends += newb;
    if (r->settles) {
      if (!same_tree(h, r->solver, u->nodes_solver))
        return fail(v, "unit %s: settled by the result of client %s, but its nodes are not the "
                    "unit's", u->text, r->client);
      settler++;
    }
  }
  v->rep->settled[u->settled]++;
  v->rep->multi_backend_units += backends >= 2;
  if (u->settled == NQ_EV_SETTLED_TRUSTED) {
    if (settler != 1)
      return fail(v, "unit %s: settled by a trusted owner's result, but %d result(s) are marked "
                  "as the one that settled it", u->text, settler);
    return 0;
  }
  if (u->settled == NQ_EV_SETTLED_AUDIT) {
    if (!same_tree(h, u->nodes_solver, NQ_SOLVER_VERSION))
      return fail(v, "unit %s: settled by an audit, but its nodes come from %s, not the reference "
                  "solver's tree", u->text, u->nodes_solver);
    return 0;
  }
  int votes = count_votes(h, u, NULL);
  if (votes < h->quorum)
    return fail(v, "unit %s: %d agreeing result(s) of distinct %ss, the quorum is %d", u->text,
                votes, nq_ev_distinct_name(h->distinct), h->quorum);
  int nvotes = count_votes(h, u, u->nodes_solver);
  if (nvotes < h->quorum)
    return fail(v, "unit %s: its nodes (%llu, %s) have %d agreeing result(s) of distinct %ss in "
                "that solver's tree, the quorum is %d", u->text, (unsigned long long)u->nodes,
                u->nodes_solver, nvotes, nq_ev_distinct_name(h->distinct), h->quorum);
  return 0;
}

static int kernel_ready(vrun_t *v) {
  const char *k = v->o->kernel;
  if (!strcmp(k, "reference")) {
    snprintf(v->rep->kernel, sizeof v->rep->kernel, "reference");
    return 0;
  }
  if (strcmp(k, "auto") && strcmp(k, "scalar") && strcmp(k, "avx2") && strcmp(k, "avx512")) {
    snprintf(v->err, v->errlen, "unknown kernel '%s' (reference, auto, scalar, avx2, avx512)", k);
    return VERIFY_USAGE;
  }
  if (nq_fast_kernel_choose(k) != 0) {
    const char *got = nq_fast_kernel_in_use();
    snprintf(v->err, v->errlen, "kernel %s cannot run on this CPU (it has %s)", k, got);
    return VERIFY_ERROR;
  }
  snprintf(v->rep->kernel, sizeof v->rep->kernel, "%s", nq_fast_kernel_in_use());
  return 0;
}

/* Recount one unit and compare. */
static int recount(vrun_t *v, const sample_t *s) {
  nq_counts_t c;
  int rc;
  if (!strcmp(v->rep->kernel, "reference")) {
    rc = nq_ref_solve_unit(&s->u, &c);
  } else {
    nq_solve_opts_t so = {.threads = v->o->threads > 0 ? v->o->threads : 1};
    rc = nq_solve_unit(&s->u, &so, &c);
  }
  char t[NQ_UNIT_TEXT_MAX];
  nq_unit_format(&s->u, t, sizeof t);
  if (rc) {
    snprintf(v->err, v->errlen, "unit %s: the recount failed: %s", t, nq_strerror(rc));
    return VERIFY_ERROR;
  }
  v->rep->sampled++;
  v->rep->nodes_skipped += !s->cmp_nodes;
  uint64_t keep = v->line;
  v->line = s->line;
  if (c.c2 != s->c.c2 || c.c4 != s->c.c4 || c.c8 != s->c.c8 ||
      (s->cmp_nodes && c.nodes != s->c.nodes))
    rc = fail(v, "unit %s: recomputed with %s: c2 %llu c4 %llu c8 %llu nodes %llu, the file says "
              "c2 %llu c4 %llu c8 %llu nodes %llu", t, v->rep->kernel,
              (unsigned long long)c.c2, (unsigned long long)c.c4, (unsigned long long)c.c8,
              (unsigned long long)c.nodes, (unsigned long long)s->c.c2,
              (unsigned long long)s->c.c4, (unsigned long long)s->c.c8,
              (unsigned long long)s->c.nodes);
  v->line = keep;
  return rc;
}

static int on_unit(vrun_t *v, const nq_ev_unit_t *eu) {
  const nq_ev_header_t *h = &v->rep->header;
  char why[256];
  sample_t s;
  memset(&s, 0, sizeof s);
  if (nq_unit_parse(eu->text, &s.u, why, sizeof why) != 0)
    return fail(v, "unit '%s' is not a valid unit: %s", eu->text, why);
  if (s.u.n != h->n) return fail(v, "unit %s is not a unit of N=%d", eu->text, h->n);
  if (s.u.depth < h->min_depth || s.u.depth > h->depth)
    return fail(v, "unit %s has depth %d, outside the header's %d..%d", eu->text, s.u.depth,
                h->min_depth, h->depth);
  /* The numbers the scheduler would refuse in a result (docs/store.md, "Results"). */
  if (eu->nodes < 1 || eu->c2 > eu->nodes || eu->c4 > eu->nodes - eu->c2 ||
      eu->c8 > eu->nodes - eu->c2 - eu->c4 || (s.u.part == NQ_PART_CORNER && (eu->c2 || eu->c4)))
    return fail(v, "unit %s: impossible counts (c2 %llu c4 %llu c8 %llu nodes %llu)", eu->text,
                (unsigned long long)eu->c2, (unsigned long long)eu->c4,
                (unsigned long long)eu->c8, (unsigned long long)eu->nodes);
  if (v->have_prev) {
    char pt[NQ_UNIT_TEXT_MAX];
    nq_unit_format(&v->prev, pt, sizeof pt);
    int c = nq_unit_cmp(&v->prev, &s.u);
    if (c == 0) return fail(v, "unit %s appears twice", eu->text);
    if (is_ancestor(&s.u, &v->prev))
      return fail(v, "unit %s is an ancestor of unit %s: their nodes are counted twice", eu->text,
                  pt);
    if (c > 0) return fail(v, "unit %s is out of the generator's order (after %s)", eu->text, pt);
    if (is_ancestor(&v->prev, &s.u))
      return fail(v, "unit %s lies below unit %s: their nodes are counted twice", eu->text, pt);
  }
  int rc = walk_feed(&v->walk, &s.u, why, sizeof why);
  if (rc == NQ_ENOMEM) {
    snprintf(v->err, v->errlen, "out of memory");
    return VERIFY_ERROR;
  }
  if (rc) return fail(v, "unit %s %s", eu->text, why);
  v->prev = s.u;
  v->have_prev = 1;
  if ((rc = check_rule(v, eu))) return rc;
  if ((rc = nq_ev_unit_leaves(h->job, eu, &v->tree, NULL, NULL)) != 0) {
    snprintf(v->err, v->errlen, "unit %s: its leaves: %s", eu->text, nq_strerror(rc));
    return VERIFY_ERROR;
  }
  s.c = (nq_counts_t){.c2 = eu->c2, .c4 = eu->c4, .c8 = eu->c8, .nodes = eu->nodes};
  nq_totals_add(&v->sums, &s.c);
  s.cmp_nodes = nq_solver_same_tree(eu->nodes_solver, NQ_SOLVER_VERSION, h->n);
  s.line = v->line;
  v->rep->units++;
  if (v->all) return recount(v, &s);
  /* An audit's count is the operator's word: recomputed here whenever anything is. */
  if (eu->settled == NQ_EV_SETTLED_AUDIT && v->o->sample > 0) {
    v->rep->audits_recounted++;
    return recount(v, &s);
  }
  if (v->nres < v->o->sample) {
    v->res[v->nres++] = s;
  } else if (v->o->sample > 0) {
    uint64_t j = splitmix64(&v->rng) % v->rep->units;
    if (j < v->o->sample) v->res[j] = s;
  }
  return 0;
}

/* The root (version 3): the totals' root must be the root of the results' leaves, which the walk
 * added unit by unit; with --root it must also be the root the server published. */
static int check_root(vrun_t *v, const nq_ev_totals_t *t) {
  unsigned char root[32];
  char mine[65], file[65];
  if (nq_merkle_root(&v->tree, root) != 0) {
    snprintf(v->err, v->errlen, "libcrypto failed");
    return VERIFY_ERROR;
  }
  nq_hex_encode(root, sizeof root, mine);
  snprintf(v->rep->root, sizeof v->rep->root, "%s", mine);
  v->rep->leaves = v->tree.leaves;
  if (!t->has_root) {
    if (v->rep->header.version >= 3 || v->o->root)
      return fail(v, "totals: no root: a version %d file carries the root of its results",
                  v->rep->header.version < 3 ? 3 : v->rep->header.version);
    return 0;
  }
  nq_hex_encode(t->root, sizeof t->root, file);
  if (t->leaves != v->tree.leaves || strcmp(file, mine))
    return fail(v, "totals: root mismatch: the file's root is %s over %llu results, but its %llu "
                "results hash to %s: a result was changed, added or removed after the root was "
                "taken", file, (unsigned long long)t->leaves,
                (unsigned long long)v->tree.leaves, mine);
  if (v->o->root && strcmp(v->o->root, mine))
    return fail(v, "totals: the file's root %s is not the published root given (%s)", mine,
                v->o->root);
  v->rep->has_root = 1;
  return 0;
}

/* "c2 is X but the units sum to Y" for the first field that differs. */
static int check_sum(vrun_t *v, const char *what, nq_u128 file, nq_u128 want, const char *rule) {
  if (file == want) return 0;
  char a[48], b[48];
  return fail(v, "totals: %s is %s but %s %s", what, nq_u128_str(file, a), rule,
              nq_u128_str(want, b));
}

static int on_totals(vrun_t *v, const nq_ev_totals_t *t) {
  const nq_ev_header_t *h = &v->rep->header;
  int rc;
  v->rep->totals = *t;
  char et[NQ_UNIT_TEXT_MAX];
  if ((rc = walk_finish(&v->walk, et, sizeof et)) == NQ_ENOMEM) {
    snprintf(v->err, v->errlen, "out of memory");
    return VERIFY_ERROR;
  }
  if (rc) return fail(v, "the units end before the tree does: node %s is covered by no unit", et);
  /* The nodes above the units are the plan's split nodes, which the header records. */
  if (h->has_internal && v->walk.split != h->internal)
    return fail(v, "the units leave %llu split nodes above them; the header says internal %llu",
                (unsigned long long)v->walk.split, (unsigned long long)h->internal);
  if (v->rep->units != h->units || t->units != v->rep->units)
    return fail(v, "totals: the header says %llu units, the totals %llu, the file has %llu",
                (unsigned long long)h->units, (unsigned long long)t->units,
                (unsigned long long)v->rep->units);
  const nq_totals_t *s = &v->sums;
  if ((rc = check_sum(v, "c2", t->c2, s->c2, "the units sum to")) ||
      (rc = check_sum(v, "c4", t->c4, s->c4, "the units sum to")) ||
      (rc = check_sum(v, "c8", t->c8, s->c8, "the units sum to")) ||
      (rc = check_sum(v, "nodes", t->nodes, s->nodes, "the units sum to")))
    return rc;
  if ((rc = check_sum(v, "total", t->total, 2 * t->c2 + 4 * t->c4 + 8 * t->c8, "2 C2 + 4 C4 + 8 C8 =")))
    return rc;
  if ((rc = check_sum(v, "unique", t->unique, t->c2 + t->c4 + t->c8, "C2 + C4 + C8 =")))
    return rc;
  return check_root(v, t);
}

/* The key --key names: a PEM file, or 64 hex digits that are the public key or its fingerprint.
 * *is_fpr: they are a fingerprint to compare with, not the key. 0 or VERIFY_USAGE. */
static int given_key(vrun_t *v, unsigned char key[NQ_SIGN_KEY_BYTES], char fpr[65]) {
  const char *k = v->o->key;
  fpr[0] = '\0';
  if (nq_sign_read_pem(k, key) == 0) return nq_sign_fingerprint(key, fpr) ? VERIFY_ERROR : 0;
  if (strlen(k) == 64 && nq_hex_decode(k, NQ_SIGN_KEY_BYTES, key) == 0) {
    snprintf(fpr, 65, "%s", k); /* compared as a fingerprint, and as the key itself */
    return 0;
  }
  snprintf(v->err, v->errlen, "--key %s: neither an Ed25519 public key's PEM file nor 64 lowercase "
           "hex digits (the key or its fingerprint)", k);
  return VERIFY_USAGE;
}

/* The signature of the sha256 line (v->ln), over the digest md: it must verify with the key the
 * line names, and with --key that key must be the one given. */
static int check_signature(vrun_t *v, const unsigned char md[32]) {
  char msg[NQ_EV_SIGNED_MSG_MAX], fpr[65], want[65];
  unsigned char given[NQ_SIGN_KEY_BYTES];
  const nq_ev_line_t *l = v->ln;
  if (!l->has_sig) {
    if (!v->o->key) return 0;
    return fail(v, "not signed: the file carries no signature, and --key asks for one");
  }
  if (nq_sign_fingerprint(l->key, fpr) != 0) {
    snprintf(v->err, v->errlen, "libcrypto failed");
    return VERIFY_ERROR;
  }
  size_t n = nq_ev_signed_message(md, msg);
  int rc = nq_sign_verify(l->key, msg, n, l->sig);
  if (rc == NQ_EAUTH)
    return fail(v, "bad signature: the signature does not match the file's SHA-256 under the key "
                "it names (%s): the file was changed after it was signed", fpr);
  if (rc) {
    snprintf(v->err, v->errlen, "libcrypto failed");
    return VERIFY_ERROR;
  }
  if (v->o->key) {
    if ((rc = given_key(v, given, want)) != 0) return rc;
    if (strcmp(want, fpr) != 0 && memcmp(given, l->key, sizeof given) != 0)
      return fail(v, "signed by another key: the file is signed by key %s, not by the key given "
                  "(%s)", fpr, want);
  }
  v->rep->is_signed = 1;
  snprintf(v->rep->key_fpr, sizeof v->rep->key_fpr, "%s", fpr);
  return 0;
}

/* Pass 1: framing and checksum. */
static int pass_checksum(vrun_t *v, FILE *f) {
  nq_ev_reader_t *r = NULL;
  char last[512] = "";
  size_t lastlen = 0;
  const char *line;
  size_t len;
  int rc = nq_ev_reader_begin(f, &r), got = 0;
  if (rc) {
    snprintf(v->err, v->errlen, "%s", nq_strerror(rc));
    return VERIFY_ERROR;
  }
  while ((rc = nq_ev_reader_next(r, &line, &len, &v->line)) == 1) {
    got = 1;
    v->nlines = v->line;
    lastlen = len < sizeof last ? len : 0; /* a checksum line is short */
    if (lastlen) memcpy(last, line, len);
  }
  unsigned char md[32];
  if (rc == NQ_EIO) {
    snprintf(v->err, v->errlen, "read error: %s", strerror(errno));
    rc = VERIFY_ERROR;
  } else if (rc == NQ_ETOOBIG) {
    rc = fail(v, "a line longer than %d bytes", NQ_EV_LINE_MAX);
  } else if (rc == NQ_EINVAL) {
    rc = fail(v, "truncated: the last line ends without a newline (or holds a NUL byte)");
  } else if (rc) {
    snprintf(v->err, v->errlen, "%s", nq_strerror(rc));
    rc = VERIFY_ERROR;
  } else if (!got) {
    rc = fail(v, "the file is empty");
  } else if (!lastlen || nq_ev_parse_line(last, lastlen, v->ln, NULL, 0) != 0 ||
             v->ln->type != NQ_EV_SHA256) {
    rc = fail(v, "truncated: the file does not end with its sha256 line");
  } else if ((rc = nq_ev_reader_digest(r, md)) != 0) {
    snprintf(v->err, v->errlen, "%s", nq_strerror(rc));
    rc = VERIFY_ERROR;
  } else if (memcmp(md, v->ln->sha256, 32) != 0) {
    rc = fail(v, "checksum mismatch: the SHA-256 of the lines before the last is not the one "
              "the file names (the file was changed after it was written)");
  } else {
    rc = check_signature(v, md);
  }
  nq_ev_reader_free(r);
  return rc;
}

/* Pass 2: the content. */
static int pass_content(vrun_t *v, FILE *f) {
  nq_ev_reader_t *r = NULL;
  const char *line;
  size_t len;
  char why[512];
  int rc = nq_ev_reader_begin(f, &r), seen_totals = 0;
  if (rc) {
    snprintf(v->err, v->errlen, "%s", nq_strerror(rc));
    return VERIFY_ERROR;
  }
  while (rc == 0 && (rc = nq_ev_reader_next(r, &line, &len, &v->line)) == 1) {
    rc = 0;
    if (nq_ev_parse_line(line, len, v->ln, why, sizeof why) != 0) {
      rc = fail(v, "%s", why);
      break;
    }
    nq_ev_type_t t = v->ln->type;
    if ((v->line == 1) != (t == NQ_EV_HEADER)) {
      rc = fail(v, v->line == 1 ? "the first line is not the header" : "a second header");
    } else if (t == NQ_EV_HEADER) {
      v->rep->header = v->ln->header;
      if (walk_init(&v->walk, &v->ln->header) != 0) rc = fail(v, "header: cannot walk N");
      else if (!v->o->sample) {
      } else if (v->o->sample >= v->ln->header.units) {
        v->all = 1;
      } else if (!(v->res = calloc(v->o->sample, sizeof *v->res))) {
        snprintf(v->err, v->errlen, "out of memory for a sample of %llu units",
                 (unsigned long long)v->o->sample);
        rc = VERIFY_ERROR;
      }
      if (rc == 0 && (v->all || v->res)) rc = kernel_ready(v);
    } else if (seen_totals && t != NQ_EV_SHA256) {
      rc = fail(v, "a line after the totals that is not the sha256 line");
    } else if (t == NQ_EV_UNIT) {
      rc = on_unit(v, &v->ln->unit);
    } else if (t == NQ_EV_TOTALS) {
      seen_totals = 1;
      rc = on_totals(v, &v->ln->totals);
    } else if (!seen_totals) {
      rc = fail(v, "the sha256 line comes before the totals line");
    } else if (v->line != v->nlines) {
      rc = fail(v, "a sha256 line that is not the last line");
    }
  }
  if (rc == 0 && !seen_totals) rc = fail(v, "no totals line");
  nq_ev_reader_free(r);
  return rc < 0 ? VERIFY_ERROR : rc;
}

int verify_stream(FILE *f, const verify_opts_t *o, verify_report_t *rep, char *err,
                  size_t errlen) {
  vrun_t v = {.o = o, .rep = rep, .err = err, .errlen = errlen, .rng = o->seed};
  memset(rep, 0, sizeof *rep);
  nq_merkle_init(&v.tree);
  err[0] = '\0';
  int rc = VERIFY_ERROR;
  if (!(v.ln = malloc(sizeof *v.ln))) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  if ((rc = pass_checksum(&v, f)) != 0) goto out;
  rewind(f);
  v.line = 0;
  if ((rc = pass_content(&v, f)) != 0) goto out;
  /* The reservoir's units, recounted after the stream (each compared with its own line). */
  for (uint64_t i = 0; rc == 0 && i < v.nres; i++) rc = recount(&v, &v.res[i]);
  rep->split_nodes = v.walk.split;
out:
  walk_free(&v.walk);
  free(v.res);
  free(v.ln);
  return rc;
}

int verify_file(const char *path, const verify_opts_t *o, verify_report_t *rep, char *err,
                size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    memset(rep, 0, sizeof *rep);
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return VERIFY_ERROR;
  }
  int rc = verify_stream(f, o, rep, err, errlen);
  fclose(f);
  return rc;
}
