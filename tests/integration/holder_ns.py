"""Container emulation of the node's mounts (issue 12 item 4): objfs-holder
and objfs-csi each in their own pid and mount namespaces, as a container
runtime runs them, a "pod" in a third mount namespace.

Run by csi_holder.sh inside `unshare --mount --propagation private` (the
"host": every mount made here disappears with the test).  The kubelet
directory is a shared mount: what the holder's namespace mounts there
reaches the host and the plugin's namespace (mountPropagation:
Bidirectional).  A real objfs-csi (node, OBJFS_MOUNT_RUNNER=holder) is
driven over real gRPC: NodeStage, NodePublish; the pod bind-mounts the
target and runs a workload (an appender with fsync and a reader verifying
every record).  Then: the plugin's whole pid namespace is killed and a new
one started (NodePublish and NodeGetVolumeStats again), the objfs-mount
server is killed -9, the holder is rolled as the chart does it (a new
holder namespace, its readiness, then the old namespace killed), the
server is killed -9 again, the holder process is killed -9 (objfs-holder as
PID 1 is the namespace's init and starts a new holder; the server serves on
and rejoins it), and that server is killed -9 (the new holder resumes it).
Asserted: the workload saw no error, every byte is right, unstage after the
roll unmounts cleanly, frees the slot and leaves the data in the store; a
peer that is not root is refused; a server that has not rejoined yet keeps
its staging path (the watchdog mounts nothing over it), and one that never
rejoins is killed after --orphan-timeout, only then mounted again; and when
both
processes of a mount die at once (the holder process and the server; the
whole holder pod), a file written and not flushed is uploaded by the
watchdog's new mount.  The longest pause the workload saw around each
event is printed.

    holder_ns.py local | s3      (s3: OBJFS_TEST_S3_* in the environment)
    holder_ns.py --workload DIR  (the pod's workload; internal)
"""
import errno
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time

REC = 64                # one record: "%08d " + pattern, newline-terminated


def record(i):
    body = ("%08d " % i) + ("%08x" % (i * 2654435761 % (1 << 32))) * 7
    return (body[:REC - 1].ljust(REC - 1, ".") + "\n").encode()


def workload(d):
    """The pod: appends a record every 10 ms (fsync every 10), reads the
    file back every 50 ms verifying every record, until d/stop exists.
    Writes d/result.json: records written, errors, longest op (ms), and
    the operations over 20 ms (start on CLOCK_MONOTONIC, seconds)."""
    path = os.path.join(d, "vol", "log")
    errors, worst, n, bad = [], 0.0, 0, 0
    slow = []
    expected = bytearray()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    last_read = 0.0
    ready = os.path.join(d, "running")
    open(ready, "w").close()
    while not os.path.exists(os.path.join(d, "stop")):
        t0 = time.monotonic()
        try:
            r = record(n)
            os.write(fd, r)
            expected += r
            n += 1
            if n % 10 == 0:
                os.fsync(fd)
        except OSError as e:
            errors.append("write %d: %s" % (n, e))
        dt = time.monotonic() - t0
        worst = max(worst, dt)
        if dt > 0.02:
            slow.append((t0, dt))
        if t0 - last_read > 0.05:
            t1 = time.monotonic()
            try:
                with open(path, "rb") as f:
                    data = f.read()
                if data != expected:
                    bad += 1
                    errors.append("read: %d bytes, %d expected, content %s" %
                                  (len(data), len(expected),
                                   "right" if expected.startswith(data) else "wrong"))
            except OSError as e:
                errors.append("read: %s" % e)
            dt = time.monotonic() - t1
            worst = max(worst, dt)
            if dt > 0.02:
                slow.append((t1, dt))
            last_read = t1
        time.sleep(0.01)
    try:
        os.fsync(fd)
        os.close(fd)
    except OSError as e:
        errors.append("close: %s" % e)
    with open(os.path.join(d, "result.json"), "w") as f:
        json.dump({"records": n, "errors": errors[:20], "n_errors": len(errors),
                   "bad_reads": bad, "worst_ms": worst * 1000, "slow": slow}, f)


if len(sys.argv) == 3 and sys.argv[1] == "--workload":
    workload(sys.argv[2])
    sys.exit(0)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csilib  # noqa: E402

