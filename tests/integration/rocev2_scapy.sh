#!/usr/bin/env bash
# rocev2_scapy.sh — the RoCEv2 corpus the unit test checks (ICRC and parse of
# every accepted opcode) is regenerated here with python3-scapy, the outside
# reference, and must equal the checked-in copy byte for byte: a scapy that
# computes the ICRC differently, or a hand-edited corpus, fails CI.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
"$PY" -c 'import scapy.contrib.roce' 2>/dev/null || skip "python3-scapy missing (apt-get install python3-scapy)"
"$PY" "$GI_SRC/tests/rocev2_scapy.py" "$T/corpus.txt" >/dev/null
cmp "$T/corpus.txt" "$GI_SRC/tests/unit/rocev2_scapy.txt" ||
  fail "scapy's RoCEv2 packets differ from tests/unit/rocev2_scapy.txt (regenerate with: $PY tests/rocev2_scapy.py tests/unit/rocev2_scapy.txt)"
n=$(grep -vc '^#' "$T/corpus.txt" || true)
echo "PASS ($n scapy-built packets, identical to the unit test's corpus)"
