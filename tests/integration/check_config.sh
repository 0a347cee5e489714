#!/usr/bin/env bash
# check_config.sh — gpuingestd's command line and --check-config on good and
# broken configs: exit codes, one line per error naming file:line:col and
# key, and nothing started on an invalid config.
source "$(dirname "$0")/lib.sh"

expect_rc() {  # expect_rc WANT CMD...
  local want=$1; shift
  local rc=0
  "$@" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -eq "$want" ] || { cat "$T/out" "$T/err" >&2; fail "'$*' exited $rc, expected $want"; }
}

expect_rc 0 "$GPUINGESTD" --version
grep -q '^gpuingestd [0-9]' "$T/out" || fail "--version printed: $(cat "$T/out")"
expect_rc 0 "$GPUINGESTD" --help
grep -q -- '--check-config' "$T/out" || fail "--help does not mention --check-config"
expect_rc 2 "$GPUINGESTD" --no-such-option
expect_rc 2 "$GPUINGESTD" --duration abc

for good in "$GI_SRC/config/gpuingest.yaml" "$GI_SRC/config/demo.yaml" "$GI_SRC"/config/examples/*.yaml; do
  expect_rc 0 "$GPUINGESTD" --check-config --config "$good"
  grep -q ': OK (' "$T/out" || fail "$good: no OK line"
done

# every broken config in tests/configs: exit 1, and each "# expect:" line of
# the file appears as an error line "FILE:LINE:COL: key: problem"
n=0
for bad in "$GI_SRC"/tests/configs/*.yaml; do
  expect_rc 1 "$GPUINGESTD" --check-config --config "$bad"
  grep -q 'nothing started' "$T/err" || fail "$bad: no summary line"
  while IFS= read -r want; do
    grep -qF -- "$bad:$want" "$T/err" || { cat "$T/err" >&2; fail "$bad: missing error '$want'"; }
  done < <(sed -n 's/^# expect: //p' "$bad")
  n=$((n + 1))
done
[ "$n" -ge 10 ] || fail "only $n broken configs found"

# a missing file and an empty file
expect_rc 1 "$GPUINGESTD" --check-config --config "$T/nope.yaml"
grep -q "nope.yaml" "$T/err" || fail "missing file not named"
: >"$T/empty.yaml"
expect_rc 1 "$GPUINGESTD" --check-config --config "$T/empty.yaml"

# an invalid config must not start anything: no EAL, no sockets
printf 'ports: 5\n' >"$T/bad.yaml"
expect_rc 1 "$GPUINGESTD" --config "$T/bad.yaml"
grep -q "EAL" "$T/err" && fail "EAL started on an invalid config"
echo "PASS ($n broken configs)"
