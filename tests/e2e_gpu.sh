#!/usr/bin/env bash
# The GPU backend end to end, on whatever OpenCL device the machine has (pocl's CPU
# device in CI: `all` takes CPU devices too), real nq-server / nq-client / nq-admin / nq-solve
# processes on 127.0.0.1:
#   0. nq-solve 16 --gpu all --threads 0 prints TOTAL 14772512 and the node count of nq-solve 16,
#      and its device's launches (seconds, count, tails; not the self-test's);
#   1. a job (N=12 depth 4, quorum 2 by client) computed by one client on the device alone
#      (--threads 0 --gpu all) and one on the CPU alone (--gpu off): it matches the published
#      values, every verified unit has one result of each, and the store says which backend
#      computed each result (nq-admin units);
#   1b. one client with a CPU lane and a device lane (--threads 1 --gpu all) beside a CPU-only
#      client: each lane leases and solves its own units (no result is shared between them);
#   2. a device failure injected mid-job (NQ_GPU_FAIL_AFTER=3 on the device's client): the client
#      finishes its units on the CPU, loses none, and the job still matches;
#   3. a device whose results are wrong (NQ_GPU_CORRUPT=1) is refused by its self-test, naming it,
#      and a client with --threads 0 then refuses to start (exit 3).
# Skipped (77) when this build has no OpenCL backend or the machine no OpenCL device.
#
#   bash tests/e2e_gpu.sh BUILD_DIR
set -euo pipefail

BIN="$(cd "${1:?usage: e2e_gpu.sh BUILD_DIR}" && pwd)"
for p in nq-server nq-client nq-client-test nq-admin nq-solve; do
  [ -x "$BIN/$p" ] || { echo "e2e_gpu: $BIN/$p missing"; exit 1; }
done
TAG=e2e_gpu
. "$(dirname "$0")/lib_e2e.sh"
e2e_init gpu

if ! "$BIN/nq-solve" --gpu-list | grep -qE '^[0-9]+ '; then
  echo "e2e_gpu: SKIP: no OpenCL device ($("$BIN/nq-solve" --gpu-list | head -n 1))"
  exit 77
fi
DEV=$("$BIN/nq-solve" --gpu-list | awk -F'  ' '/^0 /{print $2; exit}')
say "device 0: $DEV"

# ---- 0. nq-solve on the device ----
gpu=$("$BIN/nq-solve" 16 --gpu all --threads 0 --json 2>"$TMP/solve.err") ||
  fail "nq-solve 16 --gpu all: $(cat "$TMP/solve.err")"
cpu=$("$BIN/nq-solve" 16 --json)
python3 - "$gpu" "$cpu" <<'EOF' || fail "nq-solve 16 --gpu all differs from the CPU: $gpu"
import json, sys
g, c = json.loads(sys.argv[1]), json.loads(sys.argv[2])
assert g["total"] == "14772512" and g["matches_published"], g
assert all(g[k] == c[k] for k in ("total", "unique", "c2", "c4", "c8", "nodes")), (g, c)
assert g["kernel"].startswith("opencl:") and c["kernel"] in ("scalar", "avx2", "avx512"), (g, c)
# the devices' launches (seconds, count, tails), and only where a device counted
assert g["device_seconds"] > 0 and 0 <= g["device_tails"] <= g["device_launches"], g
assert not any(k.startswith("device_") for k in c), c
EOF
say "nq-solve 16 --gpu all: TOTAL 14772512, nodes as the CPU's"

# verified_backends DIR: one line per result of a verified unit: "UNIT CLIENT BACKEND".
verified_backends() {
  local out
  for _ in $(seq 1 50); do
    out=$("$BIN/nq-admin" units --state verified --limit 100000 --data "$1/data" --json \
      2>/dev/null) && break
    sleep 0.2
  done
  python3 -c 'import json,sys
for u in json.load(sys.stdin)["units"]:
    for r in u.get("replicas", []):
        print(u["unit"], r["client"], r.get("backend", "-"))' <<<"$out"
}

