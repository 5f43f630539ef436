/* nq-admin: what a volunteer needs, written to files instead of a command line -- an owner's
 * bundle (`owner add|rekey NAME --bundle DIR`) and a client's token file (`client add`). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "admin.h"
#include "nq/certs.h"
#include "nq/files.h"
#include "nq/nq.h"

#define BUNDLE_CA_MAX (1 << 20)

/* Split path into its directory ("." when it has none) and its last component. */
static int split_path(const char *path, char *dir, size_t dirlen, const char **name) {
  const char *slash = strrchr(path, '/');
  *name = slash ? slash + 1 : path;
  if (!**name) return NQ_EINVAL;
  size_t n = slash ? (size_t)(slash - path) : 0;
  if (slash && n == 0) n = 1; /* "/name" */
  if (n + 1 > dirlen) return NQ_EINVAL;
  if (slash) {
    memcpy(dir, path, n);
    dir[n] = '\0';
  } else {
    snprintf(dir, dirlen, ".");
  }
  return 0;
}

int adm_secret_check(const char *path) {
  char dir[4096];
  const char *name;
  if (split_path(path, dir, sizeof dir, &name) != 0) {
    fprintf(stderr, "nq-admin: '%s' is not a file name\n", path);
    return ADM_EXIT_USAGE;
  }
  struct stat sb;
  if (stat(path, &sb) == 0) {
    fprintf(stderr, "nq-admin: %s exists already; it is never overwritten (choose another "
            "--out)\n", path);
    return ADM_EXIT_FAIL;
  }
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    fprintf(stderr, "nq-admin: cannot write %s: %s is not a directory\n", path, dir);
    return ADM_EXIT_FAIL;
  }
  return 0;
}

/* dir/name: the secret and a newline, mode 0600, create-new. */
static int secret_create(const char *dir, const char *name, const char *secret) {
  char line[512];
  int n = snprintf(line, sizeof line, "%s\n", secret);
  int rc = n > 0 && (size_t)n < sizeof line ? nq_file_create(dir, name, line, (size_t)n, 0600)
                                             : NQ_EINVAL;
  memset(line, 0, sizeof line);
  return rc;
}

int adm_secret_write(const char *path, const char *secret) {
  char dir[4096];
  const char *name;
  if (split_path(path, dir, sizeof dir, &name) != 0) return NQ_EINVAL;
  return secret_create(dir, name, secret);
}

int adm_bundle_prepare(const adm_opts_t *o, adm_bundle_t *b) {
  memset(b, 0, sizeof *b);
  const char *addr = o->address ? o->address : o->server;
  if (!addr) {
    fprintf(stderr, "nq-admin: --bundle needs --address HOST:PORT, the address volunteers' "
            "clients dial (in remote mode it defaults to --server)\n");
    return ADM_EXIT_USAGE;
  }
  if (nq_hostport_parse(addr, b->host, sizeof b->host, &b->port, 0) != 0) {
    fprintf(stderr, "nq-admin: --address '%s' is not HOST:PORT\n", addr);
    return ADM_EXIT_USAGE;
  }
  snprintf(b->address, sizeof b->address, "%s", addr);
  /* The CA the clients verify the server with: the one this command trusts remotely, else the
   * data directory's. */
  const char *data = o->data ? o->data : ADM_DEFAULT_DATA;
  if (o->server) snprintf(b->ca_path, sizeof b->ca_path, "%s", o->ca ? o->ca : "");
  else if (nq_path_join(b->ca_path, sizeof b->ca_path, data, NQ_CERTS_CA_CERT) != 0)
    b->ca_path[0] = '\0';
  int rc = b->ca_path[0] ? nq_file_read(b->ca_path, BUNDLE_CA_MAX, &b->ca, &b->ca_len) : NQ_EIO;
  if (rc || !strstr(b->ca, "-----BEGIN CERTIFICATE-----")) {
    fprintf(stderr, "nq-admin: --bundle: cannot read the CA certificate %s\n",
            b->ca_path[0] ? b->ca_path : "(remote mode needs --ca)");
    adm_bundle_free(b);
    return ADM_EXIT_FAIL;
  }
  /* Local mode can see the server certificate: say so now when it lacks the address's host. */
  char cert[4096], names[512];
  if (!o->server && nq_path_join(cert, sizeof cert, data, NQ_CERTS_SERVER_CERT) == 0 &&
      nq_certs_file_names(cert, b->host, names, sizeof names) == 0)
    fprintf(stderr, "nq-admin: warning: the server certificate does not name '%s' (it names %s): "
            "clients dialling %s will refuse it until nq-server restarts with --hostname %s\n",
            b->host, names, addr, b->host);
  /* The directory: new (0700), or empty; nothing in it is ever overwritten. */
  snprintf(b->dir, sizeof b->dir, "%s", o->bundle);
  if (mkdir(b->dir, 0700) != 0) {
    DIR *d = errno == EEXIST ? opendir(b->dir) : NULL;
    struct dirent *e;
    int empty = d != NULL;
    while (d && (e = readdir(d)) != NULL)
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
    if (d) closedir(d);
    if (!empty) {
      fprintf(stderr, "nq-admin: --bundle %s: %s\n", b->dir,
              d ? "the directory is not empty" : strerror(errno));
      adm_bundle_free(b);
      return ADM_EXIT_FAIL;
    }
  }
  return 0;
}

