#!/usr/bin/env bash
# bench/check.sh: `jetctl check` over 200 streams × 5 consumers (1,000), side
# by side in one run with
#
#   - the natscli loop an on-call script runs today: `nats server check
#     consumer --stream S --consumer C`, a process per consumer (natscli
#     checks one consumer per call), over NATSCLI_CALLS of them spread
#     over every stream (the stalled, poison and dead-letter ones among
#     them) and extrapolated to all, with thresholds a team might set
#     (--outstanding-ack-critical 100 --unprocessed-critical 1000
#     --redelivery-critical 3; how many it finds not OK is printed);
#   - the physical baseline: bench/checkloop, one nats.go process asking
#     every consumer's info in a loop (CONSUMER.INFO each, and the same
#     with one paged CONSUMER.LIST per stream), so that the figure is not
#     only "faster than spawning processes";
#   - scrapes of `jetctl check --listen 127.0.0.1:0` (/metrics, evaluated
#     on each scrape) over the same 1,000: the first (nothing learnt yet)
#     and the median of the next SCRAPES;
#   - the cost of leaving `--listen` running: a scrape every
#     SCRAPE_INTERVAL s for LISTEN_SECONDS, the CPU of jetctl and of the
#     server over that window from /proc/<pid>/stat (utime + stime), next
#     to the server's CPU over IDLE_SECONDS with nothing asking it anything.
#
# Standalone (it does not need bench/run). Usage:
#
#   bench/check.sh                                  # about 5 minutes on a quiet machine
#   LISTEN_SECONDS=600 NATSCLI_CALLS=1000 bench/check.sh
#   STREAMS=20 RUNS=3 NATSCLI_CALLS=20 SCRAPES=3 LISTEN_SECONDS=30 IDLE_SECONDS=10 bench/check.sh
#
# Targets (issue 24): check over 1,000 consumers under 1 s, in every format
# (median of RUNS, process start to exit; with GNU time, the median CPU
# seconds of jetctl too: what the check costs, which a busy machine does
# not inflate); at least 10x faster than the natscli loop; a scrape under
# 1 s; --listen scraped every 15 s costs under 2 % of a core, the server
# under 5 %. The script prints each target met or missed, and exits 1 when
# one is missed.
#
# The consumers (bench/checkloop create and work) are a realistic mix: most
# caught up, the c3 of every other stream with a backlog of half its
# messages, and on one stream in ten each a stalled worker (max_ack_pending
# reached), a poison message (NAKed on every delivery) and a dead letter
# (max_deliver reached, captured by `jetctl dlq setup`). So check exits 2
# (CRITICAL) and reads the lag of 120 consumers (one message get each)
# and the dead letters of 20 streams: work natscli's check does not do.
#
# natscli: as in bench/run (BENCH_NATS, else `nats` on PATH, else natscli
# v0.5.0 installed into bench/out/bin from the Go module proxy). The
# server is `jetctl server --port 0 -q` on 127.0.0.1, stopped on exit, as
# is the --listen exporter; NATS_* variables and natscli contexts are kept
# out. Keep the machine otherwise idle: the load average is printed at the
# start and the end, and a busy machine's figures say little.
set -euo pipefail

STREAMS=${STREAMS:-200}
CONSUMERS=${CONSUMERS:-5}
MSGS_PER_STREAM=${MSGS_PER_STREAM:-20}
RUNS=${RUNS:-5}
NATSCLI_CALLS=${NATSCLI_CALLS:-200}
SCRAPES=${SCRAPES:-5}
SCRAPE_INTERVAL=${SCRAPE_INTERVAL:-15}
LISTEN_SECONDS=${LISTEN_SECONDS:-120}
IDLE_SECONDS=${IDLE_SECONDS:-30}

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TOTAL=$((STREAMS * CONSUMERS))
((CONSUMERS >= 1 && STREAMS >= 1)) || die "STREAMS and CONSUMERS must be at least 1"
((NATSCLI_CALLS >= 1 && NATSCLI_CALLS <= TOTAL)) || die "NATSCLI_CALLS must be between 1 and $TOTAL"

