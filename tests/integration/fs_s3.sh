#!/bin/sh
# The filesystem behaviour suite on a real S3 server: a one-node OpenStack
# Swift with s3api on 127.0.0.1 (tests/s3server/swift.sh), stopped on exit.
# Needs root, /dev/fuse and the Swift packages (skips with 77 only when one
# of them is absent).
set -u
: "${OBJFS_SRCDIR:=$(dirname "$0")/../..}"
: "${PYTHON3:=/usr/bin/python3}"
if [ "$(id -u)" -ne 0 ] || [ ! -e /dev/fuse ]; then
	echo "SKIP: needs root and /dev/fuse"
	exit 77
fi
if ! command -v swift-proxy-server >/dev/null 2>&1 || ! command -v memcached >/dev/null 2>&1; then
	echo "SKIP: OpenStack Swift (swift-proxy, memcached) not installed"
	exit 77
fi
W=$(mktemp -d /tmp/objfs-fs-s3.XXXXXX)
cleanup() {
	timeout 60 sh "$OBJFS_SRCDIR/tests/s3server/swift.sh" stop "$W" || true
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
timeout 120 sh "$OBJFS_SRCDIR/tests/s3server/swift.sh" start "$W" || exit 1
. "$W/env"
export OBJFS_TEST_S3_ENDPOINT OBJFS_TEST_S3_REGION OBJFS_TEST_S3_BUCKET \
	OBJFS_TEST_S3_ACCESS_KEY OBJFS_TEST_S3_SECRET_KEY
timeout -k 10 1200 "$PYTHON3" "$OBJFS_SRCDIR/tests/integration/fs_suite.py" s3 "$@"
