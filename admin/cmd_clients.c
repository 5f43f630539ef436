/* nq-admin clients / client add NAME / client ban NAME. */
#include <stdio.h>
#include <string.h>

#include "admin.h"

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
    printf("%-24s %-7s %-8s %8s %8s %5s  %-20s %-16s %s\n", "NAME", "ACTIVE", "BANNED", "VALID",
           "INVALID", "HELD", "LAST SEEN", "SOFTWARE", "PROTOCOL");
    for (size_t i = 0; i < json_array_size(list); i++) {
      const json_t *c = json_array_get(list, i);
      const json_t *sw = adm_get(c, "software");
      long long proto = (long long)adm_int(c, "protocol");
      char pv[24] = "-";
      if (proto > 0) snprintf(pv, sizeof pv, "%lld", proto);
      printf("%-24s %-7s %-8s %8lld %8lld %5lld  %-20s %-16s %s\n", adm_str(c, "name"),
             json_is_true(adm_get(c, "active")) ? "yes" : "no",
             json_is_true(adm_get(c, "banned")) ? "BANNED" : "-",
             (long long)adm_int(c, "valid"), (long long)adm_int(c, "invalid"),
             (long long)adm_int(c, "outstanding"),
             adm_time(adm_int(c, "last_seen"), seen, sizeof seen),
             json_is_string(sw) ? json_string_value(sw) : "-", pv);
    }
    printf("%zu client(s)\n", json_array_size(list));
  }
  json_decref(d);
  return 0;
}

/* client add NAME | client ban NAME */
int adm_cmd_client(const adm_cmd_t *cmd, adm_opts_t *o) {
  json_t *d = NULL;
  int rc = no_args(cmd, o, 2);
  if (rc) return rc;
  const char *sub = o->argv[0], *name = o->argv[1];
  int add = !strcmp(sub, "add");
  if (!add && strcmp(sub, "ban") != 0) {
    fprintf(stderr, "nq-admin client: unknown subcommand '%s' (add or ban)\n", sub);
    adm_usage(cmd, stderr);
    return ADM_EXIT_USAGE;
  }
  nq_admin_req_t req = {.cmd = add ? NQ_ADMIN_CLIENT_ADD : NQ_ADMIN_CLIENT_BAN, .name = name};
  if ((rc = adm_call(o, 0, &req, &d)) != 0) return rc;
  if (o->json) {
    adm_print_json(d, 0);
  } else if (add) {
    printf("client '%s' created. Its token (shown only this once; the server keeps only a hash):\n"
           "%s\n"
           "Run on the client machine:\n"
           "  nq-client --server HOST:PORT --ca ca.pem --token %s\n",
           adm_str(d, "name"), adm_str(d, "token"), adm_str(d, "token"));
  } else {
    printf("client '%s' banned; %lld lease(s) released to other clients\n", adm_str(d, "name"),
           (long long)adm_int(d, "released"));
  }
  json_decref(d);
  return 0;
}
