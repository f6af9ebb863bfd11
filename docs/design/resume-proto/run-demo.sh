#!/bin/bash
# run-demo.sh - end-to-end demonstrations of FUSE connection hand-over with
# libfuse 3.14: fd holder, kill -9 and successor, crash inside a request and
# FUSE_NOTIFY_RESEND, clone_fd, an "old kernel" without RESEND, planned
# handover, pauses seen by an application, and mount namespaces.
#
# Needs root and /dev/fuse.  Every process is started under `timeout`, every
# pid is recorded and killed by pid at the end, every mount is unmounted.
# Usage: ./run-demo.sh [section...]   sections: basic holdermount libfuse crash clonefd
#                                              oldkernel rename pause ns
set -u
cd "$(dirname "$0")"
HERE=$PWD
make -s all || exit 1

W=$(mktemp -d /tmp/resume-proto-run.XXXXXX)
PIDS=()
MOUNTS=()
SUMMARY=$W/summary.txt
: > "$SUMMARY"
T=120			# upper bound for any process we start

say() { printf '\n=== %s\n' "$*"; }
note() { printf '%s\n' "$*" | tee -a "$SUMMARY"; }
track() { PIDS+=("$@"); }

cleanup() {
	local m p
	for m in "${MOUNTS[@]}"; do
		umount -l "$m" 2>/dev/null
	done
	sleep 0.3
	# servers respawned by a holder are its children: end them while it
	# is there to reap them
	if [ -f "$W/respawned.pids" ]; then
		while read -r p; do kill -TERM "$p" 2>/dev/null; done < "$W/respawned.pids"
		sleep 0.2
	fi
	# SIGTERM first: a `timeout` wrapper forwards it to its child and reaps
	# it (holder and protofs leave on SIGTERM); then SIGKILL what is left
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	sleep 0.5
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		kill -9 "${PIDS[i]}" 2>/dev/null
	done
	for m in "${MOUNTS[@]}"; do
		umount -l "$m" 2>/dev/null
	done
	wait 2>/dev/null
	if [ -z "${KEEP:-}" ]; then
		rm -rf "$W"
	else
		echo "logs kept in $W"
	fi
}
trap cleanup EXIT

# start_holder NAME [holder args...]: sets HPID
start_holder() {
	local n=$1; shift
	timeout $T ./holder -s "$W/$n.sock" "$@" 2>>"$W/$n.holder.log" &
	local tp=$!; track $tp
	HPID=
	for _ in $(seq 100); do
		HPID=$(pgrep -P $tp -x holder)
		[ -n "$HPID" ] && break
		sleep 0.01
	done
	track $HPID
	for _ in $(seq 50); do [ -S "$W/$n.sock" ] && break; sleep 0.02; done
}

# start_server LOG args...: sets SPID (the protofs pid, not a wrapper)
start_server() {
	local log=$1; shift
	timeout -s KILL $T ./protofs "$@" 2>>"$W/$log" &
	local tp=$!
	track $tp
	SPID=
	for _ in $(seq 100); do
		SPID=$(pgrep -P $tp -x protofs)
		[ -n "$SPID" ] && break
		sleep 0.01
	done
	track $SPID
}

wait_serving() {	# wait_serving LOG [count]
	local want=${2:-1}
	for _ in $(seq 200); do
		[ "$(grep -c ' serving$' "$W/$1" 2>/dev/null)" -ge "$want" ] && return 0
		sleep 0.01
	done
	echo "server in $1 did not start"; return 1
}

child_of() {		# child_of PID NAME: the pid of NAME started under PID (timeout)
	local c
	for _ in $(seq 100); do
		c=$(pgrep -P "$1" -x "$2")
		[ -n "$c" ] && { echo "$c"; return; }
		sleep 0.01
	done
	echo "$1"
}

proc_state() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null || echo gone; }

