/* nq-admin clients / client add|ban|unban NAME / owners / owner
 * add|ban|trust|untrust|unban|rekey NAME. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "nq/nq.h"

static int no_args(const adm_cmd_t *cmd, const adm_opts_t *o, int want) {
  if (o->argc == want) return 0;
  fprintf(stderr, "nq-admin %s: %s\n", cmd->name,
          o->argc > want ? "too many arguments" : "missing argument");
  adm_usage(cmd, stderr);
  return ADM_EXIT_USAGE;
}

int adm_cmd_clients(const adm_cmd_t *cmd, adm_opts_t *o) {
  json_t *d = NULL;
  nq_view_clients_t v;
  nq_admin_req_t req = {.cmd = NQ_ADMIN_CLIENTS};
  int rc = no_args(cmd, o, 0);
  if (rc || (rc = adm_call_view(o, 0, &req, &d, &v)) != 0) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else {
    char seen[64], credit[48];
    printf("%-24s %-16s %-7s %-8s %8s %8s %5s %20s  %-24s %-20s %-16s %-8s %s\n", "NAME", "OWNER",
           "ACTIVE", "BANNED", "VALID", "INVALID", "HELD", "CREDIT", "SHOWN AS", "LAST SEEN",
           "SOFTWARE", "PROTOCOL", "BACKENDS");
    for (size_t i = 0; i < v.n_clients; i++) {
      const nq_view_client_t *c = &v.clients[i];
      char pv[24] = "-";
      if (c->protocol > 0) snprintf(pv, sizeof pv, "%lld", (long long)c->protocol);
      printf("%-24s %-16s %-7s %-8s %8lld %8lld %5lld %20s  %-24s %-20s %-16s %-8s %s\n",
             c->name, c->owner, c->active ? "yes" : "no",
             c->banned     ? "BANNED"
             : c->suspect  ? "suspect"
             : c->hoarding ? "hoarding"
                           : "-",
             (long long)c->valid, (long long)c->invalid, (long long)c->outstanding,
             nq_u128_str(c->credit, credit), c->display_name,
             adm_time(c->last_seen, seen, sizeof seen), c->software ? c->software : "-", pv,
             *c->backends ? c->backends : "-");
    }
    printf("%zu client(s)\n", v.n_clients);
  }
  nq_view_clients_free(&v);
  json_decref(d);
  return 0;
}

/* A subcommand and a NAME: which of `subs` (its index), or a usage error (-1). */
static int sub_name(const adm_cmd_t *cmd, const adm_opts_t *o, const char *const *subs, int n,
                    const char *list) {
  if (no_args(cmd, o, 2)) return -1;
  for (int i = 0; i < n; i++)
    if (!strcmp(o->argv[0], subs[i])) return i;
  fprintf(stderr, "nq-admin %s: unknown subcommand '%s' (%s)\n", cmd->name, o->argv[0], list);
  adm_usage(cmd, stderr);
  return -1;
}

/* client add: the token goes to a file (--out, default ./NAME.token), never to the screen or a
 * command line; --json (for scripts) carries it in the reply instead. */
static int client_add(const adm_opts_t *o, const nq_admin_req_t *req) {
  char path[4096];
  json_t *d = NULL;
  nq_view_client_added_t v;
  snprintf(path, sizeof path, "%s", o->out ? o->out : "");
  if (!o->out && snprintf(path, sizeof path, "%s.token",
                          req->q.client_add.name) >= (int)sizeof path)
    return ADM_EXIT_USAGE;
  int rc = o->json ? 0 : adm_secret_check(path);
  if (rc || (rc = adm_call_view(o, 0, req, &d, &v)) != 0) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else if ((rc = adm_secret_write(path, v.token)) != 0) {
    fprintf(stderr, "nq-admin: client '%s' was created but its token could not be written to %s "
            "(%s): ban it (nq-admin client ban %s) and add another\n", v.name, path,
            nq_strerror(rc), v.name);
    rc = ADM_EXIT_FAIL;
  } else {
    printf("client '%s' created (owner %s). Its token is in %s (mode 0600; the server keeps only "
           "a hash). Copy that file to the client machine and run there:\n"
           "  nq-client --server HOST:PORT --ca ca.pem --token-file %s\n",
           v.name, v.owner, path, path);
  }
  json_decref(d);
  return rc;
}

