# bench/lib.sh - what the filesystem benchmarks share (sourced by fs.sh and
# work.sh; never run alone): the S3 server (started here with
# tests/s3server/$OBJFS_BENCH_SERVER.sh: swift, the default, or rgw; or the
# one OBJFS_BENCH_S3_ENV=path/to/env describes), the work directory $W and
# its cleanup, and mounting, unmounting and measuring objfs, s3fs and
# rclone.  Callers set nothing before sourcing it but the environment;
# OBJFS_BENCH_OPTS=a=1,b=2 adds objfs-mount -o options (to compare
# settings: OBJFS_BENCH_OPTS=readahead_chunks=8 sh bench/fs.sh); the tool
# objfs-delay is objfs with -o upload_delay=$OBJFS_BENCH_UPLOAD_DELAY (1).
# Mounts talk to $EP, or to $MEP when a caller sets it (series.sh: a port
# of the counting proxy, counter_start, one per tool and step).
HERE=$(cd "$(dirname "$0")/.." && pwd)
SERVER=${OBJFS_BENCH_SERVER:-swift}
B=${OBJFS_BUILDDIR:-$HERE}
MOUNT=$B/objfs-mount
TOOL=$B/tests/integration/objfs-store-tool
TCK=$(getconf CLK_TCK)

[ "$(id -u)" -eq 0 ] || { echo "bench: run as root" >&2; exit 1; }
[ -x "$MOUNT" ] && [ -x "$TOOL" ] || { echo "bench: build first (make)" >&2; exit 1; }

W=$(mktemp -d /tmp/objfs-bench-fs.XXXXXX)
OWN_SERVER=0
MNT_PIDS=""
cleanup() {
	for m in "$W"/mnt-*; do
		[ -d "$m" ] || continue
		mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; }
	done
	for p in $MNT_PIDS; do kill "$p" 2>/dev/null || true; done
	[ -z "${COUNTER_PID:-}" ] || kill "$COUNTER_PID" 2>/dev/null || true
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

MEP=
# do_mount TOOL PREFIX MNT: mounts in the background, sets PID.  TOOL:
# objfs (objfs-unsigned, objfs-nometrics), s3fs, rclone (--vfs-cache-mode
# writes) or rclone-full (--vfs-cache-mode full)
do_mount() {
	MTOOL=$1
	ep=${MEP:-$EP}
	mkdir -p "$3"
	case "$1" in
	objfs|objfs-unsigned|objfs-nometrics|objfs-delay)
		o="spool_dir=$W,log_level=info${OBJFS_BENCH_OPTS:+,$OBJFS_BENCH_OPTS}"
		[ -z "$MEP" ] || o="$o,endpoint=$MEP"
		[ "$1" = objfs-unsigned ] && o="$o,unsigned_payload"
		# the upload window (docs/objfs-mount.md): TOOLS="objfs objfs-delay"
		[ "$1" = objfs-delay ] && o="$o,upload_delay=${OBJFS_BENCH_UPLOAD_DELAY:-1}"
		# what the metrics cost: TOOLS="objfs objfs-nometrics"
		[ "$1" = objfs-nometrics ] && o="$o,metrics=off"
		: >"$W/objfs-mount.log"
		"$MOUNT" -f -o "$o" "s3://$BUCKET/$2" "$3" >>"$W/objfs-mount.log" 2>&1 &
		PID=$! ;;
	s3fs)
		"$TOOL" "s3://$BUCKET" put "$2/" </dev/null >/dev/null 2>&1 || true
		AWSACCESSKEYID=$AWS_ACCESS_KEY_ID AWSSECRETACCESSKEY=$AWS_SECRET_ACCESS_KEY \
		s3fs "$BUCKET:/$2" "$3" -f -o "url=$ep,use_path_request_style,endpoint=$AWS_REGION,sigv4" \
			>>"$W/s3fs.log" 2>&1 &
		PID=$! ;;
	rclone|rclone-full)
		mode=writes
		[ "$1" = rclone ] || mode=full
		env -u AWS_CA_BUNDLE RCLONE_CONFIG_SW_TYPE=s3 RCLONE_CONFIG_SW_PROVIDER=Other \
		RCLONE_CONFIG_SW_ENV_AUTH=false \
		RCLONE_CONFIG_SW_ENDPOINT="$ep" RCLONE_CONFIG_SW_REGION="$AWS_REGION" \
		RCLONE_CONFIG_SW_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" \
		RCLONE_CONFIG_SW_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
		RCLONE_CONFIG_SW_FORCE_PATH_STYLE=true \
		rclone --config /dev/null mount "sw:$BUCKET/$2" "$3" --vfs-cache-mode "$mode" \
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

# do_umount MNT PID: unmounts, waits for the process; sets CPU (its user +
# system seconds, read just before) and REQ (objfs: the requests it logged)
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
# cpu PID: user+system CPU seconds of PID and every process under it, and
# of their children already waited for (a mount's keeper and its servers:
# objfs-mount runs as two processes with resume, the default)
proc_tree() {
	echo "$1"
	for c in $(pgrep -P "$1" 2>/dev/null); do proc_tree "$c"; done
}
cpu() {
	for p in $(proc_tree "$1"); do cat "/proc/$p/stat" 2>/dev/null; done |
		awk -v t="$TCK" '{ s += $14 + $15 + $16 + $17 } END { printf "%.2f", s / t }'
}
do_umount() {
	CPU=$(cpu "$2")
	fusermount3 -u "$1" 2>/dev/null || umount -l "$1"
	i=0
	# polled every 10 ms (at most 60 s): a step is timed until its mount
	# process is gone, and a coarser poll would add up to its period to
	# every tool's time
	while kill -0 "$2" 2>/dev/null && [ $i -lt 6000 ]; do sleep 0.01; i=$((i + 1)); done
	kill -9 "$2" 2>/dev/null || true
	REQ=-
	case $MTOOL in
	objfs*)
		REQ=$(grep -o 'store requests: total=[0-9]*' "$W/objfs-mount.log" 2>/dev/null |
		      tail -n 1 | sed 's/.*=//') ;;
	esac
	REQ=${REQ:--}
}

