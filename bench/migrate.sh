#!/usr/bin/env bash
# bench/migrate.sh: how fast `jetctl migrate stream` copies a 1,000,000-message
# stream on one server, next to the copy rate of a plain mirror made with
# natscli (`nats stream add MIRROR --mirror SRC --defaults`, polled until it
# holds every message), and how long the write outage of a cutover is, as
# jetctl reports it and as a client publishing all along sees it; then the
# same for a same-name replacement (migrate.Replace, two moves through a
# temporary stream, what `jetctl apply --migrate` runs).
#
# Standalone (it does not need bench/run). Usage:
#
#   bench/migrate.sh                       # 1,000,000 x 128 B, 2 copy rounds per side
#   MSGS=200000 ROUNDS=1 REPLACE= bench/migrate.sh
#
# One server, one run:
#
#  1. fill: stream SRC (subjects src.>, file, limits) with MSGS messages of
#     SIZE bytes on SUBJECTS subjects (`nats bench js pub async
#     --multisubject`), and a durable pull consumer `proc` with the first
#     ACKED messages acknowledged;
#  2. ROUNDS rounds, the order alternating, of
#       mirror: `nats stream add MIRROR --mirror SRC --defaults`, its message
#               count polled (`nats stream info --json`, every POLL s) until it
#               holds MSGS: copy time and rate; then MIRROR is deleted;
#       jetctl: `jetctl migrate stream SRC --as SRC2 --yes` (copy, then verify,
#               no cutover), SRC2's count polled the same way: "copy only" is
#               the time until SRC2 holds MSGS (measured exactly like the
#               mirror's), "copy + verify" the whole command; then SRC2 is
#               deleted;
#  3. cutover: bench/publoop publishes to src.live one message at a time
#     (retrying each until acknowledged, a pause of PUB_INTERVAL after each)
#     while `jetctl migrate stream SRC --as SRC2 --cutover --yes -o json`
#     copies, verifies and cuts over; reported: write_outage_ns from jetctl,
#     the gap publoop saw between its last acknowledgement from SRC and its
#     first from SRC2, its longest gap overall, and whether every
#     acknowledged message is in SRC2;
#  4. replace (unless REPLACE is empty): bench/replace calls migrate.Replace
#     on SRC2 (now about MSGS messages) with retention workqueue
#     (REPLACE=workqueue; or limits, memory, file), publoop writing all
#     along: total time, as a rate next to the mirror's, and the two
#     outages summed.
#
# Targets (issue 14): the migration's copy rate at least 0.8x the mirror's,
# the write outage under 1 s. Both the "copy only" and the "copy + verify"
# rate ratios are printed; jetctl's peak RSS (GNU time, else /proc polling)
# and the CPU seconds of jetctl and of the server are printed alongside.
#
# natscli: as in bench/run (`nats` on PATH, else natscli v0.5.0 installed
# into bench/out/bin). The server is `jetctl server --port 0 -q` on
# 127.0.0.1, stopped on exit, as is publoop; NATS_* variables and natscli
# contexts are kept out.
set -euo pipefail

MSGS=${MSGS:-1000000}
SIZE=${SIZE:-128}
SUBJECTS=${SUBJECTS:-1000}
ACKED=${ACKED:-1000}
ROUNDS=${ROUNDS:-2}
POLL=${POLL:-0.1}
PUB_INTERVAL=${PUB_INTERVAL:-1ms}
REPLACE=${REPLACE-workqueue}

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PUBLOOP_PID=
stop_publoop() {
	[[ -n $PUBLOOP_PID ]] || return 0
	kill -TERM "$PUBLOOP_PID" 2>/dev/null || true
	wait "$PUBLOOP_PID" 2>/dev/null || true
	PUBLOOP_PID=
}

bench_setup
trap 'stop_publoop; stop_server' EXIT
note "building bench/publoop and bench/replace"
(cd "$ROOT" && go build -o "$BIN/publoop" ./bench/publoop && go build -o "$BIN/replace" ./bench/replace) || die "go build failed"
start_server
OUT=$OUT/migrate
rm -rf "$OUT"
mkdir -p "$OUT"

