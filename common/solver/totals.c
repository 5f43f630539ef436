/* nq: exact 128-bit job totals. */
#include "nq/solver.h"
#include "nq/nq.h"

#include <string.h>

void nq_counts_add(nq_counts_t *a, const nq_counts_t *b) {
  a->c2 += b->c2;
  a->c4 += b->c4;
  a->c8 += b->c8;
  a->count1 += b->count1;
  a->nodes += b->nodes;
}

void nq_totals_add(nq_totals_t *t, const nq_counts_t *c) {
  t->c2 += c->c2;
  t->c4 += c->c4;
  t->c8 += c->c8;
  t->count1 += c->count1;
  t->nodes += c->nodes;
}

nq_u128 nq_totals_total(const nq_totals_t *t) {
  return 2 * t->c2 + 4 * t->c4 + 8 * t->c8 + t->count1;
}

nq_u128 nq_totals_unique(const nq_totals_t *t) {
  return t->c2 + t->c4 + t->c8 + t->count1;
}

char *nq_u128_str(nq_u128 v, char *buf) {
  char tmp[40];
  int i = 0;
  do {
    tmp[i++] = (char)('0' + (int)(v % 10));
    v /= 10;
  } while (v);
  for (int j = 0; j < i; j++) buf[j] = tmp[i - 1 - j];
  buf[i] = '\0';
  return buf;
}

int nq_u128_parse(const char *s, nq_u128 *out) {
  if (!s || !*s) return NQ_EINVAL;
  nq_u128 v = 0;
  const nq_u128 max = ~(nq_u128)0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return NQ_EINVAL;
    unsigned d = (unsigned)(*s - '0');
    if (v > (max - d) / 10) return NQ_EOVERFLOW;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}
