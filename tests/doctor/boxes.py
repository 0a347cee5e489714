#!/usr/bin/python3
"""boxes.py — miniature root trees of known boxes for `gpuingestd --doctor`.

    /usr/bin/python3 tests/doctor/boxes.py OUTDIR [BOX...]

writes OUTDIR/<box>/ for every box (or the ones named): the part of sysfs,
procfs, /dev, /usr/lib and the systemd unit that daemon/doctor.c and
daemon/doctor_pci.c read, laid out as the kernel lays it out, so that
GI_DOCTOR_ROOT=OUTDIR/<box> gpuingestd --doctor judges that box:

  /sys/bus/pci/devices/BDF   symlinks into real directories under
                             /sys/devices/pci0000:XX/<root port>/.../BDF, each with
                             vendor, device, class, numa_node, resource (one line
                             per resource, BAR1 on line 1), the *_link_* files
                             ("16.0 GT/s PCIe"), a 4096-byte binary config (the
                             PCIe capability in the list from 0x34, Device Control
                             at +8; AER then ACS as extended capabilities from
                             0x100, ACS control at +6), driver and iommu_group
                             symlinks (relative, resolvable), net/ and
                             infiniband/ under a NIC, drm/ under a GPU
  /sys/module/NAME           loaded modules (/proc/modules is not read)
  /sys/kernel/mm/hugepages, /sys/devices/system/{cpu,node}, /sys/class/iommu,
  /sys/kernel/iommu_groups
  /proc/{cmdline,mounts,kallsyms,sys/kernel/osrelease,driver/nvidia/version},
  /proc/self -> PID with limits, /proc/PID/comm
  /dev nodes (plain files), /usr/lib/x86_64-linux-gnu/libibverbs.so.1.*,
  /usr/lib/systemd/system/gpuingest.service (rendered from
  systemd/gpuingest.service.in as `meson setup --prefix=/usr` installs it)

Every box is the `good` box with a few facts changed (see BOXES at the end).
Standard library only; the same output every run.
"""
import os
import posixpath
import struct
import sys

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GIB = 1 << 30
MIB = 1 << 20

# link speed code (Link Capabilities/Status) -> what sysfs prints
SPEED = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe",
         5: "32.0 GT/s PCIe", 6: "64.0 GT/s PCIe"}

# resource flags as the kernel prints them in sysfs `resource`
R_MEM32 = 0x40200        # 32-bit, non-prefetchable memory
R_MEM64P = 0x14220c      # 64-bit prefetchable memory
R_IO = 0x40101
R_ROM = 0x46200
R_BRIDGE_IO = 0x101
R_BRIDGE_MEM = 0x200
R_BRIDGE_MEMP = 0x102200


class Tree:
    """Files under one box's root; paths are absolute inside the box."""

    def __init__(self, root):
        self.root = root

    def p(self, path):
        return self.root + path

    def mkdir(self, path):
        os.makedirs(self.p(path), exist_ok=True)

    def write(self, path, data):
        self.mkdir(posixpath.dirname(path))
        mode = "wb" if isinstance(data, (bytes, bytearray)) else "w"
        with open(self.p(path), mode) as f:
            f.write(data)

    def link(self, path, target):
        """A relative symlink at path to the absolute (in-box) target, as sysfs makes them."""
        self.mkdir(posixpath.dirname(path))
        rel = posixpath.relpath(target, posixpath.dirname(path))
        if os.path.lexists(self.p(path)):
            os.unlink(self.p(path))
        os.symlink(rel, self.p(path))


# ---- PCI config space ---------------------------------------------------------------------

