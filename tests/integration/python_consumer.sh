#!/usr/bin/env bash
# python_consumer.sh — the gpuingest Python module (client/python) as the
# frame consumer: simulator → memif → daemon → frame rings → Python.
#
# Two streams of different geometry, each read by py_consumer_check.py,
# which verifies every frame through the module: payload byte-exact against
# the simulator's pattern, metadata equal to what the simulator sent,
# zero-copy views that are the ring itself (host rings) or the device
# pointer through the CUDA Array Interface and DLPack (GPU rings: the
# cuda_emu suite runs this with GI_BACKEND=cuda), copy(), valid(), and the
# library's accounting identity; then check_accounting.py holds its JSON to
# the daemon's and the simulator's like any consumer's.
#  1. clean traffic, sender frame numbers wrapping past 2^32: every frame
#     complete, none overrun, all bytes verified;
#  2. loss, duplication and reordering: partial frames, verified over the
#     packets their bitmap says arrived;
#  3. the same with a tensor: block on each stream (complex64 from IQ, uint16
#     from RAW10): every frame's tensor against NumPy's conversion.
source "$(dirname "$0")/lib.sh"
need_root

py_consumer_setup || skip "$PY_WHY"
CHECKER=$GI_SRC/tests/integration/py_consumer_check.py
DEVICE=host
[ "${GI_BACKEND:-host}" = cuda ] && DEVICE=gpu

SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"
# frame rings that hold every frame of a case (150), and 10 000 packets/s
# (the emulated GPU executor under ASan keeps up): this checks what the
# module reads, not how fast; a Python consumer under ASan on two busy cores
# falls more than 64 frames behind (overruns are the C tests' subject)
export GI_FRAME_SLOTS=256

# start_py_consumer NAME SIM_STREAM_ID [CHECKER_ARGS...] → JSON in $T/frames-NAME.json;
# it creates $T/ready-NAME once its ring is open
start_py_consumer() {
  local name=$1 sid=$2; shift 2
  rm -f "$T/ready-$name"
  env "${PY_ENV[@]}" "$PY" "$CHECKER" --shm "/$TAG-$name" --stream "$name" --sensor-id "$sid" --sim "$T/sim.json" \
    --device "$DEVICE" --ready "$T/ready-$name" "$@" >"$T/frames-$name.json" 2>"$T/frames-$name.log" &
  PIDS+=("$!")
  CONSUMER_PIDS+=("$!")
}

# wait_py_ready NAME...: until each consumer has its ring open (bounded: 50 s
# in all, for an interpreter that imports PyTorch and CuPy on a cold cache;
# the simulator waits 60 s for its go signal), then the go signal.  Traffic
# that started earlier could end, and the daemon close the ring, before a
# consumer still importing had opened it.
wait_py_ready() {
  local name p i=0
  for name in "$@"; do
    until [ -e "$T/ready-$name" ]; do
      for p in "${CONSUMER_PIDS[@]}"; do
        kill -0 "$p" 2>/dev/null || { cat "$T"/frames-*.log >&2; fail "a Python consumer exited before its ring was open"; }
      done
      i=$((i + 1))
      [ "$i" -le 500 ] || { cat "$T/frames-$name.log" >&2; fail "consumer $name: its ring was not open within 50 s"; }
      sleep 0.1
    done
  done
  touch "$T/go"
}

# run_case LABEL CHECK_ARGS CHECKER_ARGS SIM_ARGS... (the *_ARGS strings word-split: "" or --clean)
# TENSOR_S0, TENSOR_S1: each stream's checker --tensor spec (GI_TENSOR_s0/s1: its config)
run_case() {
  local label=$1 check_args=$2 py_args=$3; shift 3
  echo "=== $label"
  write_config "$T/$label.yaml" "$DEV" s0:5000:32:512 s1:5001:20:1000
  CONSUMER_PIDS=()
  # traffic starts once both Python consumers have imported their libraries and opened their rings
  rm -f "$T/go"
  start_sim --streams 2 --dst-port 5000 --geometry 32x512,20x1000 --start-file "$T/go" "$@"
  start_daemon "$T/$label.yaml"
  # shellcheck disable=SC2086
  start_py_consumer s0 0 $py_args ${TENSOR_S0:+--tensor $TENSOR_S0}
  # shellcheck disable=SC2086
  start_py_consumer s1 1 $py_args ${TENSOR_S1:+--tensor $TENSOR_S1}
  wait_py_ready s0 s1
  wait_sim
  wait_delivered "$(sim_sent)"
  stop_daemon
  if ! wait_consumers; then
    cat "$T"/frames-s0.log "$T"/frames-s1.log >&2
    fail "$label: the Python consumer found mismatches"
  fi
  # shellcheck disable=SC2086
  python3 "$CHECK" --sim "$T/sim.json" --daemon "$T/daemon.json" --stream s0=0 --stream s1=1 \
    --frames "s0=$T/frames-s0.json" --frames "s1=$T/frames-s1.json" $check_args || fail "$label: accounting"
  "$PY" - "$T/frames-s0.json" "$T/frames-s1.json" <<'PY'
import json, sys
for path in sys.argv[1:]:
    j = json.load(open(path))
    views = j["zero_copy_checked"] if j["ring"] == "host" else j["dlpack_checked"]
    print(f"  {j['stream']} ({j['ring']} ring): {j['frames_seen']} frames verified, {j['frames_complete']} complete, "
          f"{j['frames_partial']} partial, {j['packets_verified']} packets, {j['bytes_verified']} bytes, "
          f"{views} views checked, sender frames from {j['first_sensor_frame']}"
          + (f", {j['tensors_verified']} tensors verified" if "tensors_verified" in j else "")
          + "".join(f", {j[k]} {k.replace('_', ' ')}" for k in sorted(j) if k.startswith(("cupy_", "torch_"))))
PY
}

run_case clean --clean --clean --frames 150 --rate 10000 --seed 1 --frame-start 4294967246
run_case impaired "" "" --frames 150 --rate 10000 --seed 7 --loss 0.01 --dup 0.01 --reorder 0.02 --reorder-depth 8
# 3. typed tensors (tensor:): IQ pairs to complex64 with lost samples NaN, and
#    a RAW10 image to uint16 with lost pixels 0, on impaired traffic: each
#    frame's tensor against NumPy's conversion of the simulator's bytes
export GI_TENSOR_s0="{sample: ci16, byteorder: big, shape: [4096], to: cf32, scale: 3.0517578125e-05, missing: nan}"
export GI_TENSOR_s1="{sample: raw10, shape: [16, 1000], to: u16}"
TENSOR_S0=ci16,cf32,big,3.0517578125e-05,0,nan TENSOR_S1=raw10,u16,big,1,0,zero \
  run_case tensor "" "" --frames 100 --rate 10000 --seed 9 --loss 0.01 --dup 0.01 --reorder 0.02 --reorder-depth 8
unset GI_TENSOR_s0 GI_TENSOR_s1
echo "PASS"
