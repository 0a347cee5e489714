#!/usr/bin/env bash
# startup_failures.sh — every start-up step that can fail does so with exit
# status 3, one error line naming what failed, and nothing left behind
# (no shared-memory frame ring, no socket).
source "$(dirname "$0")/lib.sh"
need_root
# The GPU cases below are about a machine without a GPU: a CUDA emulation
# build (-Demulate_cuda=true) emulates none for them (real drivers ignore this).
export GI_CUDA_EMU_DEVICES=0

# expect_start_failure CONFIG PATTERN [WRAPPER...]
expect_start_failure() {
  local cfg=$1 pattern=$2; shift 2
  local rc=0
  "$@" "$GPUINGESTD" --config "$cfg" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -eq 3 ] || { cat "$T/err" >&2; fail "$cfg: exit status $rc, expected 3"; }
  grep -q -- "$pattern" "$T/err" || { cat "$T/err" >&2; fail "$cfg: no error line matching '$pattern'"; }
  grep -q "start-up failed" "$T/err" || fail "$cfg: no start-up failure summary"
  if ls /dev/shm/"$TAG"-* >/dev/null 2>&1; then fail "$cfg: frame ring left in /dev/shm"; fi
  [ ! -e "$T/metrics.sock" ] || fail "$cfg: metrics socket left behind"
  echo "  ok $(grep -m1 'error:' "$T/err" | cut -c1-150)"
}

# a memif client with no server listening
write_config "$T/memif.yaml" "net_memif0,role=client,socket=$T/none.sock,socket-abstract=no" s0:5000:8:256
expect_start_failure "$T/memif.yaml" "port p0: start failed"

# a device DPDK does not know
write_config "$T/nodev.yaml" "net_nosuchpmd0" s0:5000:8:256
expect_start_failure "$T/nodev.yaml" "EAL initialisation failed"

# a second daemon with the first one's EAL file prefix: EAL gives no reason
# (rte_errno 0, "Success"); the daemon names the prefix and the process holding it
write_config "$T/first.yaml" "net_null0" s0:5000:8:256
# (names the checks below do not look for)
sed -i -e "s|/$TAG-s0|/gifirst$$-s0|" -e "s|unix: $T/metrics.sock|unix: $T/first.sock|" "$T/first.yaml"
"$GPUINGESTD" --config "$T/first.yaml" >"$T/first.json" 2>"$T/first.log" &
FIRST=$!
PIDS+=("$FIRST")
wait_socket "$T/first.sock" "$FIRST" "$T/first.log" "the first daemon" 200
write_config "$T/second.yaml" "net_null0" s1:5001:8:256
expect_start_failure "$T/second.yaml" "file prefix '$TAG-d' is in use by another DPDK process (pid $FIRST"
grep -q "Success" "$T/err" && { cat "$T/err" >&2; fail "second daemon: 'Success' in an error line"; }
kill -TERM "$FIRST"
wait "$FIRST" || true

# GPU memory and a GPU executor on a build/machine without them
write_config "$T/dev.yaml" "net_null0" s0:5000:8:256
sed -i 's/kind: host/kind: host_pinned/' "$T/dev.yaml"
expect_start_failure "$T/dev.yaml" "memory pool pool0: kind host_pinned needs a GPU backend"
write_config "$T/cuda.yaml" "net_null0" s0:5000:8:256
sed -i 's/backend: host/backend: cuda/' "$T/cuda.yaml"
expect_start_failure "$T/cuda.yaml" "use backend: host"

# a frame ring larger than /dev/shm: refused up front, not a SIGBUS later
if command -v unshare >/dev/null && unshare -m true 2>/dev/null; then
  write_config "$T/big.yaml" "net_null0" s0:5000:1024:8000
  sed -i 's/ring: {slots: 64,/ring: {slots: 512,/' "$T/big.yaml"
  sed -i 's/mtu: 1500//' "$T/big.yaml"
  python3 - "$T/big.yaml" <<'PY'
import sys, re
p = sys.argv[1]; s = open(p).read()
s = s.replace("    rx_queues:", "    mtu: 9000\n    rx_queues:", 1)
open(p, "w").write(s)
PY
  expect_start_failure "$T/big.yaml" "cannot reserve" \
    unshare -m sh -c 'mount -t tmpfs -o size=16m tmpfs /dev/shm && exec "$@"' sh
else
  echo "  (mount namespaces unavailable: /dev/shm size check not run)"
fi
# backend: auto with GPU-visible pools on a machine without a GPU: falls back
# to host, says why, and then refuses the pinned pool the host cannot serve
write_config "$T/autopin.yaml" "net_null0" s0:5000:8:256
sed -i -e 's/backend: host/backend: auto/' -e 's/kind: host/kind: host_pinned/' "$T/autopin.yaml"
expect_start_failure "$T/autopin.yaml" "kind host_pinned needs a GPU backend (backend resolved to host: auto:"

# backend: auto with host pools: starts on host and says why
write_config "$T/auto.yaml" "net_null0" s0:5000:8:256
sed -i 's/backend: host/backend: auto/' "$T/auto.yaml"
rc=0
"$GPUINGESTD" --config "$T/auto.yaml" --duration 1 >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 0 ] || { cat "$T/err" >&2; fail "backend auto did not start (exit $rc)"; }
grep -q "auto:.*host" "$T/err" || { cat "$T/err" >&2; fail "backend auto did not say it fell back to host and why"; }
echo "  ok $(grep -m1 'auto:' "$T/err" | cut -c1-150)"
echo PASS
