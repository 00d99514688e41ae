#!/usr/bin/env bash
# bench/events.sh: `jetctl events timeline` side by side with natscli reading
# the same recorder, in one run:
#
#   - EVENTS (default 100,000) events in JETCTL_EVENTS (made by `jetctl
#     events record`, filled by bench/eventsfill with an incident's mix:
#     NAKs, dead letters, terminations, consumers created and deleted,
#     leader elections, audit records);
#   - `jetctl events timeline -o jsonl` (every event decoded, in the
#     documented shape) against `nats sub --stream JETCTL_EVENTS --all -T
#     --raw` (the payloads as they are), both to /dev/null, RUNS times
#     each, alternating; the median of each and their ratio;
#   - the peak RSS of a timeline over BIG_EVENTS (default 1,000,000) events
#     (GNU time's %M), with the recorder refilled to that size.
#
# Targets (issue 25): the timeline at least half as fast as natscli
# (time ratio jetctl/nats at most 2); its peak RSS over 1,000,000 events
# under 64 MiB. The script prints each target met or missed and exits 1
# when one is missed.
#
# Standalone. Usage:
#
#   bench/events.sh                          # about 2 minutes on a quiet machine
#   EVENTS=20000 BIG_EVENTS=100000 RUNS=3 bench/events.sh
#
# natscli, the server, NATS_* isolation: as in bench/run (bench/lib.sh).
# The load average is printed at the start and the end: a busy machine's
# figures say little.
set -euo pipefail

EVENTS=${EVENTS:-100000}
BIG_EVENTS=${BIG_EVENTS:-1000000}
RUNS=${RUNS:-5}

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_setup
note "building bench/eventsfill"
(cd "$ROOT" && go build -o "$BIN/eventsfill" ./bench/eventsfill) || die "go build failed"
FILL=$BIN/eventsfill
[[ -x /usr/bin/time ]] && /usr/bin/time -f '%M' true >/dev/null 2>&1 || die "GNU time (/usr/bin/time) is needed for the peak RSS"
start_server
OUT=$OUT/events
rm -rf "$OUT"
mkdir -p "$OUT"

loadavg() { cut -d ' ' -f 1-3 /proc/loadavg; }
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
calc() { awk "BEGIN { printf $1 }" </dev/null; }

LOAD_START=$(loadavg)
note "load average at the start: $LOAD_START"
print_header

"$JETCTL" events record --max-bytes 2GiB >/dev/null 2>"$OUT/record.err" </dev/null || die "events record: $(cat "$OUT/record.err")"
note "filling JETCTL_EVENTS with $EVENTS events"
"$FILL" -n "$EVENTS" 2>>"$OUT/fill.err" || die "eventsfill: $(cat "$OUT/fill.err")"

# timed FILE CMD...: one run of CMD, stdout to /dev/null; appends its
# seconds and peak RSS (KiB) to FILE.
timed() {
	local file=$1
	shift
	/usr/bin/time -f '%e %M' -o "$OUT/last.time" "$@" >/dev/null 2>"$OUT/last.err" </dev/null ||
		die "$* failed: $(tail -n 3 "$OUT/last.err")"
	cat "$OUT/last.time" >>"$file"
}

# Each reads every event once; check the counts first.
got=$("$JETCTL" events timeline -o jsonl 2>/dev/null </dev/null | wc -l)
((got >= EVENTS)) || die "the timeline printed $got events, want at least $EVENTS"
nats_got=$("$NATS" sub --stream JETCTL_EVENTS --all -T --raw 2>/dev/null </dev/null | wc -l)
note "timeline: $got events; nats sub: $nats_got messages (the readers' own consumers are recorded too: nats shows them, the timeline leaves them out)"

: >"$OUT/jetctl.txt"
: >"$OUT/nats.txt"
for ((i = 1; i <= RUNS; i++)); do
	timed "$OUT/jetctl.txt" "$JETCTL" events timeline -o jsonl
	timed "$OUT/nats.txt" "$NATS" sub --stream JETCTL_EVENTS --all -T --raw
done
cut -d ' ' -f 1 "$OUT/jetctl.txt" >"$OUT/jetctl.s"
cut -d ' ' -f 1 "$OUT/nats.txt" >"$OUT/nats.s"
J=$(median "$OUT/jetctl.s")
N=$(median "$OUT/nats.s")
RATIO=$(calc "\"%.2f\", $J / $N")
JRATE=$(calc "\"%.0f\", $got / $J")
NRATE=$(calc "\"%.0f\", $nats_got / $N")
JRSS=$(cut -d ' ' -f 2 "$OUT/jetctl.txt" | sort -n | tail -n 1)

note "refilling JETCTL_EVENTS to $BIG_EVENTS events"
"$FILL" -n "$((BIG_EVENTS - got))" 2>>"$OUT/fill.err" || die "eventsfill: $(cat "$OUT/fill.err")"
: >"$OUT/big.txt"
timed "$OUT/big.txt" "$JETCTL" events timeline -o jsonl
read -r BIG_S BIG_RSS <"$OUT/big.txt"
timed "$OUT/big-table.txt" "$JETCTL" events timeline --fold
read -r BIGT_S BIGT_RSS <"$OUT/big-table.txt"

LOAD_END=$(loadavg)
printf '\n## events timeline over %s events (median of %s runs, load %s at the start, %s at the end)\n\n' "$got" "$RUNS" "$LOAD_START" "$LOAD_END"
printf '| reader | seconds | events/s | peak RSS |\n|---|---|---|---|\n'
printf '| jetctl events timeline -o jsonl | %s | %s | %s MiB |\n' "$J" "$JRATE" "$(calc "\"%.1f\", $JRSS / 1024")"
printf '| nats sub --stream JETCTL_EVENTS --all -T --raw | %s | %s | |\n' "$N" "$NRATE"
printf '\ntime ratio jetctl/nats: %s (target at most 2: at least half as fast)\n' "$RATIO"
printf '\n## %s events\n\n' "$BIG_EVENTS"
printf '| command | seconds | peak RSS |\n|---|---|---|\n'
printf '| jetctl events timeline -o jsonl | %s | %s MiB |\n' "$BIG_S" "$(calc "\"%.1f\", $BIG_RSS / 1024")"
printf '| jetctl events timeline --fold (table) | %s | %s MiB |\n' "$BIGT_S" "$(calc "\"%.1f\", $BIGT_RSS / 1024")"

fail=0
if awk -v r="$RATIO" 'BEGIN { exit !(r <= 2) }'; then echo "target met: timeline at least half as fast as natscli ($RATIO)"; else echo "target MISSED: timeline/natscli time ratio $RATIO > 2"; fail=1; fi
for rss in "$BIG_RSS" "$BIGT_RSS"; do
	if ((rss < 64 * 1024)); then echo "target met: peak RSS $((rss / 1024)) MiB < 64 MiB over $BIG_EVENTS events"; else echo "target MISSED: peak RSS $((rss / 1024)) MiB over $BIG_EVENTS events"; fail=1; fi
done
exit $fail
