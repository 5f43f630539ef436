/* nq-client: the volunteer daemon.
 *   nq-client --server HOST:PORT --ca CA.pem (--token T | --enrol KEY [--name NAME])
 *             [--threads T] [--state DIR] [--once] [--max-units K] [--checkpoint-seconds S]
 *             [--help]
 * docs/client.md has the details.
 */
#include "cli.h"

#include "nq/log.h"
#include "nq/nq.h"
#include "nq/proto.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: nq-client --server HOST:PORT --ca CA.pem (--token T | --enrol KEY [--name NAME])\n"
          "                 [--threads T] [--state DIR] [--once] [--max-units K]\n"
          "                 [--checkpoint-seconds S] [--public-name NAME]\n"
          "Fetch N-Queens work units from nq-server, solve them, report the counts.\n"
          "  --server HOST:PORT  the server; HOST is also the name its certificate must match\n"
          "  --ca FILE           PEM file of the CA that signed the server certificate\n"
          "  --token T           this client's token\n"
          "  --enrol KEY         enrol once with the server's enrolment key; the new token is\n"
          "                      stored in the state dir and used by later runs\n"
          "  --name NAME         client name asked for at enrolment (default: host name)\n"
          "  --public-name NAME  the name to be credited under on the server's public page\n"
          "                      (1..64 of [A-Za-z0-9._-]; default: anonymous, shown as\n"
          "                      anonymous- and a short hash)\n"
          "  --threads T         solver threads (default: online CPUs)\n"
          "  --state DIR         state directory: token, journal, checkpoints\n"
          "                      (default: $HOME/.nq-client)\n"
          "  --once              solve one unit, report it and exit\n"
          "  --max-units K       solve K units, report them and exit\n"
          "  --checkpoint-seconds S  save the running unit's finished tasks every S seconds\n"
          "                      (default 60; also on SIGTERM/SIGINT, which stop the client in\n"
          "                      about 2 s; the next start resumes the unit from there)\n"
          "  --help              this text\n"
          "Exit status: 0 done/stopped, 2 bad arguments, 3 setup (CA file, state dir,\n"
          "credentials), 4 server certificate refused, 5 authentication refused or banned,\n"
          "6 protocol error or version mismatch, 1 other failure.\n");
}