# ---------------------------------------------------------------------------
sec_basic() {
	say "1. server mounts itself (fuse_session_mount), gives the fd to the holder; kill -9; successor"
	mkdir -p "$W/b/back" "$W/b/mnt"; MOUNTS+=("$W/b/mnt")
	start_holder b
	start_server b.log --holder "$W/b.sock" --name vol --backing "$W/b/back" --mount "$W/b/mnt"
	wait_serving b.log || return
	./probe mkfile "$W/b/mnt/data" 1048576
	md5a=$(md5sum < "$W/b/mnt/data")
	kill -9 "$SPID"; sleep 0.1
	echo "server killed; mount table still has: $(grep -c "$W/b/mnt" /proc/self/mounts) entry"
	start_server b.log --holder "$W/b.sock" --name vol --backing "$W/b/back"
	wait_serving b.log 2 || return
	md5b=$(md5sum < "$W/b/mnt/data")
	./probe write "$W/b/mnt/data" 4096 8192
	grep -E "INIT negotiated|INIT replayed|RESEND" "$W/b.log"
	if [ "$md5a" = "$md5b" ]; then
		note "basic: self-mounted fd survived kill -9, successor serves (data identical): OK"
	else
		note "basic: FAILED (data differs)"
	fi
	umount "$W/b/mnt"; sleep 0.2
	grep -E "connection gone" "$W/b.holder.log"
}

# ---------------------------------------------------------------------------
sec_holdermount() {
	say "2. the holder mounts (open /dev/fuse + mount(2)); first server gets the INIT from the kernel"
	mkdir -p "$W/hm/back" "$W/hm/mnt"; MOUNTS+=("$W/hm/mnt")
	start_holder hm
	./hctl "$W/hm.sock" mount vol "$W/hm/mnt" default_permissions || return
	start_server hm.log --holder "$W/hm.sock" --name vol --backing "$W/hm/back"
	wait_serving hm.log || return
	./probe mkfile "$W/hm/mnt/data" 65536 && ./probe read "$W/hm/mnt/data" 0 65536
	kill -9 "$SPID"; sleep 0.1
	start_server hm.log --holder "$W/hm.sock" --name vol --backing "$W/hm/back"
	wait_serving hm.log 2 || return
	if ./probe read "$W/hm/mnt/data" 0 65536 >/dev/null; then
		note "holder-mounted: fresh INIT recorded by the first server, successor resumed: OK"
	else
		note "holder-mounted: FAILED"
	fi
	./hctl "$W/hm.sock" list
	grep -E "fresh connection|INIT negotiated|INIT replayed" "$W/hm.log"
	umount "$W/hm/mnt"
}

# ---------------------------------------------------------------------------
sec_libfuse() {
	say "2b. libfuse 3.14 internals: resuming without the INIT replay, and with a different op.init"
	mkdir -p "$W/lf/back" "$W/lf/mnt"; MOUNTS+=("$W/lf/mnt")
	start_holder lf
	./hctl "$W/lf.sock" mount vol "$W/lf/mnt" || return
	start_server lf.log --holder "$W/lf.sock" --name vol --backing "$W/lf/back"
	wait_serving lf.log || return
	./probe mkfile "$W/lf/mnt/data" 4096
	kill -9 "$SPID"; sleep 0.1
	start_server lf.log --holder "$W/lf.sock" --name vol --backing "$W/lf/back" --skip-init-replay
	wait_serving lf.log 2 || return
	local r; r=$(./probe read "$W/lf/mnt/data" 0 4096)
	echo "$r"
	note "libfuse: successor without INIT replay (se->got_init == 0): every request answered $(echo "$r" | grep -o 'error=[0-9]* ([^)]*)')"
	kill -9 "$SPID"; sleep 0.1
	start_server lf.log --holder "$W/lf.sock" --name vol --backing "$W/lf/back" --other-init
	sleep 0.5
	grep "differs" "$W/lf.log" | tail -1
	note "libfuse: successor whose op.init computes other parameters: $(grep -c differs "$W/lf.log") refusal (replayed reply compared with the negotiated one)"
	start_server lf.log --holder "$W/lf.sock" --name vol --backing "$W/lf/back"
	wait_serving lf.log 3 || return
	./probe read "$W/lf/mnt/data" 0 4096
	umount "$W/lf/mnt"
}

