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
#                          _ACCESS_KEY, _SECRET_KEY, _NETRC, a netrc
#                          file for curl --aws-sigv4, and _VHOST_ENDPOINT,
#                          http://s3.localhost:PORT, where RGW answers
#                          virtual-hosted requests: rgw_dns_name).
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
#   OBJFS_RGW_GC_S        collect the garbage of overwritten and deleted
#       objects every so many seconds, once it is that old (default: 60 s
#       old, every hour, RGW's period: the store only grows); what lets a
#       benchmark overwrite more than the store holds (bench/series.sh)
#   OBJFS_RGW_STS=1       enable STS (rgw_sts_key, rgw_s3_auth_use_sts); the
#       user may always create OIDC providers and roles and manage keys
#       through the admin API (caps)
#
# Debian packages: ceph-mon ceph-osd radosgw ceph-common.
set -eu
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
REGION=us-east-1
BUCKET=objfs-test
ACCESS=objfstestaccess
SECRET=objfstestsecretkey0123456789
STORE=${OBJFS_RGW_STORE:-memstore}
STORE_MB=${OBJFS_RGW_STORE_MB:-3072}
GC_S=${OBJFS_RGW_GC_S:-}
WAIT=60

installed() {
	need rgw.sh "ceph-mon ceph-osd radosgw ceph-common" /usr/bin/ceph-mon \
		/usr/bin/ceph-osd /usr/bin/radosgw /usr/bin/ceph \
		/usr/bin/monmaptool /usr/bin/radosgw-admin
}
server_args "$@"

# Each daemon takes about 2 s to exit on SIGTERM: all are stopped at once.
do_stop() {
	[ -d "$W/run" ] || return 0
	for d in rgw osd mon; do
		stop_pid "$W/run/$d.pid" &
	done
	wait
}

if [ "$CMD" = stop ]; then
	do_stop
	exit 0
fi

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
bluestore block path = $W/block
bluestore block size = $((STORE_MB * 1024 * 1024))
bluestore block db create = false
bluestore block wal create = false
bluestore cache size = 134217728"
fi

# STS only when asked: with rgw_s3_auth_use_sts, a request signed with a
# wrong secret key answers AccessDenied instead of SignatureDoesNotMatch.
STS_CONF=
if [ "${OBJFS_RGW_STS:-0}" = 1 ]; then
	# AssumeRoleWithWebIdentity; the key encrypts session tokens (16 bytes)
	STS_CONF="rgw sts key = objfstestststkey
rgw s3 auth use sts = true"
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
# Virtual-hosted addressing: BUCKET.s3.localhost (curl resolves every
# name under localhost to the loopback itself, no DNS or /etc/hosts).
rgw dns name = s3.localhost
$STS_CONF
rgw data = $W/rgw
rgw thread pool size = 64
# Per-request logs cost 10-20%.
debug rgw = 0/0
debug ms = 0/0
# Else shutdown takes 3 to 18 s.
rgw enable lc threads = false
rgw enable gc threads = true
rgw gc obj min wait = ${GC_S:-60}
${GC_S:+rgw gc processor period = $GC_S}
${GC_S:+rgw gc processor max time = $GC_S}
rgw dynamic resharding = false
EOF
: > "$W/keyring"

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
if ! timeout 60 radosgw-admin -c "$C" caps add --uid=objfs \
	--caps="roles=*;oidc-provider=*;users=*" >"$W/log/caps-add.out" 2>&1; then
	log "radosgw-admin caps add failed:"; tail -n 20 "$W/log/caps-add.out" >&2
	exit 1
fi
daemon rgw radosgw -c "$C" -n client.rgw.a -f

# Wait for a signed request (creating the bucket) to succeed.
create_bucket rgw.sh "http://127.0.0.1:$RGWPORT" "$REGION" "$BUCKET" "$ACCESS" "$SECRET" $WAIT

write_env "$W" "http://127.0.0.1:$RGWPORT" "$REGION" "$BUCKET" "$ACCESS" "$SECRET"
echo "OBJFS_TEST_S3_VHOST_ENDPOINT=http://s3.localhost:$RGWPORT" >> "$W/env"
trap - EXIT
echo "rgw.sh: RGW ($STORE) ready at http://127.0.0.1:$RGWPORT (bucket $BUCKET)"
