#!/bin/sh
# bench/fs.sh - objfs-mount against s3fs and rclone on the same S3 server
# (a one-node server started here with tests/s3server/$OBJFS_BENCH_SERVER.sh:
# swift, the default, or rgw; or the one described by
# OBJFS_BENCH_S3_ENV=path/to/env).  Run by hand as root from a
# build tree:  sh bench/fs.sh   (never part of make check).
#
# Measured per filesystem:
#   write    sequential write of SIZE_MB MiB, until the object is in the store
#            (rclone uploads after close: we wait for the object)
#   read     cold read of it on a fresh mount (page cache dropped)
#   reread   the same read again (cached)
#   create   FILES files of 4 KiB, until all are in the store
#   ls -l    `ls -l` of a directory of LS_FILES objects on a fresh mount
#   VmHWM    peak resident memory of the mount process over all of the above
#   cpu      CPU time (user + system) of the mount processes over all of the
#            above: less sensitive than the times to a busy machine
# and, for the cold-read target, one curl GET of objfs's object (same server).
#
# Smaller runs: SIZE_MB=256 FILES=200 LS_FILES=2000 sh bench/fs.sh
# Choose tools: TOOLS="objfs s3fs" sh bench/fs.sh
# objfs-unsigned is objfs with -o unsigned_payload: what objfs does by
# default over https (the server here speaks plain http, where objfs hashes
# every payload into the signature, as s3fs does).  objfs-nometrics is objfs
# with -o metrics=off (nothing counted): the cost of the metrics is the
# difference, e.g. TOOLS="objfs objfs-nometrics objfs objfs-nometrics".
set -eu

SIZE_MB=${SIZE_MB:-1024}
FILES=${FILES:-1000}
LS_FILES=${LS_FILES:-10000}
TOOLS=${TOOLS:-"objfs objfs-unsigned s3fs rclone"}
HERE=$(cd "$(dirname "$0")/.." && pwd)
SERVER=${OBJFS_BENCH_SERVER:-swift}
B=${OBJFS_BUILDDIR:-$HERE}
MOUNT=$B/objfs-mount
TOOL=$B/tests/integration/objfs-store-tool

[ "$(id -u)" -eq 0 ] || { echo "bench/fs.sh: run as root" >&2; exit 1; }
[ -x "$MOUNT" ] && [ -x "$TOOL" ] || { echo "bench/fs.sh: build first (make)" >&2; exit 1; }

W=$(mktemp -d /tmp/objfs-bench-fs.XXXXXX)
OWN_SERVER=0
MNT_PIDS=""
cleanup() {
	for m in "$W"/mnt-*; do
		[ -d "$m" ] || continue
		mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; }
	done
	for p in $MNT_PIDS; do kill "$p" 2>/dev/null || true; done
	[ $OWN_SERVER -eq 1 ] && timeout 60 sh "$HERE/tests/s3server/$SERVER.sh" stop "$W/s3" >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT INT TERM

if [ -n "${OBJFS_BENCH_S3_ENV:-}" ]; then
	. "$OBJFS_BENCH_S3_ENV"
else
	mkdir -p "$W/s3"
	timeout 120 sh "$HERE/tests/s3server/$SERVER.sh" start "$W/s3" >/dev/null
	OWN_SERVER=1
	. "$W/s3/env"
fi
EP=$OBJFS_TEST_S3_ENDPOINT
BUCKET=$OBJFS_TEST_S3_BUCKET
export AWS_ENDPOINT_URL="$EP" AWS_REGION="$OBJFS_TEST_S3_REGION"
export AWS_ACCESS_KEY_ID="$OBJFS_TEST_S3_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$OBJFS_TEST_S3_SECRET_KEY"
RUN=bench-$$

now() { date +%s.%N; }
elapsed() { echo "$1 $2" | awk '{ printf "%.2f", $2 - $1 }'; }

# wait_key PREFIX KEY SIZE: until KEY under PREFIX has SIZE bytes (<= 600 s)
wait_key() {
	i=0
	while [ $i -lt 6000 ]; do
		s=$("$TOOL" "s3://$BUCKET/$1" head "$2" 2>/dev/null | awk '$1 == "size" { print $2 }')
		[ "$s" = "$3" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	echo "bench: $2 never reached $3 bytes" >&2
	return 1
}

# wait_count PREFIX SUBPREFIX N: until N keys exist under it
wait_count() {
	i=0
	while [ $i -lt 6000 ]; do
		n=$("$TOOL" "s3://$BUCKET/$1" list "$2" 2>/dev/null | wc -l)
		[ "$n" -ge "$3" ] && return 0
		sleep 0.2
		i=$((i + 1))
	done
	echo "bench: only $n of $3 keys" >&2
	return 1
}

# do_mount TOOL PREFIX MNT: mounts in the background, sets PID
do_mount() {
	mkdir -p "$3"
	case "$1" in
	objfs|objfs-unsigned|objfs-nometrics)
		o="spool_dir=$W,log_level=warn"
		[ "$1" = objfs-unsigned ] && o="$o,unsigned_payload"
		[ "$1" = objfs-nometrics ] && o="$o,metrics=off"
		"$MOUNT" -f -o "$o" "s3://$BUCKET/$2" "$3" >>"$W/objfs.log" 2>&1 &
		PID=$! ;;
	s3fs)
		"$TOOL" "s3://$BUCKET" put "$2/" </dev/null >/dev/null 2>&1 || true
		AWSACCESSKEYID=$AWS_ACCESS_KEY_ID AWSSECRETACCESSKEY=$AWS_SECRET_ACCESS_KEY \
		s3fs "$BUCKET:/$2" "$3" -f -o "url=$EP,use_path_request_style,endpoint=$AWS_REGION,sigv4" \
			>>"$W/s3fs.log" 2>&1 &
		PID=$! ;;
	rclone)
		env -u AWS_CA_BUNDLE RCLONE_CONFIG_SW_TYPE=s3 RCLONE_CONFIG_SW_PROVIDER=Other \
		RCLONE_CONFIG_SW_ENDPOINT="$EP" RCLONE_CONFIG_SW_REGION="$AWS_REGION" \
		RCLONE_CONFIG_SW_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" \
		RCLONE_CONFIG_SW_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
		RCLONE_CONFIG_SW_FORCE_PATH_STYLE=true \
		rclone --config /dev/null mount "sw:$BUCKET/$2" "$3" --vfs-cache-mode writes \
			--cache-dir "$W/rclone-cache" >>"$W/rclone.log" 2>&1 &
		PID=$! ;;
	esac
	MNT_PIDS="$MNT_PIDS $PID"
	i=0
	until mountpoint -q "$3"; do
		sleep 0.1
		i=$((i + 1))
		[ $i -lt 300 ] || { echo "bench: $1 did not mount" >&2; return 1; }
	done
}

