#!/usr/bin/env bash
# e2e_replay.sh — the whole pipeline (rx lcore → batch ring → host executor →
# frames) on a replayed capture of valid sensor traffic, vs
# dpdk-testpmd --forward-mode=rxonly on the same vdev and capture.
#
#   bench/e2e_replay.sh [BUILD_DIR]   (as root; SIZES="64 1024 8192" SECONDS_PER_RUN=5 REPEAT=3
#                                      MODES="threads inline auto" CHECK_SECONDS=30 RING_SLOTS=128)
#
# Traffic: gpuingest-sim writes one VITA 49 stream of 16 data packets (one
# frame, 4-bit packet count 0..15) per payload size into a classic pcap file.
# The count closes on itself after 16 packets, so net_pcap with infinite_rx=1
# (which reads the file into memory once and copies each packet into a fresh
# mbuf on every rx burst, forever) is an endless, in-order, loss-free stream.
# The timestamps repeat, so the daemon sequences by the packet count
# (vita49.ts_step_ps is not set).
#
# Both programs run on lcores 0 and 1, with the receive loop on lcore 1:
#   testpmd  -l 0,1 --nb-cores=1, rxonly, burst 32;
#   threads  executor {mode: threads, threads: 1, cpu: 0, idle: busy}: executor
#            thread on CPU 0, rx lcore (busy) on CPU 1;
#   inline   executor {mode: inline}: the rx lcore runs the executor's phases on
#            the batches it just published; the main lcore (CPU 0) idles.
#   inline_phased  as inline, with pipeline: phased (the batch's trip) where
#            inline's default (pipeline auto) is serial, a packet at a time; not
#            in the default MODES.
#   auto     executor {cpu: 0, idle: busy}, mode left to its default (auto):
#            inline, with trials of the worker on its own thread (CPU 0, busy)
#            while the rx lcore is saturated; the line of each run counts them.
# Same pool for all: 16384 mbufs of BUF bytes data room (2176, testpmd's
# default, for MTU 1500; 9216 for payloads that need MTU 9000).  The batch
# ring has RING_SLOTS x 64 packets (128 x 64 = 8192 by default), fewer than
# the pool holds: a slow executor then shows as ring_full drops, as with a
# NIC.  With a ring larger than the pool (rx_null.sh's 1024 x 64) the pool
# runs dry first, and net_pcap's infinite rx then just returns 0 packets and
# counts nothing (no rx_nombuf, no imissed): the replay slows down silently.
#
# Rates are over a steady-state window: the first second after start-up is
# discarded, then SECONDS_PER_RUN seconds are measured.
#   gpuingest: two scrapes of the unix stats socket, SECONDS_PER_RUN apart;
#              the time base is gpuingest_uptime_seconds of the same page.
#              placed   = gpuingest_stream_packets_total (packets that reached a frame)
#              ring_full= gpuingest_dropped_packets_total{reason="ring_full"}
#              frames   = gpuingest_stream_frames_total{state="complete"}
#   testpmd:   the mean of its per-second Rx-pps lines, skipping the first
#              two (the first is always 0, the second covers start-up).
# The runs alternate (testpmd, then each mode) REPEAT times; the table has
# medians.  Every gpuingest run's final JSON (SIGTERM, drained) is checked:
# lost, duplicates, late, reordered, resyncs, partial and timed-out frames
# must all be 0, delivered == accounted == placed + ring_full; each run
# prints one line.  Caveat: ring_full drops whole 32-packet bursts, a
# multiple of the 16-packet count cycle, so the stream cannot see them as
# loss (the 4-bit count's limit): frames stay complete, built from
# identical later copies.  "0 lost" proves the daemon's sequencing only
# where ring_full is 0.  Before the timed runs, one longer run per size and
# mode (CHECK_SECONDS, 0 = skip) prints the same counters.
# Each run also prints, from /proc/PID/task/*/schedstat over its window, the
# share of time the polling threads (rte-worker-1: the rx lcore or testpmd's
# forwarding core; gi-exec-host: the threads-mode executor) ran, and waited
# runnable while something else held their CPU: a busy poller that waits is
# sharing its core with another process, and its run's figure is not clean.
# The table's wait%_g/t column is the median over the runs of the worst
# polling thread's waiting share, gpuingest / testpmd.
set -euo pipefail
BUILD=${1:-build}
SIZES=${SIZES:-"64 1024 8192"}
DUR=${SECONDS_PER_RUN:-5}
REPEAT=${REPEAT:-3}
MODES=${MODES:-"threads inline auto"}
CHECK=${CHECK_SECONDS:-30}
RING_SLOTS=${RING_SLOTS:-128}
GPUINGESTD=$BUILD/daemon/gpuingestd
SIM=$BUILD/tools/gpuingest-sim
[ "$(id -u)" -eq 0 ] || { echo "e2e_replay.sh: run as root (DPDK EAL)"; exit 1; }
command -v dpdk-testpmd >/dev/null || { echo "e2e_replay.sh: dpdk-testpmd missing (apt-get install dpdk-dev)"; exit 1; }
command -v curl >/dev/null || { echo "e2e_replay.sh: curl missing"; exit 1; }
if [ ! -x "$GPUINGESTD" ] || [ ! -x "$SIM" ]; then
  echo "e2e_replay.sh: build first ($GPUINGESTD or $SIM missing)"; exit 1
