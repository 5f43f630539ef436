/* nq-server: the public status page (web.h): one self-contained HTML document built from the
 * public status object and the history, with no script and no external asset (the Content
 * Security Policy forbids both), so every number is in the markup and it reads the same with
 * JavaScript off. It reloads itself every SRV_WEB_REFRESH_S seconds (meta refresh). Elements the
 * tests and scrapers read carry ids (docs/http.md). For people: times are dates in UTC, counts
 * have thousands separators (the plain number is in the element's data-value), the history chart
 * is inline SVG drawn here, and a finished job's answer comes first.
 *
 * The page is a list of sections (page_sections below), each a function of the status and the
 * history: a new block is one function and one line in that list. The page reads the status and
 * the history as typed views (nq/admin_view.h), never by key: an object that is not a status view
 * is refused (no page) with the field it lacks in the log, rather than shown as zeros. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "nq/admin_view.h"
#include "nq/log.h"
#include "web.h"
#include "web_buf.h"

#define SRV_WEB_REFRESH_S 15
#define CHART_W 640
#define CHART_H 160

/* One block of the page, from the public status and the history. */
typedef void (*page_section_fn)(web_buf_t *b, const nq_view_status_t *st,
                                const nq_view_history_t *hist);

/* "3d 4h", "2h 5m", "4m 10s", "12s"; "unknown" for a negative time. */
static void duration(char *buf, size_t len, double secs) {
  long long t = (long long)(secs + 0.5);
  if (secs < 0) snprintf(buf, len, "unknown");
  else if (t >= 86400) snprintf(buf, len, "%lldd %lldh", t / 86400, t % 86400 / 3600);
  else if (t >= 3600) snprintf(buf, len, "%lldh %lldm", t / 3600, t % 3600 / 60);
  else if (t >= 60) snprintf(buf, len, "%lldm %llds", t / 60, t % 60);
  else snprintf(buf, len, "%llds", t);
}

/* A decimal string with thousands separators: "14200" -> "14,200"; anything that is not all
 * digits (a "-" for a missing value) is copied as it is. */
static void grouped(char *buf, size_t len, const char *digits) {
  size_t n = strlen(digits), o = 0;
  if (n == 0 || strspn(digits, "0123456789") != n || n + n / 3 + 1 > len) {
    snprintf(buf, len, "%s", digits);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    if (i > 0 && (n - i) % 3 == 0) buf[o++] = ',';
    buf[o++] = digits[i];
  }
  buf[o] = '\0';
}

/* A count (a JSON number) with thousands separators. */
static void grouped_num(char *buf, size_t len, double v) {
  char d[32];
  snprintf(d, sizeof d, "%.0f", v < 0 ? 0 : v);
  grouped(buf, len, d);
}

/* Unix seconds as a date in UTC: "2026-11-27 09:55 UTC"; "-" for none. */
static void utc_date(char *buf, size_t len, double secs) {
  time_t t = (time_t)secs;
  struct tm tm;
  if (secs <= 0 || !gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm))
    snprintf(buf, len, "-");
}

