#!/bin/sh
# swift.sh - a throwaway one-node OpenStack Swift with the s3api middleware on
# 127.0.0.1, for tests and benchmarks.
#
#   swift.sh start WORKDIR   configure and start memcached, the account,
#                            container and object servers and the proxy on
#                            free ports; wait (at most 30 s) until a signed
#                            S3 request succeeds; create the test bucket;
#                            write WORKDIR/env (shell assignments:
#                            OBJFS_TEST_S3_ENDPOINT, _REGION, _BUCKET,
#                            _ACCESS_KEY, _SECRET_KEY, and _NETRC, a netrc
#                            file for curl --aws-sigv4).
#   swift.sh stop WORKDIR    stop everything start started (pid files);
#                            safe to call twice.
#   swift.sh installed       exit 0 if the packages are installed, else say
#                            which are missing and exit 1.
#
# Everything lives in WORKDIR: configs, rings, devices, logs (WORKDIR/log).
# Swift reads /etc/swift/swift.conf when its modules load; the servers are
# started through WORKDIR/run.py, which points swift at WORKDIR/etc/swift.conf
# before the rest of swift is imported, so /etc is never written.
#
# Debian packages: swift swift-proxy swift-object swift-container
# swift-account python3-swift memcached python3-memcache.
set -eu
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
REGION=us-east-1
BUCKET=objfs-test
ACCOUNT=test
USERNAME=tester
SECRET=testing
SERVERS="account container object proxy"

installed() {
	need swift.sh "swift swift-proxy swift-object swift-container swift-account python3-swift memcached python3-memcache" \
		/usr/bin/swift-proxy-server /usr/bin/memcached
}
server_args "$@"

do_stop() {
	[ -d "$W/run" ] || return 0
	for s in proxy object container account memcached; do
		stop_pid "$W/run/$s.pid"
	done
}

if [ "$CMD" = stop ]; then
	do_stop
	exit 0
fi

installed || exit 1

mkdir -p "$W/etc" "$W/srv/node/d1" "$W/run" "$W/log"
W=$(cd "$W" && pwd)
USER_NAME=$(id -un)

# Free ports and the three rings, in one Python process.
PORTS=$("$PY" - "$W/etc" <<'EOF'
import os, socket, sys
from swift.common.ring import RingBuilder

socks = []
for _ in range(5):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
ports = [s.getsockname()[1] for s in socks]
for s in socks:
    s.close()
for name, port in zip(("account", "container", "object"), ports):
    b = RingBuilder(8, 1, 1)
    b.add_dev({"id": 0, "region": 1, "zone": 1, "ip": "127.0.0.1",
               "port": port, "device": "d1", "weight": 100})
    b.rebalance()
    b.get_ring().save(os.path.join(sys.argv[1], name + ".ring.gz"))
print(" ".join(str(p) for p in ports))
EOF
)
set -- $PORTS
APORT=$1 CPORT=$2 OPORT=$3 PPORT=$4 MPORT=$5

cat > "$W/etc/swift.conf" <<EOF
[swift-hash]
swift_hash_path_suffix = objfs-test
swift_hash_path_prefix = objfs-test

[storage-policy:0]
name = Policy-0
default = yes

[swift-constraints]
max_meta_name_length = 128
max_meta_value_length = 8192
max_meta_count = 512
max_meta_overall_size = 65536
max_header_size = 65536
max_object_name_length = 1024
EOF

common() {
	cat <<EOF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $1
workers = $2
user = $USER_NAME
swift_dir = $W/etc
devices = $W/srv/node
mount_check = false
log_name = $3
log_level = INFO
EOF
}

# The object server gets two workers (parallel part uploads on 2 cores);
# account and container servers run in one process.
workers_for() {
	[ "$1" = object ] && echo 2 || echo 0
}

for kind in account container object; do
	case $kind in
	account) port=$APORT ;;
	container) port=$CPORT ;;
	object) port=$OPORT ;;
	esac
	{
		common "$port" "$(workers_for $kind)" "$kind-server"
		cat <<EOF

[pipeline:main]
pipeline = $kind-server

[app:$kind-server]
use = egg:swift#$kind
EOF
	} > "$W/etc/$kind-server.conf"
done

{
	common "$PPORT" 2 proxy-server
	cat <<EOF

[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats bulk s3api tempauth copy slo dlo proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true

[filter:catch_errors]
use = egg:swift#catch_errors

[filter:gatekeeper]
use = egg:swift#gatekeeper

[filter:healthcheck]
use = egg:swift#healthcheck

[filter:proxy-logging]
use = egg:swift#proxy_logging

[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:$MPORT

[filter:listing_formats]
use = egg:swift#listing_formats

[filter:bulk]
use = egg:swift#bulk

[filter:s3api]
use = egg:swift#s3api
location = $REGION
max_upload_part_num = 10000
max_multi_delete_objects = 1000
multi_delete_concurrency = 8

[filter:tempauth]
use = egg:swift#tempauth
user_${ACCOUNT}_${USERNAME} = $SECRET .admin

[filter:copy]
use = egg:swift#copy

[filter:slo]
use = egg:swift#slo

[filter:dlo]
use = egg:swift#dlo
EOF
} > "$W/etc/proxy-server.conf"

# The server launcher: swift.conf from WORKDIR, then swift's own run_wsgi.
cat > "$W/run.py" <<'EOF'
import os, sys
conf_dir, kind, conf_file, pid_file = sys.argv[1:5]
try:
    os.setsid()
except OSError:
    pass
with open(pid_file + ".tmp", "w") as f:
    f.write("%d\n" % os.getpid())
os.rename(pid_file + ".tmp", pid_file)
from swift.common import utils
utils.SWIFT_CONF_FILE = os.path.join(conf_dir, "swift.conf")
utils.HASH_PATH_SUFFIX = b""
utils.HASH_PATH_PREFIX = b""
utils.validate_hash_conf()
from swift.common import constraints, storage_policy
constraints.reload_constraints()
storage_policy.reload_storage_policies()
from swift.common.wsgi import run_wsgi
kw = {}
if kind == "object-server":
    from swift.obj import server
    kw["global_conf_callback"] = server.global_conf_callback
sys.exit(run_wsgi(conf_file, kind, verbose=True, **kw))
EOF

# From here on, a failure stops whatever was started.
trap 'do_stop' EXIT

# memcached daemonizes and writes its own pid; each swift server writes its
# pid from run.py after making itself a session (and process group) leader,
# so stop can kill the group (the proxy's workers with it).
memcached -d -P "$W/run/memcached.pid" -l 127.0.0.1 -p "$MPORT" -U 0 \
	-u "$USER_NAME" -m 64 </dev/null >"$W/log/memcached.log" 2>&1
for kind in $SERVERS; do
	"$PY" "$W/run.py" "$W/etc" "$kind-server" "$W/etc/$kind-server.conf" \
		"$W/run/$kind.pid" </dev/null >"$W/log/$kind-server.log" 2>&1 &
done
# Wait for a signed request (creating the bucket) to succeed.
create_bucket swift.sh "http://127.0.0.1:$PPORT" "$REGION" "$BUCKET" "$ACCOUNT:$USERNAME" "$SECRET" 30

write_env "$W" "http://127.0.0.1:$PPORT" "$REGION" "$BUCKET" "$ACCOUNT:$USERNAME" "$SECRET"
trap - EXIT
echo "swift.sh: s3api ready at http://127.0.0.1:$PPORT (bucket $BUCKET)"