/* client add NAME [--owner O] | client ban NAME | client unban NAME */
int adm_cmd_client(const adm_cmd_t *cmd, adm_opts_t *o) {
  static const char *const subs[] = {"add", "ban", "unban"};
  static const nq_admin_cmd_t cmds[] = {NQ_ADMIN_CLIENT_ADD, NQ_ADMIN_CLIENT_BAN,
                                        NQ_ADMIN_CLIENT_UNBAN};
  json_t *d = NULL;
  int sub = sub_name(cmd, o, subs, 3, "add, ban or unban");
  if (sub < 0) return ADM_EXIT_USAGE;
  if (sub != 0 && o->owner) {
    fprintf(stderr, "nq-admin client: --owner goes with add\n");
    return ADM_EXIT_USAGE;
  }
  nq_admin_req_t req = {.cmd = cmds[sub]};
  if (sub == 0) req.q.client_add = (nq_view_q_client_add_t){o->argv[1], o->owner};
  else if (sub == 1) req.q.client_ban.name = o->argv[1];
  else req.q.client_unban.name = o->argv[1];
  if (sub == 0) return client_add(o, &req);
  /* a ban counts votes again: the job */
  nq_view_client_banned_t ban;
  nq_view_client_unbanned_t unban;
  int rc = sub == 1 ? adm_call_view(o, 1, &req, &d, &ban)
                    : adm_call_view(o, 0, &req, &d, &unban);
  if (rc) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else if (sub == 1) {
    printf("client '%s' banned; %lld lease(s) released to other clients; %lld unit(s) it helped "
           "verify re-opened, to be verified again without it\n",
           ban.name, (long long)ban.released, (long long)ban.reopened);
  } else {
    printf("client '%s' unbanned (and no longer suspect)\n", unban.name);
  }
  json_decref(d);
  return 0;
}

int adm_cmd_owners(const adm_cmd_t *cmd, adm_opts_t *o) {
  json_t *d = NULL;
  nq_view_owners_t v;
  nq_admin_req_t req = {.cmd = NQ_ADMIN_OWNERS};
  int rc = no_args(cmd, o, 0);
  if (rc || (rc = adm_call_view(o, 0, &req, &d, &v)) != 0) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else {
    char credit[48];
    printf("%-24s %-8s %-8s %-8s %8s %20s\n", "OWNER", "KEY", "TRUSTED", "BANNED", "CLIENTS",
           "CREDIT");
    for (size_t i = 0; i < v.n_owners; i++) {
      const nq_view_owner_t *w = &v.owners[i];
      printf("%-24s %-8s %-8s %-8s %8lld %20s\n", w->name, w->has_key ? "own" : "server",
             w->trusted ? "trusted" : "-", w->banned ? "BANNED" : "-", (long long)w->clients,
             nq_u128_str(w->credit, credit));
    }
    printf("%zu owner(s)\n", v.n_owners);
  }
  nq_view_owners_free(&v);
  json_decref(d);
  return 0;
}

