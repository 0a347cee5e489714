"""gpuingest — read gpuingestd's frame rings from Python.

Why this module exists: it is libgpuingest (client/include/gpuingest/
consumer.h) for Python, through ctypes, so that a Python consumer follows
the same ring protocol as every C consumer (layout version check, seqlock,
frame accounting, restart and close, futex wake-ups, CUDA IPC) instead of a
second copy of it.  No compiled extension: it imports wherever NumPy does.

    import gpuingest
    with gpuingest.open("cam0") as ring:
        for frame in ring:                  # until the daemon closes the ring
            pixels = frame.numpy()          # host ring: the bytes in the ring, no copy
            result = process(pixels)
            if not frame.valid():           # the daemon reused the slot meanwhile
                continue                    # (counted as an overrun)

Frames in GPU memory (executor.backend: cuda) are handed over without a
copy through DLPack and the CUDA Array Interface, for PyTorch and CuPy:
``torch.from_dlpack(frame)``, ``cupy.asarray(frame)``; ``frame.copy()``
brings one to the host.  Neither library is imported here.

Lifetime.  A frame's bytes are the daemon's ring slot, which the daemon
reuses ``n_slots`` frames later whether or not the consumer is done
(consumers never slow the daemon).  Views (``numpy()``, DLPack, the CUDA
Array Interface) are handed out only for the newest frame ``next()``
returned; ``valid()`` after using one says whether the data was still that
frame.  An array or tensor made from a frame keeps the ring mapped, so it
never points at unmapped memory, even after ``Ring.close()``.

Threads: one thread at a time per Ring, as in C; different rings are
independent.  Every wait in the library is at most 100 ms long, so Ctrl-C
raises KeyboardInterrupt promptly.
"""
import ctypes
import dataclasses
import errno
import importlib
import math
import os
import sys
import time
from collections import namedtuple

import numpy as np

__all__ = [
    "Closed", "Error", "Frame", "LibraryNotFound", "Overrun", "Restarted", "Ring", "RingInfo",
    "RingNotFound", "Sender", "ShapeMismatch", "Stale", "Tensor", "VersionMismatch", "open", "strerror",
]

try:
    # written by meson at install time (client/python/gpuingest/_build.py.in); absent in the source tree
    _build = importlib.import_module(__name__ + "._build")
except ModuleNotFoundError as e:
    if e.name != __name__ + "._build":
        raise
    _build = None

__version__ = _build.VERSION if _build else "source"
ABI_VERSION = 1  # GIC_ABI_VERSION this module mirrors: libgpuingest.so.1

if _build and _build.ABI != ABI_VERSION:
    raise ImportError(f"gpuingest: installed for libgpuingest ABI {_build.ABI}, this module reads ABI {ABI_VERSION}")

_SLICE_MS = 100  # longest single wait inside the library: Ctrl-C is seen at least this often

# enum gic_status
OK, TIMEOUT, CLOSED, RESTARTED, OVERRUN, INTERRUPTED = range(6)
_OPEN_LATEST = 0x1

STATES = {2: "complete", 3: "partial", 4: "timed_out", 5: "corrupt"}
FORMATS = {1: "udp_seq", 2: "rocev2", 3: "vita49", 4: "custom"}
NIC_CLOCKS = {0: "", 1: "realtime", 2: "device_ticks"}  # enum gic_nic_ts: RingInfo.nic_ts
_SENDER_KINDS = {1: "hsb"}
_CRC_STATES = {0: "unchecked", 1: "ok", 2: "mismatch"}

# DLPack device types (dlpack.h)
_DL_CPU, _DL_CUDA = 1, 2
# DLPack type codes (dlpack.h)
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT, _DL_COMPLEX = 0, 1, 2, 4, 5

# enum gic_dtype -> (name, NumPy/CUDA Array Interface type of one value, DLPack (code, bits) of one
# element, values per element): complex float16 has no NumPy type, so NumPy and the CUDA Array
# Interface see it as float16 pairs (a last dimension of 2); bfloat16 has none either (NumPy sees
# its bits as uint16 unless ml_dtypes is installed; DLPack carries it as kDLBfloat)
_DTYPES = {
    1: ("u8", "|u1", (_DL_UINT, 8), 1), 2: ("i8", "|i1", (_DL_INT, 8), 1),
    3: ("u16", "<u2", (_DL_UINT, 16), 1), 4: ("i16", "<i2", (_DL_INT, 16), 1),
    5: ("u32", "<u4", (_DL_UINT, 32), 1), 6: ("i32", "<i4", (_DL_INT, 32), 1),
    7: ("f16", "<f2", (_DL_FLOAT, 16), 1), 8: ("bf16", None, (_DL_BFLOAT, 16), 1),
    9: ("f32", "<f4", (_DL_FLOAT, 32), 1), 10: ("cf16", "<f2", (_DL_COMPLEX, 32), 2),
    11: ("cf32", "<c8", (_DL_COMPLEX, 64), 1),
}


# ---- errors -------------------------------------------------------------------

class Error(Exception):
    """A libgpuingest failure: the library's one-line message.

    ``status`` is the library's return value (a negative errno, or a
    gic_status); ``errno`` the positive errno when it was one, else None.
    """

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status
        self.errno = -status if status is not None and status < 0 else None


