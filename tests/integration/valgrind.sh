#!/usr/bin/env bash
# valgrind.sh — the clean memif case of e2e_memif.sh (simulator → memif →
# daemon → frame consumer, accounting exact, frames byte-exact) with the
# daemon under valgrind memcheck:
#   --leak-check=full --errors-for-leak-kinds=definite,possible
#   --error-exitcode=99 --suppressions=tests/valgrind.supp
# Zero errors and zero definite or possible leaks; the only suppression is
# the DTV of DPDK EAL threads that rte_eal_cleanup() never joins (see the
# file), and this test fails if any other allocation is even possibly lost.
# ~10 s: in CI.
source "$(dirname "$0")/lib.sh"
need_root
command -v valgrind >/dev/null || skip "valgrind missing (apt-get install valgrind)"
# GI_SANITIZE: set by the sanitize test setup (tests/meson.build); valgrind cannot run ASan binaries
[ -z "${GI_SANITIZE:-}" ] || skip "a -Db_sanitize=$GI_SANITIZE build: valgrind cannot run it (the plain build runs this test)"
SOCK=$T/memif.sock
DEV="net_memif0,role=client,socket=$SOCK,socket-abstract=no"

export GI_DAEMON_WRAP="valgrind --fair-sched=yes --leak-check=full --errors-for-leak-kinds=definite,possible --error-exitcode=99
  --suppressions=$GI_SRC/tests/valgrind.supp --num-callers=30 --log-file=$T/valgrind.log"
write_config "$T/v.yaml" "$DEV" s0:5000:8:256 s1:5001:8:256
# valgrind runs everything ~20x slower: fewer mbufs and EAL memory to set up
sed -i 's/mbufs: 8192/mbufs: 2048/; s/-m, "256"/-m, "128"/' "$T/v.yaml"
# stop_daemon requires exit status 0: valgrind's 99 (an error or leak) fails it
run_memif_case "valgrind clean" "$T/v.yaml" --clean --streams 2 --dst-port 5000 --packets-per-frame 8 \
  --payload 256 --frames 50 --rate 2000 --start-delay-ms 3000 --wait-link 60 -- s0 s1 ||
  { cat "$T/valgrind.log" >&2; fail "see above"; }
grep -E "ERROR SUMMARY|definitely lost|indirectly lost|possibly lost|suppressed:" "$T/valgrind.log" | sed 's/^==[0-9]*==/ /'
grep -q "ERROR SUMMARY: 0 errors" "$T/valgrind.log" || { cat "$T/valgrind.log" >&2; fail "valgrind reported errors"; }
# the leak summary is omitted when nothing at all leaked; when present it must be clean
if grep -q "LEAK SUMMARY" "$T/valgrind.log"; then
  grep -qE "definitely lost: 0 bytes in 0 blocks" "$T/valgrind.log" || fail "definite leaks"
  grep -qE "indirectly lost: 0 bytes in 0 blocks" "$T/valgrind.log" || fail "indirect leaks"
  grep -qE "possibly lost: 0 bytes in 0 blocks" "$T/valgrind.log" || fail "possible leaks outside the suppression"
fi
echo PASS
