#!/bin/sh
# The CSI controller integration tests (csi_controller.py) on a one-node
# Ceph RGW (tests/s3server/rgw.sh) instead of Swift.
: "${OBJFS_SRCDIR:=$(dirname "$0")/../..}"
: "${PYTHON3:=/usr/bin/python3}"
OBJFS_TEST_S3_SERVER=rgw
export OBJFS_TEST_S3_SERVER
exec "$PYTHON3" "$OBJFS_SRCDIR/tests/integration/csi_controller.py" "$@"
