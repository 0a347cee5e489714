#!/usr/bin/env bash
# bundle.sh BUILD_DIR OUT.tgz — pack a build so that tests/gpu/run_on_gpu.sh
# runs it on a GPU machine of any glibc-2.36-or-newer Linux that has the
# NVIDIA driver and Python but no DPDK, meson or package archive.
#
# The bundle (one directory, gi/, relocatable):
#   gi/src/          the source tree as checked out (tracked and untracked,
#                    not ignored: `git ls-files`), for the test scripts and
#                    the Python module
#   gi/src/<build>/  the build's programs, libgpuingest and the GPU probes,
#                    each with an RPATH ($ORIGIN-relative) to gi/lib
#   gi/lib/          a private copy of every shared library they need (glibc's
#                    own excepted: the target's is used), and the DPDK
#                    plugins the tests load, with their own dependencies
#   gi/pmds/         hard links to those plugins under the names EAL loads
#                    from its plugin folder (the same files: a plugin loaded
#                    twice as two files makes EAL panic)
#   gi/MANIFEST      what was packed, from which commit and build
# Needs patchelf.  A CI test (tests/gpu/bundle_check.sh) unpacks the bundle
# and proves it self-contained.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR OUT.tgz" >&2; exit 2; }
SRC=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "$1" && pwd)
OUT=$(realpath -m "$2")
command -v patchelf >/dev/null || { echo "bundle.sh: needs patchelf (apt-get install patchelf)" >&2; exit 1; }
[ -x "$B/daemon/gpuingestd" ] || { echo "bundle.sh: $B has no daemon/gpuingestd: build it first" >&2; exit 1; }
BNAME=$(basename "$B")

W=$(mktemp -d /tmp/gi-bundle.XXXXXX)
trap 'rm -rf "$W"' EXIT
G=$W/gi
mkdir -p "$G/src/$BNAME" "$G/lib" "$G/pmds"

# the source tree (what this checkout has, committed or not)
(cd "$SRC" && git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} find {} -maxdepth 0 -type f -print0 |
  tar --null -T - -cf -) | tar -xf - -C "$G/src"

# the build's programs: every executable outside meson's own folders, the
# client library, the probes, and the files scripts read
(cd "$B" && find . -path './meson-*' -prune -o -path '*.p' -prune -o \
  \( -type f \( -perm -u+x -o -name 'libgpuingest.so*' -o -name '*.ptx' -o -name 'gi_build_config.h' \) \
  -not -name '*.so.[0-9]*.[0-9]*.[0-9]*.symbols' -print0 \) |
  tar --null -T - -cf -) | tar -xf - -C "$G/src/$BNAME"
(cd "$B" && find . -maxdepth 2 \( -type f -o -type l \) -name 'libgpuingest.so*' -print0 | tar --null -T - -cf -) |
  tar -xf - -C "$G/src/$BNAME"

# DPDK's plugin folder as EAL knows it, and the plugins the tests need
PMD_DIR=$(strings "$(ldconfig -p | awk '/librte_eal.so.23 /{print $NF; exit}')" | sed -n 's/^DPDK_PLUGIN_PATH=//p' | head -1)
[ -d "$PMD_DIR" ] || { echo "bundle.sh: DPDK's plugin folder ($PMD_DIR) not found" >&2; exit 1; }
for p in bus_pci bus_vdev mempool_ring mempool_stack net_memif net_null net_pcap net_ring; do
  f=$(readlink -f "$PMD_DIR/librte_$p.so")
  soname=$(patchelf --print-soname "$f")
  # under its soname: a program that links the plugin finds this very file
  cp "$f" "$G/lib/$soname"
  # EAL takes *.so (and *.so.ABI) from its folder: a hard link to the one
  # copy in lib/ (a symlink's relative target breaks once the folder is
  # mounted elsewhere), which the loader knows for the same file
  ln "$G/lib/$soname" "$G/pmds/librte_$p.so"
done

is_elf() { [ "$(LC_ALL=C head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }
glibc='^(linux-vdso|ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl)\.so'
# every library the programs and plugins need, to a fixed point
for pass in 1 2 3; do
  while IFS= read -r -d '' e; do
    is_elf "$e" || continue
    { ldd "$e" 2>/dev/null || true; } | awk '/=> \//{print $1, $3}' | while read -r name path; do
      [[ $name =~ $glibc ]] && continue
      [ -e "$G/lib/$name" ] || cp -L "$path" "$G/lib/$name"
    done
  done < <(find "$G/src/$BNAME" "$G/lib" -type f -print0)
done

# RPATH (not RUNPATH: it also serves the plugins EAL dlopens) relative to each file
while IFS= read -r -d '' e; do
  is_elf "$e" || continue
  rel=$(realpath --relative-to="$(dirname "$e")" "$G/lib")
  patchelf --force-rpath --set-rpath "\$ORIGIN/$rel" "$e"
  strip --strip-debug "$e" 2>/dev/null || true
done < <(find "$G/src/$BNAME" "$G/lib" -type f -print0)

{
  echo "commit $(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$SRC" diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
  echo "build $BNAME"
  echo "made $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
  echo "nvcc $(/usr/local/cuda/bin/nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "eal_plugin_folder $PMD_DIR"
  (cd "$G" && find lib pmds -maxdepth 1 \( -type f -o -type l \) | sort)
} >"$G/MANIFEST"

tar -C "$W" -czf "$OUT" gi
echo "bundle.sh: $OUT ($(du -h "$OUT" | cut -f1)): $(find "$G/lib" -type f | wc -l) libraries, build $BNAME"
