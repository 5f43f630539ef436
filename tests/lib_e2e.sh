# Shared harness of the end-to-end scripts (tests/e2e_*.sh source it; it is not a test itself).
# The sourcing script sets TAG (its log prefix) and BIN (the build directory), then calls
# e2e_init NAME. Every process it starts goes into PIDS (or SRV for the server), so the EXIT trap
# can kill them all; on failure the trap prints the tail of every server/client log.

# e2e_init NAME: a fresh temporary directory $TMP, empty pid lists, the cleanup trap.
e2e_init() {
  TMP="$(mktemp -d "${TMPDIR:-/tmp}/nq-e2e-$1.XXXXXX")"
  PIDS=()
  SRV=""
  T0=$SECONDS
  trap e2e_cleanup EXIT
  trap 'exit 130' INT TERM
}

e2e_cleanup() {
  local rc=$?
  set +e
  for p in "${PIDS[@]}" $SRV; do kill -9 "$p" 2>/dev/null; done
  for p in "${PIDS[@]}" $SRV; do wait "$p" 2>/dev/null; done
  if [ $rc -ne 0 ]; then
    for f in "$TMP"/*/server.log "$TMP"/*/client-*.log; do
      [ -f "$f" ] && { echo "---- ${f#$TMP/} (tail)"; tail -n 25 "$f"; }
    done
  fi
  if [ -n "${NQ_E2E_KEEP:-}" ]; then echo "$TAG: kept $TMP (NQ_E2E_KEEP)"; else rm -rf "$TMP"; fi
  exit $rc
}

fail() { echo "$TAG: FAIL: $*"; exit 1; }
say() { echo "$TAG: [$((SECONDS - T0)) s] $*"; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# e2e_start_server DIR PORT ARGS...: nq-server --listen 127.0.0.1:PORT --data DIR/data ARGS in the
# background (SRV = its pid, log DIR/server.log); returns once it accepts connections.
e2e_start_server() {
  local dir=$1 port=$2
  shift 2
  "$BIN/nq-server" --listen "127.0.0.1:$port" --data "$dir/data" "$@" >>"$dir/server.log" 2>&1 &
  SRV=$!
  local i
  for i in $(seq 1 300); do
    kill -0 "$SRV" 2>/dev/null || fail "nq-server exited at start (see $dir/server.log)"
    if [ -s "$dir/data/ca.pem" ] && [ -s "$dir/data/enrol.key" ] &&
       (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  fail "nq-server did not listen on $port within 30 s"
}

# stop_all: SIGTERM the server and every process in PIDS, reap them, and empty both (between the
# scenarios of one script; exit statuses are not checked here).
stop_all() {
  local p
  [ -n "$SRV" ] && { kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; }
  SRV=""
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}

# published N -> "TOTAL UNIQUE" (OEIS A000170, A002562) for the boards the end-to-end tests use.
published() {
  case $1 in
    10) echo "724 92" ;;
    11) echo "2680 341" ;;
    12) echo "14200 1787" ;;
    13) echo "73712 9233" ;;
    17) echo "95815104 11977939" ;;
    18) echo "666090624 83263591" ;;
    *) fail "no published value for N=$1" ;;
  esac
}

# wait_server_exit SECONDS: the server (--exit-when-done) must exit 0 in time.
wait_server_exit() {
  local limit=$1 i
  for i in $(seq 1 $((limit * 10))); do
    kill -0 "$SRV" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$SRV" 2>/dev/null && fail "the job did not finish within $limit s"
  local rc=0
  wait "$SRV" || rc=$?
  SRV=""
  [ $rc -eq 0 ] || fail "nq-server exited $rc"
}

# check_done DIR N: the server's final line names the published totals.
check_done() {
  local dir=$1 n=$2 line exp total uniq
  line=$(grep -E "job N=$n done: TOTAL=" "$dir/server.log" | tail -n 1)
  [ -n "$line" ] || fail "no final job line in $dir/server.log"
  exp=$(published "$n")
  total=$(sed -E 's/.*TOTAL=([0-9]+).*/\1/' <<<"$line")
  uniq=$(sed -E 's/.*UNIQUE=([0-9]+).*/\1/' <<<"$line")
  [ "$total $uniq" = "$exp" ] || fail "N=$n: got TOTAL=$total UNIQUE=$uniq, published $exp"
  say "N=$n done: TOTAL=$total UNIQUE=$uniq (published $exp)"
}