EXPORTER_PID=
stop_exporter() {
	[[ -n $EXPORTER_PID ]] || return 0
	kill -INT "$EXPORTER_PID" 2>/dev/null || true
	wait "$EXPORTER_PID" 2>/dev/null || true
	EXPORTER_PID=
}

bench_setup
trap 'stop_exporter; stop_server' EXIT
note "building bench/checkloop"
(cd "$ROOT" && go build -o "$BIN/checkloop" ./bench/checkloop) || die "go build failed"
LOOP=$BIN/checkloop
start_server
OUT=$OUT/check
rm -rf "$OUT"
mkdir -p "$OUT"

now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }
calc() { awk "BEGIN { printf $1 }" </dev/null; }
loadavg() { cut -d ' ' -f 1-3 /proc/loadavg; }
# proc_cpu PID: CPU seconds (user + system) the process has used.
proc_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
# median FILE: the median of the numbers in FILE, one a line.
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

LOAD_START=$(loadavg)
note "load average at the start: $LOAD_START"

note "creating $STREAMS streams x $CONSUMERS consumers, $MSGS_PER_STREAM messages each"
"$LOOP" create -streams "$STREAMS" -consumers "$CONSUMERS" -msgs "$MSGS_PER_STREAM"
note "jetctl dlq setup for the dead-letter consumers"
last=c$((CONSUMERS - 1))
for ((s = 2; s < STREAMS; s += 10)); do
	"$JETCTL" dlq setup --stream "$(printf 'S%03d' "$s")" --consumer "$last" >/dev/null 2>>"$OUT/setup.err" </dev/null
done
note "the workers: caught up, backlog, stalled, poison, dead letters"
"$LOOP" work -streams "$STREAMS" -consumers "$CONSUMERS" >"$OUT/mix.txt"
note "mix: $(tr '\n' ' ' <"$OUT/mix.txt")"

# The mix as check sees it; check exits 2 (CRITICAL) on this mix.
rc=0
"$JETCTL" check -o json --jq '.consumers | length, ([.[].health] | group_by(.) | map("\(.[0]) \(length)") | join(", "))' \
	>"$OUT/health.txt" 2>"$OUT/health.err" </dev/null || rc=$?
((rc <= 2)) || die "jetctl check failed (exit $rc): $(cat "$OUT/health.err")"
checked=$(head -n 1 "$OUT/health.txt")
[[ $checked == "$TOTAL" ]] || die "jetctl check checked $checked consumers, want $TOTAL"
HEALTH=$(sed -n 2p "$OUT/health.txt")
note "check: $checked consumers: $HEALTH"

# GNU time, when there is one, also gives each run's CPU seconds (user +
# system): on a busy machine the wall-clock time is mostly waiting for a
# core, and the CPU time says what the check itself costs.
if [[ -x /usr/bin/time ]] && /usr/bin/time -f '%U' true >/dev/null 2>&1; then GNU_TIME=1; else GNU_TIME=; fi

# timed FILE CMD...: one timed run of CMD, whose exit status must be 0, 1
# or 2 (nagios' OK, WARNING, CRITICAL); appends its seconds to FILE, and
# its CPU seconds to FILE.cpu.
timed() {
	local file=$1 t0 t1 rc=0
	shift
	t0=$(now)
	if [[ -n $GNU_TIME ]]; then
		/usr/bin/time -f '%U %S' -o "$OUT/last.time" "$@" >"$OUT/last.out" 2>"$OUT/last.err" </dev/null || rc=$?
	else
		"$@" >"$OUT/last.out" 2>"$OUT/last.err" </dev/null || rc=$?
	fi
	t1=$(now)
	((rc <= 2)) || die "$* failed (exit $rc): $(tail -n 3 "$OUT/last.err")"
	elapsed "$t0" "$t1" >>"$file"
	echo >>"$file"
	if [[ -n $GNU_TIME ]]; then
		# The last line: GNU time says first when the exit status is not 0.
		tail -n 1 "$OUT/last.time" | awk '{ printf "%.2f\n", $1 + $2 }' >>"$file.cpu"
	fi
}

