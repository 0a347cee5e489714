#!/usr/bin/env bash
# frames_device_ring.sh — a frame ring whose payload lives in GPU memory (a
# metadata mirror with a CUDA IPC handle): gpuingest-frames validates the
# mirror geometry and, without an NVIDIA driver (or, with one or with the
# CUDA emulation, given a handle that no process exported), refuses with exit
# 2 and one line that says why — never a crash or a bogus verification.
source "$(dirname "$0")/lib.sh"
python3 - "/dev/shm/$TAG-dev" <<'PY'
import os, struct, sys
ppf, pb, n = 8, 256, 4
align = lambda x, a: (x + a - 1) // a * a
bw = (ppf + 63) // 64
payload_off = align(192 + 8 * bw, 64)  # 192-byte slot headers (frame ring version 5: the NIC times)
slot_stride = align(payload_off + ppf * pb, 4096)
hdr = bytearray(448)  # version 5: the tensor record at 320 and nic_ts at 416, zero: none
# kernels/frame.h: magic, version, hdr_bytes, n_slots, packets, payload, bitmap words,
# slot_stride (metadata only), frame_bytes, payload_off, format, stream_index
struct.pack_into("<IHHIIIIQQQII", hdr, 0, 0x47494652, 5, 448, n, ppf, pb, bw, payload_off, ppf * pb,
                 payload_off, 1, 0)
hdr[56:60] = b"cam0"
# created_ns, payload_in_device, dev_ordinal, dev_slot_stride, dev_ring_bytes
struct.pack_into("<QIIQQ", hdr, 120, 1, 1, 0, slot_stride, 4096 + n * slot_stride)
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o640)
os.ftruncate(fd, 4096 + n * payload_off)
os.pwrite(fd, bytes(hdr), 0)
os.close(fd)
PY
rc=0
"$FRAMES" --shm "/$TAG-dev" --wait 1 >"$T/out" 2>"$T/err" || rc=$?
if [ -e /dev/nvidiactl ]; then
  echo "an NVIDIA driver is present: the handle is fake, so opening it must fail cleanly"
fi
[ "$rc" -eq 2 ] || { cat "$T/err"; fail "exit status $rc, expected 2"; }
grep -q "GPU memory" "$T/err" || { cat "$T/err"; fail "message does not say the frames are in GPU memory"; }
[ "$(wc -l <"$T/err")" -eq 1 ] || { cat "$T/err"; fail "more than one error line"; }
[ ! -s "$T/out" ] || fail "printed a verification result for a ring it could not read"
# a mirror whose device stride disagrees with its geometry is rejected as inconsistent
python3 - "/dev/shm/$TAG-dev" <<'PY'
import os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.pwrite(fd, struct.pack("<Q", 12345), 136)  # dev_slot_stride
os.close(fd)
PY
rc=0
"$FRAMES" --shm "/$TAG-dev" --wait 1 >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "inconsistent header" "$T/err" || { cat "$T/err"; fail "inconsistent mirror accepted"; }
# a ring of another layout version (a daemon older or newer than the library) is refused by name
python3 - "/dev/shm/$TAG-dev" <<'PY'
import os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.pwrite(fd, struct.pack("<H", 2), 4)  # version
os.close(fd)
PY
rc=0
"$FRAMES" --shm "/$TAG-dev" --wait 1 >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "frame ring version 2 .*reads version 5" "$T/err" || { cat "$T/err"; fail "a version-2 ring was not refused by version"; }
echo PASS