now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
calc() { awk "BEGIN { printf $1 }" </dev/null; }
q() { "$@" >/dev/null 2>&1 </dev/null; }

# msgs STREAM: the stream's message count ("" if it does not exist yet).
msgs() { "$NATS" stream info "$1" --json 2>/dev/null </dev/null | sed -n 's/^    "messages": \([0-9]*\),$/\1/p'; }

# json_field FILE NAME: a number or string at the top level of indented JSON.
json_field() { sed -n "s/^  \"$2\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$1" | head -n 1; }

# proc_cpu PID: CPU seconds (user + system) the process has used.
proc_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }

# run_measured OUT ERR CMD...: runs CMD in the background with stdout to
# OUT and stderr to ERR, and sets CMD_PID. measured_wait then waits for it
# and sets CMD_RC, CMD_RSS (peak KiB) and CMD_CPU (user + system seconds):
# from GNU time when there is one, else from /proc polled every 0.1 s.
if [[ -x /usr/bin/time ]] && /usr/bin/time -f '%M' true >/dev/null 2>&1; then GNU_TIME=1; else GNU_TIME=; fi
run_measured() {
	local out=$1 err=$2
	shift 2
	if [[ -n $GNU_TIME ]]; then
		/usr/bin/time -f '%U %S %M' -o "$out.time" "$@" >"$out" 2>"$err" </dev/null &
	else
		"$@" >"$out" 2>"$err" </dev/null &
	fi
	CMD_PID=$!
	CMD_OUT=$out
}
measured_wait() {
	local hwm=0 v
	if [[ -z $GNU_TIME ]]; then
		while kill -0 "$CMD_PID" 2>/dev/null; do
			v=$(awk '/^VmHWM:/ { print $2 }' "/proc/$CMD_PID/status" 2>/dev/null || true)
			[[ -z $v ]] || hwm=$v
			CMD_CPU=$(proc_cpu "$CMD_PID" 2>/dev/null || echo "$CMD_CPU")
			sleep 0.1
		done
	fi
	if wait "$CMD_PID"; then CMD_RC=0; else CMD_RC=$?; fi
	if [[ -n $GNU_TIME ]]; then
		local u s m
		read -r u s m <"$CMD_OUT.time"
		CMD_CPU=$(calc "\"%.2f\", $u + $s")
		CMD_RSS=$m
	else
		CMD_RSS="$hwm (polled)"
	fi
}

# wait_count STREAM N PID: polls STREAM every POLL s until it holds N
# messages (or PID, if given, has exited); prints the time it did.
wait_count() {
	local stream=$1 n=$2 pid=${3:-} c
	while :; do
		c=$(msgs "$stream")
		if [[ -n $c ]] && ((c >= n)); then break; fi
		if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
			note "$stream: the command ended with $c of $n messages copied"
			break
		fi
		sleep "$POLL"
	done
	now
}

# ---------------------------------------------------------------------------
note "filling SRC: $MSGS messages of $SIZE B on $SUBJECTS subjects"
q "$NATS" stream add SRC --subjects 'src.>' --storage file --retention limits --defaults
t0=$(now)
"$NATS" bench js pub async src.orders --stream SRC --msgs "$MSGS" --size "$SIZE" \
	--multisubject --multisubjectmax "$SUBJECTS" --no-progress >"$OUT/fill.out" 2>&1 </dev/null
t1=$(now)
n=$(msgs SRC)
[[ $n == "$MSGS" ]] || die "SRC holds $n messages after the fill, want $MSGS"
fill_s=$(elapsed "$t0" "$t1")
q "$NATS" consumer add SRC proc --pull --ack explicit --defaults
q "$NATS" consumer next SRC proc --count "$ACKED" --ack
note "filled in ${fill_s}s; consumer proc acknowledged $ACKED"
sleep 2

