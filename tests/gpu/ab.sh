#!/usr/bin/env bash
# ab.sh — two or more builds of the cuda executor side by side on one GPU,
# in one invocation: the only way a speed-up is a GPU result (the same card,
# the same minute, the same traffic; tests/gpu/README: never compare
# numbers from two machines).
#
#   tests/gpu/ab.sh pack OUT.tgz NAME=BUILD_DIR...   (here: needs patchelf)
#   tests/gpu/ab.sh run  AB.tgz [--out DIR] [--seconds S] [--reps N] [--check NAME]
#
# pack: each build's bench/gpu_exec_bench (and the last build's
# tests/test_exec_cuda) with the shared libraries they need but glibc, a
# few MiB, where a whole bundle (bundle.sh) is 25.  The first NAME is the
# reference.
#
# run (on the GPU machine): for each case below, every build in turn, the
# rounds interleaved (A B A B ...) so that drift hits all alike; then the
# step table (--steps) and latency at 1 kHz (--latency 1000) for each build;
# with --check NAME, that build's test_exec_cuda plainly and under
# compute-sanitizer synccheck (first), racecheck and memcheck (last).  Every
# gpu_exec_bench run must place every packet once (its own exit status).
# Writes DIR/ab.jsonl (one line per run) and prints a table: each build's
# median Mpps per case and its ratio to the reference's.
#
# Cases: persistent, 256 threads, 64-packet frames: 1 KiB batch 64 on 1, 4
# and 16 rings; 64 B batch 256 on 4 rings; 8 KiB batch 64 on 4 rings.  Step
# tables: 1 KiB batch 64, 64 B batch 256 and 8 KiB batch 64 on one ring.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

pack() {
  local out=$1; shift
  command -v patchelf >/dev/null || { echo "ab.sh: needs patchelf" >&2; exit 2; }
  local w; w=$(mktemp -d /tmp/gi-ab.XXXXXX)
  mkdir -p "$w/ab/lib"
  local names=() spec name dir last=
  for spec in "$@"; do
    name=${spec%%=*} dir=${spec#*=}
    [ -x "$dir/bench/gpu_exec_bench" ] || { echo "ab.sh: $dir has no bench/gpu_exec_bench" >&2; rm -rf "$w"; exit 2; }
    mkdir -p "$w/ab/$name"
    cp "$dir/bench/gpu_exec_bench" "$w/ab/$name/"
    git -C "$dir" describe --always --dirty >"$w/ab/$name/built_from" 2>/dev/null || echo unknown >"$w/ab/$name/built_from"
    names+=("$name")
    last=$dir
  done
  [ -x "$last/tests/test_exec_cuda" ] && cp "$last/tests/test_exec_cuda" "$w/ab/${names[-1]}/"
  local f lib
  for f in "$w"/ab/*/gpu_exec_bench "$w"/ab/*/test_exec_cuda; do
    [ -f "$f" ] || continue
    for lib in $(ldd "$f" | awk '$3 ~ /^\// {print $3}'); do
      case $(basename "$lib") in libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*) continue ;; esac
      cp -L -n "$lib" "$w/ab/lib/"
    done
    patchelf --set-rpath '$ORIGIN/../lib' "$f"
  done
  printf '%s\n' "${names[@]}" >"$w/ab/NAMES"
  tar -czf "$out" -C "$w" ab
  rm -rf "$w"
  echo "ab.sh: packed ${names[*]} into $out ($(du -h "$out" | cut -f1))"
}

