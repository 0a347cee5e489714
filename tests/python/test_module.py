#!/usr/bin/python3
"""test_module.py — the gpuingest Python module without a daemon.

The test plays the daemon itself where it needs one: FakeRing writes a
frame ring into /dev/shm the way kernels/frame.h lays it out (header,
slots, seqlock words, bitmaps, payload, optionally the wake object and
the wake socket that hands it out: FakeWakeServer), and
the module reads it through the real libgpuingest.

Covered: the ctypes structs against what the C compiler says of
consumer.h; library lookup (GPUINGEST_LIBRARY, a missing library reported
at first use); gic_strerror; open() errors (missing ring: RingNotFound
quickly with the library's line; bad names; another ring version:
VersionMismatch; a ring of another stream; a GPU ring without usable CUDA);
frames: metadata, states, sender record, the packet bitmap, zero-copy
numpy() views (address, read-only, dtype/shape, a shape that does not fit:
ShapeMismatch), copy(), valid() and
Overrun after the slot is reused, Stale views after next() moved on,
DLPack (np.from_dlpack zero-copy, deleters run, unconsumed capsules
released), the mapping outliving close() while an array uses it;
next() timeouts, Closed, Restarted, skip_to_newest, latest=True, the stats
identity, a late join (no overruns for frames before it opened); Ctrl-C interrupting open() and next() promptly.

Run: /usr/bin/python3 tests/python/test_module.py  (GPUINGEST_LIBRARY
defaults to build/client/libgpuingest.so.1 of this tree; meson test sets it).
"""
import ctypes
import fcntl
import gc
import json
import math
import mmap
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
if not os.environ.get("GPUINGEST_LIBRARY"):
    default = os.path.join(ROOT, "build", "client", "libgpuingest.so.1")
    if os.path.exists(default):
        os.environ["GPUINGEST_LIBRARY"] = default

# a sanitized build's library needs its sanitizer's runtime in the process: start again with it
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sanitizer_env  # noqa: E402

if not os.environ.get("GI_SANITIZER_PRELOADED"):
    try:
        extra = sanitizer_env.environment(os.environ.get("GPUINGEST_LIBRARY", ""))
    except sanitizer_env.Unsupported as e:
        print(f"SKIP: {e}")
        sys.exit(77)
    if extra:
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__)] + sys.argv[1:],
                  dict(os.environ, GI_SANITIZER_PRELOADED="1", **extra))

try:
    import numpy as np
except ImportError:
    print("SKIP: python3-numpy is not installed (apt-get install python3-numpy)")
    sys.exit(77)

import gpuingest  # noqa: E402  (after the path set-up above)

# kernels/frame.h, version 5
MAGIC, VERSION, HDR_BYTES, SLOT_HDR, PAGE = 0x47494652, 5, 448, 192, 4096
NIC_TS_OFF, SLOT_NIC_OFF = 416, 128  # the header's nic_ts word; a slot's first_nic_ns, last_nic_ns
WAKE_MAGIC = 0x4749574B


def align(x, a):
    return (x + a - 1) // a * a


def pattern(frame, nbytes):
    return ((np.arange(nbytes, dtype=np.uint64) * 7 + frame * 13) & 0xFF).astype(np.uint8)


