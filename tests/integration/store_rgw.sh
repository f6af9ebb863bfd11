#!/bin/sh
# The backend against a one-node Ceph RGW (tests/s3server/rgw.sh): store_s3.sh
# with the other server.
OBJFS_TEST_S3_SERVER=rgw
export OBJFS_TEST_S3_SERVER
exec sh "${OBJFS_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/integration/store_s3.sh" "$@"
