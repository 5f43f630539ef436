/* nq-server: the public view over HTTP -- the status page, /metrics, /api/status and
 * /api/history (docs/http.md) -- and the minute history sampler behind the rate chart.
 *
 * Everything here is public: it never shows a token, a client's address or its private name
 * (volunteers appear under the public name they chose, or anonymous), so the HTTP port may sit
 * behind a reverse proxy open to everyone. All runs on the loop thread, between batches (no
 * store transaction is open while a request is answered).
 */
#ifndef SRV_WEB_H
#define SRV_WEB_H

#include <jansson.h>
#include <stdint.h>

#include "http.h"
#include "srv.h"

/* Volunteers shown on the page and in /api/status. */
#define SRV_WEB_LEADERS 20
/* Volunteers (owners) in the public status and /api/volunteers, most credit first. */
#define SRV_WEB_VOLUNTEERS_MAX 100
/* How long a built status object is reused (a scraper 10 times a second costs one build). */
#define SRV_WEB_CACHE_MS 1000
/* The history sampling period. */
#define SRV_WEB_SAMPLE_MS 60000

typedef struct srv_web_s srv_web_t;

typedef enum {
  SRV_WEB_NOT_FOUND = 0,
  SRV_WEB_PAGE,    /* / and /index.html */
  SRV_WEB_METRICS, /* /metrics */
  SRV_WEB_STATUS,  /* /api/status */
  SRV_WEB_HISTORY, /* /api/history */
  SRV_WEB_EXPORT,  /* /api/export: a finished job's evidence (web_export.h) */
  SRV_WEB_VOLUNTEERS, /* /api/volunteers */
  SRV_WEB_TEAMS,   /* /api/teams */
  SRV_WEB_VOLUNTEER /* /v/NAME: one volunteer's page */
} srv_web_route_t;

/* The route of a request path (exact matches only; nothing is ever read from disk, so no path can
 * reach a file). */
srv_web_route_t srv_web_route(const char *path);

/* Start the HTTP listener (unless cfg.http_off) and the history sampler. A listen failure is
 * returned (errbuf says why) when cfg.http_required, else logged and the server goes on without
 * the page. Returns 0, NQ_EIO, NQ_EINVAL, NQ_ENOMEM. */
int srv_web_start(srv_t *s, char *errbuf, size_t errlen);
/* Stop both; the memory goes with the loop's close callbacks. Safe without a start. */
void srv_web_stop(srv_t *s);
/* The address the page is served on, or NULL when there is none. */
const char *srv_web_bound(const srv_t *s);

/* The public status object at `now` (the admin status less what is private: no disputed units'
 * voters, plus the leaderboard and the server's version). New reference, NULL on failure. */
json_t *srv_web_status_json(srv_t *s, int64_t now);
/* {"job", "interval", "samples": [...]}: the job's history with rates between samples. */
json_t *srv_web_history_json(srv_t *s);
/* The Prometheus text exposition (malloc'd, *len bytes), NULL on failure. */
char *srv_web_metrics_text(srv_t *s, int64_t now, size_t *len);
/* The HTML page from a public status object and a history object (NULL: none yet), malloc'd;
 * read as their views (nq/admin_view.h). NULL when either is not its view (the missing or
 * mistyped field is logged) or memory runs out. */
char *srv_web_page_html(const json_t *status, const json_t *history, size_t *len);
/* /v/NAME: one volunteer (an entry of the status's `volunteers`) and its named machines
 * ({"name", "credit", "results"} objects), as a page. NULL when memory runs out. */
char *srv_web_volunteer_html(const json_t *volunteer, const json_t *machines, size_t *len);

/* Take one history sample of the served job now (the sampler's tick; tests call it). */
int srv_web_sample(srv_t *s, int64_t now);

#endif
