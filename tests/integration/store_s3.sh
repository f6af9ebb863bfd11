#!/bin/sh
# store_s3.sh - the backend against a real S3 server (Swift + s3api).
#
# Starts a one-node Swift (tests/s3server/swift.sh, stopped on exit whatever
# happens), then runs against it:
#   - the behaviour suite (tests/unit/test_store_behaviour, OBJFS_TEST_STORE=s3),
#     the same checks the local store passes;
#   - the S3 leaf's live checks (tests/unit/test_s3_store): a wrong secret key
#     is EACCES (Swift verifies SigV4 signatures), odd keys round-trip, a
#     small connection pool shared by many threads.
# Skips (77) only when Swift is not installed.
set -eu

B=${OBJFS_BUILDDIR:-$(pwd)}
S=${OBJFS_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}

if [ ! -x /usr/bin/swift-proxy-server ] || [ ! -x /usr/bin/memcached ]; then
	echo "store_s3: Swift (swift-proxy, memcached) not installed: skipped"
	exit 77
fi
for t in test_store_behaviour test_s3_store; do
	if [ ! -x "$B/tests/unit/$t" ]; then
		echo "store_s3: $B/tests/unit/$t not built (cmocka missing?)" >&2
		exit 1
	fi
done

W=$(mktemp -d "${TMPDIR:-/tmp}/objfs-swift-XXXXXX")
cleanup() {
	sh "$S/tests/s3server/swift.sh" stop "$W" || true
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

sh "$S/tests/s3server/swift.sh" start "$W"
set -a
. "$W/env"
set +a

rc=0
echo "== behaviour suite against Swift"
OBJFS_TEST_STORE=s3 timeout 600 "$B/tests/unit/test_store_behaviour" || rc=1
echo "== S3 leaf live checks against Swift"
timeout 300 "$B/tests/unit/test_s3_store" || rc=1
if [ $rc -ne 0 ]; then
	echo "== proxy log (tail)"
	tail -n 40 "$W/log/proxy-server.log" || true
fi
exit $rc