FORMATS=(table json nagios prometheus)
note "timing jetctl check over $TOTAL consumers, $RUNS runs per format, interleaved"
for f in "${FORMATS[@]}"; do : >"$OUT/check_$f.s" && : >"$OUT/check_$f.s.cpu"; done
for ((i = 0; i < RUNS; i++)); do
	for f in "${FORMATS[@]}"; do
		timed "$OUT/check_$f.s" "$JETCTL" check -o "$f"
		case $f in
		json) n=$(grep -c '^      "consumer": ' "$OUT/last.out" || true) ;; # the consumers' own key, not their findings
		table) n=$(grep -c '^[A-Z]* *S[0-9]* *c[0-9]' "$OUT/last.out" || true) ;;
		prometheus) n=$(grep -c '^jetctl_consumer_status{' "$OUT/last.out" || true) ;;
		nagios) n=$(sed -n '1s/.*([0-9,]* streams\{0,1\}, \([0-9,]*\) consumers\{0,1\}).*/\1/p' "$OUT/last.out" | tr -d ,) ;;
		esac
		[[ $n == "$TOTAL" ]] || die "jetctl check -o $f reported $n consumers, want $TOTAL"
	done
done
declare -A CHECK_S CHECK_CPU
for f in "${FORMATS[@]}"; do
	CHECK_S[$f]=$(median "$OUT/check_$f.s")
	CHECK_CPU[$f]='?'
	[[ -z $GNU_TIME ]] || CHECK_CPU[$f]=$(median "$OUT/check_$f.s.cpu")
done

note "baseline: bench/checkloop, CONSUMER.INFO of every consumer in one process ($RUNS runs)"
"$LOOP" loop -runs "$RUNS" >"$OUT/loop.out"
info_s=$(sed -n 's/^info: \([0-9]*\) consumers in \([0-9.]*\) s.*/\2/p' "$OUT/loop.out")
info_n=$(sed -n 's/^info: \([0-9]*\) consumers.*/\1/p' "$OUT/loop.out")
list_s=$(sed -n 's/^list: [0-9]* consumers in \([0-9.]*\) s.*/\1/p' "$OUT/loop.out")
[[ $info_n == "$TOTAL" ]] || die "checkloop read $info_n consumers, want $TOTAL"

NATSCLI_ARGS=(--outstanding-ack-critical 100 --unprocessed-critical 1000 --redelivery-critical 3)
note "natscli: nats server check consumer, a process per consumer, $NATSCLI_CALLS of $TOTAL"
# The sample: every consumer when NATSCLI_CALLS is all of them, else one
# consumer of every (TOTAL / NATSCLI_CALLS)th stream, the consumer
# rotating so that the stalled, poison and dead-letter ones come up too.
nats_rcs=()
problems=0
t0=$(now)
for ((i = 0; i < NATSCLI_CALLS; i++)); do
	if ((NATSCLI_CALLS == TOTAL)); then
		s=$((i / CONSUMERS)) c=$((i % CONSUMERS))
	else
		s=$((i * STREAMS / NATSCLI_CALLS)) c=$(((i + i / 10) % CONSUMERS))
	fi
	if ((c == CONSUMERS - 1 && s % 10 <= 2)); then problems=$((problems + 1)); fi
	rc=0
	"$NATS" server check consumer --stream "$(printf 'S%03d' "$s")" --consumer "c$c" "${NATSCLI_ARGS[@]}" \
		>>"$OUT/nats.out" 2>>"$OUT/nats.err" </dev/null || rc=$?
	((rc <= 2)) || die "nats server check consumer --stream S$s --consumer c$c failed (exit $rc): $(tail -n 3 "$OUT/nats.err")"
	nats_rcs+=("$rc")
