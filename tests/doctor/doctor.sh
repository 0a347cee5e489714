#!/usr/bin/env bash
# doctor.sh — `gpuingestd --doctor` against the miniature boxes of boxes.py
# (GI_DOCTOR_ROOT=<box>), each with the config it is judged by, then once on
# this machine.  Every run is made twice, --json and text; expect.py checks
# the verdicts, the decisive findings and fixes, the exit status, and that
# the text output is one line per check.  Needs no root.
set -euo pipefail

: "${GI_BUILD:?GI_BUILD: the build directory}"
: "${GI_SRC:?GI_SRC: the source directory}"
GPUINGESTD=$GI_BUILD/daemon/gpuingestd
HERE=$GI_SRC/tests/doctor
PY=/usr/bin/python3
unset GI_DOCTOR_ROOT

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
failures=0

"$PY" "$HERE/boxes.py" "$T/boxes"

# ---- the configs: tests/doctor's two, and variants of gpu.yaml --------------------------
GPU=$HERE/gpu.yaml
HOST=$HERE/host.yaml
# two_sockets' NIC and GPU are at other addresses
sed -e 's/"0000:41:00.0"/"0000:01:00.0"/' -e 's/"0000:43:00.0"/"0000:81:00.0"/' "$GPU" >"$T/two_sockets.yaml"
# one launch per pass instead of a persistent kernel (a display GPU only warns then)
sed -e 's/^  mode: persistent$/  mode: launch/' "$GPU" >"$T/launch.yaml"
# addresses as the config also takes them: without the domain
sed -e 's/"0000:41:00.0"/"41:00.0"/' -e 's/"0000:43:00.0"/"43:00.0"/' "$GPU" >"$T/short.yaml"
if ! grep -q '"0000:01:00.0"' "$T/two_sockets.yaml" || ! grep -q 'mode: launch' "$T/launch.yaml" ||
  ! grep -q '"41:00.0"' "$T/short.yaml"; then
  echo "FAIL: the config variants were not made"
  exit 1
fi

for c in "$GPU" "$HOST" "$T/two_sockets.yaml" "$T/launch.yaml" "$T/short.yaml"; do
  if ! "$GPUINGESTD" --check-config --config "$c" >"$T/cc.out" 2>&1; then
    echo "FAIL: --check-config rejects $c:"; cat "$T/cc.out"; failures=$((failures + 1))
  fi
done

# doctor NAME ROOT CONFIG ASSERTION...: ROOT "-" leaves GI_DOCTOR_ROOT unset, CONFIG "-" gives no --config
doctor() {
  local name=$1 root=$2 config=$3 rc=0 trc=0
  shift 3
  local env=() args=(--doctor)
  [ "$root" = - ] || env=(GI_DOCTOR_ROOT="$root")
  [ "$config" = - ] || args+=(--config "$config")
  env "${env[@]}" "$GPUINGESTD" "${args[@]}" --json >"$T/out.json" 2>"$T/err" || rc=$?
  env "${env[@]}" "$GPUINGESTD" "${args[@]}" >"$T/out.txt" 2>>"$T/err" || trc=$?
  if [ "$rc" -gt 1 ] || [ "$trc" -ne "$rc" ] || [ -s "$T/err" ]; then
    echo "FAIL $name: exit status $rc (--json), $trc (text); stderr:"; cat "$T/err"
    failures=$((failures + 1))
    return
  fi
  "$PY" "$HERE/expect.py" "$name" "$rc" "$T/out.json" "$T/out.txt" "$@" || failures=$((failures + 1))
}

B=$T/boxes

# ---- the boxes -----------------------------------------------------------------------------
doctor "good, GPU config" "$B/good" "$GPU" rc=0 nofail \
  gpu.driver=ok ~"550.54.14" \
  peermem=ok ~"nvidia_peermem loaded" ~"DOCA-OFED" \
  gpu.device=ok ~"GPU 0000:43:00.0, NUMA node 0, driver nvidia" \
  gpu.bar1=ok ~"BAR1 is 64.0 GiB" ~"need 1.0 GiB" \
  gpu.display=ok \
  nic.driver=ok ~"NIC 0000:41:00.0: driver mlx5_core" \
  nic.firmware=ok ~"22.39.1002" \
  pcie.link=ok ~"GPU 0000:43:00.0: trained at Gen4 x16, capable of Gen4 x16" ~"MaxPayload 256 B, MaxReadReq 512 B" \
  pcie.link=ok ~"NIC 0000:41:00.0: trained at Gen4 x16" ~"MaxReadReq 4096 B" \
  pcie.path=ok ~"one PCIe switch" \
  pcie.acs=ok ~"no ACS P2P redirect on the 3 bridges" \
  iommu=ok ~"passthrough" iommu.groups=ok ~"both untranslated" \
  mem.hugepages=ok ~"4.0 GiB of hugepages free, the config needs 105 MiB, hugetlbfs mounted" \
  cpu.2=ok ~"isolated, nohz_full, rcu_nocbs, governor performance" \
  service=ok ~"/usr/lib/systemd/system/gpuingest.service grants"