class LibraryNotFound(Error):
    """libgpuingest could not be loaded (raised at first use, not at import)."""


class RingNotFound(Error):
    """open(): no usable ring of that name appeared within the timeout."""


class VersionMismatch(Error):
    """open(): the ring has another layout version than this libgpuingest reads
    (-EPROTO): use the library that came with the daemon."""


class Closed(Error):
    """next(): the daemon closed the ring and every frame of it was returned."""


class Restarted(Error):
    """next(): the ring was removed or replaced without being closed (daemon
    restart, stream reshaped by a reload): close it and open() it again."""


class Overrun(Error):
    """copy(): the daemon overwrote the frame while it was copied (counted)."""


class ShapeMismatch(Error, ValueError):
    """numpy(): the dtype or shape asked for does not fit the frame's bytes.
    A ValueError too, as NumPy's own reshape error is."""


class Stale(Error):
    """A view of a frame that is no longer the newest next() returned: its
    slot may be reused at any moment, so no new pointer into it is handed out."""


# ---- the C structs, field for field ---------------------------------------------

_u32, _u64, _i32 = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int32


class _Sender(ctypes.Structure):
    _fields_ = [("kind", _u32), ("flags", _u32), ("frame_number", _u64), ("bytes_written", _u64),
                ("sof_ns", _u64), ("meta_ns", _u64), ("crc", _u32), ("psn", _u32), ("crc_state", _u32),
                ("reserved", _u32)]


class _Frame(ctypes.Structure):
    _fields_ = [("frame", _u64), ("sensor_frame", _u64), ("sensor_id", _u32), ("state", _u32),
                ("expected", _u32), ("received", _u32), ("bytes", _u64), ("payload_bytes", _u32),
                ("bitmap_words", _u32), ("bitmap", ctypes.c_void_p), ("data", ctypes.c_void_p),
                ("dev_ptr", _u64), ("first_ts_ns", _u64), ("first_rx_ns", _u64), ("publish_ns", _u64),
                ("sender", _Sender), ("seq_", _u64), ("flags_", _u32), ("tensor_dtype", ctypes.c_uint16),
                ("tensor_ndim", ctypes.c_uint16), ("tensor", _u64), ("first_nic_ns", _u64),
                ("last_nic_ns", _u64)]


class _RingInfo(ctypes.Structure):
    _fields_ = [("stream", ctypes.c_char * 64), ("shm", ctypes.c_char * 256), ("ring_version", _u32),
                ("format", _u32), ("n_slots", _u32), ("packets", _u32), ("payload_bytes", _u32),
                ("in_device", _u32), ("frame_bytes", _u64), ("created_ns", _u64),
                ("pci_bus_id", ctypes.c_char * 32), ("cuda_device", _i32), ("wake", _u32),
                ("tensor_dtype", _u32), ("tensor_ndim", _u32), ("tensor_shape", _u32 * 5), ("nic_ts", _u32)]


class _Stats(ctypes.Structure):
    _fields_ = [("complete", _u64), ("partial", _u64), ("timed_out", _u64), ("corrupt", _u64),
                ("missing", _u64), ("overruns", _u64), ("skipped", _u64), ("frames", _u64),
                ("first_frame", _u64), ("next_frame", _u64), ("started", _u32), ("reserved0", _u32),
                ("waits", _u64), ("protocol_errors", _u64), ("reserved", _u64 * 6)]


# sizeof and offsetof as the C compiler computes them from consumer.h (ABI 1;
# tests/python/test_module.py recompiles the header and compares): a field
# mistyped above fails the import instead of misreading frames.
_C_LAYOUT = {
    _Sender: (56, {"kind": 0, "flags": 4, "frame_number": 8, "bytes_written": 16, "sof_ns": 24, "meta_ns": 32,
                   "crc": 40, "psn": 44, "crc_state": 48, "reserved": 52}),
    _Frame: (192, {"frame": 0, "sensor_frame": 8, "sensor_id": 16, "state": 20, "expected": 24, "received": 28,
                   "bytes": 32, "payload_bytes": 40, "bitmap_words": 44, "bitmap": 48, "data": 56, "dev_ptr": 64,
                   "first_ts_ns": 72, "first_rx_ns": 80, "publish_ns": 88, "sender": 96, "seq_": 152,
                   "flags_": 160, "tensor_dtype": 164, "tensor_ndim": 166, "tensor": 168, "first_nic_ns": 176,
                   "last_nic_ns": 184}),
    _RingInfo: (432, {"stream": 0, "shm": 64, "ring_version": 320, "format": 324, "n_slots": 328, "packets": 332,
                      "payload_bytes": 336, "in_device": 340, "frame_bytes": 344, "created_ns": 352,
                      "pci_bus_id": 360, "cuda_device": 392, "wake": 396, "tensor_dtype": 400, "tensor_ndim": 404,
                      "tensor_shape": 408, "nic_ts": 428}),
    _Stats: (152, {"complete": 0, "partial": 8, "timed_out": 16, "corrupt": 24, "missing": 32, "overruns": 40,
                   "skipped": 48, "frames": 56, "first_frame": 64, "next_frame": 72, "started": 80,
                   "reserved0": 84, "waits": 88, "protocol_errors": 96, "reserved": 104}),
}
_C_NAMES = {_Sender: "gic_sender", _Frame: "gic_frame", _RingInfo: "gic_ring_info", _Stats: "gic_stats"}


