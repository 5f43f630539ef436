# Shared harness of the end-to-end scripts (tests/e2e_*.sh source it; it is not a test itself).
# The sourcing script sets TAG (its log prefix) and BIN (the build directory), then calls
# e2e_init NAME. Every process it starts goes into PIDS (or SRV for the server), so the EXIT trap
# can kill them all; on failure the trap prints the tail of every server/client log.

# e2e_tmpbase: where the temporary directories go: $TMPDIR when set; else /dev/shm when it is a
# tmpfs with 2 GiB free; else /tmp. The servers commit with synchronous=FULL, an fsync per batch,
# and on a disk-backed /tmp those fsyncs took a third of a test's time (e2e_queue: 29 s against
# 19 s). Nothing here can tell them apart: a process killed with SIGKILL loses no write either
# way (its writes are in the kernel); only a power cut would, and no test makes one.
e2e_tmpbase() {
  if [ -n "${TMPDIR:-}" ]; then echo "$TMPDIR"; return; fi
  local free
  free=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
  if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] &&
     [ "${free:-0}" -ge 2097152 ]; then
    echo /dev/shm
  else
    echo /tmp
  fi
}

# e2e_init NAME: a fresh temporary directory $TMP, empty pid lists, the cleanup trap.
e2e_init() {
  TMP="$(mktemp -d "$(e2e_tmpbase)/nq-e2e-$1.XXXXXX")"
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

# e2e_start_client DIR PORT NAME [ARGS...]: one nq-client in the background against the server on
# 127.0.0.1:PORT whose data directory is DIR/data. It enrols as NAME with that server's key
# (E2E_KEY instead, when set), keeps its state in DIR/state-NAME, logs to DIR/client-NAME.log
# (appended) and runs with --threads 1 (E2E_THREADS instead, when set), --priority normal and then
# ARGS. E2E_WRAP, words split at blanks, goes before the program (nice -n 10, a timing wrapper);
# the environment of the call is the client's. E2E_CLIENT names the program (default nq-client):
# a liar is nq-client-test, the build with the test switches (E2E_CLIENT=nq-client-test
# NQ_CLIENT_FAULT=lie e2e_start_client ...; the installed nq-client reads no such variable).
# CPID = its pid, also added to PIDS.
e2e_start_client() {
  local dir=$1 port=$2 name=$3
  shift 3
  mkdir -p "$dir/state-$name"
  # shellcheck disable=SC2086 # E2E_WRAP is words on purpose
  ${E2E_WRAP:-} "$BIN/${E2E_CLIENT:-nq-client}" --server "127.0.0.1:$port" --ca "$dir/data/ca.pem" \
    --enrol "${E2E_KEY:-$(cat "$dir/data/enrol.key")}" --name "$name" \
    --threads "${E2E_THREADS:-1}" --priority normal --state "$dir/state-$name" "$@" \
    >>"$dir/client-$name.log" 2>&1 &
  CPID=$!
  PIDS+=("$CPID")
}

# e2e_start_clients DIR PORT NAME... [-- ARGS...]: e2e_start_client for each NAME, with the same
# ARGS (and E2E_KEY, E2E_THREADS, E2E_WRAP); CPIDS = their pids, in order.
e2e_start_clients() {
  local dir=$1 port=$2 names=() n
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do names+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  CPIDS=()
  for n in "${names[@]}"; do
    e2e_start_client "$dir" "$port" "$n" "$@"
    CPIDS+=("$CPID")
  done
}

# e2e_wait_log FILE PATTERN SECONDS [PID]: poll FILE (every 0.1 s) until a line matches PATTERN
# (grep -E): a client's state as its log says it ("enrolled as", "the server is full", ...).
# Returns 1 if SECONDS pass first; fails the test if PID (a client) exits first.
e2e_wait_log() {
  local file=$1 pat=$2 limit=$3 pid=${4:-}
  for _ in $(seq 1 $((limit * 10))); do
    grep -Eq -- "$pat" "$file" 2>/dev/null && return 0
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
      grep -Eq -- "$pat" "$file" 2>/dev/null && return 0
      fail "pid $pid exited before its log $file said /$pat/: $(tail -n 3 "$file" 2>/dev/null)"
    fi
    sleep 0.1
  done
  return 1
}

# e2e_until SECONDS WHAT CMD...: poll CMD (every 0.1 s) until it succeeds; the test fails,
# saying WHAT was not reached, if SECONDS pass first. The waits of the e2e scripts are for states
# (a log line, a count in status), never "by now": CI's machine is slow and shared.
e2e_until() {
  local limit=$1 what=$2 t0=$SECONDS
  shift 2
  until "$@"; do
    [ $((SECONDS - t0)) -lt "$limit" ] || fail "$what (not within $limit s)"
    sleep 0.1
  done
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
    19) echo "4968057848 621012754" ;;
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
