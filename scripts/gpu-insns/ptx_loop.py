"""PTX instructions of the kernel nq_run and of its loops, from clang's nvptx64 output.

A loop is a span between a label and a backward branch to it; its instructions are the PTX lines
inside that span, labels, directives and braces left out: a static size, every path of the loop
counted once. Printed: the widest loop (the outermost in the layout) and each search loop, the
loops that take the stack's top level with clz (the queue kernel's walks, one per part).

    python3 ptx_loop.py FILE.ptx
"""
import re
import sys

lines = open(sys.argv[1]).read().split("\n")
is_ins = lambda s: bool(re.match(r"\s+(@!?%p\d+\s+)?[a-z][a-z0-9_.]*", s)) and not s.strip().startswith("//")
start = next(i for i, s in enumerate(lines) if ".entry" in s and "nq_run" in s)
labels = {}
for i, s in enumerate(lines[start:], start):
    m = re.match(r"^(\$?L\w+):", s)
    if m:
        labels[m.group(1)] = i
loops = {}
for i, s in enumerate(lines[start:], start):
    m = re.search(r"\bbra(\.uni)?\s+(\$?L\w+);", s)
    if m and m.group(2) in labels and labels[m.group(2)] < i:
        j = labels[m.group(2)]
        loops[j] = max(loops.get(j, i), i)
size = lambda a, b: sum(is_ins(s) for s in lines[a:b + 1])
total = sum(is_ins(s) for s in lines[start:])
wide = max(loops.items(), key=lambda x: x[1] - x[0])
out = ["ptx: nq_run %d instructions, widest loop %d" % (total, size(*wide))]
walks = [(a, b) for a, b in loops.items() if any("clz.b32" in s for s in lines[a:b + 1])]
walks = [w for w in walks if not any(o != w and w[0] <= o[0] and o[1] <= w[1] and any("clz.b32" in s for s in lines[o[0]:o[1] + 1]) for o in walks)]
for a, b in sorted(walks):
    out.append("search loop %d" % size(a, b))
print(", ".join(out))
