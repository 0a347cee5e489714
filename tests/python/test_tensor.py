"""The executor's tensor conversion (kernels/tensor.h) against NumPy, bit for bit.

For every sample type x output type x byte order the configuration
accepts, with and without scale/offset, on random bytes (every float32
bit pattern NaN and infinity included), for complete frames and frames
that lost their first, a middle or their last packet, with missing zero,
nan and keep: tensor_convert (the C body, as one worker and as several)
must write exactly what this file's NumPy reference computes.  Rounding
is NumPy's: float32 arithmetic rounded at each step (no fused
multiply-add), round-to-nearest-even to float16 (astype) and bfloat16
(PyTorch's rule, written on the bits here: NumPy has no bfloat16).  NaN
compares as NaN: a NaN's payload is the FPU's business.

Run by meson (suite unit) with TENSOR_CONVERT set to the built tool.
"""
import os
import subprocess
import sys
import unittest

import numpy as np

TOOL = os.environ.get("TENSOR_CONVERT", "")

# kernels/tensor.h
SAMPLES = {"u8": 1, "u16": 2, "i16": 3, "u32": 4, "i32": 5, "f32": 6, "ci8": 7, "ci16": 8, "raw10": 9, "raw12": 10}
DTYPES = {"u8": 1, "i8": 2, "u16": 3, "i16": 4, "u32": 5, "i32": 6, "f16": 7, "bf16": 8, "f32": 9, "cf16": 10,
          "cf32": 11}
MISSING = {"zero": 0, "nan": 1, "keep": 2}
GROUP = {"u8": (1, 1), "u16": (2, 1), "i16": (2, 1), "u32": (4, 1), "i32": (4, 1), "f32": (4, 1), "ci8": (2, 2),
         "ci16": (4, 2), "raw10": (5, 4), "raw12": (3, 2)}  # bytes, values per group
SAME = {"u8": "u8", "u16": "u16", "i16": "i16", "u32": "u32", "i32": "i32", "f32": "f32", "ci8": "i8",
        "ci16": "i16"}
NP_INT = {"u8": np.uint8, "i8": np.int8, "u16": np.uint16, "i16": np.int16, "u32": np.uint32, "i32": np.int32}


def allowed(sample, to):
    """What daemon/config_check_fmt.c accepts (to None: same)."""
    cplx = sample in ("ci8", "ci16")
    raw = sample in ("raw10", "raw12")
    if to is None:
        return not raw
    if cplx:
        return to in ("cf32", "cf16")
    if to in ("cf32", "cf16"):
        return False
    if to == "u16":
        return sample in ("u8", "u16") or raw
    return True


def decode(raw, sample, big):
    """The frame's values in order: int64, or float32 for f32 samples."""
    e = ">" if big else "<"
    b = np.frombuffer(raw, np.uint8)
    if sample in ("u8",):
        return b.astype(np.int64)
    if sample == "ci8":
        return b.view(np.int8).astype(np.int64)
    if sample in ("u16", "i16", "ci16", "u32", "i32"):
        t = {"u16": "u2", "i16": "i2", "ci16": "i2", "u32": "u4", "i32": "i4"}[sample]
        return np.frombuffer(raw, e + t).astype(np.int64)
    if sample == "f32":
        return np.frombuffer(raw, e + "f4").astype(np.float32)
    g = b.reshape(-1, GROUP[sample][0]).astype(np.int64)
    if sample == "raw10":
        return np.stack([g[:, k] << 2 | (g[:, 4] >> (2 * k)) & 3 for k in range(4)], axis=1).reshape(-1)
    return np.stack([g[:, 0] << 4 | g[:, 2] & 15, g[:, 1] << 4 | g[:, 2] >> 4], axis=1).reshape(-1)


def f32_to_bf16(f):
    x = f.view(np.uint32).astype(np.uint64)
    r = ((x + 0x7FFF + ((x >> 16) & 1)) >> 16).astype(np.uint16)
    r[(x & 0x7FFFFFFF) > 0x7F800000] = 0x7FC0
    return r


def reference(raw, sample, to, big, scale, offset, missing, present, payload):
    """The tensor's bytes, as NumPy computes them."""
    with np.errstate(all="ignore"):  # overflow to infinity, inf * 0: what the executor does too
        return _reference(raw, sample, to, big, scale, offset, missing, present, payload)


def _reference(raw, sample, to, big, scale, offset, missing, present, payload):
    dt = to or SAME[sample]
    v = decode(raw, sample, big)
    affine = np.float32(scale) != 1 or np.float32(offset) != 0
    if dt in NP_INT and not (dt == "u16" and affine):
        out = (v.view(np.uint32) if sample == "f32" else v).astype(NP_INT[dt])
    else:
        f = v.astype(np.float32)
        if affine:
            f = f * np.float32(scale)
            f = f + np.float32(offset)
        if dt in ("f32", "cf32"):
            out = f
        elif dt in ("f16", "cf16"):
            out = f.astype(np.float16)
        elif dt == "bf16":
            out = f32_to_bf16(f)
        else:  # u16 with scale/offset
            out = np.where(np.isnan(f), 0, np.clip(np.rint(f), 0, 65535)).astype(np.uint16)
    gb, per = GROUP[sample]
    groups = len(raw) // gb
    if present and "0" in present and missing != "keep":
        lost = np.zeros(groups, bool)
        for p, c in enumerate(present):
            if c == "0":
                lo, hi = p * payload // gb, min(((p + 1) * payload + gb - 1) // gb, groups)
                lost[lo:hi] = True
        bits = out.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[out.itemsize]).reshape(groups, per).copy()
        nan = {"f32": 0x7FC00000, "cf32": 0x7FC00000, "f16": 0x7E00, "cf16": 0x7E00, "bf16": 0x7FC0}
        bits[lost] = nan[dt] if missing == "nan" else 0
        return bits.tobytes()
    return out.tobytes()


