# shellcheck shell=bash
# bench/lib.sh: the helpers behind bench/run. Sourced by bench/run, never run
# on its own. See bench/README.md for how to add a comparison.
#
# Conventions: results go to stdout, progress and diagnostics to stderr.
# Every timed command runs with stdin from /dev/null; its stderr (and, for
# `nats bench`, its stdout) is kept in $LOGS for inspection and parsing.

NATSCLI_VERSION=v0.5.0
NATSCLI_PKG=github.com/nats-io/natscli/nats

note() { printf 'bench: %s\n' "$*" >&2; }
die() {
	printf 'bench: error: %s\n' "$*" >&2
	exit 1
}

# ---------------------------------------------------------------------------
# Setup: directories, binaries, environment

# bench_init sets ROOT (the repository), OUT (bench-local outputs: $BENCH_OUT
# or bench/out), BIN, LOGS and RESULTS, and creates them.
bench_init() {
	BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
	ROOT=$(cd "$BENCH_DIR/.." && pwd -P)
	[[ -f $ROOT/go.mod && -f $ROOT/main.go ]] || die "cannot find the repository root from $BENCH_DIR"
	OUT=${BENCH_OUT:-$BENCH_DIR/out}
	mkdir -p "$OUT"
	OUT=$(cd "$OUT" && pwd -P)
	BIN=$OUT/bin
	LOGS=$OUT/logs
	RESULTS=$OUT/results.tsv
	rm -rf "$LOGS" "$OUT/path" "$OUT/config"
	mkdir -p "$BIN" "$LOGS" "$OUT/path" "$OUT/config"
	: >"$RESULTS"
	[[ -n ${EPOCHREALTIME:-} ]] || die "bash 5 or later is needed (EPOCHREALTIME), this is $BASH_VERSION"
}

# bench_setup is the start of every bench script: bench_init, a server
# stopped on exit (and on SIGINT or SIGTERM), the working tree's jetctl,
# natscli (not with --no-nats, for a script that compares jetctl with
# itself), and the user's NATS setup kept out.
bench_setup() {
	bench_init
	trap stop_server EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	build_jetctl
	[[ ${1:-} == --no-nats ]] || ensure_nats
	isolate_env
}

# build_jetctl builds the working tree's jetctl into $BIN.
build_jetctl() {
	note "building jetctl from $ROOT"
	(cd "$ROOT" && go build -o "$BIN/jetctl" .) || die "go build failed"
	JETCTL=$BIN/jetctl
}

# ensure_nats sets NATS to the natscli to compare against: $BENCH_NATS if
# set, else `nats` on PATH, else natscli $NATSCLI_VERSION installed into $BIN
# with `go install` (kept there for the next run).
ensure_nats() {
	local found
	if [[ -n ${BENCH_NATS:-} ]]; then
		NATS=$BENCH_NATS
	elif found=$(command -v nats); then
		NATS=$found
	elif [[ -x $BIN/nats && $("$BIN/nats" --version 2>&1) == "$NATSCLI_VERSION" ]]; then
		NATS=$BIN/nats
	else
		note "installing natscli $NATSCLI_VERSION into $BIN (go install; the first time takes a minute)"
		rm -f "$BIN/nats"
		(cd "$OUT" && GOBIN=$BIN GOFLAGS=${GOFLAGS:-} go install "$NATSCLI_PKG@$NATSCLI_VERSION") ||
			die "go install $NATSCLI_PKG@$NATSCLI_VERSION failed"
		NATS=$BIN/nats
	fi
	[[ -x $NATS ]] || die "natscli not executable: $NATS"
	NATS_VERSION=$("$NATS" --version 2>&1) || die "$NATS --version failed"
	if [[ $NATS_VERSION != "$NATSCLI_VERSION" ]]; then
		note "warning: comparing against natscli $NATS_VERSION ($NATS), not $NATSCLI_VERSION; figures are not comparable with bench/README.md"
	fi
}