class FakeWakeServer:
    """The daemon's wake socket for one ring (daemon/wake_server.c, kernels/frame.h): a sealed
    memfd with the wake object, handed to whoever sends the ring's descriptor."""

    def __init__(self, ring_path, created):
        self.fd = os.memfd_create("gi-pytest-wake", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.write(self.fd, struct.pack("<IIQ", WAKE_MAGIC, VERSION, created) + bytes(128 - 16))
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        self.ring = os.stat(ring_path)
        self.token = int.from_bytes(os.urandom(8), "little") | 1
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.bind(b"\0" + b"gpuingest-wake-%016x" % self.token)
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.stopping = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    msg, fds, _, _ = socket.recv_fds(conn, 64, 4)
                except OSError:
                    continue
                ok = msg == b"GIWAKE1\0" and len(fds) == 1 and \
                    (os.fstat(fds[0]).st_ino, os.fstat(fds[0]).st_dev) == (self.ring.st_ino, self.ring.st_dev)
                for fd in fds:
                    os.close(fd)
                if ok:
                    socket.send_fds(conn, [struct.pack("<I", WAKE_MAGIC)], [self.fd])

    def stop(self):
        self.stopping = True
        self.thread.join()
        self.sock.close()
        os.close(self.fd)


class FakeRing:
    """A host frame ring in /dev/shm written as the daemon's executor would."""
    count = 0

    def __init__(self, n_slots=4, packets=70, payload=64, frame_bytes=None, stream="cam0", wake=False,
                 version=VERSION, in_device=False, name=None, tensor=None, nic_ts=0):
        FakeRing.count += 1
        self.name = name or f"/gi-pytest-{os.getpid()}-{FakeRing.count}"
        self.path = "/dev/shm" + self.name
        self.n, self.ppf, self.pb = n_slots, packets, payload
        self.bw = (packets + 63) // 64
        self.payload_off = align(SLOT_HDR + 8 * self.bw, 64)
        full = align(self.payload_off + packets * payload, PAGE)
        self.tensor_off = 0
        if tensor:  # (gic_dtype, shape, bytes): the slot's tensor area after the payload (frame.h)
            self.tensor_off = align(self.payload_off + packets * payload, 256)
            full = align(self.tensor_off + tensor[2], PAGE)
        self.stride = self.payload_off if in_device else full
        self.frame_bytes = frame_bytes or packets * payload
        self.created = 123456789
        size = PAGE + n_slots * self.stride
        fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        os.ftruncate(fd, size)
        self.mm = mmap.mmap(fd, size)
        os.close(fd)
        struct.pack_into("<IHHIIIIQQQII", self.mm, 0, 0, version, HDR_BYTES, n_slots, packets, payload, self.bw,
                         self.stride, self.frame_bytes, self.payload_off, 1, 0)
        self.mm[56:56 + len(stream)] = stream.encode()
        if tensor:  # struct gi_frame_tensor at 320
            dims = list(tensor[1]) + [0] * (5 - len(tensor[1]))
            struct.pack_into("<II5QQQIIIIdd", self.mm, 320, tensor[0], len(tensor[1]), *dims, self.tensor_off,
                             tensor[2], 8, 1, 0, 0, 1.0, 0.0)
        struct.pack_into("<Q", self.mm, 120, self.created)
        struct.pack_into("<I", self.mm, NIC_TS_OFF, nic_ts)
        if in_device:  # a metadata mirror with a handle no process exported
            struct.pack_into("<IIQQ", self.mm, 128, 1, 0, full, PAGE + n_slots * full)
            self.mm[216:228] = b"0000:ca:00.0"
        self.wake = None
        if wake:
            self.wake = FakeWakeServer(self.path, self.created)
            struct.pack_into("<Q", self.mm, 248, self.wake.token)  # wake_token
        struct.pack_into("<I", self.mm, 0, MAGIC)  # last: a consumer that sees it sees the whole header
        self.next_frame = None

    def destroy(self):
        if self.wake:
            self.wake.stop()
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.mm.close()

    def slot(self, f):
        return PAGE + (f % self.n) * self.stride

    def publish(self, f, state=2, present=None, sensor_id=7, sensor_frame=None, sender=None, data=None,
                tensor=None, nic=(0, 0)):
        """Frame f: seq odd, metadata, bitmap, payload, seq even, then next_frame."""
        s = self.slot(f)
        present = list(range(self.ppf)) if present is None else present
        struct.pack_into("<Q", self.mm, s, 2 * f + 1)
        struct.pack_into("<QQQQIIIIQ", self.mm, s + 8, f, 1000 + f, 2000 + f, 3000 + f, self.ppf, len(present),
                         state, sensor_id, f + 100 if sensor_frame is None else sensor_frame)
        sender = sender or (0, 0, 0, 0, 0, 0, 0, 0, 0)
        struct.pack_into("<IIQQQQIII", self.mm, s + 64, *sender)
        struct.pack_into("<QQ", self.mm, s + SLOT_NIC_OFF, *nic)
        words = [0] * self.bw
        for i in present:
            words[i >> 6] |= 1 << (i & 63)
        struct.pack_into(f"<{self.bw}Q", self.mm, s + SLOT_HDR, *words)
        body = pattern(f, self.frame_bytes) if data is None else data
        self.mm[s + self.payload_off:s + self.payload_off + self.frame_bytes] = body.tobytes()
        if tensor is not None:
            self.mm[s + self.tensor_off:s + self.tensor_off + len(tensor)] = tensor
        struct.pack_into("<Q", self.mm, s, 2 * f + 2)
        if self.next_frame is None:
            struct.pack_into("<QQI", self.mm, 256, f + 1, f, 1)  # next_frame, first_frame, started
        self.next_frame = max(self.next_frame or 0, f + 1)
        struct.pack_into("<Q", self.mm, 256, self.next_frame)
        struct.pack_into("<I", self.mm, 280, struct.unpack_from("<I", self.mm, 280)[0] + 1)  # wake_seq

    def reuse(self, f):
        """The daemon starts filling the slot of frame f with frame f + n_slots."""
        struct.pack_into("<Q", self.mm, self.slot(f), 2 * (f + self.n) + 1)

    def close(self):
        struct.pack_into("<I", self.mm, 276, 1)



def interrupt_main_after(seconds):
    """SIGINT to the main thread (so its wait in the library sees EINTR) after `seconds`."""
    main = threading.main_thread().ident
    t = threading.Timer(seconds, signal.pthread_kill, (main, signal.SIGINT))
    t.start()
    return t


def mapped_read_only(path):
    """Whether `path` is mapped read-only in this process: the library's
    mapping of a ring (the test's own FakeRing mapping is read-write)."""
    with open("/proc/self/maps") as f:
        return any(line.split()[1] == "r--s" and line.rstrip().endswith(path) for line in f)


class Layout(unittest.TestCase):
    def test_structs_match_the_c_compiler(self):
        """Every ctypes struct has consumer.h's size and offsets: compile the header now and ask."""
        cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
        if not cc:
            self.skipTest("no C compiler")
        lines = []
        for struct_cls, (size, offsets) in gpuingest._C_LAYOUT.items():
            name = gpuingest._C_NAMES[struct_cls]
            lines.append(f'printf("\\"{name}\\": [%zu, {{", sizeof(struct {name}));')
            for i, field in enumerate(offsets):
                sep = "," if i else ""
                lines.append(f'printf("{sep}\\"{field}\\": %zu", offsetof(struct {name}, {field}));')
            lines.append('printf("}],");')
        src = ("#include <stdio.h>\n#include <stddef.h>\n#include \"gpuingest/consumer.h\"\n"
               "int main(void) { printf(\"{\"); " + " ".join(lines) + ' printf("\\"end\\": 0}"); return 0; }\n')
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "abi.c"), "w") as f:
                f.write(src)
            subprocess.run([cc, "-I", os.path.join(ROOT, "client", "include"), "-o", os.path.join(d, "abi"),
                            os.path.join(d, "abi.c")], check=True)
            c = json.loads(subprocess.run([os.path.join(d, "abi")], check=True, capture_output=True).stdout)
        for struct_cls, (size, offsets) in gpuingest._C_LAYOUT.items():
            name = gpuingest._C_NAMES[struct_cls]
            self.assertEqual(c[name][0], size, f"sizeof(struct {name})")
            self.assertEqual(c[name][1], offsets, f"struct {name} offsets")
            self.assertEqual(ctypes.sizeof(struct_cls), size)
            self.assertEqual([f for f, _ in struct_cls._fields_], list(offsets), f"{name}: fields in C order")

    def test_dlpack_structs(self):
        """dlpack.h's DLTensor is 48 bytes, DLManagedTensor 64, deleter last."""
        self.assertEqual(ctypes.sizeof(gpuingest._DLTensor), 48)
        self.assertEqual(ctypes.sizeof(gpuingest._DLManagedTensor), 64)
        self.assertEqual(gpuingest._DLTensor.shape.offset, 24)
        self.assertEqual(gpuingest._DLManagedTensor.deleter.offset, 56)


