#!/bin/sh
# bench/overload.sh - objfs, s3fs and rclone on an overloaded server
# (issue 31): WRITERS parallel writers (dd of SIZE_MB MiB each), then, on a
# fresh mount with the page cache dropped, WRITERS parallel cold readers
# of those files, on a one-node Ceph RGW (tests/s3server/rgw.sh) whose
# daemons are CPU-limited, through a fault proxy
# (tests/integration/faultproxy.py delay) that holds DELAY_P of the part
# uploads (PUT with partNumber) and object GETs DELAY_S seconds before
# passing them on (seeded: the same requests each run).  Every client goes
# through the same proxy, on a port of its own per phase, so the proxy
# counts each one's bytes in each direction and requests per method.
# Run by hand as root from a build tree:  sh bench/overload.sh
# (never part of make check).
#
# Printed per client and phase: errors (dd/cat exit codes that were not 0,
# files whose md5 differs from what was written), bytes sent and received
# (proxy) over bytes written or read, requests per method (proxy; PUTpart:
# part uploads; delayed: how many the proxy held), CPU seconds of the mount
# process per GiB (/proc/PID/stat utime+stime), the application's time
# (all dd or cat returned) and the wall time (write: until every object
# is in the store, as rclone uploads after close; read: all cats done).
# objfs also runs once more with no delay (objfs-nodelay: the same proxy,
# a label whose share is 0), for its requests per GiB with and without
# the delays; for objfs its own counters (metrics: retries, stalls,
# hedges) are kept beside the logs in OUT.
#
# Environment (defaults):
#   WRITERS=8 SIZE_MB=128     writers and readers, MiB each
#   TOOLS="objfs s3fs rclone objfs-nodelay"
#   DELAY_P=0.3 DELAY_S=5 SEED=1   the proxy's share, delay and seed
#   SERVER_CPU=0.5            CPUs the server's daemons get (cgroup cpu.max,
#                             v2, or cpu.cfs_quota_us, v1); where neither
#                             can be written: BUSY busy loops (2 per CPU)
#                             and the server at nice 19
#   RUNS=1                    runs (each on a fresh server); with more,
#                             min/median/max of each figure at the end
#   WAIT_S=600                the longest wait for the objects of a phase
#   OUT=/tmp/objfs-overload.TIME   where results, logs and metrics stay
#   OBJFS_BENCH_OPTS=a=1,b=2  more objfs-mount -o options
# Quick smoke run: WRITERS=2 SIZE_MB=16 sh bench/overload.sh
set -eu
export AWS_EC2_METADATA_DISABLED=true

WRITERS=${WRITERS:-8}
SIZE_MB=${SIZE_MB:-128}
TOOLS=${TOOLS:-"objfs s3fs rclone objfs-nodelay"}
DELAY_P=${DELAY_P:-0.3}
DELAY_S=${DELAY_S:-5}
SEED=${SEED:-1}
SERVER_CPU=${SERVER_CPU:-0.5}
RUNS=${RUNS:-1}
WAIT_S=${WAIT_S:-600}
HERE=$(cd "$(dirname "$0")/.." && pwd)
B=${OBJFS_BUILDDIR:-$HERE}
MOUNT=$B/objfs-mount
TOOL=$B/tests/integration/objfs-store-tool
PY=/usr/bin/python3
TCK=$(getconf CLK_TCK)
OUT=${OUT:-/tmp/objfs-overload.$(date +%Y%m%d-%H%M%S)}