def config_space(dev, parent_bus):
    """4096 bytes: header, capability list (PM, MSI, PCIe, MSI-X), AER and maybe ACS."""
    b = bytearray(4096)
    bridge = dev["kind"] in ("rootport", "upstream", "downstream")
    cls = dev["class"]
    struct.pack_into("<HHHH", b, 0x00, dev["vendor"], dev["device"], 0x0547 if bridge else 0x0546, 0x0010)
    b[0x08] = dev.get("rev", 0xa1)
    b[0x09], b[0x0a], b[0x0b] = cls & 0xff, (cls >> 8) & 0xff, (cls >> 16) & 0xff
    b[0x0c] = 0x10
    b[0x0e] = (0x01 if bridge else 0x00) | (0x80 if dev.get("multifunction") else 0)
    if bridge:
        b[0x18], b[0x19], b[0x1a] = parent_bus, dev["secondary"], dev["subordinate"]
    else:
        struct.pack_into("<HH", b, 0x2c, dev.get("subvendor", dev["vendor"]), dev.get("subdevice", 0))
    b[0x34] = 0x40
    # PCI Power Management
    b[0x40], b[0x41] = 0x01, 0x50
    struct.pack_into("<H", b, 0x42, 0x0003)
    # MSI
    b[0x50], b[0x51] = 0x05, 0x70
    struct.pack_into("<H", b, 0x52, 0x0180)
    # PCI Express: +2 capabilities, +4 DevCap, +8 DevCtl, +0xc LinkCap, +0x12 LinkSta, +0x2c LinkCap2
    port_type = {"endpoint": 0, "rootport": 4, "upstream": 5, "downstream": 6, "rciep": 9}[dev["kind"]]
    c = 0x70
    b[c], b[c + 1] = 0x10, 0xb0
    struct.pack_into("<H", b, c + 2, 0x0002 | port_type << 4 | (0x100 if port_type in (4, 6) else 0))
    struct.pack_into("<I", b, c + 4, 0x8fe2 | 0x2)  # MaxPayload supported 512, extended tags, RBER
    mps_code = {128: 0, 256: 1, 512: 2, 1024: 3}[dev["mps"]]
    mrrs_code = {128: 0, 256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}[dev["mrrs"]]
    devctl = 0x000f | 0x0010 | mps_code << 5 | 0x0100 | 0x0800 | mrrs_code << 12
    struct.pack_into("<H", b, c + 8, devctl)
    max_gen, max_w = dev["link_max"]
    cur_gen, cur_w = dev["link_cur"]
    struct.pack_into("<I", b, c + 0x0c, max_gen | max_w << 4 | 0x3 << 10 | dev.get("port_number", 0) << 24)
    struct.pack_into("<H", b, c + 0x10, 0x0040)
    struct.pack_into("<H", b, c + 0x12, cur_gen | cur_w << 4 | (0x2000 if port_type in (4, 6) else 0))
    struct.pack_into("<I", b, c + 0x2c, ((1 << max_gen) - 1) << 1)
    # MSI-X, the end of the list
    b[0xb0], b[0xb1] = 0x11, 0x00
    struct.pack_into("<H", b, 0xb2, 0x003f)
    # extended: AER at 0x100, then ACS at 0x148 (switch ports, root ports), then the end
    acs = dev.get("acs")
    struct.pack_into("<I", b, 0x100, 0x0001 | 2 << 16 | (0x148 if acs is not None else 0x000) << 20)
    if acs is not None:
        struct.pack_into("<I", b, 0x148, 0x000d | 1 << 16 | 0x000 << 20)
        struct.pack_into("<HH", b, 0x14c, 0x005f, acs)  # capability: SV TB RR CR UF DT; control
    return bytes(b)


def resource_lines(dev):
    """sysfs `resource`: 13 lines for an endpoint (6 BARs, ROM, 6 IOV), 17 for a bridge."""
    n = 17 if "secondary" in dev else 13
    lines = [(0, 0, 0)] * n
    for idx, (start, size, flags) in dev.get("resources", {}).items():
        lines[idx] = (start, start + size - 1, flags)
    return "".join("0x%016x 0x%016x 0x%016x\n" % t for t in lines)


# ---- the box -------------------------------------------------------------------------------------

def bdf_bus(bdf):
    return int(bdf.split(":")[1], 16)


def write_pci(t, box):
    """Every device of box["pci"]: a tree of dicts with children."""
    groups = {}

    def walk(dev, parent_dir, parent_bus):
        bdf = dev["bdf"]
        d = parent_dir + "/" + bdf
        t.mkdir(d)
        files = {
            "vendor": "0x%04x" % dev["vendor"],
            "device": "0x%04x" % dev["device"],
            "subsystem_vendor": "0x%04x" % dev.get("subvendor", dev["vendor"]),
            "subsystem_device": "0x%04x" % dev.get("subdevice", 0),
            "class": "0x%06x" % dev["class"],
            "revision": "0x%02x" % dev.get("rev", 0xa1),
            "numa_node": "%d" % dev["numa"],
            "enable": "1",
            "irq": "%d" % dev.get("irq", 0),
            "resource": resource_lines(dev),
            "current_link_speed": SPEED[dev["link_cur"][0]],
            "current_link_width": "%d" % dev["link_cur"][1],
            "max_link_speed": SPEED[dev["link_max"][0]],
            "max_link_width": "%d" % dev["link_max"][1],
            "uevent": "DRIVER=%s\nPCI_CLASS=%X\nPCI_ID=%04X:%04X\nPCI_SLOT_NAME=%s\n"
                      % (dev["driver"], dev["class"], dev["vendor"], dev["device"], bdf),
        }
        if "secondary" in dev:
            files["secondary_bus_number"] = "%d" % dev["secondary"]
            files["subordinate_bus_number"] = "%d" % dev["subordinate"]
        for name, content in files.items():
            t.write(d + "/" + name, content + ("" if content.endswith("\n") else "\n"))
        t.write(d + "/config", config_space(dev, parent_bus))
        t.link(d + "/subsystem", "/sys/bus/pci")
        t.link("/sys/bus/pci/devices/" + bdf, d)
        if dev["driver"]:
            t.link(d + "/driver", "/sys/bus/pci/drivers/" + dev["driver"])
            t.link("/sys/bus/pci/drivers/%s/%s" % (dev["driver"], bdf), d)
        if box["iommu"]:
            g = len(groups)
            groups[bdf] = g
            t.link(d + "/iommu_group", "/sys/kernel/iommu_groups/%d" % g)
            t.write("/sys/kernel/iommu_groups/%d/type" % g, box["iommu_type"] + "\n")
            t.write("/sys/kernel/iommu_groups/%d/reserved_regions" % g,
                    "0x00000000fee00000 0x00000000feefffff msi\n")
            t.link("/sys/kernel/iommu_groups/%d/devices/%s" % (g, bdf), d)
        for extra in dev.get("extras", []):
            extra(t, d, dev)
        for child in dev.get("children", []):
            walk(child, d, dev["secondary"])

    for host in box["pci"]:
        hd = "/sys/devices/" + host["name"]
        t.write(hd + "/uevent", "")
        for dev in host["children"]:
            walk(dev, hd, int(host["name"].split(":")[1], 16))


