#!/bin/sh
# bench/fs.sh - objfs-mount against s3fs and rclone on the same S3 server
# (a one-node server started here with tests/s3server/$OBJFS_BENCH_SERVER.sh:
# swift, the default, or rgw; or the one described by
# OBJFS_BENCH_S3_ENV=path/to/env).  Run by hand as root from a
# build tree:  sh bench/fs.sh   (never part of make check).
#
# Every phase runs on a mount of its own (so each one's requests and CPU
# time are its own), measured per filesystem:
#   write    sequential write of SIZE_MB MiB, until the object is in the store
#            (rclone uploads after close: we wait for the object)
#   read     cold read of it on a fresh mount (page cache dropped)
#   reread   the same read again (cached)
#   create   FILES files of 4 KiB, until all are in the store
#   ls -l    `ls -l` of a directory of LS_FILES files on a fresh mount
#   find -ls `find -ls` of it on a fresh mount
#   du       `du -s` of it on a fresh mount
#   rm       `rm` of the FILES files on a fresh mount
#   VmHWM    peak resident memory of the mount process over all of the above
# The LS_FILES files (LS_BYTES bytes each, 100 unless told; 0: empty
# files, zero-byte objects) are written through an objfs mount (16
# writers), so they carry objfs's attributes as a volume in use does.
#
# Beside the times: objfs's requests (counted by its retry layer, logged at
# unmount) per file or per GiB, the CPU seconds of each mount process per
# phase, and the raw request floor of the server: FILES sequential PUTs,
# HEADs and DELETEs of 4 KiB objects and their LIST (objfs-store-tool
# floor), one curl PUT and one curl GET of SIZE_MB MiB, and the same
# SIZE_MB MiB in parallel curl requests: a multipart upload and ranged GETs,
# PAR_FLOOR="PART_MiB JOBS" ("16 4" unless told).
#
# Smaller runs: SIZE_MB=256 FILES=200 LS_FILES=2000 sh bench/fs.sh
# Choose tools: TOOLS="objfs s3fs" sh bench/fs.sh
# objfs-unsigned is objfs with -o unsigned_payload: what objfs does by
# default over https (the server here speaks plain http, where objfs hashes
# every payload into the signature, as s3fs does).
set -eu

SIZE_MB=${SIZE_MB:-1024}
FILES=${FILES:-1000}
LS_FILES=${LS_FILES:-10000}
LS_BYTES=${LS_BYTES:-100}
TOOLS=${TOOLS:-"objfs s3fs rclone"}
PAR_FLOOR=${PAR_FLOOR:-"16 4"}
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

# the raw floor of the server
"$TOOL" "s3://$BUCKET/$RUN-floor" floor f "$FILES" 4096 >"$W/floor"
if [ -n "${OBJFS_TEST_S3_NETRC:-}" ]; then
	dd if=/dev/zero of="$W/blob" bs=1M count="$SIZE_MB" status=none
	t0=$(now)
	curl -sS -f --netrc-file "$OBJFS_TEST_S3_NETRC" \
		--aws-sigv4 "aws:amz:$AWS_REGION:s3" \
		-H x-amz-content-sha256:UNSIGNED-PAYLOAD -T "$W/blob" \
		"$EP/$BUCKET/$RUN-floor/blob" >/dev/null
	echo "cput $(elapsed "$t0" "$(now)")" >>"$W/floor"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(now)
	curl -sS -f --netrc-file "$OBJFS_TEST_S3_NETRC" \
		--aws-sigv4 "aws:amz:$AWS_REGION:s3" \
		-H x-amz-content-sha256:UNSIGNED-PAYLOAD -o /dev/null \
		"$EP/$BUCKET/$RUN-floor/blob"
	echo "cget $(elapsed "$t0" "$(now)")" >>"$W/floor"
	"$TOOL" "s3://$BUCKET/$RUN-floor" del blob
	# shellcheck disable=SC2086
	pfloor $PAR_FLOOR >>"$W/floor"
	rm -f "$W/blob"
	"$TOOL" "s3://$BUCKET/$RUN-floor" del pblob
fi

# the listing directory, written through objfs by 16 writers
do_mount objfs "$RUN-ls" "$W/mnt-setup"
mkdir -p "$W/mnt-setup/d"
/usr/bin/python3 - "$W/mnt-setup/d" "$LS_FILES" "$LS_BYTES" <<'EOF'
import sys
from concurrent.futures import ThreadPoolExecutor
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def one(i):
    with open("%s/f%06d" % (d, i), "wb") as f:
        f.write(b"y" * size)
with ThreadPoolExecutor(16) as ex:
    list(ex.map(one, range(n)))
EOF
do_umount "$W/mnt-setup" "$PID"

