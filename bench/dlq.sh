#!/usr/bin/env bash
# bench/dlq.sh: how fast `jetctl dlq sweep` moves 10,000 dead messages out
# of a workqueue stream, next to the sequential loop a shell script would
# run with natscli (`nats stream get`, `nats req` to the DLQ subject,
# `nats stream rmm`, one message at a time), and how closely `jetctl dlq
# redrive --rate` keeps to the rate asked.
#
# Standalone (it does not need bench/run). Usage:
#
#   bench/dlq.sh                     # 10,000 messages; natscli capped at 300
#   MSGS=2000 CLI_MSGS=100 RATE=500 bench/dlq.sh
#
# Targets (issue 5): the sweep >= 10x faster than the natscli loop; redrive
# within 5% of --rate. The natscli loop is capped at CLI_MSGS messages and
# its rate extrapolated to MSGS (it is linear: one message at a time).
#
# The dead messages are made by publishing MAX_DELIVERIES advisories into
# the capture stream for every message (what the server sends when a worker
# gives up), so both sides get the same input without a worker. natscli:
# as in bench/run (`nats` on PATH, else v0.5.0 installed into
# bench/out/bin). The server is `jetctl server --port 0 -q` on
# 127.0.0.1, stopped on exit; NATS_* variables and contexts are kept out.
set -euo pipefail

MSGS=${MSGS:-10000}
CLI_MSGS=${CLI_MSGS:-300}
RATE=${RATE:-1000}
REDRIVE_MSGS=${REDRIVE_MSGS:-3000}

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The helpers of bench/run: build jetctl, find or install natscli, keep the
# user's NATS setup out, and run a throwaway server that stops on exit.
bench_setup
start_server
OUT=$OUT/dlq
mkdir -p "$OUT"

now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
q() { "$@" >/dev/null 2>&1 </dev/null; }

# A workqueue stream with MSGS messages (512 B) and a dead-letter advisory for each.
payload=$(head -c 384 /dev/zero | tr '\0' 'x')
q "$NATS" stream add JOBS --subjects 'jobs.>' --retention work --storage file --defaults
q "$NATS" consumer add JOBS worker --pull --ack explicit --max-deliver 1 --defaults
q "$JETCTL" dlq setup --stream JOBS --consumer worker
note "publishing $MSGS messages and their advisories"
q "$NATS" pub jobs.run "{\"job\":{{Count}},\"pad\":\"$payload\"}" --count "$MSGS" --jetstream
q "$NATS" pub '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.JOBS.worker' \
	'{"type":"io.nats.jetstream.advisory.v1.max_deliver","stream":"JOBS","consumer":"worker","stream_seq":{{Count}},"deliveries":1}' \
	--count "$MSGS" --jetstream

# The same for the natscli loop, capped.
q "$NATS" stream add NJOBS --subjects 'njobs.>' --retention work --storage file --defaults
q "$NATS" stream add NDLQ --subjects 'ndlq.>' --storage file --defaults
q "$NATS" pub njobs.run "{\"job\":{{Count}},\"pad\":\"$payload\"}" --count "$CLI_MSGS" --jetstream

note "jetctl dlq sweep of $MSGS messages"
t0=$(now)
"$JETCTL" dlq sweep --stream JOBS -o jsonl >/dev/null 2>"$OUT/sweep.err" </dev/null
t1=$(now)
jet_s=$(elapsed "$t0" "$t1")
moved=$("$JETCTL" status --jq '.streams[] | select(.name=="DLQ_JOBS") | .messages')
left=$("$JETCTL" status --jq '.streams[] | select(.name=="JOBS") | .messages')
note "$(cat "$OUT/sweep.err")"

note "natscli loop: get, publish, delete, one message at a time ($CLI_MSGS messages)"
t0=$(now)
for ((seq = 1; seq <= CLI_MSGS; seq++)); do
	# The stored message as JSON; its data is base64.
	data=$("$NATS" stream get NJOBS "$seq" --json </dev/null | sed -n 's/.*"data": *"\([^"]*\)".*/\1/p' | base64 -d)
	"$NATS" req "ndlq.NJOBS.$seq" "$data" -H "Jetctl-Source-Seq:$seq" -H "Nats-Expected-Last-Subject-Sequence:0" >/dev/null 2>&1 </dev/null
	"$NATS" stream rmm NJOBS "$seq" -f >/dev/null 2>&1 </dev/null
done
t1=$(now)
nats_s=$(elapsed "$t0" "$t1")
nats_moved=$("$JETCTL" status --jq '.streams[] | select(.name=="NDLQ") | .messages')

jet_rate=$(awk -v n="$MSGS" -v s="$jet_s" 'BEGIN { printf "%.0f", n / s }')
nats_rate=$(awk -v n="$CLI_MSGS" -v s="$nats_s" 'BEGIN { printf "%.1f", n / s }')
nats_extrap=$(awk -v r="$nats_rate" -v n="$MSGS" 'BEGIN { printf "%.1f", n / r }')
ratio=$(awk -v a="$jet_rate" -v b="$nats_rate" 'BEGIN { printf "%.0f", a / b }')

note "jetctl dlq redrive --rate $RATE/s of $REDRIVE_MSGS messages"
q "$NATS" stream add REDRIVEN --subjects 'redriven.>' --storage file --defaults
t0=$(now)
"$JETCTL" dlq redrive --stream JOBS --to redriven.jobs --rate "$RATE/s" --max "$REDRIVE_MSGS" --yes -o jsonl >/dev/null 2>"$OUT/redrive.err" </dev/null
t1=$(now)
red_s=$(elapsed "$t0" "$t1")
note "$(cat "$OUT/redrive.err")"
red_inner=$(sed -n 's/.* in \([0-9.]*\)s, .*/\1/p' "$OUT/redrive.err")
red_rate=$(awk -v n="$REDRIVE_MSGS" -v s="$red_inner" 'BEGIN { printf "%.1f", n / s }')
red_dev=$(awk -v r="$red_rate" -v t="$RATE" 'BEGIN { d = (r - t) / t * 100; printf "%+.1f", d }')

printf '\n%-62s %12s %12s\n' "dlq sweep, workqueue stream, 512 B messages" "seconds" "msgs/s"
printf '%-62s %12s %12s\n' "jetctl dlq sweep: $MSGS messages (moved $moved, left $left)" "$jet_s" "$jet_rate"
printf '%-62s %12s %12s\n' "natscli get+req+rmm loop: $CLI_MSGS messages (moved $nats_moved)" "$nats_s" "$nats_rate"
printf '%-62s %12s\n' "natscli extrapolated to $MSGS messages" "$nats_extrap"
printf '%-62s %12s\n' "speed-up (jetctl msgs/s / natscli msgs/s)" "${ratio}x"
printf '%-62s %12s %12s\n' "jetctl dlq redrive --rate $RATE/s: $REDRIVE_MSGS messages" "$red_inner" "$red_rate"
printf '%-62s %12s\n' "redrive rate vs asked" "${red_dev}%"
status=0
[[ $moved == "$MSGS" && $left == 0 ]] || { note "sweep moved $moved of $MSGS (left $left)"; status=1; }
awk -v r="$ratio" 'BEGIN { exit !(r >= 10) }' || { note "target missed: ${ratio}x (target >= 10x)"; status=1; }
awk -v d="$red_dev" 'BEGIN { if (d < 0) d = -d; exit !(d <= 5) }' || { note "target missed: redrive ${red_dev}% off the rate (target within 5%)"; status=1; }
exit $status