def nic_extras(ifname, ibdev, fw, speed_mbps, mtu):
    def add(t, d, dev):
        nd = d + "/net/" + ifname
        for name, content in {"operstate": "up", "speed": "%d" % speed_mbps, "mtu": "%d" % mtu,
                              "address": "b8:ce:f6:%02x:%02x:%02x" % (0x41, 0, int(dev["bdf"][-1])),
                              "carrier": "1", "phys_port_name": "p%s" % dev["bdf"][-1]}.items():
            t.write(nd + "/" + name, content + "\n")
        t.link("/sys/class/net/" + ifname, nd)
        ib = d + "/infiniband/" + ibdev
        t.write(ib + "/fw_ver", fw + "\n")
        t.write(ib + "/node_type", "1: CA\n")
        t.write(ib + "/ports/1/state", "4: ACTIVE\n")
        t.write(ib + "/ports/1/link_layer", "Ethernet\n")
        t.write(ib + "/ports/1/gid_attrs/types/0", "IB/RoCE v1\n")
        t.write(ib + "/ports/1/gid_attrs/types/1", "RoCE v2\n")
        t.link("/sys/class/infiniband/" + ibdev, ib)
        t.mkdir(d + "/infiniband_verbs/uverbs" + dev["bdf"][-1])
    return add


def gpu_extras(connectors):
    """drm/card0 (nvidia-drm), with connectors and their status for a display GPU."""
    def add(t, d, dev):
        card = d + "/drm/card0"
        t.write(card + "/dev", "226:0\n")
        t.write(d + "/drm/renderD128/dev", "226:128\n")
        for name, status in connectors.items():
            t.write("%s/card0-%s/status" % (card, name), status + "\n")
            t.write("%s/card0-%s/enabled" % (card, name), ("enabled" if status == "connected" else "disabled") + "\n")
        t.link("/sys/class/drm/card0", card)
    return add


# ---- devices -------------------------------------------------------------------------------------

def nic(bdf, numa, gen=4, width=16, cur=None, fn=0):
    """A ConnectX-6 Dx port (15b3:101d) on mlx5_core, or a ConnectX-7 (101f) when gen 5."""
    return {
        "bdf": bdf, "kind": "endpoint", "vendor": 0x15b3, "device": 0x101d if gen < 5 else 0x1021,
        "subdevice": 0x0016, "class": 0x020000, "rev": 0x00, "numa": numa, "driver": "mlx5_core",
        "multifunction": fn == 0, "mps": 256, "mrrs": 4096, "irq": 0,
        "link_max": (gen, width), "link_cur": cur or (gen, width),
        "resources": {0: (0x2fffc000000 + fn * 0x2000000 + (bdf_bus(bdf) << 32), 32 * MIB, R_MEM64P)},
        "extras": [nic_extras("ens1f%dnp%d" % (fn, fn), "mlx5_%d" % fn, "22.39.1002", 100000 if gen < 5 else 200000,
                              9000)],
    }


GPUS = {
    # name: (device id, class, BAR1, max link)
    "A100-PCIE-40GB": (0x20f1, 0x030200, 64 * GIB, (4, 16)),
    "H100 PCIe": (0x2331, 0x030200, 128 * GIB, (5, 16)),
    "Tesla T4": (0x1eb8, 0x030200, 256 * MIB, (3, 16)),
    "RTX A4000": (0x24b0, 0x030000, 16 * GIB, (4, 16)),
}