static int parse_long(const char *s, long min, long max, long *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < min || v > max) return -1;
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  nq_log_init("nq-client", NQ_LOG_INFO);
  signal(SIGPIPE, SIG_IGN);
  cli_config_t cfg;
  cli_config_default(&cfg);
  enum { O_SERVER = 1, O_CA, O_TOKEN, O_ENROL, O_NAME, O_THREADS, O_STATE, O_ONCE, O_MAX, O_CKPT,
         O_PUBLIC, O_HELP };
  static const struct option opts[] = {
      {"server", required_argument, NULL, O_SERVER}, {"ca", required_argument, NULL, O_CA},
      {"token", required_argument, NULL, O_TOKEN},   {"enrol", required_argument, NULL, O_ENROL},
      {"name", required_argument, NULL, O_NAME},     {"threads", required_argument, NULL, O_THREADS},
      {"state", required_argument, NULL, O_STATE},   {"once", no_argument, NULL, O_ONCE},
      {"max-units", required_argument, NULL, O_MAX}, {"help", no_argument, NULL, O_HELP},
      {"checkpoint-seconds", required_argument, NULL, O_CKPT},
      {"public-name", required_argument, NULL, O_PUBLIC},
      {NULL, 0, NULL, 0}};
  const char *server = NULL;
  int once = 0;
  long v;
  opterr = 0;
  for (;;) {
    int o = getopt_long(argc, argv, "", opts, NULL);
    if (o == -1) break;
    switch (o) {
    case O_SERVER: server = optarg; break;
    case O_CA: cfg.ca = optarg; break;
    case O_TOKEN: cfg.token = optarg; break;
    case O_ENROL: cfg.enrol = optarg; break;
    case O_NAME: cfg.name = optarg; break;
    case O_PUBLIC:
      if (!nq_proto_name_valid(optarg)) {
        fprintf(stderr, "nq-client: --public-name wants 1..64 of [A-Za-z0-9._-]\n");
        return CLI_EXIT_USAGE;
      }
      cfg.public_name = optarg;
      break;
    case O_STATE: cfg.state = optarg; break;
    case O_ONCE: once = 1; break;
    case O_THREADS:
      if (parse_long(optarg, 1, 1024, &v)) {
        fprintf(stderr, "nq-client: --threads wants 1..1024, not '%s'\n", optarg);
        return CLI_EXIT_USAGE;
      }
      cfg.threads = (int)v;
      break;
    case O_MAX:
      if (parse_long(optarg, 1, 1000000000L, &v)) {
        fprintf(stderr, "nq-client: --max-units wants a positive number, not '%s'\n", optarg);
        return CLI_EXIT_USAGE;
      }
      cfg.max_units = v;
      break;
    case O_CKPT: {
      char *end;
      double d = strtod(optarg, &end);
      if (!*optarg || *end || !(d >= 0.01 && d <= 86400)) {
        fprintf(stderr, "nq-client: --checkpoint-seconds wants a number 0.01..86400, not '%s'\n",
                optarg);
        return CLI_EXIT_USAGE;
      }
      cfg.checkpoint_seconds = d;
      break;
    }
    case O_HELP: usage(stdout); return CLI_EXIT_OK;
    default:
      fprintf(stderr, "nq-client: unknown or incomplete option '%s'\n", argv[optind - 1]);
      usage(stderr);
      return CLI_EXIT_USAGE;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "nq-client: unexpected argument '%s'\n", argv[optind]);
    return CLI_EXIT_USAGE;
  }
  if (!server || cli_parse_server(server, &cfg) != 0) {
    fprintf(stderr, "nq-client: --server wants HOST:PORT (got '%s')\n",
            server ? server : "");
    return CLI_EXIT_USAGE;
  }
  if (!cfg.ca || !*cfg.ca) {
    fprintf(stderr, "nq-client: --ca CA.pem is required\n");
    return CLI_EXIT_USAGE;
  }
  if (cfg.token && cfg.enrol) {
    fprintf(stderr, "nq-client: give --token or --enrol, not both\n");
    return CLI_EXIT_USAGE;
  }
  if (!cfg.state || !*cfg.state) {
    fprintf(stderr, "nq-client: --state is empty\n");
    return CLI_EXIT_USAGE;
  }
  if (cfg.token && !*cfg.token) {
    fprintf(stderr, "nq-client: --token is empty\n");
    return CLI_EXIT_USAGE;
  }
  if (cfg.enrol && !*cfg.enrol) {
    fprintf(stderr, "nq-client: --enrol is empty\n");
    return CLI_EXIT_USAGE;
  }
  if (cfg.name && !cfg.enrol) {
    fprintf(stderr, "nq-client: --name only goes with --enrol\n");
    return CLI_EXIT_USAGE;
  }
  if (cfg.name) {
    if (!nq_proto_name_valid(cfg.name)) {
      fprintf(stderr, "nq-client: --name wants 1..64 of [A-Za-z0-9._-]\n");
      return CLI_EXIT_USAGE;
    }
  }
  if (once) {
    if (cfg.max_units > 1) {
      fprintf(stderr, "nq-client: --once and --max-units K disagree\n");
      return CLI_EXIT_USAGE;
    }
    cfg.max_units = 1;
  }
  const char *fault = getenv("NQ_CLIENT_FAULT");
  if (fault && *fault) {
    if (strcmp(fault, "lie") != 0) {
      fprintf(stderr, "nq-client: NQ_CLIENT_FAULT knows only 'lie'\n");
      return CLI_EXIT_USAGE;
    }
    cfg.fault_lie = 1;
  }
  return cli_run(&cfg);
}
