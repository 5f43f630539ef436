/* nq-admin: the operator's command-line tool. Dispatch through the command table; the commands
 * live in cmd_*.c, the backends (database or server) in backend.c and remote.c. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "nq/log.h"
#include "nq/nq.h"

static const adm_cmd_t commands[] = {
    {"status", "[--json] [--watch S] [--n N]",
     "Progress of the job: units by state, percent done, verified partial counts, rates, ETA,\n"
     "clients, disputed units; the final answer and its check against the published values.\n"
     "--watch S redraws every S seconds until the job is done. Exit status 3 when the job is\n"
     "done and its answer differs from the published value.",
     adm_cmd_status},
    {"clients", "[--json]", "List clients: activity, results judged valid/invalid, bans.",
     adm_cmd_clients},
    {"client", "add NAME [--owner OWNER] [--out FILE] | ban NAME | unban NAME [--json]",
     "add: create a client (of OWNER, default `default`) and write its token to FILE (default\n"
     "./NAME.token, mode 0600, never overwritten; --json puts it in the reply instead): it is\n"
     "shown nowhere else, the store keeps its SHA-256. ban: ban a client; its leases go back\n"
     "to the others at once, and every unit it helped verify is re-opened and verified again\n"
     "without it. unban: lift a ban and a suspicion (the units re-opened stay as they are).",
     adm_cmd_client},
    {"owners", "[--json]",
     "List owners: their enrolment key (own or the server's), trust, bans, clients.",
     adm_cmd_owners},
    {"owner", "add NAME | rekey NAME [--bundle DIR [--address HOST:PORT]] | ban NAME |\n"
     "         unban NAME | trust NAME | untrust NAME | requests [--all] | approve ID |\n"
     "         reject ID [--json]",
     "add: create an owner (a person or an organisation) and print its enrolment key (shown\n"
     "only once): its machines enrol with it and belong to it. A unit's quorum needs results\n"
     "of distinct owners (nq-server --quorum-distinct). --bundle DIR writes, instead of\n"
     "printing the key, all a volunteer needs: ca.pem, enrol.key (0600), client.env naming the\n"
     "server at --address (default: --server), install.sh for the nq-client package, and a\n"
     "README. rekey: a new key (printed, or a new --bundle); the old one enrols nobody, its\n"
     "enrolled machines keep their tokens. ban: its key enrols nobody, and every client of it\n"
     "is banned as by `client ban`. unban: its key enrols again (its clients stay banned until\n"
     "`client unban`). trust: its results settle disagreements (the operator's own machines):\n"
     "while any owner is trusted, results that disagree make a unit contested until a trusted\n"
     "owner's result settles it, spot checks go to trusted owners, and only a disagreement\n"
     "with a trusted result bans (docs/reliability.md). untrust: undo. requests: the sign-ups\n"
     "of nq-client --join waiting for you (nq-server --signup approve; --all: every one kept).\n"
     "approve ID: its client is made an owner (self-joined, never trusted without `trust`)\n"
     "when it asks again; reject ID: it is told so and stops.",
     adm_cmd_owner},
    {"news", "add TEXT | list | remove ID [--json]",
     "The project's news to volunteers: shown on the page, sent in every client's welcome\n"
     "(the newest 5) and, through a running server, to the clients connected now; each client\n"
     "logs each item once. TEXT: one line, up to 400 bytes.",
     adm_cmd_news},
    {"team", "add NAME | rename NAME NEW | remove NAME | list [--json]",
     "Teams of owners: volunteers join one with nq-client --join --team NAME; the page ranks\n"
     "teams by their owners' verified credit. remove: its owners are in no team after it.",
     adm_cmd_team},
    {"jobs", "[--json]", "List jobs, with final totals once done.", adm_cmd_jobs},
    {"job", "add N [--unit-seconds S | --depth D] [--max-depth D] [--quorum Q] [--max-results M]\n"
     "         | list [--all] | cancel ID | next [--force] | archive N | delete N [--force]\n"
     "         [--json]",
     "add: queue a job for N, with nq-server's job options (the defaults are theirs). The\n"
     "server starts the oldest queued job when the running one is done, in the same data\n"
     "directory and on the same port, with the same certificates and owners; connected clients\n"
     "go on with it (a done job for the same N is archived first: a re-count). list: the queue,\n"
     "next first (--all: started, cancelled and failed entries too, with their job or error).\n"
     "cancel: take a queued job back (ID from job list) before it starts. next (to a running\n"
     "server, --server): start the next queued job now -- once the served job is done, or with\n"
     "--force while it runs (it is set aside, its leases released, and resumes when its N is\n"
     "queued again).\n"
     "archive: keep the job for N (its units, results and totals) for the record, and free N:\n"
     "the next nq-server --n N in the same data directory makes a new job, with the same CA,\n"
     "enrolment key and clients. delete: remove the job, its units and results (the newest\n"
     "archived job for N when none is live; local mode only: it may take minutes).\n"
     "Both are refused while clients hold leases on the job, unless --force (the leases are\n"
     "released; their results are then refused). In local mode no server may run on the data\n"
     "directory (its lock is taken); remotely, the job the server serves is refused.",
     adm_cmd_job},
    {"units", "--state pending|leased|awaiting|verified|disputed|all [--limit K] [--json] [--n N]",
     "List units of the job in one state (disputed and awaiting units show every result they\n"
     "got, and whether it votes; units\n"
     "being solved show each client running them, its percent done, rate and ETA from its\n"
     "last progress report).",
     adm_cmd_units},
    {"unit", "retry UNIT | retry --all-disputed | retry --client NAME | reopen UNIT\n"
     "         [--extra K] [--json] [--n N]",
     "retry: give a disputed unit (UNIT: its id or its text, as `units --state disputed` shows\n"
     "them; --all-disputed: every one; --client NAME: every one with a result of NAME, and\n"
     "NAME's awaiting units as below) K more\n"
     "results (default K: the job's quorum), from owners that never had it. A disputed unit\n"
     "takes replicas by itself up to 3x --max-results; retry is for one that reached that cap\n"
     "(`blocked` in status). An awaiting unit (`stalled` in status: no owner left that could\n"
     "vote on it) gets the same, and its voided results vote again where their client is in\n"
     "good standing and no voting result disagrees (the one that voided them was banned).\n"
     "It is verified once one answer has a strict majority of at least\n"
     "`quorum` votes. reopen: take back a unit (verified too): its results stop voting, and a\n"
     "quorum of fresh owners verifies it again (a finished job runs again).",
     adm_cmd_unit},
    {"export", "--out FILE [--n N] [--quorum-distinct client|owner|network] [--at T] [--names] [--json]",
     "Write a finished job's evidence (docs/evidence.md): every unit with its counts and the\n"
     "results that verified it (clients, owners, kernels, spot checks), the totals and a\n"
     "SHA-256, as one JSON-lines file that nq-verify checks with no server and no database.\n"
     "--out - writes to stdout. --quorum-distinct: the rule the server verified by (its\n"
     "--quorum-distinct; default owner), recorded in the file. Local mode (--data) only;\n"
     "the file is read from one snapshot, so a running server may go on. --at T records T\n"
     "(Unix seconds) as the export time instead of now: the same store then gives the same\n"
     "bytes as the server's /api/export of that moment.",
     adm_cmd_export},
    {"audit", "--sample K [--seed S] [--threads T] [--n N] [--json]",
     "Recompute K random verified units of the job with the reference solver (plain recursion,\n"
     "no code shared with the fast kernels) on this machine, compare counts and nodes with the\n"
     "store, and record the audit (sample, seed, time, outcome): status and the page show it.\n"
     "A unit that disagrees is named loudly, re-opened and settled by the reference count\n"
     "(its results judged against it, disagreeing untrusted owners banned); exit 3.\n"
     "--seed S draws the same units again (default: from the clock). Local mode (--data).",
     adm_cmd_audit},
    {"backup", "--to FILE [--json]",
     "Take a backup of DIR/nq.db now (local mode: on the server's machine, beside a running\n"
     "server, which is not held up): an online copy, fsync'ed, then checked (integrity, and\n"
     "every counter recounted from the tables) before it is renamed to FILE. nq-server\n"
     "--backup-dir takes them on a schedule.",
     adm_cmd_backup},
    {"restore", "FILE [--json]",
     "Put the backup FILE in place as DIR/nq.db (DIR from --data, created if missing). The\n"
     "backup is checked first; the database it replaces is moved aside (nq.db.before-restore-\n"
     "TIME), never deleted. Refused while a server runs on DIR. Then start nq-server on DIR:\n"
     "clients still holding leases carry on (docs/operations.md, the restore drill).",
     adm_cmd_restore},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
  fprintf(f, "usage: nq-admin COMMAND [options]   (nq %s)\ncommands:\n", NQ_VERSION_STRING);
  for (size_t i = 0; i < NCOMMANDS; i++)
    fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].usage);
  adm_backend_help(f);
  fprintf(f, "run 'nq-admin COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  nq_log_init("nq-admin", NQ_LOG_WARN);
  if (argc < 2) {
    usage(stderr);
    return ADM_EXIT_USAGE;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return ADM_EXIT_OK;
  }
  if (!strcmp(argv[1], "--man")) {
    adm_man(commands, NCOMMANDS, stdout);
    return ADM_EXIT_OK;
  }
  if (!strcmp(argv[1], "--version")) {
    nq_print_version("nq-admin");
    return ADM_EXIT_OK;
  }
  /* Options may come before the command (`nq-admin --server HOST:PORT job next`, as
   * docs/operations.md writes it): the first word that names a command is the command, and what
   * came before it goes after it, in order. */
  if (argv[1][0] == '-') {
    for (int k = 2; k < argc; k++) {
      int is_cmd = 0;
      for (size_t i = 0; i < NCOMMANDS && !is_cmd; i++) is_cmd = !strcmp(argv[k], commands[i].name);
      if (!is_cmd) continue;
      char *cmd = argv[k];
      memmove(argv + 2, argv + 1, (size_t)(k - 1) * sizeof *argv);
      argv[1] = cmd;
      break;
    }
  }
  for (size_t i = 0; i < NCOMMANDS; i++) {
    if (strcmp(argv[1], commands[i].name) != 0) continue;
    adm_opts_t o;
    int rc = adm_parse(&commands[i], argc - 2, argv + 2, &o);
    if (rc != 0) return rc;
    if (o.help) return ADM_EXIT_OK; /* adm_parse printed the command's usage */
    return commands[i].handler(&commands[i], &o);
  }
  fprintf(stderr, "nq-admin: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return ADM_EXIT_USAGE;
}
