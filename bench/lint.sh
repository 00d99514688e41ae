#!/usr/bin/env bash
# bench/lint.sh: `jetctl lint -f DIR` over 100 plan files of 50 streams each
# (5,000 streams, about 7,500 consumers and 500 KV buckets, written by
# bench/genplans -single-server), side by side in one run with `jetctl plan -f DIR` over
# the same files against an empty server (which loads them the same way,
# reads the server, computes 13,000 creates and lints them too).
#
# Standalone (it does not need bench/run or natscli). Usage:
#
#   bench/lint.sh                     # 100 files x 50 streams, 7 runs each
#   FILES=20 STREAMS=50 RUNS=3 bench/lint.sh
#
# Target (issue 26): lint under 1 s (median of RUNS, process start to
# exit). With GNU time, the median CPU seconds (user + system) of each
# too: what the work costs, which a busy machine inflates less than the
# wall time. The script prints the target met or missed, and exits 1 when
# missed.
#
# The server is `jetctl server --port 0 -q` on 127.0.0.1, stopped on exit;
# NATS_* variables and natscli contexts are kept out. Keep the machine
# otherwise idle: the load average is printed at the start and the end.
set -euo pipefail

FILES=${FILES:-100}
STREAMS=${STREAMS:-50}
RUNS=${RUNS:-7}

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

bench_setup --no-nats
start_server
OUT=$OUT/lint
rm -rf "$OUT"
mkdir -p "$OUT"
PLANS=$OUT/plans

note "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
note "writing $FILES plan files of $STREAMS streams with bench/genplans"
(cd "$ROOT" && go run ./bench/genplans -files "$FILES" -streams "$STREAMS" -single-server -out "$PLANS") >&2
bytes=$(cat "$PLANS"/*.yaml | wc -c)

GNUTIME=
if [[ -x /usr/bin/time ]] && /usr/bin/time -f %U /bin/true 2>/dev/null; then GNUTIME=/usr/bin/time; fi

# timed NAME CMD...: RUNS runs; wall seconds in $OUT/NAME.wall, CPU seconds
# in $OUT/NAME.cpu; any exit code but 0 and 8 (findings, changes) stops.
timed() {
	local name=$1 i rc t0 t1
	shift
	: >"$OUT/$name.wall"
	: >"$OUT/$name.cpu"
	"$@" >/dev/null 2>&1 </dev/null || true # warm the page cache
	for ((i = 0; i < RUNS; i++)); do
		t0=${EPOCHREALTIME/[.,]/}
		if [[ -n $GNUTIME ]]; then
			rc=0
			"$GNUTIME" -o "$OUT/$name.t" -f '%U %S' "$@" >/dev/null 2>"$OUT/$name.err" </dev/null || rc=$?
		else
			rc=0
			"$@" >/dev/null 2>"$OUT/$name.err" </dev/null || rc=$?
		fi
		t1=${EPOCHREALTIME/[.,]/}
		if ((rc != 0 && rc != 8)); then
			die "$name exited $rc: $(tail -n 3 "$OUT/$name.err")"
		fi
		awk -v us=$((t1 - t0)) 'BEGIN { printf "%.4f\n", us / 1e6 }' >>"$OUT/$name.wall"
		if [[ -n $GNUTIME ]]; then
			tail -n 1 "$OUT/$name.t" | awk '{ printf "%.2f\n", $1 + $2 }' >>"$OUT/$name.cpu"
		fi
	done
}

median() { sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit } print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
best() { sort -n "$1" | head -n 1; }

note "timing jetctl lint -f ($RUNS runs)"
timed lint "$JETCTL" lint -f "$PLANS" --fail-on none
findings=$("$JETCTL" lint -f "$PLANS" -o json --fail-on none --jq '"\(.resources) resources, \(.counts.error) errors, \(.counts.warning) warnings, \(.counts.info) info"')
note "timing jetctl plan -f against an empty server ($RUNS runs)"
timed plan "$JETCTL" plan -f "$PLANS"

lint_med=$(median "$OUT/lint.wall")
plan_med=$(median "$OUT/plan.wall")
printf '\nlint over %d files x %d streams (%s of YAML): %s\n' "$FILES" "$STREAMS" "$(numfmt --to=iec "$bytes")B" "$findings"
printf '%-44s %10s %10s %12s\n' "" "median s" "best s" "median CPU s"
printf '%-44s %10s %10s %12s\n' "jetctl lint -f" "$lint_med" "$(best "$OUT/lint.wall")" "$(median "$OUT/lint.cpu")"
printf '%-44s %10s %10s %12s\n' "jetctl plan -f (empty server: all creates)" "$plan_med" "$(best "$OUT/plan.wall")" "$(median "$OUT/plan.cpu")"
printf 'lint / plan (median wall): %s\n' "$(awk -v l="$lint_med" -v p="$plan_med" 'BEGIN { printf "%.2f", l / p }')"
note "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

if awk -v l="$lint_med" 'BEGIN { exit !(l < 1) }'; then
	printf 'target lint < 1 s: met (%s s)\n' "$lint_med"
else
	printf 'target lint < 1 s: MISSED (%s s)\n' "$lint_med"
	exit 1
fi
