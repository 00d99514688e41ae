#!/usr/bin/env bash
# bench/plan.sh: how long `jetctl plan` takes over 200 streams × 5
# consumers, next to natscli reading the same resources one by one
# (`nats stream info` and `nats consumer info` per resource), the way a
# shell script comparing a config with a server has to.
#
# Standalone (it does not need bench/run). Usage:
#
#   bench/plan.sh                 # 200 streams x 5 consumers, 5 plan runs
#   STREAMS=50 CONSUMERS=2 RUNS=3 bench/plan.sh
#
# Targets (issue 3): plan < 2 s and at least 10x faster than natscli.
#
# natscli: as in bench/run (`nats` on PATH, else natscli v0.5.0 installed
# into bench/out/bin). The server is
# `jetctl server --port 0 -q` on 127.0.0.1, stopped on exit; NATS_*
# variables and natscli contexts are kept out.
set -euo pipefail

STREAMS=${STREAMS:-200}
CONSUMERS=${CONSUMERS:-5}
RUNS=${RUNS:-5}

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The helpers of bench/run: build jetctl, find or install natscli, keep the
# user's NATS setup out, and run a throwaway server that stops on exit.
bench_setup
start_server
OUT=$OUT/plan
mkdir -p "$OUT"

PLAN=$OUT/plan.yaml
{
	echo "streams:"
	for ((s = 0; s < STREAMS; s++)); do
		printf '  - name: S%03d\n    subjects: ["s%03d.>"]\n    max_age: 7d\n    consumers:\n' "$s" "$s"
		for ((c = 0; c < CONSUMERS; c++)); do
			printf '      - name: c%d\n        filter_subject: s%03d.c%d\n        max_deliver: 5\n' "$c" "$s" "$c"
		done
	done
} >"$PLAN"

note "creating $STREAMS streams x $CONSUMERS consumers with jetctl apply"
"$JETCTL" apply -f "$PLAN" --yes >/dev/null 2>&1
"$JETCTL" plan -f "$PLAN" --detailed-exitcode >/dev/null

now() { echo "$EPOCHREALTIME"; }

note "timing jetctl plan ($RUNS runs)"
total=0
best=
for ((i = 0; i < RUNS; i++)); do
	t0=$(now)
	"$JETCTL" plan -f "$PLAN" --detailed-exitcode >/dev/null
	t1=$(now)
	d=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }')
	total=$(awk -v t="$total" -v d="$d" 'BEGIN { printf "%.4f", t + d }')
	if [[ -z $best ]] || awk -v d="$d" -v b="$best" 'BEGIN { exit !(d < b) }'; then best=$d; fi
done
plan_mean=$(awk -v t="$total" -v n="$RUNS" 'BEGIN { printf "%.3f", t / n }')

note "timing natscli: nats stream info + nats consumer info per resource"
t0=$(now)
for ((s = 0; s < STREAMS; s++)); do
	name=$(printf 'S%03d' "$s")
	"$NATS" stream info "$name" --json >/dev/null
	for ((c = 0; c < CONSUMERS; c++)); do
		"$NATS" consumer info "$name" "c$c" --json >/dev/null
	done
done </dev/null
t1=$(now)
nats_total=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')

ratio=$(awk -v n="$nats_total" -v j="$plan_mean" 'BEGIN { printf "%.1f", n / j }')
resources=$((STREAMS + STREAMS * CONSUMERS))
printf '\n%-58s %10s\n' "plan over $STREAMS streams x $CONSUMERS consumers ($resources resources)" "seconds"
printf '%-58s %10s\n' "jetctl plan (mean of $RUNS)" "$plan_mean"
printf '%-58s %10s\n' "jetctl plan (best)" "$best"
printf '%-58s %10s\n' "natscli stream/consumer info per resource" "$nats_total"
printf '%-58s %10s\n' "speed-up (natscli / jetctl mean)" "${ratio}x"
status=0
awk -v j="$plan_mean" 'BEGIN { exit !(j < 2) }' || { note "target missed: plan took ${plan_mean}s (target < 2 s)"; status=1; }
awk -v r="$ratio" 'BEGIN { exit !(r >= 10) }' || { note "target missed: ${ratio}x (target >= 10x)"; status=1; }
exit $status
