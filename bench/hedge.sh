#!/bin/sh
# bench/hedge.sh - a cold read of SIZE_MB MiB through a proxy that stalls
# one ranged GET in ten (after a random number of its bytes, for good:
# only the stall timeout or a hedge ends it), against the same read with
# no stall, with and without hedged GETs (hedge_after=0).  All three go
# through the same proxy (tests/integration/faultproxy.py) to a one-node
# S3 server started here (tests/s3server/$OBJFS_BENCH_SERVER.sh: swift,
# the default, or rgw).  Each is RUNS fresh mounts, median printed.  Run
# by hand as root from a build tree:  sh bench/hedge.sh
# (never part of make check).  Goal (issue 12): stalled <= 2x fault-free.
set -eu
SIZE_MB=${SIZE_MB:-256}
RUNS=${RUNS:-3}
HERE=$(cd "$(dirname "$0")/.." && pwd)
SERVER=${OBJFS_BENCH_SERVER:-swift}
B=${OBJFS_BUILDDIR:-$HERE}
MOUNT=$B/objfs-mount
TOOL=$B/tests/integration/objfs-store-tool
PY=/usr/bin/python3
[ "$(id -u)" -eq 0 ] || { echo "bench/hedge.sh: run as root" >&2; exit 1; }
[ -x "$MOUNT" ] && [ -x "$TOOL" ] || { echo "bench/hedge.sh: build first (make)" >&2; exit 1; }
W=$(mktemp -d /tmp/objfs-bench-hedge.XXXXXX)
PIDS=""
cleanup() {
	mountpoint -q "$W/mnt" 2>/dev/null && { fusermount3 -u "$W/mnt" 2>/dev/null || umount -l "$W/mnt" || true; }
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	timeout 60 sh "$HERE/tests/s3server/$SERVER.sh" stop "$W/s3" >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
mkdir -p "$W/s3" "$W/mnt"
timeout 120 sh "$HERE/tests/s3server/$SERVER.sh" start "$W/s3" >/dev/null
. "$W/s3/env"
export AWS_REGION="$OBJFS_TEST_S3_REGION" AWS_ENDPOINT_URL="$OBJFS_TEST_S3_ENDPOINT"
export AWS_ACCESS_KEY_ID="$OBJFS_TEST_S3_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$OBJFS_TEST_S3_SECRET_KEY"
HOSTPORT=${OBJFS_TEST_S3_ENDPOINT#http://}
URL=s3://$OBJFS_TEST_S3_BUCKET/hedge-bench
head -c $((SIZE_MB << 20)) /dev/urandom > "$W/data"
"$TOOL" "$URL" put big < "$W/data"
SUM=$(md5sum < "$W/data")
rm -f "$W/data"
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# one_read P OPTS: a cold read through a proxy stalling share P of GETs
one_read() {
	rm -f "$W/port"
	"$PY" "$HERE/tests/integration/faultproxy.py" "${HOSTPORT%:*}" "${HOSTPORT##*:}" "$1" "$W/port" &
	PPID_=$!
	PIDS="$PIDS $PPID_"
	while [ ! -s "$W/port" ]; do sleep 0.05; done
	"$MOUNT" -f -o "spool_dir=$W,log_level=warn,endpoint=http://127.0.0.1:$(head -1 "$W/port")$2" \
		"$URL" "$W/mnt" 2>>"$W/log" &
	MPID=$!
	PIDS="$PIDS $MPID"
	i=0
	until mountpoint -q "$W/mnt"; do
		sleep 0.05; i=$((i + 1)); [ $i -lt 400 ] || { cat "$W/log"; exit 1; }
	done
	sync; echo 3 > /proc/sys/vm/drop_caches
	t0=$(now)
	got=$(md5sum < "$W/mnt/big")
	t1=$(now)
	[ "$got" = "$SUM" ] || { echo "bench/hedge.sh: wrong bytes read" >&2; exit 1; }
	fusermount3 -u "$W/mnt"
	wait "$MPID"
	kill "$PPID_"
	wait "$PPID_" || true
	echo "$t1 - $t0" | bc
	tail -1 "$W/port" >> "$W/gets"
}

for run in $(seq "$RUNS"); do
	one_read 0 "" >> "$W/clean"
	one_read 0.1 "" >> "$W/hedged"
	one_read 0.1 ",hedge_after=0" >> "$W/unhedged"
done
c=$(median < "$W/clean"); h=$(median < "$W/hedged"); u=$(median < "$W/unhedged")
stalls=$(awk '{s += $2} END {print s}' "$W/gets")
echo "cold read of $SIZE_MB MiB through the proxy, median of $RUNS ($stalls stalled GETs in all):"
printf '  no stall                        %6.2f s\n' "$c"
printf '  1 GET in 10 stalled, hedged     %6.2f s  (%.2fx)\n' "$h" "$(echo "$h / $c" | bc -l)"
printf '  1 GET in 10 stalled, no hedging %6.2f s  (%.2fx; stall_timeout 3 s)\n' "$u" "$(echo "$u / $c" | bc -l)"