done
t1=$(now)
nats_loop_s=$(elapsed "$t0" "$t1")
nats_per=$(calc "\"%.4f\", $nats_loop_s / $NATSCLI_CALLS")
nats_all_s=$(calc "\"%.1f\", $nats_per * $TOTAL")
nats_notok=$(printf '%s\n' "${nats_rcs[@]}" | grep -c '^[12]$' || true)

note "the server idle for ${IDLE_SECONDS}s (its own CPU, nothing asking it anything)"
srv0=$(proc_cpu "$SERVER_PID")
t0=$(now)
sleep "$IDLE_SECONDS"
t1=$(now)
srv1=$(proc_cpu "$SERVER_PID")
idle_wall=$(elapsed "$t0" "$t1")
srv_idle_pct=$(calc "\"%.2f\", 100 * ($srv1 - $srv0) / $idle_wall")

note "jetctl check --listen 127.0.0.1:0: first scrape, then $SCRAPES timed"
"$JETCTL" check --listen 127.0.0.1:0 >"$OUT/listen.out" 2>"$OUT/listen.err" </dev/null &
EXPORTER_PID=$!
addr=''
deadline=$((SECONDS + 30))
while [[ -z $addr ]]; do
	addr=$(sed -n 's|^jetctl: serving http://\([^/]*\)/metrics.*|\1|p' "$OUT/listen.err" | head -n 1)
	[[ -n $addr ]] && break
	kill -0 "$EXPORTER_PID" 2>/dev/null || die "jetctl check --listen exited: $(tail -n 3 "$OUT/listen.err")"
	((SECONDS < deadline)) || die "jetctl check --listen printed no address within 30s"
	sleep 0.05
done
URL=http://$addr/metrics
# scrape FILE: one GET of /metrics, its seconds appended to FILE; the
# body must hold every consumer.
scrape() {
	local t
	t=$(curl -sS --max-time 30 -o "$OUT/metrics.txt" -w '%{time_total}' "$URL") || die "scraping $URL failed"
	echo "$t" >>"$1"
	n=$(grep -c '^jetctl_consumer_status{' "$OUT/metrics.txt" || true)
	[[ $n == "$TOTAL" ]] || die "a scrape of $URL held $n consumers, want $TOTAL"
	grep -q '^jetctl_check_up 1$' "$OUT/metrics.txt" || die "a scrape of $URL: jetctl_check_up is not 1"
}
: >"$OUT/scrape_first.s"
: >"$OUT/scrape.s"
scrape "$OUT/scrape_first.s"
for ((i = 0; i < SCRAPES; i++)); do scrape "$OUT/scrape.s"; done
scrape_first=$(median "$OUT/scrape_first.s")
scrape_s=$(median "$OUT/scrape.s")

scrapes=$(((LISTEN_SECONDS + SCRAPE_INTERVAL - 1) / SCRAPE_INTERVAL))
note "--listen left running ${LISTEN_SECONDS}s, a scrape every ${SCRAPE_INTERVAL}s ($scrapes scrapes)"
exp0=$(proc_cpu "$EXPORTER_PID")
srv0=$(proc_cpu "$SERVER_PID")
t0=$(now)
: >"$OUT/scrape_interval.s"
for ((i = 0; i < scrapes; i++)); do
	scrape "$OUT/scrape_interval.s"
	# Sleep until the next tick (or the end of the window).
	next=$(calc "\"%.3f\", $t0 + ($i + 1) * $SCRAPE_INTERVAL")
	rest=$(calc "\"%.3f\", $next - $(now)")
	if [[ $(calc "\"%d\", ($rest > 0)") == 1 ]]; then sleep "$rest"; fi