HOLDER_BIN = os.path.join(csilib.BUILDDIR, "objfs-holder")
ORPHAN_S = 20           # the holders' --orphan-timeout
CALL = 60


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


class Ns:
    """A program as PID 1 of new pid and mount namespaces (the mounts of
    the host copied, the kubelet directory's propagation kept), like a
    container.  kill() kills the namespace: every process in it."""

    def __init__(self, name, argv, log, env=None):
        self.name = name
        self.logf = open(log, "ab")
        self.proc = subprocess.Popen(
            ["unshare", "--pid", "--fork", "--mount", "--propagation", "unchanged",
             "--mount-proc", "--kill-child"] + argv,
            stdout=self.logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env)
        self.init = None
        for _ in range(500):
            c = children(self.proc.pid)
            if c:
                self.init = c[0]
                break
            time.sleep(0.01)
        assert self.init, "%s: no namespace init" % name

    def kill(self):
        if self.init is not None:
            try:
                os.kill(self.init, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.logf.close()
        self.init = None


def wait_for(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def holder_check(sock, ready):
    return subprocess.run([HOLDER_BIN, "--check", "--socket", sock, "--ready-file", ready],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def holder_list(sock):
    out = subprocess.run([HOLDER_BIN, "--list", "--socket", sock], check=True,
                         capture_output=True, text=True, timeout=20).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def server_pids(staging):
    """objfs-mount servers (host pids) of the mount at staging."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"objfs-mount" and staging.encode() in argv:
            out.append(int(p))
    return out


class Frozen:
    """A process frozen (every thread, in a cgroup freezer: v1's at
    /sys/fs/cgroup/freezer, else v2's cgroup.freeze), and thawed on exit.
    Not SIGSTOP: the kernel sends SIGCONT to a process group orphaned with
    a stopped member, as the death of the holder can make the server's."""

    def __init__(self, pid):
        self.pid = pid
        v1 = "/sys/fs/cgroup/freezer"
        v2 = "/sys/fs/cgroup/unified" if os.path.isdir("/sys/fs/cgroup/unified") else "/sys/fs/cgroup"
        if os.path.exists(os.path.join(v1, "freezer.state")):
            self.root, self.v1 = v1, True
        else:
            self.root, self.v1 = v2, False
        self.dir = os.path.join(self.root, "objfs-test-%d" % os.getpid())

    def __enter__(self):
        os.mkdir(self.dir)
        with open(os.path.join(self.dir, "cgroup.procs"), "w") as f:
            f.write("%d\n" % self.pid)
        if self.v1:
            with open(os.path.join(self.dir, "freezer.state"), "w") as f:
                f.write("FROZEN\n")
            wait_for(lambda: open(os.path.join(self.dir, "freezer.state")).read().strip()
                     == "FROZEN", 30, "the freezer")
        else:
            with open(os.path.join(self.dir, "cgroup.freeze"), "w") as f:
                f.write("1\n")
            wait_for(lambda: "frozen 1" in open(os.path.join(self.dir, "cgroup.events")).read(),
                     30, "the freezer")
        return self

    def __exit__(self, *exc):
        if self.v1:
            with open(os.path.join(self.dir, "freezer.state"), "w") as f:
                f.write("THAWED\n")
        else:
            with open(os.path.join(self.dir, "cgroup.freeze"), "w") as f:
                f.write("0\n")
        # a task killed in the cgroup stays in it until its exit ends,
        # which a loaded machine makes slow (rmdir: EBUSY once): the
        # rest moved out and the rmdir tried again, 30 s in all
        deadline = time.monotonic() + 30
        while True:
            try:
                with open(os.path.join(self.dir, "cgroup.procs")) as f:
                    left = f.read().split()
                for p in left:
                    with open(os.path.join(self.root, "cgroup.procs"), "w") as f:
                        f.write(p + "\n")
            except OSError:
                pass
            try:
                os.rmdir(self.dir)
                break
            except OSError as e:
                if e.errno != errno.EBUSY or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        return False


def start_writer(path, data):
    """A process that writes data to path and keeps it open, not flushed
    (a process of its own: a fork of ours while we held it open would
    close a copy at its exec, which flushes)."""
    writer = subprocess.Popen(
        [sys.executable, "-c",
         "import os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)\n"
         "d = sys.stdin.buffer.read(%d)\n"
         "off = 0\n"
         "while off < len(d):\n"
         "    off += os.write(fd, d[off:])\n"
         "print('written', flush=True)\n"
         "time.sleep(3600)\n" % len(data), path],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    writer.stdin.write(data)
    writer.stdin.close()
    assert writer.stdout.readline() == b"written\n", "the writer wrote"
    return writer


def one_server(staging):
    """The one objfs-mount server of staging once a mount that ended just
    before (its server still exiting) is gone: [pid]."""
    deadline = time.time() + 60
    while True:
        pids = server_pids(staging)
        if len(pids) == 1:
            time.sleep(0.5)
            if server_pids(staging) == pids:
                return pids
        assert time.time() < deadline, "servers of %s: %s" % (staging, pids)
        time.sleep(0.1)


def holder_list_now(sock):
    """holder_list, or None while no holder answers (one restarting)."""
    try:
        return holder_list(sock)
    except subprocess.CalledProcessError:
        return None


def holder_worker(ns):
    """The holder process of a holder namespace: objfs-holder as PID 1 is
    its init, the holder its child (host pids)."""
    for pid in children(ns.init):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                argv0 = f.read().split(b"\0")[0]
        except OSError:
            continue
        if os.path.basename(argv0) == b"objfs-holder":
            return pid
    return None


def pauses(slow, events):
    """The longest operation of the workload around each event (name, t0;
    in order): an operation counts for the last event before it ended.
    [(name, seconds)]."""
    worst = [0.0] * len(events)
    for st, d in slow:
        i = len(events) - 1
        while i >= 0 and events[i][1] > st + d:
            i -= 1
        if i >= 0:
            worst[i] = max(worst[i], d)
    return [(name, w) for (name, _), w in zip(events, worst)]


def is_mounted(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == path for line in f)


def as_nobody(sock):
    """Connects to sock as uid 65534: what happened."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = b"?"
        try:
            os.setgid(65534)
            os.setuid(65534)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(sock)
            s.settimeout(10)
            data = s.recv(1 << 16)
            op, status = struct.unpack("=Ii", data[:8])
            code = b"refused" if op == 2 and status == 13 else b"answered"
        except OSError as e:
            code = ("oserror %d" % e.errno).encode()
        os.write(w, code)
        os._exit(0)
    os.close(w)
    got = os.read(r, 200)
    os.waitpid(pid, 0)
    os.close(r)
    return got


def peer_refused(sock):
    """A client that is not root cannot connect (socket 0600 in a root
    directory); were the modes looser, the holder refuses it anyway
    (SO_PEERCRED): EACCES, disconnected."""
    mode = os.stat(sock).st_mode & 0o777
    assert mode == 0o600, "socket mode %o" % mode
    got = as_nobody(sock)
    assert got == b"oserror 13", got
    d = os.path.dirname(sock)
    dmode = os.stat(d).st_mode & 0o777
    os.chmod(sock, 0o666)
    os.chmod(d, 0o711)
    try:
        got = as_nobody(sock)
        assert got == b"refused", got
    finally:
        os.chmod(sock, 0o600)
        os.chmod(d, dmode)


def main():
    kind = sys.argv[1]
    assert kind in ("local", "s3")
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        print("SKIP: needs root and /dev/fuse")
        return 77
    pb, pbg = csilib.load_csi_stubs(os.environ["OBJFS_HOLDER_WORK"])
    work = os.environ["OBJFS_HOLDER_WORK"]
    kubelet = os.path.join(work, "kubelet")
    state = os.path.join(work, "state")
    os.makedirs(kubelet)
    os.makedirs(state, mode=0o700)
    # the kubelet directory: shared (Bidirectional); the rest of this
    # namespace is private (csi_holder.sh)
    subprocess.run(["mount", "--bind", kubelet, kubelet], check=True)
    subprocess.run(["mount", "--make-shared", kubelet], check=True)
    sock = os.path.join(state, "holder.sock")
    env = dict(os.environ)
    env["OBJFS_MOUNT_RUNNER"] = "holder"
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        env.pop(k, None)
    plugin_args = ["--mode", "all", "--node-id", "n1", "--state-dir", state,
                   "--kubelet-dir", kubelet, "--mount-program", csilib.MOUNT_BIN,
                   "--log-level", "debug"]
    secrets = {}
    if kind == "local":
        store = os.path.join(work, "store")
        os.makedirs(store)
        open(os.path.join(store, ".objfs-store"), "w").close()
        plugin_args += ["--store", "file://" + store]
    else:
        bucket = os.environ["OBJFS_TEST_S3_BUCKET"]
        plugin_args += ["--store", "s3://%s/holder" % bucket,
                        "--s3-endpoint", os.environ["OBJFS_TEST_S3_ENDPOINT"],
                        "--s3-region", os.environ["OBJFS_TEST_S3_REGION"]]
        secrets = {"accessKeyID": os.environ["OBJFS_TEST_S3_ACCESS_KEY"],
                   "secretAccessKey": os.environ["OBJFS_TEST_S3_SECRET_KEY"]}
        creds = os.path.join(work, "plugin-creds")
        fd = os.open(creds, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, ("access_key_id=%s\nsecret_access_key=%s\n" %
                      (secrets["accessKeyID"], secrets["secretAccessKey"])).encode())
        os.close(fd)
        plugin_args += ["--credentials-file", creds]
    volume = {"id": None, "ctx": {}}
    staging = os.path.join(kubelet, "plugins/kubernetes.io/csi/objfs.csi.io/g1/globalmount")
    target = os.path.join(kubelet, "pods/p1/volumes/kubernetes.io~csi/pv1/mount")
    os.makedirs(staging)
    os.makedirs(os.path.dirname(target))
    podd = os.path.join(work, "pod")
    os.makedirs(os.path.join(podd, "vol"))
    holder_env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}

    namespaces = []
    runner = csilib.Runner("csi_holder(%s)" % kind)
    gen = [0]

    def start_holder():
        gen[0] += 1
        ready = os.path.join(work, "holder%d.ready" % gen[0])
        h = Ns("holder%d" % gen[0], [HOLDER_BIN, "--socket", sock, "--ready-file", ready,
                                     "--orphan-timeout", str(ORPHAN_S)],
               os.path.join(work, "holder.log"), env=holder_env)
        namespaces.append(h)
        wait_for(lambda: holder_check(sock, ready), 60, "holder %d ready" % gen[0])
        return h

    csi_sock = os.path.join(work, "csi.sock")

    def start_plugin():
        if os.path.exists(csi_sock):
            os.unlink(csi_sock)
        p = Ns("plugin", [csilib.CSI_BIN, "--endpoint", "unix://" + csi_sock] + plugin_args,
               os.path.join(work, "plugin.log"), env=env)
        namespaces.append(p)
        import grpc
        wait_for(lambda: os.path.exists(csi_sock), 20, "objfs-csi socket")
        ch = grpc.insecure_channel("unix://" + csi_sock)
        grpc.channel_ready_future(ch).result(timeout=20)
        return p, ch, pbg.NodeStub(ch)

    def cap():
        return pb.VolumeCapability(
            mount=pb.VolumeCapability.MountVolume(),
            access_mode=pb.VolumeCapability.AccessMode(
                mode=pb.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER))

    def publish(node):
        node.NodePublishVolume(pb.NodePublishVolumeRequest(
            volume_id=volume["id"], staging_target_path=staging, target_path=target,
            volume_capability=cap(), volume_context=volume["ctx"]), timeout=CALL)

    def stats(node):
        r = node.NodeGetVolumeStats(pb.NodeGetVolumeStatsRequest(
            volume_id=volume["id"], volume_path=target), timeout=CALL)
        assert not r.volume_condition.abnormal, r.volume_condition.message

    state_ = {}

    def logs():
        out = []
        for name in ("plugin.log", "holder.log"):
            try:
                with open(os.path.join(work, name), "rb") as f:
                    out.append("--- %s\n%s" % (name, f.read()[-6000:].decode("utf-8", "replace")))
            except OSError:
                pass
        return "\n".join(out)

    def t_survives_everything():
        h = start_holder()
        p, ch, node = start_plugin()
        state_.update(plugin=p, channel=ch, holder=h)
        v = pbg.ControllerStub(ch).CreateVolume(pb.CreateVolumeRequest(
            name="pvc-holder", volume_capabilities=[cap()], secrets=secrets),
            timeout=CALL).volume
        volume.update(id=v.volume_id, ctx=dict(v.volume_context))
        node.NodeStageVolume(pb.NodeStageVolumeRequest(
            volume_id=volume["id"], staging_target_path=staging, volume_capability=cap(),
            secrets=secrets, volume_context=volume["ctx"]), timeout=CALL)
        publish(node)
        slots = holder_list(sock)
        assert len(slots) == 1 and slots[0][4] == staging, slots
        if secrets:
            # never in argv or environment of any process
            for pid in server_pids(staging):
                for what in ("cmdline", "environ"):
                    with open("/proc/%d/%s" % (pid, what), "rb") as f:
                        assert secrets["secretAccessKey"].encode() not in f.read(), what
        # the pod: its own mount namespace holding a bind mount of the target
        pod = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             'mount --bind "$1" "$2" && exec "$3" "$4" --workload "$5"', "pod",
             target, os.path.join(podd, "vol"), sys.executable, os.path.abspath(__file__),
             podd], stdout=open(os.path.join(work, "pod.log"), "ab"),
            stderr=subprocess.STDOUT)
        state_["pod"] = pod
        wait_for(lambda: os.path.exists(os.path.join(podd, "running")), 20, "the pod's workload")
        events = [("no event (the workload alone)", time.monotonic())]
        time.sleep(1.5)
        print("  kill the plugin's pid namespace, start a new one")
        events.append(("the plugin's pid namespace killed", time.monotonic()))
        ch.close()
        p.kill()
        p, ch, node = start_plugin()
        state_.update(plugin=p, channel=ch)
        publish(node)
        stats(node)
        time.sleep(1.5)
        print("  kill -9 the objfs-mount server")
        pids = server_pids(staging)
        assert len(pids) == 1, pids
        events.append(("kill -9 of the server", time.monotonic()))
        os.kill(pids[0], signal.SIGKILL)
        wait_for(lambda: server_pids(staging) not in ([], pids), 20, "a successor")
        time.sleep(1.5)
        print("  roll the holder: a new holder namespace, ready, then the old killed")
        old = h
        events.append(("a holder roll", time.monotonic()))
        h = start_holder()
        state_["holder"] = h
        old.kill()
        assert len(holder_list(sock)) == 1
        time.sleep(1.5)
        print("  kill -9 the server again (the new holder's)")
        pids = server_pids(staging)
        assert len(pids) == 1, pids
        events.append(("kill -9 of the rolled holder's server", time.monotonic()))
        os.kill(pids[0], signal.SIGKILL)
        wait_for(lambda: server_pids(staging) not in ([], pids), 20, "a successor")
        time.sleep(1.5)
        print("  kill -9 the holder (its process: the pod's init starts a new one)")
        pids = server_pids(staging)
        before = holder_list(sock)
        hpid = holder_worker(h)
        assert len(pids) == 1 and hpid, (pids, hpid)
        events.append(("kill -9 of the holder", time.monotonic()))
        os.kill(hpid, signal.SIGKILL)
        wait_for(lambda: holder_worker(h) not in (None, hpid), 30, "a new holder")
        # the server serves on and rejoins the new holder: the same
        # process, the same mount (serial), serving
        wait_for(lambda: holder_list_now(sock) == before, 60,
                 "the server rejoining the new holder (%s)" % before)
        assert server_pids(staging) == pids, (server_pids(staging), pids)
        assert "rejoined: mount %s is ours" % before[0][1] in \
            open(os.path.join(work, "holder.log")).read(), "no rejoin logged"
        time.sleep(1.5)
        print("  kill -9 the server that rejoined (the new holder starts a successor)")
        events.append(("kill -9 of the rejoined server", time.monotonic()))
        os.kill(pids[0], signal.SIGKILL)
        wait_for(lambda: server_pids(staging) not in ([], pids), 20, "a successor")
        wait_for(lambda: [x[3] for x in holder_list(sock)] == ["1"], 20, "serving")
        # the pod writes on after every event: 20 more records through the
        # mount (a count, not a time: the machine may be slow)
        logf = os.path.join(staging, "log")
        size0 = os.path.getsize(logf)
        wait_for(lambda: os.path.getsize(logf) >= size0 + 20 * REC, 60,
                 "the pod's writes after the last event")
        stats(node)
        open(os.path.join(podd, "stop"), "w").close()
        pod.wait(60)
        with open(os.path.join(podd, "result.json")) as f:
            res = json.load(f)
        print("  workload: %d records, %d errors, longest pause %.1f ms" %
              (res["records"], res["n_errors"], res["worst_ms"]))
        for name, worst in pauses(res["slow"], events):
            print("  %s: longest pause %.0f ms" % (name, worst * 1000))
        assert res["n_errors"] == 0 and res["bad_reads"] == 0, res
        assert res["records"] * REC >= size0 + 20 * REC, res
        state_["records"] = res["records"]

    def t_peer_refused():
        peer_refused(sock)

    def t_unstage_after_roll():
        node = pbg.NodeStub(state_["channel"])
        node.NodeUnpublishVolume(pb.NodeUnpublishVolumeRequest(
            volume_id=volume["id"], target_path=target), timeout=CALL)
        node.NodeUnstageVolume(pb.NodeUnstageVolumeRequest(
            volume_id=volume["id"], staging_target_path=staging), timeout=CALL)
        assert not is_mounted(staging) and not is_mounted(target)
        assert holder_list(sock) == [], holder_list(sock)
        assert server_pids(staging) == []
        assert "ended (status 0)" in open(os.path.join(work, "holder.log")).read()
        # the data is in the store: a new mount reads every record
        node.NodeStageVolume(pb.NodeStageVolumeRequest(
            volume_id=volume["id"], staging_target_path=staging, volume_capability=cap(),
            secrets=secrets, volume_context=volume["ctx"]), timeout=CALL)
        try:
            with open(os.path.join(staging, "log"), "rb") as f:
                data = f.read()
            n = state_["records"]
            assert len(data) == n * REC, (len(data), n * REC)
            assert data == b"".join(record(i) for i in range(n))
        finally:
            node.NodeUnstageVolume(pb.NodeUnstageVolumeRequest(
                volume_id=volume["id"], staging_target_path=staging), timeout=CALL)
        assert holder_list(sock) == []

    def mount_logs():
        text = []
        for root, _, files in os.walk(os.path.join(state, "node", "logs")):
            for name in files:
                with open(os.path.join(root, name), "rb") as f:
                    text.append(f.read().decode("utf-8", "replace"))
        return "\n".join(text)

    def unstage_retry(node):
        """NodeUnstageVolume, again while a repair holds the volume
        (ABORTED: kubelet retries the same way)."""
        import grpc
        deadline = time.time() + 120
        while True:
            try:
                node.NodeUnstageVolume(pb.NodeUnstageVolumeRequest(
                    volume_id=volume["id"], staging_target_path=staging), timeout=CALL)
                return
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.ABORTED or time.time() > deadline:
                    raise
                time.sleep(0.5)

    def alive(pid):
        try:
            with open("/proc/%d/stat" % pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    def t_orphan_killed():
        """A server that outlived its holder and never rejoins (frozen):
        after --orphan-timeout the new holder kills it, and only once it is
        gone does the name become free; the watchdog then mounts again and
        the file the stopped server had open, 1 MiB written and not
        flushed, is uploaded by the new mount."""
        node = pbg.NodeStub(state_["channel"])
        node.NodeStageVolume(pb.NodeStageVolumeRequest(
            volume_id=volume["id"], staging_target_path=staging, volume_capability=cap(),
            secrets=secrets, volume_context=volume["ctx"]), timeout=CALL)
        name = "orphan-killed"
        data = os.urandom(1 << 20)
        pids = one_server(staging)
        writer = start_writer(os.path.join(staging, name), data)
        try:
            before = holder_list(sock)
            hpid = holder_worker(state_["holder"])
            assert len(before) == 1 and len(pids) == 1 and hpid, (before, pids, hpid)
            hlog = os.path.join(work, "holder.log")
            killed = "did not rejoin within %d s: killed" % ORPHAN_S
            with Frozen(pids[0]):
                t0 = time.monotonic()
                os.kill(hpid, signal.SIGKILL)
                # the new holder kills it after the timeout (a frozen task
                # of a v1 freezer dies once thawed) ...
                wait_for(lambda: killed in open(hlog).read(), ORPHAN_S + 60,
                         "the orphan killed")
                assert time.monotonic() - t0 >= ORPHAN_S - 1, "killed before the timeout"
                # mounted again only once the orphan is gone: where a
                # SIGKILL ends a frozen task at once (cgroup v2), the
                # watchdog may already have mounted again, but never
                # while the orphan lives
                served = any(x[3] != "0" for x in holder_list(sock))
                assert not served or not alive(pids[0]), \
                    "mounted again while the orphan lives"
            # ... and only once it is gone is the name free: mounted again
            wait_for(lambda: any(x[1] != before[0][1] and x[3] == "1"
                                 for x in holder_list_now(sock) or []),
                     120, "the watchdog's new mount after the orphan's kill")
            dt = time.monotonic() - t0
            assert not os.path.exists("/proc/%d" % pids[0]) or \
                open("/proc/%d/stat" % pids[0]).read().rsplit(")", 1)[1].split()[0] == "Z"
        finally:
            writer.kill()
            writer.wait()
        wait_for(lambda: os.path.exists(os.path.join(staging, name)), 60, "the recovered file")
        with open(os.path.join(staging, name), "rb") as f:
            assert f.read() == data, "the unflushed file"
        assert "recovered %s (1048576 bytes): uploaded" % name in mount_logs(), \
            "no recovery logged"
        print("  an orphan that never rejoined: killed after %d s, mounted again %.1f s "
              "after its holder's death, its unflushed file recovered" % (ORPHAN_S, dt))
        unstage_retry(node)
        assert holder_list(sock) == []

    def t_deaths_at_once():
        """Both processes of a mount killed at once, the two ways a holder
        pod dies: its holder process and the server (the pod's init
        survives), and the whole pod (every process of its pid namespace),
        started again.  Each time a file is open with 2 MiB written, not
        flushed: the holder that comes next finds no process of the mount
        alive, says so, the watchdog mounts again with the same state dir,
        and that mount uploads the file under its name, every byte."""
        node = pbg.NodeStub(state_["channel"])
        node.NodeStageVolume(pb.NodeStageVolumeRequest(
            volume_id=volume["id"], staging_target_path=staging, volume_capability=cap(),
            secrets=secrets, volume_context=volume["ctx"]), timeout=CALL)
        try:
            for i, way in enumerate(("the holder process and its server", "the holder pod")):
                name = "unsaved-%d" % i
                data = os.urandom(2 << 20)
                pids = one_server(staging)
                writer = start_writer(os.path.join(staging, name), data)
                try:
                    before = holder_list(sock)
                    assert len(before) == 1 and before[0][3] == "1", before
                    h = state_["holder"]
                    print("  kill %s at once (%d bytes unflushed)" % (way, len(data)))
                    t0 = time.monotonic()
                    if i == 0:
                        hpid = holder_worker(h)
                        assert hpid and len(pids) == 1, (hpid, pids)
                        os.kill(hpid, signal.SIGKILL)
                        os.kill(pids[0], signal.SIGKILL)
                    else:
                        h.kill()
                        state_["holder"] = start_holder()
                    # the watchdog mounts again: a new mount (serial), serving
                    wait_for(lambda: any(x[1] != before[0][1] and x[3] == "1"
                                         for x in holder_list_now(sock) or []), 120,
                             "the watchdog's new mount")
                    wait_for(lambda: os.path.exists(os.path.join(staging, name)), 60,
                             "the recovered file")
                    dt = time.monotonic() - t0
                finally:
                    writer.kill()
                    writer.wait()
                with open(os.path.join(staging, name), "rb") as f:
                    got = f.read()
                assert got == data, "%s: %d bytes, %d written" % (name, len(got), len(data))
                text = mount_logs()
                assert "recovered %s (2097152 bytes): uploaded" % name in text, \
                    "no recovery logged:\n" + text[-3000:]
                hlog = open(os.path.join(work, "holder.log")).read()
                # the server may still be dying when the new holder reads
                # its record (then it waits for its pidfd): either line
                assert any(x in hlog for x in (
                    ("its server died with the holder before us",
                     "its server ended without rejoining: the mount is lost")
                    if i == 0 else ("was kept in another pid namespace",))), hlog[-3000:]
                print("  %s killed at once: the file recovered by the watchdog's new "
                      "mount within %.1f s (running pods saw ENOTCONN)" % (way, dt))
        finally:
            unstage_retry(node)
        assert holder_list(sock) == []

    def t_orphan_not_remounted():
        """Who owns the staging path while a server that outlived its
        holder has not rejoined yet: the server is frozen (a cgroup
        freezer), the holder killed -9; for 4 watchdog periods and more the new holder
        answers for the orphan (not serving) and the plugin mounts nothing
        over it; continued, the server rejoins the same mount (serial) and
        serves."""
        node = pbg.NodeStub(state_["channel"])
        node.NodeStageVolume(pb.NodeStageVolumeRequest(
            volume_id=volume["id"], staging_target_path=staging, volume_capability=cap(),
            secrets=secrets, volume_context=volume["ctx"]), timeout=CALL)
        try:
            pids = one_server(staging)
            before = holder_list(sock)
            hpid = holder_worker(state_["holder"])
            assert len(before) == 1 and len(pids) == 1 and hpid, (before, pids, hpid)
            plog = os.path.join(work, "plugin.log")
            n0 = open(plog).read().count("is broken")
            with Frozen(pids[0]):
                os.kill(hpid, signal.SIGKILL)
                wait_for(lambda: any(x[3] == "0" for x in holder_list_now(sock) or []), 30,
                         "the new holder keeping the orphan")
                time.sleep(8)
                now = holder_list(sock)
                assert [x[:2] + x[3:] for x in now] == \
                    [before[0][:2] + ["0"] + before[0][4:]], (now, before)
                assert open(plog).read().count("is broken") == n0, "the watchdog repaired"
            wait_for(lambda: holder_list_now(sock) == before, 60, "the rejoin")
            fpath = os.path.join(staging, "after-rejoin")
            with open(fpath, "wb") as f:
                f.write(b"x" * 4096)
            with open(fpath, "rb") as f:
                assert f.read() == b"x" * 4096
            assert server_pids(staging) == pids
        finally:
            unstage_retry(node)
        assert holder_list(sock) == []

    try:
        runner.run("pod sees no error across a plugin kill, 2 server kills and a holder roll",
                   t_survives_everything)
        if runner.failed == 0:
            runner.run("a peer that is not root is refused", t_peer_refused)
            runner.run("unstage after a roll: clean unmount, slot freed, data stored",
                       t_unstage_after_roll)
        if runner.failed == 0:
            runner.run("a server that has not rejoined yet owns its staging path: "
                       "no remount", t_orphan_not_remounted)
        if runner.failed == 0:
            runner.run("a server that never rejoins is killed after --orphan-timeout, "
                       "then mounted again: nothing unsaved lost", t_orphan_killed)
        if runner.failed == 0:
            runner.run("both processes killed at once (holder and server; the pod): "
                       "nothing unsaved lost", t_deaths_at_once)
        if runner.failed:
            print(logs())
    finally:
        if os.path.exists(podd):
            open(os.path.join(podd, "stop"), "w").close()
        if "pod" in state_:
            try:
                state_["pod"].wait(30)
            except subprocess.TimeoutExpired:
                state_["pod"].kill()
        if "channel" in state_:
            state_["channel"].close()
        for ns in namespaces:
            if ns.init is not None:
                ns.kill()
        for path in (target, staging, kubelet):
            for _ in range(3):
                if is_mounted(path):
                    subprocess.run(["umount", "-l", path], stderr=subprocess.DEVNULL)
        for ns in namespaces:
            csilib.check_sanitizer_log(open(ns.logf.name, "rb").read().decode("utf-8", "replace"))
    return runner.finish()


if __name__ == "__main__":
    sys.exit(main())
