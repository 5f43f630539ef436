#!/usr/bin/env python3
"""The layering check (docs/design.md "Module map", docs/store.md "Layers"): run by ctest as
check_layers after a build.

    scripts/check-layers.py BUILD_DIR     check the objects and includes of that build
    scripts/check-layers.py --selftest    check the rules themselves on made-up objects

It reads what the compiler and the linker see, not the C text: compile_commands.json names every
source and its object; `nm` lists what each object defines and what it leaves undefined, and an
undefined symbol is resolved to the object of ours that defines it; `cc -MM` with the source's own
flags lists every header it includes, transitively. The rules:

  common/   util uses no other library of ours; solver uses util; net uses util and solver.
            No file of common/ includes a header of server/, client/, admin/, solve/ or tools/.
  the store server/store*.c is layered (STORE_LAYERS below, the table store.h documents): a store
            file may use (call, or include the header of) the store files of the layers below its
            own, never one of its own layer or above, and nothing else of server/ but the value
            modules of STORE_MAY_USE. Headers of server/include/nq/ (the library's public value
            types) may be included. A store*.c missing from the table is an error: give it a layer.
            store_int.h, the bottom layer's inside, is included by store files only (the check
            suites may, to reach the raw connection; they are not checked).
"""
import json
import os
import shlex
import subprocess
import sys

# The store's layers (store.h, docs/store.md). A file uses only files of lower layers.
STORE_LAYERS = {
    "store": 0,
    "store_jobs": 1,
    "store_work": 2,
    "store_clients": 3, "store_trust": 3, "store_trusted": 3, "store_kernels": 3,
    "store_stall": 3, "store_queue": 3, "store_public": 3, "store_export": 3,
    "store_audit": 3, "store_outage": 3, "store_backup": 3, "store_signup": 3,
    "store_api": 4,
}
# Modules of server/ below the store: they hold values and checks, no store (checked too).
STORE_MAY_USE = {"job_opts"}
# common/'s libraries and what each may use.
COMMON_MAY_USE = {"util": {"util"}, "solver": {"util", "solver"}, "net": {"util", "solver", "net"}}
PROGRAM_DIRS = ("server", "client", "admin", "solve", "tools")


def group_of(src, root):
    """('common', lib) / ('store', name) / ('server', name) / (dir, name) / None for a source."""
    rel = os.path.relpath(src, root)
    parts = rel.split(os.sep)
    name = os.path.splitext(parts[-1])[0]
    if parts[0] == "common" and len(parts) >= 2 and parts[1] in COMMON_MAY_USE:
        return ("common", parts[1])
    if parts[0] == "server" and len(parts) == 2:
        return ("store", name) if name == "store" or name.startswith("store_") else ("server", name)
    if parts[0] in PROGRAM_DIRS:
        return (parts[0], name)
    if parts[0] == "build" or "gen" in parts:  # generated sources (the GPU kernel text)
        return None
    return None


def allowed(user, used):
    """None if `user` may use `used` (both groups), else the reason it may not."""
    if user == used:
        return None
    ukind, uname = user
    if ukind == "common":
        if used[0] == "common" and used[1] in COMMON_MAY_USE[uname]:
            return None
        return "common/%s may use only %s" % (uname, ", ".join(sorted(COMMON_MAY_USE[uname])))
    if ukind == "store":
        if used[0] == "common":
            return None
        if used[0] == "store":
            lu, lv = STORE_LAYERS.get(uname), STORE_LAYERS.get(used[1])
            if lu is None or lv is None:
                return "not in the store's layer table"
            if lv < lu:
                return None
            return "layer %d may use only layers below it (%s is layer %d)" % (lu, used[1], lv)
        if used[0] == "server" and used[1] in STORE_MAY_USE:
            return None
        return "the store uses nothing of server/ above it"
    if ukind == "server" and uname in STORE_MAY_USE:
        if used[0] == "common":
            return None
        return "a value module below the store uses only common/"
    return None  # programs: not layered here