done
t1=$(now)
exp1=$(proc_cpu "$EXPORTER_PID")
srv1=$(proc_cpu "$SERVER_PID")
listen_wall=$(elapsed "$t0" "$t1")
exp_cpu=$(calc "\"%.2f\", $exp1 - $exp0")
srv_cpu=$(calc "\"%.2f\", $srv1 - $srv0")
exp_pct=$(calc "\"%.2f\", 100 * $exp_cpu / $listen_wall")
srv_pct=$(calc "\"%.2f\", 100 * $srv_cpu / $listen_wall")
interval_scrape=$(median "$OUT/scrape_interval.s")
exp_rss=$(awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$EXPORTER_PID/status")
stop_exporter
LOAD_END=$(loadavg)

ratio_nats=$(calc "\"%.1f\", $nats_all_s / ${CHECK_S[nagios]}")
ratio_info=$(calc "\"%.2f\", ${CHECK_S[nagios]} / $info_s")
ratio_list=$(calc "\"%.2f\", ${CHECK_S[nagios]} / $list_s")

status=0
# verdict CONDITION sets V to OK when the awk CONDITION holds, else to
# MISSED, and marks the run failed.
verdict() {
	if [[ $(calc "\"%d\", ($1)") == 1 ]]; then
		V=OK
	else
		V=MISSED
		status=1
	fi
}

printf '\n# bench/check.sh, %s, %s CPUs, %s, jetctl %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(nproc)" "$(go env GOVERSION)" \
	"$(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo '?')"
printf '# natscli %s; load average %s at the start, %s at the end\n' "$NATS_VERSION" "$LOAD_START" "$LOAD_END"
printf '# %s streams x %s consumers = %s; health: %s\n' "$STREAMS" "$CONSUMERS" "$TOTAL" "$HEALTH"
printf '%-70s %10s  %s\n' "" "seconds" "target"
for f in "${FORMATS[@]}"; do
	verdict "${CHECK_S[$f]} < 1"
	printf '%-70s %10s  < 1 s: %s\n' "jetctl check -o $f (median of $RUNS, start to exit; CPU ${CHECK_CPU[$f]} s)" "${CHECK_S[$f]}" "$V"
done
printf '%-70s %10s\n' "nats server check consumer, $NATSCLI_CALLS calls (not OK: $nats_notok of $problems stalled/poison/dead)" "$nats_loop_s"
printf '%-70s %10s\n' "  per call" "$nats_per"
printf '%-70s %10s\n' "  extrapolated to $TOTAL consumers" "$nats_all_s"
verdict "$ratio_nats >= 10"
printf '%-70s %9sx  >= 10x: %s\n' "speed-up: natscli loop / jetctl check -o nagios" "$ratio_nats" "$V"
printf '%-70s %10s\n' "nats.go loop, CONSUMER.INFO each, one process (median of $RUNS)" "$info_s"
printf '%-70s %10s\n' "nats.go loop, CONSUMER.LIST per stream, one process (median of $RUNS)" "$list_s"
printf '%-70s %9sx\n' "jetctl check -o nagios / the CONSUMER.INFO loop" "$ratio_info"
printf '%-70s %9sx\n' "jetctl check -o nagios / the CONSUMER.LIST loop" "$ratio_list"
printf '%-70s %10s\n' "scrape of --listen /metrics, the first" "$scrape_first"
verdict "$scrape_s < 1"
printf '%-70s %10s  < 1 s: %s\n' "scrape of --listen /metrics (median of the next $SCRAPES)" "$scrape_s" "$V"
printf '%-70s %10s\n' "  scrapes every ${SCRAPE_INTERVAL}s (median of $scrapes)" "$interval_scrape"
printf '\n%-70s %10s  %s\n' "--listen, a scrape every ${SCRAPE_INTERVAL}s for ${listen_wall}s" "% of a core" "target"
verdict "$exp_pct < 2"
printf '%-70s %10s  < 2 %%: %s\n' "jetctl check --listen ($exp_cpu CPU s, peak RSS $exp_rss MiB)" "$exp_pct" "$V"
verdict "$srv_pct < 5"
printf '%-70s %10s  < 5 %%: %s\n' "the server meanwhile ($srv_cpu CPU s)" "$srv_pct" "$V"
printf '%-70s %10s\n' "the server idle, nothing asking (${idle_wall}s before)" "$srv_idle_pct"
exit $status