def gpu(bdf, numa, model, cur=None, connectors=None):
    did, cls, bar1, link = GPUS[model]
    bus = bdf_bus(bdf)
    bar1_start = 0x20000000000 + (bus << 37)
    return {
        "bdf": bdf, "kind": "endpoint", "vendor": 0x10de, "device": did, "subdevice": 0x145f, "class": cls,
        "numa": numa, "driver": "nvidia", "mps": 256, "mrrs": 512, "irq": 0, "model": model,
        "link_max": link, "link_cur": cur or link,
        # BAR0 (32-bit, 16 MiB), BAR1 (64-bit, the aperture: line 1), BAR3 (64-bit, 32 MiB: line 3), I/O, ROM
        "resources": {0: (0xa8000000 + (bus << 24), 16 * MIB, R_MEM32),
                      1: (bar1_start, bar1, R_MEM64P),
                      3: (bar1_start + max(bar1, GIB), 32 * MIB, R_MEM64P),
                      5: (0x7000 + (bus << 8), 128, R_IO),
                      6: (0xa7f80000 + (bus << 24), 512 * 1024, R_ROM)},
        "extras": [gpu_extras(connectors or {})],
    }


def bridge(kind, bdf, numa, secondary, subordinate, children, gen=4, width=16, cur=None, acs=None, vendor=0x1000,
           device=0xc010, port_number=0):
    """A root port (Intel 8086:347a), or a PCIe switch port (Broadcom PEX88000, 1000:c010; Gen5: PEX89000 c030)."""
    if kind == "rootport":
        vendor, device = 0x8086, 0x347a if gen < 5 else 0x352a
    elif gen >= 5:
        device = 0xc030
    return {
        "bdf": bdf, "kind": kind, "vendor": vendor, "device": device, "class": 0x060400, "numa": numa,
        "driver": "pcieport", "mps": 256, "mrrs": 512, "irq": 0, "secondary": secondary,
        "subordinate": subordinate, "link_max": (gen, width), "link_cur": cur or (gen, width), "acs": acs,
        "port_number": port_number,
        "resources": {13: (0x1000, 0x1000, R_BRIDGE_IO), 14: (0xa8000000, 0x4000000, R_BRIDGE_MEM),
                      15: (0x20000000000, 0x4000000000, R_BRIDGE_MEMP)},
        "children": children,
    }


def host_bridge_dev(numa):
    """0000:00:00.0, the host bridge every x86 box has (IOMMU group 0)."""
    return {
        "bdf": "0000:00:00.0", "kind": "rciep", "vendor": 0x8086, "device": 0x09a2, "class": 0x060000,
        "numa": numa, "driver": "", "mps": 128, "mrrs": 512, "link_max": (1, 1), "link_cur": (1, 1),
    }


def switch_topology(nic_dev, gpu_dev, gen=4, acs=0x0000, gpu_link_cur=None):
    """pci0000:3e / root port 3e:01.0 / switch upstream 3f:00.0 / downstream 40:00.0 -> NIC (bus 41),
    40:01.0 (an empty slot, bus 42), 40:02.0 -> GPU (bus 43; an empty slot when gpu_dev is None); the
    host bridge under pci0000:00."""
    return [
        {"name": "pci0000:00", "children": [host_bridge_dev(0)]},
        {"name": "pci0000:3e", "children": [
            bridge("rootport", "0000:3e:01.0", 0, 0x3f, 0x43, gen=gen, acs=0x001d, children=[
                bridge("upstream", "0000:3f:00.0", 0, 0x40, 0x43, gen=gen, children=[
                    bridge("downstream", "0000:40:00.0", 0, 0x41, 0x41, gen=gen, acs=acs, port_number=0,
                           children=nic_dev),
                    bridge("downstream", "0000:40:01.0", 0, 0x42, 0x42, gen=gen, acs=acs, port_number=1,
                           cur=(1, 0), children=[]),
                    bridge("downstream", "0000:40:02.0", 0, 0x43, 0x43, gen=gen, acs=acs, port_number=2,
                           cur=gpu_link_cur, children=[gpu_dev] if gpu_dev else []),
                ]),
            ]),
        ]},
    ]