def _check_layout():
    for struct, (size, offsets) in _C_LAYOUT.items():
        got = {name: getattr(struct, name).offset for name, _ in struct._fields_}
        if ctypes.sizeof(struct) != size or got != offsets:
            raise ImportError(f"gpuingest: struct {_C_NAMES[struct]}: ctypes gives {ctypes.sizeof(struct)} bytes "
                              f"{got}, consumer.h {size} bytes {offsets}")


_check_layout()


# ---- the library ---------------------------------------------------------------------

def _library_candidates():
    """Where to look, in order: $GPUINGEST_LIBRARY (tests point it at a build
    tree), the path meson installed beside this module, the soname."""
    env = os.environ.get("GPUINGEST_LIBRARY")
    if env:
        return [env]
    return ([_build.LIBRARY] if _build else []) + ["libgpuingest.so.1"]


def _declare(lib):
    vp, fp = ctypes.c_void_p, ctypes.POINTER(_Frame)
    protos = {
        "gic_open": (ctypes.c_int, [ctypes.POINTER(vp), ctypes.c_char_p, ctypes.c_int, ctypes.c_uint,
                                    ctypes.c_char_p, ctypes.c_size_t]),
        "gic_close": (None, [vp]),
        "gic_info": (ctypes.POINTER(_RingInfo), [vp]),
        "gic_next": (ctypes.c_int, [vp, fp, ctypes.c_int]),
        "gic_valid": (ctypes.c_int, [vp, fp]),
        "gic_copy": (ctypes.c_int, [vp, fp, vp, ctypes.c_size_t]),
        "gic_copy_tensor": (ctypes.c_int, [vp, fp, vp, ctypes.c_size_t]),
        "gic_skip_to_newest": (_u64, [vp]),
        "gic_stats": (None, [vp, ctypes.POINTER(_Stats)]),
        "gic_strerror": (ctypes.c_char_p, [ctypes.c_int]),
        "gic_last_error": (ctypes.c_char_p, [vp]),
    }
    for name, (restype, argtypes) in protos.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes


def _load():
    """The library, or the reason it is not there.  Deferred to first use, so
    that `import gpuingest` (and gpuingest._build) work without it."""
    tried = []
    for path in _library_candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(str(e))
            continue
        try:
            _declare(lib)
        except AttributeError as e:
            return None, path, f"{path} is not libgpuingest ABI {ABI_VERSION}: {e}"
        return lib, path, None
    return None, None, ("cannot load libgpuingest (" + "; ".join(tried) +
                        "): install it, or set GPUINGEST_LIBRARY to its path")


_lib, library_path, _lib_error = _load()


def _need_lib():
    if _lib is None:
        raise LibraryNotFound(_lib_error)
    return _lib


def strerror(status):
    """The library's short name for a gic_status or -errno value, e.g. 'timeout'."""
    return _need_lib().gic_strerror(int(status)).decode(errors="replace")


class _Handle:
    """Owns one gic_ring.  Ring, Frame and every array or DLPack tensor made
    from a frame hold a reference, so gic_close() runs when the last of them
    is gone and no view ever outlives the mapping it points into."""
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr

    def __del__(self, _close=_lib.gic_close if _lib else None):
        if self.ptr and _close:
            _close(self.ptr)
        self.ptr = None


class _HostMemory:
    """A read-only host buffer for np.asarray (the ring is mapped PROT_READ:
    a write would crash the process, so numpy must refuse it)."""
    __slots__ = ("__array_interface__", "handle")

    def __init__(self, address, nbytes, handle):
        self.__array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (address, True), "version": 3}
        self.handle = handle


# ---- DLPack (dlpack.h, the unversioned DLManagedTensor), with ctypes only -------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", _i32), ("device_id", _i32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", _i32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", _u64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DLDeleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DLDeleter)]

# Exported tensors not yet deleted: address of the DLManagedTensor -> what it
# needs alive (the struct, its shape array, the ring handle or copied array).
_dl_live = {}


def _dl_delete(address, _live=_dl_live):
    # the consumer's deleter call: any thread, with or without the GIL (ctypes takes it)
    _live.pop(address, None)


_dl_deleter = _DLDeleter(_dl_delete)
_DLTENSOR = ctypes.create_string_buffer(b"dltensor")  # the capsule keeps this pointer: it must live forever
_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# prototypes of our own: ctypes.pythonapi's function objects are shared with
# every other user, who may set other argtypes on them
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, _CapsuleDestructor)(
    ("PyCapsule_New", ctypes.pythonapi))
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def _capsule_gone(capsule, _live=_dl_live, _valid=_capsule_is_valid, _pointer=_capsule_pointer):
    # A consumer renames the capsule "used_dltensor" when it takes the tensor
    # (then its deleter is the consumer's job); one still named "dltensor"
    # was never consumed, so its tensor is released here.  (Default
    # arguments: this may run while the interpreter clears module globals.)
    if _valid(capsule, b"dltensor"):
        _live.pop(_pointer(capsule, b"dltensor"), None)


_capsule_destructor = _CapsuleDestructor(_capsule_gone)


