#!/bin/sh
# The filesystem behaviour suite on a one-node Ceph RGW (tests/s3server/rgw.sh):
# fs_s3.sh with the other server.
OBJFS_TEST_S3_SERVER=rgw
export OBJFS_TEST_S3_SERVER
exec sh "${OBJFS_SRCDIR:-$(dirname "$0")/../..}/tests/integration/fs_s3.sh" "$@"