# ---------------------------------------------------------------------------
mirror_round() {
	local r=$1 t0 t1 s0 s1
	s0=$(proc_cpu "$SERVER_PID")
	t0=$(now)
	"$NATS" stream add MIRROR --mirror SRC --defaults >"$OUT/mirror.$r.out" 2>&1 </dev/null || die "nats stream add --mirror failed (see $OUT/mirror.$r.out)"
	t1=$(wait_count MIRROR "$MSGS")
	s1=$(proc_cpu "$SERVER_PID")
	MIRROR_S[r]=$(elapsed "$t0" "$t1")
	MIRROR_SRV[r]=$(calc "\"%.1f\", $s1 - $s0")
	note "round $r: mirror copied $MSGS in ${MIRROR_S[r]}s (server CPU ${MIRROR_SRV[r]}s)"
	q "$NATS" stream rm -f MIRROR
}

jetctl_round() {
	local r=$1 t0 t1 t2 s0 s1 out=$OUT/copy.$r
	s0=$(proc_cpu "$SERVER_PID")
	t0=$(now)
	run_measured "$out.json" "$out.err" "$JETCTL" migrate stream SRC --as SRC2 --yes -o json --no-progress
	t1=$(wait_count SRC2 "$MSGS" "$CMD_PID")
	measured_wait
	t2=$(now)
	s1=$(proc_cpu "$SERVER_PID")
	((CMD_RC == 0)) || die "jetctl migrate (copy) failed with exit $CMD_RC: $(tail -n 5 "$out.err")"
	[[ $(json_field "$out.json" verified) == true ]] || die "jetctl migrate did not verify the copy (see $out.json)"
	COPY_S[r]=$(elapsed "$t0" "$t1")
	TOTAL_S[r]=$(elapsed "$t0" "$t2")
	JET_CPU[r]=$CMD_CPU
	JET_RSS[r]=$CMD_RSS
	JET_SRV[r]=$(calc "\"%.1f\", $s1 - $s0")
	note "round $r: jetctl copied in ${COPY_S[r]}s, copied and verified in ${TOTAL_S[r]}s (jetctl CPU ${CMD_CPU}s, peak RSS ${CMD_RSS} KiB; server CPU ${JET_SRV[r]}s)"
	q "$NATS" stream rm -f SRC2
}

declare -a MIRROR_S MIRROR_SRV COPY_S TOTAL_S JET_CPU JET_RSS JET_SRV
for ((r = 1; r <= ROUNDS; r++)); do
	if ((r % 2)); then
		mirror_round "$r"
		jetctl_round "$r"
	else
		jetctl_round "$r"
		mirror_round "$r"
	fi
done

# ---------------------------------------------------------------------------
# publoop_start STREAM-AT-THE-END NAME; publoop_stop sets PL (its report file).
publoop_start() {
	PL=$OUT/publoop.$2.json
	"$BIN/publoop" -subject src.live -verify "$1" -interval "$PUB_INTERVAL" >"$PL" 2>"$OUT/publoop.$2.err" </dev/null &
	PUBLOOP_PID=$!
	sleep 1
}
publoop_stop() {
	sleep 1
	local pid=$PUBLOOP_PID rc=0
	kill -TERM "$pid"
	wait "$pid" || rc=$?
	PUBLOOP_PID=
	((rc == 0)) || note "publoop exited $rc: $(cat "$OUT/publoop.$1.err") $(json_field "$PL" first_problem)"
}