/* owner add|rekey with --bundle: the key goes into the bundle, never to the screen. */
static int owner_key(const adm_opts_t *o, const nq_admin_req_t *req, int rekey) {
  adm_bundle_t b;
  json_t *d = NULL;
  int rc = o->bundle ? adm_bundle_prepare(o, &b) : 0;
  if (rc) return rc;
  nq_view_owner_key_t v;
  if ((rc = adm_call_view(o, 0, req, &d, &v)) != 0) goto out;
  const char *name = v.name, *key = v.enrol_key;
  if (o->bundle && (rc = adm_bundle_write(&b, name, key)) != 0) {
    fprintf(stderr, "nq-admin: owner '%s' %s but the bundle in %s is incomplete (%s): run "
            "nq-admin owner rekey %s --bundle NEWDIR\n", name, rekey ? "has a new key" : "was "
            "created", b.dir, nq_strerror(rc), name);
    rc = ADM_EXIT_FAIL;
  } else if (o->json) {
    if (o->bundle) { /* the key is in the bundle: the reply names the directory instead */
      json_object_del(d, "enrol_key");
      json_object_set_new(d, "bundle", json_string(b.dir));
    }
    adm_print_json(d, 0);
  } else if (o->bundle) {
    printf("owner '%s' %s. Its volunteer bundle is in %s: ca.pem, enrol.key (mode 0600; the "
           "server keeps only a hash), client.env (server %s), install.sh and README.txt. Send "
           "the directory privately; a volunteer runs 'sudo sh install.sh' after installing the "
           "nq-client package.%s\n", name, rekey ? "has a new enrolment key (the old one "
           "enrols nobody now)" : "created", b.dir, b.address, rekey ? " Machines already "
           "enrolled keep their tokens." : "");
  } else {
    printf("owner '%s' %s. Its enrolment key (shown only this once; the server keeps only a "
           "hash):\n%s\nIts machines keep it in a file of mode 0600 and enrol with:\n"
           "  nq-client --server HOST:PORT --ca ca.pem --enrol-file KEYFILE --name NAME\n"
           "(--bundle DIR --address HOST:PORT writes the key and everything else a volunteer "
           "needs to files instead)\n", name, rekey ? "has a new enrolment key; the old one "
           "enrols nobody now" : "created", key);
  }
out:
  json_decref(d);
  if (o->bundle) adm_bundle_free(&b);
  return rc;
}

