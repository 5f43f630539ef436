#!/usr/bin/env python3
"""The layering check (docs/design.md "Module map", docs/store.md "Layers"): run by ctest as
check_layers after a build.

    scripts/check-layers.py BUILD_DIR     check the objects and includes of that build
    scripts/check-layers.py --selftest    check the rules themselves on made-up objects

It reads what the compiler and the linker see, not the C text: compile_commands.json names every
source and its object; `nm` lists what each object defines and what it leaves undefined, and an
undefined symbol is resolved to the object of ours that defines it; `cc -MM` with the source's own
flags lists every header it includes, transitively. The rules:

  common/   util uses no other library of ours; solver uses util; net uses util and solver; conn
            (the event-loop connection) uses the three. No file of common/ includes a header of
            server/, client/, admin/, solve/ or tools/.
  server/   three floors, each using only the floors below it and common/:
            the store (server/store) -- the only SQL -- uses common/ but conn, and is itself
              layered (STORE_LAYERS below, the table store.h documents): a store file may use
              (call, or include the header of) the store files of the layers below its own,
              never one of its own layer or above. A store*.c missing from the table is an error.
              store_int.h (server/store/internal), the bottom layer's inside, is included by
              store files only (the check suites may, to reach the raw connection; not checked).
            the core (server/core: rules, admin API, views, backup, export) uses the store and
              common/ but conn: no event loop, nothing of the daemon.
            the daemon (server/*.c) uses everything below it but store_int.h.
  admin/    nq-admin uses the core and the store (and common/ but conn), nothing of the daemon.
  client/   nq-client's files are layered too (CLIENT_LAYERS below, client/ctx.h's map of the
            daemon's rooms): a client file calls only the client files of the layers below its
            own, so no call runs back up and no circle of calls forms among them. (Calls only:
            the daemon's rooms share one context header.) A client *.c missing from the table is
            an error.
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
    "store_clients": 3, "store_owners": 3, "store_trusted": 3, "store_kernels": 3,
    "store_stall": 3, "store_queue": 3, "store_public": 3, "store_export": 3,
    "store_audit": 3, "store_outage": 3, "store_backup": 3, "store_signup": 3, "store_community": 3,
    "store_api": 4,
}
# nq-client's files (client/ctx.h): a file calls only files of lower layers.
CLIENT_LAYERS = {
    "fault": 0, "journal": 0, "worker": 0, "receipts": 0,
    "cli_opts": 1,
    "status": 2,
    "ctx": 3,
    "report": 4,
    "lanes": 5,
    "session": 6,
    "cli": 7,
    "client_main": 8,
}

# The folders whose files call only files of a lower layer of their own table: the table, whose
# table it is (for the message), the refusal.
LAYERED = {
    "store": (STORE_LAYERS, "store's", "layer %d may use only layers below it (%s is layer %d)"),
    "client": (CLIENT_LAYERS, "client's",
               "client layer %d calls only layers below it (%s is layer %d)"),
}
# common/'s libraries and what each may use.
COMMON_MAY_USE = {"util": {"util"}, "solver": {"util", "solver"},
                  "net": {"util", "solver", "net"}, "conn": {"util", "solver", "net", "conn"}}
PROGRAM_DIRS = ("server", "client", "admin", "solve", "tools")
# server/'s floors, bottom up; a floor uses only the floors below it. The store's public value
# headers (server/store/include) belong to the store's floor.
FLOOR = {"store": 1, "store-pub": 1, "core": 2, "server": 3}
FLOOR_NAME = {1: "the store", 2: "the core", 3: "the daemon"}
# Who runs no event loop: these may not use common/conn (nq-admin links no libuv).
NO_LOOP = ("store", "core", "admin")


def group_of(src, root):
    """The group of a source or header: ('common', lib), ('store', name), ('store-int', name),
    ('store-pub', name), ('core', name), ('server', name) for the daemon, (dir, name) for the
    other programs, or None (system, third-party and generated files)."""
    rel = os.path.relpath(src, root)
    parts = rel.split(os.sep)
    name = os.path.splitext(parts[-1])[0]
    if parts[0] == "common" and len(parts) >= 2 and parts[1] in COMMON_MAY_USE:
        return ("common", parts[1])
    if parts[0] == "server" and len(parts) >= 3 and parts[1] == "store":
        if parts[2] == "internal":
            return ("store-int", name)
        if parts[2] == "include":
            return ("store-pub", name)
        return ("store", name)
    if parts[0] == "server" and len(parts) >= 3 and parts[1] == "core":
        return ("core", name)
    if parts[0] == "server" and len(parts) == 2:
        return ("server", name)
    if parts[0] in PROGRAM_DIRS[1:]:
        return (parts[0], name)
    return None


def allowed(user, used):
    """None if `user` may use `used` (both groups), else the reason it may not."""
    ukind, uname = user
    vkind = used[0]
    if vkind == "store-int":
        return None if ukind == "store" else "store_int.h is the store's inside"
    if user == used:
        return None
    if ukind == "common":
        if vkind == "common" and used[1] in COMMON_MAY_USE[uname]:
            return None
        return "common/%s may use only %s" % (uname, ", ".join(sorted(COMMON_MAY_USE[uname])))
    if vkind == "common":
        if used[1] == "conn" and ukind in NO_LOOP:
            return "%s runs no event loop (common/conn)" % (FLOOR_NAME.get(FLOOR.get(ukind)) or ukind)
        return None
    if ukind == vkind and ukind in LAYERED:
        table, whose, rule = LAYERED[ukind]
        lu, lv = table.get(uname), table.get(used[1])
        if lu is None or lv is None:
            return "not in the %s layer table" % whose
        if lv < lu:
            return None
        return rule % (lu, used[1], lv)
    if ukind == vkind:  # a floor or a program within itself
        return None
    if ukind in FLOOR and vkind in FLOOR:
        if FLOOR[vkind] <= FLOOR[ukind]:
            return None
        return "%s uses nothing of %s above it" % (FLOOR_NAME[FLOOR[ukind]], FLOOR_NAME[FLOOR[vkind]])
    if ukind == "admin":
        if vkind == "server":
            return "nq-admin uses the core and the store, not the daemon"
        return None
    if vkind in FLOOR or vkind in PROGRAM_DIRS:
        return "%s/ uses nothing of %s" % (ukind, vkind)
    return None


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


def check_includes(src_group, headers):
    bad = []
    for h, hg in headers:
        if hg is None or (src_group[0] == "client" and hg[0] == "client"):
            continue  # (the client's layers are checked on calls)
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
        if grp[0] == "client" and grp[1] not in CLIENT_LAYERS:
            bad.append("client/%s.c is not in the client's layer table (scripts/check-layers.py, "
                       "client/ctx.h): give it a layer" % grp[1])
        if grp[0] == "store" and grp[1] not in STORE_LAYERS:
            bad.append("server/store/%s.c is not in the store's layer table (scripts/check-layers.py, "
                       "store.h): give it a layer" % grp[1])
        objects[obj] = (grp, undef)
        if src not in seen_src:
            seen_src.add(src)
            hs = [(os.path.relpath(h, root), group_of(h, root))
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
         "owners": ("store", "store_owners"), "stall": ("store", "store_stall"),
         "api": ("store", "store_api"), "sched": ("core", "sched"), "admin_api": ("core", "admin_api"),
         "srv": ("server", "srv"), "web": ("server", "web"), "adm": ("admin", "remote"),
         "cli": ("client", "cli"), "session": ("client", "session"), "lanes": ("client", "lanes"),
         "report": ("client", "report"), "ctx": ("client", "ctx"), "util": ("common", "util"), "solver": ("common", "solver"),
         "net": ("common", "net"), "conn": ("common", "conn")}
    defs_of = {"f_" + k: {v} for k, v in g.items()}
    cases = [  # (user, symbol it calls, violation expected)
        ("base", "f_jobs", True), ("jobs", "f_work", True), ("work", "f_jobs", False),
        ("owners", "f_stall", True), ("owners", "f_work", False), ("api", "f_owners", False),
        ("work", "f_sched", True), ("base", "f_util", False), ("api", "f_srv", True),
        ("sched", "f_api", False), ("sched", "f_srv", True), ("admin_api", "f_web", True),
        ("sched", "f_admin_api", False), ("srv", "f_sched", False), ("srv", "f_base", False),
        ("web", "f_admin_api", False), ("adm", "f_admin_api", False), ("adm", "f_api", False),
        ("adm", "f_srv", True), ("adm", "f_conn", True), ("sched", "f_conn", True),
        ("base", "f_conn", True), ("srv", "f_conn", False), ("cli", "f_conn", False),
        ("cli", "f_sched", True), ("util", "f_solver", True), ("solver", "f_net", True),
        ("net", "f_conn", True), ("conn", "f_net", False), ("net", "f_solver", False),
        ("solver", "f_util", False), ("util", "f_sched", True),
        ("cli", "f_session", False), ("session", "f_lanes", False), ("lanes", "f_report", False),
        ("report", "f_ctx", False), ("lanes", "f_cli", True), ("session", "f_cli", True),
        ("report", "f_lanes", True), ("ctx", "f_report", True), ("lanes", "f_session", True)]
    fails = 0
    for user, sym, expect in cases:
        got = bool(check_symbols({"x.o": (g[user], {sym})}, defs_of))
        if got != expect:
            print("check-layers selftest: %s calling %s: expected %s, got %s" %
                  (user, sym, "a violation" if expect else "none", "one" if got else "none"))
            fails += 1
    inc = [(("store", "store"), ("store", "store_jobs"), True),
           (("store", "store_owners"), ("store", "store_work"), False),
           (("store", "store_audit"), ("core", "admin_db"), True),
           (("store", "store_work"), ("store-pub", "states"), False),
           (("store", "store_work"), ("server", "srv"), True),
           (("store", "store_owners"), ("store-int", "store_int"), False),
           (("core", "sched"), ("store-int", "store_int"), True),
           (("core", "sched"), ("store", "store_api"), False),
           (("core", "sched"), ("server", "srv_opts"), True),
           (("server", "srv"), ("store-int", "store_int"), True),
           (("server", "srv"), ("core", "sched"), False),
           (("admin", "admin"), ("core", "admin_db"), False),
           (("admin", "admin"), ("server", "srv"), True),
           (("common", "util"), ("core", "admin_db"), True),
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
