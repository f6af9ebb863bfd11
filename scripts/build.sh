#!/bin/sh
# Configures and builds objfs in the source tree.  Extra arguments go to
# ./configure (for example --enable-sanitize).
set -eu
cd "$(dirname "$0")/.."
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ]; then
	autoreconf -fi >/dev/null
fi
./configure -q --enable-Werror "$@"
make -j"$(nproc)" >/dev/null
echo "build: objfs-csi and objfs-mount built in $(pwd)"