def two_socket_topology():
    """NIC 0000:01:00.0 under root port 00:01.0 on socket 0 (node 0); GPU 0000:81:00.0 under root port
    80:01.0 on socket 1 (node 1)."""
    return [
        {"name": "pci0000:00", "children": [
            host_bridge_dev(0),
            bridge("rootport", "0000:00:01.0", 0, 0x01, 0x01, acs=0x001d,
                   children=[nic("0000:01:00.0", 0), nic("0000:01:00.1", 0, fn=1)]),
        ]},
        {"name": "pci0000:80", "children": [
            bridge("rootport", "0000:80:01.0", 1, 0x81, 0x81, acs=0x001d,
                   children=[gpu("0000:81:00.0", 1, "A100-PCIE-40GB")]),
        ]},
    ]


# ---- procfs, modules, CPUs, memory, the unit ---------------------------------------------------

NV_PROPRIETARY = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.07  Sat Feb 17 22:55:48 UTC 2024\n"
                  "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14) \n")
NV_OPEN = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  "
           "(dvs-builder@U16-I3-D08-1-2)  Mon Feb 19 20:15:32 UTC 2024\n"
           "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14) \n")

LIMITS = """Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max file size             unlimited            unlimited            bytes     
Max data size             unlimited            unlimited            bytes     
Max stack size            8388608              unlimited            bytes     
Max core file size        0                    unlimited            bytes     
Max resident set          unlimited            unlimited            bytes     
Max processes             514623               514623               processes 
Max open files            1024                 524288               files     
Max locked memory         {memlock:<21}{memlock:<21}bytes     
Max address space         unlimited            unlimited            bytes     
Max file locks            unlimited            unlimited            locks     
Max pending signals       514623               514623               signals   
Max msgqueue size         819200               819200               bytes     
Max nice priority         0                    0                    
Max realtime priority     0                    0                    
Max realtime timeout      unlimited            unlimited            us        
"""

MOUNTS_BASE = """sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
udev /dev devtmpfs rw,nosuid,relatime,size=131841412k,nr_inodes=32960353,mode=755,inode64 0 0
devpts /dev/pts devpts rw,nosuid,noexec,relatime,gid=5,mode=620,ptmxmode=000 0 0
tmpfs /run tmpfs rw,nosuid,nodev,noexec,relatime,size=26375324k,mode=755,inode64 0 0
/dev/nvme0n1p2 / ext4 rw,relatime,errors=remount-ro 0 0
securityfs /sys/kernel/security securityfs rw,nosuid,nodev,noexec,relatime 0 0
tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0
tmpfs /run/lock tmpfs rw,nosuid,nodev,noexec,relatime,size=5120k,inode64 0 0
cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot 0 0
pstore /sys/fs/pstore pstore rw,nosuid,nodev,noexec,relatime 0 0
efivarfs /sys/firmware/efi/efivars efivarfs rw,nosuid,nodev,noexec,relatime 0 0
bpf /sys/fs/bpf bpf rw,nosuid,nodev,noexec,relatime,mode=700 0 0
systemd-1 /proc/sys/fs/binfmt_misc autofs rw,relatime,fd=30,pgrp=1,timeout=0,minproto=5,maxproto=5,direct 0 0
{hugetlbfs}mqueue /dev/mqueue mqueue rw,nosuid,nodev,noexec,relatime 0 0
debugfs /sys/kernel/debug debugfs rw,nosuid,nodev,noexec,relatime 0 0
tracefs /sys/kernel/tracing tracefs rw,nosuid,nodev,noexec,relatime 0 0
fusectl /sys/fs/fuse/connections fusectl rw,nosuid,nodev,noexec,relatime 0 0
configfs /sys/kernel/config configfs rw,nosuid,nodev,noexec,relatime 0 0
/dev/nvme0n1p1 /boot/efi vfat rw,relatime,fmask=0077,dmask=0077,codepage=437,iocharset=ascii,shortname=mixed,utf8,errors=remount-ro 0 0
"""
HUGETLBFS_LINE = "hugetlbfs /dev/hugepages hugetlbfs rw,nosuid,nodev,relatime,pagesize=2M 0 0\n"


def container_mounts(n):
    """What a container host adds to /proc/mounts: an overlay, shm and a netns per container."""
    out = []
    for i in range(n):
        h = "%064x" % (0x9e3779b97f4a7c15 * (i + 1) % (1 << 256))
        out.append("overlay /var/lib/docker/overlay2/%s/merged overlay rw,relatime,lowerdir=/var/lib/docker/"
                   "overlay2/l/%s:/var/lib/docker/overlay2/l/%s,upperdir=/var/lib/docker/overlay2/%s/diff,"
                   "workdir=/var/lib/docker/overlay2/%s/work 0 0\n" % (h, h[:26].upper(), h[26:52].upper(), h, h))
        out.append("shm /var/lib/docker/containers/%s/mounts/shm tmpfs rw,nosuid,nodev,noexec,relatime,"
                   "size=65536k,inode64 0 0\n" % h)
        out.append("nsfs /run/docker/netns/%s nsfs rw 0 0\n" % h[:12])
    return "".join(out)


