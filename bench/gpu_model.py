#!/usr/bin/python3
"""gpu_model.py - the cuda executor's cost model, from its own PTX.

    bench/gpu_model.py [--nvcc PATH] [--build BUILD_DIR]        tables (bench/gpu_model.md)
    bench/gpu_model.py --predict GPU --rings R --payload B --batch N
                       [--threads T] [--frame-packets F]          one prediction, JSON

1. Compiles kernels/exec_cuda.cu with nvcc (-ptx -lineinfo for sm_90, and
   -cubin -Xptxas -v for sm_80/86/89/90) and counts, in k_persistent's PTX,
   the instructions of each part of the per-packet path by the source
   function (or loop) they come from: all, global loads/stores, shared
   loads/stores, atomics, system fences, barriers.  These are static
   counts: branches not taken on the common path count too, so they
   over-estimate the work per packet.
2. Adds them up along one batch's critical path (phases are separated by
   barriers, so their times add) with per-GPU latencies (the ASSUMED
   table below, not measured here: no GPU was available), and predicts
   packets per second per ring and for R rings (one CTA each, independent
   up to the SM count and the memory bandwidth).

tests/gpu/run_on_gpu.sh runs bench/gpu_exec_bench on a real GPU with the
same parameters and prints this prediction beside the measurement.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Per-GPU assumptions (microseconds, GHz, GB/s).  Latencies are the usual
# microbenchmark figures for each generation (pointer chasing: L2 hit,
# device-memory miss; PCIe: a GPU load from host-pinned memory), fence is a
# system-scope fence with posted PCIe writes outstanding.  Orin's "pcie"
# is a load from pinned system memory over the SoC fabric (no PCIe).
GPUS = {
    "A100": dict(name="A100 80GB PCIe (Gen4)", clk=1.41, sms=108, l2=0.14, dram=0.45, pcie=1.0, fence=0.8,
                 dram_bw=1935, match=["A100"]),
    "H100": dict(name="H100 PCIe (Gen5)", clk=1.755, sms=114, l2=0.15, dram=0.48, pcie=0.9, fence=0.7,
                 dram_bw=2000, match=["H100", "H200", "GH200"]),
    "L4": dict(name="L4 (Gen4, GDDR6)", clk=2.04, sms=58, l2=0.13, dram=0.45, pcie=1.0, fence=0.8,
               dram_bw=300, match=["L4"]),
    "Orin": dict(name="Jetson AGX Orin (iGPU)", clk=1.3, sms=16, l2=0.20, dram=0.50, pcie=0.6, fence=0.4,
                 dram_bw=204, match=["Orin"]),
}

# Cycles per instruction of one thread's dependent chain (no ILP assumed),
# and per iteration of a loop over shared-memory records (its loads' latency).
CPI = 4
BARRIERS = 10         # __syncthreads per batch on the common path outside the scans
BAR_US = 0.03

# The probe kernels (bench/gpu_model_probe.cu): one body of the per-packet path each.
PROBES = ["probe_parse", "probe_scan", "probe_run_place", "probe_run_link", "probe_frame_open", "probe_frame_end",
          "probe_solo_place", "probe_copy", "probe_make_visible", "probe_batch_end",
          # groups of several streams (not modelled below): 2a's rank scan and 2b's per-record loop
          "probe_scan_iter", "probe_commit_rec"]

# System fences executed on the path (static counts include branches not
# taken, e.g. the non-deferred publication's): kernels/README.md's list.
FENCES = {"poll": 1, "frame_open": 1, "frame_end": 0, "make_visible": 2, "batch_end": 1}

CLASSES = [
    ("ld_global", re.compile(r"^ld(\.[a-z]+)*\.global")),
    ("st_global", re.compile(r"^st(\.[a-z]+)*\.global")),
    ("ld_shared", re.compile(r"^ld(\.[a-z]+)*\.shared")),
    ("st_shared", re.compile(r"^st(\.[a-z]+)*\.shared")),
    ("ld_generic", re.compile(r"^ld(\.[a-z0-9]+)*$|^ld\.(volatile\.)?(u|s|b|f)")),
    ("st_generic", re.compile(r"^st(\.[a-z0-9]+)*$|^st\.(volatile\.)?(u|s|b|f)")),
    ("atomic", re.compile(r"^(atom|red)\.")),
    ("fence_sys", re.compile(r"^(membar\.sys|fence\.sc\.sys|fence\.acq_rel\.sys)")),
    ("barrier", re.compile(r"^(bar\.sync|barrier\.sync|bar\.red)")),
]


def nvcc_path(arg):
    for p in [arg, "/usr/local/cuda/bin/nvcc"]:
        if p and os.access(p, os.X_OK):
            return p
    sys.exit("gpu_model.py: nvcc not found (--nvcc PATH)")


def compile_ptx(nvcc, build, tmp):
    inc = ["-I" + SRC, "-I" + os.path.join(SRC, "kernels"), "-I" + build]
    ptx = os.path.join(tmp, "k.ptx")
    subprocess.run([nvcc, "-std=c++17", "-O3", "-D_GNU_SOURCE", "-arch=sm_90", "-ptx", "-lineinfo", "-o", ptx]
                   + inc + [os.path.join(SRC, "kernels", "exec_cuda.cu")], check=True)
    probe = os.path.join(tmp, "probe.ptx")
    subprocess.run([nvcc, "-std=c++17", "-O3", "-D_GNU_SOURCE", "-arch=sm_90", "-ptx", "-o", probe]
                   + inc + [os.path.join(SRC, "bench", "gpu_model_probe.cu")], check=True)
    res = {}
    for sm in (80, 86, 89, 90):
        out = subprocess.run([nvcc, "-std=c++17", "-O3", "-D_GNU_SOURCE", "-arch=sm_%d" % sm, "-cubin",
                              "-Xptxas", "-v", "-o", os.path.join(tmp, "k.cubin")] + inc
                             + [os.path.join(SRC, "kernels", "exec_cuda.cu")],
                             check=True, capture_output=True, text=True).stderr
        kern = props = None
        for line in out.splitlines():
            m = re.search(r"Compiling entry function '(\w+)'", line)
            if m:
                kern = m.group(1)
            m = re.search(r"Function properties for (\S+)", line)
            if m:  # an entry's, or a non-inlined device function's (not counted here)
                props = m.group(1)
            m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if m and kern and props == kern:
                res.setdefault(kern, {})[sm] = {"stack": int(m.group(1)), "spill": int(m.group(2)) + int(m.group(3))}
            m = re.search(r"Used (\d+) registers", line)
            if m and kern:
                res[kern][sm]["regs"] = int(m.group(1))
    return open(ptx).read(), open(probe).read(), res


def demangle(names):
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    short = []
    for n in out[:len(names)]:
        n = re.sub(r"\(.*$", "", n)  # drop the parameter list
        short.append(n.split("::")[-1])
    return short


def parse_ptx(ptx, entry="k_persistent"):
    """[(file, line, function, opcode)] for every instruction of `entry`."""
    files = dict((int(m.group(1)), m.group(2)) for m in re.finditer(r'\.file\s+(\d+)\s+"([^"]+)"', ptx))
    strs = {}
    for m in re.finditer(r"\$L__info_string(\d+):\n((?:\.b8 [0-9,]+\n)+)", ptx):
        b = bytes(int(x) for x in re.findall(r"\d+", m.group(2).replace(".b8", "")))
        strs[int(m.group(1))] = b.split(b"\0")[0].decode()
    keys = sorted(strs)
    names = dict(zip(keys, demangle([strs[k] for k in keys]))) if keys else {}
    start = re.search(r"\.entry\s+%s\(" % re.escape(entry), ptx).start()
    end = ptx.find(".entry ", start + 10)
    body = ptx[start:end if end > 0 else len(ptx)]
    cur = (None, 0, entry)
    insns = []
    for line in body.splitlines():
        t = line.strip()
        if t.startswith(".loc"):
            m = re.match(r"\.loc\s+(\d+)\s+(\d+)\s+\d+(?:,\s*function_name\s+\$L__info_string(\d+))?", t)
            if m:
                fn = names.get(int(m.group(3)), "?") if m.group(3) else entry
                cur = (os.path.basename(files.get(int(m.group(1)), "?")), int(m.group(2)), fn)
            continue
        if not t or t.startswith((".", "//", "$", "{", "}", ")", "(")) or t.endswith(":"):
            continue
        op = t.split()[0]
        if op.startswith("@"):
            op = t.split()[1]
        insns.append((cur[0], cur[1], cur[2], op.rstrip(";")))
    return insns


def classify(op):
    for name, rx in CLASSES:
        if rx.search(op):
            return name
    return "alu"


def counts(insns):
    c = {"all": 0}
    for _, _, _, op in insns:
        c["all"] += 1
        k = classify(op)
        c[k] = c.get(k, 0) + 1
    return c


def probe_counts(probe_ptx):
    missing = [k for k in PROBES if not re.search(r"\.entry\s+%s\(" % re.escape(k), probe_ptx)]
    if missing:
        sys.exit("gpu_model.py: the probes' PTX lacks %s (bench/gpu_model_probe.cu)" % ", ".join(missing))
    parts = {k: counts(parse_ptx(probe_ptx, k)) for k in PROBES}
    empty = [k for k in PROBES if parts[k]["all"] < 2]
    if empty:
        sys.exit("gpu_model.py: probes with no body left in their PTX: %s" % ", ".join(empty))
    return parts


def gpu_named(name):
    key = next((k for k, g in GPUS.items() if any(m.lower() in name.lower() for m in g["match"])), None)
    if not key:
        sys.exit("gpu_model.py: no assumptions for a GPU named '%s' (known: %s)" % (name, ", ".join(GPUS)))
    return GPUS[key]


def lanes_for(payload):
    chunks, lanes = (payload + 15) // 16, 1
    while lanes < chunks and lanes < 32:
        lanes *= 2
    return lanes


def predict(g, pc, rings, payload, batch, threads=256, frame_packets=64, pkt_lat="l2"):
    """Microseconds per batch on one CTA (one stream per ring), by step, and the rates.  pc: probe counts."""
    us = lambda cycles: cycles / (g["clk"] * 1000.0)
    ins = lambda p: pc[p]["all"]
    lat = g[pkt_lat]
    n, warps, lanes = batch, threads // 32, lanes_for(payload)
    passes = math.ceil(n / threads)
    frames = max(1.0, n / frame_packets)          # frames a batch opens and ends
    published = min(1.0, n / frame_packets)       # batches that publish a frame (then 2 fences in phase 4)
    t = {}
    t["poll"] = g["pcie"] + FENCES["poll"] * g["fence"]  # doorbell acquire: load + system fence
    t["stage"] = g["pcie"] + n * 12 / 25000.0     # descriptors over PCIe (12 B each), one round trip
    # a thread per packet: header in L2, map and stream config in L2, then its instructions
    t["parse"] = lat + 2 * g["l2"] + passes * us(ins("probe_parse") * CPI)
    # two block scans (ranks; frame starts), each 3 barriers per pass
    t["scans"] = 2 * passes * (us(ins("probe_scan") * CPI) + 3 * BAR_US)
    # a thread per record: its place (slot header, bitmap word: L2), then its link
    t["run"] = passes * us((ins("probe_run_place") + ins("probe_run_link")) * CPI) + 2 * g["l2"]
    # thread 0, per frame: open (fence), end; then a thread per record: bit (atomic OR) and state
    t["sequence"] = (frames * (FENCES["frame_open"] * g["fence"] + 3 * g["l2"]
                               + us((ins("probe_frame_open") + ins("probe_frame_end")) * CPI))
                     + passes * us(ins("probe_solo_place") * CPI) + g["l2"])
    rounds = math.ceil(n / (warps * (32 // lanes)))
    iters = math.ceil(payload / (16 * lanes))
    t["place"] = rounds * iters * lat             # a lane's loads wait one latency per 16-byte chunk
    t["commit"] = published * FENCES["make_visible"] * g["fence"] + us(ins("probe_make_visible") * CPI)
    t["end"] = us(ins("probe_batch_end") * CPI) + FENCES["batch_end"] * g["fence"]
    t["barriers"] = BARRIERS * BAR_US
    total = sum(t.values())
    per_ring = n / total                          # Mpps = packets per microsecond
    r = min(rings, g["sms"])
    bw_cap = g["dram_bw"] * 1e3 / (2.0 * payload)  # Mpps: each payload read and written once
    mpps = min(r * per_ring, bw_cap)
    return {"gpu": g["name"], "rings": rings, "payload": payload, "batch": batch, "threads": threads,
            "frame_packets": frame_packets, "us_per_batch": round(total, 2),
            "steps_us": {k: round(v, 2) for k, v in t.items()}, "Mpps_per_ring": round(per_ring, 2),
            "Mpps": round(mpps, 2), "Gbps_payload": round(mpps * payload * 8e-3, 1),
            "bound": "memory bandwidth" if mpps < r * per_ring else "per-batch latency chain"}


def md_table(rows, head):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nvcc")
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--predict")
    ap.add_argument("--rings", type=int, default=1)
    ap.add_argument("--payload", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=256)
    ap.add_argument("--frame-packets", type=int, default=64)
    ap.add_argument("--probe-ptx", help="with --predict: the probes' PTX as the build made it (meson's "
                    "bench/gpu_model_probe.ptx; the `gpu_model` test), instead of compiling them here")
    a = ap.parse_args()
    if a.probe_ptx:
        if not a.predict:
            sys.exit("gpu_model.py: --probe-ptx goes with --predict")
        with open(a.probe_ptx) as f:
            parts = probe_counts(f.read())
        print(json.dumps(predict(gpu_named(a.predict), parts, a.rings, a.payload, a.batch, a.threads,
                                 a.frame_packets)))
        return
    if not os.path.exists(os.path.join(a.build, "gi_build_config.h")):
        sys.exit("gpu_model.py: %s has no gi_build_config.h: configure a build first (meson setup build)" % a.build)
    with tempfile.TemporaryDirectory() as tmp:
        ptx, probe_ptx, res = compile_ptx(nvcc_path(a.nvcc), a.build, tmp)
    insns = parse_ptx(ptx)
    parts = probe_counts(probe_ptx)
    if a.predict:
        print(json.dumps(predict(gpu_named(a.predict), parts, a.rings, a.payload, a.batch, a.threads,
                                 a.frame_packets)))
        return

    print("## ptxas (-Xptxas -v): registers, stack, spills\n")
    rows = []
    for k in ("k_persistent", "k_pass", "k_tick", "k_clock_probe"):
        rows.append([k] + ["%d regs, %d B stack, %d B spill" % (res[k][sm]["regs"], res[k][sm]["stack"],
                                                              res[k][sm]["spill"]) for sm in (80, 86, 89, 90)])
    print(md_table(rows, ["kernel", "sm_80", "sm_86", "sm_89", "sm_90"]))
    print("\n## sm_90 PTX: static instructions of each body of the path (bench/gpu_model_probe.cu)\n")
    cols = ["all", "ld_global", "st_global", "ld_generic", "st_generic", "ld_shared", "st_shared", "atomic",
            "fence_sys", "barrier"]
    rows = [[p] + [parts[p].get(c, 0) for c in cols] for p in PROBES]
    tot = counts(insns)
    rows.append(["(k_persistent, whole)"] + [tot.get(c, 0) for c in cols])
    print(md_table(rows, ["part"] + cols))
    print("\n## predictions (packets in L2, as a NIC's recent writes are; batch 64, 256 threads, 64-packet frames;"
          " 64 B also with batch 256)\n")
    rows = []
    for key, g in GPUS.items():
        for payload, batch in ((64, 64), (64, 256), (1024, 64), (8192, 64)):
            p1 = predict(g, parts, 1, payload, batch)
            p4 = predict(g, parts, 4, payload, batch)
            rows.append([key, payload, batch, p1["us_per_batch"], p1["Mpps"], p4["Mpps"], p4["Gbps_payload"],
                         p4["bound"]])
    print(md_table(rows, ["GPU", "payload B", "batch", "µs/batch", "Mpps 1 ring", "Mpps 4 rings",
                          "Gb/s 4 rings", "4 rings bound by"]))
    print("\n## one batch, step by step (H100, 4 rings)\n")
    rows = []
    for payload, batch in ((64, 256), (1024, 64), (8192, 64)):
        p = predict(GPUS["H100"], parts, 4, payload, batch)
        rows.append([payload, batch] + [p["steps_us"][k] for k in p["steps_us"]] + [p["us_per_batch"]])
    print(md_table(rows, ["payload", "batch"] + list(predict(GPUS["H100"], parts, 1, 64, 64)["steps_us"])
                   + ["total µs"]))
    sensitivity(parts)


def sensitivity(parts):
    global CPI
    print("\n## sensitivity: H100, 4 rings, Mpps when one assumption changes\n")
    rows = []
    base_cpi = CPI
    cases = [("as assumed", {}, base_cpi), ("fence x2 (1.4 µs)", {"fence": 1.4}, base_cpi),
             ("fence x0.5", {"fence": 0.35}, base_cpi), ("PCIe read x2 (1.8 µs)", {"pcie": 1.8}, base_cpi),
             ("packets in DRAM, not L2", {"l2_pkt": True}, base_cpi), ("CPI 2", {}, 2), ("CPI 8", {}, 8)]
    for name, over, cpi in cases:
        g = dict(GPUS["H100"])
        lat = "dram" if over.pop("l2_pkt", False) else "l2"
        g.update(over)
        CPI = cpi
        row = [name]
        for payload, batch in ((64, 256), (1024, 64), (8192, 64)):
            row.append(predict(g, parts, 4, payload, batch, pkt_lat=lat)["Mpps"])
        rows.append(row)
    CPI = base_cpi
    print(md_table(rows, ["assumption", "64 B (batch 256)", "1 KiB (batch 64)", "8 KiB (batch 64)"]))


if __name__ == "__main__":
    main()
