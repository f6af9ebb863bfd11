#!/bin/sh
# Container emulation of the node's mounts (tests/integration/holder_ns.py):
# objfs-holder and objfs-csi in their own pid and mount namespaces, a pod in
# a third, on the local store and on a real S3 server on 127.0.0.1
# (OBJFS_TEST_S3_SERVER, tests/s3server/: swift by default), started here
# and stopped on exit.  The whole test runs in a private mount namespace
# (the "host"): nothing it mounts is left behind.  Needs root, /dev/fuse,
# unshare (util-linux) and the server's packages (skips with 77 only when
# one of them is absent).
set -u
: "${OBJFS_SRCDIR:=$(dirname "$0")/../..}"
: "${PYTHON3:=/usr/bin/python3}"
SERVER=${OBJFS_TEST_S3_SERVER:-swift}
SH="$OBJFS_SRCDIR/tests/s3server/$SERVER.sh"
PY="$OBJFS_SRCDIR/tests/integration/holder_ns.py"
if [ "$(id -u)" -ne 0 ] || [ ! -e /dev/fuse ] || ! command -v unshare >/dev/null; then
	echo "SKIP: needs root, /dev/fuse and unshare"
	exit 77
fi
if ! sh "$SH" installed; then
	echo "SKIP: $SERVER not installed"
	exit 77
fi
W=$(mktemp -d "/tmp/objfs-holder.XXXXXX")
chmod 711 "$W"   # the check of a peer that is not root needs a path to the socket
cleanup() {
	timeout 60 sh "$SH" stop "$W/s3" || true
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
rc=0
mkdir "$W/local" "$W/s3"
OBJFS_HOLDER_WORK="$W/local" timeout -k 10 300 \
	unshare --mount --propagation private "$PYTHON3" "$PY" local || rc=1
timeout 120 sh "$SH" start "$W/s3" || exit 1
. "$W/s3/env"
export OBJFS_TEST_S3_ENDPOINT OBJFS_TEST_S3_REGION OBJFS_TEST_S3_BUCKET \
	OBJFS_TEST_S3_ACCESS_KEY OBJFS_TEST_S3_SECRET_KEY
mkdir "$W/s3/work"
OBJFS_HOLDER_WORK="$W/s3/work" timeout -k 10 300 \
	unshare --mount --propagation private "$PYTHON3" "$PY" s3 || rc=1
exit $rc