def kallsyms(ofed, nvidia):
    lines = [
        "ffffffff81000000 T _text",
        "ffffffff81000000 T startup_64",
        "ffffffff810a3b20 T __x64_sys_mmap",
        "ffffffff81e01a40 D init_task",
        "ffffffffc0a00000 t ib_core_init\t[ib_core]",
        "ffffffffc0a01000 T ib_register_client\t[ib_core]",
        "ffffffffc0a01100 T ib_register_device\t[ib_core]",
    ]
    if ofed:
        lines += [
            "ffffffffc0a01230 T ib_register_peer_memory_client\t[ib_core]",
            "ffffffffc0a01300 T ib_unregister_peer_memory_client\t[ib_core]",
            "ffffffffc0a20018 r __ksymtab_ib_register_peer_memory_client\t[ib_core]",
            "ffffffffc0bb0000 T mlx_compat_init\t[mlx_compat]",
        ]
    lines += [
        "ffffffffc0c00000 t mlx5_init\t[mlx5_core]",
        "ffffffffc0d00000 t mlx5_ib_init\t[mlx5_ib]",
    ]
    if nvidia:
        lines += [
            "ffffffffc1000000 t nv_drm_init\t[nvidia_drm]",
            "ffffffffc2000000 T nvidia_p2p_get_pages\t[nvidia]",
            "ffffffffc2000100 T nvidia_p2p_put_pages\t[nvidia]",
        ]
    return "\n".join(lines) + "\n"


def render_unit():
    with open(os.path.join(SRC, "systemd", "gpuingest.service.in")) as f:
        unit = f.read()
    values = {
        "unit": "gpuingest.service", "what": "the ingest daemon as a systemd service.",
        "description": "gpuingest sensor ingest daemon (DPDK rx into GPU/host frame rings)",
        "config": "/etc/gpuingest/gpuingest.yaml", "runtime_dir": "gpuingest", "socket": "gpuingest.socket",
        "sbindir": "/usr/sbin", "docdir": "/usr/share/doc/gpuingest",
    }
    for k, v in values.items():
        unit = unit.replace("@%s@" % k, v)
    return unit