fi

T=$(mktemp -d /tmp/gi-replay.XXXXXX)
TAG=gir$$
PID=""   # the one DPDK process running now (runs never overlap)
alive() {  # PID: running, not a zombie (kill -0 succeeds on an unreaped child)
  local st
  st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$st" ] && [ "$st" != Z ]
}
stop() {  # SIGNAL: stop $PID, escalate to SIGKILL after 15 s, reap it
  [ -n "$PID" ] || return 0
  kill -"$1" "$PID" 2>/dev/null || true
  for _ in $(seq 1 150); do alive "$PID" || break; sleep 0.1; done
  kill -KILL "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  PID=""
}
cleanup() {
  stop INT
  rm -f /dev/shm/$TAG-* 2>/dev/null || true
  rm -rf "$T" /var/run/dpdk/$TAG-g /var/run/dpdk/$TAG-t
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mtu_of() { [ $(($1 + 60)) -le 1500 ] && echo 1500 || echo 9000; }
buf_of() { [ "$(mtu_of "$1")" -eq 1500 ] && echo 2176 || echo 9216; }

make_capture() {  # SIZE → $T/v$SIZE.pcap: 16 VITA 49 data packets, counts 0..15
  "$SIM" --port "pcap:$T/v$1.pcap" --format vita49 --streams 1 --packets-per-frame 16 --frames 1 \
    --payload "$1" >"$T/sim$1.json" 2>"$T/sim$1.log" ||
    { echo "gpuingest-sim failed for $1 B:" >&2; cat "$T/sim$1.log" >&2; exit 1; }
}

sched() {  # FILE: "wall_ns comm run_ns wait_ns" per thread of $PID (/proc schedstat)
  local t
  { echo "wall $(($(date +%s%N)))"
    for t in /proc/"$PID"/task/*; do
      echo "$(tr ' ' _ <"$t/comm" 2>/dev/null) $(cut -d' ' -f1,2 "$t/schedstat" 2>/dev/null)"
    done; } >"$1" 2>/dev/null || true
}
# cpu_share FILE0 FILE1 COMM... → "COMM run% wait%" for each thread: the share of the window it ran
# on its CPU and the share it waited, runnable, for one (another process held the CPU)
cpu_share() {
  python3 - "$@" <<'PY'
import sys
def rd(p):
    v = {}
    for line in open(p):
        f = line.split()
        if f[0] == 'wall': v['wall'] = int(f[1])
        elif len(f) == 3: v[f[0]] = (int(f[1]), int(f[2]))
    return v
a, b = rd(sys.argv[1]), rd(sys.argv[2])
w = b['wall'] - a['wall']
out, worst = [], 'nan'
for c in sys.argv[3:]:
    if c in a and c in b:
        wait = 100 * (b[c][1] - a[c][1]) / w
        worst = max(wait, float(worst))
        out.append(f"{c} ran {100*(b[c][0]-a[c][0])/w:.0f} % waited {wait:.0f} %")
print(f"{worst:.0f} " + (', '.join(out) if out else 'no schedstat'))
PY
}

# FILE: one metrics page (empty if the scrape fails).  Rates use the page's own
# gpuingest_uptime_seconds, so a slow answer does not bias them; under load the
# stats threads (on CPU 0 with the main lcore) have taken over 2 s to answer.
scrape() {
  curl -sS --max-time 5 --retry 1 --unix-socket "$T/m.sock" http://localhost/metrics >"$1" || : >"$1"
}

# run_gpuingest SIZE MODE [WINDOW_S] → "placed_Mpps ring_full_Mpps frames_k/s check" on stdout,
# the final counters on stderr
run_gpuingest() {
  local size=$1 mode=$2 win=${3:-$DUR} exec
  local mtu buf
  mtu=$(mtu_of "$size"); buf=$(buf_of "$size")
  case $mode in
    threads) exec="{backend: host, mode: threads, threads: 1, cpu: 0, idle: busy}" ;;
    inline)  exec="{backend: host, mode: inline}" ;;
    inline_phased) exec="{backend: host, mode: inline, pipeline: phased}" ;;
    auto)    exec="{backend: host, cpu: 0, idle: busy}" ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
  cat >"$T/g.yaml" <<YAML
eal:
  main_lcore: 0
  args: [--no-huge, --no-pci, -m, "1024", --file-prefix, $TAG-g]
executor: $exec
lcores: [{id: 1, idle: busy}]
memory: [{name: pool0, kind: host, mbufs: 16384, buf_size: $buf, hugepages: true}]
ports:
  - name: pcap0
    device: "net_pcap0,rx_pcap=$T/v$size.pcap,infinite_rx=1"
    mtu: $mtu
    rx_queues:
      - {lcore: 1, mempool: pool0, ring_slots: $RING_SLOTS, batch: {max_packets: 64, timeout_us: 100}}
streams:
  - name: s0
    port: pcap0
    format: vita49
    match: {udp_dst_port: 5000, stream_id: 0}
    frame: {packets: 16, payload_bytes: $size}
    ring: {slots: 16, shm: /$TAG-s0}
    reorder_window: 2
stats: {unix: $T/m.sock, listen: ""}
YAML
  rm -f "$T/m.sock" "$T/g.json"
  # --duration is only a backstop: the run ends with SIGTERM after the window
  "$GPUINGESTD" --config "$T/g.yaml" --duration $((win + 30)) >"$T/g.json" 2>"$T/g.log" &
  PID=$!
  # the stats socket is the last thing the daemon starts: traffic is flowing
  for _ in $(seq 1 300); do [ -S "$T/m.sock" ] && break; alive $PID || break; sleep 0.1; done
  if [ ! -S "$T/m.sock" ]; then
    echo "gpuingestd did not start ($size B, $mode):" >&2; tail -5 "$T/g.log" >&2
    stop TERM; echo "nan nan nan BAD:no-start"; return
  fi
  sleep 1
  sched "$T/s0.txt"; scrape "$T/m0.txt"
  sleep "$win"
  sched "$T/s1.txt"; scrape "$T/m1.txt"
  cpu_share "$T/s0.txt" "$T/s1.txt" rte-worker-1 gi-exec-host >"$T/cpu" 2>/dev/null || echo "nan no schedstat" >"$T/cpu"
  stop TERM
  python3 - "$T/m0.txt" "$T/m1.txt" "$T/g.json" <<'PY'
import json, sys
def page(p):
    v = {}
    for line in open(p):
        if line and not line.startswith('#'):
            k, _, x = line.rpartition(' ')
            v[k] = float(x)
    return v
a, b = page(sys.argv[1]), page(sys.argv[2])
try:
    dt = b['gpuingest_uptime_seconds'] - a['gpuingest_uptime_seconds']
    d = lambda k: (b[k] - a[k]) / dt
    placed = d('gpuingest_stream_packets_total{stream="s0"}')
    rf = d('gpuingest_dropped_packets_total{reason="ring_full"}')
    fr = d('gpuingest_stream_frames_total{stream="s0",state="complete"}')
    rx = d('gpuingest_queue_rx_packets_total{port="pcap0",queue="0"}')
    eb = d('gpuingest_executor_busy_seconds_total')
    idle = d('gpuingest_lcore_polls_total{lcore="1",result="idle"}')
    busy = d('gpuingest_lcore_polls_total{lcore="1",result="busy"}')
    window = (f"window: rx {rx/1e6:.2f} Mpps, executor busy {eb:.2f}, "
              f"rx lcore idle polls {100*idle/max(idle+busy,1):.0f} %, "
              f"auto trials {b.get('gpuingest_executor_auto_trials_total', 0) - a.get('gpuingest_executor_auto_trials_total', 0):.0f} "
              f"(inline at the end: {b.get('gpuingest_executor_inline_workers', 0):.0f} worker); ")
except (KeyError, ZeroDivisionError):  # a scrape failed
    placed = rf = fr = float('nan')
    window = 'window: scrape failed; '
load = open('/proc/loadavg').read().split()[0]
try:
    j = json.load(open(sys.argv[3]))
    s = j['streams'][0]
    bad = {k: s[k] for k in ('lost', 'duplicates', 'late', 'reordered', 'resyncs',
                             'frames_partial', 'frames_timed_out') if s[k]}
    other = {k: v for k, v in j['dropped'].items() if v and k != 'ring_full'}
    if other: bad['dropped'] = other
    if not j['delivered'] == j['accounted'] == s['packets'] + j['dropped']['ring_full']:
        bad['delivered/accounted/placed+ring_full'] = (j['delivered'], j['accounted'],
                                                       s['packets'] + j['dropped']['ring_full'])
    check = 'ok' if not bad else 'BAD:' + json.dumps(bad, separators=(',', ':'))
    detail = (f"rx {j['delivered']} placed {s['packets']} ring_full {j['dropped']['ring_full']} "
              f"lost {s['lost']} dup {s['duplicates']} late {s['late']} reord {s['reordered']} "
              f"resync {s['resyncs']} frames complete {s['frames_complete']} partial {s['frames_partial']} "
              f"timed_out {s['frames_timed_out']}")
except Exception as e:  # no final JSON: the run did not stop cleanly
    check, detail = 'BAD:no-final-json', str(e)
print(f"{placed/1e6:.2f} {rf/1e6:.2f} {fr/1e3:.1f} {check}")
print(window + 'final: ' + detail + f'; load {load}', file=sys.stderr)
PY
  echo "  cpu in the window: $(cut -d' ' -f2- "$T/cpu")" >&2
  [ "$mode" != auto ] ||
    echo "  auto: $(grep -c 'executor auto:' "$T/g.log" || true) line(s) logged; the last: $(grep 'executor auto:' "$T/g.log" | tail -1 | sed 's/.*executor auto: //')" >&2
}

# run_testpmd SIZE → Mpps (mean of Rx-pps lines 3 .. DUR+2)
run_testpmd() {
  local size=$1 mtu buf
  mtu=$(mtu_of "$size"); buf=$(buf_of "$size")
  dpdk-testpmd -l 0,1 --no-huge --no-pci -m 1024 --file-prefix "$TAG-t" \
    --vdev "net_pcap0,rx_pcap=$T/v$size.pcap,infinite_rx=1" -- --forward-mode=rxonly --stats-period 1 \
    --no-lsc-interrupt --total-num-mbufs=16384 --mbuf-size="$buf" --max-pkt-len=$((mtu + 18)) \
    --nb-cores=1 --rxq=1 --txq=1 --burst=32 >"$T/t.log" 2>&1 &
  PID=$!
  local n s0=""
  : >"$T/s0.txt"; : >"$T/s1.txt"
  for _ in $(seq 1 $(((DUR + 40) * 10))); do
    n=$(grep -c 'Rx-pps:' "$T/t.log" || true)
    [ -z "$s0" ] && [ "$n" -ge 2 ] && { sched "$T/s0.txt"; s0=1; }
    [ "$n" -ge $((DUR + 2)) ] && { sched "$T/s1.txt"; break; }
    alive $PID || break
    sleep 0.1
  done
  cpu_share "$T/s0.txt" "$T/s1.txt" rte-worker-1 >"$T/cpu" 2>/dev/null || echo "nan no schedstat" >"$T/cpu"
  stop INT
  awk -v dur="$DUR" '/Rx-pps:/ {n++; if (n > 2 && n <= dur + 2) {s += $2; k++}}
    END {if (k) printf "%.2f", s / k / 1e6; else print "nan"}' "$T/t.log"
}

median() { python3 -c 'import statistics, sys; v = [float(x) for x in sys.argv[1:] if x != "nan"]; print(f"{statistics.median(v):.2f}" if v else "nan")' "$@"; }

echo "e2e_replay.sh: $BUILD, SIZES=\"$SIZES\" MODES=\"$MODES\" SECONDS_PER_RUN=$DUR REPEAT=$REPEAT CHECK_SECONDS=$CHECK RING_SLOTS=$RING_SLOTS; load average $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A TP TW PL RF FR GW CK
for size in $SIZES; do
  make_capture "$size"
done
if [ "$CHECK" -gt 0 ]; then
  for size in $SIZES; do
    for mode in $MODES; do
      run_gpuingest "$size" "$mode" "$CHECK" >"$T/res" 2>"$T/detail"; read -r pl rf fr ck <"$T/res"
      [ "$ck" = ok ] || CK[$size.$mode]+="long=$ck "
      echo "check $size B $mode, ${CHECK} s window: placed $pl Mpps, ring_full $rf Mpps, $ck | $(cat "$T/detail")"
    done
  done
fi
for size in $SIZES; do
  for r in $(seq 1 "$REPEAT"); do
    run_testpmd "$size" >"$T/res"; tp=$(cat "$T/res")
    TP[$size]+="$tp "; TW[$size]+="$(cut -d' ' -f1 "$T/cpu") "
    echo "run $size B #$r testpmd: $tp Mpps | cpu in the window: $(cut -d' ' -f2- "$T/cpu")"
    for mode in $MODES; do
      run_gpuingest "$size" "$mode" >"$T/res" 2>"$T/detail"; read -r pl rf fr ck <"$T/res"
      PL[$size.$mode]+="$pl "; RF[$size.$mode]+="$rf "; FR[$size.$mode]+="$fr "
      GW[$size.$mode]+="$(cut -d' ' -f1 "$T/cpu") "
      [ "$ck" = ok ] || CK[$size.$mode]+="run$r=$ck "
      echo "run $size B #$r $mode: placed $pl Mpps, ring_full $rf Mpps, $fr k frames/s, $ck | $(cat "$T/detail")"
    done
  done
done
echo
printf "%-6s %-13s %11s %14s %13s %9s %13s %10s  %s\n" size mode placed_Mpps ring_full_Mpps testpmd_Mpps ratio frames_k/s \
  wait%_g/t "check  runs: placed / testpmd"
for size in $SIZES; do
  # shellcheck disable=SC2086
  tp=$(median ${TP[$size]})
  for mode in $MODES; do
    # shellcheck disable=SC2086
    pl=$(median ${PL[$size.$mode]})
    # shellcheck disable=SC2086
    rf=$(median ${RF[$size.$mode]})
    # shellcheck disable=SC2086
    fr=$(median ${FR[$size.$mode]})
    ratio=$(python3 -c "import sys; a,b=sys.argv[1:]; print(f'{float(b)/float(a):.3f}' if a != 'nan' and b != 'nan' and float(a) > 0 else 'nan')" "$tp" "$pl")
    ck=${CK[$size.$mode]:-ok}
    # shellcheck disable=SC2086
    wt="$(median ${GW[$size.$mode]})/$(median ${TW[$size]})"
    printf "%-6s %-13s %11s %14s %13s %9s %13s %10s  %s  %s/ %s\n" "${size}B" "$mode" "$pl" "$rf" "$tp" "$ratio" \
      "$(python3 -c "import sys; print(f'{float(sys.argv[1]):.1f}')" "$fr")" "${wt//.00/}" "$ck" "${PL[$size.$mode]}" \
      "${TP[$size]}"
  done
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u '+%F %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
