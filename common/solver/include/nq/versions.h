/* nq: the solver versions nq knows -- a closed list (docs/design.md, "Solver versions").
 *
 * A result names the solver version that computed it. Its counts (c2, c4, c8) are the same under
 * every version; its node count is the size of the search tree that version walks, which differs
 * between versions that prune differently. So each version is known with the tree it walks at a
 * given N: two versions compare node counts only where they walk the same tree. A name that is
 * not in this list is no solver nq knows: the server refuses such a result (bad_result) and
 * nq-verify refuses a file that names one, so a made-up version cannot carry made-up nodes.
 *
 * Add a line when a version changes the tree (a new pruning rule), with the trees it shares. */
#ifndef NQ_VERSIONS_H
#define NQ_VERSIONS_H

/* name, the tree it walks from N = `from` on, and the tree below that N. Trees are numbered:
 *   1  every node (nq-solver-1)
 *   2  no search below a dead node (nq-solver-2)
 *   3  ... nor below a node blocked on rows N-5 and N-4 (nq-solver-3 at every N, nq-solver-4
 *      below N = 20)
 *   4  ... nor below one blocked on rows N-6..N-4 from N = 20 on (nq-solver-4) */
#define NQ_SOLVER_VERSIONS_MAP(X)                                                                  \
  X("nq-solver-1", 1, 0, 1)                                                                        \
  X("nq-solver-2", 2, 0, 2)                                                                        \
  X("nq-solver-3", 3, 0, 3)                                                                        \
  X("nq-solver-4", 4, 20, 3)

/* The tree `version` walks at board size n (>= 1), or 0 for a version nq does not know. */
int nq_solver_tree(const char *version, int n);
/* 1 when version is in the list. */
int nq_solver_known(const char *version);
/* 1 when a and b are known and walk the same tree at n: their node counts must be equal. */
int nq_solver_same_tree(const char *a, const char *b, int n);

#endif
