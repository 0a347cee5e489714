#!/usr/bin/env bash
# bundle_check.sh — tests/gpu/bundle.sh makes a bundle that runs without this
# machine's libraries (what tests/gpu/run_on_gpu.sh relies on on a GPU
# machine that has no DPDK):
#   1. every program, library and plugin in it resolves every library it
#      needs inside the bundle (glibc's own excepted), none "not found";
#   2. the unpacked bundle runs the host-backend memif end-to-end test
#      (e2e_memif.sh: simulator, daemon, consumers, exact accounting) with
#      DPDK's plugin folder replaced by the bundle's plugins (a mount
#      namespace), the way run_on_gpu.sh runs it.
# Root (mounts, EAL); skipped in sanitizer builds (their runtimes) and in
# builds without CUDA.
source "$(dirname "$0")/../integration/lib.sh"
need_root
[ -z "${GI_SANITIZE:-}" ] || skip "a sanitizer build: the bundle is for plain builds"
[ -x "$GI_BUILD/tests/test_exec_cuda" ] || skip "a build without CUDA (-Dcuda=disabled): the bundle is for the GPU machine"
command -v patchelf >/dev/null || skip "patchelf is not installed (apt-get install patchelf)"
unshare -m --propagation private true 2>/dev/null || skip "no mount namespaces here"

echo "=== bundle"
bash "$GI_SRC/tests/gpu/bundle.sh" "$GI_BUILD" "$T/gi.tgz" || fail "bundle.sh failed"
mkdir -p "$T/u"
tar -xzf "$T/gi.tgz" -C "$T/u" || fail "the bundle does not unpack"
G=$T/u/gi
BNAME=$(sed -n 's/^build //p' "$G/MANIFEST")
PMD_DIR=$(sed -n 's/^eal_plugin_folder //p' "$G/MANIFEST")
for f in daemon/gpuingestd tools/gpuingest-sim tools/gpuingest-frames tools/gpuingest-stat tests/test_exec_cuda \
  bench/gpu_exec_bench client/libgpuingest.so.1; do
  [ -e "$G/src/$BNAME/$f" ] || fail "the bundle lacks $BNAME/$f"
done
[ "$(ls "$G"/pmds/*.so | wc -l)" -ge 6 ] || fail "the bundle has fewer than 6 DPDK plugins"

echo "=== 1. every library resolves inside the bundle"
glibc='^(linux-vdso|ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl)\.so'
n=0 bad=0
while IFS= read -r -d '' e; do
  [ "$(LC_ALL=C head -c 4 "$e" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
  n=$((n + 1))
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [[ $name =~ $glibc ]] && continue
    path=$(realpath -m "$path")
    case $path in
      "$G"/lib/*) ;;
      *) echo "  BAD ${e#"$G"/}: $name => $path"; bad=$((bad + 1)) ;;
    esac
  done < <(ldd "$e" 2>/dev/null)
done < <(find "$G/src/$BNAME" "$G/lib" -type f -print0)
echo "  $n ELF files, $bad libraries resolved outside the bundle"
[ "$n" -ge 20 ] || fail "only $n ELF files in the bundle"
[ "$bad" -eq 0 ] || fail "$bad libraries resolve outside the bundle"
for p in "$G"/pmds/*.so; do
  same=0
  for l in "$G"/lib/librte_*; do [ "$p" -ef "$l" ] && same=1; done
  [ "$same" = 1 ] || fail "plugin $p is not the same file as one in lib/ (EAL would load two copies)"
done

echo "=== 2. the host-backend e2e from the unpacked bundle, DPDK's plugin folder replaced by the bundle's"
unshare -m --propagation private env GI_BUILD="$G/src/$BNAME" GI_SRC="$G/src" G="$G" PMD_DIR="$PMD_DIR" bash -c '
  mount --bind "$G/pmds" "$PMD_DIR" || exit 1
  n=$(ls "$PMD_DIR" | wc -l)
  echo "  $PMD_DIR now holds the bundle'"'"'s $n plugins"
  exec bash "$GI_SRC/tests/integration/e2e_memif.sh"' >"$T/e2e.log" 2>&1 || {
  tail -40 "$T/e2e.log" >&2
  fail "e2e_memif.sh from the bundle failed"
}
grep -E '^ +ok |^PASS|plugins' "$T/e2e.log" | sed -n 1,5p # sed reads it all: head's early exit is SIGPIPE under pipefail
grep -q '^PASS' "$T/e2e.log" || fail "e2e_memif.sh from the bundle did not pass"
echo "PASS"
