/* nq-client: the volunteer daemon.
 *   nq-client --server HOST:PORT --ca CA.pem
 *             (--token-file F | --token T | --enrol-file F | --enrol KEY [--name NAME])
 *             [--threads T] [--state DIR] [--once] [--max-units K] [--checkpoint-seconds S]
 *             [--priority idle|low|normal] [--cpu-limit PCT] [--pause-file PATH]
 *             [--gpu auto|off|all|LIST]
 *             [--pause-on-battery] [--pause-between HH:MM-HH:MM]
 *             [--log-level LEVEL] [--log-summary S] [--help] [--version]
 *   nq-client status [--state DIR] [--json]
 * docs/client.md has the details.
 */
#include "cli.h"

#include "journal.h"
#include "status.h"

#include "nq/files.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "nq/throttle.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: nq-client --server HOST:PORT --ca CA.pem\n"
          "                 (--token-file FILE | --enrol-file FILE [--name NAME])\n"
          "                 [--threads T] [--state DIR] [--once] [--max-units K]\n"
          "                 [--exit-when-done]\n"
          "                 [--checkpoint-seconds S] [--public-name NAME]\n"
          "                 [--priority idle|low|normal] [--cpu-limit PCT] [--pause-file PATH]\n"
          "                 [--pause-on-battery] [--pause-between HH:MM-HH:MM]\n"
          "                 [--log-level LEVEL] [--log-summary S] [--warn-unreachable S]\n"
          "       nq-client status [--state DIR] [--json]\n"
          "Fetch N-Queens work units from nq-server, solve them, report the counts.\n"
          "`nq-client status` says what the client with that state directory is doing.\n"
          "  --server HOST:PORT  the server; HOST is also the name its certificate must match\n"
          "  --ca FILE           PEM file of the CA that signed the server certificate\n"
          "  --token-file FILE   read this client's token from FILE (first line; keep it 0600);\n"
          "                      the environment variable NQ_TOKEN_FILE does the same\n"
          "  --enrol-file FILE   enrol once with the enrolment key in FILE; the new token is\n"
          "                      stored in the state dir and used by later runs\n"
          "  --token T, --enrol KEY  the same on the command line (visible to every local user\n"
          "                      through ps: prefer the file forms)\n"
          "  --name NAME         client name asked for at enrolment (default: host name)\n"
          "  --public-name NAME  the name to be credited under on the server's public page\n"
          "                      (1..64 of [A-Za-z0-9._-]; default: anonymous, shown as\n"
          "                      anonymous- and a short hash)\n"
          "  --threads T         CPU solver threads (default: online CPUs; 0 with a GPU: the\n"
          "                      GPU alone)\n"
          "  --gpu auto|off|all|LIST  OpenCL devices that solve too (default auto: every GPU or\n"
          "                      accelerator; all: CPU devices such as pocl too; LIST: indexes\n"
          "                      such as 0,1, from nq-solve --gpu-list); each must pass a\n"
          "                      self-test first; pause, CPU limit act between its launches\n"
          "  --state DIR         state directory: token, journal, checkpoints\n"
          "                      (default: $HOME/.nq-client)\n"
          "  --once              solve one unit, report it and exit\n"
          "  --max-units K       solve K units, report them and exit\n"
          "  --exit-when-done    exit 0 when the server runs no job (by default the client\n"
          "                      waits between jobs, asking with backoff up to every 120 s,\n"
          "                      and goes on with the next queued job)\n"
          "  --checkpoint-seconds S  save the running unit's finished tasks every S seconds\n"
          "                      (default 60; also on SIGTERM/SIGINT, which stop the client in\n"
          "                      about 2 s; the next start resumes the unit from there)\n"
          "  --priority P        the solver threads' priority: idle (default: SCHED_IDLE, they\n"
          "                      run only when nothing else wants the CPU; nice 19 where that\n"
          "                      is refused), low (nice 19) or normal\n"
          "  --cpu-limit PCT     run the solver threads PCT%% of the time (1..100, default 100)\n"
          "  --pause-file PATH   the solver pauses while PATH exists (docs/client.md has\n"
          "                      recipes: user active, and more)\n"
          "  --pause-on-battery  the solver pauses while a battery discharges\n"
          "                      (/sys/class/power_supply)\n"
          "  --pause-between HH:MM-HH:MM  the solver pauses every day in that window of\n"
          "                      local time (22:00-07:00 wraps past midnight)\n"
          "  --log-level LEVEL   error, warn, info (default) or debug: each unit's lines are at\n"
          "                      debug unless it took over a minute\n"
          "  --log-summary S     at info, what was solved every S seconds (default 60)\n"
          "  --warn-unreachable S  a server out of reach for S seconds is a warning\n"
          "                      (default 180; each failed attempt is info once, then debug)\n"
          "  --help              this text\n"
          "  --version           the software and protocol versions\n"
          "Exit status: 0 done/stopped, 2 bad arguments, 3 setup (CA file, state dir,\n"
          "credentials), 4 server certificate refused, 5 authentication refused or banned,\n"
          "6 protocol error, 7 this client is too old for the server (upgrade it),\n"
          "1 other failure.\n");
}