# do_umount MNT PID: unmounts and waits for the process; CPU adds its
# CPU time in clock ticks first
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
CPU=0
ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
do_umount() {
	CPU=$((CPU + $(ticks "$2")))
	fusermount3 -u "$1" 2>/dev/null || umount -l "$1"
	i=0
	while kill -0 "$2" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	kill -9 "$2" 2>/dev/null || true
}

# shared listing directory, written straight to the store
"$TOOL" "s3://$BUCKET/$RUN-ls" put-many "d/f" "$LS_FILES" 100

RES=$W/results
: >"$RES"
for t in $TOOLS; do
	command -v "$t" >/dev/null 2>&1 || [ "${t%-*}" = objfs ] || { echo "bench: $t not installed, skipped" >&2; continue; }
	P=$RUN-$t
	M=$W/mnt-$t
	peak=0
	CPU=0
	keep_peak() { h=$(hwm "$PID"); [ "$h" -gt "$peak" ] && peak=$h; true; }

	do_mount "$t" "$P" "$M"
	t0=$(now)
	dd if=/dev/zero of="$M/big" bs=1M count="$SIZE_MB" status=none
	wait_key "$P" big $((SIZE_MB * 1048576))
	wr=$(elapsed "$t0" "$(now)")
	keep_peak
	do_umount "$M" "$PID"
	if [ "$t" = objfs ] && [ -n "${OBJFS_TEST_S3_NETRC:-}" ]; then
		t0=$(now)
		curl -sS -f --netrc-file "$OBJFS_TEST_S3_NETRC" \
			--aws-sigv4 "aws:amz:$AWS_REGION:s3" \
			-H x-amz-content-sha256:UNSIGNED-PAYLOAD -o /dev/null \
			"$EP/$BUCKET/$P/big"
		echo "curl $(elapsed "$t0" "$(now)")" >"$W/curl"
	fi

	sync
	echo 3 >/proc/sys/vm/drop_caches
	do_mount "$t" "$P" "$M"
	t0=$(now)
	cat "$M/big" >/dev/null
	rd=$(elapsed "$t0" "$(now)")
	t0=$(now)
	cat "$M/big" >/dev/null
	rr=$(elapsed "$t0" "$(now)")
	keep_peak

	mkdir -p "$M/small"
	t0=$(now)
	/usr/bin/python3 -c '
import sys
d, n = sys.argv[1], int(sys.argv[2])
blob = b"x" * 4096
for i in range(n):
    with open("%s/f%05d" % (d, i), "wb") as f:
        f.write(blob)
' "$M/small" "$FILES"
	wait_count "$P" small/ "$FILES"
	cr=$(elapsed "$t0" "$(now)")
	keep_peak
	do_umount "$M" "$PID"

	do_mount "$t" "$RUN-ls" "$M"
	t0=$(now)
	n=$(ls -l "$M/d" | wc -l)
	ls=$(elapsed "$t0" "$(now)")
	[ "$n" -gt "$LS_FILES" ] || echo "bench: $t listed only $n entries" >&2
	keep_peak
	do_umount "$M" "$PID"
	cpu=$(echo "$CPU $(getconf CLK_TCK)" | awk '{ printf "%.2f", $1 / $2 }')
	echo "$t $wr $rd $rr $cr $ls $((peak / 1024)) $cpu" >>"$RES"
done

echo
echo "objfs vs s3fs and rclone on $SERVER ($EP): write/read ${SIZE_MB} MiB, create $FILES x 4 KiB, ls -l of $LS_FILES"
awk '
{ tool[NR] = $1; for (i = 2; i <= 8; i++) v[$1, i] = $i; n = NR }
END {
	split("write_s read_s reread_s create_s ls-l_s VmHWM_MiB cpu_s", name, " ")
	printf "%-11s", "metric"
	for (k = 1; k <= n; k++) printf " %10s", tool[k]
	for (k = 2; k <= n; k++) printf " %14s", tool[k] "/objfs"
	printf "\n"
	for (i = 2; i <= 8; i++) {
		printf "%-11s", name[i - 1]
		for (k = 1; k <= n; k++) printf " %10s", v[tool[k], i]
		for (k = 2; k <= n; k++) {
			b = v["objfs", i]
			if (b > 0) printf " %14.2f", v[tool[k], i] / b
			else printf " %14s", "-"
		}
		printf "\n"
	}
	printf "(ratios > 1: objfs is faster or smaller)\n"
}' "$RES"
[ -f "$W/curl" ] && awk '{ printf "one curl GET of the same %s MiB object: %s s\n", '"$SIZE_MB"', $2 }' "$W/curl"
true
