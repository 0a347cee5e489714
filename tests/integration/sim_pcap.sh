#!/usr/bin/env bash
# sim_pcap.sh — gpuingest-sim's pcap port, checked by tshark and by an
# independent decoder.
#
# Every later integration test trusts the sim's JSON as the ground truth for
# the daemon's accounting, so this test proves that JSON against the packets
# themselves: tshark must see exactly `sent` well-formed frames with good
# IPv4 and UDP checksums (the deliberately malformed ones included), and a
# Python decoder that shares no code with the sim must find the same
# per-stream counts of unique, duplicated, reordered and malformed packets,
# the payload pattern of kernels/udp_seq.h byte for byte, and the guards
# (first packet never lost or delayed, last never lost, reordering bounded).
#
# Needs: $GI_BUILD (build dir), tshark, python3.  Exit 77 when a tool is missing.
set -euo pipefail

: "${GI_BUILD:?GI_BUILD must point at the meson build directory}"
SIM="$GI_BUILD/tools/gpuingest-sim"

if ! command -v tshark >/dev/null 2>&1; then
	echo "SKIP: tshark is not installed (apt-get install tshark)"
	exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
	echo "SKIP: python3 is not installed"
	exit 77
fi
if [ ! -x "$SIM" ]; then
	echo "FAIL: $SIM not built"
	exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Odd payload: unaligned pattern offsets and an odd UDP length for the checksum.
# seq and frame numbers start just below 2^32 so both wrap inside the run.
args=(--streams 2 --frames 6 --packets-per-frame 24 --payload 333
      --loss 0.05 --dup 0.06 --reorder 0.12 --reorder-depth 5 --malformed 0.1
      --seq-start 4294967200 --frame-start 4294967294 --dst-port 6000)

"$SIM" --port "pcap:$tmp/a.pcap" "${args[@]}" --seed 42 >"$tmp/a.json"
"$SIM" --port "pcap:$tmp/b.pcap" "${args[@]}" --seed 42 >"$tmp/b.json"
"$SIM" --port "pcap:$tmp/c.pcap" "${args[@]}" --seed 43 >"$tmp/c.json"

# udp_seq is opaque to tshark: decode our ports as plain data, or its
# heuristic dissectors (CLTP, …) report random payload bytes as Malformed
decode_as=(-d "udp.port==6000-6001,data")
tshark -r "$tmp/a.pcap" "${decode_as[@]}" -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE \
	-T fields -E separator=/t -e frame.number -e ip.checksum.status -e udp.checksum.status \
	-e _ws.malformed -e _ws.expert.message 2>/dev/null >"$tmp/tshark.tsv"
bad_ip=$(tshark -r "$tmp/a.pcap" -o ip.check_checksum:TRUE -Y 'ip.checksum.status == "Bad"' 2>/dev/null | wc -l)

python3 - "$tmp" "$bad_ip" "${args[@]}" <<'EOF'
import json, struct, sys

tmp, bad_ip = sys.argv[1], int(sys.argv[2])
opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
PPF, PAYLOAD = int(opts["--packets-per-frame"]), int(opts["--payload"])
DEPTH, DPORT = int(opts["--reorder-depth"]), int(opts["--dst-port"])
SEQ0, FRAME0 = int(opts["--seq-start"]), int(opts["--frame-start"])
FRAMES, NSTREAMS = int(opts["--frames"]), int(opts["--streams"])
M64, M32 = (1 << 64) - 1, (1 << 32) - 1
REASONS = ["ip", "truncated", "magic", "version", "length", "index", "geometry"]
failures = []

def check(cond, what):
    if not cond:
        failures.append(what)

def seed(stream, frame):
    z = ((stream << 40) ^ frame ^ 0x5851f42d4c957f2d) & M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return z ^ (z >> 31)

def pattern(s, off, n):
    w0, w1 = off >> 3, (off + n + 7) >> 3
    raw = b"".join(struct.pack("<Q", (s + w * 0x9e3779b97f4a7c15) & M64) for w in range(w0, w1))
    return raw[off - w0 * 8: off - w0 * 8 + n]

def csum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return total

a, b, c = (json.load(open(f"{tmp}/{n}.json")) for n in "abc")
strip = lambda j: j["streams"]
check(strip(a) == strip(b), "same seed, different JSON counters")
check(strip(a) != strip(c), "different seed, identical JSON counters")

for s in a["streams"]:
    i = s["stream_id"]
    check(s["sent"] == s["sent_unique"] + s["duplicated"] + s["malformed"], f"stream {i}: sent identity")
    check(s["sent_unique"] == s["unique"] - s["dropped"], f"stream {i}: sent_unique identity")
    check(s["malformed"] == sum(s["malformed_by_reason"].values()), f"stream {i}: malformed sum")
    check(s["unique"] == FRAMES * PPF and s["frames"] == FRAMES, f"stream {i}: unique/frames")
    check(s["tx_failed"] == 0, f"stream {i}: tx_failed")
    check(s["dropped"] > 0 and s["duplicated"] > 0 and s["reordered"] > 0 and s["malformed"] > 0,
          f"stream {i}: this seed should exercise every impairment: {s}")
check(a["sent"] == sum(s["sent"] for s in a["streams"]), "top-level sent")

# the independent decoder
raw = open(f"{tmp}/a.pcap", "rb").read()
magic, vmaj, vmin, _, _, snap, link = struct.unpack("<IHHiIII", raw[:24])
check((magic, vmaj, vmin, link) == (0xa1b2c3d4, 2, 4, 1), "pcap global header")
pos, pkts = 24, []
while pos < len(raw):
    _, _, incl, orig = struct.unpack("<IIII", raw[pos:pos + 16])
    check(incl == orig, "pcap record cut short")
    pkts.append(raw[pos + 16: pos + 16 + incl])
    pos += 16 + incl
