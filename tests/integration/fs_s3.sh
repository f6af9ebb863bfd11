#!/bin/sh
# The filesystem behaviour suite on a real S3 server on 127.0.0.1, started
# here and stopped on exit: OBJFS_TEST_S3_SERVER names its script in
# tests/s3server/ (swift, the default: OpenStack Swift with s3api; rgw: Ceph
# RGW, see fs_rgw.sh).  Needs root, /dev/fuse and the server's packages
# (skips with 77 only when one of them is absent).
set -u
: "${OBJFS_SRCDIR:=$(dirname "$0")/../..}"
: "${PYTHON3:=/usr/bin/python3}"
SERVER=${OBJFS_TEST_S3_SERVER:-swift}
SH="$OBJFS_SRCDIR/tests/s3server/$SERVER.sh"
if [ "$(id -u)" -ne 0 ] || [ ! -e /dev/fuse ]; then
	echo "SKIP: needs root and /dev/fuse"
	exit 77
fi
if ! sh "$SH" installed; then
	echo "SKIP: $SERVER not installed"
	exit 77
fi
W=$(mktemp -d "/tmp/objfs-fs-$SERVER.XXXXXX")
cleanup() {
	timeout 60 sh "$SH" stop "$W" || true
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
t0=$(date +%s)
timeout 120 sh "$SH" start "$W" || exit 1
echo "$SERVER started in $(($(date +%s) - t0)) s"
. "$W/env"
export OBJFS_TEST_S3_ENDPOINT OBJFS_TEST_S3_REGION OBJFS_TEST_S3_BUCKET \
	OBJFS_TEST_S3_ACCESS_KEY OBJFS_TEST_S3_SECRET_KEY
timeout -k 10 1600 "$PYTHON3" "$OBJFS_SRCDIR/tests/integration/fs_suite.py" s3 "$@"
