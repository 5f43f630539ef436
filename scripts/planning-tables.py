#!/usr/bin/env python3
"""docs/planning.md's generated tables, from the current solver (nq-solve), so they cannot go
stale unnoticed.

Each table sits in docs/planning.md between the lines
    <!-- planning-tables: NAME -->
    <!-- planning-tables: end -->
and holds only figures that are the same on every machine for a given solver version (estimates
and plans are deterministic for a seed: docs/planning.md, "Reproducible"); times are measured
by hand and stay outside the blocks.

usage: scripts/planning-tables.py BUILD [--write | --check] [TABLE ...]
  (no mode)  print the tables
  --write    replace the blocks in docs/planning.md
  --check    exit 1, with a diff, when a block differs from what the solver gives now
  TABLE      record, plans, fleet (default: all). `record` takes about a second; `plans` and
             `fleet` plan N=27 and N=28 in full: minutes of one core.
"""
import difflib
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "planning.md")
YEAR = 31557600.0
REF = 1e9  # NQ_REF_NODES_PER_SEC
FLEET = "avx2=10000,avx512=2000,quorum=2,spot=0.02,duty=0.5"
PLANS = [(27, 3600), (27, 7200), (27, 14400), (28, 7200), (28, 28800)]


def solve(build, *args):
    out = subprocess.run([os.path.join(build, "nq-solve"), *map(str, args), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def num(v):
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def dur(s):
    for lim, div, unit in ((120, 1, "s"), (7200, 60, "min"), (3 * 86400, 3600, "h"),
                           (2 * YEAR, 86400, "days")):
        if s < lim:
            return f"{s / div:.3g} {unit}"
    return f"{s / YEAR:.3g} years"


def record(build):
    rows = ["| N | nodes | 1 SE | reference core-years (1e9 nodes/s) |",
            "| --- | --- | --- | --- |"]
    for n in range(21, 29):
        r = solve(build, n, "--estimate", "--depth", 3, "--effort", 64, "--calibrate", 0)
        years = r["nodes"] / REF / YEAR
        rows.append(f"| {n} | {r['nodes']:.4g} | {100 * r['se'] / r['nodes']:.2f}% | "
                    f"{num(years) if years >= 0.01 else ''} |")
    return rows


_plans = {}


def plan(build, n, s):
    if (n, s) not in _plans:
        _plans[(n, s)] = solve(build, n, "--plan", "--unit-seconds", s, "--fleet", FLEET)
    return _plans[(n, s)]


def plan_table(build, header, row):
    """A table with one row per plan of PLANS: row(n, s, plan json) -> cells."""
    rows = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for n, s in PLANS:
        rows.append("| " + " | ".join([f"N={n}, S={s}", *row(plan(build, n, s))]) + " |")
    return rows


def plans(build):
    def row(p):
        u, depths = p["unit"], sorted(int(d) for d in p["units_by_depth"])
        return [f"{p['units']:,}", f"{depths[0]}-{depths[-1]}", f"{p['internal_nodes']:,}",
                dur(u["median"] / REF), dur(u["p90"] / REF),
                f"{dur(u['max'] / REF)} ({p['unit_max_text']})", f"{p['outliers']:,}"]
    return plan_table(build, ["plan", "units", "depths", "split nodes", "median unit", "p90",
                              "largest (estimate)", "units above 4S"], row)


def fleet(build):
    def row(p):
        f = p["fleet"]
        return [f"{p['est_nodes']:.4g}", f"{f['replicas']:.3g}", str(f["diverse_kernels"]),
                num(f["ref_core_years"]), num(f["core_seconds"] / 31557600),
                f"{dur(f['calendar_seconds'])} ({dur(f['tail_seconds'])})",
                dur(f["largest_unit_seconds_slowest"])]
    return plan_table(build, ["plan", "nodes (estimate)", "replicas", "kernel rule",
                              "reference core-years", "the fleet's core-years",
                              "calendar time (of it the tail)", "largest unit on one AVX2 core"],
                      row)


TABLES = {"record": record, "plans": plans, "fleet": fleet}
BLOCK = re.compile(r"(<!-- planning-tables: (\w+) -->\n)(.*?)(<!-- planning-tables: end -->)",
                   re.S)


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    build, args = args[0], args[1:]
    mode = args.pop(0) if args and args[0] in ("--write", "--check") else None
    names = args or list(TABLES)
    for t in names:
        if t not in TABLES:
            sys.exit(f"planning-tables: unknown table '{t}' ({', '.join(TABLES)})")
    made = {t: "\n".join(TABLES[t](build)) + "\n" for t in names}
    if mode is None:
        for t in names:
            print(f"<!-- planning-tables: {t} -->\n{made[t]}<!-- planning-tables: end -->")
        return 0
    with open(DOC) as fh:
        doc = fh.read()
    found, bad = set(), 0

    def repl(m):
        nonlocal bad
        t = m.group(2)
        if t not in made:
            return m.group(0)
        found.add(t)
        if m.group(3) != made[t]:
            bad += 1
            if mode == "--check":
                sys.stdout.writelines(difflib.unified_diff(
                    m.group(3).splitlines(True), made[t].splitlines(True),
                    f"docs/planning.md ({t})", f"nq-solve now ({t})"))
        return m.group(1) + made[t] + m.group(4)

    new = BLOCK.sub(repl, doc)
    missing = set(names) - found
    if missing:
        sys.exit(f"planning-tables: docs/planning.md has no block for {', '.join(sorted(missing))}")
    if mode == "--write":
        with open(DOC, "w") as fh:
            fh.write(new)
        print(f"planning-tables: {bad} of {len(names)} table(s) rewritten in docs/planning.md")
        return 0
    if bad:
        print(f"planning-tables: {bad} table(s) in docs/planning.md differ from nq-solve's "
              "figures: run scripts/planning-tables.py BUILD --write")
        return 1
    print(f"planning-tables: {', '.join(names)}: docs/planning.md matches nq-solve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
