#!/bin/sh
# The filesystem behaviour suite on the local directory store (file://).
# Needs root and /dev/fuse (skips with 77 only when they are absent).
set -u
: "${OBJFS_SRCDIR:=$(dirname "$0")/../..}"
: "${PYTHON3:=/usr/bin/python3}"
exec timeout -k 10 1500 "$PYTHON3" "$OBJFS_SRCDIR/tests/integration/fs_suite.py" local "$@"