/* A rate with an SI prefix: "1.23 G". */
static void si(char *buf, size_t len, double v) {
  static const char *const p[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (v >= 1000 && i < 6) v /= 1000, i++;
  snprintf(buf, len, "%.3g %s", v, p[i]);
}

static void row(web_buf_t *b, const char *id, const char *label, const char *value) {
  web_buf_printf(b, "<tr><th>%s</th><td class=\"n\" id=\"%s\">", label, id);
  web_buf_html(b, value);
  web_buf_printf(b, "</td></tr>\n");
}

/* A row of a count: grouped for people, the plain value in data-value for scripts. */
static void count_row(web_buf_t *b, const char *id, const char *label, const char *digits) {
  char g[64];
  grouped(g, sizeof g, digits);
  web_buf_printf(b, "<tr><th>%s</th><td class=\"n\" id=\"%s\" data-value=\"", label, id);
  web_buf_html(b, digits);
  web_buf_printf(b, "\">");
  web_buf_html(b, g);
  web_buf_printf(b, "</td></tr>\n");
}

/* A count row of a 128-bit value. */
static void u128_row(web_buf_t *b, const char *id, const char *label, nq_u128 v) {
  char d[48];
  count_row(b, id, label, nq_u128_str(v, d));
}

static void section_units(web_buf_t *b, const nq_view_status_t *st,
                          const nq_view_history_t *hist) {
  (void)hist;
  const nq_view_names_t *states = &NQ_UNIT_STATE_view_names;
  web_buf_printf(b, "<h2>Units</h2>\n<table id=\"units\">\n");
  char id[32], d[32];
  for (int i = 0; i < states->n; i++) {
    snprintf(id, sizeof id, "units-%s", states->names[i]);
    snprintf(d, sizeof d, "%lld", (long long)st->units.state[i]);
    count_row(b, id, states->names[i], d);
  }
  snprintf(d, sizeof d, "%lld", (long long)st->units.total);
  count_row(b, "units-total", "total", d);
  web_buf_printf(b, "</table>\n");
}

/* Units that cannot finish as the fleet stands (store_stall.h), and why; nothing when none. */
static void section_stalled(web_buf_t *b, const nq_view_status_t *st,
                            const nq_view_history_t *hist) {
  (void)hist;
  const nq_view_stalled_t *x = &st->stalled;
  if (st->done || x->units <= 0) return;
  char g[32];
  grouped_num(g, sizeof g, (double)x->units);
  web_buf_printf(b, "<h2>Stalled</h2>\n<p id=\"stalled\" class=\"bad\" data-value=\"%lld\">"
                 "%s unit(s) cannot finish as the fleet stands: ", (long long)x->units, g);
  web_buf_html(b, x->message ? x->message : "-");
  web_buf_printf(b, "</p>\n");
}

/* What the answer rests on beyond votes: kernels, reference audits, and the evidence
 * file of a finished job, next to the answer. */
static void section_evidence(web_buf_t *b, const nq_view_status_t *st) {
  const nq_view_kernels_t *k = &st->kernels;
  const nq_view_audits_t *a = &st->audits;
  char g1[32], g2[32], g3[32];
  web_buf_printf(b, "<p id=\"rests\">");
  if (st->has_kernels && k->diverse >= 2) {
    grouped_num(g1, sizeof g1, (double)k->units_two_kernels);
    web_buf_printf(b, "Each unit is verified by results from %lld different kernels, each the "
                   "kernel the server named to its client; %s verified so. This guards against "
                   "a bug in one honest kernel, not against clients that collude. ",
                   (long long)k->diverse, g1);
  }
  if (st->has_audits && a->count > 0) {
    grouped_num(g1, sizeof g1, (double)a->count);
    grouped_num(g2, sizeof g2, (double)a->disagreed);
    grouped_num(g3, sizeof g3, a->has_last ? (double)a->last.checked : 0);
    web_buf_printf(b, "Audits by the reference solver: %s, %s disagreed; the last recomputed "
                   "%s unit(s): ", g1, g2, g3);
    web_buf_html(b, a->has_last ? a->last.outcome : "-");
    web_buf_printf(b, ". ");
  }
  if (st->done)
    web_buf_printf(b, "Evidence anyone can re-check: <a id=\"export\" href=\"/api/export\">"
                   "/api/export</a> (nq-verify FILE).");
  if (st->has_evidence_key) {
    web_buf_printf(b, " The evidence is signed with the key whose fingerprint is <code "
                   "id=\"evidence-key\">");
    web_buf_html(b, st->evidence_key);
    web_buf_printf(b, "</code>: <code>nq-verify FILE --key ");
    web_buf_html(b, st->evidence_key);
    web_buf_printf(b, "</code> refuses a file not signed by it.");
  }
  if (st->has_root) {
    grouped_num(g1, sizeof g1, (double)st->root.leaves);
    web_buf_printf(b, " The Merkle root of the %s result(s) received so far is <code id=\"root\">",
                   g1);
    web_buf_html(b, st->root.root);
    web_buf_printf(b, "</code>: each volunteer's receipts prove its results are under the "
                   "published root (<code>nq-verify FILE --root ROOT --receipts DIR</code>), and a "
                   "result changed afterwards changes it.");
  }
  web_buf_printf(b, "</p>\n");
}

static void section_counts(web_buf_t *b, const nq_view_status_t *st,
                           const nq_view_history_t *hist) {
  (void)hist;
  /* A finished job shows its final answer ("-" for a count a status without one lacks). */
  const nq_view_totals_t *src = st->done ? (st->has_final ? &st->final : NULL) : &st->verified;
  web_buf_printf(b, "<h2>%s</h2>\n<table id=\"counts\">\n",
                 st->done ? "The answer" : "Verified so far");
  static const char *const ids[] = {"total", "unique", "c2", "c4", "c8"};
  static const char *const labels[] = {"TOTAL", "UNIQUE", "COUNT2", "COUNT4", "COUNT8"};
  for (int i = 0; i < 5; i++) {
    if (!src) {
      count_row(b, ids[i], labels[i], "-");
      continue;
    }
    const nq_u128 v[] = {src->total, src->unique, src->c2, src->c4, src->c8};
    u128_row(b, ids[i], labels[i], v[i]);
  }
  u128_row(b, "nodes", "nodes", st->verified.nodes);
  web_buf_printf(b, "</table>\n<p id=\"match\" class=\"%s\">",
                 !st->has_match ? "" : st->match ? "ok" : "bad");
  web_buf_html(b, st->match_text);
  web_buf_printf(b, "</p>\n");
  section_evidence(b, st);
}

/* What the answer rests on and what the job still waits for. */
static void section_trust(web_buf_t *b, const nq_view_status_t *st,
                          const nq_view_history_t *hist) {
  (void)hist;
  int64_t contested = st->units.contested, spot = st->units.spot_checks;
  char g[32];
  web_buf_printf(b, "<p id=\"trust\">%s", st->trust.trusted_owners > 0
                 ? "Disagreements between results are settled by the operator's trusted machines, "
                   "never by a vote."
                 : "No trusted owner: this answer rests on votes alone.");
  if (contested > 0) {
    grouped_num(g, sizeof g, (double)contested);
    web_buf_printf(b, " Waiting for %s contested unit(s) to be recomputed by a trusted owner.", g);
  }
  if (spot > 0) {
    grouped_num(g, sizeof g, (double)spot);
    web_buf_printf(b, " %s spot check(s) outstanding.", g);
  }
  web_buf_printf(b, "</p>\n");
}

/* Speed and time. A finished job shows when it started and finished and how long it took, not
 * a "time left" of 0 s; a running one has no ETA while every unit left is stalled. */
static void section_rate(web_buf_t *b, const nq_view_status_t *st,
                         const nq_view_history_t *hist) {
  (void)hist;
  char r[32], nps[32], eta[64], el[32], d[40];
  const nq_view_rate_t *rate = &st->rate;
  si(nps, sizeof nps, rate->nodes_per_s);
  snprintf(r, sizeof r, "%.3g", rate->results_per_s);
  duration(el, sizeof el, (double)rate->elapsed_s);
  web_buf_printf(b, "<h2>%s</h2>\n<table id=\"rate\">\n", st->done ? "Time" : "Speed");
  utc_date(d, sizeof d, (double)st->job.created);
  row(b, "started", "started", d);
  if (st->done) {
    utc_date(d, sizeof d, (double)st->job.finished);
    row(b, "finished", "finished", d);
    row(b, "elapsed", "took", el);
  } else {
    if (rate->has_eta_s) duration(eta, sizeof eta, (double)rate->eta_s);
    else if (st->stalled.units > 0) snprintf(eta, sizeof eta, "none: stalled");
    else snprintf(eta, sizeof eta, "unknown");
    row(b, "results-per-s", "results / s", r);
    row(b, "nodes-per-s", "nodes / s", nps);
    row(b, "eta", "time left (ETA)", eta);
    row(b, "elapsed", "running for", el);
  }
  web_buf_printf(b, "</table>\n");
}

/* The node rate between samples as an SVG polyline, scaled to its own maximum. */
static void section_chart(web_buf_t *b, const nq_view_status_t *st,
                          const nq_view_history_t *hist) {
  (void)st;
  size_t n = hist->n_samples;
  double max = 0, t0 = 0, t1 = 0;
  size_t pts = 0;
  for (size_t i = 0; i < n; i++) {
    const nq_view_sample_t *s = &hist->samples[i];
    if (!s->has_nodes_per_s) continue;
    double v = s->nodes_per_s, t = (double)s->t;
    if (v > max) max = v;
    if (!pts++) t0 = t;
    t1 = t;
  }
  web_buf_printf(b, "<h2>Speed over time</h2>\n");
  if (pts < 2 || t1 <= t0) {
    web_buf_printf(b, "<p id=\"chart\">The chart fills in as the server samples the job every "
                   "minute.</p>\n");
    return;
  }
  char top[32];
  si(top, sizeof top, max);
  web_buf_printf(b, "<svg id=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                 "role=\"img\" aria-label=\"verified nodes per second over time\">\n"
                 "<rect width=\"%d\" height=\"%d\" fill=\"#f6f8fa\"/>\n"
                 "<polyline fill=\"none\" stroke=\"#2a6\" stroke-width=\"2\" points=\"",
                 CHART_W, CHART_H + 20, CHART_W, CHART_H + 20, CHART_W, CHART_H);
  for (size_t i = 0; i < n; i++) {
    const nq_view_sample_t *s = &hist->samples[i];
    if (!s->has_nodes_per_s) continue;
    double x = ((double)s->t - t0) / (t1 - t0) * (CHART_W - 4) + 2;
    double y = CHART_H - 2 - (max > 0 ? s->nodes_per_s / max : 0) * (CHART_H - 20);
    web_buf_printf(b, "%.1f,%.1f ", x, y);
  }
  char span[32], from[40], to[40];
  duration(span, sizeof span, t1 - t0);
  utc_date(from, sizeof from, t0);
  utc_date(to, sizeof to, t1);
  web_buf_printf(b, "\"/>\n<text x=\"4\" y=\"14\" font-size=\"12\">%snodes/s</text>\n"
                 "<text x=\"4\" y=\"%d\" font-size=\"12\">%s</text>\n"
                 "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">%s (%s)</text>"
                 "\n</svg>\n", top, CHART_H + 16, from, CHART_W - 4, CHART_H + 16, to, span);
}

static void section_leaders(web_buf_t *b, const nq_view_status_t *st,
                            const nq_view_history_t *hist) {
  (void)hist;
  web_buf_printf(b, "<h2>Machines by credit</h2>\n<p>Credit is the nodes of the units whose "
                 "verified answer a machine's result agreed with.</p>\n<table "
                 "id=\"leaderboard\">\n<tr><th>#</th><th>volunteer</th><th>credit (nodes)</th>"
                 "<th>verified results</th></tr>\n");
  for (size_t i = 0; i < st->n_leaderboard; i++) {
    const nq_view_leader_t *c = &st->leaderboard[i];
    web_buf_printf(b, "<tr><td>%lld</td><td class=\"name\">", (long long)c->rank);
    web_buf_html(b, c->name);
    char d[48], cr[64], res[32];
    grouped(cr, sizeof cr, nq_u128_str(c->credit, d));
    grouped_num(res, sizeof res, (double)c->results);
    web_buf_printf(b, "</td><td class=\"n\">");
    web_buf_html(b, cr);
    web_buf_printf(b, "</td><td class=\"n\">%s</td></tr>\n", res);
  }
  web_buf_printf(b, "</table>\n");
}

/* The project's news, newest first. */
static void section_news(web_buf_t *b, const nq_view_status_t *st,
                         const nq_view_history_t *hist) {
  (void)hist;
  if (st->n_news == 0) return;
  web_buf_printf(b, "<h2>News</h2>\n<ul id=\"news\">\n");
  for (size_t i = 0; i < st->n_news; i++) {
    char at[40];
    utc_date(at, sizeof at, (double)st->news[i].at);
    web_buf_printf(b, "<li><small>%s</small> ", at);
    web_buf_html(b, st->news[i].text);
    web_buf_printf(b, "</li>\n");
  }
  web_buf_printf(b, "</ul>\n");
}

/* Volunteers (owners: a person and all their machines) and teams by verified credit. A name is
 * shown only when its volunteer chose one; each links to the volunteer's page. */
static void section_volunteers(web_buf_t *b, const nq_view_status_t *st,
                               const nq_view_history_t *hist) {
  (void)hist;
  if (st->n_volunteers == 0 && st->n_teams == 0) return;
  char d[48], cr[64];
  if (st->n_volunteers) {
    web_buf_printf(b, "<h2>Volunteers</h2>\n<table id=\"volunteers\">\n<tr><th>#</th><th>"
                   "volunteer</th><th>team</th><th>machines</th><th>credit (nodes)</th></tr>\n");
    for (size_t i = 0; i < st->n_volunteers && i < SRV_WEB_LEADERS; i++) {
      const nq_view_volunteer_t *v = &st->volunteers[i];
      web_buf_printf(b, "<tr><td>%lld</td><td class=\"name\"><a href=\"/v/", (long long)v->rank);
      web_buf_html(b, v->name);
      web_buf_printf(b, "\">");
      web_buf_html(b, v->name);
      web_buf_printf(b, "</a></td><td>");
      web_buf_html(b, v->team ? v->team : "-");
      grouped(cr, sizeof cr, nq_u128_str(v->credit, d));
      web_buf_printf(b, "</td><td class=\"n\">%lld</td><td class=\"n\">%s</td></tr>\n",
                     (long long)v->machines, cr);
    }
    web_buf_printf(b, "</table>\n");
  }
  if (st->n_teams) {
    web_buf_printf(b, "<h2>Teams</h2>\n<table id=\"teams\">\n<tr><th>#</th><th>team</th>"
                   "<th>volunteers</th><th>credit (nodes)</th></tr>\n");
    for (size_t i = 0; i < st->n_teams; i++) {
      const nq_view_team_t *t = &st->teams[i];
      web_buf_printf(b, "<tr><td>%lld</td><td class=\"name\">", (long long)t->rank);
      web_buf_html(b, t->name);
      grouped(cr, sizeof cr, nq_u128_str(t->credit, d));
      web_buf_printf(b, "</td><td class=\"n\">%lld</td><td class=\"n\">%s</td></tr>\n",
                     (long long)t->owners, cr);
    }
    web_buf_printf(b, "</table>\n");
  }
}

static void page_head(web_buf_t *b, const nq_view_status_t *st) {
  int n = (int)st->job.n;
  web_buf_printf(b,
                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                 "<meta http-equiv=\"refresh\" content=\"%d\">\n"
                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                 "<title>nq: counting the %d-queens solutions</title>\n<style>\n"
                 "body{font-family:sans-serif;max-width:46em;margin:1em auto;padding:0 1em}\n"
                 "table{border-collapse:collapse}th,td{padding:.2em .8em;text-align:left}\n"
                 "td.n{text-align:right;font-family:monospace}\n"
                 ".bar{background:#ddd;height:1.4em;border-radius:.3em;overflow:hidden}\n"
                 ".bar div{background:#2a6;height:100%%}\n.ok{color:#080}.bad{color:#b00}\n"
                 "</style></head><body>\n<h1>Counting the <span id=\"n\">%d</span>-queens "
                 "solutions</h1>\n", SRV_WEB_REFRESH_S, n, n);
}

/* The job's state and progress. While it runs: the volunteers active and known; once it is
 * done, how many are enrolled (nobody is "active" on a finished job). */
static void section_progress(web_buf_t *b, const nq_view_status_t *st,
                             const nq_view_history_t *hist) {
  (void)hist;
  double pct = st->progress.percent;
  if (pct < 0) pct = 0;
  if (pct > 100) pct = 100;
  char known[32], active[32];
  grouped_num(known, sizeof known, (double)st->clients.known);
  grouped_num(active, sizeof active, (double)st->clients.active);
  web_buf_printf(b, "<p>Job N=%d is <b id=\"state\">%s</b>", (int)st->job.n,
                 st->done ? "done" : st->job.state);
  if (st->done) web_buf_printf(b, "; %s volunteer(s) enrolled.</p>\n", known);
  else web_buf_printf(b, "; %s volunteer(s) active, %s known.</p>\n", active, known);
  web_buf_printf(b, "<div class=\"bar\" role=\"progressbar\" aria-valuemin=\"0\" "
                 "aria-valuemax=\"100\" aria-valuenow=\"%.2f\"><div style=\"width:%.2f%%\">"
                 "</div></div>\n<p><span id=\"progress\">%.2f%%</span> done</p>\n",
                 pct, pct, pct);
}

static void page_foot(web_buf_t *b, const nq_view_status_t *st) {
  char now[40];
  utc_date(now, sizeof now, (double)st->now);
  web_buf_printf(b, "<p><small>nq-server %s; updated <span id=\"now\" data-value=\"%lld\">%s"
                 "</span>; this page reloads every %d s. Machine-readable: <a href=\"/api/status\">"
                 "/api/status</a>, <a href=\"/api/history\">/api/history</a>, <a "
                 "href=\"/metrics\">/metrics</a>.</small></p>\n</body></html>\n",
                 st->has_server ? st->server.version : "-", (long long)st->now, now,
                 SRV_WEB_REFRESH_S);
}

/* The sections in the order a running job shows them; a finished job puts its answer first. */
static const page_section_fn page_running[] = {
    section_news,  section_progress, section_stalled, section_counts,     section_trust,
    section_units, section_rate,     section_chart,   section_volunteers, section_leaders};
static const page_section_fn page_done[] = {
    section_news,  section_counts, section_trust, section_progress,   section_rate,
    section_units, section_chart,  section_volunteers, section_leaders};

char *srv_web_page_html(const json_t *status, const json_t *history, size_t *len) {
  nq_view_status_t st;
  nq_view_history_t hist = {0};
  char err[300];
  if (nq_view_status_parse(status, &st, err, sizeof err) != 0 ||
      (history && nq_view_history_parse(history, &hist, err, sizeof err) != 0)) {
    nq_log(NQ_LOG_ERROR, "the status page: %s", err);
    nq_view_status_free(&st);
    return NULL;
  }
  web_buf_t b;
  web_buf_init(&b);
  const page_section_fn *sec = st.done ? page_done : page_running;
  size_t nsec = st.done ? sizeof page_done / sizeof *page_done
                        : sizeof page_running / sizeof *page_running;
  page_head(&b, &st);
  for (size_t i = 0; i < nsec; i++) sec[i](&b, &st, &hist);
  page_foot(&b, &st);
  nq_view_status_free(&st);
  nq_view_history_free(&hist);
  return web_buf_take(&b, len);
}

char *srv_web_volunteer_html(const json_t *volunteer, const json_t *machines, size_t *len) {
  nq_view_volunteer_t v;
  char err[300], d[48], cr[64];
  if (nq_view_volunteer_parse(volunteer, &v, err, sizeof err) != 0) return NULL;
  web_buf_t b;
  web_buf_init(&b);
  web_buf_printf(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                 "<title>nq volunteer ");
  web_buf_html(&b, v.name);
  web_buf_printf(&b, "</title>\n<style>body{font-family:sans-serif;max-width:46em;margin:1em "
                 "auto;padding:0 1em}table{border-collapse:collapse}th,td{padding:.2em .8em;"
                 "text-align:left}td.n{text-align:right;font-family:monospace}</style></head>"
                 "<body>\n<h1 id=\"volunteer\">");
  web_buf_html(&b, v.name);
  grouped(cr, sizeof cr, nq_u128_str(v.credit, d));
  web_buf_printf(&b, "</h1>\n<table>\n<tr><th>rank</th><td class=\"n\">%lld</td></tr>\n"
                 "<tr><th>team</th><td>", (long long)v.rank);
  web_buf_html(&b, v.team ? v.team : "-");
  web_buf_printf(&b, "</td></tr>\n<tr><th>credit (nodes)</th><td class=\"n\" id=\"credit\">"
                 "%s</td></tr>\n<tr><th>verified results</th><td class=\"n\">%lld</td></tr>\n"
                 "<tr><th>machines</th><td class=\"n\">%lld</td></tr>\n</table>\n", cr,
                 (long long)v.verified, (long long)v.machines);
  web_buf_printf(&b, "<h2>Machines by public name</h2>\n<table id=\"machines\">\n<tr><th>"
                 "machine</th><th>credit (nodes)</th><th>verified results</th></tr>\n");
  for (size_t i = 0; i < json_array_size(machines); i++) {
    const json_t *m = json_array_get(machines, i);
    const char *name = json_string_value(json_object_get(m, "name"));
    const char *credit = json_string_value(json_object_get(m, "credit"));
    web_buf_printf(&b, "<tr><td>");
    web_buf_html(&b, name ? name : "?");
    grouped(cr, sizeof cr, credit ? credit : "0");
    web_buf_printf(&b, "</td><td class=\"n\">%s</td><td class=\"n\">%lld</td></tr>\n", cr,
                   (long long)json_integer_value(json_object_get(m, "results")));
  }
  web_buf_printf(&b, "</table>\n<p><small>Machines without a public name are not listed. "
                 "<a href=\"/\">Back to the project</a>.</small></p>\n</body></html>\n");
  nq_view_volunteer_free(&v);
  return web_buf_take(&b, len);
}
