#!/bin/sh
# bench/resume.sh - the cost of a resumable mount (-o resume: the keeper and
# the state kept for a successor) against a plain mount, and the pause of a
# kill -9 and of a handover.  Local directory store (file://), so the
# figures are the mount's own work, not the network's.  Run by hand as root
# from a build tree:  sh bench/resume.sh   (never part of make check).
#
#   create   FILES files of 4 KiB (open, write, close: each uploaded)
#   write    SIZE_MB MiB written sequentially (dd bs=1M) and closed
# each RUNS times, the KINDS alternating (plain: no resume; resume;
# userresend: resume with the userspace RESEND of kernels before 6.9,
# forced); the medians of the wall time and of the CPU time of the
# serving process (user + system, less sensitive to a loaded machine) are
# printed, and each kind's difference from plain (goal: at most 5%).
#   pause    the longest stat+read+write of a 10 ms loop around a kill -9
#            of the server and around a handover (SIGUSR2 to the keeper)
set -eu
SIZE_MB=${SIZE_MB:-1024}
FILES=${FILES:-1000}
RUNS=${RUNS:-3}
KINDS=${KINDS:-"plain resume userresend"}
HERE=$(cd "$(dirname "$0")/.." && pwd)
B=${OBJFS_BUILDDIR:-$HERE}
MOUNT=$B/objfs-mount
[ "$(id -u)" -eq 0 ] || { echo "bench/resume.sh: run as root" >&2; exit 1; }
W=$(mktemp -d /tmp/objfs-bench-resume.XXXXXX)
PIDS=""
cleanup() {
	mountpoint -q "$W/mnt" 2>/dev/null && { fusermount3 -u "$W/mnt" 2>/dev/null || umount -l "$W/mnt" || true; }
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
mkdir -p "$W/store" "$W/mnt" "$W/spool"
: > "$W/store/.objfs-store"
n=0

mount_fs() {        # $1: extra options
	n=$((n + 1))
	"$MOUNT" -f -o "spool_dir=$W/spool$1" "file://$W/store/v$n" "$W/mnt" 2>"$W/log" &
	MPID=$!
	PIDS="$PIDS $MPID"
	i=0
	while ! mountpoint -q "$W/mnt"; do
		sleep 0.05; i=$((i + 1)); [ $i -lt 200 ] || { cat "$W/log"; exit 1; }
	done
}
umount_fs() {
	fusermount3 -u "$W/mnt"
	wait "$MPID"
}
# CPU seconds (user + system) of the process serving the mount so far
server_cpu() {
	s=$(cat "/proc/$MPID/task/$MPID/children" 2>/dev/null | awk '{print $1}')
	[ -n "$s" ] || s=$MPID
	awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$s/stat"
}
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for run in $(seq "$RUNS"); do
	for kind in $KINDS; do
		case $kind in
		plain) opt="" ;;
		resume) opt=",resume" ;;
		userresend) opt=",resume,user_resend" ;;
		esac
		mount_fs "$opt"
		t0=$(now)
		mkdir "$W/mnt/d"
		i=0
		while [ $i -lt "$FILES" ]; do
			head -c 4096 /dev/zero > "$W/mnt/d/f$i"; i=$((i + 1))
		done
		t1=$(now)
		c1=$(server_cpu)
		dd if=/dev/zero of="$W/mnt/big" bs=1M count="$SIZE_MB" status=none
		t2=$(now)
		c2=$(server_cpu)
		umount_fs
		echo "$c1" >> "$W/create-cpu-$kind"
		echo "$c2 - $c1" | bc >> "$W/write-cpu-$kind"
		echo "$t1 - $t0" | bc >> "$W/create-$kind"
		echo "$t2 - $t1" | bc >> "$W/write-$kind"
		rm -rf "$W/store/v$n"
	done
done
for what in create write create-cpu write-cpu; do
	p=$(median < "$W/$what-plain")
	line=$(printf '%-10s plain %6.2f s' "$what" "$p")
	for kind in $KINDS; do
		[ $kind = plain ] && continue
		r=$(median < "$W/$what-$kind")
		line="$line$(printf '   %s %6.2f s %+5.1f%%' "$kind" "$r" \
			"$(echo "($r - $p) * 100 / $p" | bc -l)")"
	done
	echo "$line"
done

# pauses: a 10 ms loop, its longest operation around each event
for opt in ",resume" ",resume,user_resend"; do
mount_fs "$opt"
echo data > "$W/mnt/probe"
echo "pauses with -o ${opt#,}:"
python3 - "$W/mnt/probe" "$MPID" <<'PY'
import os, signal, sys, time
path, keeper = sys.argv[1], int(sys.argv[2])
def server():
    return int(open("/proc/%d/task/%d/children" % (keeper, keeper)).read().split()[0])
def loop(seconds):
    worst, end = 0.0, time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.monotonic()
        os.stat(path)
        with open(path, "r+b") as f:
            f.read(4096)
            f.write(b"x")
        worst = max(worst, time.monotonic() - t)
        time.sleep(0.01)
    return worst
print("pause   baseline (no event)      longest %.3f s" % loop(2))
for event in ("kill -9", "handover"):
    for _ in range(3):
        if event == "kill -9":
            os.kill(server(), signal.SIGKILL)
        else:
            os.kill(keeper, signal.SIGUSR2)
        print("pause   %-24s longest %.3f s" % (event, loop(2)))
PY
umount_fs
done
