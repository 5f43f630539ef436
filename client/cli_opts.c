/* nq-client: its options, declared once (cli_opts.h). */
#include "cli_opts.h"

#include <stddef.h>
#include <string.h>

#include "nq/addr.h"
#include "nq/log.h"
#include "nq/nq.h"
#include "nq/proto.h"
#include "nq/throttle.h"

_Static_assert(sizeof(nq_priority_t) == sizeof(int), "nq_priority_t is an int");

int cli_parse_server(const char *s, cli_config_t *cfg) {
  return nq_hostport_parse(s, cfg->host, sizeof cfg->host, &cfg->port, 0);
}

static int set_server(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  if (cli_parse_server(v, base) != 0)
    return nq_errorf(err, len, NQ_EINVAL, "expected HOST:PORT, got '%s'", v);
  return 0;
}

static int set_public(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  if (!nq_proto_name_valid(v))
    return nq_errorf(err, len, NQ_EINVAL, "expected 1..64 of [A-Za-z0-9._-], got '%s'", v);
  ((cli_config_t *)base)->public_name = v;
  return 0;
}

static int set_window(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  cli_config_t *cfg = base;
  if (nq_pause_window_parse(v, &cfg->pause_from, &cfg->pause_to) != 0)
    return nq_errorf(err, len, NQ_EINVAL, "expected HH:MM-HH:MM (two different times of day), "
                     "got '%s'", v);
  cfg->pause_window = 1;
  return 0;
}

/* --log-level sets the process's level at once: later options' messages obey it. */
static int set_log_level(void *base, const nq_opt_t *opt, const char *v, char *err, size_t len) {
  int l = nq_log_parse_level(v);
  if (l < 0)
    return nq_errorf(err, len, NQ_EINVAL, "expected error, warn, info or debug, got '%s'", v);
  nq_log_set_level(l);
  return 0;
}

/* A string option: an empty one is refused by the table ("--state: expected a value"). */
#define C_STR(nm, field, a, hlp)                                                                 \
  {NQ_OPT_STRING, nm, .off = offsetof(cli_config_t, field), .arg = a, .help = hlp}
#define C_DBL(nm, field, a, l, h, hlp)                                                           \
  {NQ_OPT_DOUBLE, nm, .off = offsetof(cli_config_t, field), .arg = a, .dlo = l, .dhi = h,         \
   .flags = NQ_OPTF_SHOWDEF, .help = hlp}
#define C_FLAG(nm, field, hlp) {NQ_OPT_FLAG, nm, .off = offsetof(cli_config_t, field), .help = hlp}

const nq_opt_t cli_opts_table[] = {
    {NQ_OPT_STRING, "server", .arg = "HOST:PORT", .set = set_server,
     .help = "the server; HOST is also the name its certificate must match"},
    C_STR("ca", ca, "FILE", "PEM file of the CA that signed the server certificate (the "
          "server's private CA, from its operator); without it the system's trust store "
          "verifies the server (a server with a public certificate, nq-server --cert)"),
    C_STR("token", token, "T", "this client's token on the command line (visible to every "
          "local user through ps: prefer --token-file)"),
    C_STR("enrol", enrol, "KEY", "enrol with this key (visible through ps: prefer "
          "--enrol-file)"),
    C_STR("name", name, "NAME", "client name asked for at enrolment (default: host name)"),
    {NQ_OPT_STRING, "public-name", .arg = "NAME", .set = set_public,
     .help = "the name to be credited under on the server's public page (1..64 of "
             "[A-Za-z0-9._-]; default: anonymous, shown as anonymous- and a short hash)"},
    C_FLAG("join", join,
           "join the project by yourself: the server (nq-server --signup open|approve) makes "
           "you an owner and this machine a client; the owner key is saved in the state folder "
           "(owner.key, 0600) for more machines"),
    C_STR("team", team, "TEAM", "with --join: the team to join (one the operator made)"),
    {NQ_OPT_INT, "threads", .off = offsetof(cli_config_t, threads), .arg = "T", .lo = 0,
     .hi = 1024, .help = "CPU solver threads (default: online CPUs; 0 with a GPU: the GPU alone)"},
    {NQ_OPT_STRING, "gpu", .off = offsetof(cli_config_t, gpu), .arg = "auto|off|all|LIST",
     .flags = NQ_OPTF_SHOWDEF,
     .help = "OpenCL devices that solve too (auto: every GPU or accelerator; all: CPU devices "
             "such as pocl too; LIST: indexes such as 0,1, from nq-solve --gpu-list); each must "
             "pass a self-test first; pause, CPU limit act between its launches"},
    C_STR("state", state, "DIR", "state directory: token, journal, checkpoints (default: "
          "$HOME/.nq-client; Windows: %LOCALAPPDATA%\\nq-client)"),
    C_FLAG("exit-when-done", exit_when_done,
           "exit 0 when the server runs no job (by default the client waits between jobs, "
           "asking with backoff up to every 120 s, and goes on with the next queued job)"),
    C_DBL("checkpoint-seconds", checkpoint_seconds, "S", 0.01, 86400,
          "save the running unit's finished tasks every S seconds (also on SIGTERM/SIGINT, "
          "which stop the client in about 2 s; the next start resumes the unit from there)"),
    {NQ_OPT_ENUM, "priority", .off = offsetof(cli_config_t, priority), .arg = "P",
     .choices = "idle|low|normal", .flags = NQ_OPTF_SHOWDEF,
     .help = "the solver threads' priority: idle (SCHED_IDLE, they run only when nothing else "
             "wants the CPU; nice 19 where that is refused), low (nice 19) or normal"},
    {NQ_OPT_INT, "cpu-limit", .off = offsetof(cli_config_t, cpu_limit), .arg = "PCT", .lo = 1,
     .hi = 100, .flags = NQ_OPTF_SHOWDEF, .help = "run the solver threads PCT% of the time"},
    C_STR("pause-file", pause_file, "PATH", "the solver pauses while PATH exists "
          "(docs/client.md has recipes: user active, and more)"),
    C_FLAG("pause-on-battery", pause_on_battery,
           "the solver pauses while a battery discharges (/sys/class/power_supply)"),
    {NQ_OPT_STRING, "pause-between", .arg = "HH:MM-HH:MM", .set = set_window,
     .help = "the solver pauses every day in that window of local time (22:00-07:00 wraps "
             "past midnight)"},
    {NQ_OPT_ENUM, "log-level", .arg = "LEVEL", .set = set_log_level,
     .help = "error, warn, info (default) or debug: each unit's lines are at debug unless it "
             "took over a minute"},
    C_DBL("log-summary", summary_seconds, "S", 1, 86400,
          "at info, what was solved every S seconds"),
    C_DBL("warn-unreachable", unreachable_warn_seconds, "S", 1, 86400,
          "a server out of reach for S seconds is a warning (each failed attempt is info "
          "once, then debug)"),
    {NQ_OPT_END}};