# measured_move NAME CMD...: runs CMD (a move printing its summary as JSON)
# with publoop writing to src.live all along, and sets M_S (seconds),
# M_MSGS, M_OUTAGE_MS (jetctl's), M_CPU, M_RSS, M_SRV (server CPU) and, from
# publoop, M_PUB, M_FOUND, M_SWITCH_MS, M_SWITCHES and M_MAXGAP_MS.
measured_move() {
	local name=$1 s0 s1 t0 t1
	shift
	publoop_start SRC2 "$name"
	s0=$(proc_cpu "$SERVER_PID")
	t0=$(now)
	run_measured "$OUT/$name.json" "$OUT/$name.err" "$@"
	measured_wait
	t1=$(now)
	s1=$(proc_cpu "$SERVER_PID")
	publoop_stop "$name"
	((CMD_RC == 0)) || die "$name failed with exit $CMD_RC: $(tail -n 5 "$OUT/$name.err")"
	M_S=$(elapsed "$t0" "$t1")
	M_MSGS=$(json_field "$OUT/$name.json" messages)
	M_OUTAGE_MS=$(calc "\"%.1f\", $(json_field "$OUT/$name.json" write_outage_ns) / 1e6")
	M_CPU=$CMD_CPU M_RSS=$CMD_RSS M_SRV=$(calc "\"%.1f\", $s1 - $s0")
	M_PUB=$(json_field "$PL" published)
	M_FOUND=$(json_field "$PL" found)
	M_SWITCH_MS=$(calc "\"%.1f\", $(json_field "$PL" switch_gap_ns) / 1e6")
	M_SWITCHES=$(grep -c '"from":' "$PL" || true)
	M_MAXGAP_MS=$(json_field "$PL" max_gap_ms)
}

note "cutover: jetctl migrate stream SRC --as SRC2 --cutover, publoop writing to src.live all along"
measured_move cutover "$JETCTL" migrate stream SRC --as SRC2 --cutover --yes -o json --no-progress --verbose
cut_s=$M_S cut_msgs=$M_MSGS cut_outage_ms=$M_OUTAGE_MS cut_cpu=$M_CPU cut_rss=$M_RSS cut_srv=$M_SRV
cut_pub=$M_PUB cut_found=$M_FOUND cut_switch_ms=$M_SWITCH_MS cut_switches=$M_SWITCHES cut_maxgap_ms=$M_MAXGAP_MS
note "cutover: $cut_msgs messages in ${cut_s}s, outage ${cut_outage_ms} ms (jetctl), ${cut_switch_ms} ms (publoop, $cut_switches switch)"

# ---------------------------------------------------------------------------
if [[ -n $REPLACE ]]; then
	note "replace: migrate.Replace of SRC2 ($REPLACE), publoop writing all along"
	measured_move replace "$BIN/replace" -stream SRC2 -change "$REPLACE"
	rep_s=$M_S rep_msgs=$M_MSGS rep_outage_ms=$M_OUTAGE_MS rep_cpu=$M_CPU rep_rss=$M_RSS rep_srv=$M_SRV
	rep_pub=$M_PUB rep_found=$M_FOUND rep_switch_ms=$M_SWITCH_MS rep_switches=$M_SWITCHES rep_maxgap_ms=$M_MAXGAP_MS
	note "replace: $rep_msgs messages in ${rep_s}s, outage ${rep_outage_ms} ms (summed), ${rep_switch_ms} ms (publoop, $rep_switches switches)"
fi

# ---------------------------------------------------------------------------
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
rate() { calc "\"%.0f\", $1 / $2"; }
m_mirror=$(median "${MIRROR_S[@]}")
m_copy=$(median "${COPY_S[@]}")
m_total=$(median "${TOTAL_S[@]}")
copy_ratio=$(calc "\"%.2f\", $m_mirror / $m_copy")
total_ratio=$(calc "\"%.2f\", $m_mirror / $m_total")

printf '\n# jetctl migrate bench, %s; %s CPUs; natscli %s; jetctl %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" \
	"$(nproc)" "$NATS_VERSION" "$(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo '?')"
