#!/bin/sh
# The test command: installs every dependency, builds, runs `make check`
# (cmocka unit tests, integration tests against a real S3 server, real FUSE
# mounts and real gRPC, the fuzz targets' corpora and regression inputs),
# then every libFuzzer target for OBJFS_FUZZ_SECONDS (default 15) each when
# clang is there (scripts/fuzz.sh; a finding fails the run), and prints
# 'N passed, N failed'.
#   OBJFS_SANITIZE=1 scripts/test.sh   builds with ASan + UBSan
#   OBJFS_FUZZ_SECONDS=0 scripts/test.sh   no fuzzing
#   OBJFS_PRESSURE=N scripts/test.sh   the whole suite with N busy loops
#                                      beside it (the CPUs oversubscribed,
#                                      the S3 servers starved: a node's bad
#                                      day); 0 by default
# Whatever OBJFS_PRESSURE says, the filesystem suite on the local store runs
# once more with 2 busy loops per core beside it (OBJFS_PRESSURE_FS=0: not):
# no test may depend on a quiet machine.
set -eu
cd "$(dirname "$0")/.."
# Never the real EC2 instance metadata (169.254.169.254): without keys,
# objfs's credential chain ends there unless told not to, as the AWS SDKs'
# does (the IMDS tests use a fake server on 127.0.0.1).
export AWS_EC2_METADATA_DISABLED=true
sh scripts/install-deps.sh --test
fuzz_secs=${OBJFS_FUZZ_SECONDS:-15}
fuzz_opt=""
if [ "$fuzz_secs" != 0 ] && { command -v clang >/dev/null || command -v clang-14 >/dev/null; }; then
	fuzz_opt=--enable-fuzz
fi
if [ "${OBJFS_SANITIZE:-0}" = 1 ]; then
	sh scripts/build.sh --enable-sanitize $fuzz_opt
else
	sh scripts/build.sh $fuzz_opt
fi
# busy loops at the tests' own priority, ended with this script
busy_pids=""
busy_start() {
	i=0
	while [ "$i" -lt "$1" ]; do
		sh -c 'while :; do :; done' &
		busy_pids="$busy_pids $!"
		i=$((i + 1))
	done
}
busy_stop() {
	# (a loop already gone is no error: this runs under set -e)
	[ -z "$busy_pids" ] || kill $busy_pids 2>/dev/null || true
	busy_pids=""
}
trap busy_stop EXIT
trap 'busy_stop; exit 1' INT TERM
rc=0
busy_start "${OBJFS_PRESSURE:-0}"
make -j2 check >make-check.out 2>&1 || rc=$?
busy_stop
grep -E '^(PASS|FAIL|ERROR|SKIP|XFAIL|XPASS):' make-check.out || true
if [ "$rc" != 0 ]; then
	tail -n 40 make-check.out
	for log in $(grep -lE '^:test-result: (FAIL|ERROR)' $(find . -name '*.trs') 2>/dev/null); do
		echo "==== ${log%.trs}.log"
		tail -n 80 "${log%.trs}.log"
	done
fi
pressure_fs=${OBJFS_PRESSURE_FS:-$((2 * $(nproc)))}
if [ "$pressure_fs" != 0 ]; then
	# the filesystem suite again, the CPUs oversubscribed; both results
	# are counted below (the quiet run's is kept aside meanwhile)
	cp tests/integration/fs_local.trs fs_local.trs.quiet 2>/dev/null || true
	busy_start "$pressure_fs"
	echo "pressure: tests/integration/fs_local.sh with $pressure_fs busy loops"
	make -j1 check TESTS=tests/integration/fs_local.sh \
		TEST_SUITE_LOG=pressure-suite.log >make-check-pressure.out 2>&1 || rc=$?
	busy_stop
	grep -E '^(PASS|FAIL|ERROR|SKIP|XFAIL|XPASS):' make-check-pressure.out |
		sed 's/^/pressure /' || true
	if grep -qE '^(FAIL|ERROR):' make-check-pressure.out; then
		tail -n 80 tests/integration/fs_local.log
	fi
	mv tests/integration/fs_local.trs tests/integration/fs_local-pressure.trs 2>/dev/null || true
	mv fs_local.trs.quiet tests/integration/fs_local.trs 2>/dev/null || true
fi
if [ -n "$fuzz_opt" ]; then
	sh scripts/fuzz.sh -t "$fuzz_secs" || rc=1
else
	echo "fuzz: skipped (no clang, or OBJFS_FUZZ_SECONDS=0)"
fi
pass=$(cat $(find . -name '*.trs') 2>/dev/null | grep -c '^:test-result: PASS' || true)
fail=$(cat $(find . -name '*.trs') 2>/dev/null | grep -cE '^:test-result: (FAIL|ERROR|XPASS)' || true)
skip=$(cat $(find . -name '*.trs') 2>/dev/null | grep -c '^:test-result: SKIP' || true)
echo "tests: $pass passed, $fail failed, $skip skipped"
exit "$rc"
