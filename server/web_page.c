/* nq-server: the public status page (web.h): one self-contained HTML document built from the
 * public status object and the history, with no script and no external asset (the Content
 * Security Policy forbids both), so every number is in the markup and it reads the same with
 * JavaScript off. It reloads itself every SRV_WEB_REFRESH_S seconds (meta refresh). Elements the
 * tests and scrapers read carry ids (docs/http.md). */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "web.h"
#include "web_buf.h"

#define SRV_WEB_REFRESH_S 15
#define CHART_W 640
#define CHART_H 160

static const char *str(const json_t *o, const char *path1, const char *path2) {
  const json_t *v = json_object_get(o, path1);
  if (path2) v = json_object_get(v, path2);
  return json_is_string(v) ? json_string_value(v) : "-";
}

static double num(const json_t *o, const char *path1, const char *path2) {
  const json_t *v = json_object_get(o, path1);
  if (path2) v = json_object_get(v, path2);
  return json_is_number(v) ? json_number_value(v) : 0.0;
}

/* "3d 4h", "2h 5m", "4m 10s", "12s"; "unknown" for a negative time. */
static void duration(char *buf, size_t len, double secs) {
  long long t = (long long)(secs + 0.5);
  if (secs < 0) snprintf(buf, len, "unknown");
  else if (t >= 86400) snprintf(buf, len, "%lldd %lldh", t / 86400, t % 86400 / 3600);
  else if (t >= 3600) snprintf(buf, len, "%lldh %lldm", t / 3600, t % 3600 / 60);
  else if (t >= 60) snprintf(buf, len, "%lldm %llds", t / 60, t % 60);
  else snprintf(buf, len, "%llds", t);
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

static void section_units(web_buf_t *b, const json_t *st) {
  static const char *const states[] = {"pending", "leased", "awaiting", "verified", "disputed"};
  const json_t *u = json_object_get(st, "units");
  web_buf_printf(b, "<h2>Units</h2>\n<table id=\"units\">\n");
  for (size_t i = 0; i < sizeof states / sizeof *states; i++)
    web_buf_printf(b, "<tr><th>%s</th><td class=\"n\" id=\"units-%s\">%.0f</td></tr>\n",
                   states[i], states[i], num(u, states[i], NULL));
  web_buf_printf(b, "<tr><th>total</th><td class=\"n\" id=\"units-total\">%.0f</td></tr>\n"
                 "</table>\n", num(u, "total", NULL));
}

/* What the answer rests on beyond votes (issue 30): kernels, reference audits, and the evidence
 * file of a finished job, next to the answer. */
static void section_evidence(web_buf_t *b, const json_t *st, int done) {
  const json_t *k = json_object_get(st, "kernels"), *a = json_object_get(st, "audits");
  web_buf_printf(b, "<p id=\"rests\">");
  if (num(k, "diverse", NULL) >= 2)
    web_buf_printf(b, "Each unit is verified by %.0f different kernels; %.0f verified so. ",
                   num(k, "diverse", NULL), num(k, "units_two_kernels", NULL));
  if (num(a, "count", NULL) > 0) {
    web_buf_printf(b, "Audits by the reference solver: %.0f, %.0f disagreed; the last recomputed "
                   "%.0f unit(s): ", num(a, "count", NULL), num(a, "disagreed", NULL),
                   num(json_object_get(a, "last"), "checked", NULL));
    web_buf_html(b, str(json_object_get(a, "last"), "outcome", NULL));
    web_buf_printf(b, ". ");
  }
  if (done)
    web_buf_printf(b, "Evidence anyone can re-check: <a id=\"export\" href=\"/api/export\">"
                   "/api/export</a> (nq-verify FILE).");
  web_buf_printf(b, "</p>\n");
}

static void section_counts(web_buf_t *b, const json_t *st) {
  int done = json_is_true(json_object_get(st, "done"));
  const char *src = done ? "final" : "verified";
  web_buf_printf(b, "<h2>%s</h2>\n<table id=\"counts\">\n",
                 done ? "The answer" : "Verified so far");
  row(b, "total", "TOTAL", str(st, src, "total"));
  row(b, "unique", "UNIQUE", str(st, src, "unique"));
  row(b, "c2", "COUNT2", str(st, src, "c2"));
  row(b, "c4", "COUNT4", str(st, src, "c4"));
  row(b, "c8", "COUNT8", str(st, src, "c8"));
  row(b, "nodes", "nodes", str(st, "verified", "nodes"));
  web_buf_printf(b, "</table>\n<p id=\"match\" class=\"%s\">",
                 json_is_true(json_object_get(st, "match"))    ? "ok"
                 : json_is_false(json_object_get(st, "match")) ? "bad"
                                                                : "");
  web_buf_html(b, str(st, "match_text", NULL));
  web_buf_printf(b, "</p>\n");
  section_evidence(b, st, done);
}

/* What the answer rests on and what the job still waits for (issue 30). */
static void section_trust(web_buf_t *b, const json_t *st) {
  const json_t *t = json_object_get(st, "trust");
  double owners = num(t, "trusted_owners", NULL), contested = num(st, "units", "contested");
  double spot = num(st, "units", "spot_checks");
  web_buf_printf(b, "<p id=\"trust\">%s", owners > 0
                 ? "Disagreements between results are settled by the operator's trusted machines, "
                   "never by a vote."
                 : "No trusted owner: this answer rests on votes alone.");
  if (contested > 0)
    web_buf_printf(b, " Waiting for %.0f contested unit(s) to be recomputed by a trusted owner.",
                   contested);
  if (spot > 0)
    web_buf_printf(b, " %.0f spot check(s) outstanding.", spot);
  web_buf_printf(b, "</p>\n");
}

static void section_rate(web_buf_t *b, const json_t *st) {
  char r[32], nps[32], eta[32], el[32];
  const json_t *rate = json_object_get(st, "rate");
  const json_t *e = json_object_get(rate, "eta_s");
  si(nps, sizeof nps, num(rate, "nodes_per_s", NULL));
  snprintf(r, sizeof r, "%.3g", num(rate, "results_per_s", NULL));
  duration(eta, sizeof eta, json_is_number(e) ? json_number_value(e) : -1);
  duration(el, sizeof el, num(rate, "elapsed_s", NULL));
  web_buf_printf(b, "<h2>Speed</h2>\n<table id=\"rate\">\n");
  row(b, "results-per-s", "results / s", r);
  row(b, "nodes-per-s", "nodes / s", nps);
  row(b, "eta", "time left (ETA)", eta);
  row(b, "elapsed", "running for", el);
  web_buf_printf(b, "</table>\n");
}

/* The node rate between samples as an SVG polyline, scaled to its own maximum. */
static void section_chart(web_buf_t *b, const json_t *hist) {
  const json_t *samples = json_object_get(hist, "samples");
  size_t n = json_array_size(samples);
  double max = 0, t0 = 0, t1 = 0;
  size_t pts = 0;
  for (size_t i = 0; i < n; i++) {
    const json_t *s = json_array_get(samples, i);
    if (!json_is_number(json_object_get(s, "nodes_per_s"))) continue;
    double v = num(s, "nodes_per_s", NULL), t = num(s, "t", NULL);
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
    const json_t *s = json_array_get(samples, i);
    if (!json_is_number(json_object_get(s, "nodes_per_s"))) continue;
    double x = (num(s, "t", NULL) - t0) / (t1 - t0) * (CHART_W - 4) + 2;
    double y = CHART_H - 2 - (max > 0 ? num(s, "nodes_per_s", NULL) / max : 0) * (CHART_H - 20);
    web_buf_printf(b, "%.1f,%.1f ", x, y);
  }
  char span[32];
  duration(span, sizeof span, t1 - t0);
  web_buf_printf(b, "\"/>\n<text x=\"4\" y=\"14\" font-size=\"12\">%snodes/s</text>\n"
                 "<text x=\"4\" y=\"%d\" font-size=\"12\">last %s</text>\n</svg>\n",
                 top, CHART_H + 16, span);
}

static void section_leaders(web_buf_t *b, const json_t *st) {
  const json_t *l = json_object_get(st, "leaderboard");
  web_buf_printf(b, "<h2>Volunteers by credit</h2>\n<p>Credit is the nodes of the units whose "
                 "verified answer a volunteer's result agreed with.</p>\n<table "
                 "id=\"leaderboard\">\n<tr><th>#</th><th>volunteer</th><th>credit (nodes)</th>"
                 "<th>verified results</th></tr>\n");
  for (size_t i = 0; i < json_array_size(l); i++) {
    const json_t *c = json_array_get(l, i);
    web_buf_printf(b, "<tr><td>%.0f</td><td class=\"name\">", num(c, "rank", NULL));
    web_buf_html(b, str(c, "name", NULL));
    web_buf_printf(b, "</td><td class=\"n\">");
    web_buf_html(b, str(c, "credit", NULL));
    web_buf_printf(b, "</td><td class=\"n\">%.0f</td></tr>\n", num(c, "results", NULL));
  }
  web_buf_printf(b, "</table>\n");
}

char *srv_web_page_html(const json_t *st, const json_t *hist, size_t *len) {
  web_buf_t b;
  web_buf_init(&b);
  int n = (int)num(st, "job", "n");
  int done = json_is_true(json_object_get(st, "done"));
  double pct = num(st, "progress", "percent");
  if (pct < 0) pct = 0;
  if (pct > 100) pct = 100;
  const json_t *cl = json_object_get(st, "clients");
  web_buf_printf(&b,
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
                 "solutions</h1>\n<p>Job N=%d is <b id=\"state\">%s</b>; %.0f volunteer(s) "
                 "active, %.0f known.</p>\n"
                 "<div class=\"bar\" role=\"progressbar\" aria-valuemin=\"0\" "
                 "aria-valuemax=\"100\" aria-valuenow=\"%.2f\"><div style=\"width:%.2f%%\">"
                 "</div></div>\n<p><span id=\"progress\">%.2f%%</span> done</p>\n",
                 SRV_WEB_REFRESH_S, n, n, n, done ? "done" : str(st, "job", "state"),
                 num(cl, "active", NULL), num(cl, "known", NULL), pct, pct, pct);
  section_counts(&b, st);
  section_trust(&b, st);
  section_units(&b, st);
  section_rate(&b, st);
  section_chart(&b, hist);
  section_leaders(&b, st);
  web_buf_printf(&b, "<p><small>nq-server %s; updated at Unix time <span id=\"now\">%.0f</span>"
                 "; this page reloads every %d s. Machine-readable: <a href=\"/api/status\">"
                 "/api/status</a>, <a href=\"/api/history\">/api/history</a>, <a "
                 "href=\"/metrics\">/metrics</a>.</small></p>\n</body></html>\n",
                 str(st, "server", "version"), num(st, "now", NULL), SRV_WEB_REFRESH_S);
  return web_buf_take(&b, len);
}