const nq_opt_t cli_args_table[] = {
    {NQ_OPT_STRING, "token-file", .off = offsetof(cli_args_t, token_file), .arg = "FILE",
     .flags = NQ_OPTF_EMPTY_OK,
     .help = "read this client's token from FILE (first line; keep it 0600); the environment "
             "variable NQ_TOKEN_FILE does the same when no other credential is given"},
    {NQ_OPT_STRING, "enrol-file", .off = offsetof(cli_args_t, enrol_file), .arg = "FILE",
     .flags = NQ_OPTF_EMPTY_OK,
     .help = "enrol once with the enrolment key in FILE; the new token is stored in the state "
             "dir and used by later runs"},
    {NQ_OPT_FLAG, "once", .off = offsetof(cli_args_t, once),
     .help = "solve one unit, report it and exit"},
    {NQ_OPT_INT64, "max-units", .off = offsetof(cli_args_t, max_units), .arg = "K", .lo = 1,
     .hi = 1000000000, .help = "solve K units, report them and exit"},
    {NQ_OPT_END}};

const nq_opt_t cli_status_table[] = {
    {NQ_OPT_STRING, "state", .off = offsetof(cli_status_args_t, state), .arg = "DIR",
     .flags = NQ_OPTF_SHOWDEF, .help = "the client's state directory"},
    {NQ_OPT_FLAG, "json", .off = offsetof(cli_status_args_t, json),
     .help = "one JSON object, for scripts and desktop widgets"},
    {NQ_OPT_STRING, "receipts", .off = offsetof(cli_status_args_t, receipts), .arg = "FILE",
     .help = "check this client's receipts against the job's published evidence file: every "
             "result the server acknowledged must be in it, under its root"},
    {NQ_OPT_STRING, "root", .off = offsetof(cli_status_args_t, root), .arg = "HEX",
     .help = "with --receipts: the root the server published (its page, /api/status)"},
    {NQ_OPT_END}};

void cli_opts_init(nq_opts_t *o, cli_config_t *cfg, cli_args_t *args) {
  memset(o, 0, sizeof *o);
  memset(args, 0, sizeof *args);
  o->prog = "nq-client";
  o->summary = "volunteer daemon that solves N-Queens work units";
  o->usage = "nq-client --server HOST:PORT --ca CA.pem\n"
             "                 (--token-file FILE | --enrol-file FILE [--name NAME])\n"
             "                 [--threads T] [--state DIR] [--once] [--max-units K]\n"
             "                 [--exit-when-done]\n"
             "                 [--checkpoint-seconds S] [--public-name NAME]\n"
             "                 [--priority idle|low|normal] [--cpu-limit PCT] [--pause-file PATH]\n"
             "                 [--pause-on-battery] [--pause-between HH:MM-HH:MM]\n"
             "                 [--log-level LEVEL] [--log-summary S] [--warn-unreachable S]\n"
             "       nq-client status [--state DIR] [--json] [--receipts FILE [--root HEX]]";
  o->about = "Fetch N-Queens work units from nq-server, solve them, report the counts.\n"
             "`nq-client status` says what the client with that state directory is doing.";
  o->epilog = "Exit status: 0 done/stopped, 2 bad arguments, 3 setup (CA file, state dir,\n"
              "credentials), 4 server certificate refused, 5 authentication refused or banned,\n"
              "6 protocol error, 7 this client is too old for the server (upgrade it),\n"
              "1 other failure.";
  o->version = nq_print_version;
  o->group[0] = (nq_opt_group_t){cli_opts_table, cfg};
  o->group[1] = (nq_opt_group_t){cli_args_table, args};
}

void cli_status_opts_init(nq_opts_t *o, cli_status_args_t *a, const char *default_state) {
  memset(o, 0, sizeof *o);
  memset(a, 0, sizeof *a);
  a->state = default_state;
  o->prog = "nq-client status";
  o->usage = "nq-client status [--state DIR] [--json] [--receipts FILE [--root HEX]]";
  o->about = "What the client with state directory DIR is doing: whether it\n"
             "runs, its unit with percent done, rate and time to go, the checkpoints of units\n"
             "in progress, results waiting for the server, the last contact with the server,\n"
             "the name and credit the server reported, priority, CPU limit and pause.\n"
             "Works whether the client runs or not; reads the directory only.\n"
             "With --receipts FILE: check that every result the server acknowledged (its\n"
             "receipts, kept in DIR) is in the job's published evidence file under its root.";
  o->group[0] = (nq_opt_group_t){cli_status_table, a};
}