RES=$W/results
: >"$RES"
for t in $TOOLS; do
	command -v "$t" >/dev/null 2>&1 || [ "${t%-unsigned}" = objfs ] || { echo "bench: $t not installed, skipped" >&2; continue; }
	P=$RUN-$t
	M=$W/mnt-$t
	peak=0
	keep_peak() { h=$(hwm "$PID"); [ "$h" -gt "$peak" ] && peak=$h; true; }
	# note NAME SECONDS: one figure with the mount's CPU and requests
	note() { echo "$t $1 $2 $CPU $REQ" >>"$RES"; }

	do_mount "$t" "$P" "$M"
	t0=$(now)
	dd if=/dev/zero of="$M/big" bs=1M count="$SIZE_MB" status=none
	wait_key "$P" big $((SIZE_MB * 1048576))
	s=$(elapsed "$t0" "$(now)")
	keep_peak
	do_umount "$M" "$PID"
	note write "$s"

	sync
	echo 3 >/proc/sys/vm/drop_caches
	do_mount "$t" "$P" "$M"
	t0=$(now)
	cat "$M/big" >/dev/null
	rd=$(elapsed "$t0" "$(now)")
	c0=$(cpu "$PID")
	t0=$(now)
	cat "$M/big" >/dev/null
	rr=$(elapsed "$t0" "$(now)")
	keep_peak
	do_umount "$M" "$PID"
	note read "$rd"
	CPU=$(echo "$CPU $c0" | awk '{ printf "%.2f", $1 - $2 }'); REQ=-
	note reread "$rr"

	do_mount "$t" "$P" "$M"
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
	s=$(elapsed "$t0" "$(now)")
	keep_peak
	do_umount "$M" "$PID"
	note create "$s"

	for op in ls find du; do
		do_mount "$t" "$RUN-ls" "$M"
		t0=$(now)
		case $op in
		ls) n=$(ls -l "$M/d" | wc -l) ;;
		find) n=$(find "$M/d" -ls | wc -l) ;;
		du) du -s "$M/d" >/dev/null; n=$((LS_FILES + 1)) ;;
		esac
		s=$(elapsed "$t0" "$(now)")
		[ "$n" -gt "$LS_FILES" ] || echo "bench: $t $op listed only $n entries" >&2
		keep_peak
		do_umount "$M" "$PID"
		note "$op" "$s"
	done

	do_mount "$t" "$P" "$M"
	t0=$(now)
	rm -f "$M"/small/*
	s=$(elapsed "$t0" "$(now)")
	keep_peak
	do_umount "$M" "$PID"
	n=$("$TOOL" "s3://$BUCKET/$P" list small/ 2>/dev/null | grep -vc '/$' || true)
	[ "$n" -eq 0 ] || echo "bench: $t left $n files after rm" >&2
	note rm "$s"
	echo "$t vmhwm $((peak / 1024)) - -" >>"$RES"
done

echo
echo "objfs vs s3fs and rclone on $SERVER ($EP): write/read ${SIZE_MB} MiB, create and rm $FILES x 4 KiB, ls -l/find -ls/du of $LS_FILES x $LS_BYTES bytes"
awk -v size="$SIZE_MB" -v files="$FILES" -v lsf="$LS_FILES" -v floorf="$W/floor" \
	-v par="parts of ${PAR_FLOOR% *} MiB, ${PAR_FLOOR#* } at a time" '
BEGIN {
	while ((getline l < floorf) > 0) { split(l, a, " "); fl[a[1]] = a[2] }
	# the raw floor of each figure: seconds of the same work in bare requests
	floor["write"] = fl["cput"]; floor["read"] = fl["cget"]
	pfloor["write"] = fl["pput"]; pfloor["read"] = fl["pget"]
	floor["create"] = fl["put"]; floor["rm"] = fl["del"]
	per["write"] = size / 1024; per["read"] = size / 1024
	per["reread"] = size / 1024; per["create"] = files; per["rm"] = files
	per["ls"] = lsf; per["find"] = lsf; per["du"] = lsf
	unit["write"] = "GiB"; unit["read"] = "GiB"; unit["reread"] = "GiB"
}
{
	if (!($1 in seen)) { seen[$1] = 1; tools[++nt] = $1 }
	if (!(($2) in mseen)) { mseen[$2] = 1; ms[++nm] = $2 }
	v[$1, $2] = $3; c[$1, $2] = $4; r[$1, $2] = $5
}
END {
	printf "%-8s", "figure"
	for (k = 1; k <= nt; k++) printf " %9s", tools[k]
	for (k = 2; k <= nt; k++) printf " %13s", tools[k] "/objfs"
	printf " %8s %11s %9s %9s", "floor_s", "floor/objfs", "par_s", "par/objfs"
	printf " %9s", "req/unit"
	for (k = 1; k <= nt; k++) printf " %11s", "cpu_" tools[k]
	printf "\n"
	for (m = 1; m <= nm; m++) {
		n = ms[m]
		printf "%-8s", n
		for (k = 1; k <= nt; k++) printf " %9s", v[tools[k], n]
		b = v["objfs", n]
		for (k = 2; k <= nt; k++)
			if (b > 0) printf " %13.2f", v[tools[k], n] / b; else printf " %13s", "-"
		if (floor[n] != "" && b > 0) printf " %8s %11.2f", floor[n], floor[n] / b
		else printf " %8s %11s", "-", "-"
		if (pfloor[n] != "" && b > 0) printf " %9s %9.2f", pfloor[n], pfloor[n] / b
		else printf " %9s %9s", "-", "-"
		q = r["objfs", n]
		if (q != "" && q != "-" && per[n] > 0)
			printf " %9s", sprintf("%.2f/%s", q / per[n], unit[n] != "" ? unit[n] : "f")
		else printf " %9s", "-"
		for (k = 1; k <= nt; k++) printf " %11s", c[tools[k], n]
		printf "\n"
	}
	printf "(times in s; tool/objfs, floor/objfs and par/objfs > 1: objfs is faster; par: the parallel curl floor; req/unit: objfs requests per GiB or per file; cpu_*: CPU s of the mount process; vmhwm in MiB)\n"
	printf "raw floor: %d PUTs %s s, %d HEADs %s s, LIST %s s, %d DELETEs %s s; curl PUT %s MiB %s s, GET %s s\n",
		files, fl["put"], files, fl["head"], fl["list"], files, fl["del"], size, fl["cput"], fl["cget"]
	printf "parallel curl floor (%s): multipart PUT %s s, ranged GETs %s s\n", par, fl["pput"], fl["pget"]
}' "$RES"
true