# ---------------------------------------------------------------------------
# crash_case TAG "server fault args" "probe args" [extra server args]
crash_case() {
	local tag=$1 fault=$2 app=$3 extra=${4:-} t0 t1 st ppid
	mkdir -p "$W/$tag/back" "$W/$tag/mnt"; MOUNTS+=("$W/$tag/mnt")
	start_holder "$tag"
	./hctl "$W/$tag.sock" mount vol "$W/$tag/mnt" || return
	start_server "$tag.log" --holder "$W/$tag.sock" --name vol --backing "$W/$tag/back" $extra
	wait_serving "$tag.log" || return
	./probe mkfile "$W/$tag/mnt/victim" 262144
	kill -TERM "$SPID"; sleep 0.1		# restart it with the fault armed
	start_server "$tag.log" --holder "$W/$tag.sock" --name vol --backing "$W/$tag/back" $extra $fault
	wait_serving "$tag.log" 2 || return
	local fpid=$SPID
	t0=$(date +%s%N)
	timeout $T ./probe $app > "$W/$tag.app" 2>&1 &
	local apid=$!; track $apid
	ppid=$(child_of $apid probe)
	for _ in $(seq 100); do kill -0 "$fpid" 2>/dev/null || break; sleep 0.01; done
	sleep 0.3
	st="$(proc_state $ppid) in $(cat /proc/$ppid/wchan 2>/dev/null)"
	echo "server died in the request; application state after 0.3 s: $st (D/S = blocked, not failed)"
	start_server "$tag.log" --holder "$W/$tag.sock" --name vol --backing "$W/$tag/back" $extra
	wait $apid; t1=$(date +%s%N)
	cat "$W/$tag.app"
	grep -E "test fault|re-sent request|RESEND" "$W/$tag.log" | tail -3
	if grep -q "RESULT .* ok" "$W/$tag.app"; then
		note "$tag: app blocked during the crash, got the right answer from the successor, no error: OK ($(( (t1 - t0) / 1000000 )) ms incl. 0.3 s wait)"
	else
		note "$tag: app saw: $(grep RESULT "$W/$tag.app")"
	fi
	umount -l "$W/$tag/mnt"
}

sec_crash() {
	say "3a. abort() in the middle of a READ (page-cache read), single-threaded loop"
	crash_case crash-read "--crash-read victim" "read $W/crash-read/mnt/victim 65536 4096"
	say "3b. abort() in the middle of a READ, O_DIRECT-like (direct_io), libfuse mt loop without clone_fd"
	crash_case crash-read-mt "--crash-read victim" "read $W/crash-read-mt/mnt/victim 65536 4096" "--mt --direct-io"
	say "3c. abort() in the middle of a WRITE (direct_io)"
	crash_case crash-write "--crash-write victim" "write $W/crash-write/mnt/victim 8192 16384" "--direct-io"
}

sec_clonefd() {
	say "4. the same crash with clone_fd: requests read on a per-thread cloned fd die with it"
	crash_case clonefd "--crash-read victim" "read $W/clonefd/mnt/victim 65536 4096" "--mt --clone-fd --direct-io"
}

sec_rename() {
	say "5. abort() after a RENAME was done but before the reply: RESEND replays a non-idempotent request"
	mkdir -p "$W/rn/back" "$W/rn/mnt"; MOUNTS+=("$W/rn/mnt")
	start_holder rn
	./hctl "$W/rn.sock" mount vol "$W/rn/mnt" || return
	start_server rn.log --holder "$W/rn.sock" --name vol --backing "$W/rn/back" --crash-after-rename
	wait_serving rn.log || return
	echo x > "$W/rn/mnt/a"
	timeout $T ./probe rename "$W/rn/mnt/a" "$W/rn/mnt/b" > "$W/rn.app" &
	local apid=$!; track $apid
	sleep 0.3
	start_server rn.log --holder "$W/rn.sock" --name vol --backing "$W/rn/back"
	wait $apid
	cat "$W/rn.app"; ls "$W/rn/back"
	note "rename: replayed RENAME after a crash => $(grep -o 'RESULT.*' "$W/rn.app") (the rename had happened: needs an intent journal keyed by unique)"
	umount -l "$W/rn/mnt"
}

