#!/bin/sh
# rgw.sh - a throwaway one-node Ceph RADOS Gateway (Debian 12's ceph 16.2,
# Pacific) on 127.0.0.1, for tests and benchmarks.
#
#   rgw.sh start WORKDIR   configure and start one monitor, one OSD and
#                          radosgw (beast frontend) on free ports; create a
#                          user with fixed keys; wait (at most 60 s) until a
#                          signed S3 request succeeds; create the test
#                          bucket; write WORKDIR/env (shell assignments:
#                          OBJFS_TEST_S3_ENDPOINT, _REGION, _BUCKET,
#                          _ACCESS_KEY, _SECRET_KEY, and _NETRC, a netrc
#                          file for curl --aws-sigv4).
#   rgw.sh stop WORKDIR    stop everything start started (pid files, each
#                          daemon in its own process group); safe to call
#                          twice.
#   rgw.sh installed       exit 0 if the packages are installed, else say
#                          which are missing and exit 1.
#
# Everything lives in WORKDIR: ceph.conf, the monitor's and the OSD's data,
# run files, admin sockets and logs (WORKDIR/log); every ceph command is
# given -c WORKDIR/ceph.conf, so /etc/ceph is neither read nor written, and
# no systemd unit is used.  No mgr runs: `ceph df` shows zeros without one
# (use `radosgw-admin bucket stats`).
#
# Environment:
#   OBJFS_RGW_STORE=memstore|bluestore   the OSD's object store (default
#       memstore: RAM only, fastest start; bluestore puts a sparse file of
#       OBJFS_RGW_STORE_MB under WORKDIR and takes about 8 s more to start)
#   OBJFS_RGW_STORE_MB    the store's size in MiB (default 3072; memstore
#       only takes what is written, but PUTs hang, not fail, when full)
#
# Debian packages: ceph-mon ceph-osd radosgw ceph-common.
set -eu

PY=/usr/bin/python3
REGION=us-east-1
BUCKET=objfs-test
ACCESS=objfstestaccess
SECRET=objfstestsecretkey0123456789
STORE=${OBJFS_RGW_STORE:-memstore}
STORE_MB=${OBJFS_RGW_STORE_MB:-3072}
WAIT=60

usage() {
	echo "usage: $0 start|stop WORKDIR | installed" >&2
	exit 2
}

installed() {
	for p in /usr/bin/ceph-mon /usr/bin/ceph-osd /usr/bin/radosgw \
		/usr/bin/ceph /usr/bin/monmaptool /usr/bin/radosgw-admin; do
		if [ ! -x "$p" ]; then
			echo "rgw.sh: $p missing: apt-get install ceph-mon ceph-osd radosgw ceph-common" >&2
			return 1
		fi
	done
}

if [ $# -eq 1 ] && [ "$1" = installed ]; then
	installed
	exit
fi
[ $# -eq 2 ] || usage
CMD=$1
W=$2

stop_pid() {
	# $1: pid file, $2: seconds to wait for a clean exit before SIGKILL.
	[ -f "$1" ] || return 0
	pid=$(cat "$1")
	rm -f "$1"
	case "$pid" in ''|*[!0-9]*) return 0 ;; esac
	kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || return 0
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt $(($2 * 10)) ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
	# The group may outlive its leader for a moment (threads exiting).
	i=0
	while kill -0 -- "-$pid" 2>/dev/null && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

do_stop() {
	[ -d "$W/run" ] || return 0
	stop_pid "$W/run/rgw.pid" 5
	stop_pid "$W/run/osd.pid" 5
	stop_pid "$W/run/mon.pid" 5
}

if [ "$CMD" = stop ]; then
	do_stop
	exit 0
fi
[ "$CMD" = start ] || usage

installed || exit 1
case "$STORE" in memstore|bluestore) ;; *)
	echo "rgw.sh: OBJFS_RGW_STORE must be memstore or bluestore" >&2
	exit 2 ;;
esac

mkdir -p "$W/mon" "$W/osd" "$W/run" "$W/log" "$W/rgw"
W=$(cd "$W" && pwd)
C=$W/ceph.conf

