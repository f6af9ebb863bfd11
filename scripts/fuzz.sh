#!/bin/sh
# Runs the libFuzzer targets of tests/fuzz (docs/fuzzing.md) for as long as
# wanted, one after the other, and prints per target: executions per second,
# executions, coverage (libFuzzer's cov: edges, ft: features) and findings.
#
#   scripts/fuzz.sh [-t SECONDS] [-j JOBS] [TARGET...]
#     -t SECONDS  per target (default 60); CI runs -t 15
#     -j JOBS     libFuzzer workers per target (default 1)
#     TARGET      s3_xml, csi, ... (default: every target)
#
# Builds fuzz-build/fuzz_* first (configure --enable-fuzz, keeping the
# options the tree was configured with; the ordinary build is untouched).
# The corpus grows in fuzz-build/corpus/TARGET (seeded from
# tests/fuzz/corpus/TARGET); a finding is written to
# fuzz-build/findings/TARGET-crash-... and makes the script exit 1.
# Reproduce one with `fuzz-build/fuzz_TARGET FILE` (or, without clang,
# `tests/fuzz/fuzz_TARGET FILE`); then copy it to tests/fuzz/regress/TARGET/
# so that `make check` runs it from then on.
set -eu
cd "$(dirname "$0")/.."
secs=60
jobs=1
while getopts t:j: opt; do
	case $opt in
	t) secs=$OPTARG ;;
	j) jobs=$OPTARG ;;
	*) echo "usage: $0 [-t SECONDS] [-j JOBS] [TARGET...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))

if ! [ -f Makefile ] || ! grep -q '^fuzz-build/libobjfs-fuzz.a:' Makefile; then
	args=""
	if [ -x config.status ]; then
		args=$(./config.status --config | sed "s/'//g")
	fi
	# shellcheck disable=SC2086
	sh scripts/build.sh $args --enable-fuzz
fi
make -j2 fuzz >/dev/null

targets="$*"
if [ -z "$targets" ]; then
	targets=$(make -s fuzz-targets)
fi
mkdir -p fuzz-build/findings fuzz-build/logs
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
printf '%-16s %10s %12s %8s %8s %s\n' target exec/s execs cov ft result
failed=""
for t in $targets; do
	bin=fuzz-build/fuzz_$t
	corpus=fuzz-build/corpus/$t
	log=fuzz-build/logs/$t.log
	mkdir -p "$corpus"
	rc=0
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -jobs="$jobs" -workers="$jobs" \
		-artifact_prefix="fuzz-build/findings/$t-" \
		"$corpus" "tests/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
	if [ "$jobs" -gt 1 ]; then
		cat fuzz-*.log >>"$log" 2>/dev/null || true
		rm -f fuzz-*.log
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | awk '{s+=$1} END {print s+0}')
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | awk '{s+=$1} END {print s+0}')
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	result=ok
	if [ "$rc" != 0 ]; then
		result="FINDING (see $log)"
		failed="$failed $t"
	fi
	printf '%-16s %10s %12s %8s %8s %s\n' "$t" "$rate" "$execs" "${cov:-?}" "${ft:-?}" "$result"
done
if [ -n "$failed" ]; then
	echo "fuzz: findings in:$failed" >&2
	for t in $failed; do
		echo "==== $t" >&2
		grep -E 'ERROR|property violated|SUMMARY|Test unit written|runtime error' \
			"fuzz-build/logs/$t.log" | head -n 20 >&2
	done
	exit 1
fi
echo "fuzz: no findings"
