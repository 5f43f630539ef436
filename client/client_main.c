/* nq-client: the volunteer daemon, and `nq-client status`. Its options are declared once, in
 * cli_opts.c (nq-client --help lists them); main() weighs them against each other (credentials,
 * --once with --max-units). docs/client.md has the details.
 */
#include "cli.h"
#include "fault.h"

#include "journal.h"
#include "cli_opts.h"
#include "status.h"

#include "nq/switches.h"
#include "nq/files.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "nq/throttle.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Read one secret file into buf: its first line. A file others can read gets a warning. Returns 0
 * or a process exit code (CLI_EXIT_USAGE for an empty path, CLI_EXIT_SETUP otherwise). */
static int read_secret(const char *opt, const char *path, char *buf, size_t len) {
  if (!*path) {
    fprintf(stderr, "nq-client: %s is empty\n", opt);
    return CLI_EXIT_USAGE;
  }
  int rc = nq_file_read_line(path, buf, len);
  if (rc) {
    fprintf(stderr, "nq-client: cannot read %s %s: %s\n", opt, path,
            rc == NQ_EINVAL ? "its first line is empty" : rc == NQ_ETOOBIG ? "the line is too long"
                                                                           : nq_strerror(rc));
    return CLI_EXIT_SETUP;
  }
  struct stat st;
  if (stat(path, &st) == 0 && (st.st_mode & 077))
    nq_log(NQ_LOG_WARN, "%s %s can be read by other users (mode %04o): chmod 600 it", opt, path,
           (unsigned)(st.st_mode & 07777));
  return 0;
}

/* --token-file, --enrol-file and NQ_TOKEN_FILE (used when no credential is given otherwise). */
static int read_secrets(cli_config_t *cfg, const char *token_file, const char *enrol_file) {
  static char token[CLI_TOKEN_MAX], key[CLI_TOKEN_MAX];
  const char *env = nq_switch_get(NQ_SW_TOKEN_FILE);
  if ((token_file && cfg->token) || (enrol_file && cfg->enrol) || (token_file && enrol_file)) {
    fprintf(stderr, "nq-client: give one of --token-file, --token, --enrol-file, --enrol\n");
    return CLI_EXIT_USAGE;
  }
  if (!token_file && !enrol_file && !cfg->token && !cfg->enrol && env && *env)
    token_file = env;
  int rc = 0;
  if (token_file && (rc = read_secret(token_file == env ? "NQ_TOKEN_FILE" : "--token-file",
                                      token_file, token, sizeof token)) == 0)
    cfg->token = token;
  if (rc == 0 && enrol_file && (rc = read_secret("--enrol-file", enrol_file, key, sizeof key)) == 0)
    cfg->enrol = key;
  return rc;
}

int main(int argc, char **argv) {
  nq_log_init("nq-client", NQ_LOG_INFO);
  signal(SIGPIPE, SIG_IGN);
  cli_config_t cfg;
  cli_config_default(&cfg);
  nq_opts_t opts;
  cli_args_t args;
  cli_opts_init(&opts, &cfg, &args);
  if (argc < 2) { /* a volunteer who just types the name gets the usage, not a cryptic error */
    nq_opts_help(&opts, stderr);
    return CLI_EXIT_USAGE;
  }
  if (strcmp(argv[1], "status") == 0) return cli_status_main(argc - 1, argv + 1, cfg.state);
  int rc = nq_opts_main(&opts, argc, argv, CLI_EXIT_USAGE);
  if (rc >= 0) return rc;
  if (opts.optind < argc) {
    fprintf(stderr, "nq-client: unexpected argument '%s'\n", argv[opts.optind]);
    return CLI_EXIT_USAGE;
  }
  if (!nq_opts_given(&opts, "server")) {
    fprintf(stderr, "nq-client: --server wants HOST:PORT (got '')\n");
    return CLI_EXIT_USAGE;
  }
  /* Without --ca the server's certificate is verified against the system's trust store: a
   * server with a certificate from a public CA (nq-server --cert) needs nothing handed out. */
  cfg.max_units = (long)args.max_units;
  rc = read_secrets(&cfg, args.token_file, args.enrol_file);
  if (rc) return rc;
  if (cfg.token && cfg.enrol) {
    fprintf(stderr, "nq-client: give a token or an enrolment key, not both\n");
    return CLI_EXIT_USAGE;
  }
  if (cfg.join && (cfg.token || cfg.enrol)) {
    fprintf(stderr, "nq-client: --join makes its own credentials: not with a token or an "
            "enrolment key\n");
    return CLI_EXIT_USAGE;
  }
  if (cfg.team && (!cfg.join || !nq_proto_name_valid(cfg.team))) {
    fprintf(stderr, "nq-client: --team goes with --join and wants 1..64 of [A-Za-z0-9._-]\n");
    return CLI_EXIT_USAGE;
  }
  if (cfg.name && !cfg.enrol && !cfg.join) {
    fprintf(stderr, "nq-client: --name only goes with --enrol, --enrol-file or --join\n");
    return CLI_EXIT_USAGE;
  }
  if (cfg.name && !nq_proto_name_valid(cfg.name)) {
    fprintf(stderr, "nq-client: --name wants 1..64 of [A-Za-z0-9._-]\n");
    return CLI_EXIT_USAGE;
  }
  if (args.once) {
    if (cfg.max_units > 1) {
      fprintf(stderr, "nq-client: --once and --max-units K disagree\n");
      return CLI_EXIT_USAGE;
    }
    cfg.max_units = 1;
  }
  int lie = cli_fault_lie(); /* a test build's switch; nq-client reads no such variable */
  if (lie < 0) return CLI_EXIT_USAGE;
  cfg.fault_lie = lie;
  return cli_run(&cfg);
}
