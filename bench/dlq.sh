#!/usr/bin/env bash
# bench/dlq.sh: how fast `jetctl dlq sweep` moves dead messages out of a
# workqueue stream, next to what the same server can do, in one run:
#
#   - the baseline: bench/dlqloop, the sequential nats.go loop a script
#     author would write in one process (get the message from the leader,
#     publish the copy and wait for its ack, delete the source);
#   - the ceiling: bench/dlqprobe measures pipelined STREAM.MSG.GET,
#     STREAM.MSG.DELETE (256 requests in flight) and async publishes on the
#     same server; a sweep that gets and deletes each message cannot go
#     faster than 1/(1/get + 1/pub + 1/delete);
#   - the direct ceiling: 1/(1/direct + 1/pub + 1/delete) with the probe's
#     batched DIRECT.GET rate (rows of 64, 4 in flight): a sweep of a
#     stream with allow_direct reads dead messages at consecutive
#     sequences that way;
#   - the full ceiling: the direct ceiling with the advisories too (the
#     probe fetches advisory-sized messages with a durable pull consumer
#     and acknowledges each), 1/(1/direct + 1/pub + 1/delete + 1/advisory),
#     printed with its ratio to the loop: the most a sweep could be;
#   - the CPU per dead message of the allow_direct sweep, jetctl's and the
#     server's (robust to a busy machine, unlike the rates);
#   - peak RSS of a sweep of RSS_MSGS dead messages;
#   - `jetctl dlq redrive --rate`: the rate kept against the rate asked,
#     and an unpaced redrive against the same ceiling.
#
# Standalone (it does not need bench/run or natscli). Usage:
#
#   bench/dlq.sh                              # 20,000 messages of 128 B
#   MSGS=5000 RSS_MSGS=20000 bench/dlq.sh
#   PROFILE=1 bench/dlq.sh                    # CPU profiles of the sweep and the server,
#                                             # and the sweep's allocations
#
# Three streams are swept, each with MSGS dead messages: JOBS (allow_direct,
# natscli's default: the targets are checked on it), JOBSLEADER (the same
# without allow_direct, nats.go's default: a leader get per message) and
# JOBSMIXED (allow_direct, a live message after each dead one, which must
# stay: no two dead messages at consecutive sequences, so a leader get per
# message too).
#
# Targets (issue 15): sweep >= 10x the loop, >= 70% of the ceiling, peak
# RSS < 64 MiB at 100,000 messages, redrive within 5% of --rate. If
# natscli is on PATH (or BENCH_NATS), the old baseline, a loop starting a
# natscli process per step, is timed too (CLI_MSGS messages, extrapolated)
# and printed as a secondary line: process start dominates it.
#
# The dead messages are made by publishing, for each message, the
# MAX_DELIVERIES advisory the server sends when a worker gives up, into
# the capture stream (bench/dlqprobe fill), so every run gets the same
# input without a worker. The server is `jetctl server --port 0 -q` on
# 127.0.0.1, stopped on exit; NATS_* variables and contexts are kept out.
set -euo pipefail

MSGS=${MSGS:-20000}
LOOP_MSGS=${LOOP_MSGS:-$MSGS}
RSS_MSGS=${RSS_MSGS:-100000}
SIZE=${SIZE:-128}
RATE=${RATE:-1000}
REDRIVE_MSGS=${REDRIVE_MSGS:-3000}
CLI_MSGS=${CLI_MSGS:-200}
PROFILE=${PROFILE:-0}

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_init
trap stop_server EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
build_jetctl
note "building bench/dlqloop and bench/dlqprobe"
(cd "$ROOT" && go build -o "$BIN/dlqloop" ./bench/dlqloop && go build -o "$BIN/dlqprobe" ./bench/dlqprobe) || die "go build failed"
LOOP=$BIN/dlqloop
PROBE=$BIN/dlqprobe
while IFS= read -r v; do unset "$v"; done < <(compgen -e | grep '^NATS_' || true)
export XDG_CONFIG_HOME=$OUT/config
NATS=${BENCH_NATS:-$(command -v nats || true)}