[ "$(id -u)" -eq 0 ] || { echo "bench/overload.sh: run as root" >&2; exit 1; }
[ -x "$MOUNT" ] && [ -x "$TOOL" ] || { echo "bench/overload.sh: build first (make)" >&2; exit 1; }
mkdir -p "$OUT"
W=$(mktemp -d /tmp/objfs-bench-overload.XXXXXX)
PIDS=""
JOBS=""
CG=""
BUSY_PIDS=""
stop_server() {
	[ -d "$W/s3" ] && timeout 60 sh "$HERE/tests/s3server/rgw.sh" stop "$W/s3" >/dev/null 2>&1 || true
	for p in $BUSY_PIDS; do kill "$p" 2>/dev/null || true; done
	BUSY_PIDS=""
	if [ -n "$CG" ] && [ -d "$CG" ]; then
		# processes left (none once the server stopped) go back to the root
		for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do
			echo "$p" >"$(dirname "$CG")/cgroup.procs" 2>/dev/null || true
		done
		# the daemons' last threads may take a while to be reaped
		i=0
		until rmdir "$CG" 2>/dev/null || [ $i -ge 100 ]; do sleep 0.2; i=$((i + 1)); done
		[ -d "$CG" ] && echo "bench/overload.sh: could not remove $CG" >&2
	fi
	CG=""
}
cleanup() {
	for m in "$W"/mnt-*; do
		[ -d "$m" ] || continue
		mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; }
	done
	for p in $JOBS $PIDS; do kill "$p" 2>/dev/null || true; done
	# a mount whose store went away may wait for it: not after 5 s
	sleep 1
	for p in $PIDS; do
		i=0
		while kill -0 "$p" 2>/dev/null && [ $i -lt 40 ]; do sleep 0.1; i=$((i + 1)); done
		kill -9 "$p" 2>/dev/null || true
	done
	stop_server
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