class Library(unittest.TestCase):
    def test_loaded_from_environment(self):
        self.assertEqual(gpuingest.library_path, os.environ["GPUINGEST_LIBRARY"])

    def test_strerror(self):
        names = ["ok", "timeout", "closed", "restarted", "overrun", "interrupted"]
        self.assertEqual([gpuingest.strerror(i) for i in range(6)], names)
        self.assertEqual(gpuingest.strerror(-2), os.strerror(2))
        self.assertEqual(gpuingest.strerror(99), "unknown status")

    def test_missing_library_is_reported_at_first_use(self):
        code = ("import gpuingest\n"
                "try:\n gpuingest.open('cam0', timeout=0)\n"
                "except gpuingest.LibraryNotFound as e:\n print('LNF', e)\n")
        env = dict(os.environ, GPUINGEST_LIBRARY="/nonexistent/libgpuingest.so.1",
                   PYTHONPATH=os.path.join(ROOT, "client", "python"))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("LNF cannot load libgpuingest (/nonexistent/libgpuingest.so.1", out.stdout)
        self.assertIn("GPUINGEST_LIBRARY", out.stdout)


class OpenErrors(unittest.TestCase):
    def test_missing_ring_times_out_quickly(self):
        t = time.monotonic()
        with self.assertRaises(gpuingest.RingNotFound) as cm:
            gpuingest.open(f"gi-no-such-{os.getpid()}", timeout=0.1)
        took = time.monotonic() - t
        self.assertGreaterEqual(took, 0.09)
        self.assertLess(took, 1.0)
        self.assertEqual(str(cm.exception),
                         f"/gpuingest-gi-no-such-{os.getpid()}: no such frame ring (is gpuingestd running with "
                         f"this stream?)")
        self.assertEqual(cm.exception.status, gpuingest.TIMEOUT)

    def test_bad_names(self):
        for name, text in [("a/b", "a stream name is up to 63 characters"),
                           ("x" * 64, "a stream name is up to 63 characters"),
                           ("", "no ring name"),
                           ("/a/b", "a shared-memory name is '/'"),
                           ("a\0b", "cannot contain NUL")]:
            with self.subTest(name=name), self.assertRaises(gpuingest.Error) as cm:
                gpuingest.open(name, timeout=0)
            self.assertIn(text, str(cm.exception))
            self.assertEqual(cm.exception.errno, 22)
            self.assertNotIsInstance(cm.exception, gpuingest.RingNotFound)
        with self.assertRaises(TypeError):
            gpuingest.open(b"cam0")

    def test_other_ring_version(self):
        ring = FakeRing(version=2)
        try:
            with self.assertRaises(gpuingest.VersionMismatch) as cm:
                gpuingest.open(ring.name, timeout=1)
            self.assertIn("frame ring version 2", str(cm.exception))
            self.assertIn("reads version 5", str(cm.exception))
            self.assertEqual(cm.exception.errno, 71)
        finally:
            ring.destroy()

    def test_ring_of_another_stream(self):
        stream = f"gipy{os.getpid()}"
        ring = FakeRing(stream="other", name=f"/gpuingest-{stream}")
        try:
            with self.assertRaises(gpuingest.Error) as cm:
                gpuingest.open(stream, timeout=1)
            self.assertIn("belongs to stream 'other'", str(cm.exception))
            self.assertEqual(cm.exception.errno, 2)
        finally:
            ring.destroy()

    def test_gpu_ring_without_usable_cuda(self):
        """A mirror whose IPC handle no process exported: one clear line, whatever CUDA is here."""
        ring = FakeRing(in_device=True)
        try:
            with self.assertRaises(gpuingest.Error) as cm:
                gpuingest.open(ring.name, timeout=1)
            self.assertIn("GPU memory", str(cm.exception))
            self.assertNotIn("\n", str(cm.exception))
        finally:
            ring.destroy()

    def test_ctrl_c_interrupts_open(self):
        old = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            interrupt_main_after(0.2)
            t = time.monotonic()
            with self.assertRaises(KeyboardInterrupt):
                gpuingest.open(f"gi-no-such-{os.getpid()}", timeout=None)
            self.assertLess(time.monotonic() - t, 0.6)
        finally:
            signal.signal(signal.SIGINT, old)


