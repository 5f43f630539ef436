/* nq-admin news add TEXT | list | remove ID, and team add NAME | rename NAME NEW | remove NAME |
 * list: what a public project tells and shows its volunteers (docs/operations.md, "Running a
 * public project"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "nq/nq.h"

static int usage(const adm_cmd_t *cmd, const char *why) {
  fprintf(stderr, "nq-admin %s: %s\n", cmd->name, why);
  adm_usage(cmd, stderr);
  return ADM_EXIT_USAGE;
}

static void news_print(const nq_view_news_t *v) {
  char at[64];
  for (size_t i = 0; i < v->n_news; i++)
    printf("%-5lld %s  %s\n", (long long)v->news[i].id, adm_time(v->news[i].at, at, sizeof at),
           v->news[i].text);
  printf("%zu item(s)\n", v->n_news);
}

int adm_cmd_news(const adm_cmd_t *cmd, adm_opts_t *o) {
  const char *sub = o->argc > 0 ? o->argv[0] : "";
  nq_admin_req_t req = {.cmd = NQ_ADMIN_NEWS_LIST};
  json_t *d = NULL;
  int rc;
  char *end = NULL;
  if (!strcmp(sub, "add") && o->argc == 2) {
    req.cmd = NQ_ADMIN_NEWS_ADD;
    req.q.news_add.text = o->argv[1];
    nq_view_news_item_t v;
    if ((rc = adm_call_view(o, 0, &req, &d, &v)) != 0) return rc;
    if (o->json) adm_print_json(d, 0);
    else printf("news %lld added: on the page, in every client's welcome, and told to the clients "
                "connected to a running server now\n", (long long)v.id);
    nq_view_news_item_free(&v);
  } else if ((!strcmp(sub, "list") && o->argc == 1) ||
             (!strcmp(sub, "remove") && o->argc == 2)) {
    if (*sub == 'r') {
      req.cmd = NQ_ADMIN_NEWS_REMOVE;
      if ((req.q.news_remove.id = strtoll(o->argv[1], &end, 10)) < 1 || *end)
        return usage(cmd, "remove takes an item's id (nq-admin news list)");
    }
    nq_view_news_t v;
    if ((rc = adm_call_view(o, 0, &req, &d, &v)) != 0) return rc;
    if (o->json) adm_print_json(d, 0);
    else news_print(&v);
    nq_view_news_free(&v);
  } else {
    return usage(cmd, "add TEXT, list or remove ID");
  }
  json_decref(d);
  return 0;
}

int adm_cmd_team(const adm_cmd_t *cmd, adm_opts_t *o) {
  const char *sub = o->argc > 0 ? o->argv[0] : "";
  nq_admin_req_t req = {.cmd = NQ_ADMIN_TEAMS};
  if (!strcmp(sub, "add") && o->argc == 2) req.cmd = NQ_ADMIN_TEAM_ADD;
  else if (!strcmp(sub, "remove") && o->argc == 2) req.cmd = NQ_ADMIN_TEAM_REMOVE;
  else if (!strcmp(sub, "rename") && o->argc == 3) req.cmd = NQ_ADMIN_TEAM_RENAME;
  else if (strcmp(sub, "list") || o->argc != 1)
    return usage(cmd, "add NAME, rename NAME NEW, remove NAME or list");
  if (req.cmd == NQ_ADMIN_TEAM_RENAME)
    req.q.team_rename = (nq_view_q_team_rename_t){o->argv[1], o->argv[2]};
  else if (req.cmd == NQ_ADMIN_TEAM_ADD) req.q.team_add.name = o->argv[1];
  else if (req.cmd == NQ_ADMIN_TEAM_REMOVE) req.q.team_remove.name = o->argv[1];
  json_t *d = NULL;
  nq_view_teams_t v;
  int rc = adm_call_view(o, 0, &req, &d, &v);
  if (rc) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else {
    char credit[48];
    printf("%-4s %-24s %7s %24s\n", "RANK", "TEAM", "OWNERS", "CREDIT");
    for (size_t i = 0; i < v.n_teams; i++)
      printf("%-4lld %-24s %7lld %24s\n", (long long)v.teams[i].rank, v.teams[i].name,
             (long long)v.teams[i].owners, nq_u128_str(v.teams[i].credit, credit));
    printf("%zu team(s)%s\n", v.n_teams,
           req.cmd == NQ_ADMIN_TEAMS ? "" : req.cmd == NQ_ADMIN_TEAM_REMOVE
                                              ? " (its owners are in no team now)" : "");
  }
  nq_view_teams_free(&v);
  json_decref(d);
  return 0;
}