OUT=$OUT/dlq
mkdir -p "$OUT"
rm -f "$OUT"/*.prof
if [[ $PROFILE == 1 ]]; then
	JETCTL_CPUPROFILE=$OUT/server.prof start_server
else
	start_server
fi

now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
calc() { awk "BEGIN { printf $1 }" </dev/null; }
q() { "$@" >/dev/null 2>&1 </dev/null; }
count() { "$JETCTL" status --jq ".streams[] | select(.name==\"$1\") | .messages" </dev/null; }

note "probe: pipelined get, publish and delete of $MSGS messages"
"$PROBE" probe -n "$MSGS" -size "$SIZE" >"$OUT/probe.out"
get=$(sed -n 's/^get //p' "$OUT/probe.out")
pub=$(sed -n 's/^pub //p' "$OUT/probe.out")
del=$(sed -n 's/^delete //p' "$OUT/probe.out")
ceiling=$(sed -n 's/^ceiling //p' "$OUT/probe.out")
direct=$(sed -n 's/^direct //p' "$OUT/probe.out")
dceiling=$(sed -n 's/^directceiling //p' "$OUT/probe.out")
advisory=$(sed -n 's/^advisory //p' "$OUT/probe.out")
fceiling=$(sed -n 's/^fullceiling //p' "$OUT/probe.out")

# sweep_case STREAM DIRECT LIVE: a workqueue stream STREAM (with
# allow_direct if DIRECT is set) filled with MSGS dead messages (each
# followed by a live one if LIVE is set), swept; sets SWEEP_S, SWEEP_RATE,
# MOVED and LEFT.
sweep_case() {
	local stream=$1 direct=$2 live=$3 t0 t1
	note "filling $stream with $MSGS dead messages${direct:+ (allow_direct)}${live:+, a live message after each}"
	"$PROBE" stream "$stream" ${direct:+-allow-direct}
	q "$JETCTL" dlq setup --stream "$stream" --consumer worker
	"$PROBE" fill "$stream" -n "$MSGS" -size "$SIZE" ${live:+-live}
	note "jetctl dlq sweep of $MSGS messages from $stream"
	_cpu_now
	local c0=$CPU_US s0=$SERVER_CPU_US
	t0=$(now)
	if [[ $PROFILE == 1 && $stream == JOBS ]]; then
		JETCTL_CPUPROFILE=$OUT/sweep.prof JETCTL_MEMPROFILE=$OUT/sweep.mem.prof "$JETCTL" dlq sweep --stream "$stream" >/dev/null 2>"$OUT/sweep.err" </dev/null
	else
		"$JETCTL" dlq sweep --stream "$stream" >/dev/null 2>"$OUT/sweep.err" </dev/null
	fi
	t1=$(now)
	_cpu_now
	SWEEP_S=$(elapsed "$t0" "$t1")
	# CPU per dead message, jetctl's and the server's: robust to a busy
	# machine, unlike the rates.
	SWEEP_CPU=$(calc "\"%.1f µs + server %.1f µs\", ($CPU_US - $c0) / $MSGS, ($SERVER_CPU_US - $s0) / $MSGS")
	note "$(cat "$OUT/sweep.err")"
	MOVED=$(count "DLQ_$stream")
	LEFT=$(count "$stream")
	SWEEP_RATE=$(calc "\"%.0f\", $MSGS / $SWEEP_S")
}

# The case the targets are for: a stream made the way natscli makes one
# (allow_direct); then the same without allow_direct (nats.go's default),
# and with live messages in between.
sweep_case JOBS 1 ''
sweep_s=$SWEEP_S sweep_rate=$SWEEP_RATE moved=$MOVED left=$LEFT sweep_cpu=$SWEEP_CPU
sweep_case JOBSLEADER '' ''
leader_s=$SWEEP_S leader_rate=$SWEEP_RATE leader_moved=$MOVED leader_left=$LEFT
sweep_case JOBSMIXED 1 1
mixed_s=$SWEEP_S mixed_rate=$SWEEP_RATE mixed_moved=$MOVED mixed_left=$LEFT

note "sequential nats.go loop over $LOOP_MSGS messages"
"$LOOP" -n "$LOOP_MSGS" -size "$SIZE" >"$OUT/loop.out"
loop_s=$(sed -n 's/^loop: [0-9]* msgs in \([0-9.]*\) s.*/\1/p' "$OUT/loop.out")
loop_rate=$(calc "\"%.0f\", $LOOP_MSGS / $loop_s")