def check_symbols(objects, defs_of):
    """objects: {obj: (group, undefined symbols)}; defs_of: {symbol: {group, ...}}.
    Returns the violations as lines."""
    bad = []
    for obj, (grp, undef) in sorted(objects.items()):
        for sym in sorted(undef):
            for used in sorted(defs_of.get(sym, ())):
                why = allowed(grp, used)
                if why:
                    bad.append("%s/%s calls %s, defined in %s/%s: %s" %
                               (grp[0], grp[1], sym, used[0], used[1], why))
    return bad


def header_group(path, root):
    rel = os.path.relpath(path, root)
    parts = rel.split(os.sep)
    if parts[0] == "common" and len(parts) >= 2 and parts[1] in COMMON_MAY_USE:
        return ("common", parts[1])
    if parts[0] == "server" and len(parts) >= 3 and parts[1] == "include":
        return ("server-include", parts[-1])
    if parts[0] == "server" and len(parts) == 2:
        name = os.path.splitext(parts[1])[0]
        if name == "store_int":
            return ("store-int", name)
        return ("store", name) if name == "store" or name.startswith("store_") else ("server", name)
    if parts[0] in PROGRAM_DIRS:
        return (parts[0], parts[-1])
    return None  # system and third-party headers


def check_includes(src_group, headers):
    bad = []
    for h, hg in headers:
        if hg is None:
            continue
        if hg[0] == "store-int":  # the bottom layer's inside: the store's files only
            why = None if src_group[0] == "store" else "store_int.h is the store's inside"
        elif src_group[0] == "common" and hg[0] == "server-include":
            why = "common/ includes nothing of the programs"
        elif hg[0] == "server-include":  # the server library's public value types
            why = None
        elif src_group[0] == "common" and hg[0] in PROGRAM_DIRS + ("store",):
            why = "common/ includes nothing of the programs"
        else:
            why = allowed(src_group, hg)
        if why:
            bad.append("%s/%s includes %s: %s" % (src_group[0], src_group[1], h, why))
    return bad


def compile_args(entry):
    args = entry.get("arguments") or shlex.split(entry["command"])
    out, cc, skip = None, [], False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a == "-o":
            out = args[i + 1]
            skip = True
            continue
        if a in ("-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD") or a.startswith("-fsanitize") or a.startswith("-O"):
            continue
        cc.append(a)
    return out, cc


def nm(obj):
    r = subprocess.run(["nm", obj], capture_output=True, text=True, check=True)
    defined, undef = set(), set()
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == "U":
            undef.add(f[1])
        elif len(f) == 3 and f[1] in "TDBRCVW":
            defined.add(f[2])
    return defined, undef