# Free ports: the monitor's v2 and v1, radosgw, and a range of 8 for the OSD
# (ms bind port min/max; it binds 4 of them).  A range is taken where 8
# consecutive ports are free now.
PORTS=$("$PY" - <<'EOF'
import random, socket

def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        s.close()

ports = []
socks = []
for _ in range(3):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
    ports.append(s.getsockname()[1])
for s in socks:
    s.close()
for _ in range(200):
    base = random.randrange(20000, 30000)
    if all(free(p) for p in range(base, base + 8)) and \
            not set(ports) & set(range(base, base + 8)):
        ports.append(base)
        break
print(" ".join(str(p) for p in ports))
EOF
)
set -- $PORTS
[ $# -eq 4 ] || { echo "rgw.sh: no free ports" >&2; exit 1; }
MONPORT=$1 MONPORT1=$2 RGWPORT=$3 OSDPORT=$4
FSID=$(cat /proc/sys/kernel/random/uuid)
OSD_UUID=$(cat /proc/sys/kernel/random/uuid)
MON_ADDR="[v2:127.0.0.1:$MONPORT,v1:127.0.0.1:$MONPORT1]"

if [ "$STORE" = memstore ]; then
	STORE_CONF="osd objectstore = memstore
memstore device bytes = $((STORE_MB * 1024 * 1024))"
else
	STORE_CONF="osd objectstore = bluestore
bluestore block create = true
bluestore block path = $W/osd/block
bluestore block size = $((STORE_MB * 1024 * 1024))
bluestore block db create = false
bluestore block wal create = false
bluestore cache size = 134217728"
fi

cat > "$C" <<EOF
[global]
fsid = $FSID
mon host = $MON_ADDR
public network = 127.0.0.0/8
auth cluster required = none
auth service required = none
auth client required = none
# With auth none, radosgw loops on "get_initial_auth_request returned -13"
# unless the monitor client accepts crc.
ms mon client mode = crc secure
ms bind ipv4 = true
ms bind ipv6 = false
ms bind port min = $OSDPORT
ms bind port max = $((OSDPORT + 7))
run dir = $W/run
admin socket = $W/run/\$cluster-\$name.asok
log file = $W/log/\$name.log
log to stderr = false
err to stderr = false
log to syslog = false
mon cluster log file = $W/log/cluster.log
crash dir = $W/crash
keyring = $W/keyring
# Start in about 2 s instead of 16.
paxos propose interval = 0.05
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon max pg per osd = 1000
osd crush chooseleaf type = 0
# Small memory on a shared 2-core machine.
osd memory target = 536870912
osd op num shards = 1
osd op num threads per shard = 2
ms async op threads = 2

[mon]
mon data = $W/mon
mon initial members = a

[osd]
osd data = $W/osd
$STORE_CONF

[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$RGWPORT tcp_nodelay=1
rgw data = $W/rgw
rgw thread pool size = 64
# Per-request logs cost 10-20%.
debug rgw = 0/0
debug ms = 0/0
# Else shutdown takes 3 to 18 s.
rgw enable lc threads = false
rgw enable gc threads = true
rgw gc obj min wait = 60
rgw dynamic resharding = false
EOF
: > "$W/keyring"

cat > "$W/netrc" <<EOF
machine 127.0.0.1 login $ACCESS password $SECRET
EOF
chmod 600 "$W/netrc"

# Debian's Ceph uses glibc malloc: without this, memory freed by deletes
# stays resident (the OSD keeps 1.3 GB instead of 0.3).
export MALLOC_MMAP_THRESHOLD_=131072

# From here on, a failure stops whatever was started.
trap 'do_stop' EXIT

log() { echo "rgw.sh: $*" >&2; }

# daemon NAME CMD...: start CMD in the foreground of its own session
# (process group), pid in WORKDIR/run/NAME.pid.
daemon() {
	name=$1
	shift
	setsid "$@" </dev/null >"$W/log/$name.out" 2>&1 &
	echo $! > "$W/run/$name.pid"
}

monmaptool --create --fsid "$FSID" --addv a "$MON_ADDR" "$W/monmap" \
	>"$W/log/monmaptool.out" 2>&1
ceph-mon -c "$C" -i a --mkfs --monmap "$W/monmap" >"$W/log/mon-mkfs.out" 2>&1
daemon mon ceph-mon -c "$C" -i a -f

cc() { timeout 30 ceph -c "$C" --connect-timeout 20 "$@"; }

if ! cc osd new "$OSD_UUID" >"$W/log/osd-new.out" 2>&1; then
	log "ceph osd new failed:"; cat "$W/log/osd-new.out" >&2; exit 1
fi
OSD_ID=$(cat "$W/log/osd-new.out")
[ "$OSD_ID" = 0 ] || { log "unexpected osd id '$OSD_ID'"; exit 1; }
ceph-osd -c "$C" -i 0 --mkfs --osd-uuid "$OSD_UUID" >"$W/log/osd-mkfs.out" 2>&1
daemon osd ceph-osd -c "$C" -i 0 -f

# The user, with fixed keys (radosgw-admin talks to RADOS directly; it waits
# for the OSD to come up, and creates the default zone before radosgw
# starts, so the two do not race to create it).
if ! timeout 60 radosgw-admin -c "$C" user create --uid=objfs \
	--display-name=objfs --access-key="$ACCESS" --secret-key="$SECRET" \
	>"$W/log/user-create.out" 2>&1; then
	log "radosgw-admin user create failed:"; tail -n 20 "$W/log/user-create.out" >&2
	exit 1
fi
daemon rgw radosgw -c "$C" -n client.rgw.a -f

# Wait for a signed request (creating the bucket) to succeed.
"$PY" - "http://127.0.0.1:$RGWPORT" "$REGION" "$BUCKET" "$ACCESS" \
	"$SECRET" "$WAIT" <<'EOF'
import datetime, hashlib, hmac, sys, time, urllib.error, urllib.request

endpoint, region, bucket, ak, sk, wait = sys.argv[1:7]
host = endpoint.split("://", 1)[1]


def sign(method, path):
    now = datetime.datetime.utcnow()
    amz = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz[:8]
    ph = hashlib.sha256(b"").hexdigest()
    creq = "\n".join([method, path, "", "host:" + host,
                      "x-amz-content-sha256:" + ph, "x-amz-date:" + amz, "",
                      "host;x-amz-content-sha256;x-amz-date", ph])
    scope = "%s/%s/s3/aws4_request" % (day, region)
    sts = "\n".join(["AWS4-HMAC-SHA256", amz, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + sk).encode()
    for m in (day, region, "s3", "aws4_request"):
        k = hmac.new(k, m.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    return {"x-amz-date": amz, "x-amz-content-sha256": ph,
            "Authorization": "AWS4-HMAC-SHA256 Credential=%s/%s, "
            "SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
            "Signature=%s" % (ak, scope, sig)}


deadline = time.time() + float(wait)
last = None
while time.time() < deadline:
    try:
        req = urllib.request.Request(endpoint + "/" + bucket, method="PUT",
                                     headers=sign("PUT", "/" + bucket),
                                     data=b"")
        urllib.request.urlopen(req, timeout=10).read()
        sys.exit(0)
    except urllib.error.HTTPError as e:
        body = e.read()
        if e.code == 409:       # BucketAlreadyOwnedByYou
            sys.exit(0)
        last = "HTTP %d %r" % (e.code, body[:200])
    except Exception as e:      # not listening yet
        last = repr(e)
    time.sleep(0.2)
sys.stderr.write("rgw.sh: no signed request succeeded in %s s: %s\n"
                 % (wait, last))
sys.exit(1)
EOF

cat > "$W/env" <<EOF
OBJFS_TEST_S3_ENDPOINT=http://127.0.0.1:$RGWPORT
OBJFS_TEST_S3_REGION=$REGION
OBJFS_TEST_S3_BUCKET=$BUCKET
OBJFS_TEST_S3_ACCESS_KEY=$ACCESS
OBJFS_TEST_S3_SECRET_KEY=$SECRET
OBJFS_TEST_S3_NETRC=$W/netrc
EOF
trap - EXIT
echo "rgw.sh: RGW ($STORE) ready at http://127.0.0.1:$RGWPORT (bucket $BUCKET)"