cli_line=''
if [[ -n $NATS && -x $NATS ]]; then
	note "natscli loop: get, publish, delete, a process each ($CLI_MSGS messages)"
	q "$NATS" stream add NJOBS --subjects 'njobs.>' --retention work --storage file --defaults
	q "$NATS" stream add NDLQ --subjects 'ndlq.>' --storage file --defaults
	q "$NATS" pub njobs.run "$(head -c "$SIZE" /dev/zero | tr '\0' 'x')" --count "$CLI_MSGS" --jetstream
	t0=$(now)
	for ((seq = 1; seq <= CLI_MSGS; seq++)); do
		data=$("$NATS" stream get NJOBS "$seq" --json </dev/null | sed -n 's/.*"data": *"\([^"]*\)".*/\1/p' | base64 -d)
		q "$NATS" req "ndlq.NJOBS.$seq" "$data" -H "Nats-Expected-Last-Subject-Sequence:0"
		q "$NATS" stream rmm NJOBS "$seq" -f
	done
	t1=$(now)
	cli_rate=$(calc "\"%.1f\", $CLI_MSGS / $(elapsed "$t0" "$t1")")
	cli_line=$(printf '%-64s %12s %10s\n' "natscli loop, a process per step ($CLI_MSGS msgs; secondary)" "$cli_rate" "$(calc "\"%.0fx\", $sweep_rate / $cli_rate")")
fi

note "jetctl dlq redrive --rate $RATE/s of $REDRIVE_MSGS messages"
"$PROBE" stream REDRIVEN
"$JETCTL" dlq redrive --stream JOBS --to redriven.jobs --rate "$RATE/s" --max "$REDRIVE_MSGS" --yes >/dev/null 2>"$OUT/redrive.err" </dev/null
note "$(cat "$OUT/redrive.err")"
red_s=$(sed -n 's/.* in \([0-9.]*\)s, .*/\1/p' "$OUT/redrive.err")
red_rate=$(calc "\"%.1f\", $REDRIVE_MSGS / $red_s")
red_dev=$(calc "\"%+.1f\", ($red_rate - $RATE) / $RATE * 100")

rest=$((MSGS - REDRIVE_MSGS))
note "jetctl dlq redrive, unpaced, of the other $rest messages"
t0=$(now)
"$JETCTL" dlq redrive --stream JOBS --to redriven.jobs --yes >/dev/null 2>"$OUT/redrive2.err" </dev/null
t1=$(now)
note "$(cat "$OUT/redrive2.err")"
red2_rate=$(calc "\"%.0f\", $rest / $(elapsed "$t0" "$t1")")

note "peak RSS: jetctl dlq sweep of $RSS_MSGS messages"
"$PROBE" fill JOBS -n "$RSS_MSGS" -size "$SIZE"
t0=$(now)
rss_kb=$(/usr/bin/time -f '%M' "$JETCTL" dlq sweep --stream JOBS 2>&1 >/dev/null </dev/null | tail -n 1)
t1=$(now)
rss_rate=$(calc "\"%.0f\", $RSS_MSGS / $(elapsed "$t0" "$t1")")
rss_mib=$(calc "\"%.1f\", $rss_kb / 1024")
rss_moved=$(count DLQ_JOBS)

ratio_loop=$(calc "\"%.1f\", $sweep_rate / $loop_rate")
ratio_ceiling=$(calc "\"%.0f\", $sweep_rate / $ceiling * 100")
ratio_dceiling=$(calc "\"%.0f\", $sweep_rate / $dceiling * 100")
ratio_fceiling=$(calc "\"%.0f\", $sweep_rate / $fceiling * 100")
ratio_leader=$(calc "\"%.1f\", $leader_rate / $loop_rate")
ratio_mixed=$(calc "\"%.1f\", $mixed_rate / $loop_rate")
ratio_mixed_ceiling=$(calc "\"%.0f\", $mixed_rate / $ceiling * 100")
ratio_red2=$(calc "\"%.0f\", $red2_rate / $ceiling * 100")

