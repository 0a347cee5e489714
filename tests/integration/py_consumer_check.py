#!/usr/bin/python3
"""py_consumer_check.py — consume one stream with the gpuingest Python module
and hold every frame to what gpuingest-sim sent (python_consumer.sh).

Per frame: the payload byte-exact against the simulator's pattern
(kernels/udp_seq.h, vectorised here) over the packets that arrived; the
metadata (sensor_id, the sender's frame number following on modulo 2^32,
expected == the ring's packets, received == bits in the bitmap, complete
frames whole); copy() equal to what was verified; valid().  Host rings: the
array from frame.numpy() is the ring itself (its address is frame.data,
read-only, shares memory with a second view).  GPU rings: the CUDA Array
Interface and DLPack hand out frame.dev_ptr on (kDLCUDA, info.cuda_device),
read back from the capsule's DLManagedTensor and released the way a
consumer does; the bytes come through copy().

At the end (the daemon closed the ring, so the simulator has exited and
written its JSON): the library's accounting identity, the first sender frame
number and the frame count against the simulator's, the geometry, and with
--clean only complete frames and no overrun.

Prints one JSON object (gpuingest-frames' keys, so check_accounting.py reads
it, plus this checker's own) and exits 1 on any mismatch, 2 if the ring
cannot be opened.
"""
import argparse
import ctypes
import importlib
import json
import os
import sys

import numpy as np

import gpuingest

# the NumPy reference of the executor's tensor conversion (tests/python/test_tensor.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import test_tensor  # noqa: E402

M64 = (1 << 64) - 1
MAX_PROBLEMS = 10


def pattern_seed(stream_id, frame):
    """gi_pattern_seed(): splitmix64 of (stream_id << 40) ^ frame."""
    z = ((stream_id & 0xFFFF) << 40) ^ (frame & 0xFFFFFFFF) ^ 0x5851F42D4C957F2D
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def pattern(stream_id, frame, nbytes):
    """The frame's bytes as gpuingest-sim sends them: little-endian words
    seed + w * 0x9e3779b97f4a7c15 (uint64 arithmetic wraps, as in C)."""
    words = np.arange((nbytes + 7) // 8, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    words += np.uint64(pattern_seed(stream_id, frame))
    return words.astype("<u8", copy=False).view(np.uint8)[:nbytes]


class TensorSpec:
    """--tensor SAMPLE,TO,BYTEORDER,SCALE,OFFSET,MISSING: the stream's tensor: block as configured, and a
    frame's tensor held to NumPy's conversion of the bytes that were sent (tests/python/test_tensor.py)."""

    def __init__(self, arg):
        self.sample, to, order, scale, offset, self.missing = arg.split(",")
        self.to = None if to == "same" else to
        self.big, self.scale, self.offset = order == "big", float(scale), float(offset)
        self.dtype = self.to or test_tensor.SAME[self.sample]
        self.width = {"f16": 2, "cf16": 2, "f32": 4, "cf32": 4}.get(self.dtype, 0)  # float types: NaN is NaN

    def want(self, sent, present, payload_bytes):
        """The tensor's bytes for the frame's bytes `sent` and its packets' `present` flags."""
        mask = "".join("1" if p else "0" for p in present)
        return test_tensor.reference(sent.tobytes(), self.sample, self.to, self.big, self.scale, self.offset,
                                     self.missing, mask, payload_bytes)

    def same(self, got, want):
        return test_tensor.same_bits(got, want, bool(self.width), self.width or 4)


def open_ring(a, who):
    """The ring a.shm (waiting a.wait s), then a.ready created; exits 2 if it cannot be opened."""
    try:
        ring = gpuingest.open(a.shm, timeout=a.wait)
    except gpuingest.Error as e:
        print(f"{who}: {a.shm}: {e}", file=sys.stderr)
        sys.exit(2)
    if a.ready:
        with open(a.ready, "w"):
            pass
    return ring


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    # dlpack.h, written out again here: the check must not trust the module's own copy
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.CFUNCTYPE(None, ctypes.c_void_p))]


capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(
    ("PyCapsule_SetName", ctypes.pythonapi))
USED = ctypes.create_string_buffer(b"used_dltensor")  # a capsule keeps its name pointer


class Checker:
    def __init__(self, args, info):
        self.a, self.info = args, info
        self.problems = []
        self.t = dict(frames_seen=0, packets_verified=0, bytes_verified=0, mismatches=0, header_errors=0,
                      zero_copy_checked=0, copies_checked=0, cai_checked=0, dlpack_checked=0, invalid_after_use=0)
        self.first_sensor_frame = None
        self.first_frame = None  # the ring's number of the first frame returned
        self.prev = None  # (ring frame, sensor frame) of the previous frame

    def problem(self, frame, text, counter="header_errors"):
        self.t[counter] += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"frame {frame.frame}: {text}")

    def metadata(self, f):
        info = self.info
        present = f.present
        if f.sensor_id != self.a.sensor_id:
            self.problem(f, f"sensor_id {f.sensor_id}, the simulator's stream is {self.a.sensor_id}")
        if f.expected != info.packets or len(present) != f.expected:
            self.problem(f, f"expected {f.expected} packets, the ring has {info.packets}")
        if f.nbytes != info.frame_bytes or f.payload_bytes != info.payload_bytes:
            self.problem(f, f"{f.nbytes} bytes of {f.payload_bytes}-byte packets, the ring says "
                            f"{info.frame_bytes} of {info.payload_bytes}")
        if int(present.sum()) != f.received or [i for i in range(f.expected) if f.packet_present(i)] != \
                list(np.flatnonzero(present)):
            self.problem(f, f"received {f.received}, the bitmap has {int(present.sum())} bits")
        whole = f.state in ("complete", "corrupt")
        if whole and f.received != f.expected:
            self.problem(f, f"{f.state} with {f.received} of {f.expected} packets")
        if f.state not in ("complete", "partial", "timed_out", "corrupt"):
            self.problem(f, f"state {f.state}")
        if self.a.clean and (f.state != "complete" or f.received != f.expected):
            self.problem(f, f"{f.state}, {f.received}/{f.expected} packets on clean traffic")
        if f.sender is not None:
            self.problem(f, f"a sender record on udp_seq: {f.sender}")
        if self.first_sensor_frame is None:
            self.first_sensor_frame, self.first_frame = f.sensor_frame, f.frame
        if self.prev is not None:
            gap = f.frame - self.prev[0]
            if gap <= 0 or (self.a.clean and gap != 1):
                self.problem(f, f"ring frame {f.frame} after {self.prev[0]}")
            if (self.prev[1] + gap) & 0xFFFFFFFF != f.sensor_frame:
                self.problem(f, f"sender frame {f.sensor_frame} {gap} frame(s) after {self.prev[1]}")
        if f.sensor_frame > 0xFFFFFFFF:
            self.problem(f, f"sender frame {f.sensor_frame} is wider than udp_seq's 32 bits")
        self.prev = (f.frame, f.sensor_frame)
        return present

    def host_bytes(self, f):
        """The zero-copy view, checked to be the ring itself."""
        arr = f.numpy()
        address = arr.__array_interface__["data"][0]
        if address != f.data or arr.nbytes != f.nbytes or arr.base is None:
            self.problem(f, f"numpy() is at 0x{address:x} ({arr.nbytes} bytes), the frame at 0x{f.data:x}")
        if arr.flags.writeable or arr.flags.owndata or not np.shares_memory(arr, f.numpy()):
            self.problem(f, "numpy() is writable, owns its data or does not share memory with a second view")
        self.t["zero_copy_checked"] += 1
        if f.__dlpack_device__() != (1, 0) or hasattr(f, "__cuda_array_interface__"):
            self.problem(f, "a host frame claims to be device memory")
        return arr

    def device_bytes(self, f):
        """CUDA Array Interface and DLPack give the device pointer (the tensor's, typed, when the stream has a
        tensor: block); the bytes come through copy()."""
        info = self.info
        cai = f.__cuda_array_interface__
        if info.tensor_dtype:
            _, typestr, (code, bits), per = gpuingest._DTYPES[f._f.tensor_dtype]
            address, shape = f._f.tensor, info.tensor_shape
            cai_shape = shape + ((per,) if per > 1 else ())
        else:
            address, shape, typestr, code, bits, cai_shape = f.dev_ptr, (f.nbytes,), "|u1", 1, 8, (f.nbytes,)
        if cai["data"] != (address, False) or cai["shape"] != cai_shape or cai["typestr"] != typestr or \
                cai["version"] != 3 or cai.get("strides") is not None:
            self.problem(f, f"__cuda_array_interface__ {cai}, expected 0x{address:x} {cai_shape} {typestr}")
        self.t["cai_checked"] += 1
        if f.__dlpack_device__() != (2, info.cuda_device):
            self.problem(f, f"__dlpack_device__ {f.__dlpack_device__()}, expected (2, {info.cuda_device})")
        live = len(gpuingest._dl_live)
        cap = f.__dlpack__(stream=1)
        mt = DLManagedTensor.from_address(capsule_pointer(cap, b"dltensor"))
        t = mt.dl_tensor
        got = (t.data, t.device.device_type, t.device.device_id, t.ndim, t.shape[0], t.dtype.code, t.dtype.bits,
               t.dtype.lanes, t.strides, t.byte_offset)
        got = got[:3] + (t.ndim, tuple(t.shape[d] for d in range(t.ndim))) + got[5:]
        want = (address, 2, info.cuda_device, len(shape), shape, code, bits, 1, None, 0)
        if got != want:
            self.problem(f, f"DLManagedTensor {got}, expected {want}")
        # what torch.from_dlpack does: take the capsule, and later call the deleter once
        capsule_set_name(cap, ctypes.addressof(USED))
        deleter, address = mt.deleter, ctypes.addressof(mt)
        del mt, t, cap
        deleter(address)
        if len(gpuingest._dl_live) != live:
            self.problem(f, "the DLPack deleter did not release the tensor")
        self.t["dlpack_checked"] += 1
        if GPU_LIBS and not info.tensor_dtype:  # with a tensor, tensor() checks what the libraries see
            self.gpu_libs(f)
        try:
            f.numpy()
            self.problem(f, "numpy() handed out a GPU frame")
        except gpuingest.Error:
            pass
        return None

    def gpu_libs(self, f):
        """On a real GPU (GI_PY_GPU_LIBS=1, tests/gpu/run_on_gpu.sh): CuPy and PyTorch take the frame
        without a copy (same device address) and read the same bytes copy() does."""
        want = f.copy()
        for name, lib in GPU_LIBS.items():
            if name == "cupy":
                a = lib.asarray(f)
                ptr, got = a.data.ptr, lib.asnumpy(a)
            else:
                t = lib.from_dlpack(f)
                ptr, got = t.data_ptr(), t.cpu().numpy()
            if ptr != f.dev_ptr:
                self.problem(f, f"{name} copied the frame: address 0x{ptr:x}, dev_ptr 0x{f.dev_ptr:x}")
            elif not np.array_equal(got, want):
                self.problem(f, f"{name} read other bytes than copy()", counter="mismatches")
            self.t[name + "_checked"] = self.t.get(name + "_checked", 0) + 1

    def frame(self, f):
        present = self.metadata(f)
        arr = self.device_bytes(f) if f.dev_ptr else self.host_bytes(f)
        try:
            copy = f.copy()
        except gpuingest.Overrun:
            return  # counted by the library as an overrun
        if arr is not None:
            if not np.array_equal(copy, arr):
                self.problem(f, "copy() differs from numpy()", "mismatches")
            self.t["copies_checked"] += 1
        data = copy
        want = pattern(f.sensor_id, f.sensor_frame, f.nbytes)
        pb = f.payload_bytes
        data_packets = (f.nbytes + pb - 1) // pb
        if present[:data_packets].all():
            bad = int(np.count_nonzero(data != want))
            packets, nbytes = data_packets, f.nbytes
        else:
            mask = np.repeat(present[:data_packets], pb)[:f.nbytes]
            bad = int(np.count_nonzero((data != want) & mask))
            packets, nbytes = int(present[:data_packets].sum()), int(mask.sum())
        if arr is not None and not f.valid():
            self.t["invalid_after_use"] += 1  # overwritten while verified: an overrun, not a mismatch
            return
        if bad:
            self.problem(f, f"{bad} payload bytes differ from the pattern", "mismatches")
            self.t["mismatches"] += bad - 1
        self.t["packets_verified"] += packets
        self.t["bytes_verified"] += nbytes
        self.t["frames_seen"] += 1
        if self.a.tensor:
            self.tensor(f, want, present[:data_packets])

    def tensor(self, f, sent, present):
        """The frame's tensor (--tensor): the simulator's bytes converted by NumPy, lost samples as configured;
        zero-copy where the frame lives (host: the ring; GPU: its device address for DLPack and CuPy/PyTorch)."""
        spec = self.a.tensor
        want = spec.want(sent, present, f.payload_bytes)
        dt = spec.dtype
        if f.tensor_dtype != dt or self.info.tensor_dtype != dt:
            self.problem(f, f"tensor dtype {f.tensor_dtype!r} (ring {self.info.tensor_dtype!r}), expected {dt!r}")
        t = f.tensor()
        if f.dev_ptr:
            if not isinstance(t, gpuingest.Tensor) or t.address != f._f.tensor or not t.address:
                self.problem(f, f"tensor() of a GPU frame is {t!r}")
            for name, lib in GPU_LIBS.items():  # the libraries' own import of the device memory
                g = lib.from_dlpack(f) if name == "torch" else lib.asarray(f)
                host = g.cpu().numpy() if name == "torch" else lib.asnumpy(g)
                if tuple(g.shape)[:len(self.info.tensor_shape)] != self.info.tensor_shape or \
                        not spec.same(host.tobytes(), want):
                    self.problem(f, f"{name}: tensor {tuple(g.shape)} {g.dtype} differs from NumPy's", "mismatches")
                self.t[name + "_tensors_checked"] = self.t.get(name + "_tensors_checked", 0) + 1
        else:
            if t.__array_interface__["data"][0] != f._f.tensor or t.flags.writeable:
                self.problem(f, "tensor() is not the ring's own read-only memory")
            if t.shape[:len(self.info.tensor_shape)] != self.info.tensor_shape:
                self.problem(f, f"tensor() shape {t.shape}, the ring says {self.info.tensor_shape}")
        try:
            got = f.copy_tensor().tobytes()
        except gpuingest.Overrun:
            return
        if not spec.same(got, want):
            g, w = np.frombuffer(got, np.uint8), np.frombuffer(want, np.uint8)
            self.problem(f, f"tensor differs from NumPy's conversion ({int(np.count_nonzero(g != w))} bytes)",
                         "mismatches")
        self.t["tensors_verified"] = self.t.get("tensors_verified", 0) + 1

    def finish(self, ring, sim_path):
        s = ring.stats()
        t = self.t
        kinds = ("complete", "partial", "timed_out", "corrupt", "missing", "overruns", "skipped")
        if s["started"] and sum(s[k] for k in kinds) != s["next_frame"] - s["first_frame"]:
            self.problems.append(f"library accounting: {s} does not add up to next_frame - first_frame")
            t["header_errors"] += 1
        t["header_errors"] += s["protocol_errors"]
        with open(sim_path) as fp:
            sim = {x["stream_id"]: x for x in json.load(fp)["streams"]}[self.a.sensor_id]
        checks = [
            # the ring starts reorder_window - 1 frame numbers before the first frame sent
            # (reordered packets of earlier frames would still be placed); those stay missing
            ("frames numbered from the first one returned", s["next_frame"] - (self.first_frame or 0),
             sim["frames"]),
            ("first sender frame number", self.first_sensor_frame, sim["frame_start"]),
            ("packets per frame", self.info.packets, sim["packets_per_frame"]),
            ("payload bytes", self.info.payload_bytes, sim["payload_bytes"]),
            ("frame bytes", self.info.frame_bytes, sim["frame_bytes"]),
            # a frame found overwritten while checked moved from its state to overruns
            ("frames the library counted == frames verified", s["frames"], t["frames_seen"]),
        ]
        if self.a.clean:
            checks += [("complete frames", s["complete"], sim["frames"]),
                       ("missing frames (the window's lead-in only)", s["missing"],
                        (self.first_frame or 0) - s["first_frame"]),
                       ("overruns", s["overruns"], 0),
                       ("bytes verified", t["bytes_verified"], sim["frames"] * sim["frame_bytes"])]
        for what, got, want in checks:
            if got != want:
                self.problems.append(f"{what}: {got}, expected {want}")
                t["header_errors"] += 1
        return s