void adm_bundle_free(adm_bundle_t *b) {
  free(b->ca);
  b->ca = NULL;
}

/* The files of a bundle: name, mode, and its text (a printf format of owner, address, and the
 * key's file name for the README). */
static const char install_sh[] =
    "#!/bin/sh\n"
    "# Set up the nq-client service for %s's machines: run as root in this directory, once the\n"
    "# nq-client package is installed (sudo apt install ./nq-client_VERSION_ARCH.deb).\n"
    "set -eu\n"
    "cd \"$(dirname \"$0\")\"\n"
    "install -d -m 755 /etc/nq\n"
    "install -m 644 ca.pem /etc/nq/ca.pem\n"
    "install -m 600 enrol.key /etc/nq/client.secret\n"
    "install -m 644 client.env /etc/nq/client.env\n"
    "systemctl enable --now nq-client\n"
    "echo \"nq-client enabled: journalctl -u nq-client -f shows it enrol and work\"\n";

static const char client_env[] =
    "# nq-client settings for %s's machines (/etc/nq/client.env of the nq-client package)\n"
    "NQ_SERVER=%s\n"
    "NQ_SECRET=--enrol-file\n"
    "# Optional extras, e.g. --name lab-07 --cpu-limit 50 --pause-on-battery\n"
    "NQ_ARGS=\n";

static const char readme[] =
    "nq volunteer bundle for the owner %s (server %s)\n"
    "\n"
    "  ca.pem      the server's CA certificate (public)\n"
    "  enrol.key   %s's enrolment key: a SECRET (mode 0600). Every machine enrolled with it\n"
    "              counts as %s's; keep it private and ask the operator for a new one\n"
    "              (nq-admin owner rekey) if it leaks.\n"
    "  client.env  the settings of the nq-client service: the server's address\n"
    "  install.sh  sets the service up from these files (needs root)\n"
    "\n"
    "With the package (Debian/Ubuntu):\n"
    "  sudo apt install ./nq-client_VERSION_ARCH.deb\n"
    "  sudo sh install.sh\n"
    "\n"
    "Without it (any machine with the nq-client program), from this directory:\n"
    "  nq-client --server %s --ca ca.pem --enrol-file enrol.key --name \"$(hostname -s)\"\n"
    "\n"
    "Windows: put nq-client-setup.exe in this folder and run it. It installs the programs,\n"
    "reads server.txt (the server's address), copies ca.pem and enrol.key into the\n"
    "volunteer's %%LOCALAPPDATA%%\\nq-client and starts the client at each log-on.\n";

int adm_bundle_write(const adm_bundle_t *b, const char *owner, const char *key) {
  char text[2048];
  int rc = secret_create(b->dir, "enrol.key", key);
  if (rc == 0) rc = nq_file_create(b->dir, "ca.pem", b->ca, b->ca_len, 0644);
  if (rc == 0) {
    snprintf(text, sizeof text, client_env, owner, b->address);
    rc = nq_file_create(b->dir, "client.env", text, strlen(text), 0644);
  }
  if (rc == 0) {
    snprintf(text, sizeof text, install_sh, owner);
    rc = nq_file_create(b->dir, "install.sh", text, strlen(text), 0755);
  }
  if (rc == 0) { /* the Windows installer's: the address alone, one line */
    snprintf(text, sizeof text, "%s\n", b->address);
    rc = nq_file_create(b->dir, "server.txt", text, strlen(text), 0644);
  }
  if (rc == 0) {
    snprintf(text, sizeof text, readme, owner, b->address, owner, owner, b->address);
    rc = nq_file_create(b->dir, "README.txt", text, strlen(text), 0644);
  }
  return rc;
}