check(len(pkts) == a["sent"], f"pcap holds {len(pkts)} packets, JSON says {a['sent']}")

st = {i: dict(order=[], seen={}, dups=0, dup_reord=0, reord=0, maxord=-1, bad={r: 0 for r in REASONS},
              maxdisp=0) for i in range(NSTREAMS)}
for n, p in enumerate(pkts, 1):
    check(p[12:14] == b"\x08\x00" and p[14] == 0x45, f"pkt {n}: not Ethernet/IPv4")
    ip, udp = p[14:34], p[34:42]
    check(csum(ip) == 0xffff, f"pkt {n}: IPv4 checksum")
    tot, ulen = struct.unpack("!H", ip[2:4])[0], struct.unpack("!H", udp[4:6])[0]
    sport, dport = struct.unpack("!HH", udp[:4])
    pseudo = ip[12:20] + struct.pack("!BBH", 0, 17, ulen)
    check(csum(pseudo + p[34:34 + ulen]) == 0xffff, f"pkt {n}: UDP checksum")
    sid = dport - DPORT
    check(0 <= sid < NSTREAMS, f"pkt {n}: unknown dst port {dport}")
    s, u = st[sid], p[42:34 + ulen]
    if tot > len(p) - 14:
        s["bad"]["ip"] += 1
        continue
    check(tot == len(p) - 14 and ulen == tot - 20, f"pkt {n}: lengths")
    if len(u) < 32:
        s["bad"]["truncated"] += 1
        continue
    mg, ver, flags, hsid, ppf, seq, frame, idx, plen, rsv, ts = struct.unpack("!HBBHHIIHHIQ", u[:32])
    if mg != 0x4749:
        s["bad"]["magic"] += 1; continue
    if ver != 1:
        s["bad"]["version"] += 1; continue
    if plen != len(u) - 32:
        s["bad"]["length"] += 1; continue
    if ppf == 0 or idx >= ppf:
        s["bad"]["index"] += 1; continue
    if ppf != PPF:
        s["bad"]["geometry"] += 1; continue
    check(hsid == sid and plen == PAYLOAD and rsv == 0 and ts > 1.5e18, f"pkt {n}: header fields")
    check(flags == (1 if idx == PPF - 1 else 0), f"pkt {n}: last-packet flag")
    o = (seq - SEQ0) & M32
    check(o == ((frame - FRAME0) & M32) * PPF + idx, f"pkt {n}: seq/frame/index disagree")
    check(u[32:] == pattern(seed(sid, frame), idx * PAYLOAD, PAYLOAD), f"pkt {n}: payload pattern")
    if o in s["seen"]:
        s["dups"] += 1
        s["dup_reord"] += s["maxord"] > o
        continue
    s["seen"][o] = len(s["order"])
    s["reord"] += s["maxord"] > o
    # later packets of the stream that overtook this one
    s["maxdisp"] = max(s["maxdisp"], sum(1 for q in s["order"] if q > o))
    s["order"].append(o)
    s["maxord"] = max(s["maxord"], o)

for s in a["streams"]:
    i, d = s["stream_id"], st[s["stream_id"]]
    check(len(d["seen"]) == s["sent_unique"], f"stream {i}: unique on wire {len(d['seen'])} != {s['sent_unique']}")
    check(d["dups"] == s["duplicated"], f"stream {i}: duplicates {d['dups']} != {s['duplicated']}")
    check(d["dup_reord"] == s["duplicated_reordered"], f"stream {i}: duplicated_reordered")
    check(d["reord"] == s["reordered"], f"stream {i}: reordered {d['reord']} != {s['reordered']}")
    check(d["bad"] == s["malformed_by_reason"], f"stream {i}: malformed {d['bad']} != {s['malformed_by_reason']}")
    check(d["order"][:1] == [0], f"stream {i}: first packet not first on the wire")
    check(s["unique"] - 1 in d["seen"], f"stream {i}: last packet missing")
    check(d["maxdisp"] <= DEPTH, f"stream {i}: a packet was overtaken by {d['maxdisp']} > {DEPTH}")

# tshark's view
rows = [l.split("\t") for l in open(f"{tmp}/tshark.tsv").read().splitlines()]
n_ip = sum(s["malformed_by_reason"]["ip"] for s in a["streams"])
check(len(rows) == a["sent"], f"tshark counted {len(rows)} packets, JSON says {a['sent']}")
check(all(r[1] == "1" for r in rows), "tshark: an IPv4 checksum is not good")
check(all(r[2] == "1" for r in rows), "tshark: a UDP checksum is not good")
check(not any(r[3] for r in rows), "tshark: Malformed packet")
exceeds = sum("IPv4 total length exceeds packet length" in r[4] for r in rows)
check(exceeds == n_ip, f"tshark: {exceeds} packets with a too-long IPv4 length, sim sent {n_ip} 'ip' variants")
check(bad_ip == 0, f"tshark: {bad_ip} bad IPv4 checksums")

if failures:
    for f in failures[:20]:
        print("FAIL:", f)
    sys.exit(1)
tot = {k: sum(s[k] for s in a["streams"]) for k in ("unique", "dropped", "duplicated", "reordered", "malformed")}
print(f"ok: {a['sent']} packets, {tot}, tshark and the decoder agree with the JSON")
EOF
