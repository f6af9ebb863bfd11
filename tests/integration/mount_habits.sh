#!/bin/sh
# mount(8) habits (issue 32 item 5), through mount.objfs as `mount -t
# objfs` runs it (detached objfs-mount):
#  1. a mount that succeeds prints nothing, and its log_file= holds every
#     line of the mount, those from before it detached too;
#  2. a mount that fails prints its error (one line, naming the cause);
#  3. http:// to an https port fails at once saying "use https://" (not
#     after retry_timeout), and https:// to an http port says "use http://";
#  4. on an S3 server (Swift, else Ceph RGW, started here on 127.0.0.1): a
#     prefix that is an object warns, in one line naming it; a prefix with
#     keys mounts silently.
# Needs root and /dev/fuse (skips with 77 only when they are absent); part
# 4 needs the S3 server's packages.
set -u
: "${OBJFS_SRCDIR:=$(dirname "$0")/../..}"
: "${OBJFS_BUILDDIR:=$OBJFS_SRCDIR}"
: "${PYTHON3:=/usr/bin/python3}"
export AWS_EC2_METADATA_DISABLED=true
if [ "$(id -u)" -ne 0 ] || [ ! -e /dev/fuse ]; then
	echo "SKIP: needs root and /dev/fuse"
	exit 77