doctor "good, host config" "$B/good" "$HOST" rc=0 nofail '!gpu.=fail' '!gpu.device' '!pcie.path' \
  peermem=ok ~"not needed" nic.driver=ok mem.hugepages=ok ~"the config needs 287 MiB" service=ok


doctor "good, PCI addresses without the domain" "$B/good" "$T/short.yaml" rc=0 nofail \
  nic.driver=ok ~"NIC 0000:41:00.0" gpu.device=ok ~"GPU 0000:43:00.0" pcie.path=ok ~"one PCIe switch"

doctor "debian_stock" "$B/debian_stock" "$GPU" rc=1 onlyfail=peermem \
  peermem=fail ~"kernel 6.1.0-18-amd64" ~"no peer-memory client API" fix~"DOCA-OFED" \
  dmabuf=warn gpu.driver=ok ~"535.161.07"

doctor "two_sockets" "$B/two_sockets" "$T/two_sockets.yaml" rc=1 onlyfail=pcie.path \
  pcie.path=fail ~"NIC 0000:01:00.0 and GPU 0000:81:00.0" ~"different sockets" \
  gpu.device=ok ~"NUMA node 1" nic.driver=ok ~"NUMA node 0" cpu.2=ok ~"NUMA node 0"

doctor "small_bar1" "$B/small_bar1" "$GPU" rc=1 onlyfail=gpu.bar1 \
  gpu.bar1=fail ~"BAR1 is 256 MiB" ~"need 1.0 GiB"

doctor "gen3x8" "$B/gen3x8" "$GPU" rc=0 nofail \
  pcie.link=warn ~"GPU 0000:43:00.0" ~"Gen3 x8" ~"Gen5 x16" \
  pcie.link=ok ~"NIC 0000:41:00.0: trained at Gen5 x16, capable of Gen5 x16"

doctor "no_hugepages" "$B/no_hugepages" "$GPU" rc=1 onlyfail=mem.hugepages \
  mem.hugepages=fail ~"no hugepages reserved" fix~"nr_hugepages"

doctor "display_gpu, persistent" "$B/display_gpu" "$GPU" rc=1 onlyfail=gpu.display \
  gpu.display=fail ~"GPU 0000:43:00.0 drives a connected display" ~"persistent" fix~"executor.mode: launch"

doctor "display_gpu, launch" "$B/display_gpu" "$T/launch.yaml" rc=0 nofail \
  gpu.display=warn ~"connected display"

doctor "acs_redirect" "$B/acs_redirect" "$GPU" rc=0 nofail \
  pcie.acs=warn ~"0000:40:00.0 0000:40:02.0" '!pcie.acs=ok'

doctor "container_host (hugetlbfs after 8 KiB of mounts)" "$B/container_host" "$GPU" rc=0 nofail \
  mem.hugepages=ok ~"hugetlbfs mounted"

# a plain host ingests into host memory; a config that wants the GPU fails on what it lacks
doctor "plain_host, host config" "$B/plain_host" "$HOST" rc=0 nofail \
  gpu.driver=ok ~"this config does not need one" peermem=ok ~"not needed" '!gpu.device' '!pcie.path'
doctor "plain_host, GPU config" "$B/plain_host" "$GPU" rc=1 onlyfail=gpu.device,gpu.driver,peermem,service \
  gpu.driver=fail ~"no NVIDIA driver" gpu.device=fail ~"executor.device 0000:43:00.0: no such NVIDIA GPU" \
  peermem=fail ~"no peer-memory client API" service=fail ~"/dev/nvidiactl"

