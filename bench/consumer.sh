#!/usr/bin/env bash
# bench/consumer.sh: `jetctl consumer ls` over 200 streams × 5 consumers,
# side by side with natscli's `nats consumer report` (per stream in a
# loop, the way a shell script has to, and on one stream), then the CPU
# cost of `jetctl consumer watch` polling those 1,000 consumers every
# second, for jetctl and for the server.
#
# Standalone (it does not need bench/run). Usage:
#
#   bench/consumer.sh                    # 200 streams x 5 consumers, 5 ls runs, 10 s of watch
#   STREAMS=50 CONSUMERS=2 RUNS=3 WATCH_POLLS=5 bench/consumer.sh
#
# Targets (issue 13): consumer ls under 1 s and at least 10x faster than
# the natscli loop; the watch CPU figure is reported, not held to a target.
#
# Every consumer has unprocessed messages (10 per stream, none consumed),
# so every row costs jetctl one message get for its lag: the worst case.
#
# natscli: as in bench/run (`nats` on PATH, else natscli v0.5.0 installed
# into bench/out/bin from the Go module proxy). The server is
# `jetctl server --port 0 -q` on 127.0.0.1, stopped on exit; NATS_*
# variables and natscli contexts are kept out.
set -euo pipefail

STREAMS=${STREAMS:-200}
CONSUMERS=${CONSUMERS:-5}
RUNS=${RUNS:-5}
WATCH_POLLS=${WATCH_POLLS:-10}
MSGS_PER_STREAM=${MSGS_PER_STREAM:-10}

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_setup
start_server
OUT=$OUT/consumer
mkdir -p "$OUT"

PLAN=$OUT/consumers.yaml
{
	echo "streams:"
	for ((s = 0; s < STREAMS; s++)); do
		printf '  - name: S%03d\n    subjects: ["s%03d.>"]\n    consumers:\n' "$s" "$s"
		for ((c = 0; c < CONSUMERS; c++)); do
			printf '      - name: c%d\n        filter_subject: s%03d.>\n' "$c" "$s"
		done
	done
} >"$PLAN"

note "creating $STREAMS streams x $CONSUMERS consumers with jetctl apply"
"$JETCTL" apply -f "$PLAN" --yes >/dev/null 2>&1
note "publishing $MSGS_PER_STREAM messages to each stream"
for ((s = 0; s < STREAMS; s++)); do
	"$NATS" pub "$(printf 's%03d.orders' "$s")" --count "$MSGS_PER_STREAM" '{"n":{{Count}}}' >/dev/null 2>&1 </dev/null
done
rows=$("$JETCTL" consumer ls --jq 'length')
[[ $rows == $((STREAMS * CONSUMERS)) ]] || die "consumer ls listed $rows consumers, want $((STREAMS * CONSUMERS))"
lagged=$("$JETCTL" consumer ls --jq '[.[] | select(.lag_seconds > 0)] | length')
note "$rows consumers listed, $lagged with a lag read"

now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }

note "timing jetctl consumer ls ($RUNS runs)"
total=0
best=
for ((i = 0; i < RUNS; i++)); do
	t0=$(now)
	"$JETCTL" consumer ls >/dev/null </dev/null
	t1=$(now)
	d=$(elapsed "$t0" "$t1")
	total=$(awk -v t="$total" -v d="$d" 'BEGIN { printf "%.4f", t + d }')
	if [[ -z $best ]] || awk -v d="$d" -v b="$best" 'BEGIN { exit !(d < b) }'; then best=$d; fi
done
ls_mean=$(awk -v t="$total" -v n="$RUNS" 'BEGIN { printf "%.3f", t / n }')

note "timing natscli: nats consumer report per stream, in a loop"
t0=$(now)
for ((s = 0; s < STREAMS; s++)); do
	"$NATS" consumer report "$(printf 'S%03d' "$s")" >/dev/null
done </dev/null
t1=$(now)
loop_total=$(elapsed "$t0" "$t1")

note "timing natscli: nats consumer report on one stream ($RUNS runs)"
total=0
for ((i = 0; i < RUNS; i++)); do
	t0=$(now)
	"$NATS" consumer report S000 >/dev/null </dev/null
	t1=$(now)
	total=$(awk -v t="$total" -v d="$(elapsed "$t0" "$t1")" 'BEGIN { printf "%.4f", t + d }')