def deps(directory, cc, src):
    r = subprocess.run(cc + ["-MM", "-MG", src], cwd=directory, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("check-layers: cc -MM %s failed:\n%s" % (src, r.stderr))
    text = r.stdout.replace("\\\n", " ")
    files = text.split(":", 1)[1].split() if ":" in text else []
    return [os.path.normpath(os.path.join(directory, f)) for f in files[1:]]


def run(build):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    objects, defs_of, bad = {}, {}, []
    seen_src, nincl = set(), 0
    for e in entries:
        src = os.path.normpath(os.path.join(e["directory"], e["file"]))
        grp = group_of(src, root)
        out, cc = compile_args(e)
        if grp is None or out is None or "nq-client-test.dir" in out:
            continue
        obj = os.path.normpath(os.path.join(e["directory"], out))
        if not os.path.exists(obj):
            raise SystemExit("check-layers: %s is not built (build first)" % obj)
        defined, undef = nm(obj)
        for s in defined:
            defs_of.setdefault(s, set()).add(grp)
        layered = grp[0] in ("common", "store") or (grp[0] == "server" and grp[1] in STORE_MAY_USE)
        # The rest of server/ is not layered, but must not reach into the store's inside.
        if grp[0] == "server" and not layered and src not in seen_src:
            seen_src.add(src)
            hs = [(os.path.relpath(h, root), header_group(h, root))
                  for h in deps(e["directory"], cc, src)]
            nincl += len(hs)
            bad += check_includes(grp, [h for h in hs if h[1] and h[1][0] == "store-int"])
        if grp[0] == "store" and grp[1] not in STORE_LAYERS:
            bad.append("server/%s.c is not in the store's layer table (scripts/check-layers.py, "
                       "store.h): give it a layer" % grp[1])
        if layered:
            objects[obj] = (grp, undef)
            if src not in seen_src:
                seen_src.add(src)
                hs = [(os.path.relpath(h, root), header_group(h, root))
                      for h in deps(e["directory"], cc, src)]
                nincl += len(hs)
                bad += check_includes(grp, hs)
    bad += check_symbols(objects, defs_of)
    for line in sorted(set(bad)):
        print("check-layers: " + line)
    if bad:
        print("check-layers: %d violation(s) of the layers (docs/design.md, docs/store.md)" % len(set(bad)))
        return 1
    nrefs = sum(len(u) for _, u in objects.values())
    print("check-layers: ok: %d layered objects, %d undefined symbols resolved, %d includes" %
          (len(objects), nrefs, nincl))
    return 0


def selftest():
    """The rules on made-up objects: each violation kind must be found, the allowed uses not."""
    g = {"base": ("store", "store"), "jobs": ("store", "store_jobs"), "work": ("store", "store_work"),
         "trust": ("store", "store_trust"), "stall": ("store", "store_stall"),
         "api": ("store", "store_api"), "sched": ("server", "sched"), "opts": ("server", "job_opts"),
         "util": ("common", "util"), "solver": ("common", "solver"), "net": ("common", "net")}
    defs_of = {"f_" + k: {v} for k, v in g.items()}
    cases = [  # (user, symbol it calls, violation expected)
        ("base", "f_jobs", True), ("jobs", "f_work", True), ("work", "f_jobs", False),
        ("trust", "f_stall", True), ("trust", "f_work", False), ("api", "f_trust", False),
        ("work", "f_sched", True), ("base", "f_util", False), ("stall", "f_opts", False),
        ("opts", "f_base", True), ("util", "f_solver", True), ("solver", "f_net", True),
        ("net", "f_solver", False), ("solver", "f_util", False), ("util", "f_sched", True),
        ("sched", "f_api", False)]
    fails = 0
    for user, sym, expect in cases:
        got = bool(check_symbols({"x.o": (g[user], {sym})}, defs_of))
        if got != expect:
            print("check-layers selftest: %s calling %s: expected %s, got %s" %
                  (user, sym, "a violation" if expect else "none", "one" if got else "none"))
            fails += 1
    inc = [(("store", "store"), ("store", "store_jobs"), True),
           (("store", "store_trust"), ("store", "store_work"), False),
           (("store", "store_audit"), ("server-include", "admin_db.h"), False),
           (("store", "store_work"), ("server", "srv"), True),
           (("store", "store_trust"), ("store-int", "store_int"), False),
           (("server", "sched"), ("store-int", "store_int"), True),
           (("common", "util"), ("server-include", "job_opts.h"), True),
           (("common", "net"), ("common", "solver"), False),
           (("common", "solver"), ("common", "net"), True)]
    for src, hg, expect in inc:
        got = bool(check_includes(src, [("h", hg)]))
        if got != expect:
            print("check-layers selftest: %s including %s: expected %s" % (src, hg, expect))
            fails += 1
    if fails:
        return 1
    print("check-layers selftest: ok (%d cases)" % (len(cases) + len(inc)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--selftest":
        sys.exit(selftest())
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rc = selftest()
    sys.exit(rc or run(sys.argv[1]))
