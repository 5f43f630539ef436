/* nq: the closed list of solver versions (nq/versions.h). */
#include "nq/versions.h"

#include <string.h>

#include "nq/solver.h"

typedef struct ver_s {
  const char *name;
  int tree, from, below;
} ver_t;

#define VER_ROW(name, tree, from, below) {name, tree, from, below},
static const ver_t versions[] = {NQ_SOLVER_VERSIONS_MAP(VER_ROW)};
#undef VER_ROW

int nq_solver_tree(const char *version, int n) {
  if (!version) return 0;
  for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++)
    if (!strcmp(version, versions[i].name)) return n >= versions[i].from ? versions[i].tree
                                                                         : versions[i].below;
  return 0;
}

int nq_solver_known(const char *version) { return nq_solver_tree(version, 1) != 0; }

int nq_solver_same_tree(const char *a, const char *b, int n) {
  int ta = nq_solver_tree(a, n);
  return ta != 0 && ta == nq_solver_tree(b, n);
}
