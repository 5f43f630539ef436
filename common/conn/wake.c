/* nq: the wake channel (nq/wake.h). */
#include "nq/wake.h"

#include "nq/nq.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#ifdef _WIN32
#include <winsock2.h>
#include <ws2tcpip.h>
#else
#include <fcntl.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/eventfd.h>
#endif
#endif

#ifdef _WIN32
/* A connected pair over 127.0.0.1: a listener on an ephemeral port, one connect, one accept,
 * then the listener is closed. Winsock is started by libuv (uv_loop_init). */
int nq_wake_open(nq_wake_t *w) {
  memset(w, 0, sizeof *w);
  SOCKET l = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP), c = INVALID_SOCKET, a = INVALID_SOCKET;
  struct sockaddr_in sa;
  int len = sizeof sa;
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int ok = l != INVALID_SOCKET && bind(l, (struct sockaddr *)&sa, sizeof sa) == 0 &&
           listen(l, 1) == 0 && getsockname(l, (struct sockaddr *)&sa, &len) == 0;
  if (ok) c = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
  ok = ok && c != INVALID_SOCKET && connect(c, (struct sockaddr *)&sa, sizeof sa) == 0;
  if (ok) a = accept(l, NULL, NULL);
  ok = ok && a != INVALID_SOCKET;
  if (l != INVALID_SOCKET) closesocket(l);
  u_long nb = 1;
  ok = ok && ioctlsocket(a, FIONBIO, &nb) == 0 && ioctlsocket(c, FIONBIO, &nb) == 0;
  if (!ok) {
    if (a != INVALID_SOCKET) closesocket(a);
    if (c != INVALID_SOCKET) closesocket(c);
    return NQ_EIO;
  }
  w->rd = a;
  w->wr = c;
  w->open = 1;
  return 0;
}

void nq_wake_send(nq_wake_t *w) {
  char one = 1;
  send(w->wr, &one, 1, 0); /* WSAEWOULDBLOCK: full of wakes the loop has not read */
}

int nq_wake_poll_init(uv_loop_t *loop, uv_poll_t *p, nq_wake_t *w) {
  return uv_poll_init_socket(loop, p, w->rd);
}

void nq_wake_drain(nq_wake_t *w) {
  char buf[64];
  while (recv(w->rd, buf, sizeof buf, 0) > 0) {
  }
}

void nq_wake_close(nq_wake_t *w) {
  if (!w->open) return;
  closesocket(w->rd);
  closesocket(w->wr);
  w->open = 0;
}
#else
/* An eventfd on Linux (one fd, a counter), else a pipe. */
int nq_wake_open(nq_wake_t *w) {
  memset(w, 0, sizeof *w);
#if defined(__linux__)
  w->wr = w->rd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (w->rd < 0) return NQ_EIO;
#else
  int fd[2];
  if (pipe(fd) != 0) return NQ_EIO;
  for (int i = 0; i < 2; i++) {
    fcntl(fd[i], F_SETFL, fcntl(fd[i], F_GETFL) | O_NONBLOCK);
    fcntl(fd[i], F_SETFD, FD_CLOEXEC);
  }
  w->rd = fd[0];
  w->wr = fd[1];
#endif
  w->open = 1;
  return 0;
}

void nq_wake_send(nq_wake_t *w) {
  uint64_t one = 1;
  ssize_t n;
  do n = write(w->wr, &one, sizeof one);
  while (n < 0 && errno == EINTR);
  /* EAGAIN: the counter (or the pipe) is full of wakes the loop has not read: it will wake. */
}

int nq_wake_poll_init(uv_loop_t *loop, uv_poll_t *p, nq_wake_t *w) {
  return uv_poll_init(loop, p, w->rd);
}

void nq_wake_drain(nq_wake_t *w) {
  uint64_t buf[16];
  while (read(w->rd, buf, sizeof buf) > 0 && w->rd != w->wr) {
  }
}

void nq_wake_close(nq_wake_t *w) {
  if (!w->open) return;
  if (w->rd != w->wr) close(w->rd);
  close(w->wr);
  w->open = 0;
}
#endif
