#!/bin/sh
# bench/bigdir.sh - cat of every file of a large directory and a find of
# it (issues 31 and 33: objfs used to list a 10,000-name directory whole
# again every dir_ttl while it was read file by file), on objfs, s3fs and
# rclone over the same S3 server (bench/lib.sh: OBJFS_BENCH_SERVER=swift|
# rgw), RUNS times each, each on a fresh mount.  Run by hand as root from
# a build tree:  sh bench/bigdir.sh  (never part of make check; the test
# suite's t_bigdir_cat counts the LISTs).
#
# The directory (NAMES files of 1 to 100 bytes) is written once through
# objfs, so it has an attribute index as a volume objfs writes does.  Each
# line: time of `ls -f | xargs cat`, then of `find DIR -type f`, and for
# objfs its LIST, HEAD and GET requests (a whole listing of NAMES names is
# NAMES/1,000 LISTs).
#
#   NAMES=10000 RUNS=3 TOOLS="objfs s3fs rclone" sh bench/bigdir.sh
set -eu

NAMES=${NAMES:-10000}
RUNS=${RUNS:-3}
TOOLS=${TOOLS:-"objfs s3fs rclone"}
export AWS_EC2_METADATA_DISABLED=true
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
RES=$W/results
: >"$RES"
PFX=$RUN-big

# the directory, written through objfs
m=$W/mnt-write
do_mount objfs "$PFX" "$m"
mkdir -p "$m/d"
/usr/bin/python3 - "$m/d" "$NAMES" <<'EOF'
import os, sys, threading
d, n = sys.argv[1], int(sys.argv[2])
todo = list(range(n))
lock = threading.Lock()
def w():
    while True:
        with lock:
            if not todo:
                return
            i = todo.pop()
        with open(os.path.join(d, "f%06d" % i), "wb") as f:
            f.write(b"x" * (i % 100 + 1))
ts = [threading.Thread(target=w) for _ in range(16)]
[t.start() for t in ts]
[t.join() for t in ts]
EOF
do_umount "$m" "$PID"

# reqs LOG: "list head get" of the last store requests line of LOG
reqs() {
	grep -o 'store requests: .*' "$1" | tail -n 1 |
	awk '{ for (i = 3; i <= NF; i++) { split($i, a, "="); v[a[1]] = a[2] }
	       printf "%s %s %s", v["list"] + 0, v["head"] + 0, v["get"] + 0 }'
}

r=1
while [ "$r" -le "$RUNS" ]; do
	for t in $TOOLS; do
		m=$W/mnt-$t-$r
		do_mount "$t" "$PFX" "$m"
		t0=$(now)
		n=$(cd "$m/d" && ls -f | grep -v '^\.' | xargs cat | wc -c)
		t1=$(now)
		f=$(find "$m/d" -type f | wc -l)
		t2=$(now)
		do_umount "$m" "$PID"
		q="- - -"
		[ "$t" = objfs ] && q=$(reqs "$W/objfs-mount.log")
		[ "$f" -eq "$NAMES" ] || echo "bench: $t found $f files of $NAMES" >&2
		echo "$t $r $(elapsed "$t0" "$t1") $(elapsed "$t1" "$t2") $n $q" >>"$RES"
	done
	r=$((r + 1))
done

echo "cat of every file of a $NAMES-name directory, then find; $RUNS runs on"
echo "fresh mounts; server $SERVER (objfs: requests of the whole mount)"
/usr/bin/python3 - "$RES" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def mmm(v):
    v = sorted(v)
    return "%.2f/%.2f/%.2f" % (v[0], statistics.median(v), v[-1]) if v else "-"
print("%-8s %-20s %-20s %-16s %-16s %s" % ("tool", "cat s min/med/max",
      "find s min/med/max", "LIST", "HEAD", "GET"))
for tool in dict.fromkeys(r[0] for r in rows):
    sel = [r for r in rows if r[0] == tool]
    cat = [float(r[2]) for r in sel]
    fnd = [float(r[3]) for r in sel]
    q = [r[5:8] for r in sel if r[5] != "-"]
    col = lambda i: mmm([float(x[i]) for x in q]).replace(".00", "") if q else "-"
    print("%-8s %-20s %-20s %-16s %-16s %s" % (tool, mmm(cat), mmm(fnd), col(0), col(1), col(2)))
EOF
