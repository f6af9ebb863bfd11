#!/bin/sh
# store_s3.sh - the backend against a real S3 server on 127.0.0.1, started
# here and stopped on exit whatever happens: OBJFS_TEST_S3_SERVER names its
# script in tests/s3server/ (swift, the default: OpenStack Swift with s3api;
# rgw: Ceph RGW, see store_rgw.sh).  Runs against it:
#   - the behaviour suite (tests/unit/test_store_behaviour, OBJFS_TEST_STORE=s3),
#     the same checks the local store passes;
#   - the S3 leaf's live checks (tests/unit/test_s3_store): a wrong secret key
#     is EACCES (both servers verify SigV4 signatures), odd keys round-trip,
#     conditional requests, UploadPartCopy, a small connection pool shared by
#     many threads; again with virtual-hosted addressing where the server
#     offers it (RGW: OBJFS_TEST_S3_VHOST_ENDPOINT, BUCKET.s3.localhost).
# Skips (77) only when the server is not installed.
set -eu

B=${OBJFS_BUILDDIR:-$(pwd)}
S=${OBJFS_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
SERVER=${OBJFS_TEST_S3_SERVER:-swift}
SH="$S/tests/s3server/$SERVER.sh"

if ! sh "$SH" installed; then
	echo "store_s3: $SERVER not installed: skipped"
	exit 77
fi
for t in test_store_behaviour test_s3_store; do
	if [ ! -x "$B/tests/unit/$t" ]; then
		echo "store_s3: $B/tests/unit/$t not built (cmocka missing?)" >&2
		exit 1
	fi
done

W=$(mktemp -d "${TMPDIR:-/tmp}/objfs-$SERVER-XXXXXX")
cleanup() {
	sh "$SH" stop "$W" || true
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

t0=$(date +%s)
sh "$SH" start "$W"
echo "$SERVER started in $(($(date +%s) - t0)) s"
set -a
. "$W/env"
set +a

# The timeouts are hang guards, far above a run on a starved server (the
# behaviour suite writes 4,000 objects: 600 s was once too short for Swift
# beside a whole-suite run with busy loops, load average 30).
guarded() {
	_secs=$1
	shift
	timeout "$_secs" "$@"
	_r=$?
	[ $_r -ne 124 ] || echo "store_s3: ${1##*/} did not end within $_secs s: killed"
	return $_r
}
rc=0
echo "== behaviour suite against $SERVER"
OBJFS_TEST_STORE=s3 guarded 1500 "$B/tests/unit/test_store_behaviour" || rc=1
echo "== S3 leaf live checks against $SERVER"
guarded 900 "$B/tests/unit/test_s3_store" || rc=1
if [ -n "${OBJFS_TEST_S3_VHOST_ENDPOINT:-}" ]; then
	echo "== S3 leaf live checks against $SERVER, virtual-hosted addressing"
	OBJFS_TEST_S3_ADDRESSING=virtual guarded 900 "$B/tests/unit/test_s3_store" || rc=1
fi
if [ $rc -ne 0 ]; then
	for log in "$W/log/proxy-server.log" "$W/log/client.rgw.a.log"; do
		[ -f "$log" ] || continue
		echo "== $log (tail)"
		tail -n 40 "$log" || true
	done
fi
exit $rc