# pfloor PART_MB JOBS: the raw floor of parallel transfers, in curl alone:
# a multipart upload of $W/blob (initiate, PART_MB parts with JOBS in
# flight, complete), then ranged GETs of PART_MB, JOBS at a time, of the
# object it made (page cache dropped); prints "pput S" and "pget S".  What
# a client with parallel parts and ranges could reach on this server.
pfloor() {
	_u="$EP/$BUCKET/$RUN-floor/pblob"
	_s="aws:amz:$AWS_REGION:s3"
	rm -rf "$W/parts"; mkdir -p "$W/parts"
	(cd "$W/parts" && split -a 4 -d -b "$1M" "$W/blob" p.)
	_n=$(ls "$W/parts" | wc -l)
	t0=$(now)
	_id=$(curl -sS -f --netrc-file "$OBJFS_TEST_S3_NETRC" --aws-sigv4 "$_s" \
		-H x-amz-content-sha256:UNSIGNED-PAYLOAD -X POST "$_u?uploads=" |
		sed -n 's:.*<UploadId>\(.*\)</UploadId>.*:\1:p')
	i=1
	for f in "$W"/parts/p.*; do echo "$i $f"; i=$((i + 1)); done |
	xargs -P "$2" -L 1 sh -c 'curl -sS -f --netrc-file "$0" --aws-sigv4 "$1" \
		-H x-amz-content-sha256:UNSIGNED-PAYLOAD -D "$5.h" -T "$5" \
		"$2?partNumber=$4&uploadId=$3" >/dev/null' \
		"$OBJFS_TEST_S3_NETRC" "$_s" "$_u" "$_id"
	{ echo "<CompleteMultipartUpload>"
	  i=1
	  for f in "$W"/parts/p.????; do
		printf '<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>\n' "$i" \
			"$(tr -d '\r' <"$f.h" | sed -n 's/^[Ee][Tt][Aa][Gg]: *//p')"
		i=$((i + 1))
	  done
	  echo "</CompleteMultipartUpload>"; } >"$W/parts/done.xml"
	curl -sS -f --netrc-file "$OBJFS_TEST_S3_NETRC" --aws-sigv4 "$_s" \
		-H x-amz-content-sha256:UNSIGNED-PAYLOAD -X POST \
		--data-binary @"$W/parts/done.xml" "$_u?uploadId=$_id" >/dev/null
	echo "pput $(elapsed "$t0" "$(now)")"
	rm -rf "$W/parts"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(now)
	_p=$(($1 * 1048576))
	i=0
	while [ $i -lt "$_n" ]; do echo "$((i * _p))-$(((i + 1) * _p - 1))"; i=$((i + 1)); done |
	xargs -P "$2" -I R curl -sS -f --netrc-file "$OBJFS_TEST_S3_NETRC" \
		--aws-sigv4 "$_s" -H x-amz-content-sha256:UNSIGNED-PAYLOAD \
		-r R -o /dev/null "$_u"
	echo "pget $(elapsed "$t0" "$(now)")"
}

# wait_etag PREFIX KEY ETAG: until KEY under PREFIX has another ETag than
# ETAG (rclone uploads a file changed in place after close; <= 600 s)
wait_etag() {
	i=0
	while [ $i -lt 3000 ]; do
		e=$("$TOOL" "s3://$BUCKET/$1" head "$2" 2>/dev/null | awk '$1 == "etag" { print $2 }')
		[ -n "$e" ] && [ "$e" != "$3" ] && return 0
		sleep 0.2
		i=$((i + 1))
	done
	echo "bench: $2 never changed from ETag $3" >&2
	return 1
}

# counter_start STATS LABEL...: a counting proxy to the server
# (tests/integration/faultproxy.py's delay mode, delaying nothing), one
# port per LABEL; counter_ep LABEL prints the endpoint of LABEL's port;
# counter_stop writes the counts (JSON: per label, bytes "sent" by the
# client and "recv"ed by it, headers included, and "requests" per method,
# part uploads as PUTpart) to STATS and stops it.
COUNTER_PID=
counter_start() {
	_st=$1
	shift
	_hp=${EP#http://}
	rm -f "$W/counter.ports"
	_l=""
	for _x in "$@"; do _l="$_l $_x=0"; done
	# shellcheck disable=SC2086
	/usr/bin/python3 "$HERE/tests/integration/faultproxy.py" delay "${_hp%%:*}" \
		"${_hp##*:}" 0 1 "$W/counter.ports" "$_st" $_l &
	COUNTER_PID=$!
	i=0
	until [ -s "$W/counter.ports" ]; do
		sleep 0.05
		i=$((i + 1))
		[ $i -lt 600 ] || { echo "bench: the counting proxy did not start" >&2; return 1; }
	done
}
counter_ep() { echo "http://127.0.0.1:$(awk -v l="$1" '$1 == l { print $2 }' "$W/counter.ports")"; }
counter_stop() {
	[ -n "$COUNTER_PID" ] || return 0
	kill "$COUNTER_PID" 2>/dev/null || true
	wait "$COUNTER_PID" 2>/dev/null || true
	COUNTER_PID=
}
