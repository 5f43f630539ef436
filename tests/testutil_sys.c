/* Helpers shared by the check suites: the processes, files and sockets of a test (testutil.c
 * has the solver's, which the Windows build's solver suites link alone). */
#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

const char *tu_bin_dir(void) {
  const char *d = getenv("NQ_BIN_DIR");
  return d && *d ? d : ".";
}

#define TU_TMPFS_MAGIC 0x01021994 /* statfs f_type of a tmpfs */

/* Where temporary directories go: $TMPDIR when set; else /dev/shm when it is a tmpfs with 2 GiB
 * free; else /tmp. The servers the suites start commit with synchronous=FULL, an fsync per
 * batch, and a disk-backed /tmp makes those a large share of a suite's time; no suite can tell
 * (a killed process loses no write either way; only a power cut would). tests/lib_e2e.sh
 * chooses the same way. */
static const char *tmp_base(void) {
  const char *base = getenv("TMPDIR");
  if (base && *base) return base;
  struct statfs sf;
  if (statfs("/dev/shm", &sf) == 0 && (unsigned long)sf.f_type == TU_TMPFS_MAGIC &&
      (unsigned long long)sf.f_bavail * (unsigned long long)sf.f_bsize >= (2ull << 30) &&
      access("/dev/shm", W_OK) == 0)
    return "/dev/shm";
  return "/tmp";
}

char *tu_tmpdir(const char *tag) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s/nq-%s-XXXXXX", tmp_base(), tag);
  if (!mkdtemp(buf)) return NULL;
  return strdup(buf);
}

void tu_rmtree(const char *dir) {
  /* refuse anything we did not make */
  if (!dir || (strncmp(dir, "/tmp/", 5) != 0 && strncmp(dir, "/dev/shm/nq-", 12) != 0)) return;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "rm -rf %s failed\n", dir);
}

int tu_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

double tu_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void tu_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int tu_tcp_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int tu_spawn(char *const argv[], const char *log) {
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid < 0 ? -1 : (int)pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test process */
  if (getppid() != parent) _exit(127);
  int fd = log ? open(log, O_WRONLY | O_CREAT | O_APPEND, 0644) : open("/dev/null", O_WRONLY);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
  }
  execv(argv[0], argv);
  _exit(127);
}
