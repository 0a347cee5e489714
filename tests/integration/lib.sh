# lib.sh — shared set-up for the integration tests (sourced, bash).
#
# Every test gets its own temp dir, memif socket, shared-memory names, EAL
# file prefixes and stats socket, and a trap that stops whatever it started,
# so tests never collide with each other or with a running demo.
set -euo pipefail
# configs the tests write must not be group/other-writable: the daemon refuses those
umask 022

: "${GI_BUILD:?GI_BUILD must point at the meson build directory}"
: "${GI_SRC:?GI_SRC must point at the source tree}"
GPUINGESTD=$GI_BUILD/daemon/gpuingestd
SIM=$GI_BUILD/tools/gpuingest-sim
FRAMES=$GI_BUILD/tools/gpuingest-frames
CHECK=$GI_SRC/tests/integration/check_accounting.py

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root (DPDK EAL, memif sockets, shared memory)"; }

# py_consumer_setup: a Python consumer can run (the gpuingest module over this
# build's library): sets PY, PY_ENV (run it as `env "${PY_ENV[@]}" "$PY" ...`)
# and exports the module's paths; else returns 1 with the reason in PY_WHY.
# GI_PYTHON: another interpreter (a GPU machine's, with CuPy/PyTorch: tests/gpu/run_on_gpu.sh)
py_consumer_setup() {
  PY=${GI_PYTHON:-/usr/bin/python3}
  PY_WHY="needs Debian's /usr/bin/python3 (or GI_PYTHON)"
  [ -x "$PY" ] || return 1
  PY_WHY="python3-numpy is not installed (apt-get install python3-numpy)"
  "$PY" -c 'import numpy' 2>/dev/null || return 1
  export GPUINGEST_LIBRARY=$GI_BUILD/client/libgpuingest.so.1
  export PYTHONPATH=$GI_SRC/client/python${PYTHONPATH:+:$PYTHONPATH}
  # a sanitized build's libgpuingest needs its sanitizer's runtime preloaded into Python
  local rc=0 lines
  lines=$("$PY" "$GI_SRC/tests/python/sanitizer_env.py" "$GPUINGEST_LIBRARY") || rc=$?
  PY_WHY=${lines#SKIP: }
  [ "$rc" -eq 77 ] && return 1
  [ "$rc" -eq 0 ] || fail "sanitizer_env.py: exit status $rc"
  PY_ENV=()
  [ -z "$lines" ] || mapfile -t PY_ENV <<<"$lines"
}

TAG=gi$$
T=$(mktemp -d "/tmp/gpuingest-it.XXXXXX")
PIDS=()
CONSUMER_PIDS=()

cleanup() {
  local p
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -f /dev/shm/"$TAG"-* 2>/dev/null || true
  if [ -n "${KEEP_TMP:-}" ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

# write_config FILE DEVICE STREAMS... ; STREAMS are "name:udp:packets:payload[:window]";
# GI_TENSOR_<name> gives stream <name> a tensor: block (a YAML flow map; a name's
# characters other than letters, digits and _ as _)
# GI_BACKEND (host), GI_EXEC_MODE (auto), GI_THREADS_PER_RING (256) and
# GI_POOL_KIND (host) select the GPU path: tests/gpu/run_on_gpu.sh on a GPU,
# the cuda_emu suite on CPU threads; GI_BATCH_TIMEOUT_US (200) makes fewer,
# fuller batches for a slower executor, and GI_BATCH_TIMEOUT_MIN_US raises
# it further where the caller knows the executor is slower still (setup.sh's
# ThreadSanitizer run of the emulation with its stress switch).
write_config() {
  local file=$1 device=$2; shift 2
  local batch_us=${GI_BATCH_TIMEOUT_US:-200}
  if [ -n "${GI_BATCH_TIMEOUT_MIN_US:-}" ] && [ "$GI_BATCH_TIMEOUT_MIN_US" -gt "$batch_us" ]; then
    batch_us=$GI_BATCH_TIMEOUT_MIN_US
  fi
  {
    cat <<YAML
eal:
  main_lcore: 0
  args: [--no-huge, --no-pci, -m, "256", --file-prefix, $TAG-d, --log-level, "*:warning"]
log:
  level: info
executor:
  backend: ${GI_BACKEND:-host}
  idle: adaptive${GI_EXEC_MODE:+
  mode: $GI_EXEC_MODE}${GI_THREADS_PER_RING:+
  threads_per_ring: $GI_THREADS_PER_RING}${GI_EXEC_THREADS:+
  threads: $GI_EXEC_THREADS}
lcores:
  - id: 1
    idle: adaptive
memory:
  - name: pool0
    kind: ${GI_POOL_KIND:-host}
    mbufs: 8192
    hugepages: false
ports:
  - name: p0
    device: "$device"
    rx_queues:
      - lcore: 1
        mempool: pool0
        ring_slots: 256
        batch: {max_packets: 32, timeout_us: $batch_us}
stats:
  unix: $T/metrics.sock
  listen: "${GI_LISTEN:-}"
streams:
YAML
    local s name udp pk pl win
    for s in "$@"; do
      IFS=: read -r name udp pk pl win <<<"$s"
      cat <<YAML
  - name: $name
    port: p0
    match: {udp_dst_port: $udp}
    format: udp_seq
    frame: {packets: $pk, payload_bytes: $pl}
    ring: {slots: ${GI_FRAME_SLOTS:-64}, shm: /$TAG-$name}
    reorder_window: ${win:-4}
    frame_timeout_ms: 0
YAML
      # GI_TENSOR_<name>: the stream's tensor: block, a YAML flow map (other characters than
      # letters, digits and _ in the name as _)
      local tv="GI_TENSOR_${name//[^A-Za-z0-9_]/_}"
      [ -z "${!tv:-}" ] || echo "    tensor: ${!tv}"
    done
  } >"$file"
}

# wait_socket PATH PID LOG WHAT [TENTHS]: until the unix socket PATH exists
# (bounded: TENTHS x 0.1 s, default 100); fails at once if PID exits, showing LOG
wait_socket() {
  local path=$1 pid=$2 log=$3 what=$4 tenths=${5:-100} i
  for i in $(seq 1 "$tenths"); do
    [ -S "$path" ] && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "$what exited before $path appeared"; }
    sleep 0.1
  done
  cat "$log" >&2
  fail "$what: $path did not appear within $((tenths / 10)) s"
}

# start_daemon CONFIG → $DAEMON_PID; stdout (final JSON) in $T/daemon.json, log in $T/daemon.log
# GI_DAEMON_WRAP: a command line the daemon runs under (valgrind.sh), word-split.
start_daemon() {
  # shellcheck disable=SC2086
  ${GI_DAEMON_WRAP:-} "$GPUINGESTD" --config "$1" >"$T/daemon.json" 2>"$T/daemon.log" &
  DAEMON_PID=$!
  PIDS+=("$DAEMON_PID")
  # ready when the metrics socket exists (bounded: 20 s)
  wait_socket "$T/metrics.sock" "$DAEMON_PID" "$T/daemon.log" "the daemon" 200
}

# consumer_ring PID SHM: stop_daemon waits until consumer PID has ring SHM
# (/NAME) open.  The library opens no ring the daemon has closed (it waits
# for a new one, to its --wait), so a consumer still starting (an exec, a
# Python interpreter importing NumPy, a sanitizer's start) when a short case
# ends would otherwise time out with nothing wrong.
CONSUMER_RINGS=()
consumer_ring() { CONSUMER_RINGS+=("$1 $2"); }

# wait_rings_open: each registered consumer that still runs has its ring
# mapped (bounded: 20 s each); one that exited is wait_consumers' to report
wait_rings_open() {
  local e pid shm i
  for e in "${CONSUMER_RINGS[@]}"; do
    pid=${e%% *} shm=${e#* }
    for i in $(seq 1 200); do
      kill -0 "$pid" 2>/dev/null || break
      kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$T/daemon.log" >&2; fail "the daemon exited before consumer $pid opened $shm"; }
      awk -v f="/dev/shm$shm" '$6 == f {found = 1} END {exit !found}' "/proc/$pid/maps" 2>/dev/null && break
      [ "$i" -lt 200 ] || fail "consumer $pid did not open $shm within 20 s"
      sleep 0.1
    done
  done
  CONSUMER_RINGS=()
}

# stop_daemon: the consumers' rings open (wait_rings_open), SIGTERM, wait
# (bounded), require exit status 0
stop_daemon() {
  wait_rings_open
  kill -TERM "$DAEMON_PID"
  local i rc
  for i in $(seq 1 150); do
    kill -0 "$DAEMON_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$DAEMON_PID" 2>/dev/null && { cat "$T/daemon.log" >&2; fail "daemon did not exit within 15 s of SIGTERM"; }
  rc=0; wait "$DAEMON_PID" || rc=$?
  [ "$rc" -eq 0 ] || { cat "$T/daemon.log" >&2; fail "daemon exited with status $rc after SIGTERM"; }
}

# start_consumer NAME → consumer JSON in $T/frames-NAME.json
# GI_FRAMES_ARGS: more gpuingest-frames options (word-split), e.g. --sender
start_consumer() {
  # shellcheck disable=SC2086
  "$FRAMES" --shm "/$TAG-$1" --wait 20 --quiet ${GI_FRAMES_ARGS:-} >"$T/frames-$1.json" 2>"$T/frames-$1.log" &
  PIDS+=("$!")
  CONSUMER_PIDS+=("$!")
  consumer_ring "$!" "/$TAG-$1"
}

wait_consumers() {
  local p rc=0
  for p in "${CONSUMER_PIDS[@]}"; do
    local i
    for i in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && fail "frame consumer $p did not exit after the daemon closed its ring"
    wait "$p" || rc=$?
  done
  return $rc
}

metrics_unix() { curl -sS --max-time 5 --unix-socket "$T/metrics.sock" "http://localhost${1:-/metrics}"; }
# metrics_has REGEX: the metrics page has a line matching REGEX.  The page is
# read whole first: `metrics_unix | grep -q` fails under pipefail when grep
# stops reading early and curl cannot finish writing (curl exit 23).
metrics_has() { local page; page=$(metrics_unix) && grep -q -- "$1" <<<"$page"; }

# start_sim ARGS... : the simulator is the memif server, so it starts first;
# returns once its socket exists.  JSON in $T/sim.json, PID in $SIM_PID.
start_sim() {
  rm -f "$SOCK"
  # GI_SIM_RATE_MAX (the test) and GI_SIM_RATE_CAP (a sanitizer build): a
  # slower executor (the CUDA emulation runs a kernel's threads as OS
  # threads) gets traffic it can take without ring_full drops
  local args=() a prev="" cap=${GI_SIM_RATE_MAX:-}
  if [ -n "${GI_SIM_RATE_CAP:-}" ] && { [ -z "$cap" ] || [ "$GI_SIM_RATE_CAP" -lt "$cap" ]; }; then
    cap=$GI_SIM_RATE_CAP
  fi
  for a in "$@"; do
    if [ "$prev" = "--rate" ] && [ -n "$cap" ] && { [ "$a" -eq 0 ] || [ "$a" -gt "$cap" ]; }; then
      a=$cap
    fi
    args+=("$a")
    prev=$a
  done
  # GI_SIM_PACE (the emulated GPU executor): the simulator waits while the
  # daemon's batch rings fill, so a slow executor never meets ring_full and
  # the accounting stays exact; the host backend and a real GPU run unpaced
  [ "${GI_SIM_PACE:-0}" = 1 ] && args+=(--pace-metrics "$T/metrics.sock" --pace-batches "${GI_SIM_PACE_BATCHES:-16}")
  # a ThreadSanitizer build checks the daemon; the simulator is its test peer
  TSAN_OPTIONS=${GI_SIM_TSAN_OPTIONS:-${TSAN_OPTIONS:-}} \
    "$SIM" --port "memif:$SOCK" --eal "--file-prefix $TAG-s" "${args[@]}" >"$T/sim.json" 2>"$T/sim.log" &
  SIM_PID=$!
  PIDS+=("$SIM_PID")
  wait_socket "$SOCK" "$SIM_PID" "$T/sim.log" "the simulator"
}

wait_sim() {
  local rc=0
  wait "$SIM_PID" || rc=$?
  [ "$rc" -eq 0 ] || { cat "$T/sim.log" >&2; fail "simulator exited with status $rc"; }
}

# wait_delivered N: until the daemon has received N packets (bounded 20 s)
wait_delivered() {
  local want=$1 got=0 i
  for i in $(seq 1 200); do
    got=$(metrics_unix | awk '/^gpuingest_queue_rx_packets_total/ {s += $2} END {printf "%d", s}')
    [ "$got" -ge "$want" ] && return 0
    sleep 0.1
  done
  fail "daemon received $got of $want packets within 20 s"
}

sim_sent() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sent"])' "$T/sim.json"; }

# start_memif_case CONFIG SIM_ARGS... -- NAMES...
# The simulator (memif server, with SIM_ARGS), then the daemon on CONFIG,
# then a frame consumer for each stream NAME (none if none are given).
start_memif_case() {
  local config=$1; shift
  local sim_args=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do sim_args+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  CONSUMER_PIDS=()
  start_sim "${sim_args[@]}"
  start_daemon "$config"
  local name
  for name in "$@"; do start_consumer "$name"; done
}

# run_memif_case LABEL CONFIG CHECK_ARGS SIM_ARGS... -- NAMES...
# One whole run: start_memif_case, the simulator runs to its end, the daemon
# receives all it sent, stops cleanly (exit 0 on SIGTERM), every consumer
# exits byte-exact, and check_accounting.py holds the daemon's JSON to the
# simulator's with CHECK_ARGS (word-split: "" or e.g. --clean).  NAMES are
# the daemon's streams in the simulator's stream order (NAME=0, NAME=1, ...).
run_memif_case() {
  local label=$1 config=$2 check_args=$3; shift 3
  echo "=== $label"
  start_memif_case "$config" "$@"
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
  [ $# -gt 0 ] && shift
  wait_sim
  wait_delivered "$(sim_sent)"
  stop_daemon
  wait_consumers || fail "a frame consumer reported mismatches"
  local streams=() i=0 name
  for name in "$@"; do
    streams+=(--stream "$name=$i" --frames "$name=$T/frames-$name.json")
    i=$((i + 1))
  done
  # shellcheck disable=SC2086
  python3 "$CHECK" --sim "$T/sim.json" --daemon "$T/daemon.json" "${streams[@]}" $check_args ||
    fail "$label: accounting"
}
