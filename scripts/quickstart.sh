#!/bin/sh
# Quick start: installs what objfs needs, builds it, serves the CSI plugin on
# unix:///run/objfs/csi.sock with the embedded local store
# (/var/lib/objfs/store) and mounts its demo volume at /mnt/objfs-demo, in
# the foreground until Ctrl-C.
#   OBJFS_STATE_DIR, OBJFS_MOUNTPOINT, OBJFS_ENDPOINT override the defaults.
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
sh scripts/build.sh

state=${OBJFS_STATE_DIR:-/var/lib/objfs}
mnt=${OBJFS_MOUNTPOINT:-/mnt/objfs-demo}
endpoint=${OBJFS_ENDPOINT:-unix:///run/objfs/csi.sock}
sock=${endpoint#unix://}
csi_pid=""
mounted=0

cleanup() {
	trap - EXIT INT TERM
	if [ "$mounted" = 1 ]; then
		fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
	fi
	if [ -n "$csi_pid" ]; then
		kill -TERM "$csi_pid" 2>/dev/null || true
		wait "$csi_pid" 2>/dev/null || true
	fi
}
trap cleanup EXIT INT TERM

# One quick start at a time: objfs-csi holds a lock beside its socket while
# it serves, and the demo mount point must be free.
if command -v flock >/dev/null 2>&1 && [ -e "$sock.lock" ] &&
   ! flock -n "$sock.lock" true; then
	echo "quickstart: another objfs-csi already serves $endpoint: stop it (Ctrl-C in its terminal) or set OBJFS_ENDPOINT" >&2
	exit 1
fi
if mountpoint -q "$mnt" 2>/dev/null; then
	echo "quickstart: $mnt is already mounted (another quick start?): unmount it (fusermount3 -u $mnt) or set OBJFS_MOUNTPOINT" >&2
	exit 1
fi

# The plugin opens (and on first start creates) the store under the state
# directory; the demo volume is the prefix "demo/" in it.
./objfs-csi --endpoint "$endpoint" --mode all --node-id "$(hostname)" \
	--state-dir "$state" --store "file://$state/store" &
csi_pid=$!
i=0
while [ ! -S "$sock" ] || [ ! -e "$sock.lock" ]; do
	i=$((i + 1))
	if [ "$i" -gt 100 ] || ! kill -0 "$csi_pid" 2>/dev/null; then
		echo "quickstart: objfs-csi did not start (its error is above)" >&2
		exit 1
	fi
	sleep 0.1
done
# The socket may be an old one: ours only if our plugin still runs.
sleep 0.5
if ! kill -0 "$csi_pid" 2>/dev/null; then
	csi_pid=""
	echo "quickstart: objfs-csi did not start (its error is above)" >&2
	exit 1
fi
echo "quickstart: CSI plugin on $endpoint"

mkdir -p "$mnt"
./objfs-mount "file://$state/store/demo" "$mnt"
mounted=1
echo "quickstart: demo volume mounted at $mnt (try: echo hi > $mnt/hello.txt);"
echo "quickstart: its objects are the keys demo/... of the local store in $state/store,"
echo "quickstart: kept in its own layout (demo/hello.txt is $state/store/demo@/hello.txt+,"
echo "quickstart: data then metadata; see docs/objfs-mount.md, \"The local store\"). Ctrl-C stops."
wait "$csi_pid" || true
