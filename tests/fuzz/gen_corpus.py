#!/usr/bin/env python3
"""gen_corpus.py — write the seed corpus of every fuzz target into corpus/<target>/.

Run from anywhere: python3 tests/fuzz/gen_corpus.py.  The seeds are the
well-formed cases (one per format feature: VLAN tags, IP options, split
headers, RETH, VRT timestamps, custom maps, chained streams, reordering,
loss, duplicates) that libFuzzer mutates from; each target's input layout
is described at the top of its fuzz_<name>.c (fuzz.h, fuzz_format.h).
The config seeds are the shipped configs and tests/configs; the HTTP seeds
are typical and hostile requests.  Deterministic: rerunning rewrites the
same files.
"""
import os
import shutil
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


def u8(v): return struct.pack(">B", v & 0xff)
def u16(v): return struct.pack(">H", v & 0xffff)
def u32(v): return struct.pack(">I", v & 0xffffffff)
def u64(v): return struct.pack(">Q", v & 0xffffffffffffffff)


def ip_csum(h):
    s = sum(struct.unpack(">%dH" % (len(h) // 2), h))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def frame(udp_payload, dport, sport=40000, vlans=(), ip_opts=b"", frag=0, proto=17, pad=0):
    """Ethernet [+ 802.1Q tags] + IPv4 + UDP around udp_payload."""
    eth = bytes.fromhex("020000000002") + bytes.fromhex("020000000001")
    for i, v in enumerate(vlans):
        eth += u16(0x88a8 if i == 0 and len(vlans) == 2 else 0x8100) + u16(v)
    eth += u16(0x0800)
    ihl = 5 + len(ip_opts) // 4
    udp = u16(sport) + u16(dport) + u16(8 + len(udp_payload)) + u16(0) + udp_payload
    tot = ihl * 4 + len(udp)
    ip = u8(0x40 | ihl) + u8(0) + u16(tot) + u16(1) + u16(frag) + u8(64) + u8(proto) + u16(0) + \
        bytes([10, 0, 0, 1, 10, 0, 0, 2]) + ip_opts
    ip = ip[:10] + u16(ip_csum(ip)) + ip[12:]
    return eth + ip + udp + b"\0" * pad


# ---- formats --------------------------------------------------------------

def udp_seq(stream, ppf, seq, fr, idx, payload, flags=0):
    body = bytes((seq * 7 + i) & 0xff for i in range(payload))
    return u16(0x4749) + u8(1) + u8(flags) + u16(stream) + u16(ppf) + u32(seq) + u32(fr) + u16(idx) + \
        u16(payload) + u32(0) + u64(1_000_000 * seq) + body


def vita49(count, payload, sid=0x1234, tsi=1, tsf=2, sec=1_700_000_000, frac=0, trailer=True, ptype=1,
           class_id=False):
    words = payload // 4
    pro = 1 + (ptype in (1, 3, 4, 5, 6, 7)) + (2 if class_id else 0) + (1 if tsi else 0) + (2 if tsf else 0)
    total = pro + words + (1 if trailer else 0)
    hdr = ptype << 28 | (1 << 27 if class_id else 0) | (1 << 26 if trailer else 0) | tsi << 22 | tsf << 20 | \
        (count & 15) << 16 | total
    out = u32(hdr)
    if ptype in (1, 3, 4, 5, 6, 7):
        out += u32(sid)
    if class_id:
        out += u32(0x0012a2) + u32(0x00010002)
    if tsi:
        out += u32(sec)
    if tsf:
        out += u64(frac)
    out += bytes((count + i) & 0xff for i in range(words * 4))
    if trailer:
        out += u32(0x40000000)
    return out


def rocev2_frame(op, psn, payload, qp=0x11, va=None, dma_len=None, imm=None, deth=None, pad=0, vlans=(), body=None):
    """A RoCEv2 packet with a correct ICRC (as kernels/fmt_rocev2.h computes it); body: its payload (None:
    payload bytes of a pattern)."""
    bth = u8(op) + u8(pad << 4) + u16(0xffff) + u8(0) + struct.pack(">I", qp)[1:] + u8(0) + \
        struct.pack(">I", psn)[1:]
    ext = b""
    if deth is not None:
        ext += u32(deth) + u8(0) + struct.pack(">I", 0x22)[1:]
    if va is not None:
        ext += u64(va) + u32(0x1234) + u32(dma_len)
    if imm is not None:
        ext += u32(imm)
    body = (body if body is not None else bytes((psn + i) & 0xff for i in range(payload))) + b"\0" * pad
    pkt = frame(bth + ext + body + b"\0\0\0\0", 4791, vlans=vlans)
    l3 = 14 + 4 * len(vlans)
    ihl = (pkt[l3] & 15) * 4
    masked = bytearray(pkt[l3:l3 + ihl + 8 + 12])
    for i in (1, 8, 10, 11, ihl + 6, ihl + 7, ihl + 8 + 4):
        masked[i] = 0xff
    crc = zlib.crc32(b"\xff" * 8 + bytes(masked) + pkt[l3 + ihl + 8 + 12:-4]) & 0xffffffff
    return pkt[:-4] + struct.pack("<I", crc)


def custom_payload(seq, fr, idx, payload, sid=7):
    """The custom map custom_map() describes: seq u32 BE @0, frame u16 LE @4, index u16 BE @6,
    id u16 BE @8, timestamp u32 LE @12, header 16 bytes, 2-byte trailer."""
    hdr = u32(seq) + struct.pack("<H", fr) + u16(idx) + u16(sid) + u16(0) + struct.pack("<I", seq * 1000)
    return hdr + bytes((seq + i) & 0xff for i in range(payload)) + b"\xee\xee"


# ---- format parameters as fuzz.h reads them ------------------------------------

def p_resync(v=1000): return u32(v)
def p_vita49(step=0, sid=0x1234, has_sid=1): return u64(step) + u32(sid) + u8(has_sid)
def p_rocev2(base_va=0x10000, qp=0x11, icrc=0, close_on=0, placement=0, page_bytes=1, pages=0, rkey=None, hsb=0,
             frame_crc=0, frame_end=0):
    """fuzz.h fz_rocev2_params(): what a stream's rocev2: keys set (rkey None: not checked)."""
    return u64(base_va) + u32(qp) + u8(icrc) + u8(close_on) + u8(placement) + u32(page_bytes - 1) + u8(pages) + \
        u8(rkey is not None) + u32(rkey or 0) + u8(hsb | frame_crc << 1) + u8(frame_end)


def hsb_record(psn, fn, crc, written):
    """Holoscan Sensor Bridge's 128-byte frame-end record (kernels/fmt_rocev2.h GI_HSB_META_*), big-endian."""
    r = u32(1) + u32(psn) + u32(crc) + u64(1_700_000_000 + fn) + u32(fn * 3) + u64(written) + u32(fn & 0xffff) + \
        u64(1_700_000_001 + fn) + u32(7)
    return r + b"\0" * (128 - len(r))


def p_custom(with_frame=True):
    # header_bytes 16; fields seq, frame, index, id, timestamp: sel (bit 7 present, bit 6 whole
    # field, bit 2 little-endian, bits 0..1 width 1/2/4/8), offset, mask, shift
    f = lambda sel, off: u8(sel) + u8(off) + u64(0) + u8(0)
    return u8(15) + f(0x40 | 2, 0) + (f(0xc0 | 4 | 1, 4) + f(0xc0 | 1, 6) if with_frame else f(0, 0) + f(0, 0)) + \
        f(0xc0 | 1, 8) + f(0xc0 | 4 | 2, 12) + u8(16) + u8(2)


FORMAT_PARAMS = {1: lambda: b"", 2: p_rocev2, 3: p_vita49, 4: p_custom}


def format_input(params, pkt, packets=4, payload=64, cut=0xffff, state=(0, 0, 0), last=None, own_end=0):
    """fuzz_format.h: [cut][packets-1][payload-1][last-1][own_end][resync][params][started][seq_max][seq_origin]
    [frame]"""
    return u16(cut) + u16(packets - 1) + u16(payload - 1) + u16((last or payload) - 1) + u8(own_end) + \
        p_resync() + params + u8(state[0]) + u64(state[1]) + u64(state[2]) + pkt


# ---- exec ------------------------------------------------------------------------

def exec_input(formats, records, ports, slots=8, window=3, split=0, packets=4, payload=64, timeout_ms=0,
               params=None, last=None):
    """fuzz_exec.c's input: stream count, two bits of format per stream, geometry (the frame's last packet's
    bytes: last, None the payload's), streams, records."""
    n = len(formats)
    fb = sum((f - 1) << (2 * s) for s, f in enumerate(formats))
    # split: fuzz_exec.c takes 14 + byte % 114 when the byte's bit 7 is set
    out = u8(n - 1) + u8(fb) + u8(slots - 2) + u8(window - 1) + u8(128 + (split - 142) % 114 if split else 0) + \
        u16(packets - 1) + u16(payload - 1) + u16((last or payload) - 1) + u32(timeout_ms)
    for s, f in enumerate(formats):
        out += u16(ports[s]) + p_resync() + (params[s] if params else FORMAT_PARAMS[f]())
    for op, pkt in records:
        out += u8(op) + u16(len(pkt)) + pkt
    return out


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    shutil.rmtree(os.path.join(HERE, "corpus"), ignore_errors=True)
    P, PL = 4, 64

    # l4: [cut][frame]
    us = udp_seq(1, P, 0, 0, 0, PL)
    for name, pkt, cut in [
        ("udp", frame(us, 5000), 0xffff),
        ("vlan", frame(us, 5000, vlans=(100,)), 0xffff),
        ("qinq", frame(us, 5000, vlans=(10, 20)), 0xffff),
        ("ip_options", frame(us, 5000, ip_opts=b"\x01\x01\x01\x00"), 0xffff),
        ("fragment", frame(us, 5000, frag=0x2000), 0xffff),
        ("tcp", frame(us, 5000, proto=6), 0xffff),
        ("padded", frame(b"\x01\x02", 5000, pad=20), 0xffff),
        ("split", frame(us, 5000), 42),
        ("arp", bytes(12) + u16(0x0806) + bytes(28), 0xffff),
    ]:
        write("l4", name, u16(cut) + pkt)

    # udp_seq
    for name, pkt, cut in [
        ("ok", frame(udp_seq(1, P, 5, 1, 1, PL), 5000), 0xffff),
        ("split", frame(udp_seq(1, P, 6, 1, 2, PL), 5000), 60),
        ("bad_index", frame(udp_seq(1, P, 7, 1, 9, PL), 5000), 0xffff),
        ("short", frame(udp_seq(1, P, 7, 1, 0, PL)[:20], 5000), 0xffff),
    ]:
        write("udp_seq", name, format_input(b"", pkt, cut=cut))

    # vita49
    for name, body, params in [
        ("sid_ts", vita49(3, PL, frac=250_000_000_000), p_vita49()),
        ("ts_step", vita49(4, PL, frac=500_000), p_vita49(step=1_000_000)),
        ("no_sid", vita49(5, PL, ptype=0, tsi=0, tsf=0, trailer=False), p_vita49(has_sid=0)),
        ("class_samples", vita49(6, PL, class_id=True, tsf=1, frac=4096), p_vita49(step=64)),
        ("context", vita49(7, 16, ptype=4, trailer=False), p_vita49()),
    ]:
        write("vita49", name, format_input(params, frame(body, 4991), payload=PL))

    # rocev2 (RC = 0x00.., UC = 0x20.., UD = 0x60..)
    for name, pkt, params, state in [
        ("send_only", rocev2_frame(0x04, 8, PL), p_rocev2(), (0, 0, 0)),
        ("write_first", rocev2_frame(0x06, 12, PL, va=0x10000 + 0 * PL, dma_len=P * PL), p_rocev2(), (1, 11, 8)),
        ("write_only_imm", rocev2_frame(0x0b, 9, PL, va=0x10000 + PL, dma_len=PL, imm=7), p_rocev2(close_on=2),
         (1, 8, 8)),
        ("write_last_imm", rocev2_frame(0x29, 13, PL, imm=1), p_rocev2(close_on=1), (0, 0, 0)),
        ("ud_send_only", rocev2_frame(0x64, 20, PL, deth=0x11111111), p_rocev2(), (0, 0, 0)),
        ("padded_icrc_ignore", rocev2_frame(0x01, 21, PL - 2, pad=2), p_rocev2(icrc=1), (0, 0, 0)),
        ("ack", rocev2_frame(0x11, 22, 4), p_rocev2(), (0, 0, 0)),
        ("vlan", rocev2_frame(0x04, 23, PL, vlans=(5,)), p_rocev2(), (0, 0, 0)),
    ]:
        write("rocev2", name, format_input(params, pkt, state=state))

    # custom
    for name, body, params in [
        ("frame_index", custom_payload(10, 2, 2, PL), p_custom()),
        ("seq_only", custom_payload(11, 0, 0, PL), p_custom(with_frame=False)),
        ("short", custom_payload(12, 3, 0, PL)[:10], p_custom()),
    ]:
        write("custom", name, format_input(params, frame(body, 6000)))

    # exec: every format, in order, with reordering, loss, duplicates, timeouts, split, chains
    def seq_frames(mk, frames, order=None):
        recs = []
        n = frames * P
        idxs = order if order is not None else list(range(n))
        for j, i in enumerate(idxs):
            recs.append((1 if j % 4 == 3 else 0, mk(i)))
        return recs

    mk_us = lambda i, s=0, port=5000: frame(udp_seq(s, P, i, i // P, i % P, PL), port)
    mk_vr = lambda i, sid=0x1234: frame(vita49(i, PL, sid=sid, frac=(i * 1_000_000) % 10**12), 4991)
    mk_ro = lambda i, qp=0x11: rocev2_frame(0x26 if i % P == 0 else 0x28 if i % P == P - 1 else 0x27, i, PL, qp=qp,
                                            va=0x10000 if i % P == 0 else None, dma_len=P * PL)
    mk_cu = lambda i: frame(custom_payload(i, i // P, i % P, PL), 6000)
    write("exec", "udp_seq", exec_input([1], seq_frames(mk_us, 3), [5000]))
    write("exec", "udp_seq_reorder_loss_dup",
          exec_input([1], seq_frames(mk_us, 4, [0, 2, 1, 3, 5, 4, 4, 7, 12, 13, 14, 15, 8, 1]), [5000]))
    write("exec", "udp_seq_split_timeout",
          exec_input([1], seq_frames(mk_us, 2, [0, 1, 2]) + [(2 | 8 << 2, b"")] + seq_frames(mk_us, 1, [5, 6]),
                     [5000], split=60, timeout_ms=5))
    # one stream's in-order runs of several 2-packet frames a batch of 8: the twin's one-stream trip (2b a
    # group of frames at a time), batches in the GPU's form (op bit 2) and the host's in turn
    runs = [((1 | (j // 8 % 2) << 2) if j % 8 == 7 else 0, frame(udp_seq(0, 2, j, j // 2, j % 2, PL), 5000))
            for j in range(32)]
    write("exec", "udp_seq_runs", exec_input([1], runs, [5000], packets=2, window=6, slots=8))
    # the same sender skipping frame numbers 5 and 14, its sequence numbers unbroken: runs whose frames are not
    # consecutive
    frames = [f for f in range(18) if f not in (5, 14)]
    skipped = [((1 | (j // 8 % 2) << 2) if j % 8 == 7 else 0, frame(udp_seq(0, 2, j, frames[j // 2], j % 2, PL), 5000))
               for j in range(2 * len(frames))]
    write("exec", "udp_seq_frame_skipped", exec_input([1], skipped, [5000], packets=2, window=6, slots=8))
    # the same with the NIC's receive times in the slots (bit 31 of the timeout word)
    write("exec", "udp_seq_runs_nic", exec_input([1], runs, [5000], packets=2, window=6, slots=8,
                                                 timeout_ms=1 << 31))
    # a Holoscan Sensor Bridge stream: 3 data packets of 128 bytes and the frame-end record, each a UC WRITE ONLY
    # by page and offset (3 pages of 640 bytes), the record's WRITE ONLY with immediate naming the page; every
    # frame checked against the record's CRC (frame_crc: verify; every third frame's CRC wrong, that frame corrupt);
    # batches of two frames, in the GPU's form and the host's in turn
    HP, HPL, HPAGE = 4, 128, 640
    fb = (HP - 1) * HPL  # the frame's bytes; the record at the next 128-byte boundary
    hsb, psn, data = [], 0, b""
    for j in range(8 * HP):
        fr, idx, page = j // HP, j % HP, (j // HP) % 3
        va = 0x10000 + page * HPAGE + (idx * HPL if idx < HP - 1 else fb)
        if idx < HP - 1:
            body = bytes((psn + i) & 0xff for i in range(HPL))
            data = (data if idx else b"") + body
            pkt = rocev2_frame(0x2A, psn, HPL, va=va, dma_len=HPL, body=body)
        else:
            crc = ~zlib.crc32(data) & 0xffffffff ^ (1 if fr % 3 == 2 else 0)
            pkt = rocev2_frame(0x2B, psn, 128, va=va, dma_len=128, imm=(psn << 12 | page) & 0xffffffff,
                               body=hsb_record(psn, fr, crc, fb))
        psn += 1
        hsb.append((1 | (fr // 2 % 2) << 2 if idx == HP - 1 and fr % 2 else 0, pkt))
    # rocev2 placed by PSN, frames closed by a WRITE with immediate: frames 3 and 7 closed short after two
    # packets (the PSNs skip the two never sent), each at the end of a batch that is one run of two frames
    closed, psn = [], 0
    for fr in range(12):
        last = 1 if fr in (3, 7) else P - 1
        for idx in range(last + 1):
            op = 0x26 if idx == 0 else 0x29 if idx == last else 0x27
            pkt = rocev2_frame(op, psn, PL, va=0x10000 + fr * P * PL if idx == 0 else None,
                               dma_len=P * PL if idx == 0 else None, imm=fr if idx == last else None)
            closed.append((1 | (fr == 3) << 2 if idx == last and fr in (3, 7) else 0, pkt))
            psn += 1
        psn += P - 1 - last
    write("exec", "rocev2_closed_short", exec_input([2], closed, [4791], window=4,
                                                    params=[p_rocev2(close_on=2)]))
    write("exec", "hsb_frame_crc", exec_input([2], hsb, [4791], packets=HP, payload=HPL, window=4, slots=8,
                                              params=[p_rocev2(close_on=2, placement=1, page_bytes=HPAGE, pages=3,
                                                               hsb=1, frame_crc=1)]))
    write("exec", "vita49", exec_input([3], seq_frames(mk_vr, 3), [4991],
                                       params=[p_vita49(step=1_000_000)]))
    write("exec", "rocev2", exec_input([2], seq_frames(mk_ro, 3), [4791]))
    write("exec", "custom", exec_input([4], seq_frames(mk_cu, 3), [6000]))
    chain = [(0, rocev2_frame(0x04, i // 2, PL, qp=0x11 + i % 2)) for i in range(16)]
    write("exec", "rocev2_chain", exec_input([2, 2], chain, [4791, 4791],
                                             params=[p_rocev2(qp=0x11, icrc=1), p_rocev2(qp=0x12, icrc=1)]))
    mixed = [(0, mk_us(i)) for i in range(4)] + [(0, mk_vr(i, 0x55)) for i in range(4)] + \
        [(0, mk_cu(i)) for i in range(4)] + [(1, mk_ro(i)) for i in range(4)]
    write("exec", "four_formats", exec_input([1, 3, 4, 2], mixed, [5000, 4991, 6000, 4791],
                                             params=[b"", p_vita49(sid=0x55), p_custom(), p_rocev2()]))

    # config: the shipped configs and the broken ones the unit tests load
    for d in ("config", os.path.join("config", "examples"), os.path.join("tests", "configs")):
        for fn in sorted(os.listdir(os.path.join(SRC, d))):
            if fn.endswith(".yaml"):
                with open(os.path.join(SRC, d, fn), "rb") as f:
                    write("config", d.replace(os.sep, "_") + "_" + fn, f.read())
    # and a valid config with two tensors (tests/configs has only refused ones)
    write("config", "tensor.yaml", b"""\
memory:
  - name: pool0
ports:
  - name: sensor0
    device: net_null0
    rx_queues:
      - lcore: 1
        mempool: pool0
streams:
  - name: iq0
    port: sensor0
    match: {udp_dst_port: 5000}
    frame: {packets: 4, payload_bytes: 1024}
    tensor: {sample: ci16, byteorder: big, shape: [1024], to: cf32, scale: 3.0517578125e-05, missing: nan}
  - name: cam0
    port: sensor0
    match: {udp_dst_port: 5001}
    frame: {packets: 4, payload_bytes: 1000}
    tensor: {sample: raw10, shape: [2, 1600], to: u16}
""")

    # http
    crlf = lambda *lines: ("\r\n".join(lines) + "\r\n\r\n").encode()
    for name, req in [
        ("get", crlf("GET /metrics HTTP/1.1", "Host: x")),
        ("get_close", crlf("GET /metrics HTTP/1.1", "Host: x", "Connection: close")),
        ("head", crlf("HEAD /metrics HTTP/1.1", "Host: x")),
        ("http10", crlf("GET /metrics HTTP/1.0")),
        ("not_found", crlf("GET /other?x=1 HTTP/1.1", "Host: x")),
        ("post_body", crlf("POST /metrics HTTP/1.1", "Host: x", "Content-Length: 4") + b"abcd"),
        ("get_body", crlf("GET /metrics HTTP/1.1", "Host: x", "Content-Length: 3") + b"abc"),
        ("chunked", crlf("GET /metrics HTTP/1.1", "Host: x", "Transfer-Encoding: chunked") + b"3\r\nabc\r\n0\r\n\r\n"),
        ("pipelined", crlf("GET /metrics HTTP/1.1", "Host: x") + crlf("DELETE /metrics HTTP/1.1", "Host: x")),
        ("no_host", crlf("GET /metrics HTTP/1.1")),
        ("big_header", crlf("GET /metrics HTTP/1.1", "Host: x", "X-Big: " + "a" * 20000)),
        ("folded", crlf("GET /metrics HTTP/1.1", "Host: x", "X-A: 1", " continued")),
        ("nul", b"\0GET /metrics HTTP/1.1\r\n\r\n"),
        ("garbage", bytes(range(256))),
    ]:
        write("http", name, req)


if __name__ == "__main__":
    main()
