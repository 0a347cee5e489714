#!/usr/bin/env bash
# cuda_faults.sh — every CUDA driver call the daemon makes, failed in turn
# (CUDA emulation builds only: tests/cuda_emu's GI_CUDA_EMU_FAIL).
#
# A clean start and stop with backend cuda (host_pinned pool, frames in GPU
# memory, both executor modes) lists the calls and how often each is made
# (GI_CUDA_EMU_REPORT), none of them failing (compute-sanitizer would
# report each failure as an API error).  Then, for each call, its first use fails — and its
# second, where it is made twice or more — and the daemon must either
#   - stop at start-up: exit status 3, one error line that names the call
#     or the step, the "start-up failed" line, and nothing held: the
#     emulation reports any allocation or registration still live when the
#     last context reference goes ("leak"), and any misuse (a free of a
#     pointer it never handed out...) — there must be none; or
#   - when the call is not on the start-up path (teardown, the stop poll):
#     start, and stop with status 0 or 4 (the drain failed) — never crash,
#     never leak.
# It is emulation: the real check is tests/gpu/run_on_gpu.sh on a GPU.
source "$(dirname "$0")/lib.sh"
need_root
grep -q "GI_CUDA_EMULATION 1" "$GI_BUILD/gi_build_config.h" 2>/dev/null ||
  skip "not a -Demulate_cuda=true build"

export GI_BACKEND=cuda GI_POOL_KIND=host_pinned GI_THREADS_PER_RING=32

# start_stop CONFIG: start, wait for READY (metrics socket) or exit; stop; echo exit status
start_stop() {
  local cfg=$1 rc=0 i
  rm -f "$T/metrics.sock"
  "$GPUINGESTD" --config "$cfg" >"$T/f.json" 2>"$T/f.log" &
  local pid=$!
  PIDS+=("$pid")
  for i in $(seq 1 150); do
    [ -S "$T/metrics.sock" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && { cat "$T/f.log" >&2; fail "daemon did not exit"; }
  wait "$pid" || rc=$?
  echo "$rc"
}

# only for runs where a release call was made to fail (see below)
echo "leak:libgi-cuda-emu.so" >"$T/emu-leak.supp"

for mode in persistent launch; do
  echo "=== executor mode $mode"
  GI_EXEC_MODE=$mode write_config "$T/$mode.yaml" "net_null0" s0:5000:8:256
  rc=$(GI_CUDA_EMU_REPORT=$T/calls-$mode.txt start_stop "$T/$mode.yaml")
  [ "$rc" -eq 0 ] || { cat "$T/f.log" >&2; fail "clean run: exit status $rc"; }
  ! grep -q "gi-cuda-emu:" "$T/f.log" || { cat "$T/f.log" >&2; fail "clean run: the emulation complained"; }
  # a healthy start and stop makes no driver call that fails: compute-sanitizer
  # reports each as an API error (probes use calls that answer without one)
  api_errors=$(awk '/^errors\./ && $2 > 0' "$T/calls-$mode.txt")
  [ -z "$api_errors" ] || fail "clean run: driver calls returned errors: $(echo $api_errors)"
  n_calls=0
  while read -r key count; do
    name=${key#calls.}
    [ "$count" -gt 0 ] || continue
    uses=1
    [ "$count" -gt 1 ] && uses="1 2"
    for nth in $uses; do
      n_calls=$((n_calls + 1))
      # a release call that fails leaves its own allocation behind (the driver
      # frees it with the context): the emulation's leak line for it, and in
      # the ASan build LeakSanitizer's report of the emulation's own memory,
      # are expected; anything else the emulation says is a defect
      case $name in
        cuMemFree | cuMemFreeHost | cuMemHostUnregister | cuIpcCloseMemHandle | cuModuleUnload | cuStreamDestroy | \
          cuEventDestroy | cuDevicePrimaryCtxRelease)
          release=1 ;;
        *) release=0 ;;
      esac
      if [ "$release" = 1 ]; then
        rc=$(LSAN_OPTIONS=suppressions=$T/emu-leak.supp GI_CUDA_EMU_FAIL=$name:$nth start_stop "$T/$mode.yaml")
        complaints=$(grep "gi-cuda-emu:" "$T/f.log" | grep -v "gi-cuda-emu: leak: 1 " || true)
      else
        rc=$(GI_CUDA_EMU_FAIL=$name:$nth start_stop "$T/$mode.yaml")
        complaints=$(grep "gi-cuda-emu:" "$T/f.log" || true)
      fi
      if [ -n "$complaints" ]; then
        cat "$T/f.log" >&2
        fail "$name:$nth: the emulation reports a leak or a misuse (above)"
      fi
      case $rc in
        3)
          errs=$(grep -c ": error: " "$T/f.log" || true)
          grep -q "start-up failed; everything started so far has been released" "$T/f.log" ||
            { cat "$T/f.log" >&2; fail "$name:$nth: exit 3 without the start-up failure line"; }
          [ "$errs" -eq 2 ] ||
            { cat "$T/f.log" >&2; fail "$name:$nth: $errs error lines, expected the cause and the start-up failure"; }
          printf '  %-28s start-up fails cleanly: %s\n' "$name:$nth" \
            "$(grep ': error: ' "$T/f.log" | head -1 | sed 's/^gpuingestd: error: //' | cut -c1-110)"
          ;;
        0 | 4)
          printf '  %-28s not a start-up call: started, stopped with %s\n' "$name:$nth" "$rc"
          ;;
        *)
          cat "$T/f.log" >&2
          fail "$name:$nth: exit status $rc"
          ;;
      esac
    done
  done < <(grep '^calls\.' "$T/calls-$mode.txt")
  [ "$n_calls" -ge 20 ] || fail "only $n_calls driver calls seen in a clean run"
done
echo PASS
