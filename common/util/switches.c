/* nq: the switchboard (nq/switches.h): the one place that reads an NQ_* environment variable. */
#include "nq/switches.h"

#include <stdlib.h>

static const struct {
  const char *name, *readers, *what;
  nq_switch_kind_t kind;
} table[NQ_SW_COUNT] = {
#define NQ_SWITCH_ROW(id, k, r, w) [NQ_SW_##id] = {"NQ_" #id, r, w, NQ_SWITCH_##k},
    NQ_SWITCH_MAP(NQ_SWITCH_ROW)
#undef NQ_SWITCH_ROW
};

static int known(nq_switch_t sw) { return (int)sw >= 0 && sw < NQ_SW_COUNT; }

const char *nq_switch_get(nq_switch_t sw) {
  if (!known(sw)) return NULL;
  const char *v = getenv(table[sw].name);
  return v && *v ? v : NULL;
}

const char *nq_switch_name(nq_switch_t sw) { return known(sw) ? table[sw].name : "?"; }
nq_switch_kind_t nq_switch_kind(nq_switch_t sw) { return known(sw) ? table[sw].kind : NQ_SWITCH_TUNING; }
const char *nq_switch_readers(nq_switch_t sw) { return known(sw) ? table[sw].readers : "?"; }
const char *nq_switch_what(nq_switch_t sw) { return known(sw) ? table[sw].what : "?"; }