# ---------------------------------------------------------------------------
sec_oldkernel() {
	oldkernel_case abort
	oldkernel_case kill
}

oldkernel_case() {	# abort: leave the reader blocked; kill: SIGKILL it first
	local variant=$1 tag=ok-$1
	say "6 ($variant). kernel without FUSE_NOTIFY_RESEND (emulated: the successor does not send it)"
	mkdir -p "$W/$tag/back" "$W/$tag/mnt"; MOUNTS+=("$W/$tag/mnt")
	start_holder $tag
	./hctl "$W/$tag.sock" mount vol "$W/$tag/mnt" || return
	start_server $tag.log --holder "$W/$tag.sock" --name vol --backing "$W/$tag/back" --direct-io
	wait_serving $tag.log || return
	./probe mkfile "$W/$tag/mnt/victim" 65536
	kill -TERM "$SPID"; sleep 0.1
	start_server $tag.log --holder "$W/$tag.sock" --name vol --backing "$W/$tag/back" --direct-io --crash-read victim
	wait_serving $tag.log 2 || return
	timeout $T ./probe read "$W/$tag/mnt/victim" 0 4096 > "$W/$tag.app" &
	local apid=$!; track $apid
	local ppid; ppid=$(child_of $apid probe)
	sleep 0.3
	start_server $tag.log --holder "$W/$tag.sock" --name vol --backing "$W/$tag/back" --direct-io --no-resend
	wait_serving $tag.log 3 || return
	./probe read "$W/$tag/mnt/victim" 4096 4096 | sed 's/^/  another reader: /'
	sleep 1
	echo "orphaned reader after 1 s: state $(proc_state $ppid), wchan $(cat /proc/$ppid/wchan 2>/dev/null)"
	if [ "$variant" = kill ]; then
		kill -9 "$ppid"; sleep 1
		echo "after SIGKILL to the reader and 1 s: state $(proc_state $ppid), wchan $(cat /proc/$ppid/wchan 2>/dev/null)"
		note "old kernel: reader of an orphaned request survives SIGKILL (state $(proc_state $ppid) in request_wait_answer: the request was sent, the kernel waits uninterruptibly)"
	else
		note "old kernel: the request the dead server had read stays in the processing queue; its reader is blocked (state $(proc_state $ppid)) while new requests are served"
	fi
	local dev
	dev=$(mountpoint -d "$W/$tag/mnt" | cut -d: -f2)
	echo "fusectl: aborting connection $dev (what an operator or a timeout would do)"
	timeout 10 unshare --mount sh -c "mount -t fusectl none /sys/fs/fuse/connections &&
		echo \"waiting requests: \$(cat /sys/fs/fuse/connections/$dev/waiting)\" &&
		echo 1 > /sys/fs/fuse/connections/$dev/abort"
	wait $apid
	cat "$W/$tag.app"
	if [ "$variant" = kill ]; then
		note "old kernel: after the abort the killed reader is gone: $(proc_state $ppid)"
	else
		note "old kernel: after abort the blocked reader gets $(grep -o 'error=[0-9]*' "$W/$tag.app"), new calls: $(stat "$W/$tag/mnt" 2>&1 | head -1 | sed 's/.*: //')"
	fi
	sleep 0.2; grep "connection gone" "$W/$tag.holder.log"
	umount -l "$W/$tag/mnt"
}

# ---------------------------------------------------------------------------
# pause_run KIND: one 3 s probe loop with one event at 1.5 s
pause_run() {
	local kind=$1 r
	timeout $T ./probe loop "$W/p/mnt/data" 3 10 1450 2600 > "$W/p.app" 2>>"$W/p.app.err" &
	local apid=$!; track $apid
	sleep 1.5
	case $kind in
	kill9)			# successor started by the holder (--respawn)
		kill -9 "$(cat "$W/p.current")" ;;
	handover)		# planned: new server asks, holder stops the old one
		start_server p.log --holder "$W/p.sock" --name vol --backing "$W/p/back"
		echo "$SPID" > "$W/p.current" ;;
	none) ;;
	esac
	wait $apid
	r=$(grep -o 'RESULT.*' "$W/p.app")
	echo "  $kind: $r"
	echo "$kind $(echo "$r" | sed -n 's/.*errors=\([0-9]*\).*event_window_max_ms=\([0-9.]*\).*/\1 \2/p')" >> "$W/pause.txt"
	# the respawned server records its pid
	if [ "$kind" = kill9 ]; then
		for _ in $(seq 100); do
			[ "$(wc -l < "$W/respawned.pids")" -gt "${NRESP:-0}" ] && break; sleep 0.01
		done
		NRESP=$(wc -l < "$W/respawned.pids")
		tail -1 "$W/respawned.pids" > "$W/p.current"
	fi
}

