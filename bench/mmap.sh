#!/bin/sh
# bench/mmap.sh - mapped writes with msync(MS_SYNC) each, on objfs-mount,
# rclone and s3fs over the same S3 server (bench/lib.sh:
# OBJFS_BENCH_SERVER=swift|rgw).  Run by hand as root from a build tree:
# sh bench/mmap.sh   (never part of make check).
#
# Per tool and file size (SIZES, MiB), on a mount of its own: a file of
# that size is written and closed, then mapped (MAP_SHARED) and given OPS
# writes of 1 byte to 64 KiB at random offsets, each followed by
# msync(MS_SYNC) of the pages it touched (Python's mmap.flush), timed one
# by one; the same writes go to a local reference file.  Printed per tool
# and size: ms per op (mean, and min/median/max of the single ops), and
# for objfs the store requests and bytes sent per op (its metrics socket,
# before and after the ops).  Then the store's object is compared with
# the reference: objfs and s3fs must hold it at once (msync is an fsync:
# "fsync means stored"); rclone stores after its write-back delay, which
# the script waits for (at most 120 s) and reports ("later").
#
# MSYNC=async: each write followed by msync(MS_ASYNC) instead, as fsx's
# mapped writes do (msync(p, len, 0) in the classic fsx): the kernel
# writes the dirty pages back when it likes (FUSE: at the latest when the
# mapping ends), nothing is promised stored until close or fsync, and the
# store is checked after the file's close.
#
# Smaller: OPS=50 SIZES=4 sh bench/mmap.sh;  TOOLS="objfs rclone" sh bench/mmap.sh
set -eu

MSYNC=${MSYNC:-sync}
case $MSYNC in sync|async) ;; *) echo "bench: MSYNC is sync or async" >&2; exit 2 ;; esac

SIZES=${SIZES:-"1 16"}
OPS=${OPS:-200}
TOOLS=${TOOLS:-"objfs rclone s3fs"}
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

# metric NAME: the value of one series of the objfs mount's metrics
metric() {
	_s=$(ls "$W"/objfs-state.*/metrics.sock 2>/dev/null | head -n 1)
	[ -n "$_s" ] || { echo 0; return; }
	curl -s --max-time 30 --unix-socket "$_s" http://objfs/metrics |
		awk -v n="$1" 'index($0, n) == 1 { s += $NF } END { printf "%d", s }'
}

RES=$W/results
: >"$RES"
for t in $TOOLS; do
	case $t in
	objfs*) ;;
	*) command -v "$t" >/dev/null 2>&1 || { echo "bench: $t not installed, skipped" >&2; continue; } ;;
	esac
	for size in $SIZES; do
		P=$RUN-$t-$size
		M=$W/mnt-$t
		rm -rf "$W"/objfs-state.*
		do_mount "$t" "$P" "$M"
		/usr/bin/python3 - "$M/f" "$W/ref" "$size" init <<'EOF'
import os, sys
path, ref, size = sys.argv[1], sys.argv[2], int(sys.argv[3]) << 20
data = os.urandom(size)
for p in (path, ref):
    with open(p, "wb") as f:
        f.write(data)
EOF
		r0=0 b0=0
		case $t in objfs*) r0=$(metric objfs_store_requests_total); b0=$(metric 'objfs_store_bytes_total{direction="written"}') ;; esac
		lat=$(/usr/bin/python3 - "$M/f" "$W/ref" "$size" "$OPS" "$MSYNC" <<'EOF'
import ctypes, mmap, os, random, sys, time
path, ref, size, ops = sys.argv[1], sys.argv[2], int(sys.argv[3]) << 20, int(sys.argv[4])
sync = sys.argv[5] == "sync"
libc = ctypes.CDLL(None, use_errno=True)
libc.msync.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
MS_ASYNC = 1
rnd = random.Random(34)
page = mmap.PAGESIZE
with open(path, "r+b") as f, open(ref, "r+b") as r:
    mm = mmap.mmap(f.fileno(), size)
    view = ctypes.c_char.from_buffer(mm)
    base = ctypes.addressof(view)
    lats = []
    t0 = time.monotonic()
    for i in range(ops):
        off = rnd.randrange(size)
        n = min(rnd.randrange(1, 65537), size - off)
        chunk = bytes([i % 251]) * n
        a = time.monotonic()
        mm[off:off + n] = chunk
        start = off - off % page
        if sync:
            mm.flush(start, off + n - start)    # msync(MS_SYNC)
        elif libc.msync(base + start, off + n - start, MS_ASYNC) != 0:
            raise OSError(ctypes.get_errno(), "msync")
        lats.append(time.monotonic() - a)
        r.seek(off)
        r.write(chunk)
    total = time.monotonic() - t0
    del view
    mm.close()
lats.sort()
print("%.2f %.2f %.2f %.2f" % (total * 1000 / ops, lats[0] * 1000,
      lats[len(lats) // 2] * 1000, lats[-1] * 1000))
EOF
)
		req=- bytes=-
		case $t in
		objfs*)
			r1=$(metric objfs_store_requests_total)
			b1=$(metric 'objfs_store_bytes_total{direction="written"}')
			req=$(echo "$r0 $r1 $OPS" | awk '{ printf "%.2f", ($2 - $1) / $3 }')
			bytes=$(echo "$b0 $b1 $OPS" | awk '{ printf "%.0f", ($2 - $1) / $3 / 1024 }') ;;
		esac
		# what the store holds: at once for objfs and s3fs; rclone's
		# write-back comes later (waited for before its unmount)
		stored=no
		i=0
		while [ $i -lt 600 ]; do
			if "$TOOL" "s3://$BUCKET/$P" get f 2>/dev/null | cmp -s - "$W/ref"; then
				if [ $i -eq 0 ]; then [ "$MSYNC" = sync ] && stored=at-msync || stored=at-close; else stored=later; fi
				break
			fi
			[ "$t" = rclone ] || break
			sleep 0.2
			i=$((i + 1))
		done
		do_umount "$M" "$PID"
		echo "$t $size $lat $req $bytes $stored" >>"$RES"
	done
done

echo
[ "$MSYNC" = sync ] && how="msync(MS_SYNC)" || how="msync(MS_ASYNC)"
echo "mapped writes with $how each on $SERVER ($EP): $OPS ops of 1 B-64 KiB at random offsets"
awk '
BEGIN { printf "%-14s %6s %9s %8s %8s %8s %8s %10s  %s\n", "tool", "MiB", "ms/op", "min", "median",
	"max", "req/op", "KiB/op", "content in the store" }
{ printf "%-14s %6s %9s %8s %8s %8s %8s %10s  %s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }
END { printf "(objfs: requests and bytes sent during the ops, from its metrics)\n" }' "$RES"
true
