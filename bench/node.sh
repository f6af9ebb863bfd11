#!/bin/sh
# bench/node.sh - the CSI Node service's figures on a local S3 server:
#   * time from NodeStageVolume to a usable published mount (stage + publish
#     + first listing through the bind mount), over several volumes;
#   * peak and idle memory (VmHWM, VmRSS) of one objfs-mount process after
#     writing and reading back a file larger than its memory bound.
#
#   sh bench/node.sh [BUILDDIR]      (root, /dev/fuse, the server's packages)
#
# Environment: ROUNDS (default 5), FILE_MIB (default 256), MEMORY_MIB
# (--mount-memory-mib, default 64), OBJFS_BENCH_SERVER (swift, the
# default, or rgw: tests/s3server/$OBJFS_BENCH_SERVER.sh).
set -eu
SRCDIR=$(cd "$(dirname "$0")/.." && pwd)
BUILDDIR=$(cd "${1:-$SRCDIR}" && pwd)
if [ "$(id -u)" -ne 0 ] || [ ! -e /dev/fuse ]; then
	echo "bench/node.sh: needs root and /dev/fuse" >&2
	exit 1
fi
SERVER=${OBJFS_BENCH_SERVER:-swift}
W=$(mktemp -d /tmp/objfs-bench-node.XXXXXX)
chmod 755 "$W"
cleanup() {
	grep " $W/" /proc/self/mountinfo | awk '{print $5}' | sort -r |
		while read -r mp; do umount -l "$mp" 2>/dev/null || true; done
	for p in $(grep -l "$W" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
		[ "$p" != "$$" ] && kill -9 "$p" 2>/dev/null || true
	done
	timeout 60 sh "$SRCDIR/tests/s3server/$SERVER.sh" stop "$W/s3" >/dev/null 2>&1 || true
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
timeout 120 sh "$SRCDIR/tests/s3server/$SERVER.sh" start "$W/s3" >/dev/null
OBJFS_BUILDDIR=$BUILDDIR OBJFS_SRCDIR=$SRCDIR BENCH_WORK=$W \
ROUNDS=${ROUNDS:-5} FILE_MIB=${FILE_MIB:-256} MEMORY_MIB=${MEMORY_MIB:-64} \
/usr/bin/python3 - <<'EOF'
import os, sys, time, statistics
sys.path.insert(0, os.path.join(os.environ["OBJFS_SRCDIR"], "tests", "integration"))
import csilib

work = os.environ["BENCH_WORK"]
rounds = int(os.environ["ROUNDS"])
file_mib = int(os.environ["FILE_MIB"])
memory_mib = os.environ["MEMORY_MIB"]
env = {}
with open(os.path.join(work, "s3", "env")) as f:
    for line in f:
        k, v = line.strip().split("=", 1)
        env[k] = v
creds = os.path.join(work, "creds")
with open(creds, "w") as f:
    f.write("access_key_id=%s\nsecret_access_key=%s\n" %
            (env["OBJFS_TEST_S3_ACCESS_KEY"], env["OBJFS_TEST_S3_SECRET_KEY"]))
os.chmod(creds, 0o600)
pb, pbg = csilib.load_csi_stubs(work)
kubelet = os.path.join(work, "kubelet")
d = csilib.Driver(work, mode="node", node_id="bench", extra=[
    "--kubelet-dir", kubelet, "--store", "s3://%s/vols" % env["OBJFS_TEST_S3_BUCKET"],
    "--s3-endpoint", env["OBJFS_TEST_S3_ENDPOINT"], "--credentials-file", creds,
    "--mount-program", csilib.MOUNT_BIN, "--mount-memory-mib", memory_mib])
d.args[d.args.index("debug")] = "info"
d.start()
node = pbg.NodeStub(d.channel)
cap = pb.VolumeCapability(mount=pb.VolumeCapability.MountVolume(),
                          access_mode=pb.VolumeCapability.AccessMode(mode=5))
times = []
try:
    for i in range(rounds + 1):
        vol = "bench-%d" % i
        staging = os.path.join(kubelet, "plugins/objfs/%s/globalmount" % vol)
        target = os.path.join(kubelet, "pods/p%d/volumes/kubernetes.io~csi/%s/mount" % (i, vol))
        os.makedirs(staging, exist_ok=True)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        t0 = time.monotonic()
        node.NodeStageVolume(pb.NodeStageVolumeRequest(
            volume_id=vol, staging_target_path=staging, volume_capability=cap), timeout=60)
        node.NodePublishVolume(pb.NodePublishVolumeRequest(
            volume_id=vol, staging_target_path=staging, target_path=target,
            volume_capability=cap), timeout=60)
        os.listdir(target)
        dt = time.monotonic() - t0
        if i > 0:          # the first round warms caches up
            times.append(dt)
        if i < rounds:
            node.NodeUnpublishVolume(pb.NodeUnpublishVolumeRequest(
                volume_id=vol, target_path=target), timeout=60)
            node.NodeUnstageVolume(pb.NodeUnstageVolumeRequest(
                volume_id=vol, staging_target_path=staging), timeout=60)
    print("stage -> usable published mount: median %.0f ms, min %.0f ms, max %.0f ms (%d volumes)"
          % (statistics.median(times) * 1000, min(times) * 1000, max(times) * 1000, len(times)))

    pid = None
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                cmd = open("/proc/%s/cmdline" % p, "rb").read()
            except OSError:
                continue
            if cmd.startswith(csilib.MOUNT_BIN.encode()) and staging.encode() in cmd:
                pid = int(p)

    def mem():
        vals = {}
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(("VmHWM", "VmRSS")):
                    k, v = line.split(":")
                    vals[k] = int(v.split()[0]) // 1024
        return vals

    fresh = mem()
    chunk = os.urandom(1024 * 1024)
    path = os.path.join(target, "big.bin")
    t0 = time.monotonic()
    with open(path, "wb") as f:
        for _ in range(file_mib):
            f.write(chunk)
    wt = time.monotonic() - t0
    t0 = time.monotonic()
    with open(path, "rb") as f:
        while f.read(1024 * 1024):
            pass
    rt = time.monotonic() - t0
    time.sleep(3)
    m = mem()
    print("mount process %d (--mount-memory-mib %s): fresh VmRSS %d MiB; after writing and "
          "reading %d MiB (write %.0f MiB/s incl. upload at close, read %.0f MiB/s): "
          "peak VmHWM %d MiB, idle VmRSS %d MiB"
          % (pid, memory_mib, fresh["VmRSS"], file_mib, file_mib / wt, file_mib / rt,
             m["VmHWM"], m["VmRSS"]))
finally:
    d.stop()
EOF
