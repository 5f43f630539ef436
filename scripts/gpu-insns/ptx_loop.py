"""PTX instructions of the kernel nq_run and of its main loop, from clang's nvptx64 output.

The main loop is the widest span between a label and a backward branch to it (the outermost
loop in the layout); its instructions are the PTX lines inside that span, labels, directives
and braces left out. A static size: every path of the loop counted once.

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
best = None
for i, s in enumerate(lines[start:], start):
    m = re.search(r"\bbra(\.uni)?\s+(\$?L\w+);", s)
    if m and m.group(2) in labels and labels[m.group(2)] < i:
        j = labels[m.group(2)]
        if best is None or i - j > best[1] - best[0]:
            best = (j, i)
total = sum(is_ins(s) for s in lines[start:])
loop = sum(is_ins(s) for s in lines[best[0]:best[1] + 1]) if best else 0
print("ptx: nq_run %d instructions, main loop %d (lines %d-%d)" % (total, loop, best[0] + 1, best[1] + 1))
