/* nq-admin clients / client add|ban|unban NAME / owners / owner
 * add|ban|trust|untrust|unban|rekey NAME. */
#include <stdio.h>
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
  nq_admin_req_t req = {.cmd = NQ_ADMIN_CLIENTS};
  int rc = no_args(cmd, o, 0);
  if (rc || (rc = adm_call(o, 0, &req, &d)) != 0) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else {
    const json_t *list = adm_get(d, "clients");
    char seen[64];
    printf("%-24s %-16s %-7s %-8s %8s %8s %5s %20s  %-24s %-20s %-16s %-8s %s\n", "NAME", "OWNER",
           "ACTIVE", "BANNED", "VALID", "INVALID", "HELD", "CREDIT", "SHOWN AS", "LAST SEEN",
           "SOFTWARE", "PROTOCOL", "BACKENDS");
    for (size_t i = 0; i < json_array_size(list); i++) {
      const json_t *c = json_array_get(list, i);
      const json_t *sw = adm_get(c, "software");
      long long proto = (long long)adm_int(c, "protocol");
      char pv[24] = "-";
      if (proto > 0) snprintf(pv, sizeof pv, "%lld", proto);
      const char *be = adm_str(c, "backends");
      printf("%-24s %-16s %-7s %-8s %8lld %8lld %5lld %20s  %-24s %-20s %-16s %-8s %s\n",
             adm_str(c, "name"), adm_str(c, "owner"),
             json_is_true(adm_get(c, "active")) ? "yes" : "no",
             json_is_true(adm_get(c, "banned"))    ? "BANNED"
             : json_is_true(adm_get(c, "suspect"))  ? "suspect"
             : json_is_true(adm_get(c, "hoarding")) ? "hoarding"
                                                    : "-",
             (long long)adm_int(c, "valid"), (long long)adm_int(c, "invalid"),
             (long long)adm_int(c, "outstanding"), adm_str(c, "credit"),
             adm_str(c, "display_name"), adm_time(adm_int(c, "last_seen"), seen, sizeof seen),
             json_is_string(sw) ? json_string_value(sw) : "-", pv, *be ? be : "-");
    }
    printf("%zu client(s)\n", json_array_size(list));
  }
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
  snprintf(path, sizeof path, "%s", o->out ? o->out : "");
  if (!o->out && snprintf(path, sizeof path, "%s.token", req->name) >= (int)sizeof path)
    return ADM_EXIT_USAGE;
  int rc = o->json ? 0 : adm_secret_check(path);
  if (rc || (rc = adm_call(o, 0, req, &d)) != 0) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else if ((rc = adm_secret_write(path, adm_str(d, "token"))) != 0) {
    fprintf(stderr, "nq-admin: client '%s' was created but its token could not be written to %s "
            "(%s): ban it (nq-admin client ban %s) and add another\n", adm_str(d, "name"), path,
            nq_strerror(rc), adm_str(d, "name"));
    rc = ADM_EXIT_FAIL;
  } else {
    printf("client '%s' created (owner %s). Its token is in %s (mode 0600; the server keeps only "
           "a hash). Copy that file to the client machine and run there:\n"
           "  nq-client --server HOST:PORT --ca ca.pem --token-file %s\n",
           adm_str(d, "name"), adm_str(d, "owner"), path, path);
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
  nq_admin_req_t req = {.cmd = cmds[sub], .name = o->argv[1], .owner = o->owner};
  if (sub == 0) return client_add(o, &req);
  int rc = adm_call(o, sub == 1, &req, &d); /* a ban counts votes again: the job */
  if (rc) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else if (sub == 1) {
    printf("client '%s' banned; %lld lease(s) released to other clients; %lld unit(s) it helped "
           "verify re-opened, to be verified again without it\n",
           adm_str(d, "name"), (long long)adm_int(d, "released"),
           (long long)adm_int(d, "reopened"));
  } else {
    printf("client '%s' unbanned (and no longer suspect)\n", adm_str(d, "name"));
  }
  json_decref(d);
  return 0;
}

int adm_cmd_owners(const adm_cmd_t *cmd, adm_opts_t *o) {
  json_t *d = NULL;
  nq_admin_req_t req = {.cmd = NQ_ADMIN_OWNERS};
  int rc = no_args(cmd, o, 0);
  if (rc || (rc = adm_call(o, 0, &req, &d)) != 0) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else {
    const json_t *list = adm_get(d, "owners");
    printf("%-24s %-8s %-8s %-8s %8s %20s\n", "OWNER", "KEY", "TRUSTED", "BANNED", "CLIENTS",
           "CREDIT");
    for (size_t i = 0; i < json_array_size(list); i++) {
      const json_t *w = json_array_get(list, i);
      printf("%-24s %-8s %-8s %-8s %8lld %20s\n", adm_str(w, "name"),
             json_is_true(adm_get(w, "has_key")) ? "own" : "server",
             json_is_true(adm_get(w, "trusted")) ? "trusted" : "-",
             json_is_true(adm_get(w, "banned")) ? "BANNED" : "-", (long long)adm_int(w, "clients"),
             adm_str(w, "credit"));
    }
    printf("%zu owner(s)\n", json_array_size(list));
  }
  json_decref(d);
  return 0;
}

/* owner add|rekey with --bundle: the key goes into the bundle, never to the screen. */
static int owner_key(const adm_opts_t *o, const nq_admin_req_t *req, int rekey) {
  adm_bundle_t b;
  json_t *d = NULL;
  int rc = o->bundle ? adm_bundle_prepare(o, &b) : 0;
  if (rc) return rc;
  if ((rc = adm_call(o, 0, req, &d)) != 0) goto out;
  const char *name = adm_str(d, "name"), *key = adm_str(d, "enrol_key");
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

/* owner add NAME | ban NAME | trust NAME | untrust NAME | unban NAME | rekey NAME */
int adm_cmd_owner(const adm_cmd_t *cmd, adm_opts_t *o) {
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
  nq_admin_req_t req = {.cmd = cmds[sub], .name = o->argv[1]};
  if (sub == 0 || sub == 5) return owner_key(o, &req, sub == 5);
  /* ban and trust count votes again: the job */
  int rc = adm_call(o, sub >= 1 && sub <= 3, &req, &d);
  if (rc) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else if (sub == 2 || sub == 3) {
    long long t = (long long)adm_int(d, "trusted_owners");
    printf("owner '%s' %s; %lld trusted owner(s): %s\n", adm_str(d, "name"),
           sub == 2 ? "trusted" : "no longer trusted", t,
           t > 0 ? "a disagreement among results waits for a trusted owner's result"
                 : "the answer rests on votes alone");
  } else if (sub == 4) {
    long long banned = (long long)adm_int(d, "clients_banned");
    printf("owner '%s' unbanned: its key enrols again.%s\n", adm_str(d, "name"),
           banned ? " Its clients stay banned until 'nq-admin client unban NAME' for each one "
                    "you trust again" : "");
    if (banned) printf("(%lld of its clients are banned)\n", banned);
  } else {
    printf("owner '%s' banned: its key enrols nobody, its %lld client(s) are banned; %lld unit(s) "
           "they helped verify re-opened\n", adm_str(d, "name"), (long long)adm_int(d, "clients"),
           (long long)adm_int(d, "reopened"));
  }
  json_decref(d);
  return 0;
}