# isolate_env makes `jetctl` and `nats` resolve to the binaries under test
# (through $OUT/path, first on PATH) and keeps the user's NATS setup out of
# the benchmark: no NATS_* variables, and an empty config directory, so no
# selected natscli context can point a command at a real server.
isolate_env() {
	ln -sf "$JETCTL" "$OUT/path/jetctl"
	[[ -z ${NATS:-} ]] || ln -sf "$NATS" "$OUT/path/nats"
	export PATH="$OUT/path:$PATH"
	local v
	while IFS= read -r v; do
		unset "$v"
	done < <(compgen -e | grep '^NATS_' || true)
	export XDG_CONFIG_HOME=$OUT/config
}

# print_header describes what is compared, on which machine.
print_header() {
	local cpus
	cpus=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?')
	printf '# jetctl bench, %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
	printf '# jetctl: %s (%s)\n' "$JETCTL" "$(cd "$ROOT" && git describe --always --dirty 2>/dev/null || echo 'no git')"
	printf '# nats:   %s (%s)\n' "$NATS" "$NATS_VERSION"
	printf '# host:   %s CPUs, %s, %s\n' "$cpus" "$(uname -sm)" "$(go env GOVERSION)"
	printf '# ratios are jetctl/nats; a time ratio below 1 means jetctl is faster\n'
}

# ---------------------------------------------------------------------------
# The throwaway server

SERVER_PID=

