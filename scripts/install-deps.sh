#!/bin/sh
# Installs what objfs needs from Debian 12 packages (run as root).
#   install-deps.sh          build and run
#   install-deps.sh --test   also everything `make check` and bench/ use
set -eu

BUILD="autoconf automake pkg-config make gcc libc6-dev
  libfuse3-dev fuse3 libcurl4-openssl-dev libssl-dev
  libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev
  libgrpc-dev libexpat1-dev libjson-c-dev ca-certificates"
# cmocka: unit tests.  python3-grpcio/-grpc-tools: an independent gRPC
# client for the CSI tests.  swift*: the real S3 server of the tests
# (OpenStack Swift with s3api, which checks SigV4 signatures); ceph-*,
# radosgw: the second one, a one-node Ceph RGW (tests/s3server/rgw.sh).
# s3fs/rclone: peers measured by bench/; fio, sqlite3: bench/series.sh's
# random reads and database.  psmisc: fuser for mount tests.
# golang + sprig + yaml sources: render the Helm chart with the template
# engine Helm uses (tests/helm), offline.  clang-14, libclang-rt-14-dev
# (libFuzzer and the sanitizer runtimes), llvm-14 (llvm-symbolizer for
# readable stacks): the fuzz targets CI runs (scripts/fuzz.sh).
# prometheus: the real server
# that scrapes objfs-csi and objfs-mount in tests/integration/metrics.py
# (and its promtool checks every exposition).  rsync: `rsync -aH` of a tree
# with hard links onto a mount and back (fs_suite.py t_hardlink_rsync).
TEST="libcmocka-dev python3 python3-grpcio python3-grpc-tools python3-protobuf
  swift swift-proxy swift-object swift-container swift-account python3-swift
  memcached python3-memcache ceph-mon ceph-osd radosgw ceph-common
  curl s3fs rclone fio sqlite3 psmisc util-linux procps rsync
  attr file prometheus
  golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v2-dev
  golang-gopkg-yaml.v3-dev
  clang-14 libclang-rt-14-dev llvm-14"

pkgs="$BUILD"
if [ "${1:-}" = "--test" ]; then
	pkgs="$BUILD $TEST"
fi

missing=""
for p in $pkgs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
	echo "install-deps: all packages present"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages:$missing (run as root, or: sudo apt-get install$missing)" >&2
	exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
echo "install-deps: done"
