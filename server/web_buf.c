/* nq-server: the growing text buffer (see web_buf.h). */
#include "web_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void web_buf_init(web_buf_t *b) {
  memset(b, 0, sizeof *b);
}

static int reserve(web_buf_t *b, size_t more) {
  if (b->failed) return -1;
  if (b->len + more + 1 <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + more + 1) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->failed = 1;
    return -1;
  }
  b->p = p;
  b->cap = cap;
  return 0;
}

void web_buf_printf(web_buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    b->failed = 1;
    return;
  }
  if (reserve(b, (size_t)n) != 0) return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void web_buf_html(web_buf_t *b, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '&': web_buf_printf(b, "&amp;"); break;
    case '<': web_buf_printf(b, "&lt;"); break;
    case '>': web_buf_printf(b, "&gt;"); break;
    case '"': web_buf_printf(b, "&quot;"); break;
    case '\'': web_buf_printf(b, "&#39;"); break;
    default: web_buf_printf(b, "%c", *s);
    }
  }
}

char *web_buf_take(web_buf_t *b, size_t *len) {
  char *p = b->failed ? NULL : b->p;
  if (!p && !b->failed && reserve(b, 0) == 0) p = b->p; /* an empty text */
  if (b->failed) free(b->p);
  *len = p ? b->len : 0;
  if (p) p[b->len] = '\0';
  web_buf_init(b);
  return p;
}