sec_pause() {
	say "7. pause seen by an application (stat+open+pread 4K+pwrite 64B+close every 10 ms)"
	mkdir -p "$W/p/back" "$W/p/mnt"; MOUNTS+=("$W/p/mnt")
	: > "$W/respawned.pids"; : > "$W/pause.txt"; NRESP=0
	start_holder p --respawn "echo \$\$ >> $W/respawned.pids; exec $HERE/protofs --holder $W/p.sock --name \$HOLDER_SLOT --backing $W/p/back 2>>$W/p.log"
	./hctl "$W/p.sock" mount vol "$W/p/mnt" || return
	start_server p.log --holder "$W/p.sock" --name vol --backing "$W/p/back"
	echo "$SPID" > "$W/p.current"
	wait_serving p.log || return
	./probe mkfile "$W/p/mnt/data" 262144
	for i in 1 2 3 4 5; do pause_run none; pause_run kill9; pause_run handover; done
	awk '{n[$1]++; e[$1]+=$2; if ($3>m[$1]) m[$1]=$3; s[$1]+=$3}
	     END {for (k in n) printf "pause %-9s runs=%d errors=%d longest op in the event window (ms): mean=%.1f worst=%.1f\n", k, n[k], e[k], s[k]/n[k], m[k]}' \
		"$W/pause.txt" | sort | tee -a "$SUMMARY"
	# server-side gap, from the logs (microsecond timestamps, same clock):
	# kill9: holder sees the owner's socket close -> respawned successor serving;
	# handover: holder sends STOP -> successor serving
	cat "$W/p.holder.log" "$W/p.log" | sort -t' ' -k3,3n | awk '
		/owner connection lost/ { t0 = $3 + 0; k = "kill9" }
		/STOP sent to owner/ { t0 = $3 + 0; k = "handover" }
		/ serving$/ && t0 { d = ($3 - t0) * 1000; if (d < 0) d += 1000;
			n[k]++; s[k] += d; if (d > m[k]) m[k] = d; t0 = 0 }
		END { for (k in n) printf "server gap %-9s (owner lost or STOP -> successor serving): mean %.2f ms, worst %.2f ms over %d\n", k, s[k]/n[k], m[k], n[k] }' |
		tee -a "$SUMMARY"
	umount -l "$W/p/mnt"
}

# ---------------------------------------------------------------------------
# Container emulation.  $W/ns/kubelet is a shared mount (as kubelet's dir is
# with Bidirectional propagation).  The holder lives in its own PID+mount
# namespace (the "mounter" container) and mounts there; the mount propagates
# to the host.  A "pod" (own mount namespace) bind-mounts it.  The server
# lives in yet another PID+mount namespace (the "plugin" container) which is
# killed whole (its PID 1 gets SIGKILL) and recreated.  Then the holder is
# rolled (--takeover) like a DaemonSet update.
ns_server() {		# starts a server in a fresh pid+mount ns; sets NSPID (its init)
	timeout -s KILL $T unshare --pid --fork --mount --propagation private \
		"$HERE/protofs" --holder "$W/ns.sock" --name vol --backing "$W/ns/back" 2>>"$W/ns.log" &
	local tp=$!; track $tp
	NSPID=
	for _ in $(seq 100); do
		local u; u=$(pgrep -P $tp -x unshare)
		[ -n "$u" ] && NSPID=$(pgrep -P "$u" -x protofs)
		[ -n "$NSPID" ] && break
		sleep 0.01
	done
	track $NSPID
}

