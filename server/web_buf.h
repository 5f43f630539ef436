/* nq-server: a growing text buffer for the HTTP responses (web.c, web_page.c).
 *
 * Appends never fail visibly: an allocation failure marks the buffer, and web_buf_take then
 * returns NULL, so a builder appends freely and checks once at the end. */
#ifndef SRV_WEB_BUF_H
#define SRV_WEB_BUF_H

#include <stddef.h>

typedef struct web_buf_s {
  char *p;
  size_t len, cap;
  int failed;
} web_buf_t;

void web_buf_init(web_buf_t *b);
void web_buf_printf(web_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s with &, <, >, " and ' escaped for HTML text and attribute values. */
void web_buf_html(web_buf_t *b, const char *s);
/* The text (malloc'd, NUL-terminated; *len without the NUL) or NULL if an append failed; the
 * buffer is empty afterwards. */
char *web_buf_take(web_buf_t *b, size_t *len);

#endif