done
one_mean=$(awk -v t="$total" -v n="$RUNS" 'BEGIN { printf "%.3f", t / n }')

# CPU seconds (user + system) a process has used, from /proc.
proc_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"
}

note "watch: $WATCH_POLLS polls 1 s apart over $rows consumers, JSON lines off a terminal"
server0=$(proc_cpu "$SERVER_PID")
/usr/bin/time -f '%e %U %S %M' -o "$OUT/watch.time" \
	"$JETCTL" consumer watch --interval 1s --count "$WATCH_POLLS" >"$OUT/watch.jsonl" </dev/null
server1=$(proc_cpu "$SERVER_PID")
read -r w_wall w_user w_sys w_rss <"$OUT/watch.time"
lines=$(wc -l <"$OUT/watch.jsonl")
[[ $lines == $((WATCH_POLLS * rows)) ]] || die "watch wrote $lines lines, want $((WATCH_POLLS * rows))"

note "watch: the same on a terminal (script(1) gives it a pty), redrawing the table"
server2=$(proc_cpu "$SERVER_PID")
/usr/bin/time -f '%e %U %S %M' -o "$OUT/watch_tty.time" \
	script -qec "$JETCTL consumer watch --interval 1s --count $WATCH_POLLS" /dev/null >"$OUT/watch_tty.out" </dev/null
server3=$(proc_cpu "$SERVER_PID")
read -r t_wall t_user t_sys t_rss <"$OUT/watch_tty.time"

pct() { awk -v c="$1" -v w="$2" 'BEGIN { printf "%.1f%%", 100 * c / w }'; }
w_cpu=$(awk -v u="$w_user" -v s="$w_sys" 'BEGIN { printf "%.2f", u + s }')
t_cpu=$(awk -v u="$t_user" -v s="$t_sys" 'BEGIN { printf "%.2f", u + s }')
ws_cpu=$(awk -v a="$server0" -v b="$server1" 'BEGIN { printf "%.2f", b - a }')
ts_cpu=$(awk -v a="$server2" -v b="$server3" 'BEGIN { printf "%.2f", b - a }')

ratio=$(awk -v n="$loop_total" -v j="$ls_mean" 'BEGIN { printf "%.1f", n / j }')
one_ratio=$(awk -v n="$one_mean" -v j="$ls_mean" 'BEGIN { printf "%.2f", j / n }')
printf '\n%-84s %8s\n' "consumer ls over $STREAMS streams x $CONSUMERS consumers ($rows consumers)" "seconds"
printf '%-84s %8s\n' "jetctl consumer ls, every stream (mean of $RUNS)" "$ls_mean"
printf '%-84s %8s\n' "jetctl consumer ls, every stream (best)" "$best"
printf '%-84s %8s\n' "nats consumer report per stream, $STREAMS in a loop" "$loop_total"
printf '%-84s %8s\n' "nats consumer report, one stream ($CONSUMERS consumers, mean of $RUNS)" "$one_mean"
printf '%-84s %8s\n' "speed-up (natscli loop / jetctl mean)" "${ratio}x"
printf '%-84s %8s\n' "jetctl over every stream / natscli over one stream" "${one_ratio}x"
printf '\n%-84s %8s\n' "consumer watch, $rows consumers, $WATCH_POLLS polls 1 s apart" "CPU s"
printf '%-84s %8s\n' "jetctl watch, JSON lines: CPU (of ${w_wall}s wall, $(pct "$w_cpu" "$w_wall")), peak RSS ${w_rss} KiB" "$w_cpu"
printf '%-84s %8s\n' "server answering it: CPU ($(pct "$ws_cpu" "$w_wall"))" "$ws_cpu"
printf '%-84s %8s\n' "jetctl watch, table on a pty: CPU (of ${t_wall}s wall, $(pct "$t_cpu" "$t_wall")), peak RSS ${t_rss} KiB" "$t_cpu"
printf '%-84s %8s\n' "server answering it: CPU ($(pct "$ts_cpu" "$t_wall"))" "$ts_cpu"
status=0
awk -v j="$ls_mean" 'BEGIN { exit !(j < 1) }' || { note "target missed: consumer ls took ${ls_mean}s (target < 1 s)"; status=1; }
awk -v r="$ratio" 'BEGIN { exit !(r >= 10) }' || { note "target missed: ${ratio}x (target >= 10x)"; status=1; }
exit $status