now() { date +%s.%N; }
elapsed() { echo "$1 $2" | awk '{ printf "%.2f", $2 - $1 }'; }
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
freeport() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# limit_server: the server's daemons (every process of each daemon's group)
# under SERVER_CPU CPUs; sets LIMIT to what was done
limit_server() {
	pids=""
	for f in "$W"/s3/run/*.pid; do
		g=$(cat "$f")
		pids="$pids $(ps -eo pid=,pgid= | awk -v g="$g" '$2 == g { print $1 }')"
	done
	quota=$(echo "$SERVER_CPU" | awk '{ printf "%d", $1 * 100000 }')
	name=objfs-overload-$$-$RUN
	if grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
		# cgroup v2 (unified at /sys/fs/cgroup)
		echo +cpu >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
		if mkdir "/sys/fs/cgroup/$name" 2>/dev/null; then
			CG=/sys/fs/cgroup/$name
			if echo "$quota 100000" >"$CG/cpu.max" 2>/dev/null; then
				for p in $pids; do echo "$p" >"$CG/cgroup.procs"; done
				LIMIT="cgroup v2 cpu.max $quota/100000 (${SERVER_CPU} CPU)"
				return
			fi
			rmdir "$CG"; CG=""
		fi
	fi
	if [ -w /sys/fs/cgroup/cpu/cpu.cfs_quota_us ] && mkdir "/sys/fs/cgroup/cpu/$name" 2>/dev/null; then
		# cgroup v1 (the cpu controller mounted on its own): the same limit
		CG=/sys/fs/cgroup/cpu/$name
		if echo "$quota" >"$CG/cpu.cfs_quota_us" 2>/dev/null; then
			for p in $pids; do echo "$p" >"$CG/cgroup.procs"; done
			LIMIT="cgroup v1 cpu.cfs_quota_us $quota/100000 (${SERVER_CPU} CPU; no cgroup v2 cpu controller here)"
			return
		fi
		rmdir "$CG"; CG=""
	fi
	n=${BUSY:-$(($(nproc) * 2))}
	i=0
	while [ $i -lt "$n" ]; do
		sh -c 'while :; do :; done' &
		BUSY_PIDS="$BUSY_PIDS $!"
		i=$((i + 1))
	done
	for p in $pids; do renice -n 19 -p "$p" >/dev/null; done
	LIMIT="no writable cgroup: $n busy loops and the server at nice 19"
}

# The data: WRITERS files of SIZE_MB MiB, each different
mkdir -p "$W/src"
i=1
while [ $i -le "$WRITERS" ]; do
	head -c $((SIZE_MB << 20)) /dev/urandom >"$W/src/f$i"
	md5sum <"$W/src/f$i" | cut -d' ' -f1 >"$W/src/f$i.md5"
	i=$((i + 1))
done
BYTES=$((WRITERS * SIZE_MB * 1048576))

# wait_objects PREFIX DEADLINE: until every file is in the store at its size
wait_objects() {
	i=1
	while [ $i -le "$WRITERS" ]; do
		while :; do
			s=$("$TOOL" "s3://$BUCKET/$1" head "f$i" 2>/dev/null | awk '$1 == "size" { print $2 }')
			[ "$s" = $((SIZE_MB * 1048576)) ] && break
			[ "$(date +%s)" -lt "$2" ] || { echo "bench/overload.sh: $1/f$i not stored (size '${s:-none}')" >&2; return 1; }
			sleep 0.2
		done
		i=$((i + 1))
	done
}

# do_mount TOOL LABEL PREFIX MNT: through the proxy's port for LABEL; PID
do_mount() {
	port=$(awk -v l="$2" '$1 == l { print $2 }' "$W/ports")
	ep=http://127.0.0.1:$port
	mkdir -p "$4"
	case "$1" in
	objfs*)
		MPORT=$(freeport)
		o="spool_dir=$W,log_level=info,endpoint=$ep,metrics=127.0.0.1:$MPORT${OBJFS_BENCH_OPTS:+,$OBJFS_BENCH_OPTS}"
		"$MOUNT" -f -o "$o" "s3://$BUCKET/$3" "$4" >"$RD/$2.log" 2>&1 &
		PID=$! ;;
	s3fs)
		"$TOOL" "s3://$BUCKET" put "$3/" </dev/null >/dev/null 2>&1 || true
		AWSACCESSKEYID=$AWS_ACCESS_KEY_ID AWSSECRETACCESSKEY=$AWS_SECRET_ACCESS_KEY \
		s3fs "$BUCKET:/$3" "$4" -f -o "url=$ep,use_path_request_style,endpoint=$AWS_REGION,sigv4" \
			>"$RD/$2.log" 2>&1 &
		PID=$! ;;
	rclone)
		env -u AWS_CA_BUNDLE RCLONE_CONFIG_SW_TYPE=s3 RCLONE_CONFIG_SW_PROVIDER=Other \
		RCLONE_CONFIG_SW_ENV_AUTH=false \
		RCLONE_CONFIG_SW_ENDPOINT="$ep" RCLONE_CONFIG_SW_REGION="$AWS_REGION" \
		RCLONE_CONFIG_SW_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" \
		RCLONE_CONFIG_SW_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY" \
		RCLONE_CONFIG_SW_FORCE_PATH_STYLE=true \
		rclone --config /dev/null mount "sw:$BUCKET/$3" "$4" --vfs-cache-mode writes \
			--cache-dir "$W/rclone-cache-$2" >"$RD/$2.log" 2>&1 &
		PID=$! ;;
	esac
	PIDS="$PIDS $PID"
	i=0
	until mountpoint -q "$4"; do
		sleep 0.1
		i=$((i + 1))
		[ $i -lt 600 ] || { echo "bench/overload.sh: $1 did not mount" >&2; cat "$RD/$2.log" >&2; return 1; }
	done
}

# do_umount TOOL LABEL MNT: CPU (s, just before), the metrics of objfs,
# unmounts and waits for the process (at most 120 s)
do_umount() {
	CPU=$(cpu "$PID")
	case "$1" in objfs*)
		curl -s "http://127.0.0.1:$MPORT/metrics" >"$RD/$2.metrics" 2>/dev/null || true ;;
	esac
	fusermount3 -u "$3" 2>/dev/null || umount -l "$3"
	i=0
	while kill -0 "$PID" 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
	kill -9 "$PID" 2>/dev/null || true
	wait "$PID" 2>/dev/null || true
	forget "$PID"
}
# forget PID: a process waited for, no longer to be killed at exit (its
# pid may be another's by then)
forget() { PIDS=$(echo " $PIDS " | sed "s/ $1 / /"); }

# one_run N: a fresh server, limited; the proxy; each tool writes then reads
one_run() {
	RD=$OUT/run$1
	mkdir -p "$RD"
	mkdir -p "$W/s3"
	OBJFS_RGW_STORE_MB=${OBJFS_RGW_STORE_MB:-$((WRITERS * SIZE_MB * 3 + 2048))} \
		timeout 120 sh "$HERE/tests/s3server/rgw.sh" start "$W/s3" >/dev/null
	. "$W/s3/env"
	BUCKET=$OBJFS_TEST_S3_BUCKET
	export AWS_ENDPOINT_URL="$OBJFS_TEST_S3_ENDPOINT" AWS_REGION="$OBJFS_TEST_S3_REGION"
	export AWS_ACCESS_KEY_ID="$OBJFS_TEST_S3_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$OBJFS_TEST_S3_SECRET_KEY"
	RUN=$1
	limit_server
	echo "run $1: server limit: $LIMIT" | tee "$RD/limit"
	labels=""
	for t in $TOOLS; do
		p=$DELAY_P
		[ "$t" = objfs-nodelay ] && p=0
		labels="$labels $t-w=$p $t-r=$p"
	done
	hp=${OBJFS_TEST_S3_ENDPOINT#http://}
	rm -f "$W/ports"
	# shellcheck disable=SC2086
	"$PY" "$HERE/tests/integration/faultproxy.py" delay "${hp%:*}" "${hp##*:}" \
		"$DELAY_S" "$SEED" "$W/ports" "$RD/proxy.json" $labels &
	PROXY=$!
	PIDS="$PIDS $PROXY"
	while [ ! -s "$W/ports" ]; do sleep 0.05; done
	: >"$RD/results"
	for t in $TOOLS; do
		tool=${t%-nodelay}
		command -v "$tool" >/dev/null 2>&1 || [ "$tool" = objfs ] || { echo "bench: $tool not installed, skipped" >&2; continue; }
		P=run$1-$t
		M=$W/mnt-$t

		# WRITERS parallel dd, until every object is in the store
		do_mount "$t" "$t-w" "$P" "$M"
		t0=$(now)
		i=1
		while [ $i -le "$WRITERS" ]; do
			( dd if="$W/src/f$i" of="$M/f$i" bs=1M status=none 2>"$RD/$t-w.dd$i"
			  echo $? >"$W/rc.$i" ) &
			JOBS="$JOBS $!"
			i=$((i + 1))
		done
		wait_jobs
		app=$(elapsed "$t0" "$(now)")
		errs=$(cat_rcs)
		stored=ok
		wait_objects "$P" $(($(date +%s) + WAIT_S)) || stored=missing
		wall=$(elapsed "$t0" "$(now)")
		do_umount "$t" "$t-w" "$M"
		echo "$t write $errs 0 $app $wall $CPU $stored" >>"$RD/results"

		# WRITERS parallel cold reads on a fresh mount
		sync
		echo 3 >/proc/sys/vm/drop_caches
		do_mount "$t" "$t-r" "$P" "$M"
		t0=$(now)
		i=1
		while [ $i -le "$WRITERS" ]; do
			( { cat "$M/f$i" 2>"$RD/$t-r.cat$i"; echo $? >"$W/rc.$i"; } |
				md5sum | cut -d' ' -f1 >"$W/md5.$i" ) &
			JOBS="$JOBS $!"
			i=$((i + 1))
		done
		wait_jobs
		app=$(elapsed "$t0" "$(now)")
		errs=$(cat_rcs)
		bad=0
		i=1
		while [ $i -le "$WRITERS" ]; do
			cmp -s "$W/md5.$i" "$W/src/f$i.md5" || bad=$((bad + 1))
			i=$((i + 1))
		done
		do_umount "$t" "$t-r" "$M"
		echo "$t read $errs $bad $app $app $CPU ok" >>"$RD/results"
		i=1
		while [ $i -le "$WRITERS" ]; do
			"$TOOL" "s3://$BUCKET/$P" del "f$i" >/dev/null 2>&1 || true
			i=$((i + 1))
		done
	done
	kill "$PROXY"
	wait "$PROXY" || true
	forget "$PROXY"
	stop_server
	rm -rf "$W/s3" "$W"/rclone-cache-*
	report "$RD" | tee "$RD/table"
}

# the background jobs of a phase (their pids in JOBS)
wait_jobs() {
	for j in $JOBS; do wait "$j" 2>/dev/null || true; done
	JOBS=""
}
# how many of the phase's WRITERS exit codes were not 0
cat_rcs() {
	n=0
	i=1
	while [ $i -le "$WRITERS" ]; do
		[ "$(cat "$W/rc.$i" 2>/dev/null)" = 0 ] || n=$((n + 1))
		rm -f "$W/rc.$i"
		i=$((i + 1))
	done
	echo $n
}

# report RUNDIR: the table of a run (and RUNDIR/summary: one line per
# client and phase, for the min/median/max over runs)
report() {
	"$PY" - "$1" "$BYTES" "$WRITERS" "$SIZE_MB" "$DELAY_P" "$DELAY_S" <<'EOF'
import json, os, re, sys
rd, total, writers, size, p, d = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
gib = total / 2**30
stats = json.load(open(os.path.join(rd, "proxy.json")))
print("%s writers then %s cold readers of %s MiB; proxy: %s of part PUTs and object GETs held %s s; %s"
      % (writers, writers, size, p, d, open(os.path.join(rd, "limit")).read().strip().split(": ", 1)[1]))
hdr = ("client", "phase", "errs", "badmd5", "sent/wr", "recv/rd", "req/GiB",
       "delayed", "cpu_s/GiB", "app_s", "wall_s", "requests (proxy)")
fmt = "%-13s %-5s %4s %6s %7s %7s %7s %7s %9s %7s %7s  %s"
print(fmt % hdr)
summ = []
for line in open(os.path.join(rd, "results")):
    t, phase, errs, bad, app, wall, cpu, stored = line.split()
    st = stats["%s-%s" % (t, phase[0])]
    req = st["requests"]
    nreq = sum(req.values())
    reqs = " ".join("%s=%d" % kv for kv in sorted(req.items()))
    if stored != "ok":
        errs += "+unstored"
    row = (t, phase, errs, bad, "%.3f" % (st["sent"] / total), "%.3f" % (st["recv"] / total),
           "%.0f" % (nreq / gib), str(st["delayed"]), "%.2f" % (float(cpu) / gib), app, wall, reqs)
    print(fmt % row)
    summ.append(" ".join(row[:11]))
    log = os.path.join(rd, "%s-%s.log" % (t, phase[0]))
    if t.startswith("objfs") and os.path.exists(log):
        m = re.findall(r"store requests: total=[^\"\n]*", open(log, errors="replace").read())
        met = os.path.join(rd, "%s-%s.metrics" % (t, phase[0]))
        keep = []
        if os.path.exists(met):
            for l in open(met):
                if re.match(r"objfs_(store_retries|store_retries_exhausted|store_retry_budget_waits|store_hedges|store_hedges_won|store_hedges_refused|s3_slow_server_waits|s3_transport_errors)_total", l):
                    name, val = l.rsplit(" ", 1)
                    if float(val) > 0:
                        keep.append("%s=%s" % (name.replace("objfs_", "").replace("_total", ""), val.strip()))
        print("    objfs's own: %s%s" % (m[-1] if m else "-", ("; " + " ".join(keep)) if keep else ""))
with open(os.path.join(rd, "summary"), "w") as f:
    f.write("\n".join(summ) + "\n")
EOF
}

run=1
while [ "$run" -le "$RUNS" ]; do
	one_run "$run"
	run=$((run + 1))
done
if [ "$RUNS" -gt 1 ]; then
	echo
	echo "min/median/max over $RUNS runs (errs, badmd5: sums)"
	"$PY" - "$OUT" "$RUNS" <<'EOF'
import os, sys
out, runs = sys.argv[1], int(sys.argv[2])
rows = {}
order = []
for r in range(1, runs + 1):
    for line in open(os.path.join(out, "run%d" % r, "summary")):
        f = line.split()
        k = (f[0], f[1])
        if k not in rows:
            rows[k] = []
            order.append(k)
        rows[k].append(f[2:])
names = ("errs", "badmd5", "sent/wr", "recv/rd", "req/GiB", "delayed", "cpu_s/GiB", "app_s", "wall_s")
print("%-13s %-5s %5s %6s %19s %19s %17s %11s %17s %20s %20s" % (("client", "phase") + names))
def num(x):
    try:
        return float(x)
    except ValueError:
        return float(x.split("+")[0]) + 1000
for k in order:
    cols = list(zip(*rows[k]))
    cells = []
    for i, c in enumerate(cols):
        if i < 2:
            cells.append(str(int(sum(num(x) for x in c))) + ("+unstored" if any("+" in x for x in c) else ""))
        else:
            v = sorted(num(x) for x in c)
            cells.append("%g/%g/%g" % (v[0], v[len(v) // 2], v[-1]))
    print("%-13s %-5s %5s %6s %19s %19s %17s %11s %17s %20s %20s" % (k + tuple(cells)))
EOF
fi
echo "results, logs and metrics: $OUT"