ns_holder() {		# holder in a fresh pid+mount ns sharing $W/ns/kubelet; sets NSHPID
	timeout $T unshare --pid --fork --mount --propagation unchanged \
		"$HERE/holder" -s "$W/ns.sock" "$@" 2>>"$W/ns.holder.log" &
	local tp=$!; track $tp
	NSHPID=
	for _ in $(seq 100); do
		local u; u=$(pgrep -P $tp -x unshare)
		[ -n "$u" ] && NSHPID=$(pgrep -P "$u" -x holder)
		[ -n "$NSHPID" ] && break
		sleep 0.01
	done
	track $NSHPID
}

sec_ns() {
	say "8. namespaces: holder in its own pid+mount ns, server in another, pod bind mount"
	mkdir -p "$W/ns/back" "$W/ns/kubelet" "$W/ns/pod"
	mount --bind "$W/ns/kubelet" "$W/ns/kubelet" && mount --make-shared "$W/ns/kubelet"
	mkdir -p "$W/ns/kubelet/global"
	MOUNTS+=("$W/ns/kubelet/global" "$W/ns/kubelet")
	ns_holder
	for _ in $(seq 50); do [ -S "$W/ns.sock" ] && break; sleep 0.02; done
	./hctl "$W/ns.sock" mount vol "$W/ns/kubelet/global" || return
	echo "host sees the mount made in the holder's namespace: $(grep -c "$W/ns/kubelet/global" /proc/self/mounts)"
	ns_server; wait_serving ns.log || return
	./probe mkfile "$W/ns/kubelet/global/data" 262144
	# the pod: own mount namespace, a bind mount of the volume, a workload
	timeout $T unshare --mount --propagation slave sh -c "
		mount --bind $W/ns/kubelet/global $W/ns/pod &&
		exec $HERE/probe loop $W/ns/pod/data 9 10" > "$W/ns.app" 2>"$W/ns.app.err" &
	local pod=$!; track $pod
	sleep 1.5
	echo "t=1.5s kill the server's whole pid namespace (PID 1 $NSPID), start a new one"
	kill -9 "$NSPID"; ns_server
	sleep 1.5
	echo "t=3s roll the holder: new holder in a new namespace takes the fds over"
	local oldh=$NSHPID
	ns_holder --takeover
	sleep 1.5
	echo "t=4.5s kill the server's namespace again; the successor gets the fd from the new holder"
	kill -9 "$NSPID"; ns_server
	sleep 1.5
	echo "t=6s planned handover to a new server namespace"
	local old=$NSPID; ns_server
	sleep 3.5
	wait $pod
	cat "$W/ns.app"; cat "$W/ns.app.err" | tail -5
	grep -E "takeover|slot vol" "$W/ns.holder.log" | tail -6
	if grep -q "errors=0 .*records_bad=0" "$W/ns.app"; then
		note "namespaces: pod bind mount kept working across 2 server-namespace kills, a holder roll and a handover: OK ($(grep -o 'max_pause_ms=[0-9.]*' "$W/ns.app"))"
	else
		note "namespaces: $(grep RESULT "$W/ns.app")"
	fi
	echo "now kill holder and server together: the last fd closes, the connection aborts"
	echo "old holder $oldh: $(proc_state $oldh) (exited after the takeover)"
	kill -9 "$NSHPID" "$NSPID"; sleep 0.3
	timeout 10 unshare --mount --propagation slave sh -c "
		mount --bind $W/ns/kubelet/global $W/ns/pod 2>/dev/null; stat $W/ns/kubelet/global 2>&1 | head -1"
	note "namespaces: with no fd left, the mount is dead (ENOTCONN) until remounted"
	umount -l "$W/ns/kubelet/global"; umount -l "$W/ns/kubelet"
}

SECTIONS=${*:-basic holdermount libfuse crash clonefd rename oldkernel pause ns}
echo "kernel $(uname -r), libfuse $(pkg-config --modversion fuse3), work dir $W"
echo "fs.fuse.max_request_timeout=$(cat /proc/sys/fs/fuse/max_request_timeout 2>/dev/null || echo n/a)"
for s in $SECTIONS; do "sec_$s"; done
say "SUMMARY"
cat "$SUMMARY"