fi
BUILD=$(cd "$OBJFS_BUILDDIR" && pwd)
W=$(mktemp -d /tmp/objfs-mount-habits.XXXXXX)
S3SH=""
PIDS=""
cleanup() {
	for m in "$W"/mnt*; do
		mountpoint -q "$m" 2>/dev/null && fusermount3 -u -z "$m"
	done
	for p in $PIDS; do
		kill "$p" 2>/dev/null
	done
	[ -n "$S3SH" ] && timeout 60 sh "$S3SH" stop "$W/s3" >/dev/null 2>&1
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# mount(8)'s view: /sbin/mount.objfs, objfs-mount beside it
mkdir -p "$W/bin" "$W/store" "$W/spool" "$W/mnt1" "$W/mnt2" "$W/mnt3" "$W/mnt4"
cp "$OBJFS_SRCDIR/src/mount.objfs" "$W/bin/mount.objfs"
ln -s "$BUILD/objfs-mount" "$W/bin/objfs-mount"
: >"$W/store/.objfs-store"

# waits (60 s at most) until file $1 has a line matching $2
wait_line() {
	i=0
	while [ $i -lt 600 ]; do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# 1. success: silence; the log file has the whole mount
sh "$W/bin/mount.objfs" "file://$W/store/vol" "$W/mnt1" \
	-o "spool_dir=$W/spool,log_file=$W/vol.log" >"$W/out1" 2>"$W/err1"
rc=$?
[ $rc -eq 0 ] || fail "mount.objfs exited $rc: $(cat "$W/err1")"
[ ! -s "$W/out1" ] && [ ! -s "$W/err1" ] ||
	fail "a mount that succeeds printed: $(cat "$W/out1" "$W/err1")"
mountpoint -q "$W/mnt1" || fail "not mounted"
echo hello >"$W/mnt1/f" || fail "write to the mount"
fusermount3 -u "$W/mnt1"
wait_line "$W/vol.log" "exiting with status 0" || fail "the mount did not end cleanly"
# the server's lines from before it detached (the store it opened, the
# filesystem's start) and the keeper's and server's lines after
for want in '"store file://' '"mounted (max_write' 'server pid' "mounted on $W/mnt1"; do
	grep -q "$want" "$W/vol.log" || fail "log_file lacks $want: $(cat "$W/vol.log")"
done

# 2. failure: the error on the terminal, one line naming the cause
touch "$W/mnt2/not-empty"
sh "$W/bin/mount.objfs" "file://$W/store/vol" "$W/mnt2" \
	-o "spool_dir=$W/spool,log_file=$W/vol2.log" >"$W/out2" 2>"$W/err2"
rc=$?
[ $rc -ne 0 ] || fail "a non-empty mount point was mounted"
[ "$(wc -l <"$W/err2")" -eq 1 ] && grep -q '"level":"error".*is not empty' "$W/err2" ||
	fail "the error line: $(cat "$W/err2")"
[ ! -s "$W/out2" ] || fail "stdout: $(cat "$W/out2")"

# 3. the wrong scheme, both ways: a TLS server and a plain HTTP one
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -days 1 \
	-keyout "$W/key.pem" -out "$W/cert.pem" >/dev/null 2>&1 || fail "openssl req"
cat >"$W/servers.py" <<'EOF'
import http.server, socket, ssl, sys, threading
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
tls = socket.socket()
tls.bind(("127.0.0.1", 0))
tls.listen(64)
plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
with open(sys.argv[3], "w") as f:
    f.write("%d %d\n" % (tls.getsockname()[1], plain.server_address[1]))
threading.Thread(target=plain.serve_forever, daemon=True).start()
def serve(c):
    try:
        with ctx.wrap_socket(c, server_side=True) as t:
            t.recv(1)
    except OSError:
        c.close()
while True:
    c, _ = tls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
"$PYTHON3" "$W/servers.py" "$W/cert.pem" "$W/key.pem" "$W/ports" 2>/dev/null &
PIDS="$PIDS $!"
wait_line "$W/ports" " " || fail "the test servers did not start"
read -r TLSP HTTPP <"$W/ports"
# retry_timeout=600: a failure retried as an outage would outlast the
# timeout below
AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s timeout 300 sh "$W/bin/mount.objfs" \
	s3://b/p "$W/mnt3" -o "spool_dir=$W/spool,retry_timeout=600,endpoint=http://127.0.0.1:$TLSP" \
	>"$W/out3" 2>"$W/err3"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "http:// to an https port: exit $rc"
grep -q "use https://127.0.0.1:$TLSP" "$W/err3" ||
	fail "http:// to an https port: $(cat "$W/err3")"
AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s timeout 300 sh "$W/bin/mount.objfs" \
	s3://b/p "$W/mnt3" -o "spool_dir=$W/spool,retry_timeout=600,endpoint=https://127.0.0.1:$HTTPP" \
	>"$W/out4" 2>"$W/err4"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "https:// to an http port: exit $rc"
grep -q "use http://" "$W/err4" || fail "https:// to an http port: $(cat "$W/err4")"
mountpoint -q "$W/mnt3" && fail "a wrong scheme mounted"

# 4. a prefix that is an object, on a real S3 server
for server in swift rgw; do
	if sh "$OBJFS_SRCDIR/tests/s3server/$server.sh" installed >/dev/null 2>&1; then
		S3SH="$OBJFS_SRCDIR/tests/s3server/$server.sh"
		break
	fi
done
if [ -z "$S3SH" ]; then
	echo "note: no S3 server installed (swift, rgw): the prefix check did not run"
elif ! timeout 180 sh "$S3SH" start "$W/s3" >"$W/s3.out" 2>&1; then
	fail "$S3SH start: $(tail -5 "$W/s3.out")"
else
	. "$W/s3/env"
	export AWS_ENDPOINT_URL="$OBJFS_TEST_S3_ENDPOINT" AWS_REGION="$OBJFS_TEST_S3_REGION" \
		AWS_ACCESS_KEY_ID="$OBJFS_TEST_S3_ACCESS_KEY" \
		AWS_SECRET_ACCESS_KEY="$OBJFS_TEST_S3_SECRET_KEY"
	B="s3://$OBJFS_TEST_S3_BUCKET"
	TOOL="$BUILD/tests/integration/objfs-store-tool"
	echo data | "$TOOL" "$B" put "obj-$$" || fail "put obj-$$"
	echo data | "$TOOL" "$B" put "dir-$$/f" || fail "put dir-$$/f"
	sh "$W/bin/mount.objfs" "$B/obj-$$" "$W/mnt4" -o "spool_dir=$W/spool,log_file=$W/obj.log" \
		>"$W/out5" 2>"$W/err5"
	rc=$?
	[ $rc -eq 0 ] || fail "mount of a prefix that is an object exited $rc: $(cat "$W/err5")"
	[ "$(wc -l <"$W/err5")" -eq 1 ] &&
		grep -q "\"level\":\"warn\".*obj-$$ is an object.*mount its bucket" "$W/err5" ||
		fail "the warning for a prefix that is an object: $(cat "$W/err5")"
	grep -q "obj-$$ is an object" "$W/obj.log" || fail "the warning is not in log_file"
	mountpoint -q "$W/mnt4" && fusermount3 -u "$W/mnt4"
	wait_line "$W/obj.log" "exiting with status" || fail "the object mount did not end"
	sh "$W/bin/mount.objfs" "$B/dir-$$" "$W/mnt4" -o "spool_dir=$W/spool" \
		>"$W/out6" 2>"$W/err6"
	rc=$?
	[ $rc -eq 0 ] || fail "mount of a prefix with keys exited $rc: $(cat "$W/err6")"
	[ ! -s "$W/out6" ] && [ ! -s "$W/err6" ] ||
		fail "a prefix with keys printed: $(cat "$W/out6" "$W/err6")"
	[ "$(cat "$W/mnt4/f" 2>/dev/null)" = data ] || fail "dir-$$/f not read back"
	mountpoint -q "$W/mnt4" && fusermount3 -u "$W/mnt4"
fi

[ $failed -eq 0 ] && echo "PASS: mount -t objfs: silent success, the log from the first line, errors printed, the scheme named, a prefix that is an object warned"
exit $failed