class Tensors(unittest.TestCase):
    """frame.tensor(), DLPack and the CUDA Array Interface of a ring whose stream has a tensor: block."""

    def ring(self, dtype, shape, itemsize):
        n = itemsize * math.prod(shape)
        fake = FakeRing(packets=4, payload=1000, tensor=(dtype, shape, n))
        self.addCleanup(fake.destroy)
        ring = gpuingest.open(fake.name, timeout=1)
        self.addCleanup(ring.close)
        return fake, ring

    def test_complex64_zero_copy(self):
        fake, ring = self.ring(11, (1000,), 8)  # cf32: the ci16 samples of a 4000-byte frame
        self.assertEqual((ring.info.tensor_dtype, ring.info.tensor_shape), ("cf32", (1000,)))
        want = (np.arange(1000) * (1 + 2j)).astype(np.complex64)
        fake.publish(0, tensor=want.tobytes())
        f = ring.next(1)
        t = f.tensor()
        self.assertEqual((t.dtype, t.shape, f.tensor_dtype), (np.complex64, (1000,), "cf32"))
        self.assertEqual(t.__array_interface__["data"][0], f._f.tensor)  # the ring itself: no copy
        self.assertEqual(f._f.tensor - f.data, fake.tensor_off - fake.payload_off)  # into the slot, after the bytes
        self.assertFalse(t.flags.writeable)
        np.testing.assert_array_equal(t, want)
        d = np.from_dlpack(f)  # DLPack: the typed tensor, not the bytes
        self.assertEqual((d.dtype, d.shape), (np.complex64, (1000,)))
        np.testing.assert_array_equal(d, want)
        self.assertEqual(f.numpy().shape, (4000,))  # numpy(): still the raw bytes
        c = f.copy_tensor()  # gic_copy_tensor: a checked copy
        self.assertNotEqual(c.__array_interface__["data"][0], f._f.tensor)
        np.testing.assert_array_equal(c, want)
        self.assertTrue(f.valid())

    def test_uint16_image_and_pairs(self):
        fake, ring = self.ring(3, (2, 1000), 2)  # u16 [2, 1000], RAW10 unpacked
        img = np.arange(2000, dtype=np.uint16).reshape(2, 1000)
        fake.publish(0, tensor=img.tobytes())
        t = ring.next(1).tensor()
        self.assertEqual((t.dtype, t.shape), (np.uint16, (2, 1000)))
        np.testing.assert_array_equal(t, img)
        fake2, ring2 = self.ring(10, (500,), 4)  # cf16: float16 pairs for NumPy
        fake2.publish(0, tensor=np.ones(1000, np.float16).tobytes())
        t2 = ring2.next(1).tensor()
        self.assertEqual((t2.dtype, t2.shape), (np.float16, (500, 2)))

    def test_gpu_tensor_describes_itself(self):
        """A GPU frame's struct as gic_next() fills it: the Tensor's CAI and DLPack say type and shape."""
        fake, ring = self.ring(11, (1000,), 8)
        fake.publish(0)
        f = ring.next(1)
        f._f.data, f._f.dev_ptr, f._f.tensor = None, 0x7F0000001000, 0x7F0000002000
        t = f.tensor()
        self.assertIsInstance(t, gpuingest.Tensor)
        self.assertEqual((t.dtype, t.shape, t.address), ("cf32", (1000,), 0x7F0000002000))
        cai = f.__cuda_array_interface__
        self.assertEqual((cai["typestr"], cai["shape"], cai["data"]), ("<c8", (1000,), (0x7F0000002000, False)))
        cap = t.__dlpack__()
        ptr = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_GetPointer", ctypes.pythonapi))
        mt = gpuingest._DLManagedTensor.from_address(ptr(cap, b"dltensor"))
        dt = mt.dl_tensor.dtype
        self.assertEqual((mt.dl_tensor.data, mt.dl_tensor.ndim, mt.dl_tensor.shape[0], dt.code, dt.bits, dt.lanes),
                         (0x7F0000002000, 1, 1000, 5, 64, 1))  # kDLComplex 64: torch.complex64
        del mt, cap

    def test_bfloat16_in_dlpack(self):
        fake, ring = self.ring(8, (4, 500), 2)
        fake.publish(0, tensor=np.full(2000, 0x3F80, np.uint16).tobytes())  # bfloat16 1.0
        f = ring.next(1)
        t = f.tensor()
        self.assertEqual(t.shape, (4, 500))
        self.assertEqual(int(t.view(np.uint16)[0, 0]), 0x3F80)
        cap = f.__dlpack__()
        ptr = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_GetPointer", ctypes.pythonapi))
        mt = gpuingest._DLManagedTensor.from_address(ptr(cap, b"dltensor"))
        self.assertEqual((mt.dl_tensor.dtype.code, mt.dl_tensor.dtype.bits, mt.dl_tensor.ndim), (4, 16, 2))
        del mt, cap

    def test_no_tensor_block(self):
        fake = FakeRing()
        self.addCleanup(fake.destroy)
        ring = gpuingest.open(fake.name, timeout=1)
        self.addCleanup(ring.close)
        self.assertEqual((ring.info.tensor_dtype, ring.info.tensor_shape), ("", ()))
        fake.publish(0)
        f = ring.next(1)
        with self.assertRaises(gpuingest.Error) as cm:
            f.tensor()
        self.assertIn("no tensor: block", str(cm.exception))

    def test_inconsistent_tensor_record_refused(self):
        fake = FakeRing(packets=4, payload=1000, tensor=(11, (1000,), 4000))  # 1000 complex64 are 8000 bytes
        self.addCleanup(fake.destroy)
        with self.assertRaises(gpuingest.Error) as cm:
            gpuingest.open(fake.name, timeout=1)
        self.assertIn("inconsistent tensor record", str(cm.exception))


