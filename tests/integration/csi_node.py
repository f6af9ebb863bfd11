"""Integration test of the objfs CSI Node service: plays kubelet.

A real objfs-csi (mode node, --kubelet-dir in a temp dir) runs real
objfs-mount processes against a real S3 server (OpenStack Swift with s3api,
tests/s3server/swift.sh, on 127.0.0.1).  The test stages and publishes like
kubelet (every call repeated to prove idempotency), reads and writes through
the bind mounts, checks NodeGetVolumeStats against what it wrote, shares a
volume between two node plugins, and injects faults: kill -9 of a mount
process, restarts of objfs-csi (with a mount broken while it was down) and a
stopped S3 server.  Needs root, /dev/fuse and Swift; exits 77 only when one
of them is absent.  Every mount and process is cleaned up in finally blocks.
"""
import errno
import os
import shutil
import signal
import subprocess
import sys
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csilib  # noqa: E402

SWIFT = os.path.join(csilib.SRCDIR, "tests", "s3server", "swift.sh")
STAGE_SECRET_MARK = "testing"   # the Swift secret; must never show in argv/env
CALL_TIMEOUT = 90


def skip_if_absent():
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        print("SKIP: needs root and /dev/fuse")
        sys.exit(77)
    for prog in ("swift-proxy-server", "memcached"):
        if not any(os.access(os.path.join(d, prog), os.X_OK)
                   for d in os.environ.get("PATH", "/usr/bin:/usr/sbin").split(":")
                   + ["/usr/bin", "/usr/sbin"]):
            print("SKIP: OpenStack Swift (%s) not installed" % prog)
            sys.exit(77)
    if not os.access(csilib.MOUNT_BIN, os.X_OK):
        raise SystemExit("objfs-mount is not built at %s" % csilib.MOUNT_BIN)



def mounts_under(prefix):
    """Mount points under prefix, deepest first."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].encode().decode("unicode_escape")
            if mp == prefix or mp.startswith(prefix + "/"):
                out.append(mp)
    return sorted(set(out), key=len, reverse=True)


def is_mountpoint(path):
    return path in mounts_under(path)


def pids_with(text):
    """Processes whose command line mentions text."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if text.encode() in cmd and int(d) != os.getpid():
            pids.append(int(d))
    return pids


def mount_pids(text):
    """objfs-mount processes whose command line mentions text."""
    out = []
    for p in pids_with(text):
        try:
            with open("/proc/%d/cmdline" % p, "rb") as f:
                argv0 = f.read().split(b"\0")[0]
        except OSError:
            continue
        if os.path.basename(argv0) == b"objfs-mount":
            out.append(p)
    return out


def all_threads_stopped(pid):
    """True when every thread of pid is in the stopped state."""
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("T", "t"):
            return False
    return True