static int parse_long(const char *s, long min, long max, long *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < min || v > max) return -1;
  *out = v;
  return 0;
}

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
  const char *env = getenv("NQ_TOKEN_FILE");
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
  enum { O_SERVER = 1, O_CA, O_TOKEN, O_ENROL, O_NAME, O_THREADS, O_STATE, O_ONCE, O_MAX, O_CKPT,
         O_PUBLIC, O_HELP, O_VERSION, O_TOKEN_FILE, O_ENROL_FILE, O_PRIORITY, O_CPU_LIMIT,
         O_PAUSE_FILE, O_GPU, O_PAUSE_BATTERY, O_PAUSE_BETWEEN, O_LOG_LEVEL, O_LOG_SUMMARY,
         O_WARN_UNREACH, O_EXIT_DONE };
  static const struct option opts[] = {
      {"server", required_argument, NULL, O_SERVER}, {"ca", required_argument, NULL, O_CA},
      {"token", required_argument, NULL, O_TOKEN},   {"enrol", required_argument, NULL, O_ENROL},
      {"name", required_argument, NULL, O_NAME},     {"threads", required_argument, NULL, O_THREADS},
      {"state", required_argument, NULL, O_STATE},   {"once", no_argument, NULL, O_ONCE},
      {"max-units", required_argument, NULL, O_MAX}, {"help", no_argument, NULL, O_HELP},
      {"exit-when-done", no_argument, NULL, O_EXIT_DONE},
      {"checkpoint-seconds", required_argument, NULL, O_CKPT},
      {"public-name", required_argument, NULL, O_PUBLIC},
      {"version", no_argument, NULL, O_VERSION},
      {"token-file", required_argument, NULL, O_TOKEN_FILE},
      {"enrol-file", required_argument, NULL, O_ENROL_FILE},
      {"priority", required_argument, NULL, O_PRIORITY},
      {"cpu-limit", required_argument, NULL, O_CPU_LIMIT},
      {"pause-file", required_argument, NULL, O_PAUSE_FILE},
      {"gpu", required_argument, NULL, O_GPU},
      {"pause-on-battery", no_argument, NULL, O_PAUSE_BATTERY},
      {"pause-between", required_argument, NULL, O_PAUSE_BETWEEN},
      {"log-level", required_argument, NULL, O_LOG_LEVEL},
      {"log-summary", required_argument, NULL, O_LOG_SUMMARY},
      {"warn-unreachable", required_argument, NULL, O_WARN_UNREACH},
      {NULL, 0, NULL, 0}};
  if (argc < 2) { /* a volunteer who just types the name gets the usage, not a cryptic error */
    usage(stderr);
    return CLI_EXIT_USAGE;
  }
  if (strcmp(argv[1], "status") == 0) return cli_status_main(argc - 1, argv + 1, cfg.state);
  const char *server = NULL, *token_file = NULL, *enrol_file = NULL;
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
    case O_EXIT_DONE: cfg.exit_when_done = 1; break;
    case O_THREADS:
      if (parse_long(optarg, 0, 1024, &v)) {
        fprintf(stderr, "nq-client: --threads wants 0..1024, not '%s'\n", optarg);
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
    case O_TOKEN_FILE: token_file = optarg; break;
    case O_ENROL_FILE: enrol_file = optarg; break;
    case O_PAUSE_FILE: cfg.pause_file = optarg; break;
    case O_GPU: cfg.gpu = optarg; break;
    case O_PAUSE_BATTERY: cfg.pause_on_battery = 1; break;
    case O_PAUSE_BETWEEN:
      if (nq_pause_window_parse(optarg, &cfg.pause_from, &cfg.pause_to) != 0) {
        fprintf(stderr, "nq-client: --pause-between wants HH:MM-HH:MM (two different times of "
                "day), not '%s'\n", optarg);
        return CLI_EXIT_USAGE;
      }
      cfg.pause_window = 1;
      break;
    case O_LOG_LEVEL: {
      int l = nq_log_parse_level(optarg);
      if (l < 0) {
        fprintf(stderr, "nq-client: --log-level wants error, warn, info or debug, not '%s'\n",
                optarg);
        return CLI_EXIT_USAGE;
      }
      nq_log_set_level(l);
      break;
    }
    case O_LOG_SUMMARY:
    case O_WARN_UNREACH: {
      char *end;
      double d = strtod(optarg, &end);
      if (!*optarg || *end || !(d >= 1 && d <= 86400)) {
        fprintf(stderr, "nq-client: %s wants seconds 1..86400, not '%s'\n",
                o == O_LOG_SUMMARY ? "--log-summary" : "--warn-unreachable", optarg);
        return CLI_EXIT_USAGE;
      }
      *(o == O_LOG_SUMMARY ? &cfg.summary_seconds : &cfg.unreachable_warn_seconds) = d;
      break;
    }
    case O_PRIORITY:
      if (nq_priority_parse(optarg, &cfg.priority) != 0) {
        fprintf(stderr, "nq-client: --priority wants idle, low or normal, not '%s'\n", optarg);
        return CLI_EXIT_USAGE;
      }
      break;
    case O_CPU_LIMIT:
      if (parse_long(optarg, 1, 100, &v)) {
        fprintf(stderr, "nq-client: --cpu-limit wants a percentage 1..100, not '%s'\n", optarg);
        return CLI_EXIT_USAGE;
      }
      cfg.cpu_limit = (int)v;
      break;
    case O_HELP: usage(stdout); return CLI_EXIT_OK;
    case O_VERSION: nq_print_version("nq-client"); return CLI_EXIT_OK;
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
  if (cfg.pause_file && !*cfg.pause_file) {
    fprintf(stderr, "nq-client: --pause-file is empty\n");
    return CLI_EXIT_USAGE;
  }
  int rc = read_secrets(&cfg, token_file, enrol_file);
  if (rc) return rc;
  if (cfg.token && cfg.enrol) {
    fprintf(stderr, "nq-client: give a token or an enrolment key, not both\n");
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
    fprintf(stderr, "nq-client: --name only goes with --enrol or --enrol-file\n");
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