class Frames(unittest.TestCase):
    def setUp(self):
        self.fake = FakeRing(frame_bytes=69 * 64 + 10)  # the last packet is short

    def tearDown(self):
        gc.collect()
        self.fake.destroy()

    def open(self, **kw):
        ring = gpuingest.open(self.fake.name, timeout=1, **kw)
        self.addCleanup(ring.close)
        return ring

    def test_info(self):
        info = self.open().info
        self.assertEqual((info.stream, info.shm, info.ring_version, info.format_name), ("cam0", self.fake.name, 5,
                                                                                         "udp_seq"))
        self.assertEqual((info.n_slots, info.packets, info.payload_bytes, info.frame_bytes), (4, 70, 64, 69 * 64 + 10))
        self.assertEqual((info.in_device, info.cuda_device, info.wake, info.created_ns), (False, -1, False, 123456789))
        self.assertEqual(info.nic_ts, "")

    def test_nic_times(self):
        """first_nic_ns/last_nic_ns come from the slot, the clock from the header (version 5)."""
        for code, name in ((1, "realtime"), (2, "device_ticks")):
            fake = FakeRing(nic_ts=code)
            self.addCleanup(fake.destroy)
            ring = gpuingest.open(fake.name, timeout=1)
            self.addCleanup(ring.close)
            self.assertEqual(ring.info.nic_ts, name)
            fake.publish(3, nic=(1700000000123456000, 1700000000123999000))
            fake.publish(4)
            f = ring.next(timeout=1)
            self.assertEqual((f.frame, f.first_nic_ns, f.last_nic_ns), (3, 1700000000123456000, 1700000000123999000))
            f = ring.next(timeout=1)
            self.assertEqual((f.frame, f.first_nic_ns, f.last_nic_ns), (4, 0, 0))
        bad = FakeRing(nic_ts=7)
        self.addCleanup(bad.destroy)
        with self.assertRaises(gpuingest.Error) as e:
            gpuingest.open(bad.name, timeout=1)
        self.assertIn("unknown NIC clock 7", str(e.exception))

    def test_frame_metadata_and_zero_copy_view(self):
        ring = self.open()
        self.assertIsNone(ring.next(timeout=0))
        self.fake.publish(10, sensor_id=3, sensor_frame=4294967295)
        f = ring.next(timeout=1)
        self.assertEqual((f.frame, f.sensor_frame, f.sensor_id, f.state, f.state_code), (10, 4294967295, 3,
                                                                                          "complete", 2))
        self.assertEqual((f.expected, f.received, f.nbytes, f.payload_bytes), (70, 70, 69 * 64 + 10, 64))
        self.assertEqual((f.first_ts_ns, f.first_rx_ns, f.publish_ns, f.dev_ptr), (1010, 2010, 3010, 0))
        self.assertIsNone(f.sender)
        self.assertTrue(f.present.all() and len(f.present) == 70)
        arr = f.numpy()
        self.assertEqual(arr.__array_interface__["data"][0], f.data)  # the ring itself, not a copy
        self.assertFalse(arr.flags.writeable)
        self.assertTrue(np.shares_memory(arr, f.numpy()))
        np.testing.assert_array_equal(arr, pattern(10, f.nbytes))
        np.testing.assert_array_equal(f.copy(), arr)
        self.assertTrue(f.valid())
        # the view follows the ring: the test rewrites a byte in place and the array sees it
        self.fake.mm[self.fake.slot(10) + self.fake.payload_off] ^= 0xFF
        self.assertEqual(arr[0], pattern(10, 1)[0] ^ 0xFF)
        self.assertEqual(ring.stats()["complete"], 1)

    def test_dtype_and_shape(self):
        fake = FakeRing(packets=4, payload=256, name=self.fake.name + "b")
        self.addCleanup(fake.destroy)
        ring = gpuingest.open(fake.name, timeout=1)
        self.addCleanup(ring.close)
        fake.publish(0)
        f = ring.next(1)
        u16 = f.numpy(np.uint16, shape=(16, 32))
        self.assertEqual(u16.shape, (16, 32))
        self.assertEqual(u16.__array_interface__["data"][0], f.data)
        np.testing.assert_array_equal(u16.ravel(), pattern(0, 1024).view("<u2").astype(np.uint16))
        with self.assertRaises(ValueError):
            f.numpy(np.dtype("V3"))  # 1024 bytes are not whole 3-byte items

    def test_shape_mismatch_names_the_frame_length_itemsize_and_shape(self):
        """A shape that does not fit: the module's own error (a ValueError too), saying what did not fit,
        as gpuingest-frames --shape does; NumPy's reshape error names none of it."""
        fake = FakeRing(packets=4, payload=256, name=self.fake.name + "s")
        self.addCleanup(fake.destroy)
        ring = gpuingest.open(fake.name, timeout=1)
        self.addCleanup(ring.close)
        fake.publish(0)
        f = ring.next(1)
        with self.assertRaises(gpuingest.ShapeMismatch) as cm:
            f.numpy("<u2", shape=(3, 3))
        self.assertIsInstance(cm.exception, gpuingest.Error)
        self.assertIsInstance(cm.exception, ValueError)
        msg = str(cm.exception)
        for part in ("frame 0", "1024 bytes", "512 items of 2 bytes", "(3, 3)", "asks for 9"):
            self.assertIn(part, msg)
        with self.assertRaises(gpuingest.ShapeMismatch) as cm:
            f.numpy(shape=(7, -1))  # -1: NumPy infers it, but 1024 bytes are no multiple of 7
        self.assertIn("a multiple of 7", str(cm.exception))
        with self.assertRaises(gpuingest.ShapeMismatch):
            f.numpy(np.dtype("V3"))
        self.assertEqual(f.numpy("<u4", shape=(-1, 16)).shape, (16, 16))  # what fits still works

    def test_partial_frame_bitmap_and_sender(self):
        ring = self.open()
        present = [0, 1, 5, 63, 64, 69]
        sender = (1, 2, 77, 4426, 5, 6, 0xDEADBEEF, 99, 2)
        self.fake.publish(3, state=3, present=present, sender=sender)
        f = ring.next(1)
        self.assertEqual((f.state, f.received), ("partial", 6))
        self.assertEqual(list(np.flatnonzero(f.present)), present)
        self.assertEqual([i for i in range(-1, 72) if f.packet_present(i)], present)
        self.assertEqual(f.sender, gpuingest.Sender("hsb", 2, 77, 4426, 5, 6, 0xDEADBEEF, 99, "mismatch"))
        self.fake.publish(4, state=4, present=[1])
        self.assertEqual(ring.next(1).state, "timed_out")
        self.fake.publish(5, state=5)
        self.assertEqual(ring.next(1).state, "corrupt")
        s = ring.stats()
        self.assertEqual((s["partial"], s["timed_out"], s["corrupt"], s["frames"]), (1, 1, 1, 3))

    def test_overrun_found_by_valid_and_copy(self):
        ring = self.open()
        self.fake.publish(0)
        self.fake.publish(1)
        f0 = ring.next(1)
        f1 = ring.next(1)
        self.fake.reuse(0)
        self.assertFalse(f0.valid())
        self.assertFalse(f0.valid())  # counted once
        with self.assertRaises(gpuingest.Overrun):
            f0.copy()
        self.assertTrue(f1.valid())
        out = np.zeros(f1.nbytes + 10, np.uint8)
        self.assertIs(f1.copy(out=out), out)
        np.testing.assert_array_equal(out[:f1.nbytes], pattern(1, f1.nbytes))
        with self.assertRaises(ValueError):
            f1.copy(out=np.zeros(10, np.uint8))
        s = ring.stats()
        self.assertEqual((s["complete"], s["overruns"]), (1, 1))

    def test_views_only_of_the_newest_frame(self):
        ring = self.open()
        self.fake.publish(0)
        self.fake.publish(1)
        f0 = ring.next(1)
        arr0 = f0.numpy()
        f1 = ring.next(1)
        for make in (f0.numpy, f0.__dlpack__):
            with self.assertRaises(gpuingest.Stale) as cm:
                make()
            self.assertIn("next() has returned a newer frame", str(cm.exception))
        np.testing.assert_array_equal(arr0, pattern(0, f0.nbytes))  # an existing view stays readable
        self.assertTrue(f0.valid())  # and checkable
        f1.numpy()

    def test_mapping_outlives_close_while_an_array_uses_it(self):
        ring = gpuingest.open(self.fake.name, timeout=1)
        self.fake.publish(0)
        f = ring.next(1)
        arr = f.numpy()
        del f
        ring.close()
        with self.assertRaises(gpuingest.Error):
            ring.next(0)
        self.assertTrue(mapped_read_only(self.fake.path))
        np.testing.assert_array_equal(arr[:16], pattern(0, 16))
        del arr
        self.assertFalse(mapped_read_only(self.fake.path), "gic_close() did not run when the last view went")

    def test_numpy_from_dlpack_is_zero_copy(self):
        ring = self.open()
        self.fake.publish(0)
        f = ring.next(1)
        self.assertEqual(f.__dlpack_device__(), (1, 0))
        self.assertFalse(hasattr(f, "__cuda_array_interface__"))
        live = len(gpuingest._dl_live)
        arr = np.from_dlpack(f)
        self.assertEqual(arr.__array_interface__["data"][0], f.data)
        self.assertEqual((arr.dtype, arr.shape), (np.uint8, (f.nbytes,)))
        np.testing.assert_array_equal(arr, pattern(0, f.nbytes))
        self.assertEqual(len(gpuingest._dl_live), live + 1)
        del arr  # numpy calls the deleter
        self.assertEqual(len(gpuingest._dl_live), live)
        cap = f.__dlpack__()  # never consumed: the capsule's destructor releases it
        self.assertEqual(len(gpuingest._dl_live), live + 1)
        del cap
        self.assertEqual(len(gpuingest._dl_live), live)
        copied = np.from_dlpack(_Exporter(f, copy=True))
        self.assertNotEqual(copied.__array_interface__["data"][0], f.data)
        np.testing.assert_array_equal(copied, pattern(0, f.nbytes))
        with self.assertRaises(BufferError):
            f.__dlpack__(dl_device=(2, 0))
        with self.assertRaises(BufferError):
            f.__dlpack__(stream=1)

    def test_numpy_refuses_a_gpu_frame_and_cai_describes_it(self):
        """A GPU frame's struct as gic_next() fills it (no emulated CUDA needed for this part)."""
        ring = self.open()
        self.fake.publish(0)
        f = ring.next(1)
        f._f.data, f._f.dev_ptr = None, 0x7F0000001000
        with self.assertRaises(gpuingest.Error) as cm:
            f.numpy()
        self.assertIn("GPU memory", str(cm.exception))
        cai = f.__cuda_array_interface__
        self.assertEqual(cai, {"shape": (f.nbytes,), "typestr": "|u1", "data": (0x7F0000001000, False),
                               "version": 3, "strides": None, "stream": None})
        self.assertEqual(f.__dlpack_device__(), (2, -1))
        cap = f.__dlpack__(stream=1)
        ptr = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
            ("PyCapsule_GetPointer", ctypes.pythonapi))
        mt = gpuingest._DLManagedTensor.from_address(ptr(cap, b"dltensor"))
        self.assertEqual((mt.dl_tensor.data, mt.dl_tensor.device.device_type, mt.dl_tensor.ndim,
                          mt.dl_tensor.shape[0]), (0x7F0000001000, 2, 1, f.nbytes))
        del mt, cap

    def test_skipped_frames_and_the_identity(self):
        ring = self.open()
        self.fake.publish(0)
        self.fake.publish(2)  # frame 1 never had a packet: the daemon skipped its number
        self.assertEqual([ring.next(1).frame, ring.next(1).frame], [0, 2])
        for f in range(3, 9):
            self.fake.publish(f)
        self.assertEqual(ring.skip_to_newest(), 5)
        self.assertEqual(ring.next(1).frame, 8)
        s = ring.stats()
        self.assertTrue(s["started"])
        self.assertEqual((s["missing"], s["skipped"], s["complete"]), (1, 5, 3))
        total = sum(s[k] for k in ("complete", "partial", "timed_out", "corrupt", "missing", "overruns", "skipped"))
        self.assertEqual(total, s["next_frame"] - s["first_frame"])

    def test_late_join_counts_no_overruns_before_it_opened(self):
        """Opened after the ring went round ten times: it reads what the ring holds (but the frame
        whose slot the next one takes), and the frames published before it opened are neither its
        overruns nor anything else of its own."""
        n = self.fake.n
        for f in range(10 * n):
            self.fake.publish(f)
        ring = self.open()
        got = [f.frame for f in ring.frames(timeout=0)]
        self.assertEqual(got, list(range(9 * n + 1, 10 * n)))
        s = ring.stats()
        self.assertEqual((s["overruns"], s["missing"], s["skipped"], s["complete"]), (0, 0, 0, n - 1))
        self.assertEqual((s["first_frame"], s["next_frame"]), (9 * n + 1, 10 * n))

    def test_latest_starts_at_the_newest(self):
        for f in range(3):
            self.fake.publish(f)
        ring = self.open(latest=True)
        self.assertEqual(ring.next(1).frame, 2)
        self.assertEqual(ring.stats()["skipped"], 2)

    def test_timeout_returns_none(self):
        ring = self.open()
        t = time.monotonic()
        self.assertIsNone(ring.next(timeout=0.25))
        self.assertGreaterEqual(time.monotonic() - t, 0.24)
        t = time.monotonic()
        self.assertEqual(list(ring.frames(timeout=0.05)), [])
        self.assertLess(time.monotonic() - t, 0.5)

    def test_iteration_ends_when_the_daemon_closes(self):
        ring = self.open()
        for f in range(3):
            self.fake.publish(f)
        self.fake.close()
        self.assertEqual([f.frame for f in ring], [0, 1, 2])
        with self.assertRaises(gpuingest.Closed):
            ring.next(1)

    def test_removed_ring_is_restarted(self):
        ring = self.open()
        self.fake.publish(0)
        os.unlink(self.fake.path)
        self.assertEqual(ring.next(1).frame, 0)  # what it still holds comes first
        t = time.monotonic()
        with self.assertRaises(gpuingest.Restarted):
            for _ in ring:
                pass
        self.assertLess(time.monotonic() - t, 1.0)

    def test_ctrl_c_interrupts_next(self):
        for wake in (False, True):  # polling, and asleep on the futex
            with self.subTest(wake=wake):
                fake = FakeRing(wake=wake, name=f"{self.fake.name}w{int(wake)}")
                self.addCleanup(fake.destroy)
                ring = gpuingest.open(fake.name, timeout=1)
                self.addCleanup(ring.close)
                self.assertEqual(ring.info.wake, wake)
                old = signal.signal(signal.SIGINT, signal.default_int_handler)
                try:
                    interrupt_main_after(0.2)
                    t = time.monotonic()
                    with self.assertRaises(KeyboardInterrupt):
                        ring.next()
                    self.assertLess(time.monotonic() - t, 0.6)
                finally:
                    signal.signal(signal.SIGINT, old)


class _Exporter:
    """np.from_dlpack calls __dlpack__() without arguments: this passes copy=True through."""

    def __init__(self, frame, copy):
        self.frame, self.copy = frame, copy

    def __dlpack__(self, stream=None):
        return self.frame.__dlpack__(stream=stream, copy=self.copy)

    def __dlpack_device__(self):
        return self.frame.__dlpack_device__()


if __name__ == "__main__":
    unittest.main(verbosity=2)