def gpu_libraries():
    """GI_PY_GPU_LIBS=1: the CuPy / PyTorch check on a real GPU; at least one must be importable."""
    if os.environ.get("GI_PY_GPU_LIBS") != "1":
        return {}
    libs = {}
    for name in ("cupy", "torch"):
        try:
            libs[name] = importlib.import_module(name)
        except ImportError:
            pass
    if not libs:
        sys.exit("py_consumer_check: GI_PY_GPU_LIBS=1 but neither cupy nor torch imports")
    return libs


GPU_LIBS = {}


def main():
    global GPU_LIBS
    GPU_LIBS = gpu_libraries()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shm", required=True, help="the ring: /SHM-NAME or a stream name")
    ap.add_argument("--stream", required=True, help="the daemon's name of the stream")
    ap.add_argument("--sensor-id", type=int, required=True, help="the simulator's stream_id for it")
    ap.add_argument("--sim", required=True, help="the simulator's JSON, read once the ring is closed")
    ap.add_argument("--device", choices=("host", "gpu"), required=True, help="where the frames must be")
    ap.add_argument("--clean", action="store_true", help="clean traffic: only complete frames, no overrun")
    ap.add_argument("--wait", type=float, default=20.0)
    ap.add_argument("--ready", help="create this file once the ring is open (the test's go signal for traffic)")
    ap.add_argument("--tensor", type=TensorSpec, help="SAMPLE,TO,BYTEORDER,SCALE,OFFSET,MISSING: the stream's "
                    "tensor: block, each frame's tensor checked against NumPy's conversion of what was sent")
    a = ap.parse_args()

    ring = open_ring(a, "py_consumer_check")
    with ring:
        info = ring.info
        c = Checker(a, info)
        if info.stream != a.stream or info.in_device != (a.device == "gpu"):
            c.problems.append(f"ring {info}: expected stream {a.stream} in {a.device} memory")
            c.t["header_errors"] += 1
        try:
            for frame in ring:
                c.frame(frame)
        except gpuingest.Restarted as e:
            c.problems.append(str(e))
            c.t["header_errors"] += 1
        s = c.finish(ring, a.sim)
    out = dict(shm=a.shm, stream=a.stream, ring="gpu" if info.in_device else "host",
               frames_complete=s["complete"], frames_partial=s["partial"], frames_timed_out=s["timed_out"],
               frames_corrupt=s["corrupt"], frames_skipped=s["missing"], overruns=s["overruns"],
               frames_passed=s["skipped"], first_frame=s["first_frame"], last_frame=s["next_frame"] - 1,
               first_sensor_frame=c.first_sensor_frame, **c.t, problems=c.problems)
    print(json.dumps(out))
    for p in c.problems:
        print(f"py_consumer_check: {a.shm}: {p}", file=sys.stderr)
    return 1 if c.t["mismatches"] or c.t["header_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
