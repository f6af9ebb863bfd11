#!/bin/sh
# The test command: installs every dependency, builds, runs `make check`
# (cmocka unit tests, integration tests against a real S3 server, real FUSE
# mounts and real gRPC, the fuzz targets' corpora and regression inputs),
# then every libFuzzer target for OBJFS_FUZZ_SECONDS (default 15) each when
# clang is there (scripts/fuzz.sh; a finding fails the run), and prints
# 'N passed, N failed'.
#   OBJFS_SANITIZE=1 scripts/test.sh   builds with ASan + UBSan
#   OBJFS_FUZZ_SECONDS=0 scripts/test.sh   no fuzzing
set -eu
cd "$(dirname "$0")/.."
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
rc=0
make -j2 check >make-check.out 2>&1 || rc=$?
grep -E '^(PASS|FAIL|ERROR|SKIP|XFAIL|XPASS):' make-check.out || true
if [ "$rc" != 0 ]; then
	tail -n 40 make-check.out
	for log in $(grep -lE '^:test-result: (FAIL|ERROR)' $(find . -name '*.trs') 2>/dev/null); do
		echo "==== ${log%.trs}.log"
		tail -n 80 "${log%.trs}.log"
	done
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