# ---- without --config: what GPUDirect ingest needs (driver, GPU, peer memory, BAR1, NIC near the GPU)
doctor "good, no config" "$B/good" - rc=0 nofail \
  gpu.driver=ok ~"550.54.14" peermem=ok ~"nvidia_peermem loaded" dmabuf=ok \
  gpu.device=ok ~"GPU 0000:43:00.0" ~"the first GPU; no config" gpu.bar1=ok ~"64.0 GiB" \
  nic.driver=ok ~"NIC 0000:41:00.0: driver mlx5_core" nic.driver=ok ~"NIC 0000:41:00.1" \
  nic.mtu=ok ~"MTU 9000" pcie.link=ok ~"GPU 0000:43:00.0" \
  pcie.path=ok ~"NIC 0000:41:00.0 and GPU 0000:43:00.0" ~"one PCIe switch" pcie.acs=ok iommu.groups=ok \
  service=ok ~"GPUDirect ingest needs" '!cpu.0' '!~this config' '!~the config'
doctor "plain_host, no config" "$B/plain_host" - rc=1 \
  onlyfail=gpu.bar1,gpu.device,gpu.driver,pcie.path,peermem,service \
  gpu.driver=fail ~"no NVIDIA driver" ~"GPUDirect ingest needs" fix~"install the NVIDIA driver" \
  peermem=fail ~"kernel 6.1.0-18-amd64" ~"no peer-memory client API" fix~"DOCA-OFED" dmabuf=warn \
  gpu.device=fail ~"no NVIDIA GPU" ~"GPUDirect ingest needs" \
  gpu.bar1=fail ~"no NVIDIA GPU" \
  pcie.path=fail ~"no NVIDIA GPU" ~"NIC 0000:41:00.0" \
  nic.driver=ok ~"NIC 0000:41:00.0: driver mlx5_core" service=fail ~"/dev/nvidiactl" \
  '!~this config' '!~the config'
doctor "debian_stock, no config" "$B/debian_stock" - rc=1 onlyfail=peermem \
  peermem=fail ~"no peer-memory client API" dmabuf=warn gpu.driver=ok ~"535.161.07" '!~this config'
doctor "two_sockets, no config" "$B/two_sockets" - rc=1 onlyfail=pcie.path \
  pcie.path=fail ~"NIC 0000:01:00.0 and GPU 0000:81:00.0" ~"different sockets" '!pcie.path=ok'
# judged by the ports nearest the GPU (the ones GPUDirect ingest would use), not the one on the other socket
doctor "far_nic, no config" "$B/far_nic" - rc=0 nofail \
  pcie.path=ok ~"NIC 0000:41:00.0 and GPU 0000:43:00.0" ~"one PCIe switch" '!~0000:81:00.0'
doctor "far_nic, GPU config" "$B/far_nic" "$GPU" rc=0 nofail pcie.path=ok ~"NIC 0000:41:00.0" '!~0000:81:00.0'
doctor "small_bar1, no config" "$B/small_bar1" - rc=0 nofail \
  gpu.bar1=warn ~"BAR1 is 256 MiB" fix~"Resizable BAR"

# a root that is not there: one fail saying so, not a box without anything
doctor "missing root, GPU config" "$T/no-such-root" "$GPU" rc=1 onlyfail=root root=fail ~"is not a directory"
doctor "missing root, no config" "$T/no-such-root" - rc=1 onlyfail=root root=fail ~"is not a directory"

# ---- this machine, for real ------------------------------------------------------------------
if [ -e /sys/devices/system/cpu/cpu1 ]; then
  doctor "this machine, demo.yaml" - "$GI_SRC/config/demo.yaml" rc=0 nofail mem.hugepages=ok ~"--no-huge"
else
  echo "skip this machine, demo.yaml: it has one CPU and the demo needs lcores 0 and 1"
fi
if [ -e /proc/driver/nvidia/version ] && grep -q ' ib_register_peer_memory_client' /proc/kallsyms 2>/dev/null; then
  # a GPUDirect box: whatever it finds, it says so in one line per check
  doctor "this machine, mlx5-gpu.yaml" - "$GI_SRC/config/examples/mlx5-gpu.yaml" 'rc=0|1'
  doctor "this machine, no config" - - 'rc=0|1' '!~this config'
else
  doctor "this machine, mlx5-gpu.yaml" - "$GI_SRC/config/examples/mlx5-gpu.yaml" rc=1 anyfail=gpu.driver,peermem
  doctor "this machine, no config" - - rc=1 anyfail=gpu.driver,peermem '!~this config'
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures doctor run(s) failed"
  exit 1
fi
echo "all doctor runs passed"