def _dlpack_capsule(address, dims, device, owner, dtype=(_DL_UINT, 8)):
    """A "dltensor" capsule of a compact row-major tensor of `dims` elements
    of DLPack `dtype` (code, bits) at `address` on `device`, keeping `owner`
    alive until the consumer's deleter (or the capsule's destructor, if
    nobody took it) runs."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    shape = (ctypes.c_int64 * len(dims))(*dims)
    mt = _DLManagedTensor()
    mt.dl_tensor.data = address
    mt.dl_tensor.device = _DLDevice(*device)
    mt.dl_tensor.ndim = len(dims)
    mt.dl_tensor.dtype = _DLDataType(dtype[0], dtype[1], 1)
    mt.dl_tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    mt.dl_tensor.strides = None  # compact, row-major
    mt.dl_tensor.byte_offset = 0
    mt.deleter = _dl_deleter
    key = ctypes.addressof(mt)
    mt.manager_ctx = key
    _dl_live[key] = (mt, shape, owner)
    return _capsule_new(key, ctypes.addressof(_DLTENSOR), _capsule_destructor)


# ---- rings and frames --------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class RingInfo:
    """What gic_info() says about a ring (fixed while it is open)."""
    stream: str          # the stream's name in the daemon's config
    shm: str             # the shared-memory object, e.g. "/gpuingest-cam0"
    ring_version: int    # frame ring layout version (kernels/frame.h)
    format: int          # 1 udp_seq, 2 rocev2, 3 vita49, 4 custom
    format_name: str
    n_slots: int         # frames the ring holds: a frame's slot is reused n_slots frames later
    packets: int         # per frame
    payload_bytes: int   # per packet
    frame_bytes: int     # every frame's length
    created_ns: int      # CLOCK_REALTIME when the daemon made the ring
    in_device: bool      # frames are in GPU memory: DLPack / CUDA Array Interface / copy(), not numpy()
    pci_bus_id: str      # GPU rings: the daemon's GPU
    cuda_device: int     # GPU rings: its CUDA ordinal in this process; else -1
    wake: bool           # True: waits sleep on the ring's futex; False: they poll every 200 us
    tensor_dtype: str    # the frames' tensor type (the stream's tensor:): 'cf32', 'u16', ...; '' for none
    tensor_shape: tuple  # its shape (a complex integer typed as is: a last dimension of 2); () for none
    nic_ts: str          # the clock of frames' first_nic_ns/last_nic_ns: 'realtime', 'device_ticks' or '' (none)


Sender = namedtuple("Sender", "kind flags frame_number bytes_written sof_ns meta_ns crc psn crc_state")
Sender.__doc__ = """The sender's own record of a frame (Holoscan Sensor Bridge frame-end
metadata): kind 'hsb', its frame number, PTP times, CRC (~crc32, zlib's) and
crc_state, the daemon's check of it: 'unchecked', 'ok' or 'mismatch'."""


def open(name, timeout=10.0, latest=False):  # noqa: A001 - gpuingest.open() is the module's entry point
    """Open a stream's frame ring and return a Ring (a context manager).

    `name`: a stream name ("cam0" opens "/gpuingest-cam0" and checks that it
    is that stream's ring) or a shared-memory name starting with '/'.
    Waits up to `timeout` seconds (None: forever) for the daemon to create
    it.  It starts at the stream's first frame if the stream has not
    started yet, else at the oldest frame the ring still holds (frames
    before that are not counted in stats()); `latest`: at the newest
    published frame instead.  Raises RingNotFound (not there in time),
    VersionMismatch (a ring of another layout version), or Error with the
    library's one-line message (bad name, permissions, no usable CUDA for a
    GPU ring).
    """
    lib = _need_lib()
    if not isinstance(name, str):
        raise TypeError(f"gpuingest.open: name must be a str, not {type(name).__name__}")
    raw = name.encode()
    if b"\0" in raw:
        raise Error(f"{name!r}: a ring name cannot contain NUL", -errno.EINVAL)
    deadline = None if timeout is None else time.monotonic() + max(float(timeout), 0.0)
    err = ctypes.create_string_buffer(512)
    ptr = ctypes.c_void_p()
    flags = _OPEN_LATEST if latest else 0
    why = None  # the library's line for the last attempt that found no usable ring
    while True:
        ms = _slice_ms(deadline)
        rc = lib.gic_open(ctypes.byref(ptr), raw, ms, flags, err, len(err))
        if rc == OK:
            return Ring(_Handle(ptr.value), name)
        message = err.value.decode(errors="replace") or strerror(rc)
        if rc == TIMEOUT:
            why = message
        if rc in (TIMEOUT, INTERRUPTED):
            # INTERRUPTED: a signal; Python runs its handler (KeyboardInterrupt) on return
            if deadline is not None and time.monotonic() >= deadline:
                raise RingNotFound(why or message, TIMEOUT)
            continue
        if rc == -errno.EPROTO:
            raise VersionMismatch(message, rc)
        raise Error(message, rc)


def _items(shape):
    """How many items a numpy() shape asks for, as text (-1 lets NumPy infer a dimension)."""
    dims = [int(d) for d in np.atleast_1d(shape)]  # an int, a tuple, NumPy integers
    unknown = sum(d < 0 for d in dims)
    if unknown > 1:
        return "more than one unknown (-1) dimension"
    if unknown:
        return "a multiple of " + str(math.prod(d for d in dims if d >= 0))
    return str(math.prod(dims))


def _slice_ms(deadline):
    """Milliseconds to wait in one library call: at most _SLICE_MS, 0 once the deadline passed."""
    if deadline is None:
        return _SLICE_MS
    left = deadline - time.monotonic()
    return 0 if left <= 0 else min(_SLICE_MS, math.ceil(left * 1000))


class Ring:
    """An open frame ring (from gpuingest.open()).  Iterating yields frames
    until the daemon closes the ring; Restarted is raised if it goes away
    without closing.  Use from one thread at a time."""

    def __init__(self, handle, name):
        self._h = handle
        self._name = name
        self._gen = 0        # bumped for every frame next() returns: older frames are Stale
        self._views = {}     # frame address -> read-only ndarray over that slot (host rings)
        self._bitmap_at, self._bitmap_view = None, None
        c = _lib.gic_info(handle.ptr).contents
        self.info = RingInfo(
            stream=c.stream.decode(errors="replace"), shm=c.shm.decode(errors="replace"),
            ring_version=c.ring_version, format=c.format, format_name=FORMATS.get(c.format, str(c.format)),
            n_slots=c.n_slots, packets=c.packets, payload_bytes=c.payload_bytes, frame_bytes=c.frame_bytes,
            created_ns=c.created_ns, in_device=bool(c.in_device), pci_bus_id=c.pci_bus_id.decode(errors="replace"),
            cuda_device=c.cuda_device, wake=bool(c.wake),
            tensor_dtype=_DTYPES[c.tensor_dtype][0] if c.tensor_dtype in _DTYPES else "",
            tensor_shape=tuple(c.tensor_shape[:c.tensor_ndim]) if c.tensor_dtype in _DTYPES else (),
            nic_ts=NIC_CLOCKS.get(c.nic_ts, str(c.nic_ts)))

    def __repr__(self):
        state = "closed" if self._h is None else f"{self.info.n_slots} slots"
        where = f"GPU {self.info.pci_bus_id}" if self.info.in_device else "host"
        return f"<gpuingest.Ring {self.info.stream!r} {self.info.shm} {where} {state}>"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        """Stop using the ring.  The mapping itself is released once the
        frames, arrays and tensors made from it are gone too."""
        self._h = None
        self._views.clear()
        self._gen += 1

    def _handle(self):
        if self._h is None:
            raise Error(f"{self._name}: the ring is closed (Ring.close())")
        return self._h

    def next(self, timeout=None):
        """The next published frame, or None if none came within `timeout`
        seconds (None: wait for one; 0: do not wait).  Frames the daemon
        skipped or reused before they were read are counted (stats()) and
        passed over.  Raises Closed once the daemon closed the ring and every
        frame was returned, Restarted if the ring went away without closing."""
        h = self._handle()
        f = _Frame()
        rc = _lib.gic_next(h.ptr, f, 0)  # a frame already waiting (a consumer with a backlog): no clock reads
        if rc == OK:
            return self._frame(h, f)
        deadline = None if timeout is None else time.monotonic() + max(float(timeout), 0.0)
        while True:
            if rc == TIMEOUT or rc == INTERRUPTED:
                ms = _slice_ms(deadline)
                if ms == 0:
                    return None
                rc = _lib.gic_next(h.ptr, f, ms)
                continue
            if rc == OK:
                return self._frame(h, f)
            if rc == CLOSED:
                raise Closed(f"{self.info.shm}: closed by the daemon; every frame was returned", rc)
            if rc == RESTARTED:
                raise Restarted(f"{self.info.shm}: removed or replaced without being closed (daemon restart "
                                f"or reload): open it again", rc)
            raise Error(f"{self.info.shm}: {self.last_error or strerror(rc)}", rc)

    def _frame(self, h, f):
        # The bitmap behind f.bitmap is the library's, rewritten by the next
        # gic_next(): the Frame keeps a copy.  It is one buffer per ring, so
        # one ctypes view of it serves every frame (.raw copies it out).
        if f.bitmap != self._bitmap_at:
            self._bitmap_at = f.bitmap
            self._bitmap_view = (ctypes.c_char * (f.bitmap_words * 8)).from_address(f.bitmap)
        self._gen += 1
        return Frame(self, h, f, self._gen, self._bitmap_view.raw)

    def frames(self, timeout=None):
        """Yield frames until the daemon closes the ring, or until `timeout`
        seconds pass without one (None: no limit).  Raises Restarted."""
        while True:
            try:
                frame = self.next(timeout)
            except Closed:
                return
            if frame is None:
                return
            yield frame

    def __iter__(self):
        return self.frames()

    def skip_to_newest(self):
        """For a consumer that fell behind: the next next() returns the newest
        published frame.  Returns how many frames were passed over (counted
        as skipped)."""
        return _lib.gic_skip_to_newest(self._handle().ptr)

    def stats(self):
        """The library's accounting: every frame number from first_frame (where
        this consumer started) up to next_frame is in exactly one of complete,
        partial, timed_out, corrupt, missing (no packet of it arrived),
        overruns (reused after this consumer opened the ring, before or while
        it was read), skipped."""
        s = _Stats()
        _lib.gic_stats(self._handle().ptr, ctypes.byref(s))
        out = {name: getattr(s, name) for name, _ in _Stats._fields_ if not name.startswith("reserved")}
        out["started"] = bool(out["started"])
        return out

    @property
    def last_error(self):
        """What went wrong in the ring's last failed call (a CUDA copy...), "" if nothing."""
        return _lib.gic_last_error(self._handle().ptr).decode(errors="replace")


class Frame:
    """One published frame.  Metadata and the packet bitmap are copies, good
    for as long as you keep the object; the bytes are the daemon's ring slot
    (see numpy(), copy(), valid())."""
    __slots__ = ("_ring", "_h", "_f", "_gen", "_bitmap")

    def __init__(self, ring, handle, f, gen, bitmap):
        self._ring, self._h, self._f, self._gen, self._bitmap = ring, handle, f, gen, bitmap

    def __repr__(self):
        where = f"dev_ptr=0x{self.dev_ptr:x}" if self.dev_ptr else f"data=0x{self.data:x}"
        return (f"<gpuingest.Frame {self.frame} sensor {self.sensor_id}/{self.sensor_frame} {self.state} "
                f"{self.received}/{self.expected} packets {self.nbytes} bytes {where}>")

    frame = property(lambda self: self._f.frame, doc="the ring's frame number (monotonic for this ring)")
    sensor_frame = property(lambda self: self._f.sensor_frame, doc="the sender's frame number")
    sensor_id = property(lambda self: self._f.sensor_id, doc="the sender's stream id from the packet header")
    state_code = property(lambda self: self._f.state, doc="enum gic_frame_state: 2 complete ... 5 corrupt")
    expected = property(lambda self: self._f.expected, doc="packets the frame has")
    received = property(lambda self: self._f.received, doc="unique packets placed")
    nbytes = property(lambda self: self._f.bytes, doc="frame length in bytes")
    payload_bytes = property(lambda self: self._f.payload_bytes, doc="bytes per packet: packet i at i * payload_bytes")
    first_ts_ns = property(lambda self: self._f.first_ts_ns, doc="sender's timestamp of the first packet that arrived")
    first_rx_ns = property(lambda self: self._f.first_rx_ns, doc="daemon CLOCK_MONOTONIC: first packet placed")
    publish_ns = property(lambda self: self._f.publish_ns, doc="daemon CLOCK_MONOTONIC: frame published")
    first_nic_ns = property(lambda self: self._f.first_nic_ns,
                            doc="NIC receive time of its earliest placed packet (Ring.info.nic_ts's clock); 0: none")
    last_nic_ns = property(lambda self: self._f.last_nic_ns,
                           doc="NIC receive time of its latest placed packet (Ring.info.nic_ts's clock); 0: none")
    data = property(lambda self: self._f.data, doc="host ring: address of the bytes in the ring; None for GPU")
    dev_ptr = property(lambda self: self._f.dev_ptr, doc="GPU ring: device address in this process; 0 for host")

    @property
    def state(self):
        """'complete', 'partial', 'timed_out' or 'corrupt' (state_code has the number)."""
        return STATES.get(self._f.state, str(self._f.state))

    @property
    def sender(self):
        """The sender's record (Sender), or None when its format carries none."""
        s = self._f.sender
        if not s.kind:
            return None
        return Sender(_SENDER_KINDS.get(s.kind, str(s.kind)), s.flags, s.frame_number, s.bytes_written,
                      s.sof_ns, s.meta_ns, s.crc, s.psn, _CRC_STATES.get(s.crc_state, str(s.crc_state)))

    @property
    def present(self):
        """NumPy bool array, one per packet: True where the packet arrived
        (its bytes are the sender's; the others are stale)."""
        words = np.frombuffer(self._bitmap, dtype=np.uint64).astype("<u8", copy=False)
        return np.unpackbits(words.view(np.uint8), bitorder="little")[:self._f.expected].astype(bool)

    def packet_present(self, i):
        """Whether packet i arrived (gic_packet_present)."""
        if not 0 <= i < self._f.expected:
            return False
        word = int.from_bytes(self._bitmap[(i >> 6) * 8:(i >> 6) * 8 + 8], sys.byteorder)
        return bool(word >> (i & 63) & 1)

    def valid(self):
        """True if the slot still holds this frame, i.e. what was read of its
        bytes so far was the frame; False if the daemon reused it (the frame
        then counts as an overrun, once).  Call it after using the data."""
        return _lib.gic_valid(self._h.ptr, self._f) == 1

    def copy(self, out=None):
        """The frame's bytes copied to host memory (host or GPU ring) and
        checked in one step: a uint8 array, or `out` (a writable contiguous
        array of at least nbytes bytes) filled.  Raises Overrun if the daemon
        overwrote the frame during the copy."""
        n = self._f.bytes
        if out is None:
            out = np.empty(n, dtype=np.uint8)
        elif not isinstance(out, np.ndarray) or not out.flags.c_contiguous or not out.flags.writeable:
            raise TypeError("copy(out=...): out must be a writable C-contiguous numpy array")
        elif out.nbytes < n:
            raise ValueError(f"copy(out=...): {out.nbytes} bytes for a {n}-byte frame")
        return self._checked_copy(_lib.gic_copy, out, "it")

    def _checked_copy(self, fn, out, what):
        """gic_copy or gic_copy_tensor into `out` ("it" or "its tensor"): out, or Overrun, or Error with the
        library's line."""
        rc = fn(self._h.ptr, self._f, out.ctypes.data, out.nbytes)
        if rc == OK:
            return out
        if rc == OVERRUN:
            raise Overrun(f"frame {self.frame}: overwritten by the daemon while {what} was copied", rc)
        last = _lib.gic_last_error(self._h.ptr).decode(errors="replace")
        raise Error(f"frame {self.frame}: copy of {what} failed: {last or strerror(rc)}", rc)

    def _current(self, what):
        ring = self._ring
        if ring._gen != self._gen:
            why = "the ring is closed" if ring._h is None else "next() has returned a newer frame"
            raise Stale(f"frame {self.frame}: {what}: {why}, so its slot may be reused any time; take views "
                        f"right after next(), or copy()")

    def numpy(self, dtype=np.uint8, shape=None):
        """A read-only NumPy view of the frame's bytes in the ring: no copy
        (host rings only; GPU rings: copy(), DLPack or __cuda_array_interface__).
        Only for the newest frame next() returned; the view stays readable,
        but is the frame only while valid() says so.  `shape` as NumPy's
        reshape takes it; ShapeMismatch (a ValueError) when the frame's bytes
        do not fit `dtype` and `shape`."""
        ring, address = self._ring, self._f.data
        if ring._gen != self._gen:
            self._current("numpy()")
        if not address:
            raise Error(f"frame {self.frame} is in GPU memory (dev_ptr 0x{self._f.dev_ptr:x}): use copy(), "
                        f"torch.from_dlpack(frame) or cupy.asarray(frame)")
        base = ring._views.get(address)
        if base is None:  # the first frame in this slot: one read-only array per slot, views of it after
            base = ring._views[address] = np.asarray(_HostMemory(address, self._f.bytes, self._h))
        arr = base.view()
        if dtype is not np.uint8:
            dtype = np.dtype(dtype)
            if not dtype.itemsize or self._f.bytes % dtype.itemsize:
                raise ShapeMismatch(f"frame {self.frame}: its {self._f.bytes} bytes are not a whole number of "
                                    f"{dtype} items ({dtype.itemsize} bytes each)")
            arr = arr.view(dtype)
        if shape is not None:
            try:
                arr = arr.reshape(shape)
            except ValueError:
                # NumPy's message names neither the frame nor its length; gpuingest-frames --shape says both
                dtype = np.dtype(dtype)
                raise ShapeMismatch(f"frame {self.frame}: shape {shape} does not fit its {self._f.bytes} bytes "
                                    f"as {dtype} ({self._f.bytes // dtype.itemsize} items of {dtype.itemsize} "
                                    f"bytes, the shape asks for {_items(shape)})") from None
        return arr

    # ---- the frame as a typed tensor (the stream's tensor: block) ----

    def _tensor_layout(self):
        """(address, dims, NumPy/CAI typestr, DLPack dtype) of the frame's tensor, or None without one."""
        f = self._f
        if f.tensor_dtype not in _DTYPES:
            return None
        _, typestr, dl, per = _DTYPES[f.tensor_dtype]
        return f.tensor, self._ring.info.tensor_shape, typestr, dl, per

    @property
    def tensor_dtype(self):
        """The tensor's type ('cf32', 'u16', 'bf16', ...), '' when the stream has no tensor: block."""
        return _DTYPES[self._f.tensor_dtype][0] if self._f.tensor_dtype in _DTYPES else ""

    def tensor(self):
        """The frame as its stream's typed tensor, without a copy: the samples
        the daemon converted (tensor: in the config) before it published the
        frame, lost packets' samples zero or NaN as configured.  Host rings: a
        read-only NumPy array of the tensor's dtype and shape (complex float16
        as float16 pairs, a last dimension of 2; bfloat16 as ml_dtypes'
        bfloat16 if installed, else its bits as uint16).  GPU rings: a Tensor
        for torch.from_dlpack() (complex64, float16, bfloat16, uint16, ...)
        and cupy.asarray().  Only for the newest frame next() returned, as
        numpy(); Error if the stream has no tensor: block."""
        lay = self._tensor_layout()
        if lay is None:
            raise Error(f"frame {self.frame}: stream {self._ring.info.stream!r} has no tensor: block (its frames "
                        f"are bytes: numpy(), copy(), DLPack)")
        self._current("tensor()")
        address, dims, typestr, dl, per = lay
        if self._f.dev_ptr:
            return Tensor(self, address, dims, typestr, dl, per)
        dt = _np_dtype(typestr)
        arr = np.asarray(_HostMemory(address, math.prod(dims) * per * dt.itemsize, self._h)).view(dt)
        return arr.reshape(dims + ((per,) if per > 1 else ()))

    def copy_tensor(self):
        """The frame's tensor copied to host memory (host or GPU ring) and
        checked in one step, as a NumPy array of tensor()'s dtype and shape
        (bfloat16: its bits as uint16 unless ml_dtypes is installed).
        Raises Overrun if the daemon overwrote the frame during the copy."""
        lay = self._tensor_layout()
        if lay is None:
            raise Error(f"frame {self.frame}: stream {self._ring.info.stream!r} has no tensor: block")
        _, dims, typestr, _, per = lay
        out = np.empty(dims + ((per,) if per > 1 else ()), dtype=_np_dtype(typestr))
        return self._checked_copy(_lib.gic_copy_tensor, out, "its tensor")

    @property
    def __cuda_array_interface__(self):
        """CUDA Array Interface v3 of a GPU ring's frame (cupy.asarray,
        numba.cuda.as_cuda_array, torch.as_tensor): its tensor when the
        stream has a tensor: block, else its bytes.  AttributeError on host
        rings, so those libraries see it is not device memory.  read-only is
        False although consumers must not write: PyTorch refuses the flag.
        stream None: the frame was complete before it was published, nothing
        to synchronize with.  The consumer's array keeps this frame (and so
        the ring's mapping) alive."""
        if not self._f.dev_ptr:
            raise AttributeError("__cuda_array_interface__: this frame is in host memory (use numpy())")
        self._current("__cuda_array_interface__")
        lay = self._tensor_layout()
        if lay is not None:
            return Tensor(self, *lay[:2], *lay[2:]).__cuda_array_interface__
        return {"shape": (self._f.bytes,), "typestr": "|u1", "data": (self._f.dev_ptr, False), "version": 3,
                "strides": None, "stream": None}

    def __dlpack_device__(self):
        """(kDLCUDA 2, the CUDA ordinal here) for GPU rings, (kDLCPU 1, 0) for host rings."""
        if self._f.dev_ptr:
            return (_DL_CUDA, self._ring.info.cuda_device)
        return (_DL_CPU, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the frame without a copy (torch.from_dlpack,
        np.from_dlpack on host frames, cupy.from_dlpack): its tensor, typed
        and shaped, when the stream has a tensor: block (complex64 as
        kDLComplex 64, bfloat16 as kDLBfloat 16, ...), else its bytes as a
        1-D uint8 tensor.  `stream` needs no synchronization: the frame was
        complete before it was published.  DLPack cannot mark a tensor
        read-only: do not write.  copy=True (host rings) exports a checked
        copy instead."""
        device = self.__dlpack_device__()
        if dl_device is not None and tuple(dl_device) != device:
            raise BufferError(f"frame {self.frame} is on DLPack device {device}, not {tuple(dl_device)}")
        if device[0] == _DL_CPU and stream not in (None, -1):
            raise BufferError(f"__dlpack__: stream {stream!r} for a host frame (None expected)")
        lay = self._tensor_layout()
        if copy:
            if device[0] != _DL_CPU:
                raise BufferError("__dlpack__(copy=True): a GPU frame is copied to the host only; use copy()")
            if lay is not None:
                arr = np.array(self.tensor())  # a copy, then the check that it was this frame's
                if not self.valid():
                    raise Overrun(f"frame {self.frame}: overwritten by the daemon while it was copied", OVERRUN)
                return _dlpack_capsule(arr.ctypes.data, lay[1], device, arr, lay[3])
            arr = self.copy()
            return _dlpack_capsule(arr.ctypes.data, arr.nbytes, device, arr)
        self._current("__dlpack__")
        if lay is not None:
            return _dlpack_capsule(lay[0], lay[1], device, self._h, lay[3])
        address = self._f.dev_ptr or self._f.data
        return _dlpack_capsule(address, self._f.bytes, device, self._h)


def _np_dtype(typestr):
    """The NumPy dtype of a tensor value (_DTYPES): bfloat16 (typestr None) as ml_dtypes' where it is
    installed, else its bits as uint16."""
    if typestr is not None:
        return np.dtype(typestr)
    try:
        return np.dtype(importlib.import_module("ml_dtypes").bfloat16)
    except ModuleNotFoundError:
        return np.dtype("<u2")


class Tensor:
    """A GPU frame's tensor (Frame.tensor()): hands the daemon's memory to
    torch.from_dlpack() or cupy.asarray() without a copy, typed and shaped.
    Keeps the frame (and the ring's mapping) alive; like the frame, its
    data is the frame only while frame.valid() says so."""
    __slots__ = ("frame", "address", "shape", "dtype", "_typestr", "_dl", "_per")

    def __init__(self, frame, address, dims, typestr, dl, per):
        self.frame, self.address, self.shape = frame, address, tuple(dims)
        self.dtype = frame.tensor_dtype
        self._typestr, self._dl, self._per = typestr, dl, per

    def __repr__(self):
        return f"<gpuingest.Tensor {self.dtype} {list(self.shape)} of frame {self.frame.frame} at 0x{self.address:x}>"

    @property
    def __cuda_array_interface__(self):
        """CUDA Array Interface v3 (CuPy, Numba): complex float16 as float16
        pairs; bfloat16 has no type there (AttributeError: use DLPack)."""
        if self._typestr is None:
            raise AttributeError("__cuda_array_interface__: bfloat16 has no CUDA Array Interface type; use "
                                 "torch.from_dlpack(frame)")
        return {"shape": self.shape + ((self._per,) if self._per > 1 else ()), "typestr": self._typestr,
                "data": (self.address, False), "version": 3, "strides": None, "stream": None}

    def __dlpack_device__(self):
        return self.frame.__dlpack_device__()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("__dlpack__(copy=True): a GPU tensor is not copied here; use frame.copy()")
        device = self.__dlpack_device__()
        if dl_device is not None and tuple(dl_device) != device:
            raise BufferError(f"frame {self.frame.frame} is on DLPack device {device}, not {tuple(dl_device)}")
        self.frame._current("__dlpack__")
        return _dlpack_capsule(self.address, self.shape, device, self.frame._h, self._dl)