printf '\n# bench/dlq.sh, %s, %s CPUs; %s messages of %s B, workqueue stream; load average %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(nproc)" "$MSGS" "$SIZE" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-64s %12s %10s\n' "" "msgs/s" "ratio"
printf '%-64s %12s\n' "probe: STREAM.MSG.GET, 256 in flight" "$get"
printf '%-64s %12s\n' "probe: async publish, 256 in flight" "$pub"
printf '%-64s %12s\n' "probe: STREAM.MSG.DELETE, 256 in flight" "$del"
printf '%-64s %12s\n' "ceiling 1/(1/get + 1/pub + 1/delete)" "$ceiling"
printf '%-64s %12s\n' "probe: DIRECT.GET batches of 64, 4 in flight" "$direct"
printf '%-64s %12s\n' "direct ceiling 1/(1/direct + 1/pub + 1/delete)" "$dceiling"
printf '%-64s %12s\n' "probe: advisories fetched (256 a batch) and each acked" "$advisory"
printf '%-64s %12s %10s\n' "full ceiling 1/(1/direct + 1/pub + 1/delete + 1/advisory)" "$fceiling" "$(calc "\"%.1fx\", $fceiling / $loop_rate")"
printf '%-64s %12s\n' "sequential nats.go loop ($LOOP_MSGS msgs, in-process)" "$loop_rate"
printf '%-64s %12s %10s\n' "jetctl dlq sweep, allow_direct ($MSGS msgs: moved $moved, left $left; ${sweep_s}s)" "$sweep_rate" "${ratio_loop}x"
printf '%-64s %12s %10s\n' "sweep / ceiling (target >= 70%)" "" "${ratio_ceiling}%"
printf '%-64s %12s %10s\n' "sweep / direct ceiling" "" "${ratio_dceiling}%"
printf '%-64s %12s %10s\n' "sweep / full ceiling" "" "${ratio_fceiling}%"
printf '%-64s %23s\n' "sweep, allow_direct: CPU per message, jetctl + server" "$sweep_cpu"
printf '%-64s %12s %10s\n' "sweep, no allow_direct (moved $leader_moved, left $leader_left; ${leader_s}s)" "$leader_rate" "${ratio_leader}x"
printf '%-64s %12s %10s\n' "sweep, a live msg after each (moved $mixed_moved, left $mixed_left; ${mixed_s}s)" "$mixed_rate" "${ratio_mixed}x"
printf '%-64s %12s %10s\n' "sweep, a live msg after each / ceiling" "" "${ratio_mixed_ceiling}%"
[[ -z $cli_line ]] || printf '%s\n' "$cli_line"
printf '%-64s %12s %10s\n' "jetctl dlq redrive --rate $RATE/s ($REDRIVE_MSGS msgs, ${red_s}s)" "$red_rate" "${red_dev}%"
printf '%-64s %12s %10s\n' "jetctl dlq redrive, unpaced ($rest msgs) / ceiling" "$red2_rate" "${ratio_red2}%"
printf '%-64s %12s %10s\n' "jetctl dlq sweep of $RSS_MSGS msgs (moved $rss_moved): peak RSS" "$rss_rate" "${rss_mib} MiB"
[[ $PROFILE != 1 ]] || printf '# profiles: go tool pprof %s %s/sweep.prof (and sweep.mem.prof, and server.prof, written when the server stops)\n' "$JETCTL" "$OUT"

status=0
[[ $moved == "$MSGS" && $left == 0 ]] || { note "sweep moved $moved of $MSGS (left $left)"; status=1; }
[[ $leader_moved == "$MSGS" && $leader_left == 0 ]] || { note "sweep (no allow_direct) moved $leader_moved of $MSGS (left $leader_left)"; status=1; }
[[ $mixed_moved == "$MSGS" && $mixed_left == "$MSGS" ]] || { note "sweep (live messages) moved $mixed_moved of $MSGS (left $mixed_left, of them $MSGS live)"; status=1; }
[[ $rss_moved == "$RSS_MSGS" ]] || { note "the RSS sweep moved $rss_moved of $RSS_MSGS"; status=1; }
calc "\"%d\", !($ratio_loop >= 10)" | grep -q 0 || { note "target missed: sweep ${ratio_loop}x the loop (target >= 10x)"; status=1; }
calc "\"%d\", !($ratio_ceiling >= 70)" | grep -q 0 || { note "target missed: sweep ${ratio_ceiling}% of the ceiling (target >= 70%)"; status=1; }
calc "\"%d\", !($rss_mib < 64)" | grep -q 0 || { note "target missed: peak RSS ${rss_mib} MiB (target < 64 MiB)"; status=1; }
calc "\"%d\", !($red_dev <= 5 && $red_dev >= -5)" | grep -q 0 || { note "target missed: redrive ${red_dev}% off the rate (target within 5%)"; status=1; }
exit $status