def run_tool(raw, sample, to, big, scale, offset, missing, present, payload, workers):
    dt = to or SAME[sample]
    args = [TOOL, str(SAMPLES[sample]), str(DTYPES[dt]), str(int(big)), str(MISSING[missing]), repr(scale),
            repr(offset), str(payload), present, str(workers)]
    r = subprocess.run(args, input=raw, capture_output=True, check=False)
    if r.returncode:
        raise AssertionError(f"{args}: exit {r.returncode}: {r.stderr.decode()}")
    return r.stdout


def same_bits(a, b, to_float, width):
    """Equal bytes, a NaN matching any NaN of the same width."""
    if a == b:
        return True
    if not to_float or len(a) != len(b):
        return False
    t = {2: np.float16, 4: np.float32}[width]
    x, y = np.frombuffer(a, t), np.frombuffer(b, t)
    both_nan = np.isnan(x) & np.isnan(y)
    return bool(np.all((x.view({2: np.uint16, 4: np.uint32}[width]) == y.view({2: np.uint16, 4: np.uint32}[width]))
                       | both_nan))


class Conversion(unittest.TestCase):
    def setUp(self):
        if not TOOL:
            self.skipTest("TENSOR_CONVERT not set")

    def check(self, sample, to, big, scale, offset, missing, present, payload, raw, workers=1):
        want = reference(raw, sample, to, big, scale, offset, missing, present, payload)
        got = run_tool(raw, sample, to, big, scale, offset, missing, present, payload, workers)
        dt = to or SAME[sample]
        width = {"f16": 2, "cf16": 2, "bf16": 2, "f32": 4, "cf32": 4}.get(dt, 0)
        bf = dt == "bf16"
        ok = same_bits(got, want, width and not bf, width) or (bf and got == want)
        if not ok:
            g, w = np.frombuffer(got, np.uint8), np.frombuffer(want, np.uint8)
            at = int(np.argmax(g != w)) if len(g) == len(w) else -1
            self.fail(f"{sample}->{dt} big={big} scale={scale} offset={offset} missing={missing} present={present!r}"
                      f" workers={workers}: {len(got)} bytes vs NumPy's {len(want)}; first difference at byte {at}")

    def test_every_combination(self):
        rng = np.random.default_rng(22)
        payload = 60  # a multiple of every group size: 1, 2, 3, 4, 5
        for sample in SAMPLES:
            for to in [None, "u16", "f32", "f16", "bf16", "cf32", "cf16"]:
                if not allowed(sample, to):
                    continue
                affines = [(1.0, 0.0)] if to is None else [(1.0, 0.0), (3.0517578125e-05, -0.25), (0.7, 1000.5)]
                for big in (False, True):
                    for scale, offset in affines:
                        raw = rng.integers(0, 256, 4 * payload, dtype=np.uint8).tobytes()
                        with self.subTest(sample=sample, to=to, big=big, scale=scale):
                            self.check(sample, to, big, scale, offset, "zero", "", payload, raw)

    def test_lost_packets(self):
        """First, middle and last packet lost; a group straddling two packets is lost with either."""
        rng = np.random.default_rng(7)
        for sample, to in [("ci16", "cf32"), ("raw10", "u16"), ("raw12", "f16"), ("i16", "bf16"), ("f32", None),
                           ("ci8", None), ("u8", "f32")]:
            gb = GROUP[sample][0]
            payload = 7 * gb + (1 if gb > 1 else 0)  # groups straddle packet boundaries when gb > 1
            n = 5 * payload - (payload % gb)
            n -= n % gb
            raw = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
            packets = -(-n // payload)
            dt = to or SAME[sample]
            float_out = dt in ("f32", "f16", "bf16", "cf32", "cf16")
            for present in ["0" + "1" * (packets - 1), "1" * 2 + "0" + "1" * (packets - 3),
                            "1" * (packets - 1) + "0", "1" * packets]:
                for missing in ["zero", "keep"] + (["nan"] if float_out else []):
                    for workers in (1, 3):
                        with self.subTest(sample=sample, present=present, missing=missing, workers=workers):
                            self.check(sample, to, True, 1.0, 0.0, missing, present, payload, raw, workers)

    def test_rounding_edges(self):
        """float16 and bfloat16 ties, the largest half, subnormals, overflow: exact floats as f32 samples."""
        edges = np.array([65504, 65519.996, 65520, 1e5, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -14,
                          1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8, -0.0, 0.5, 1.5, 2.5,
                          65535.5, 65534.5, -1.5, np.inf, -np.inf, np.nan, 3.4e38, 1e-40], dtype=np.float32)
        raw = edges.astype(">f4").tobytes()
        for to in ("f16", "bf16", "f32"):
            with self.subTest(to=to):
                self.check("f32", to, True, 1.0, 0.0, "zero", "", 4, raw)
        raw16 = np.arange(0, 65536, 1, dtype=">u2").tobytes()
        for scale, offset in [(1.0, 0.5), (0.5, 0.0), (1.5, -3.0)]:  # u16 rounding: ties to even, saturation
            with self.subTest(scale=scale, offset=offset):
                self.check("u16", "u16", True, scale, offset, "zero", "", 1024, raw16)


if __name__ == "__main__":
    unittest.main(verbosity=1 if "-q" in sys.argv else 2, argv=[sys.argv[0]])