run() {
  local tgz=$1; shift
  local out=${OUT:-$PWD/ab-results} secs=2 reps=2 check=
  while [ $# -gt 0 ]; do
    case $1 in
      --out) out=$2; shift 2 ;;
      --seconds) secs=$2; shift 2 ;;
      --reps) reps=$2; shift 2 ;;
      --check) check=$2; shift 2 ;;
      *) echo "ab.sh run: unknown option $1" >&2; exit 2 ;;
    esac
  done
  nvidia-smi -L >/dev/null 2>&1 || { echo "ab.sh: no NVIDIA GPU here"; exit 77; }
  mkdir -p "$out"
  local w; w=$(mktemp -d /tmp/gi-ab.XXXXXX)
  tar -xzf "$tgz" -C "$w" || exit 2
  local names; mapfile -t names <"$w/ab/NAMES"
  local jl=$out/ab.jsonl failed=0
  : >"$jl"
  nvidia-smi -L | head -1 | tee "$out/gpu.txt"
  # one run: NAME LABEL ARGS... -> a line of ab.jsonl
  one() {
    local name=$1 label=$2; shift 2
    local o rc
    o=$(timeout $((secs + 25)) "$w/ab/$name/gpu_exec_bench" --threads 256 --frame-packets 64 --seconds "$secs" \
      --mode persistent "$@" 2>"$w/err")
    rc=$?
    [ $rc -eq 0 ] || { failed=1; echo "ab.sh: $name $label: exit $rc: $(tail -1 "$w/err")" >&2; }
    /usr/bin/env python3 -c 'import json,sys
m=json.loads(sys.argv[3]) if sys.argv[3].startswith("{") else {}
print(json.dumps(dict(build=sys.argv[1], case=sys.argv[2], rc=int(sys.argv[4]), measured=m)))' \
      "$name" "$label" "$(printf '%s' "$o" | grep '^{' | tail -1)" "$rc" >>"$jl"
  }
  # CHECK's test_exec_cuda: TOOL... (none: plainly, 256 threads; else under compute-sanitizer, 128, and two
  # seeds of its seeded traffic)
  checks() {
    [ -n "$check" ] && [ -x "$w/ab/$check/test_exec_cuda" ] || return 0
    local tool rc
    for tool in "$@"; do
      if [ "$tool" = none ]; then
        env GI_THREADS_PER_RING=256 "$w/ab/$check/test_exec_cuda" >"$out/check_$tool.log" 2>&1
      else
        env GI_THREADS_PER_RING=128 GI_RANDOM_SEEDS=2 compute-sanitizer --tool "$tool" --error-exitcode 9 \
          --print-limit 20 "$w/ab/$check/test_exec_cuda" >"$out/check_$tool.log" 2>&1
      fi
      rc=$?
      echo "check $check test_exec_cuda ${tool/none/(plain)}: exit $rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$out/check_$tool.log" | tr '\n' ' ')"
      [ $rc -eq 0 ] || failed=1
    done
  }
  checks none synccheck
  local cases=("1k_b64_r1:--rings 1 --payload 1024 --batch 64" "1k_b64_r4:--rings 4 --payload 1024 --batch 64"
               "64_b256_r4:--rings 4 --payload 64 --batch 256" "8k_b64_r4:--rings 4 --payload 8192 --batch 64"
               "1k_b64_r16:--rings 16 --payload 1024 --batch 64")
  local rep c n
  for rep in $(seq 1 "$reps"); do
    for c in "${cases[@]}"; do
      for n in "${names[@]}"; do
        # shellcheck disable=SC2086
        one "$n" "${c%%:*}" ${c#*:}
      done
    done
  done
  for n in "${names[@]}"; do
    one "$n" steps_1k_b64 --rings 1 --payload 1024 --batch 64 --steps
    one "$n" steps_64_b256 --rings 1 --payload 64 --batch 256 --steps
    one "$n" steps_8k_b64 --rings 1 --payload 8192 --batch 64 --steps
    one "$n" steps_64_b16 --rings 1 --payload 64 --batch 16 --steps  # the fixed cost's small batch
    one "$n" latency_1khz --rings 1 --payload 1024 --batch 64 --latency 1000
  done
  checks racecheck memcheck
  /usr/bin/env python3 - "$jl" "${names[@]}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
names = sys.argv[2:]
ref = names[0]
cases = []
for r in rows:
    if r["case"] not in cases:
        cases.append(r["case"])
def med(b, c, key):
    v = [r["measured"].get(key) for r in rows if r["build"] == b and r["case"] == c and r["rc"] == 0]
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None
print(f"{'case':<14}" + "".join(f"{n:>18}" for n in names))
for c in cases:
    if c.startswith("steps_") or c.startswith("latency_"):
        continue
    base = med(ref, c, "placed_Mpps")
    cells = []
    for n in names:
        m = med(n, c, "placed_Mpps")
        cells.append("-" if m is None else f"{m:.2f}" + ("" if n == ref or not base else f" ({m / base:.2f}x)"))
    print(f"{c + ' Mpps':<14}" + "".join(f"{x:>18}" for x in cells))
for c in cases:
    if not c.startswith("steps_"):
        continue
    print(f"\n{c}: µs per batch by step (one CTA)")
    for n in names:
        m = [r["measured"] for r in rows if r["build"] == n and r["case"] == c]
        if m and m[-1].get("steps_us"):
            s = m[-1]["steps_us"]
            print(f"  {n:<10} " + " ".join(f"{k} {v:.1f}" for k, v in s.items() if v >= 0.05) +
                  f" | batch {m[-1]['batch_us']:.1f}, staged ahead {m[-1].get('staged_ahead', 0)}/{m[-1].get('batches')}"
                  f", payloads copied beside 2b {m[-1].get('early_copied', 0)}/{m[-1].get('placed')}"
                  f", frames by lanes {m[-1].get('lane_frames', 0)}")
for n in names:
    m = [r["measured"] for r in rows if r["build"] == n and r["case"] == "latency_1khz"]
    if m and m[-1].get("latency_frames"):
        print(f"latency 1 kHz {n:<10} p50 {m[-1]['latency_p50_us']:.1f} µs, p99 {m[-1]['latency_p99_us']:.1f} µs")
PY
  rm -rf "$w"
  return $failed
}

case ${1:-} in
  pack) shift; [ $# -ge 2 ] || { echo "usage: $0 pack OUT.tgz NAME=BUILD_DIR..." >&2; exit 2; }; pack "$@" ;;
  run) shift; [ $# -ge 1 ] || { echo "usage: $0 run AB.tgz [options]" >&2; exit 2; }; run "$@" ;;
  *) sed -n '2,25p' "$0"; exit 2 ;;
esac
