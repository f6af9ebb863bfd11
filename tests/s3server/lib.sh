# lib.sh - shell functions shared by the test servers' scripts (swift.sh,
# rgw.sh); sourced, not run.  Signed requests: awsreq.py beside it.

# need NAME PACKAGES PROGRAM...: 0 if every PROGRAM is installed, else
# names the one missing and the Debian packages to install, and 1.
need() {
	name=$1
	pkgs=$2
	shift 2
	for p in "$@"; do
		if [ ! -x "$p" ]; then
			echo "$name: $p missing: apt-get install $pkgs" >&2
			return 1
		fi
	done
}

# server_args ARGS...: the command line of a server script.  `installed`
# exits with the status of the script's installed(); `start|stop WORKDIR`
# sets CMD and W; anything else is a usage error.
server_args() {
	if [ $# -eq 1 ] && [ "$1" = installed ]; then
		installed
		exit
	fi
	if [ $# -ne 2 ] || { [ "$1" != start ] && [ "$1" != stop ]; }; then
		echo "usage: $0 start|stop WORKDIR | installed" >&2
		exit 2
	fi
	CMD=$1
	W=$2
}

# group_alive PGID: whether a process of group PGID still runs (zombies,
# which their reaper may take a while to collect, do not count).
group_alive() {
	ps -eo pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { f = 1 } END { exit !f }'
}

# stop_pid PIDFILE: stops the process group led by the pid in PIDFILE (each
# server runs in its own, started by setsid), TERM then, after 10 s, KILL;
# removes PIDFILE.  Only the group: a server gone already may have left its
# pid to another process (a full run once lost `make check` that way).  The
# waits are bounded by the clock, not by a count of polls: on a loaded
# machine one poll (ps, awk, sleep) takes up to a second, and 2 x 50 polls
# outlasted the 60 s a caller gives `stop`.
stop_pid() {
	[ -f "$1" ] || return 0
	pid=$(cat "$1")
	rm -f "$1"
	case "$pid" in ''|*[!0-9]*) return 0 ;; esac
	kill -TERM "-$pid" 2>/dev/null || return 0
	end=$(($(date +%s) + 10))
	while group_alive "$pid" && [ "$(date +%s)" -lt $end ]; do
		sleep 0.2
	done
	group_alive "$pid" || return 0
	kill -KILL "-$pid" 2>/dev/null || true
	end=$(($(date +%s) + 10))
	while group_alive "$pid" && [ "$(date +%s)" -lt $end ]; do
		sleep 0.2
	done
}

# create_bucket NAME ENDPOINT REGION BUCKET ACCESS_KEY SECRET_KEY SECONDS:
# waits until a SigV4-signed request creating BUCKET succeeds (or says the
# bucket is already ours), at most SECONDS; NAME prefixes the error.
create_bucket() {
	/usr/bin/python3 - "$(dirname "$0")" "$@" <<'PYEOF'
import sys, time

sys.path.insert(0, sys.argv[1])
import awsreq

name, endpoint, region, bucket, ak, sk, wait = sys.argv[2:9]
deadline = time.time() + float(wait)
last = None
while time.time() < deadline:
    try:
        status, _, body = awsreq.request(endpoint, region, "s3", ak, sk, "PUT",
                                         "/" + bucket)
        if status == 200 or status == 409:      # 409: BucketAlreadyOwnedByYou
            sys.exit(0)
        last = "HTTP %d %r" % (status, body[:200])
    except Exception as e:      # not listening yet
        last = repr(e)
    time.sleep(0.2)
sys.stderr.write("%s: no signed request succeeded in %s s: %s\n"
                 % (name, wait, last))
sys.exit(1)
PYEOF
}

# write_env DIR ENDPOINT REGION BUCKET ACCESS_KEY SECRET_KEY: DIR/env (the
# OBJFS_TEST_S3_* assignments) and DIR/netrc (for curl --aws-sigv4).
write_env() {
	printf 'machine 127.0.0.1 login %s password %s\n' "$5" "$6" > "$1/netrc"
	chmod 600 "$1/netrc"
	cat > "$1/env" <<ENVEOF
OBJFS_TEST_S3_ENDPOINT=$2
OBJFS_TEST_S3_REGION=$3
OBJFS_TEST_S3_BUCKET=$4
OBJFS_TEST_S3_ACCESS_KEY=$5
OBJFS_TEST_S3_SECRET_KEY=$6
OBJFS_TEST_S3_NETRC=$1/netrc
ENVEOF
}