def write_box(root, box):
    t = Tree(root)
    os.makedirs(root, exist_ok=True)

    # ---- PCI
    write_pci(t, box)
    t.write("/sys/bus/pci/drivers_autoprobe", "1\n")

    # ---- modules and the RDMA stack
    nvidia = box["nvidia_version"] is not None
    mods = ["ib_core", "ib_uverbs", "mlx5_core", "mlx5_ib", "vfio", "pcie_aspm"]
    if nvidia:
        mods += ["nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"]
    if box["ofed"]:
        mods += ["mlx_compat"]
    if box["peermem_loaded"]:
        mods += ["nvidia_peermem"]
    for m in mods:
        t.write("/sys/module/%s/initstate" % m, "live\n")
        t.write("/sys/module/%s/refcnt" % m, "1\n")
    if box["ofed"]:
        t.write("/sys/module/mlx_compat/version", "24.01-0.3.3\n")
        t.write("/sys/module/ib_core/version", "24.01-0.3.3\n")
    t.write("/proc/kallsyms", kallsyms(box["ofed"], nvidia))
    t.write("/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0", "")
    t.link("/usr/lib/x86_64-linux-gnu/libibverbs.so.1", "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0")

    # ---- the NVIDIA driver (none: no /proc/driver/nvidia, no nvidia modules or device nodes)
    if nvidia:
        t.write("/proc/driver/nvidia/version", box["nvidia_version"])
    for g in box["gpus"] if nvidia else []:
        t.write("/proc/driver/nvidia/gpus/%s/information" % g[0],
                "Model: \t\t NVIDIA %s\nIRQ:   \t\t 0\nBus Location: \t %s\nDevice Minor: \t 0\n" % (g[1], g[0]))

    # ---- procfs
    t.write("/proc/sys/kernel/osrelease", box["kernel"] + "\n")
    t.write("/proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz-%s root=UUID=4d1c9b8e-6d8a-4c5e-9b0e-2f1a7c3e5d21 ro %s\n"
            % (box["kernel"], box["cmdline"]))
    mounts = MOUNTS_BASE.replace("{hugetlbfs}", HUGETLBFS_LINE if box["hugetlbfs"] == "early" else "")
    if box["containers"]:
        mounts += container_mounts(box["containers"])
    if box["hugetlbfs"] == "late":
        mounts += "nodev /mnt/huge hugetlbfs rw,relatime,pagesize=2M 0 0\n"
    t.write("/proc/mounts", mounts)
    procs = {1: "systemd", 612: "systemd-journal", 1024: "sshd", 4242: "bash"}
    if box["irqbalance"]:
        procs[733] = "irqbalance"
    for pid, comm in procs.items():
        t.write("/proc/%d/comm" % pid, comm + "\n")
        t.write("/proc/%d/limits" % pid, LIMITS.format(memlock=box["memlock"]))
    t.link("/proc/self", "/proc/4242")

    # ---- memory
    for kb, nr, free in ((2048, box["hugepages"], box["hugepages_free"]), (1048576, 0, 0)):
        d = "/sys/kernel/mm/hugepages/hugepages-%dkB" % kb
        for name, v in (("nr_hugepages", nr), ("free_hugepages", free), ("resv_hugepages", 0),
                        ("surplus_hugepages", 0), ("nr_overcommit_hugepages", 0)):
            t.write("%s/%s" % (d, name), "%d\n" % v)
    t.mkdir("/dev/hugepages")

    # ---- CPUs and NUMA nodes
    ncpu, nodes = box["cpus"], box["nodes"]
    per = ncpu // nodes
    cpu = "/sys/devices/system/cpu"
    t.write(cpu + "/online", "0-%d\n" % (ncpu - 1))
    t.write(cpu + "/possible", "0-%d\n" % (ncpu - 1))
    t.write(cpu + "/present", "0-%d\n" % (ncpu - 1))
    t.write(cpu + "/offline", "\n")
    t.write(cpu + "/isolated", box["isolated"] + "\n")
    t.write(cpu + "/nohz_full", (box["nohz_full"] or "(null)") + "\n")
    for c in range(ncpu):
        node = c // per
        t.write("%s/cpu%d/topology/physical_package_id" % (cpu, c), "%d\n" % node)
        t.write("%s/cpu%d/topology/core_id" % (cpu, c), "%d\n" % (c % per))
        if c:
            t.write("%s/cpu%d/online" % (cpu, c), "1\n")
        t.write("%s/cpufreq/policy%d/scaling_governor" % (cpu, c), box["governor"] + "\n")
        t.write("%s/cpufreq/policy%d/scaling_driver" % (cpu, c), "intel_pstate\n")
        t.link("%s/cpu%d/cpufreq" % (cpu, c), "%s/cpufreq/policy%d" % (cpu, c))
        t.link("%s/cpu%d/node%d" % (cpu, c, node), "/sys/devices/system/node/node%d" % node)
    node_dir = "/sys/devices/system/node"
    t.write(node_dir + "/online", "0-%d\n" % (nodes - 1) if nodes > 1 else "0\n")
    t.write(node_dir + "/possible", "0-%d\n" % (nodes - 1) if nodes > 1 else "0\n")
    for n in range(nodes):
        t.write("%s/node%d/cpulist" % (node_dir, n), "%d-%d\n" % (n * per, n * per + per - 1))

    # ---- IOMMU
    if box["iommu"]:
        t.write("/sys/devices/virtual/iommu/dmar0/intel-iommu/version", "1:0\n")
        t.link("/sys/class/iommu/dmar0", "/sys/devices/virtual/iommu/dmar0")
    else:
        t.mkdir("/sys/class/iommu")
        t.mkdir("/sys/kernel/iommu_groups")

    # ---- device nodes and the unit
    nodes = ["/dev/infiniband/uverbs0", "/dev/infiniband/uverbs1", "/dev/infiniband/rdma_cm", "/dev/vfio/vfio",
             "/dev/null"]
    if nvidia:
        nodes += ["/dev/nvidiactl", "/dev/nvidia0", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    for node in nodes:
        t.write(node, "")
    if box["unit"]:
        t.write("/usr/lib/systemd/system/gpuingest.service", render_unit())


# ---- the boxes ---------------------------------------------------------------------------------

def good(**changes):
    """A box that can run tests/doctor/gpu.yaml: ConnectX-6 Dx (0000:41:00.0) and A100 40GB
    (0000:43:00.0, BAR1 64 GiB) under one Gen4 switch below one root port, node 0; DOCA-OFED's ib_core
    (peer-memory API, mlx_compat) with nvidia_peermem loaded; iommu=pt; 2048 free 2 MiB hugepages on a
    mounted hugetlbfs; lcores 2-7 isolated, performance governor; the unit installed; no ACS redirect
    on the switch's downstream ports (turned off at boot).  gpu_model=None leaves the GPU's slot empty,
    nvidia_version=None leaves the NVIDIA driver out; far_nic adds a ConnectX 0000:81:00.0 under a root
    port of socket 1 (node 1)."""
    box = {
        "kernel": "6.1.0-18-amd64",
        "cmdline": "quiet intel_iommu=on iommu=pt default_hugepagesz=2M hugepages=2048 isolcpus=2-7 "
                   "nohz_full=2-7 rcu_nocbs=2-7",
        "ofed": True, "peermem_loaded": True, "nvidia_version": NV_OPEN,
        "hugepages": 2048, "hugepages_free": 2048, "hugetlbfs": "early", "containers": 0,
        "memlock": "unlimited", "irqbalance": False,
        "cpus": 32, "nodes": 2, "isolated": "2-7", "nohz_full": "2-7", "governor": "performance",
        "iommu": True, "iommu_type": "identity", "unit": True,
        "gpu_model": "A100-PCIE-40GB", "gpu_link_cur": None, "connectors": {}, "acs": 0x0000, "gen": 4,
        "topology": "switch", "far_nic": False,
    }
    box.update(changes)
    if box["topology"] == "switch":
        nics = [nic("0000:41:00.0", 0, gen=box["gen"]), nic("0000:41:00.1", 0, gen=box["gen"], fn=1)]
        g = None
        box["gpus"] = []
        if box["gpu_model"]:
            g = gpu("0000:43:00.0", 0, box["gpu_model"], cur=box["gpu_link_cur"], connectors=box["connectors"])
            box["gpus"] = [("0000:43:00.0", box["gpu_model"])]
        box["pci"] = switch_topology(nics, g, gen=box["gen"], acs=box["acs"], gpu_link_cur=box["gpu_link_cur"])
        if box["far_nic"]:  # last, so the IOMMU groups of the devices above keep their numbers
            box["pci"].append({"name": "pci0000:80", "children": [
                bridge("rootport", "0000:80:01.0", 1, 0x81, 0x81, acs=0x001d, children=[nic("0000:81:00.0", 1)])]})
    else:
        box["pci"] = two_socket_topology()
        box["gpus"] = [("0000:81:00.0", "A100-PCIE-40GB")]
    return box


BOXES = {
    "good": good(),
    # Debian 12's own kernel and rdma-core: ib_core without the peer-memory API, no mlx_compat,
    # nvidia_peermem not loaded; the proprietary NVIDIA module
    "debian_stock": good(ofed=False, peermem_loaded=False, nvidia_version=NV_PROPRIETARY),
    # NIC 0000:01:00.0 under pci0000:00 on node 0, GPU 0000:81:00.0 under pci0000:80 on node 1
    "two_sockets": good(topology="two_sockets"),
    # a Tesla T4: BAR1 256 MiB against gpu.yaml's 1 GiB device pool
    "small_bar1": good(gpu_model="Tesla T4"),
    # an H100 (Gen5 x16) behind a Gen5 switch, its link trained at 8.0 GT/s x8
    "gen3x8": good(gpu_model="H100 PCIe", gen=5, gpu_link_cur=(3, 8)),
    # no hugepages reserved (hugetlbfs mounted all the same, as systemd does)
    "no_hugepages": good(hugepages=0, hugepages_free=0,
                         cmdline="quiet intel_iommu=on iommu=pt isolcpus=2-7 nohz_full=2-7 rcu_nocbs=2-7"),
    # an RTX A4000 (VGA class, Resizable BAR: 16 GiB) with a monitor on DP-1
    "display_gpu": good(gpu_model="RTX A4000",
                        connectors={"DP-1": "connected", "DP-2": "disconnected", "DP-3": "disconnected",
                                    "DP-4": "disconnected"}),
    # the kernel left ACS P2P redirect on (SV RR CR UF) on the switch's downstream ports
    "acs_redirect": good(acs=0x001d),
    # a container host: 150 containers' mounts in /proc/mounts (over 8 KiB), hugetlbfs mounted by
    # hand on /mnt/huge after them
    "container_host": good(containers=150, hugetlbfs="late"),
    # a plain host: the same ConnectX on Debian 12's stock kernel (no peer-memory API, no nvidia_peermem),
    # no NVIDIA GPU in the switch's slot and no NVIDIA driver: host ingest works, GPUDirect cannot
    # the good box and a second ConnectX (0000:81:00.0) on the other socket, far from the GPU
    "far_nic": good(far_nic=True),
    "plain_host": good(ofed=False, peermem_loaded=False, nvidia_version=None, gpu_model=None),
}


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: boxes.py OUTDIR [BOX...]\nboxes: %s\n" % " ".join(BOXES))
        return 2
    names = argv[2:] or list(BOXES)
    for name in names:
        if name not in BOXES:
            sys.stderr.write("boxes.py: no box '%s' (boxes: %s)\n" % (name, " ".join(BOXES)))
            return 2
        write_box(os.path.join(argv[1], name), BOXES[name])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