/* owner requests [--all] | approve ID | reject ID: the sign-ups of nq-client --join. */
static int owner_signups(const adm_cmd_t *cmd, adm_opts_t *o, int sub) {
  json_t *d = NULL;
  char *end = NULL;
  nq_admin_req_t req = {.cmd = sub == 0 ? NQ_ADMIN_SIGNUPS : sub == 1 ? NQ_ADMIN_OWNER_APPROVE
                                                                      : NQ_ADMIN_OWNER_REJECT};
  if (sub == 0) req.q.signups.all = o->all;
  /* owner_approve and owner_reject take the same view (q_id). */
  if (o->argc != (sub == 0 ? 1 : 2) ||
      (sub && ((req.q.owner_approve.id = strtoll(o->argv[1], &end, 10)) < 1 || *end))) {
    fprintf(stderr, "nq-admin owner: %s\n", sub == 0 ? "requests takes no argument"
                                                      : "approve and reject take a request "
                                                        "number (nq-admin owner requests)");
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  int rc;
  if (sub == 0) {
    nq_view_signups_t v;
    if ((rc = adm_call_view(o, 0, &req, &d, &v)) != 0) return rc;
    if (o->json) {
      adm_print_json(d, 0);
    } else {
      char at[64];
      printf("%-6s %-20s %-9s %-22s %-24s %-20s %s\n", "ID", "ASKED", "STATE", "FROM", "CLIENT",
             "PUBLIC NAME", "TEAM");
      for (size_t i = 0; i < v.n_signups; i++) {
        const nq_view_signup_t *u = &v.signups[i];
        printf("%-6lld %-20s %-9s %-22s %-24s %-20s %s\n", (long long)u->id,
               adm_time(u->at, at, sizeof at), u->state, u->addr, u->client,
               u->public_name ? u->public_name : "-", u->team ? u->team : "-");
      }
      printf("%zu request(s)%s\n", v.n_signups,
             v.n_signups && !o->all ? ": nq-admin owner approve ID (or reject ID)" : "");
    }
    nq_view_signups_free(&v);
  } else {
    nq_view_signup_t v;
    if ((rc = adm_call_view(o, 0, &req, &d, &v)) != 0) return rc;
    if (o->json)
      adm_print_json(d, 0);
    else if (sub == 1)
      printf("sign-up request %lld (client %s from %s) approved: the owner is made when its "
             "client asks again (within --signup-poll seconds)\n", (long long)v.id, v.client,
             v.addr);
    else
      printf("sign-up request %lld (client %s from %s) rejected: its client is told so and "
             "stops\n", (long long)v.id, v.client, v.addr);
    nq_view_signup_free(&v);
  }
  json_decref(d);
  return 0;
}

/* owner add NAME | ban NAME | trust NAME | untrust NAME | unban NAME | rekey NAME */
int adm_cmd_owner(const adm_cmd_t *cmd, adm_opts_t *o) {
  static const char *const signup_subs[] = {"requests", "approve", "reject"};
  for (int i = 0; o->argc > 0 && i < 3; i++)
    if (!strcmp(o->argv[0], signup_subs[i])) return owner_signups(cmd, o, i);
  static const char *const subs[] = {"add", "ban", "trust", "untrust", "unban", "rekey"};
  static const nq_admin_cmd_t cmds[] = {NQ_ADMIN_OWNER_ADD,     NQ_ADMIN_OWNER_BAN,
                                        NQ_ADMIN_OWNER_TRUST,   NQ_ADMIN_OWNER_UNTRUST,
                                        NQ_ADMIN_OWNER_UNBAN,   NQ_ADMIN_OWNER_REKEY};
  json_t *d = NULL;
  int sub = sub_name(cmd, o, subs, 6, "add, ban, trust, untrust, unban or rekey");
  if (sub < 0) return ADM_EXIT_USAGE;
  if ((o->bundle || o->address) && sub != 0 && sub != 5) {
    fprintf(stderr, "nq-admin owner: --bundle and --address go with add and rekey\n");
    return ADM_EXIT_USAGE;
  }
  if (o->address && !o->bundle) {
    fprintf(stderr, "nq-admin owner: --address goes with --bundle DIR\n");
    return ADM_EXIT_USAGE;
  }
  /* Every one of these takes an owner's name (the view q_name). */
  nq_admin_req_t req = {.cmd = cmds[sub], .q.owner_add.name = o->argv[1]};
  if (sub == 0 || sub == 5) return owner_key(o, &req, sub == 5);
  /* ban and trust count votes again: the job */
  nq_view_owner_trusted_t tr;
  nq_view_owner_unbanned_t unban;
  nq_view_owner_banned_t ban;
  int rc = sub == 2 || sub == 3 ? adm_call_view(o, 1, &req, &d, &tr)
           : sub == 4 ? adm_call_view(o, 0, &req, &d, &unban)
                      : adm_call_view(o, 1, &req, &d, &ban);
  if (rc) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else if (sub == 2 || sub == 3) {
    long long t = (long long)tr.trusted_owners;
    printf("owner '%s' %s; %lld trusted owner(s): %s\n", tr.name,
           sub == 2 ? "trusted" : "no longer trusted", t,
           t > 0 ? "a disagreement among results waits for a trusted owner's result"
                 : "the answer rests on votes alone");
  } else if (sub == 4) {
    long long banned = (long long)unban.clients_banned;
    printf("owner '%s' unbanned: its key enrols again.%s\n", unban.name,
           banned ? " Its clients stay banned until 'nq-admin client unban NAME' for each one "
                    "you trust again" : "");
    if (banned) printf("(%lld of its clients are banned)\n", banned);
  } else {
    printf("owner '%s' banned: its key enrols nobody, its %lld client(s) are banned; %lld unit(s) "
           "they helped verify re-opened\n", ban.name, (long long)ban.clients,
           (long long)ban.reopened);
  }
  json_decref(d);
  return 0;
}