def ppid(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return 0


def mount_pid(staging):
    """The process the plugin started: with -o resume (the default), the
    keeper, whose child serves the mount."""
    pids = mount_pids(staging)
    keepers = [p for p in pids if ppid(p) not in pids]
    assert len(keepers) == 1, (staging, pids)
    return keepers[0]


def server_pid(staging):
    """The process serving the mount: the keeper's child."""
    keeper = mount_pid(staging)
    servers = [p for p in mount_pids(staging) if ppid(p) == keeper]
    assert len(servers) == 1, (staging, keeper, servers)
    return servers[0]


def wait_for(pred, timeout, what, step=0.2):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = pred()
            if last:
                return last
        except (OSError, grpc.RpcError, AssertionError) as e:  # noqa: PERF203
            last = e
        time.sleep(step)
    raise AssertionError("timed out after %ss waiting for %s (last: %r)" % (timeout, what, last))


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def read_file(path):
    with open(path, "rb") as f:
        return f.read()


def cleanup_all(work):
    """Unmounts everything under work and kills every process naming it."""
    for mp in mounts_under(work):
        subprocess.run(["umount", "-l", mp], stderr=subprocess.DEVNULL)
    for pid in pids_with(work):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def main():
    skip_if_absent()
    work, rmtree = csilib.tempdir("objfs-node-")
    os.chmod(work, 0o755)   # pods of other users traverse it
    pb, pbg = csilib.load_csi_stubs(work)
    r = csilib.Runner("csi_node")
    swift_dir = os.path.join(work, "swift")
    kubelet = os.path.join(work, "kubelet")
    drivers = []
    swift_up = False
    try:
        subprocess.run(["sh", SWIFT, "start", swift_dir], check=True, timeout=120,
                       stdout=subprocess.DEVNULL)
        swift_up = True
        s3 = csilib.read_env(os.path.join(swift_dir, "env"))
        creds = os.path.join(work, "plugin-creds")
        with open(creds, "w") as f:
            f.write("access_key_id=%s\nsecret_access_key=%s\n" %
                    (s3["OBJFS_TEST_S3_ACCESS_KEY"], s3["OBJFS_TEST_S3_SECRET_KEY"]))
        os.chmod(creds, 0o600)
        bucket = s3["OBJFS_TEST_S3_BUCKET"]

        def make_driver(name, node_id):
            d = csilib.Driver(work, mode="node", node_id=node_id, name=name, extra=[
                "--kubelet-dir", kubelet,
                "--store", "s3://%s/vols" % bucket,
                "--s3-endpoint", s3["OBJFS_TEST_S3_ENDPOINT"],
                "--s3-region", s3["OBJFS_TEST_S3_REGION"],
                "--credentials-file", creds,
                "--mount-program", csilib.MOUNT_BIN,
                "--mount-memory-mib", "64"])
            drivers.append(d)
            return d

        a = make_driver("a", "node-a").start()
        b = make_driver("b", "node-b").start()
        na = pbg.NodeStub(a.channel)
        nb = pbg.NodeStub(b.channel)

        def cap(mode=pb.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER, group=""):
            return pb.VolumeCapability(
                mount=pb.VolumeCapability.MountVolume(volume_mount_group=group),
                access_mode=pb.VolumeCapability.AccessMode(mode=mode))

        vol = "vol1"
        # Short caches so that the second node sees changes quickly.
        vctx = {"source": "s3://%s/vols/%s" % (bucket, vol),
                "mountOptions": "dir_ttl=1,attr_ttl=1,entry_ttl=1,negative_ttl=1,usage_refresh=1"}
        stage_a = os.path.join(kubelet, "plugins/kubernetes.io/csi/objfs.csi.io/a1/globalmount")
        stage_b = os.path.join(kubelet, "plugins/kubernetes.io/csi/objfs.csi.io/b1/globalmount")
        t1 = os.path.join(kubelet, "pods/p1/volumes/kubernetes.io~csi/pv1/mount")
        t2 = os.path.join(kubelet, "pods/p2/volumes/kubernetes.io~csi/pv1/mount")
        t3 = os.path.join(kubelet, "pods/p3/volumes/kubernetes.io~csi/pv1/mount")
        for p in (stage_a, stage_b, os.path.dirname(t1), os.path.dirname(t2),
                  os.path.dirname(t3)):
            os.makedirs(p, exist_ok=True)
        secrets = {"accessKeyID": s3["OBJFS_TEST_S3_ACCESS_KEY"],
                   "secretAccessKey": s3["OBJFS_TEST_S3_SECRET_KEY"]}

        def stage(stub, path, volume_id=vol, ctx=vctx, group="1234"):
            stub.NodeStageVolume(pb.NodeStageVolumeRequest(
                volume_id=volume_id, staging_target_path=path,
                volume_capability=cap(group=group), secrets=secrets,
                volume_context=ctx), timeout=CALL_TIMEOUT)

        def publish(stub, staging, target, ro=False, volume_id=vol, group="1234"):
            stub.NodePublishVolume(pb.NodePublishVolumeRequest(
                volume_id=volume_id, staging_target_path=staging, target_path=target,
                volume_capability=cap(group=group), readonly=ro,
                volume_context=vctx), timeout=CALL_TIMEOUT)

        def unpublish(stub, target, volume_id=vol):
            stub.NodeUnpublishVolume(pb.NodeUnpublishVolumeRequest(
                volume_id=volume_id, target_path=target), timeout=CALL_TIMEOUT)

        def unstage(stub, staging, volume_id=vol):
            stub.NodeUnstageVolume(pb.NodeUnstageVolumeRequest(
                volume_id=volume_id, staging_target_path=staging), timeout=CALL_TIMEOUT)

        def stats(stub, path, volume_id=vol):
            return stub.NodeGetVolumeStats(pb.NodeGetVolumeStatsRequest(
                volume_id=volume_id, volume_path=path), timeout=CALL_TIMEOUT)

        def capabilities_and_info():
            caps = na.NodeGetCapabilities(pb.NodeGetCapabilitiesRequest(), timeout=10)
            types = {c.rpc.type for c in caps.capabilities}
            R = pb.NodeServiceCapability.RPC
            assert types == {R.STAGE_UNSTAGE_VOLUME, R.GET_VOLUME_STATS, R.VOLUME_CONDITION,
                             R.VOLUME_MOUNT_GROUP, R.SINGLE_NODE_MULTI_WRITER}, types
            info = nb.NodeGetInfo(pb.NodeGetInfoRequest(), timeout=10)
            assert info.node_id == "node-b" and info.max_volumes_per_node == 0, info

        def stage_and_publish():
            t0 = time.time()
            stage(na, stage_a)
            took = time.time() - t0
            stage(na, stage_a)                  # idempotent
            assert is_mountpoint(stage_a)
            pid = mount_pid(stage_a)
            publish(na, stage_a, t1)
            publish(na, stage_a, t1)            # idempotent
            publish(na, stage_a, t2, ro=True)
            publish(na, stage_a, t2, ro=True)
            details = csilib.expect_error(publish, grpc.StatusCode.ALREADY_EXISTS,
                                          na, stage_a, t2, ro=False)
            assert t2 in details, details
            assert is_mountpoint(t1) and is_mountpoint(t2)
            assert mount_pid(stage_a) == pid    # one process for every pod
            # Not a child of the plugin; in a session of its own.
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ppid, sid = int(fields[1]), int(fields[3])
            assert ppid != a.proc.pid and sid != os.getsid(a.proc.pid), (ppid, sid, pid)
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                argv = f.read().split(b"\0")
            opts = argv[argv.index(b"-o") + 1].split(b",")
            for want in (b"allow_other", b"mem_limit=32M", b"gid=1234", b"umask=0002",
                         b"fsgroup=1234",
                         b"ready_fd=3", b"addressing=path"):
                assert want in opts, (want, opts)
            assert argv[-3:-1] == [("s3://%s/vols/%s" % (bucket, vol)).encode(),
                                   stage_a.encode()], argv
            print("  stage took %.2fs" % took)

        def secrets_stay_secret():
            pid = mount_pid(stage_a)
            secret = s3["OBJFS_TEST_S3_SECRET_KEY"].encode()
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                cmd = f.read()
            with open("/proc/%d/environ" % pid, "rb") as f:
                env = f.read()
            assert secret not in cmd, cmd
            assert b"AWS_SECRET_ACCESS_KEY" not in env and secret not in env, env
            assert b"credentials_file=" in cmd, cmd
            # The credentials file is gone once the mount is up.
            for arg in cmd.split(b"\0"):
                for opt in arg.split(b","):
                    if opt.startswith(b"credentials_file="):
                        assert not os.path.exists(opt.split(b"=", 1)[1].decode()), opt
            assert secret not in a.log().encode()
            logs = os.path.join(a.state, "node", "logs")
            for name in os.listdir(logs):
                with open(os.path.join(logs, name), "rb") as f:
                    assert secret not in f.read(), name

        payload = os.urandom(3 * 1024 * 1024 + 123)

        def write_read_share():
            write_file(os.path.join(t1, "data.bin"), payload)
            assert read_file(os.path.join(t2, "data.bin")) == payload
            # The volume root belongs to the mount group, group-writable.
            st = os.stat(t1)
            assert st.st_gid == 1234 and st.st_mode & 0o070 == 0o070, (st.st_gid, oct(st.st_mode))
            try:
                write_file(os.path.join(t2, "nope"), b"x")
                raise AssertionError("write through the read-only target succeeded")
            except OSError as e:
                assert e.errno == errno.EROFS, e
            # Non-root pods in the mount group (fsGroup 1234 as a
            # supplementary group, their own primary group, umask 022):
            # new files and directories belong to the mount group with the
            # owner's bits for the group, so a second pod appends to the
            # first one's file and writes in its directory.
            def as_pod(uid, fn):
                pid = os.fork()
                if pid == 0:
                    try:
                        os.setgroups([1234])
                        os.setgid(uid)
                        os.setuid(uid)
                        os.umask(0o022)
                        fn()
                        os._exit(0)
                    except BaseException:  # noqa: BLE001
                        os._exit(1)
                _, status = os.waitpid(pid, 0)
                return os.waitstatus_to_exitcode(status)

            def first_pod():
                write_file(os.path.join(t1, "by-user"), b"user data")
                os.mkdir(os.path.join(t1, "dir-by-user"))

            def second_pod():
                with open(os.path.join(t1, "by-user"), "ab") as f:
                    f.write(b", appended")
                write_file(os.path.join(t1, "dir-by-user", "f"), b"second")

            assert as_pod(4321, first_pod) == 0, "non-root group member cannot write"
            st = os.stat(os.path.join(t1, "by-user"))
            assert (st.st_uid, st.st_gid, oct(st.st_mode & 0o777)) == (4321, 1234, "0o664"), st
            st = os.stat(os.path.join(t1, "dir-by-user"))
            assert (st.st_gid, oct(st.st_mode & 0o777)) == (1234, "0o775"), st
            st = os.stat(os.path.join(t1, "data.bin"))
            assert st.st_gid == 1234 and st.st_mode & 0o060 == 0o060, st
            assert as_pod(5678, second_pod) == 0, "second pod of the group cannot append"
            assert read_file(os.path.join(t2, "by-user")) == b"user data, appended"
            assert read_file(os.path.join(t2, "dir-by-user", "f")) == b"second"

        def volume_stats():
            def check():
                resp = stats(na, t1)
                assert not resp.volume_condition.abnormal, resp.volume_condition
                by = {u.unit: u for u in resp.usage}
                bts = by[pb.VolumeUsage.BYTES]
                ino = by[pb.VolumeUsage.INODES]
                assert bts.total == bts.used + bts.available, bts
                assert bts.used >= len(payload), bts
                assert ino.used >= 2, ino   # data.bin, by-user
                return resp
            wait_for(check, 20, "stats counting the data written")
            resp = stats(na, stage_a)
            assert not resp.volume_condition.abnormal
            csilib.expect_error(stats, grpc.StatusCode.NOT_FOUND, na, t3)
            csilib.expect_error(stats, grpc.StatusCode.NOT_FOUND, na, t1, "other-volume")
            csilib.expect_error(stats, grpc.StatusCode.NOT_FOUND, na, "/etc")

        def path_confinement():
            d = csilib.expect_error(publish, grpc.StatusCode.INVALID_ARGUMENT,
                                    na, stage_a, "/tmp/objfs-outside-target")
            assert "kubelet" in d, d
            d = csilib.expect_error(publish, grpc.StatusCode.INVALID_ARGUMENT,
                                    na, stage_a, kubelet + "/pods/../../escape")
            assert ".." in d, d
            assert not os.path.exists("/tmp/objfs-outside-target")

        def two_nodes_share():
            stage(nb, stage_b)
            stage(nb, stage_b)
            publish(nb, stage_b, t3)
            publish(nb, stage_b, t3)
            assert mount_pid(stage_b) != mount_pid(stage_a)
            wait_for(lambda: read_file(os.path.join(t3, "data.bin")) == payload, 15,
                     "node b reading node a's file")
            write_file(os.path.join(t3, "from-b.txt"), b"written on node b")
            wait_for(lambda: read_file(os.path.join(t1, "from-b.txt")) == b"written on node b",
                     15, "node a reading node b's file")

        def kill_server_process():
            # -o resume (the default): the keeper starts a successor, the
            # targets see a pause, not an error, and nothing is repaired
            keeper, server = mount_pid(stage_a), server_pid(stage_a)
            os.kill(server, signal.SIGKILL)
            t0 = time.time()
            assert read_file(os.path.join(t1, "data.bin")) == payload
            print("  read after kill -9 of the server: %.0f ms" % ((time.time() - t0) * 1000))
            assert mount_pid(stage_a) == keeper
            wait_for(lambda: server_pid(stage_a) != server, 10, "a successor")
            resp = stats(na, t1)
            assert not resp.volume_condition.abnormal, resp.volume_condition.message
            assert "restarting it" not in a.log()[-2000:]

        def kill_mount_process():
            # the keeper itself: its server dies with it, the watchdog
            # mounts again (the last resort)
            pid = mount_pid(stage_a)
            os.kill(pid, signal.SIGKILL)
            seen = wait_for(lambda: stats(na, t1).volume_condition.abnormal and
                            stats(na, t1).volume_condition.message, 5,
                            "the condition turning abnormal")
            print("  condition while broken: %s" % seen)

            def repaired():
                resp = stats(na, t1)
                assert not resp.volume_condition.abnormal, resp.volume_condition.message
                assert read_file(os.path.join(t1, "data.bin")) == payload
                assert read_file(os.path.join(t2, "data.bin")) == payload
                return mount_pid(stage_a) != pid
            t0 = time.time()
            wait_for(repaired, 20, "the watchdog repairing the mount")
            print("  repaired in %.1fs" % (time.time() - t0))
            try:
                write_file(os.path.join(t2, "nope"), b"x")
                raise AssertionError("t2 is writable after the repair")
            except OSError as e:
                assert e.errno == errno.EROFS, e

        def restart_plugin():
            pid = mount_pid(stage_a)
            assert a.stop(signal.SIGTERM) == 0
            # Mounts outlive the plugin.
            assert read_file(os.path.join(t1, "data.bin")) == payload
            assert mount_pid(stage_a) == pid
            a.start()
            na2 = pbg.NodeStub(a.channel)
            resp = stats(na2, t2)
            assert not resp.volume_condition.abnormal, resp.volume_condition
            assert mount_pid(stage_a) == pid, "a healthy mount was not adopted"
            publish(na2, stage_a, t1)          # still idempotent after restart
            stage(na2, stage_a)
            # Broken while the plugin is down: repaired at start.
            assert a.stop(signal.SIGKILL) is not None
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: not os.path.exists("/proc/%d" % pid) or
                     open("/proc/%d/stat" % pid).read().split()[2] == "Z", 5, "the kill")
            a.start()
            na3 = pbg.NodeStub(a.channel)
            wait_for(lambda: read_file(os.path.join(t1, "data.bin")) == payload and
                     read_file(os.path.join(t2, "data.bin")) == payload, 20,
                     "the repair at start")
            assert mount_pid(stage_a) != pid
            assert not stats(na3, t1).volume_condition.abnormal
            return na3

        def busy_and_hung(stub):
            # Busy: a pod still holds a file open; unpublish still succeeds.
            t4 = os.path.join(kubelet, "pods/p4/volumes/kubernetes.io~csi/pv1/mount")
            os.makedirs(os.path.dirname(t4), exist_ok=True)
            publish(stub, stage_a, t4)
            f = open(os.path.join(t4, "data.bin"), "rb")
            try:
                unpublish(stub, t4)
                assert not is_mountpoint(t4) and not os.path.exists(t4)
                assert len(f.read(10)) == 10     # the open file keeps working
            finally:
                f.close()
            # Hung: the mount process stops answering (SIGSTOP).
            hang_stage = os.path.join(kubelet, "plugins/kubernetes.io/csi/objfs.csi.io/h1/globalmount")
            t5 = os.path.join(kubelet, "pods/p5/volumes/kubernetes.io~csi/pvh/mount")
            os.makedirs(hang_stage, exist_ok=True)
            os.makedirs(os.path.dirname(t5), exist_ok=True)
            hctx = {"source": "s3://%s/vols/vol-hang" % bucket}
            stage(stub, hang_stage, volume_id="vol-hang", ctx=hctx, group="")
            publish(stub, hang_stage, t5, volume_id="vol-hang", group="")
            write_file(os.path.join(t5, "x"), b"x")
            pid = server_pid(hang_stage)
            os.kill(pid, signal.SIGSTOP)
            try:
                # kill() returns before every thread has stopped: one
                # still running could answer the probe below
                wait_for(lambda: all_threads_stopped(pid), 10, "SIGSTOP to take effect", 0.05)
                t0 = time.time()
                resp = stats(stub, t5, volume_id="vol-hang")
                assert resp.volume_condition.abnormal, resp
                assert "does not answer" in resp.volume_condition.message, resp
                assert time.time() - t0 < 15, time.time() - t0
                t0 = time.time()
                unpublish(stub, t5, volume_id="vol-hang")
                unstage(stub, hang_stage, volume_id="vol-hang")
                took = time.time() - t0
                print("  hung mount released in %.1fs" % took)
                assert took < 60, took
                assert not is_mountpoint(t5) and not is_mountpoint(hang_stage)
                assert mount_pids(hang_stage) == []
            finally:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

        def host_systemd_runner():
            # objfs-csi's host-systemd runner against fake systemd-run and
            # systemctl (no systemd here): the contract objfs-csi keeps.
            fake = os.path.join(work, "fake-systemd")
            os.makedirs(fake, exist_ok=True)
            for name in ("systemd-run", "systemctl"):
                shutil.copy2(os.path.join(csilib.SRCDIR, "tests", "integration",
                                          "fake-systemd", name), fake)
            c = make_driver("c", "node-c")
            c.env["OBJFS_MOUNT_RUNNER"] = "host-systemd"
            c.env["PATH"] = fake + ":" + c.env.get("PATH", "/usr/bin:/bin")
            c.start()
            nc = pbg.NodeStub(c.channel)
            stage_c = os.path.join(kubelet, "plugins/kubernetes.io/csi/objfs.csi.io/c1/globalmount")
            t6 = os.path.join(kubelet, "pods/p6/volumes/kubernetes.io~csi/pv1/mount")
            os.makedirs(stage_c, exist_ok=True)
            os.makedirs(os.path.dirname(t6), exist_ok=True)
            stage(nc, stage_c)
            stage(nc, stage_c)
            publish(nc, stage_c, t6)
            units = os.path.join(fake, "units")
            pidfiles = [f for f in os.listdir(units) if f.endswith(".pid")]
            assert len(pidfiles) == 1, os.listdir(units)
            unit = pidfiles[0][:-4]
            assert unit.startswith("objfs-mount-") and unit.endswith(".service"), unit
            with open(os.path.join(units, unit + ".props")) as f:
                props = f.read()
            assert "MemoryMax=64M" in props, props
            pid = int(open(os.path.join(units, unit + ".pid")).read())
            assert mount_pid(stage_c) == pid
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                assert s3["OBJFS_TEST_S3_SECRET_KEY"].encode() not in f.read()
            wait_for(lambda: read_file(os.path.join(t6, "data.bin")) == payload, 15,
                     "reading through the systemd-run mount")
            assert not stats(nc, t6).volume_condition.abnormal
            # The unit dies: the watchdog starts it again.
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: mount_pids(stage_c) and mount_pid(stage_c) != pid and
                     read_file(os.path.join(t6, "data.bin")) == payload, 20,
                     "the repair of the unit")
            pid = mount_pid(stage_c)
            # The plugin restarts: the unit is adopted.
            c.stop(signal.SIGKILL)
            c.start()
            nc = pbg.NodeStub(c.channel)
            assert not stats(nc, t6).volume_condition.abnormal
            assert mount_pid(stage_c) == pid
            unpublish(nc, t6)
            unstage(nc, stage_c)
            unstage(nc, stage_c)
            assert mount_pids(stage_c) == [] and not is_mountpoint(stage_c)
            assert "active" != subprocess.run([os.path.join(fake, "systemctl"), "is-active", unit],
                                              capture_output=True, text=True).stdout.strip()
            c.stop()

        def s3_down(stub):
            subprocess.run(["sh", SWIFT, "stop", swift_dir], check=True, timeout=60,
                           stdout=subprocess.DEVNULL)
            t0 = time.time()
            resp = stats(stub, t1)
            took = time.time() - t0
            assert resp.volume_condition.abnormal, resp.volume_condition
            assert "unreachable" in resp.volume_condition.message, resp.volume_condition
            assert took < 15, took
            # A new volume cannot be staged: an error, within the timeout.
            other = os.path.join(kubelet, "plugins/kubernetes.io/csi/objfs.csi.io/a2/globalmount")
            os.makedirs(other, exist_ok=True)
            t0 = time.time()
            try:
                stage(stub, other, volume_id="vol-down",
                      ctx={"source": "s3://%s/vols/vol-down" % bucket})
                ok = True
            except grpc.RpcError as e:
                ok = False
                print("  stage with S3 down: %s: %s (%.1fs)" % (e.code(), e.details(), time.time() - t0))
            if ok:
                # objfs-mount may start without reaching the store; then
                # its stats must say the store is unreachable.
                resp = stats(stub, other, volume_id="vol-down")
                assert resp.volume_condition.abnormal, resp
                unstage(stub, other, volume_id="vol-down")
            assert time.time() - t0 < CALL_TIMEOUT
            assert not is_mountpoint(other)

        def stage_errors_name_their_cause(stub):
            # what kubectl describe pod shows: the cause's code and its own
            # line with the hint, not "exited before the mount was ready"
            bad = os.path.join(kubelet, "plugins/kubernetes.io/csi/objfs.csi.io/bad/globalmount")
            os.makedirs(bad, exist_ok=True)
            wrong = dict(secrets, secretAccessKey="wrong-secret-key")
            cases = [
                ("wrong secret", grpc.StatusCode.PERMISSION_DENIED, "SignatureDoesNotMatch",
                 {"source": "s3://%s/vols/vol-bad" % bucket}, wrong),
                ("missing bucket", grpc.StatusCode.NOT_FOUND, "the bucket does not exist",
                 {"source": "s3://no-such-bucket-objfs/vols/x"}, secrets),
                # a store never reached fails in seconds, not retry_timeout
                ("closed port", grpc.StatusCode.UNAVAILABLE, "nothing accepts connections",
                 {"source": "s3://%s/vols/vol-bad" % bucket, "endpoint": "http://127.0.0.1:9"},
                 secrets),
            ]
            for what, code, text, ctx, sec in cases:
                t0 = time.time()
                req = pb.NodeStageVolumeRequest(
                    volume_id="vol-bad", staging_target_path=bad,
                    volume_capability=cap(), secrets=sec, volume_context=ctx)
                details = csilib.expect_error(stub.NodeStageVolume, code, req,
                                              timeout=CALL_TIMEOUT)
                assert text in details, (what, details)
                assert "exited before" not in details or text in details, (what, details)
                assert "nothing to resume" not in details, (what, details)
                assert "wrong-secret-key" not in details, details
                assert not is_mountpoint(bad), what
                # retry_timeout is 60 s: well before it, even on a busy node
                assert time.time() - t0 < 45, (what, time.time() - t0)

        def teardown_idempotent(stub):
            for target, node in ((t1, stub), (t2, stub), (t3, nb)):
                unpublish(node, target)
                unpublish(node, target)
                assert not os.path.exists(target), target
            t0 = time.time()
            unstage(stub, stage_a)
            unstage(stub, stage_a)
            unstage(nb, stage_b)
            unstage(nb, stage_b)
            print("  unstage took %.1fs" % (time.time() - t0))
            assert mounts_under(kubelet) == [], mounts_under(kubelet)
            assert mount_pids(kubelet) == [], mount_pids(kubelet)
            csilib.expect_error(stats, grpc.StatusCode.NOT_FOUND, stub, stage_a)

        r.run("NodeGetCapabilities, NodeGetInfo", capabilities_and_info)
        r.run("stage and publish (twice each)", stage_and_publish)
        r.run("secrets stay out of argv, environ and logs", secrets_stay_secret)
        r.run("write, read, read-only target, fsGroup", write_read_share)
        r.run("NodeGetVolumeStats", volume_stats)
        r.run("paths outside the kubelet dir", path_confinement)
        r.run("two nodes share a volume", two_nodes_share)
        r.run("kill -9 of the serving process: a pause, no error", kill_server_process)
        r.run("kill -9 of the mount process", kill_mount_process)
        holder = {}
        r.run("restart of objfs-csi", lambda: holder.update(stub=restart_plugin()))
        stub = holder.get("stub") or pbg.NodeStub(a.channel)
        r.run("busy and hung mounts are released", busy_and_hung, stub)
        r.run("host-systemd runner (fake systemd)", host_systemd_runner)
        r.run("stage errors name their cause", stage_errors_name_their_cause, stub)
        r.run("S3 server down", s3_down, stub)
        swift_up = False
        r.run("unpublish and unstage (twice each)", teardown_idempotent, stub)
    finally:
        for d in drivers:
            try:
                d.stop(signal.SIGKILL, timeout=5)
            except Exception:  # noqa: BLE001
                pass
        cleanup_all(work)
        if swift_up or os.path.exists(os.path.join(swift_dir, "env")):
            subprocess.run(["sh", SWIFT, "stop", swift_dir], timeout=60,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cleanup_all(work)
        rmtree()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
