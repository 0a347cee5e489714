#!/usr/bin/env bash
# install_client.sh — what `meson install` ships for consumers works from
# the install tree, not only from the build tree:
#  - libgpuingest.so.1 (soname), exporting gic_* and nothing else, the
#    header gpuingest/consumer.h and gpuingest.pc;
#  - client/examples/consumer.c compiles and links with nothing but
#    `pkg-config --cflags --libs gpuingest` against the staged tree, and
#    runs: a missing stream gives exit 1 and the library's one line;
#  - the Python module is installed where Debian's /usr/bin/python3 looks
#    under the prefix (dist-packages), imports from there, and its
#    generated _build.LIBRARY names the installed library.
source "$(dirname "$0")/lib.sh"
command -v meson >/dev/null || skip "meson missing"
command -v pkg-config >/dev/null || skip "pkg-config missing"

ROOT=$T/root
DESTDIR=$ROOT meson install -C "$GI_BUILD" --no-rebuild --quiet >"$T/install.log" 2>&1 ||
  { cat "$T/install.log"; fail "meson install into $ROOT failed"; }
LIBSO=$(find "$ROOT" -name 'libgpuingest.so.1' | head -n 1)
[ -n "$LIBSO" ] || fail "libgpuingest.so.1 not installed"
PC=$(find "$ROOT" -name gpuingest.pc | head -n 1)
[ -n "$PC" ] || fail "gpuingest.pc not installed"
HDR=$(find "$ROOT" -path '*/include/gpuingest/consumer.h' | head -n 1)
[ -n "$HDR" ] || fail "gpuingest/consumer.h not installed"

readelf -d "$LIBSO" | grep -q 'SONAME.*\[libgpuingest\.so\.1\]' || fail "soname is not libgpuingest.so.1"
BAD=$(nm -D --defined-only "$LIBSO" | awk '$2 ~ /[TDBR]/ && $3 !~ /^gic_/ {print $3}')
[ -z "$BAD" ] || fail "libgpuingest exports more than gic_*: $BAD"

CFLAGS_LIBS=$(PKG_CONFIG_SYSROOT_DIR=$ROOT PKG_CONFIG_PATH=$(dirname "$PC") pkg-config --cflags --libs gpuingest) ||
  fail "pkg-config gpuingest failed"
if [ -n "${GI_SANITIZE:-}" ]; then
  # a sanitizer build installs an instrumented library: a plain program
  # cannot link it without that runtime, so only compile against the header
  # shellcheck disable=SC2086
  cc -Wall -Werror -c "$GI_SRC/client/examples/consumer.c" $(PKG_CONFIG_SYSROOT_DIR=$ROOT \
    PKG_CONFIG_PATH=$(dirname "$PC") pkg-config --cflags gpuingest) -o "$T/consumer.o" ||
    fail "the C example does not compile against the installed header"
  echo "  (sanitizer build: the example compiled, not linked or run)"
else
  # shellcheck disable=SC2086
  cc -Wall -Werror "$GI_SRC/client/examples/consumer.c" $CFLAGS_LIBS -o "$T/consumer" ||
    fail "the C example does not build from the installed header and pkg-config file"
  rc=0
  LD_LIBRARY_PATH=$(dirname "$LIBSO") timeout 20 "$T/consumer" "gi-no-such-$$" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -eq 1 ] || { cat "$T/err"; fail "the example exited $rc for a missing stream, expected 1"; }
  grep -q "no such frame ring" "$T/err" || { cat "$T/err"; fail "the example did not pass on the library's message"; }
fi

PYDIR=$(find "$ROOT" -path '*/dist-packages/gpuingest' -type d | head -n 1)
[ -n "$PYDIR" ] || fail "the Python module was not installed into a dist-packages directory"
PURELIB=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
case "$PYDIR" in
  "$ROOT$PURELIB/gpuingest"|"$ROOT"/usr/lib/python3/dist-packages/gpuingest) ;;
  *) fail "the Python module went to ${PYDIR#"$ROOT"}, where /usr/bin/python3 does not look ($PURELIB)" ;;
esac
LIBRARY=$(PYTHONPATH=$(dirname "$PYDIR") /usr/bin/python3 -c 'import gpuingest._build as b; print(b.LIBRARY)') ||
  fail "the installed module does not import"
[ -e "$ROOT$LIBRARY" ] || fail "_build.LIBRARY is $LIBRARY, which meson install did not put there"
GPUINGEST_LIBRARY=$LIBSO PYTHONPATH=$(dirname "$PYDIR") /usr/bin/python3 -c 'import gpuingest' ||
  fail "import gpuingest fails from the install tree"
echo "PASS"