# start_server starts `jetctl server --port 0 -q` on 127.0.0.1 in the
# background (once; later calls do nothing), waits for the `export
# NATS_URL=...` line it prints and exports NATS_URL. The data lives in a temp
# dir that the server removes when stop_server (run on exit) stops it.
start_server() {
	[[ -z $SERVER_PID ]] || return 0
	local out=$LOGS/server.out err=$LOGS/server.err timeout=${BENCH_SERVER_TIMEOUT:-30}
	local deadline url=''
	"$JETCTL" server --host 127.0.0.1 --port 0 -q >"$out" 2>"$err" </dev/null &
	SERVER_PID=$!
	deadline=$((SECONDS + timeout))
	while :; do
		url=$(sed -n 's/^export NATS_URL=//p' "$out" | head -n 1)
		[[ -z $url ]] || break
		if ! kill -0 "$SERVER_PID" 2>/dev/null; then
			SERVER_PID=
			die "jetctl server exited before printing NATS_URL: $(tail -n 5 "$err")"
		fi
		((SECONDS < deadline)) || die "jetctl server printed no NATS_URL within ${timeout}s (see $err)"
		sleep 0.05
	done
	[[ $url =~ ^nats://127\.0\.0\.1:[0-9]+$ ]] || die "jetctl server printed an unexpected NATS_URL: $url"
	export NATS_URL=$url
	note "server pid $SERVER_PID at $NATS_URL"
}

# stop_server stops the server with SIGINT (its normal end), escalating to
# SIGTERM and SIGKILL if it does not exit in time.
stop_server() {
	[[ -n $SERVER_PID ]] || return 0
	local pid=$SERVER_PID sig i
	SERVER_PID=
	for sig in INT TERM KILL; do
		kill "-$sig" "$pid" 2>/dev/null || break
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break 2
			sleep 0.1
		done
		note "server pid $pid still running after SIG$sig"
	done
	wait "$pid" 2>/dev/null || true
	unset NATS_URL
}

# ---------------------------------------------------------------------------
# Timing

# _split_sides splits "-- A... -- B..." into the arrays SIDE_A and SIDE_B.
# B takes everything after the second "--", so only A cannot contain "--".
_split_sides() {
	[[ ${1:-} == -- ]] || die "expected '-- jetctl ... -- nats ...', got: $*"
	shift
	SIDE_A=()
	while (($#)) && [[ $1 != -- ]]; do
		SIDE_A+=("$1")
		shift
	done
	[[ ${1:-} == -- ]] || die "expected a second '--' before the nats command"
	shift
	SIDE_B=("$@")
	((${#SIDE_A[@]} && ${#SIDE_B[@]})) || die "both sides need a command"
}

# _run_timed OUT ERR CMD... runs CMD once with stdout to OUT and stderr
# appended to ERR, and sets RUN_US (wall-clock microseconds, fork and exec
# included) and RUN_RC. It forks nothing but CMD itself.
_run_timed() {
	local out=$1 err=$2 t0 t1
	shift 2
	t0=${EPOCHREALTIME/[.,]/}
	if "$@" >"$out" 2>>"$err" </dev/null; then RUN_RC=0; else RUN_RC=$?; fi
	t1=${EPOCHREALTIME/[.,]/}
	RUN_US=$((t1 - t0))
}

# _cpu_now sets CPU_US to the CPU time (user + system, microseconds) of
# this shell's finished children, and SERVER_CPU_US to the server's (0
# without one): around a run, the CPU the command and the server spent on
# it. Call it directly: in a subshell (a command or process substitution)
# `times` would count the subshell's children.
_cpu_now() {
	local f=$LOGS/.times
	times >"$f"
	CPU_US=$(awk 'NR == 2 {
		us = 0
		for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); us += (p[1] * 60 + p[2]) * 1e6 }
		printf "%.0f", us
	}' "$f")
	SERVER_CPU_US=0
	if [[ -n ${SERVER_PID:-} && -r /proc/$SERVER_PID/stat ]]; then
		# utime and stime, fields 14 and 15 (the command name has no space).
		SERVER_CPU_US=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.0f", ($14 + $15) * 1e6 / hz }' "/proc/$SERVER_PID/stat")
	fi
}

# _stats FILE prints "mean median stddev min" of the microsecond values in
# FILE (one a line), in microseconds.
_stats() {
	sort -n "$1" | awk '
		{ v[NR] = $1; s += $1; ss += $1 * $1 }
		END {
			if (NR == 0) { print "0 0 0 0"; exit }
			m = s / NR; var = ss / NR - m * m; if (var < 0) var = 0
			med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			printf "%.1f %.1f %.1f %.1f\n", m, med, sqrt(var), v[1]
		}'
}

# _calc EXPR evaluates a floating-point awk expression.
_calc() { awk "BEGIN { printf \"%s\", $1 }" </dev/null; }

_slug() { tr -cs 'A-Za-z0-9._-' '_' <<<"$1" | sed 's/_$//'; }

# _is_nats_bench CMD... is true for `nats bench ...`, whose stdout carries
# the stats that nats_bench_rate parses.
_is_nats_bench() { [[ $(basename -- "$1") == nats && ${2:-} == bench ]]; }

# _verdict RATIO sets VERDICT from the --max-ratio / --min-rate-ratio
# targets (time ratio at most MAX; rate ratio, the inverse, at least MIN).
_verdict() {
	local ratio=$1
	VERDICT=''
	if [[ -n $MAX_RATIO ]]; then
		if [[ $(_calc "($ratio <= $MAX_RATIO) ? \"OK\" : \"MISSED\"") == OK ]]; then
			VERDICT="target time ratio <= ${MAX_RATIO}x: OK"
		else
			VERDICT="target time ratio <= ${MAX_RATIO}x: MISSED"
		fi
	elif [[ -n $MIN_RATE_RATIO ]]; then
		if [[ $(_calc "(1 / $ratio >= $MIN_RATE_RATIO) ? \"OK\" : \"MISSED\"") == OK ]]; then
			VERDICT="target rate ratio >= ${MIN_RATE_RATIO}x: OK"
		else
			VERDICT="target rate ratio >= ${MIN_RATE_RATIO}x: MISSED"
		fi
	fi
}

# _record KIND NAME JETCTL NATS RATIO VERDICT appends one line to $RESULTS.
_record() {
	local IFS=$'\t'
	printf '%s\n' "$*" >>"$RESULTS"
}

_parse_opts() {
	RUNS=$1
	shift
	MAX_RATIO='' MIN_RATE_RATIO='' SETUP=''
	OPTS_USED=0
	while (($#)); do
		case $1 in
		--runs) RUNS=$2 ;;
		--max-ratio) MAX_RATIO=$2 ;;
		--min-rate-ratio) MIN_RATE_RATIO=$2 ;;
		--setup) SETUP=$2 ;;
		*) break ;;
		esac
		OPTS_USED=$((OPTS_USED + 2))
		shift 2
	done
	[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "--runs needs a positive integer, got '$RUNS'"
}

_fail_run() {
	local name=$1 side=$2 log=$3
	shift 3
	printf 'bench: error: %s: the %s command failed (exit %s): %s\n' "$name" "$side" "$RUN_RC" "$*" >&2
	tail -n 20 "$log" | sed 's/^/    /' >&2
	_record FAIL "$name" - - - "$side command failed (exit $RUN_RC)"
	return 1
}

# compare_rate [OPTIONS] NAME MSGS -- JETCTL-CMD... -- NATS-CMD...
#
# Runs the two commands alternately (jetctl first), --runs times each
# (default $BENCH_RUNS or 3), and prints for each side the median wall-clock
# time of one whole run, MSGS divided by it (msgs/s; MSGS "-" for a
# comparison that moves no counted messages), and the ratio jetctl/nats of
# the times (and of the rates, its inverse).
#
# Options: --runs N; --setup 'SHELL CODE', evaluated untimed before every
# timed run with BENCH_SIDE set to jetctl or nats (e.g. to purge a stream);
# --max-ratio X: target time ratio jetctl/nats <= X; --min-rate-ratio X:
# target rate ratio jetctl/nats >= X. A command can be a shell function
# (for pipelines). Stdout is discarded, except for `nats bench`, whose
# self-reported msgs/s (nats_bench_rate) is printed alongside.
compare_rate() {
	_parse_opts "${BENCH_RUNS:-3}" "$@"
	shift "$OPTS_USED"
	local name=$1 msgs=$2
	shift 2
	[[ $msgs == - || $msgs =~ ^[1-9][0-9]*$ ]] || die "compare_rate $name: MSGS must be a positive integer or -"
	_split_sides "$@"
	local slug i side log outf stat
	slug=$(_slug "$name")
	local -A times=([jetctl]=$LOGS/$slug.jetctl.us [nats]=$LOGS/$slug.nats.us)
	local -A cpus=([jetctl]=$LOGS/$slug.jetctl.cpu [nats]=$LOGS/$slug.nats.cpu)
	local -A scpus=([jetctl]=$LOGS/$slug.jetctl.scpu [nats]=$LOGS/$slug.nats.scpu)
	local c0 s0 c1 s1
	: >"${times[jetctl]}"
	: >"${times[nats]}"
	: >"${cpus[jetctl]}" >"${cpus[nats]}" >"${scpus[jetctl]}" >"${scpus[nats]}"
	if [[ $msgs == - ]]; then
		printf '\n== %s: %s runs each, interleaved; medians\n' "$name" "$RUNS"
	else
		printf '\n== %s: %s msgs, %s runs each, interleaved; medians\n' "$name" "$msgs" "$RUNS"
	fi
	[[ ! -r /proc/loadavg ]] || printf '   load average %s at the start\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
	for ((i = 1; i <= RUNS; i++)); do
		for side in jetctl nats; do
			local -a cmd
			if [[ $side == jetctl ]]; then cmd=("${SIDE_A[@]}"); else cmd=("${SIDE_B[@]}"); fi
			log=$LOGS/$slug.$side.log
			outf=/dev/null
			if _is_nats_bench "${cmd[@]}"; then outf=$LOGS/$slug.$side.out; fi
			if [[ -n $SETUP ]]; then
				BENCH_SIDE=$side eval "$SETUP" >>"$LOGS/$slug.setup.log" 2>&1 ||
					die "$name: --setup failed before the $side run (see $LOGS/$slug.setup.log)"
			fi
			_cpu_now
			c0=$CPU_US s0=$SERVER_CPU_US
			_run_timed "$outf" "$log" "${cmd[@]}"
			_cpu_now
			c1=$CPU_US s1=$SERVER_CPU_US
			((RUN_RC == 0)) || { _fail_run "$name" "$side" "$log" "${cmd[*]}"; return 1; }
			echo "$RUN_US" >>"${times[$side]}"
			echo $((c1 - c0)) >>"${cpus[$side]}"
			echo $((s1 - s0)) >>"${scpus[$side]}"
			if [[ $outf != /dev/null ]]; then cat "$outf" >>"$log"; fi
		done
	done
	local -A med
	for side in jetctl nats; do
		read -r _ stat _ _ < <(_stats "${times[$side]}")
		med[$side]=$stat
	done
	local ratio
	ratio=$(_calc "${med[jetctl]} / ${med[nats]}")
	for side in jetctl nats; do
		local secs rate='' self='' label
		secs=$(_calc "sprintf(\"%.4f\", ${med[$side]} / 1e6)")
		if [[ $msgs != - ]]; then rate=$(_calc "sprintf(\"%.0f msgs/s\", $msgs / (${med[$side]} / 1e6))"); fi
		if [[ $side == jetctl ]]; then label="${SIDE_A[*]}"; else label="${SIDE_B[*]}"; fi
		if [[ -s $LOGS/$slug.$side.out ]]; then
			self=$(nats_bench_rate "$LOGS/$slug.$side.out")
			[[ -z $self ]] || self="  (self-reported ${self} msgs/s, last run)"
		fi
		printf '   %-6s %9s s  %16s   %s%s\n' "$side" "$secs" "$rate" "$label" "$self"
	done
	if [[ $msgs != - ]]; then
		# CPU per message is robust to a busy machine, unlike the rates:
		# the command's (with its children) and the server's, medians, per
		# 1,000,000 messages.
		local cpu scpu line='   cpu   '
		for side in jetctl nats; do
			read -r _ cpu _ _ < <(_stats "${cpus[$side]}")
			read -r _ scpu _ _ < <(_stats "${scpus[$side]}")
			line+=$(_calc "sprintf(\" %s %.2f s + server %.2f s = %.2f s;\", \"$side\", $cpu / $msgs, $scpu / $msgs, ($cpu + $scpu) / $msgs)")
		done
		printf '%s per 1M msgs (medians)\n' "${line%;}"
	fi
	_verdict "$ratio"
	printf '   ratio  jetctl/nats: time %sx' "$(_calc "sprintf(\"%.2f\", $ratio)")"
	if [[ $msgs != - ]]; then printf ', rate %sx' "$(_calc "sprintf(\"%.2f\", 1 / $ratio)")"; fi
	printf '%s\n' "${VERDICT:+   $VERDICT}"
	_record compare "$name" "$(_calc "sprintf(\"%.4fs\", ${med[jetctl]} / 1e6)")" \
		"$(_calc "sprintf(\"%.4fs\", ${med[nats]} / 1e6)")" "$(_calc "sprintf(\"%.2f\", $ratio)")" "${VERDICT:--}"
}

# compare_startup [--max-ratio X] NAME RUNS -- JETCTL-CMD... -- NATS-CMD...
#
# Whole-process time of two short commands: after 5 untimed warm-up runs
# each, RUNS timed runs each, interleaved (the order alternating every
# round), stdout discarded. Prints the mean (and median, stddev) time per
# invocation and the ratio of the means jetctl/nats. With hyperfine on PATH
# (and BENCH_HYPERFINE not 0) hyperfine does the measuring instead; it runs
# the commands one after the other, not interleaved, and they must be
# programs, not shell functions.
compare_startup() {
	_parse_opts 1 "$@"
	shift "$OPTS_USED"
	local name=$1 runs=$2
	shift 2
	[[ $runs =~ ^[1-9][0-9]*$ ]] || die "compare_startup $name: RUNS must be a positive integer"
	_split_sides "$@"
	local slug log tool
	slug=$(_slug "$name")
	log=$LOGS/$slug.log
	: >"$log"
	local -A mean med sd
	if [[ ${BENCH_HYPERFINE:-1} != 0 ]] && command -v hyperfine >/dev/null; then
		tool=hyperfine
		_startup_hyperfine "$slug" "$runs" "$log" || return 1
	else
		tool="interleaved loop"
		_startup_loop "$name" "$slug" "$runs" "$log" || return 1
	fi
	printf '\n== startup %s: %s runs each (%s)\n' "$name" "$runs" "$tool"
	local side label
	for side in jetctl nats; do
		if [[ $side == jetctl ]]; then label="${SIDE_A[*]}"; else label="${SIDE_B[*]}"; fi
		printf '   %-6s %8s ms/run  (median %s, sd %s)   %s\n' "$side" \
			"$(_calc "sprintf(\"%.2f\", ${mean[$side]} / 1000)")" \
			"$(_calc "sprintf(\"%.2f\", ${med[$side]} / 1000)")" \
			"$(_calc "sprintf(\"%.2f\", ${sd[$side]} / 1000)")" "$label"
	done
	local ratio
	ratio=$(_calc "${mean[jetctl]} / ${mean[nats]}")
	_verdict "$ratio"
	printf '   ratio  jetctl/nats: %sx (means), %sx (medians)%s\n' \
		"$(_calc "sprintf(\"%.2f\", $ratio)")" \
		"$(_calc "sprintf(\"%.2f\", ${med[jetctl]} / ${med[nats]})")" "${VERDICT:+   $VERDICT}"
	_record startup "$name" "$(_calc "sprintf(\"%.2fms\", ${mean[jetctl]} / 1000)")" \
		"$(_calc "sprintf(\"%.2fms\", ${mean[nats]} / 1000)")" "$(_calc "sprintf(\"%.2f\", $ratio)")" "${VERDICT:--}"
}

# _startup_loop fills mean, med and sd (microseconds) by timing the commands
# in this shell.
_startup_loop() {
	local name=$1 slug=$2 runs=$3 log=$4 i side first second
	local -A times=([jetctl]=$LOGS/$slug.jetctl.us [nats]=$LOGS/$slug.nats.us)
	: >"${times[jetctl]}"
	: >"${times[nats]}"
	for ((i = 0; i < 5; i++)); do
		_run_timed /dev/null "$log" "${SIDE_A[@]}"
		((RUN_RC == 0)) || { _fail_run "$name" jetctl "$log" "${SIDE_A[*]}"; return 1; }
		_run_timed /dev/null "$log" "${SIDE_B[@]}"
		((RUN_RC == 0)) || { _fail_run "$name" nats "$log" "${SIDE_B[*]}"; return 1; }
	done
	# Times are collected in arrays and written once, so that the loop
	# forks only the commands under test.
	local -a ta=() tb=()
	for ((i = 0; i < runs; i++)); do
		if ((i % 2)); then first=nats second=jetctl; else first=jetctl second=nats; fi
		for side in "$first" "$second"; do
			if [[ $side == jetctl ]]; then
				_run_timed /dev/null "$log" "${SIDE_A[@]}"
				((RUN_RC == 0)) || { _fail_run "$name" jetctl "$log" "${SIDE_A[*]}"; return 1; }
				ta+=("$RUN_US")
			else
				_run_timed /dev/null "$log" "${SIDE_B[@]}"
				((RUN_RC == 0)) || { _fail_run "$name" nats "$log" "${SIDE_B[*]}"; return 1; }
				tb+=("$RUN_US")
			fi
		done
	done
	printf '%s\n' "${ta[@]}" >"${times[jetctl]}"
	printf '%s\n' "${tb[@]}" >"${times[nats]}"
	for side in jetctl nats; do
		read -r "mean[$side]" "med[$side]" "sd[$side]" _ < <(_stats "${times[$side]}")
	done
}

# _startup_hyperfine fills mean, med and sd (microseconds) from hyperfine's
# CSV export (command,mean,stddev,median,user,system,min,max in seconds).
_startup_hyperfine() {
	local slug=$1 runs=$2 log=$3 csv a b
	csv=$LOGS/$slug.hyperfine.csv
	a=$(printf '%q ' "${SIDE_A[@]}")
	b=$(printf '%q ' "${SIDE_B[@]}")
	a=${a% } b=${b% }
	if ! hyperfine --shell=none --warmup 5 --runs "$runs" --style basic \
		--export-csv "$csv" "$a" "$b" >>"$log" 2>&1; then
		printf 'bench: error: hyperfine failed:\n' >&2
		tail -n 20 "$log" | sed 's/^/    /' >&2
		_record FAIL "$slug" - - - "hyperfine failed"
		return 1
	fi
	local -a rows
	mapfile -t rows < <(tail -n +2 "$csv" | awk -F, '{ printf "%.1f %.1f %.1f\n", $(NF-6) * 1e6, $(NF-4) * 1e6, $(NF-5) * 1e6 }')
	((${#rows[@]} == 2)) || die "unexpected hyperfine output in $csv"
	read -r "mean[jetctl]" "med[jetctl]" "sd[jetctl]" <<<"${rows[0]}"
	read -r "mean[nats]" "med[nats]" "sd[nats]" <<<"${rows[1]}"
}

# ---------------------------------------------------------------------------
# natscli helpers

# nats_bench_rate FILE prints the msgs/s that `nats bench` reported in FILE
# (its stdout): the aggregated figure when there were several clients,
# digits only; nothing if there is none.
nats_bench_rate() {
	grep -Eo 'stats: [0-9,]+ msgs/sec' "$1" | tail -n 1 | tr -cd '0-9'
}

# baseline_nats_bench NAME MSGS -- nats bench ARGS... runs one natscli
# benchmark that has no jetctl counterpart yet, and prints and records its
# self-reported rate and wall-clock time. Add --msgs and --no-progress
# yourself; MSGS is what you passed to --msgs.
baseline_nats_bench() {
	local name=$1 msgs=$2 slug log out rate
	shift 2
	[[ ${1:-} == -- ]] || die "baseline_nats_bench $name: expected '-- nats bench ...'"
	shift
	slug=$(_slug "$name")
	log=$LOGS/$slug.nats.log out=$LOGS/$slug.nats.out
	_run_timed "$out" "$log" "$@"
	cat "$out" >>"$log"
	((RUN_RC == 0)) || { _fail_run "$name" nats "$log" "$*"; return 1; }
	rate=$(nats_bench_rate "$out")
	printf '\n== %s: %s msgs, nats only (no jetctl counterpart yet)\n' "$name" "$msgs"
	printf '   %-6s %9s s  %16s   %s  (self-reported %s msgs/s)\n' nats \
		"$(_calc "sprintf(\"%.4f\", $RUN_US / 1e6)")" \
		"$(_calc "sprintf(\"%.0f msgs/s\", $msgs / ($RUN_US / 1e6))")" "$*" "${rate:-?}"
	_record baseline "$name" - "${rate:-?} msgs/s" - -
}

# print_summary prints every result recorded in this run.
print_summary() {
	[[ -s $RESULTS ]] || return 0
	printf '\n== summary (ratios jetctl/nats; time: lower is better for jetctl)\n'
	awk -F'\t' '{
		line = sprintf("   %-8s %-34s %14s %14s %7s  %s", $1, $2, $3, $4, ($5 == "-" ? "-" : $5 "x"), ($6 == "-" ? "" : $6))
		sub(/ +$/, "", line); print line
	}' "$RESULTS"
}