printf '# SRC: %s x %s B on %s subjects, filled in %ss; load average %s\n' "$MSGS" "$SIZE" "$SUBJECTS" "$fill_s" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '\n%-6s %-52s %9s %10s %10s %10s %10s\n' round "copy of SRC ($MSGS messages)" seconds msgs/s "jetctl CPU" "server CPU" "jetctl RSS"
for ((r = 1; r <= ROUNDS; r++)); do
	printf '%-6s %-52s %9s %10s %10s %10s %10s\n' "$r" "nats stream add MIRROR --mirror SRC, until caught up" "${MIRROR_S[r]}" "$(rate "$MSGS" "${MIRROR_S[r]}")" - "${MIRROR_SRV[r]}" -
	printf '%-6s %-52s %9s %10s %10s %10s %10s\n' "" "jetctl migrate stream --as SRC2: copy only" "${COPY_S[r]}" "$(rate "$MSGS" "${COPY_S[r]}")" - - -
	printf '%-6s %-52s %9s %10s %10s %10s %10s\n' "" "jetctl migrate stream --as SRC2: copy + verify" "${TOTAL_S[r]}" "$(rate "$MSGS" "${TOTAL_S[r]}")" "${JET_CPU[r]}" "${JET_SRV[r]}" "${JET_RSS[r]}"
done
printf '\n%-72s %9s\n' "rate ratio jetctl/mirror, medians of $ROUNDS" ratio
printf '%-72s %9s\n' "copy only (target >= 0.8)" "${copy_ratio}x"
printf '%-72s %9s\n' "copy + verify (target >= 0.8)" "${total_ratio}x"

printf '\n%-72s %9s\n' "cutover: jetctl migrate stream SRC --as SRC2 --cutover" ""
printf '%-72s %9s\n' "messages moved (with publoop's), seconds (copy + verify + cutover)" "$cut_msgs $cut_s"
printf '%-72s %9s\n' "write outage, jetctl's write_outage_ns (target < 1000 ms)" "$cut_outage_ms ms"
printf '%-72s %9s\n' "write outage, publoop: last ack from SRC to first from SRC2" "$cut_switch_ms ms"
printf '%-72s %9s\n' "publoop: longest gap between acks (any cause), acked, found in SRC2" "$cut_maxgap_ms ms $cut_pub $cut_found"
printf '%-72s %9s\n' "jetctl CPU s, server CPU s, jetctl peak RSS KiB" "$cut_cpu $cut_srv $cut_rss"
if [[ -n $REPLACE ]]; then
	printf '\n%-72s %9s\n' "replace: migrate.Replace of SRC2, retention/storage -> $REPLACE" ""
	printf '%-72s %9s\n' "messages, seconds (two copies, verifies and cutovers)" "$rep_msgs $rep_s"
	printf '%-72s %9s\n' "rate ratio replace/mirror (median mirror; two copies: ~0.5 expected)" "$(calc "\"%.2f\", ($rep_msgs / $rep_s) / ($MSGS / $m_mirror)")x"
	printf '%-72s %9s\n' "write outage, summed write_outage_ns of the two moves" "$rep_outage_ms ms"
	printf '%-72s %9s\n' "write outage, publoop: summed gaps at the $rep_switches switches" "$rep_switch_ms ms"
	printf '%-72s %9s\n' "publoop: longest gap between acks (any cause), acked, found in SRC2" "$rep_maxgap_ms ms $rep_pub $rep_found"
	printf '%-72s %9s\n' "replace CPU s, server CPU s, replace peak RSS KiB" "$rep_cpu $rep_srv $rep_rss"
fi

status=0
awk -v r="$copy_ratio" 'BEGIN { exit !(r >= 0.8) }' || { note "target missed: copy only ${copy_ratio}x (target >= 0.8x)"; status=1; }
awk -v r="$total_ratio" 'BEGIN { exit !(r >= 0.8) }' || { note "target missed: copy + verify ${total_ratio}x (target >= 0.8x)"; status=1; }
awk -v o="$cut_outage_ms" -v p="$cut_switch_ms" 'BEGIN { exit !(o < 1000 && p < 1000) }' || { note "target missed: write outage ${cut_outage_ms} ms / ${cut_switch_ms} ms (target < 1000 ms)"; status=1; }
[[ $cut_found == "$cut_pub" ]] || { note "publoop: $cut_found of $cut_pub acknowledged messages found in SRC2 after the cutover"; status=1; }
if [[ -n $REPLACE && $rep_found != "$rep_pub" ]]; then note "publoop: $rep_found of $rep_pub acknowledged messages found in SRC2 after the replace"; status=1; fi
exit $status
