#!/bin/sh
# bench/fsstress.sh - an fsstress-like load (tests/integration/fsstress.py:
# 4 workers, OPS operations in all: creates, writes, truncates, renames,
# hard links, unlinks, mkdir, rmdir; issue 34 item 7) on a local directory,
# on objfs over the local store, and on objfs, s3fs and rclone over the
# same S3 server (bench/lib.sh: OBJFS_BENCH_SERVER=swift|rgw), RUNS times
# each, in the same run so the ratios stay meaningful on a loaded machine.
# Run by hand as root from a build tree:  sh bench/fsstress.sh  (never
# part of make check; the test suite's t_fsstress checks the tree and the
# requests per operation, this script the time).
#
# Each line: the load's time (what the application saw), its ratio to the
# local directory's of the same round, the time until the mount process
# ended (all uploaded), and objfs's store requests per operation.  s3fs
# and rclone have no hard links: every tool also runs the load without
# links ("nolink"), objfs with them too ("links"); a tool that does not
# finish within LIMIT seconds is stopped and shown as such.
#
#   OPS=5000 RUNS=3 LIMIT=900 TOOLS="objfs s3fs rclone" sh bench/fsstress.sh
set -eu

OPS=${OPS:-5000}
RUNS=${RUNS:-3}
LIMIT=${LIMIT:-900}
TOOLS=${TOOLS:-"objfs s3fs rclone"}
export AWS_EC2_METADATA_DISABLED=true
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
FSSTRESS=$HERE/tests/integration/fsstress.py
RES=$W/results
: >"$RES"

# load ROOT MIX: runs the load on ROOT (MIX: links or nolink) within
# LIMIT seconds; sets SECS (the load's own time, or "DNF")
load() {
	_a=""
	[ "$2" = nolink ] && _a="--no-links"
	if out=$(timeout -k 10 "$LIMIT" /usr/bin/python3 "$FSSTRESS" run "$1" \
		--ops "$OPS" --seed 3 $_a 2>"$W/load.err"); then
		SECS=$(echo "$out" | /usr/bin/python3 -c \
			'import json, sys; print(json.load(sys.stdin)["seconds"])')
	else
		SECS=DNF
		echo "bench: the load on $1 failed: $out" >&2
		tail -n 3 "$W/load.err" >&2 || true
	fi
}

# local_store_mount MNT: objfs over a fresh local store; sets PID
local_store_mount() {
	_st=$W/lstore.$$.$r
	rm -rf "$_st"
	mkdir -p "$_st" "$1"
	: >"$_st/.objfs-store"
	: >"$W/objfs-mount.log"
	"$MOUNT" -f -o "spool_dir=$W,log_level=info${OBJFS_BENCH_OPTS:+,$OBJFS_BENCH_OPTS}" \
		"file://$_st/vol" "$1" >>"$W/objfs-mount.log" 2>&1 &
	PID=$!
	MNT_PIDS="$MNT_PIDS $PID"
	MTOOL=objfs
	i=0
	until mountpoint -q "$1"; do
		sleep 0.1
		i=$((i + 1))
		[ $i -lt 300 ] || { echo "bench: objfs (local store) did not mount" >&2; return 1; }
	done
}

r=1
while [ "$r" -le "$RUNS" ]; do
	for mix in links nolink; do
		rm -rf "$W/ref"
		mkdir -p "$W/ref"
		load "$W/ref" "$mix"
		LOCAL=$SECS
		echo "local $mix $r $LOCAL - -" >>"$RES"
		# objfs over the local store
		m=$W/mnt-local-$r-$mix
		local_store_mount "$m"
		t0=$(now)
		load "$m" "$mix"
		do_umount "$m" "$PID"
		echo "objfs-localstore $mix $r $SECS $(elapsed "$t0" "$(now)") $REQ" >>"$RES"
		for t in $TOOLS; do
			[ "$mix" = links ] && [ "$t" != objfs ] && continue
			m=$W/mnt-$t-$r-$mix
			do_mount "$t" "$RUN-$t-$r-$mix" "$m"
			t0=$(now)
			load "$m" "$mix"
			do_umount "$m" "$PID"
			echo "$t-$SERVER $mix $r $SECS $(elapsed "$t0" "$(now)") $REQ" >>"$RES"
		done
	done
	r=$((r + 1))
done

echo "fsstress.py, $OPS operations, 4 workers, $RUNS runs; server $SERVER"
echo "(time: the load's own seconds; x local: over the local directory's of"
echo " the same round; to-unmount: until the mount process ended; req/op:"
echo " objfs's store requests per operation)"
/usr/bin/python3 - "$RES" "$OPS" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
ops = int(sys.argv[2])
local = {(r[1], r[2]): r[3] for r in rows if r[0] == "local"}
def mmm(v):
    v = sorted(v)
    return "%.2f/%.2f/%.2f" % (v[0], statistics.median(v), v[-1]) if v else "-"
print("%-20s %-7s %-22s %-22s %-22s %s" % ("tool", "mix", "time min/med/max s",
      "x local min/med/max", "to-unmount s", "req/op"))
for tool in dict.fromkeys(r[0] for r in rows):
    for mix in ("links", "nolink"):
        sel = [r for r in rows if r[0] == tool and r[1] == mix]
        if not sel:
            continue
        dnf = sum(1 for r in sel if r[3] == "DNF")
        ok = [r for r in sel if r[3] != "DNF"]
        t = [float(r[3]) for r in ok]
        x = [float(r[3]) / float(local[(mix, r[2])]) for r in ok
             if local.get((mix, r[2]), "DNF") != "DNF" and float(local[(mix, r[2])]) > 0]
        u = [float(r[4]) for r in ok if r[4] != "-"]
        q = [int(r[5]) / ops for r in ok if r[5] not in ("-", "")]
        print("%-20s %-7s %-22s %-22s %-22s %s%s" % (tool, mix, mmm(t), mmm(x), mmm(u),
              mmm(q), "  (%d of %d did not finish)" % (dnf, len(sel)) if dnf else ""))
EOF
