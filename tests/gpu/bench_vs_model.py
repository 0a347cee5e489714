#!/usr/bin/env python3
"""bench_vs_model.py — bench/gpu_exec_bench on this GPU beside bench/gpu_model.py's
prediction for it and the floors bench/gpu_floors measured (tests/gpu/run_on_gpu.sh).

usage: bench_vs_model.py BUILD_DIR GPU_NAME FLOORS.json OUT.jsonl [SECONDS]

Cases: the model's (64 B batch 256, 1 KiB and 8 KiB batch 64; 1 and 4
rings), 16 rings, and 64 B batch 16 (the fixed cost per batch), persistent;
4 rings also in launch mode.  Every run must place every packet once (no
drop, loss or duplicate).  Prints one row per case: the model's Mpps, the
measured Mpps and their ratio, the µs one CTA spends per batch and that as
a multiple of the doorbell round trip measured here.  Exit 1 if a run
failed.
"""
import json
import os
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SRC, "bench"))
import gpu_model  # noqa: E402  (bench/gpu_model.py: the model itself)

CASES = [(64, 256, 1), (64, 256, 4), (1024, 64, 1), (1024, 64, 4), (8192, 64, 1), (8192, 64, 4),
         (1024, 64, 16), (64, 256, 16), (64, 16, 1)]


def main():
    build, gpu, floors_path, out = sys.argv[1:5]
    seconds = sys.argv[5] if len(sys.argv) > 5 else "3"
    with open(os.path.join(build, "bench", "gpu_model_probe.ptx")) as f:
        parts = gpu_model.probe_counts(f.read())
    try:
        g = gpu_model.gpu_named(gpu)
    except SystemExit:
        g = None  # no assumptions for this GPU: measured figures only
    try:
        with open(floors_path) as f:
            floors = json.load(f)
    except (OSError, ValueError):
        floors = {}
    door = floors.get("doorbell_rt_p50_us")
    failed = 0
    print(f"{'payload':>7} {'batch':>5} {'rings':>5} {'mode':<10} {'model':>7} {'Mpps':>7} {'ratio':>5} "
          f"{'us/batch':>8} {'x doorbell':>10}  verdict")
    with open(out, "w") as jl:
        for payload, batch, rings in CASES:
            for mode in ("persistent", "launch"):
                if mode == "launch" and rings != 4:
                    continue
                cmd = [os.path.join(build, "bench", "gpu_exec_bench"), "--rings", str(rings), "--payload",
                       str(payload), "--batch", str(batch), "--threads", "256", "--frame-packets", "64",
                       "--seconds", seconds, "--mode", mode]
                try:
                    r = subprocess.run(cmd, capture_output=True, text=True, timeout=int(seconds) + 30)
                    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
                    m = json.loads(lines[-1]) if lines else {}
                    rc = r.returncode
                    err = (r.stderr.strip().splitlines() or [""])[-1]
                except subprocess.TimeoutExpired:
                    m, rc, err = {}, 124, "timed out"
                p = gpu_model.predict(g, parts, rings, payload, batch) if g and mode == "persistent" else {}
                mpps = m.get("placed_Mpps")
                ok = rc == 0 and bool(mpps) and m.get("drops") == 0 and m.get("lost") == 0 and \
                    m.get("duplicates") == 0
                failed += not ok
                per_batch = batch * rings / mpps if mpps else None  # µs one CTA spends per batch
                model = p.get("Mpps")
                jl.write(json.dumps(dict(mode=mode, measured=m, model=p, floors=floors, rc=rc)) + "\n")
                print(f"{payload:>7} {batch:>5} {rings:>5} {mode:<10} {model if model else '-':>7} "
                      f"{mpps if mpps else '-':>7} {('%.2f' % (mpps / model)) if mpps and model else '-':>5} "
                      f"{('%.1f' % per_batch) if per_batch else '-':>8} "
                      f"{('%.1f' % (per_batch / door)) if per_batch and door else '-':>10}  "
                      f"{'ok' if ok else 'FAIL ' + err[:60]}")
    if floors:
        print("floors: " + ", ".join(f"{k} {v}" for k, v in floors.items() if k not in ("gpu",)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