# ---- 1. a GPU-only client and a CPU-only client verify each other ----
D="$TMP/job"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 12 --depth 4 --quorum 2 --quorum-distinct client --exit-when-done
E2E_THREADS=0 e2e_start_client "$D" "$PORT" gpu --gpu all
e2e_start_client "$D" "$PORT" cpu --gpu off
wait_server_exit 300
check_done "$D" 12
grep -q "passed its self-test" "$D/client-gpu.log" || fail "no self-test line in the gpu client's log"
verified_backends "$D" >"$D/backends"
python3 - "$D/backends" <<'EOF' || fail "backends of the verified units: $(head -n 5 "$D/backends")"
import collections, sys
units = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    unit, client, backend = line.split(" ", 2)
    units[unit][client] = backend.strip()
assert len(units) > 100, len(units)
for unit, by in units.items():
    assert set(by) == {"gpu", "cpu"}, (unit, by)
    assert by["gpu"].startswith("opencl:") and "+" not in by["gpu"], (unit, by)
    assert by["cpu"] in ("scalar", "avx2", "avx512"), (unit, by)
print(len(units), "units")
EOF
nunits=$(wc -l <"$D/backends")
"$BIN/nq-admin" clients --data "$D/data" | grep -E "^gpu " | grep -q "opencl:" ||
  fail "nq-admin clients does not show the gpu client's backend"
say "every verified unit: one result from the device, one from the CPU ($nunits results)"
stop_all

# ---- 1b. one client with a CPU lane and a device lane: each lane leases and solves its own units ----
D="$TMP/lanes"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 12 --depth 4 --quorum 2 --quorum-distinct client --exit-when-done
e2e_start_client "$D" "$PORT" both --gpu all
e2e_start_client "$D" "$PORT" cpu --gpu off
wait_server_exit 300
check_done "$D" 12
verified_backends "$D" >"$D/backends"
grep -qE " both opencl:" "$D/backends" || fail "no result of the device lane"
grep -qE " both (scalar|avx2|avx512)$" "$D/backends" || fail "no result of the CPU lane"
grep -E " both " "$D/backends" | grep -qF "+" && fail "a result shared between the lanes"
say "a client with a CPU lane and a device lane: $(grep -c ' both opencl:' "$D/backends") results by the device, $(grep -cE ' both (scalar|avx2|avx512)$' "$D/backends") by the CPU"
stop_all

# ---- 2. the device fails mid-job ----
D="$TMP/fail"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 12 --depth 4 --quorum 2 --quorum-distinct client --exit-when-done
E2E_CLIENT=nq-client-test NQ_GPU_FAIL_AFTER=3 E2E_THREADS=0 e2e_start_client "$D" "$PORT" gpu --gpu all
e2e_start_client "$D" "$PORT" cpu --gpu off
wait_server_exit 300
check_done "$D" 12
grep -q "injected device failure" "$D/client-gpu.log" || fail "the device did not fail"
verified_backends "$D" >"$D/backends"
grep -qE " gpu opencl:" "$D/backends" || fail "no result of the device before it failed"
grep -qE " gpu (scalar|avx2|avx512)$" "$D/backends" || fail "no result of the CPU after it failed"
say "device failed after 3 launches: the client went on on the CPU, the job matched"
stop_all

# ---- 3. a device with wrong results is refused ----
D="$TMP/corrupt"
mkdir -p "$D"
PORT=$(free_port)
e2e_start_server "$D" "$PORT" --n 10 --depth 3
rc=0
NQ_GPU_CORRUPT=1 timeout 120 "$BIN/nq-client-test" --server "127.0.0.1:$PORT" --ca "$D/data/ca.pem" \
  --enrol "$(cat "$D/data/enrol.key")" --name bad --threads 0 --gpu all --state "$D/state-bad" \
  >"$D/client-bad.log" 2>&1 || rc=$?
[ $rc -eq 3 ] || fail "a client whose only device fails its self-test: exit $rc, want 3"
grep -q "refused" "$D/client-bad.log" && grep -qF "$DEV" "$D/client-bad.log" &&
  grep -q "self-test" "$D/client-bad.log" || fail "no refusal naming the device: $(cat "$D/client-bad.log")"
say "a corrupt device is refused by its self-test, by name"
stop_all
say "ok"
