#!/bin/sh
# The test command: installs every dependency, builds, runs `make check`
# (cmocka unit tests, integration tests against a real S3 server, real FUSE
# mounts and real gRPC), and prints 'N passed, N failed'.
#   OBJFS_SANITIZE=1 scripts/test.sh   builds with ASan + UBSan
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh --test
if [ "${OBJFS_SANITIZE:-0}" = 1 ]; then
	sh scripts/build.sh --enable-sanitize
else
	sh scripts/build.sh
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
pass=$(cat $(find . -name '*.trs') 2>/dev/null | grep -c '^:test-result: PASS' || true)
fail=$(cat $(find . -name '*.trs') 2>/dev/null | grep -cE '^:test-result: (FAIL|ERROR|XPASS)' || true)
skip=$(cat $(find . -name '*.trs') 2>/dev/null | grep -c '^:test-result: SKIP' || true)
echo "tests: $pass passed, $fail failed, $skip skipped"
exit "$rc"
