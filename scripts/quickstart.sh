#!/bin/sh
# Quick start: installs what objfs needs, builds it, mounts a demo volume of
# the embedded local store at /mnt/objfs-demo (files kept under
# /var/lib/objfs/store) and serves the CSI plugin on
# unix:///run/objfs/csi.sock, in the foreground until Ctrl-C.
#   OBJFS_STATE_DIR, OBJFS_MOUNTPOINT, OBJFS_ENDPOINT override the defaults.
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
sh scripts/build.sh

state=${OBJFS_STATE_DIR:-/var/lib/objfs}
mnt=${OBJFS_MOUNTPOINT:-/mnt/objfs-demo}
endpoint=${OBJFS_ENDPOINT:-unix:///run/objfs/csi.sock}
mounted=0

cleanup() {
	if [ "$mounted" = 1 ]; then
		fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
	fi
}
trap cleanup EXIT INT TERM

mkdir -p "$state/store"
if [ -x ./objfs-mount ]; then
	mkdir -p "$mnt"
	./objfs-mount "file://$state/store/demo" "$mnt"
	mounted=1
	echo "quickstart: demo volume mounted at $mnt (try: echo hi > $mnt/hello.txt)"
fi
echo "quickstart: CSI plugin on $endpoint (Ctrl-C to stop)"
./objfs-csi --endpoint "$endpoint" --mode all --node-id "$(hostname)" \
	--state-dir "$state" --store "file://$state/store"
