"""resume.py - the checks of resumable mounts (-o resume, issue 12), run by
fs_suite.py on the local store and on the S3 server.

Applications are real processes working on a real FUSE mount while the
server that serves it is killed with SIGKILL (or handed over to a new
binary with SIGUSR2 to the keeper): they must see no error, every byte
must be right afterwards, and the longest time one of their operations
took around the event (the pause) is printed.
"""
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import time

# One workload: python3 -c WORKLOAD MODE PATH STOPFILE RESULTFILE.  It runs
# until STOPFILE exists and writes "errors ops worst_seconds detail".
WORKLOAD = r'''
import os, sys, time, subprocess, zlib
mode, path, stop, result = sys.argv[1:5]
errors, ops, worst, detail = 0, 0, 0.0, ""
slow = []
def timed(fn):
    global worst, ops
    t = time.monotonic()
    r = fn()
    dt = time.monotonic() - t
    worst = max(worst, dt)
    if dt > 0.05:
        slow.append("%f %f" % (t, dt))
    ops += 1
    return r
try:
    if mode == "append":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        i = 0
        while not os.path.exists(stop):
            timed(lambda: os.write(fd, b"%08d\n" % i))
            i += 1
            if i % 10 == 0:
                timed(lambda: os.fsync(fd))
            time.sleep(0.01)
        timed(lambda: os.close(fd))
        detail = str(i)
    elif mode == "hold":
        # written, never fsynced, open across the events, closed at the end
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        i = 0
        while not os.path.exists(stop):
            timed(lambda: os.write(fd, (b"%08d\n" % i) * 455))
            i += 1
            time.sleep(0.01)
        timed(lambda: os.close(fd))
        detail = str(i)
    elif mode == "read":
        want = int(open(path + ".crc").read())
        while not os.path.exists(stop):
            fd = timed(lambda: os.open(path, os.O_RDONLY))
            crc = 0
            while True:
                b = timed(lambda: os.read(fd, 1 << 20))
                if not b:
                    break
                crc = zlib.crc32(b, crc)
            os.close(fd)
            if crc != want:
                errors += 1
                detail += "crc %d != %d; " % (crc, want)
    elif mode == "ls":
        while not os.path.exists(stop):
            p = timed(lambda: subprocess.run(["ls", "-lR", path], stdout=subprocess.DEVNULL,
                                             stderr=subprocess.PIPE))
            if p.returncode != 0:
                errors += 1
                detail += p.stderr.decode()[-200:]
            time.sleep(0.01)
    elif mode == "unlinked":
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        os.unlink(path)
        i = 0
        while not os.path.exists(stop):
            timed(lambda: os.pwrite(fd, b"%08d\n" % i, 9 * i))
            i += 1
            if i % 7 == 0:
                got = timed(lambda: os.pread(fd, 9 * i, 0))
                if got != b"".join(b"%08d\n" % k for k in range(i)):
                    errors += 1
                    detail = "unlinked file content wrong at %d" % i
            time.sleep(0.01)
        os.close(fd)
except OSError as e:
    errors += 1
    detail += "%s: %s" % (mode, e)
open(result + ".slow", "w").write("\n".join(slow))
open(result, "w").write("%d %d %f %s" % (errors, ops, worst, detail))
'''


def _fs():
    return sys.modules["__main__"]


def server_pid(keeper):
    """The serving child of the keeper, waiting for a new one if need be."""
    for _ in range(2000):
        try:
            kids = open("/proc/%d/task/%d/children" % (keeper, keeper)).read().split()
        except OSError:
            kids = []
        if len(kids) == 1:
            return int(kids[0])
        time.sleep(0.01)
    raise _fs().Fail("keeper %d has no single server" % keeper)


def wait_successor(keeper, old):
    for _ in range(1000):
        pid = server_pid(keeper)
        if pid != old:
            return pid
        time.sleep(0.01)
    raise _fs().Fail("no successor of %d" % old)


class Workloads:
    def __init__(self, env, d):
        self.env, self.d, self.procs = env, d, []
        self.stop = os.path.join(env.work, "stop-%d" % id(self))
        self.slow = {}          # mode: [(start, seconds)] of ops over 50 ms

    def start(self, mode, path, prefix=()):
        res = os.path.join(self.env.work, "res-%s-%d" % (mode, id(self)))
        p = subprocess.Popen(list(prefix) + [sys.executable, "-c", WORKLOAD, mode, path,
                                             self.stop, res])
        self.procs.append((mode, p, res))

    def finish(self):
        open(self.stop, "w").close()
        out = {}
        for mode, p, res in self.procs:
            try:
                p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                raise _fs().Fail("workload %s hung" % mode)
            errors, ops, worst, detail = (open(res).read().split(" ", 3) + [""])[:4]
            out[mode] = (int(errors), int(ops), float(worst), detail)
            self.slow[mode] = [tuple(float(x) for x in line.split())
                               for line in open(res + ".slow").read().splitlines() if line]
        os.unlink(self.stop)
        return out

    def kill(self):
        open(self.stop, "w").close()
        for _, p, _ in self.procs:
            p.kill()
            p.wait()


def big_file(env, d, size):
    import zlib
    data = os.urandom(1 << 20) * (size >> 20)
    with open(d + "/big", "wb") as f:
        f.write(data)
    with open(d + "/big.crc", "w") as f:
        f.write(str(zlib.crc32(data)))


def t_resume_kill9(env):
    """kill -9 of the server and handovers to a new binary, three of each
    (planned handovers are not deaths: the keeper gives up after five
    deaths in 30 s), while an appender, a streaming reader, ls -lR and a
    writer of an unlinked file run: no error, the data right, the pauses
    printed."""
    fs = _fs()
    url = env.volume("resume")
    m = env.mount(url, ["resume"])
    d, keeper = m["dir"], m["proc"].pid
    big_file(env, d, (64 if env.kind == "local" else 32) << 20)
    for i in range(4 if env.kind == "local" else 2):
        os.makedirs(d + "/tree/d%d" % i)
        for j in range(10 if env.kind == "local" else 5):
            fs.wfile(d + "/tree/d%d/f%d" % (i, j), b"x" * j)
    w = Workloads(env, d)
    try:
        w.start("append", d + "/log")
        w.start("read", d + "/big")
        w.start("ls", d + "/tree")
        w.start("unlinked", d + "/gone")
        time.sleep(1.5)
        pauses = []
        for event in ("kill", "handover", "kill", "handover", "handover", "kill"):
            old = server_pid(keeper)
            t0 = time.monotonic()
            if event == "kill":
                os.kill(old, signal.SIGKILL)
            else:
                os.kill(keeper, signal.SIGUSR2)
            wait_successor(keeper, old)
            pauses.append((event, time.monotonic() - t0))
            time.sleep(1.0)
        res = w.finish()
    except BaseException:
        w.kill()
        raise
    for mode, (errors, ops, worst, detail) in sorted(res.items()):
        print("  %-8s %5d operations, longest %.3f s, errors %d %s" %
              (mode, ops, worst, errors, detail if errors else ""), flush=True)
        fs.check(errors == 0, "%s saw errors: %s" % (mode, detail))
        fs.check(ops > 0, "%s made progress" % mode)
    print("  server gone -> successor serving: %s" %
          ", ".join("%s %.3f s" % p for p in pauses), flush=True)
    # an ls -lR takes long by itself: the pause is the 10 ms loops' and
    # the reader's longest operation
    worst = max(res[k][2] for k in ("append", "read", "unlinked"))
    fs.check(worst < 5, "pause under 5 s (%.3f s; the goal is 2 s)" % worst)
    n = int(res["append"][3])
    want = b"".join(b"%08d\n" % i for i in range(n))
    fs.check(fs.rfile(d + "/log") == want, "appended file intact (%d lines)" % n)
    env.umount(m)
    fs.check(env.get(url, "log") == want, "appended file stored intact")


def t_resume_spool_numbers(env):
    """A spool a server made after the state log's last compaction keeps
    its number in the successor: a file written and still open across
    kill -9 of the server, then a new file written by the successor, then
    more of the first: both files whole, in the mount and in the store (a
    successor used to number the new file's spool as the open one's, and
    truncated it)."""
    fs = _fs()
    url = env.volume("spoolnum")
    m = env.mount(url, ["resume"])
    d, keeper = m["dir"], m["proc"].pid
    a1, a2, b = os.urandom(3 << 20), os.urandom(1 << 20), os.urandom(2 << 20)
    fa = os.open(d + "/a", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        fs.check(os.write(fa, a1) == len(a1), "a: first write whole")
        old = server_pid(keeper)
        os.kill(old, signal.SIGKILL)
        wait_successor(keeper, old)
        fs.wfile(d + "/b", b)
        fs.check(os.write(fa, a2) == len(a2), "a: second write whole")
    finally:
        os.close(fa)
    fs.check(fs.rfile(d + "/b") == b, "b whole in the mount")
    fs.check(fs.rfile(d + "/a") == a1 + a2, "a whole in the mount")
    env.umount(m)
    fs.check(env.get(url, "b") == b, "b whole in the store")
    fs.check(env.get(url, "a") == a1 + a2, "a whole in the store")


def t_resume_crash_in_request(env):
    """The server killed in the middle of a read, a write, and after a
    rename, an unlink, a mkdir, a symlink, a mknod and a create with O_EXCL
    it ran (in the store and in the state) but did not answer: the kernel
    sends them again to the successor and the application sees the right
    answer (success, not ENOENT or EEXIST).  Killed after a release and a
    releasedir it ran (the handle closed, and recorded closed): the
    successor answers the one sent again as done, and goes on serving."""
    logs = crash_in_requests(env, "crashreq", [], (
        ("read", "r"), ("write", "w"), ("rename", "n"), ("unlink", "u"),
        ("mkdir", "dnew"), ("symlink", "lnew"), ("mknod", "mnew"), ("create", "cnew"),
        ("release", "rl"), ("releasedir", "dl")))
    fs = _fs()
    for op, log in zip(("release", "releasedir"), logs[-2:]):
        fs.check("%s of handle" % op in log and "closed before a server died" in log,
                 "the %s sent again was answered as done: %s" % (op, log[-1500:]))
        fs.check("Assertion" not in log and "signal 6" not in log,
                 "no server aborted: %s" % log[-1500:])


def t_resume_user_resend(env):
    """The userspace RESEND of kernels before 6.9 (forced here with the
    test-only user_resend: this kernel re-sends by itself): the server
    killed in the middle of a read, a write and after a rename; the
    successor processes the requests kept in the slot file again, and
    sends no FUSE_NOTIFY_RESEND."""
    logs = crash_in_requests(env, "userresend", ["user_resend"], (
        ("read", "r"), ("write", "w"), ("rename", "n")))
    fs = _fs()
    for log in logs:
        fs.check("requests are kept in" in log, "the slots were used")
        replayed = [line for line in log.splitlines() if "userspace RESEND: " in line]
        fs.check(len(replayed) == 1 and "userspace RESEND: 0 " not in replayed[0],
                 "the successor replayed the slots: %r" % replayed)


def t_resume_link(env):
    """The server killed after a link(2) it ran (the first link of a file,
    which makes it a link set, then a third name): the kernel sends LINK
    again and the application sees success (not EEXIST), one inode and the
    right link count."""
    crash_in_requests(env, "crashlink", [], (("link", "k2"), ("link", "k3")))


def crash_in_requests(env, vol, opts, ops):
    """Each op of ops (op, name) on its own resumable mount with opts and
    crash_at=op:name; checks the application's view and the store; the
    mounts' logs."""
    fs = _fs()
    url = env.volume(vol)
    data = os.urandom(3 << 20)
    m = env.mount(url, ["resume"])
    d = m["dir"]
    for n in ("r", "w", "n", "u", "k", "rl"):
        fs.wfile(d + "/" + n, data)
    os.mkdir(d + "/dl")
    fs.wfile(d + "/dl/x", b"x")
    env.umount(m)
    names = dict(ops)
    logs = []
    for op, name in ops:
        m = env.mount(url, ["resume", "crash_at=%s:%s" % (op, name)] + opts)
        d, keeper = m["dir"], m["proc"].pid
        first = server_pid(keeper)
        t0 = time.monotonic()
        if op == "read":
            fs.check(fs.rfile(d + "/r") == data, "read across the crash")
        elif op == "write":
            with open(d + "/w", "r+b") as f:
                f.write(b"W" * 100000)
            data_w = b"W" * 100000 + data[100000:]
            fs.check(fs.rfile(d + "/w") == data_w, "write across the crash")
        elif op == "rename":
            os.rename(d + "/n", d + "/n2")
            fs.check(not os.path.exists(d + "/n") and fs.rfile(d + "/n2") == data,
                     "rename across the crash")
        elif op == "unlink":
            os.unlink(d + "/u")
            fs.check(not os.path.exists(d + "/u"), "unlink across the crash")
        elif op == "mkdir":
            os.mkdir(d + "/dnew", 0o750)
            fs.wfile(d + "/dnew/in", b"inside")
            fs.check(stat.S_IMODE(os.stat(d + "/dnew").st_mode) == 0o750,
                     "mkdir across the crash")
        elif op == "symlink":
            os.symlink("target/of/lnew", d + "/lnew")
            fs.check(os.readlink(d + "/lnew") == "target/of/lnew", "symlink across the crash")
        elif op == "link":
            os.link(d + "/k", d + "/" + name)
            st = os.stat(d + "/" + name)
            fs.check(st.st_ino == os.stat(d + "/k").st_ino and
                     st.st_nlink == int(name[1:]) and fs.rfile(d + "/" + name) == data,
                     "link across the crash (nlink %d)" % st.st_nlink)
        elif op == "release":
            fs.check(fs.rfile(d + "/rl") == data, "read before the crash")
            wait_successor(keeper, first)
            fs.check(fs.rfile(d + "/rl") == data, "read after a release sent again")
        elif op == "releasedir":
            fs.check(os.listdir(d + "/dl") == ["x"], "listed before the crash")
            wait_successor(keeper, first)
            fs.check(os.listdir(d + "/dl") == ["x"], "listed after a releasedir sent again")
        elif op == "mknod":
            os.mknod(d + "/mnew", stat.S_IFREG | 0o640)
            fs.check(os.stat(d + "/mnew").st_size == 0, "mknod across the crash")
        else:
            fd = os.open(d + "/cnew", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
            os.write(fd, b"created once")
            os.close(fd)
            fs.check(fs.rfile(d + "/cnew") == b"created once", "create O_EXCL across the crash")
        took = time.monotonic() - t0
        fs.check(server_pid(keeper) != first, "the server was killed in the %s" % op)
        print("  crash in %-6s: the call returned right after %.3f s" % (op, took), flush=True)
        env.umount(m)
        logs.append(open(m["log"]).read())
    if "write" in names:
        fs.check(env.get(url, "w") == b"W" * 100000 + data[100000:], "written bytes stored")
    if "rename" in names:
        fs.check(env.get(url, "n") is None and env.get(url, "n2") == data, "renamed in the store")
    if "unlink" in names:
        fs.check(env.get(url, "u") is None, "unlinked in the store")
    if "link" in names:
        lids = {(env.head(url, n) or {"meta": {}})["meta"].get("objfs-link") for n in ("k", "k2", "k3")}
        fs.check(len(lids) == 1 and None not in lids, "three names of one link set: %s" % lids)
        fs.check(len([k for k in env.keys(url, ".objfs/links/") if "/names/" in k]) == 3,
                 "three entries in the store")
    if "mkdir" in names:
        fs.check(env.get(url, "dnew/in") == b"inside", "made directory in the store")
        fs.check(env.get(url, "lnew") == b"target/of/lnew", "symlink in the store")
        fs.check(env.get(url, "mnew") == b"", "mknod in the store")
        fs.check(env.get(url, "cnew") == b"created once", "created file in the store")
    return logs


def t_resume_delq(env):
    """The server killed right after an unlink whose delete (and the
    deletes of the names unlinked before it) still waited in the queue
    (delete_delay=5): the successor reads them from the state log and
    sends them; nothing unlinked is left in the store, nothing else is
    lost (a name unlinked and made again keeps its new bytes)."""
    fs = _fs()
    url = env.volume("crashdelq")
    m = env.mount(url, ["resume"])
    d = m["dir"]
    for n in ("a", "b", "c", "u", "keep", "again"):
        fs.wfile(d + "/" + n, n.encode())
    env.umount(m)
    m = env.mount(url, ["resume", "delete_delay=5", "crash_at=unlink:u"])
    d, keeper = m["dir"], m["proc"].pid
    first = server_pid(keeper)
    os.unlink(d + "/again")
    fs.wfile(d + "/again", b"new bytes")
    for n in ("a", "b", "c", "u"):
        os.unlink(d + "/" + n)
    fs.check(server_pid(keeper) != first, "the server was killed in the unlink")
    for n in ("a", "b", "c", "u"):
        fs.check(not os.path.exists(d + "/" + n), "%s unlinked across the crash" % n)
    env.umount(m)
    log = open(m["log"]).read()
    fs.check("4 deletes the last server deferred queued again" in log,
             "the successor queued the deletes again")
    left = [k for k in env.keys(url) if not k.startswith(".objfs")]
    fs.check(sorted(left) == ["again", "keep"], "in the store: %s" % left)
    fs.check(env.get(url, "again") == b"new bytes", "the name made again kept")


def t_resume_crash_init(env):
    """The first server killed with the kernel's INIT processed by libfuse
    and its reply in hand, not yet at the kernel (crash_at=init): the
    keeper had read INIT from the fd itself, so the successor gets it,
    answers it (the kernel gets one INIT reply, the successor's) and the
    mount works: ready, stat, write, read, no ENOTCONN; the data reaches
    the store."""
    fs = _fs()
    url = env.volume("resinit")
    t0 = time.monotonic()
    m = env.mount(url, ["resume", "crash_at=init"])
    took = time.monotonic() - t0
    d, keeper = m["dir"], m["proc"].pid
    log = open(m["log"]).read()
    fs.check("killed in the middle of init" in log, "the first server was killed at INIT: %s"
             % log[-2000:])
    deaths = [line for line in log.splitlines() if "killed by signal %d" % signal.SIGKILL in line]
    fs.check(len(deaths) == 1, "one server death: %r" % deaths)
    fs.check(os.path.ismount(d), "mounted")
    st = os.stat(d)
    fs.check(stat.S_ISDIR(st.st_mode), "stat of the mount's root")
    data = os.urandom(300000)
    fs.wfile(d + "/f", data)
    fs.check(fs.rfile(d + "/f") == data, "read back what was written")
    fs.check(os.stat(d + "/f").st_size == len(data), "stat of the file written")
    fs.check(os.listdir(d) == ["f"], "listing: %r" % os.listdir(d))
    # a second death, after INIT: the successor of the successor replays it
    old = server_pid(keeper)
    os.kill(old, signal.SIGKILL)
    wait_successor(keeper, old)
    fs.check(fs.rfile(d + "/f") == data, "read after a second death")
    log = open(m["log"]).read()
    answered = [line for line in log.splitlines() if "INIT answered" in line]
    fs.check(len(answered) == 1, "one INIT reply written: %r" % answered)
    print("  crash at INIT: ready after %.3f s" % took, flush=True)
    env.umount(m)
    fs.check(env.get(url, "f") == data, "the file stored")


# objfs-holder's protocol (src/mount/holder.h): struct objfs_hmsg
HMSG = "<IiQqQQ80sII12288s1040s"
HOP_OK, HOP_START, HOP_STOP = 1, 3, 5


def holder_call(path, op, name, spec=(), arg=0, timeout=60):
    """One request to the holder at path; the answer's (op, status)."""
    import socket
    import struct
    blob = b"".join(x.encode() + b"\0" for x in spec)
    req = struct.pack(HMSG, op, 0, 0, 0, 0, arg, name.encode(), len(blob), 0, blob, b"")
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as c:
        c.settimeout(timeout)
        c.connect(path)
        c.send(req)
        rep = c.recv(struct.calcsize(HMSG))
    return struct.unpack(HMSG, rep)[:2]


def t_resume_holder_crash_init(env):
    """The same on objfs-holder, the keeper of every mount of a node (the
    same slot code, kslot.c): a mount started with crash_at=init is
    answered live once the successor serves, and works."""
    import tempfile
    fs = _fs()
    url = env.volume("holdinit")
    hdir = tempfile.mkdtemp(prefix="holder-", dir=env.work)
    mnt = tempfile.mkdtemp(prefix="mnt-", dir=env.work)
    spool = tempfile.mkdtemp(prefix="spool-", dir=env.work)
    sock, ready, slog = hdir + "/holder.sock", hdir + "/ready", hdir + "/server.log"
    hlog = open(hdir + "/holder.log", "wb")
    holder = subprocess.Popen([os.path.join(fs.BUILD, "objfs-holder"), "--socket", sock,
                               "--ready-file", ready], env=dict(env.tool_env),
                              stdout=hlog, stderr=hlog, start_new_session=True)
    try:
        for _ in range(300):
            if os.path.exists(ready):
                break
            time.sleep(0.1)
        fs.check(os.path.exists(ready), "the holder is ready")
        op, status = holder_call(sock, HOP_START, "m", (
            fs.MOUNT, "resume,crash_at=init,spool_dir=" + spool, url, mnt, slog))
        text = open(hdir + "/holder.log").read() + open(slog).read()
        fs.check(op == HOP_OK, "the mount is live (%d, status %d): %s" % (op, status, text[-3000:]))
        fs.check("killed in the middle of init" in text and
                 len([ln for ln in text.splitlines()
                      if "killed by signal %d" % signal.SIGKILL in ln]) == 1,
                 "the first server was killed at INIT: %s" % text[-3000:])
        data = os.urandom(100000)
        fs.check(stat.S_ISDIR(os.stat(mnt).st_mode), "stat of the mount's root")
        fs.wfile(mnt + "/f", data)
        fs.check(fs.rfile(mnt + "/f") == data, "read back what was written")
        op, status = holder_call(sock, HOP_STOP, "m", arg=signal.SIGTERM)
        fs.check(op == HOP_OK, "stop accepted (%d, status %d)" % (op, status))
        for _ in range(600):
            if not os.path.ismount(mnt):
                break
            time.sleep(0.1)
        fs.check(not os.path.ismount(mnt), "unmounted at the stop")
        fs.check(env.get(url, "f") == data, "the file stored")
        text = open(hdir + "/holder.log").read()
        fs.check(len([ln for ln in text.splitlines() if "INIT answered" in ln]) == 1,
                 "one INIT reply written: %s" % text[-3000:])
    finally:
        holder.send_signal(signal.SIGTERM)
        try:
            holder.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.wait(timeout=30)
        if os.path.ismount(mnt):
            subprocess.run(["umount", "-l", mnt], stderr=subprocess.DEVNULL, timeout=30)
    fs.check(holder.returncode == 0, "the holder exited cleanly (%d)" % holder.returncode)
    fs.check_server_deaths(open(hdir + "/holder.log").read(), mnt)


def t_resume_sigterm(env):
    """SIGTERM to the keeper (what the node plugin sends at unstage) saves
    everything and unmounts, also after a successor took over."""
    fs = _fs()
    url = env.volume("resterm")
    m = env.mount(url, ["resume"])
    d, keeper = m["dir"], m["proc"].pid
    data = os.urandom(1 << 20)
    f = open(d + "/open", "wb")
    f.write(data)
    f.flush()
    old = server_pid(keeper)
    os.kill(old, signal.SIGKILL)
    wait_successor(keeper, old)
    m["proc"].send_signal(signal.SIGTERM)
    rc = m["proc"].wait(timeout=120)
    fs.check(rc == 0, "clean exit on SIGTERM (%d)" % rc)
    try:
        f.close()
    except OSError:
        pass
    env.umount(m, kill=True)
    fs.check(env.get(url, "open") == data, "dirty file of a dead server saved on SIGTERM")


def t_resume_dirty_attrs(env):
    """chmod, chown and ftruncate of a file with unsaved data survive the
    server's death: the successor shows them, and stores the data with
    them at close (utimens: tests/unit/test_fs_state.c, as FUSE saves a
    file at once when a chmod or utimens comes without a handle)."""
    fs = _fs()
    url = env.volume("dirtyattr")
    m = env.mount(url, ["resume"])
    d, keeper = m["dir"], m["proc"].pid
    data = os.urandom(1 << 20)
    fd = os.open(d + "/f", os.O_RDWR | os.O_CREAT, 0o644)
    os.write(fd, data)
    os.fchmod(fd, 0o640)
    os.fchown(fd, 1234, 5678)
    os.pwrite(fd, b"tail", len(data))
    os.ftruncate(fd, 700000)
    old = server_pid(keeper)
    os.kill(old, signal.SIGKILL)
    wait_successor(keeper, old)
    st = os.fstat(fd)
    fs.check(st.st_size == 700000, "size after the crash: %d" % st.st_size)
    fs.check(stat.S_IMODE(st.st_mode) == 0o640, "mode after the crash: %o" % st.st_mode)
    fs.check((st.st_uid, st.st_gid) == (1234, 5678), "owner after the crash")
    fs.check(os.pread(fd, 700000, 0) == data[:700000], "data after the crash")
    os.close(fd)
    env.umount(m)
    h = env.head(url, "f")
    fs.check(env.get(url, "f") == data[:700000], "truncated data stored")
    fs.check(h["meta"].get("mode") == str(stat.S_IFREG | 0o640) and
             h["meta"].get("uid") == "1234" and h["meta"].get("gid") == "5678",
             "attributes stored: %s" % h["meta"])


def spool_disk(m):
    """Disk bytes of the spools of mount m (its state directory's)."""
    total = 0
    for root, _, files in os.walk(m["spool"]):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return total


def t_resume_stream(env):
    """A sequential writer past spool_limit gives its sent parts up from
    the spool also on a resumable mount (the upload is in the state log);
    the server is killed in the middle: the successor goes on with the
    same multipart upload, and the file is stored whole."""
    fs = _fs()
    url = env.volume("resstream")
    mib = 1 << 20
    m = env.mount(url, ["resume", "part_size=5M", "spool_limit=12M", "upload_parallel=2"])
    d, keeper = m["dir"], m["proc"].pid
    chunk = os.urandom(mib)
    n, worst = 60, 0
    with open(d + "/s", "wb") as f:
        for i in range(n):
            f.write(chunk[i:] + chunk[:i])
            f.flush()
            worst = max(worst, spool_disk(m))
            if i == 30:
                old = server_pid(keeper)
                os.kill(old, signal.SIGKILL)
                wait_successor(keeper, old)
    print("  spool disk at most %.1f MiB for a %d MiB file (spool_limit 12 MiB)" %
          (worst / mib, n), flush=True)
    fs.check(worst < 30 * mib, "the spool stayed near its bound: %d MiB" % (worst // mib))
    log = open(m["log"]).read()
    goes = [line for line in log.splitlines() if "goes on with its upload after" in line]
    fs.check(len(goes) == 1, "the successor went on with the upload")
    print("  " + json.loads(goes[0])["msg"], flush=True)
    env.umount(m)
    want = b"".join(chunk[i:] + chunk[:i] for i in range(n))
    fs.check(env.get(url, "s") == want, "streamed file stored whole")


def t_resume_crash_noticed(env):
    """A server that crashes (here a SIGABRT from outside, as a failed
    assert or glibc's heap checks end one; not SIGSEGV, which ASan turns
    into an exit status) is replaced invisibly, but the keeper logs the
    signal, and the suite's unmount fails on it unless the test sent it:
    a crash cannot hide behind a resume."""
    fs = _fs()
    url = env.volume("rescrash")
    m = env.mount(url, ["resume"])
    d, keeper = m["dir"], m["proc"].pid
    # the kernel's INIT done: a mount is resumable from then on
    fs.wfile(d + "/before", b"before")
    old = server_pid(keeper)
    # no core file left behind (in / by default)
    resource.prlimit(old, resource.RLIMIT_CORE, (0, 0))
    os.kill(old, signal.SIGABRT)
    wait_successor(keeper, old)
    fs.wfile(d + "/f", b"after")
    fs.check(open(d + "/f", "rb").read() == b"after" and
             open(d + "/before", "rb").read() == b"before", "the successor serves")
    log = open(m["log"]).read()
    fs.check("pid %d killed by signal %d (" % (old, signal.SIGABRT) in log,
             "the keeper names the signal: %s" % log[-2000:])
    try:
        fs.check_server_deaths(log, d)
        raise fs.Fail("a SIGABRT death passed the check")
    except fs.Fail as e:
        fs.check("a server crashed" in str(e), "the check names the crash: %s" % e)
    fs.check_server_deaths(log, d, (signal.SIGKILL, signal.SIGABRT))
    env.umount(m, signals=(signal.SIGKILL, signal.SIGABRT))


def t_resume_detached_log(env):
    """A resumable mount started without -f (as mount(8) runs it): the
    first server's errors before it is ready reach the caller's stderr;
    then the keeper's lines and every server's, successors included, go
    to log_file= as a detached mount's without resume."""
    import tempfile
    fs = _fs()
    url = env.volume("resdetached")
    mnt = tempfile.mkdtemp(prefix="mnt-", dir=env.work)
    spool = tempfile.mkdtemp(prefix="spool-", dir=env.work)
    logf = os.path.join(env.work, "resdetached.log")
    base = [fs.MOUNT, "-o", "resume,spool_dir=%s,log_file=%s" % (spool, logf)]
    p = subprocess.run([fs.MOUNT, "-o", "resume,state_dir=/proc/objfs-none/s,log_file=" + logf,
                        url, mnt], env=dict(env.tool_env), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    fs.check(p.returncode != 0 and b"/proc/objfs-none" in p.stderr,
             "a failing first server tells the caller: %r" % p.stderr)
    p = subprocess.run(base + [url, mnt], env=dict(env.tool_env), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    fs.check(p.returncode == 0, "detached resumable mount failed: %r" % p.stderr)
    try:
        fs.check(os.path.ismount(mnt), "not mounted")
        # the keeper: serves mnt, and its parent does not
        def serves(pid):
            try:
                return mnt.encode() in open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
            except OSError:
                return False

        def parent(pid):
            return open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[1]
        keepers = [int(pid) for pid in os.listdir("/proc")
                   if pid.isdigit() and serves(pid) and not serves(parent(pid))]
        fs.check(len(keepers) == 1, "one keeper: %r" % keepers)
        keeper = keepers[0]
        old = server_pid(keeper)
        os.kill(old, signal.SIGKILL)
        wait_successor(keeper, old)
        fs.wfile(os.path.join(mnt, "f"), b"x")
    finally:
        subprocess.run(["fusermount3", "-u", mnt], timeout=60)
    deadline = time.time() + 30
    msgs = []
    while time.time() < deadline:
        text = open(logf).read() if os.path.exists(logf) else ""
        msgs = [json.loads(line)["msg"] for line in text.splitlines()]
        if any("the FUSE connection ended" in m for m in msgs):
            break
        time.sleep(0.2)
    for want in ("mounted on", "died", "taken over", "the FUSE connection ended"):
        fs.check(any(want in m for m in msgs), "log_file lacks %r: %r" % (want, msgs))
    fs.check_server_deaths(text, mnt)
    fs.check(b"mounted on" not in p.stderr and b"died" not in p.stderr,
             "nothing on the caller's stderr once ready: %r" % p.stderr)


# ---- a mount that died with its keeper (issue 29: nothing unsaved dropped) ----

def scrape_sock(path):
    """The metrics served on the unix socket path, as a dict."""
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    s.sendall(b"GET /metrics HTTP/1.0\r\nHost: objfs\r\n\r\n")
    buf = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        buf += d
    s.close()
    out = {}
    for line in buf.decode().split("\r\n\r\n", 1)[-1].splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def wait_gone(pid, what):
    """Polls until process pid is gone (reaped or a zombie)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            st = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if st == "Z":
            return
        time.sleep(0.05)
    raise _fs().Fail("%s (pid %d) still alive after 60 s" % (what, pid))


def kill_keeper(env, m):
    """kill -9 of the keeper of m and its server at once (their process
    group: alone, either is survived, issue 29), then the lazy unmount of
    the dead mount, as the node plugin's watchdog does before it mounts
    again."""
    keeper = m["proc"].pid
    server = server_pid(keeper)
    os.killpg(keeper, signal.SIGKILL)
    m["proc"].wait(timeout=60)
    wait_gone(server, "the server of the killed keeper")
    env.mounts.remove(m)
    subprocess.run(["umount", "-l", m["dir"]], stderr=subprocess.DEVNULL, timeout=30)
    _fs().check(not os.path.ismount(m["dir"]), "the dead mount is gone")


def spool_files(sdir):
    """The spools (and journals) a state directory holds."""
    try:
        return sorted(os.listdir(os.path.join(sdir, "spool")))
    except FileNotFoundError:
        return []


def log_msgs(m):
    msgs = []
    for line in open(m["log"]).read().splitlines():
        try:
            msgs.append(json.loads(line).get("msg", ""))
        except ValueError:
            pass
    return msgs


def t_resume_recover_dead_keeper(env):
    """kill -9 of the keeper while a file with 2 MiB written (not flushed)
    is open, and another is open and unlinked: a new mount with the same
    state_dir (not a successor) uploads the first under its name before it
    serves, drops the second (no name), says so, and leaves no spool
    behind; nothing kept, objfs_fs_unsaved_files 0.  The same with a file
    streaming as a multipart upload (parts sent, the rest in the spool):
    the upload is completed."""
    fs = _fs()
    url = env.volume("recover")
    sdir = os.path.join(env.work, "state-recover")
    opts = ["resume", "state_dir=" + sdir, "part_size=5M"]
    m = env.mount(url, opts)
    d = m["dir"]
    data = os.urandom(2 << 20)
    big = os.urandom(13 << 20)
    fd = os.open(d + "/f", os.O_WRONLY | os.O_CREAT, 0o644)
    write_all(fd, data)
    gone = os.open(d + "/gone", os.O_WRONLY | os.O_CREAT, 0o644)
    write_all(gone, b"g" * 100000)
    os.unlink(d + "/gone")
    os.makedirs(d + "/dir")
    sfd = os.open(d + "/dir/s", os.O_WRONLY | os.O_CREAT, 0o644)
    write_all(sfd, big)
    fs.check(len(spool_files(sdir)) >= 6, "the spools are in the state dir: %s" % spool_files(sdir))
    # its two whole parts sent and recorded (no part in flight: the
    # state log has a part before the stream counts it done)
    deadline = time.monotonic() + 120
    while True:
        met = scrape_sock(sdir + "/metrics.sock")
        if (met.get("objfs_fs_streamed_parts_total", 0) >= 2 and
                met.get("objfs_fs_upload_parts_in_flight", 1) == 0):
            break
        fs.check(time.monotonic() < deadline, "two parts sent: %s" % met)
        time.sleep(0.05)
    # no subprocess before the kill: a fork's copies of the open fds,
    # closed at its exec, send FLUSH, which uploads
    kill_keeper(env, m)
    for h in (fd, gone, sfd):
        try:
            os.close(h)
        except OSError:
            pass
    fs.check(env.keys(url) in (["dir/"], [".objfs/usage", "dir/"]),
             "nothing uploaded before the kill: %s" % env.keys(url))
    fs.check(os.path.exists(sdir + "/log"), "the dead mount left its log")
    m2 = env.mount(url, opts)
    msgs = log_msgs(m2)
    for want in ("recovered f (2097152 bytes): uploaded",
                 "recovered dir/s (13631488 bytes): uploaded",
                 "\"gone\" (100000 bytes) was unlinked: nothing to save",
                 "recovered 2 unsaved file(s) a dead mount left in %s: 2 uploaded, 0 kept" % sdir):
        fs.check(any(want in x for x in msgs), "log lacks %r:\n%s" % (want, "\n".join(msgs)))
    fs.check(any("goes on with its upload after 2 parts" in x for x in msgs),
             "the streamed upload went on: %s" % "\n".join(msgs))
    fs.check(env.get(url, "f") == data, "the open file is in the store, every byte")
    fs.check(env.get(url, "dir/s") == big, "the streamed file is in the store, every byte")
    fs.check(env.get(url, "gone") is None, "the unlinked file is not")
    fs.check(spool_files(sdir) == [], "no spool left in the state dir: %s" % spool_files(sdir))
    kept = [n for n in os.listdir(m2["spool"]) if n.startswith("objfs-unsaved-")]
    fs.check(kept == [], "nothing kept: %s" % kept)
    fs.check(fs.rfile(m2["dir"] + "/f") == data, "the new mount reads it")
    met = scrape_sock(sdir + "/metrics.sock")
    fs.check(met.get("objfs_fs_unsaved_files") == 0, "objfs_fs_unsaved_files 0: %s" %
             met.get("objfs_fs_unsaved_files"))
    env.umount(m2)
    fs.check(not os.path.exists(sdir + "/log"), "a clean stop leaves no log")


def t_resume_recover_kept(env):
    """kill -9 of the keeper while a file in a directory is open with
    2 MiB unsaved, then the directory removed from the store by someone
    else: the next mount with the state_dir cannot upload it under its name
    (it would bring the directory back), so its bytes are kept in spool_dir
    as objfs-unsaved-*, an error line names the file, the metric counts it,
    the state dir holds no spool, and the mount serves.  Before that, a
    mount whose spool_dir cannot keep it refuses to start, and leaves the
    data in the state dir."""
    fs = _fs()
    url = env.volume("reckept")
    sdir = os.path.join(env.work, "state-reckept")
    opts = ["resume", "state_dir=" + sdir]
    m = env.mount(url, opts)
    d = m["dir"]
    os.makedirs(d + "/sub")
    fs.wfile(d + "/sub/other", b"other")
    fs.wfile(d + "/top", b"top")
    data = os.urandom(2 << 20)
    fd = os.open(d + "/sub/f", os.O_WRONLY | os.O_CREAT, 0o644)
    write_all(fd, data)
    kill_keeper(env, m)
    try:
        os.close(fd)
    except OSError:
        pass
    keys = env.keys(url, "sub/")
    fs.check(sorted(keys) == ["sub/", "sub/other"], "the directory in the store: %s" % keys)
    for k in keys:
        env.tool(url, "del", k)
    fs.check(env.keys(url, "sub/") == [], "the directory removed")
    # a spool_dir where nothing can be kept: the mount refuses to start
    # over the data, which stays in the state dir
    mnt = m["dir"]
    logf = os.path.join(env.work, "reckept-refused.log")
    with open(logf, "wb") as lf:
        p = subprocess.run([fs.MOUNT, "-f", "-o", ",".join(
            opts + ["spool_dir=" + os.path.join(env.work, "no-such-dir")]), url, mnt],
            env=dict(env.tool_env), stdout=lf, stderr=lf, timeout=120)
    text = open(logf).read()
    fs.check(p.returncode != 0 and "could be neither uploaded nor kept" in text,
             "the mount refused (%d): %s" % (p.returncode, text[-2000:]))
    fs.check(not os.path.ismount(mnt), "not mounted")
    fs.check(os.path.exists(sdir + "/log") and len(spool_files(sdir)) == 2,
             "the data stays in the state dir: %s" % spool_files(sdir))
    fs.check(env.keys(url, "sub/") == [], "nothing uploaded: %s" % env.keys(url, "sub/"))
    m2 = env.mount(url, opts)
    msgs = log_msgs(m2)
    why = [x for x in msgs if x.startswith("recovering sub/f (2097152 bytes) a dead mount had not saved")]
    fs.check(len(why) == 1 and "its directory sub/ is gone from the store" in why[0],
             "an error line names the file and why: %s" % "\n".join(msgs))
    kept = [x for x in msgs if x.startswith("unsaved data of sub/f (2097152 bytes) kept in ")]
    fs.check(len(kept) == 1, "the kept path is logged: %s" % "\n".join(msgs))
    path = kept[0].split(" kept in ", 1)[1]
    print("  " + why[0] + "\n  " + kept[0], flush=True)
    fs.check(os.path.dirname(path) == m2["spool"] and
             os.path.basename(path).startswith("objfs-unsaved-"),
             "kept in spool_dir as objfs-unsaved-*: %s" % path)
    fs.check(fs.rfile(path) == data, "the kept file holds every byte")
    fs.check(open(path + ".txt").read() == kept[0] + "\n", "its note says what it is")
    fs.check(any("recovered 1 unsaved file(s) a dead mount left in %s: 0 uploaded, 1 kept" % sdir
                 in x for x in msgs), "the summary: %s" % "\n".join(msgs))
    lines = [json.loads(x) for x in open(m2["log"]).read().splitlines() if x.startswith("{")]
    fs.check(any(x.get("level") == "error" and x.get("msg", "").startswith("recovering sub/f")
                 for x in lines), "logged as an error")
    fs.check(env.keys(url, "sub/") == [], "the directory not brought back: %s" % env.keys(url, "sub/"))
    fs.check(spool_files(sdir) == [], "no spool left in the state dir: %s" % spool_files(sdir))
    met = scrape_sock(sdir + "/metrics.sock")
    fs.check(met.get("objfs_fs_unsaved_files") == 1, "objfs_fs_unsaved_files 1: %s" %
             met.get("objfs_fs_unsaved_files"))
    fs.check(fs.rfile(m2["dir"] + "/top") == b"top", "the mount serves")
    env.umount(m2)


# ---- any one process may die (issue 29): standalone, resume by default ----

def ns_children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def ns_init(ns):
    """The first process of the pid namespace unshare (ns) made: its child,
    waited for up to 5 s."""
    for _ in range(500):
        kids = ns_children(ns.pid)
        if kids:
            return kids[0]
        time.sleep(0.01)
    raise _fs().Fail("no namespace init")


def mount_procs(init, mnt):
    """The objfs-mount processes of mount point mnt in the namespace whose
    init is pid init: {pid: ppid}."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            argv = open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")
            ppid = int(open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if argv and argv[0].endswith(b"objfs-mount") and mnt.encode() in argv:
            st = open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()[0]
            if st != "Z":
                out[int(d)] = ppid
    return out


def roles(init, mnt):
    """(keeper, server) of the mount: the server is the one holding
    /dev/fuse with threads; the keeper is single-threaded."""
    keeper = server = None
    for pid in mount_procs(init, mnt):
        try:
            threads = len(os.listdir("/proc/%d/task" % pid))
        except OSError:
            continue
        if threads == 1:
            keeper = pid
        else:
            server = pid
    return keeper, server


def stored_diff(got, want):
    """How a stored object differs from what the application was told is
    stored: lengths, the first differing offset and the bytes around it,
    the offset as a line of the 9-byte records the workloads write."""
    if got is None:
        return "the object is missing (%d bytes wanted)" % len(want)
    off = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
               min(len(got), len(want)))
    lo = max(0, off - 18)
    return ("stored %d bytes, wanted %d; first difference at offset %d (record %d, "
            "byte %d): stored %r, wanted %r" %
            (len(got), len(want), off, off // 9, off % 9, got[lo:off + 27],
             want[lo:off + 27]))


def t_resume_any_death(env):
    """Standalone objfs-mount with no resume option (the default), as a
    container runtime runs it: in its own pid and mount namespaces, under
    an init that is not objfs-mount (a pid namespace dies with its pid 1).
    kill -9 of the server, of the keeper, of the adopted server and of the
    new keeper, while an appender with fsync, a writer that never fsyncs,
    a streaming reader and ls -lR run in that mount namespace: no error,
    every acknowledged line in the store, the unsynced file in the store
    with all its bytes once closed; the pause of each death printed."""
    fs = _fs()
    url = env.volume("anydeath")
    import zlib
    big = os.urandom(1 << 20) * (16 if env.kind == "local" else 8)
    env.tool(url, "put", "big", data=big)
    env.tool(url, "put", "big.crc", data=str(zlib.crc32(big)).encode())
    for i in range(3):
        for j in range(8):
            env.tool(url, "put", "tree/d%d/f%d" % (i, j), data=b"x" * j)
    mnt = os.path.join(env.work, "anydeath-mnt")
    spool = os.path.join(env.work, "anydeath-spool")
    os.makedirs(mnt)
    os.makedirs(spool)
    logf = os.path.join(env.work, "anydeath.log")
    r, w = os.pipe()
    # pid 1 is a shell (an init such as tini or docker --init would do):
    # it stays after the first keeper dies
    script = '"$0" -f -o spool_dir=%s,ready_fd=%d %s %s; exec sleep 100000' % (
        spool, w, url, mnt)
    lf = open(logf, "ab")
    ns = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount", "--propagation", "private",
         "--mount-proc", "--kill-child", "sh", "-c", script, fs.MOUNT],
        stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, pass_fds=(w,),
        env=dict(env.tool_env), start_new_session=True)
    os.close(w)
    init = None
    w = None
    try:
        ready, _, _ = select_read(r, 30)
        os.close(r)
        fs.check(ready == b"R", "mount not ready: %s" % open(logf).read()[-3000:])
        init = ns_init(ns)
        enter = ["nsenter", "-t", str(init), "-m"]
        keeper, server = roles(init, mnt)
        fs.check(keeper and server, "a keeper and a server: %s" % mount_procs(init, mnt))
        w = Workloads(env, mnt)
        w.start("append", mnt + "/log", enter)
        w.start("hold", mnt + "/held", enter)
        w.start("read", mnt + "/big", enter)
        w.start("ls", mnt + "/tree", enter)
        time.sleep(1.5)
        events = []
        for what in ("server", "keeper", "server", "keeper"):
            keeper, server = roles(init, mnt)
            victim = server if what == "server" else keeper
            t0 = time.monotonic()
            os.kill(victim, signal.SIGKILL)
            deadline = t0 + 60
            while True:
                k2, s2 = roles(init, mnt)
                if (k2 and s2 and victim not in (k2, s2) and
                        len(mount_procs(init, mnt)) == 2):
                    break
                fs.check(time.monotonic() < deadline, "no new %s after kill -9 of %d: %s" %
                         (what, victim, mount_procs(init, mnt)))
                time.sleep(0.01)
            events.append((what, t0, time.monotonic() - t0))
            time.sleep(1.5)
        res = w.finish()
        slow, w = w.slow, None
    except BaseException:
        if w is not None:
            w.kill()
        os.killpg(ns.pid, signal.SIGKILL)
        ns.wait()
        raise
    finally:
        lf.close()
    for mode, (errors, ops, worst, detail) in sorted(res.items()):
        print("  %-8s %5d operations, longest %.3f s, errors %d %s" %
              (mode, ops, worst, errors, detail if errors else ""), flush=True)
    # the pause of a death: the longest operation of the 10 ms loops and
    # the reader that overlaps the 3 s after it
    for what, t0, dt in events:
        pause = 0.0
        for mode in ("append", "hold", "read"):
            for start, d in slow.get(mode, []):
                if start + d >= t0 and start < t0 + 3:
                    pause = max(pause, d)
        print("  kill -9 of the %s: a new process in %.3f s, longest application "
              "pause %.3f s" % (what, dt, pause), flush=True)
    for mode, (errors, ops, worst, detail) in sorted(res.items()):
        fs.check(errors == 0, "%s saw errors: %s" % (mode, detail))
        fs.check(ops > 0, "%s made progress" % mode)
    n = int(res["append"][3])
    want = b"".join(b"%08d\n" % i for i in range(n))
    nh = int(res["hold"][3])
    held = b"".join((b"%08d\n" % i) * 455 for i in range(nh))
    p = subprocess.run(enter + ["fusermount3", "-u", mnt], stderr=subprocess.PIPE, timeout=120)
    fs.check(p.returncode == 0, "unmount: %s" % p.stderr.decode())
    deadline = time.monotonic() + 120
    while mount_procs(init, mnt):
        fs.check(time.monotonic() < deadline, "the mount's processes did not exit")
        time.sleep(0.05)
    os.killpg(ns.pid, signal.SIGKILL)
    ns.wait()
    text = open(logf).read()
    fs.check_server_deaths(text, mnt)
    fs.check("giving the mount up" not in text, "the keeper gave up: %s" % text[-3000:])
    bad = []
    for key, exp, what in (("log", want, "every acknowledged line stored (%d lines)" % n),
                           ("held", held, "the unsynced file stored with every byte "
                            "(%d bytes)" % len(held))):
        got = env.get(url, key)
        if got != exp:
            bad.append("%s: %s" % (what, stored_diff(got, exp)))
    if bad:
        fs.keep_logs(env, "t_resume_any_death", [logf])
    fs.check(not bad, "; ".join(bad))
    fs.check(len(os.listdir(spool)) == 0 or
             all(not os.listdir(os.path.join(spool, x)) for x in os.listdir(spool)),
             "a clean stop leaves no state: %s" % os.listdir(spool))


def pid1_start(env, url, mnt, opts, logf):
    """objfs-mount as PID 1 of new pid and mount namespaces (a container
    whose first process it is; no -f): (the unshare process, the init's
    host pid).  The mount namespace's mounts are private: the test enters
    it (nsenter -m) to use the mount."""
    fs = _fs()
    r, w = os.pipe()
    lf = open(logf, "ab")
    ns = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount", "--propagation", "private",
         "--mount-proc", "--kill-child", fs.MOUNT, "-o",
         ",".join(opts + ["ready_fd=%d" % w]), url, mnt],
        stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, pass_fds=(w,),
        env=dict(env.tool_env), start_new_session=True)
    os.close(w)
    lf.close()
    ready, _, _ = select_read(r, 60)
    os.close(r)
    if ready != b"R":
        os.killpg(ns.pid, signal.SIGKILL)
        ns.wait()
        raise fs.Fail("PID 1 mount not ready: %s" % open(logf).read()[-3000:])
    init = ns_init(ns)
    return ns, init


def t_resume_pid1(env):
    """objfs-mount as PID 1 of a container (issue 29 item 3): it stays in
    the foreground (ready_fd written; never detaches, as its exit would end
    the namespace), and is the keeper.  kill -9 of its server under an
    appender with fsync and a reader: no error, a successor, the dead
    server reaped (no zombie in the namespace).  SIGTERM to PID 1 is
    forwarded: a clean unmount, exit 0, every acknowledged line stored.
    Then the container killed (PID 1 and its server at once) while a file
    is open with 2 MiB written and not flushed: the next mount with that
    state_dir uploads it under its name, every byte."""
    fs = _fs()
    url = env.volume("pid1")
    import zlib
    big = os.urandom(1 << 20) * 4
    env.tool(url, "put", "big", data=big)
    env.tool(url, "put", "big.crc", data=str(zlib.crc32(big)).encode())
    mnt = os.path.join(env.work, "pid1-mnt")
    spool = os.path.join(env.work, "pid1-spool")
    sdir = os.path.join(env.work, "pid1-state")
    os.makedirs(mnt)
    os.makedirs(spool)
    logf = os.path.join(env.work, "pid1.log")
    opts = ["spool_dir=" + spool, "state_dir=" + sdir]
    ns, init = pid1_start(env, url, mnt, opts, logf)
    w = None
    try:
        argv0 = open("/proc/%d/cmdline" % init, "rb").read().split(b"\0")[0]
        fs.check(argv0.endswith(b"objfs-mount"), "PID 1 is objfs-mount: %r" % argv0)
        keeper, server = roles(init, mnt)
        fs.check(keeper == init and server, "PID 1 keeps, its child serves: %s" %
                 mount_procs(init, mnt))
        enter = ["nsenter", "-t", str(init), "-m"]
        w = Workloads(env, mnt)
        w.start("append", mnt + "/log", enter)
        w.start("read", mnt + "/big", enter)
        time.sleep(1.5)
        t0 = time.monotonic()
        os.kill(server, signal.SIGKILL)
        deadline = t0 + 60
        while True:
            k2, s2 = roles(init, mnt)
            if k2 == init and s2 and s2 != server:
                break
            fs.check(time.monotonic() < deadline, "no successor: %s" % mount_procs(init, mnt))
            time.sleep(0.01)
        dt = time.monotonic() - t0
        deadline = time.monotonic() + 30
        while os.path.exists("/proc/%d" % server):
            fs.check(time.monotonic() < deadline, "the dead server %d was not reaped "
                     "(state %s)" % (server, open("/proc/%d/stat" % server).read().split()[2]))
            time.sleep(0.05)
        time.sleep(1.5)
        res = w.finish()
        slow, w = w.slow, None
        pause = max([d for mode in ("append", "read") for st, d in slow.get(mode, [])
                     if st + d >= t0 and st < t0 + 3] + [0.0])
        print("  kill -9 of PID 1's server: a successor in %.3f s, longest application "
              "pause %.3f s" % (dt, pause), flush=True)
        for mode, (errors, ops, worst, detail) in sorted(res.items()):
            fs.check(errors == 0, "%s saw errors: %s" % (mode, detail))
            fs.check(ops > 0, "%s made progress" % mode)
        n = int(res["append"][3])
        os.kill(init, signal.SIGTERM)
        ns.wait(timeout=120)
        fs.check(ns.returncode == 0, "PID 1 exited %d on SIGTERM: %s" %
                 (ns.returncode, open(logf).read()[-3000:]))
    except BaseException:
        if w is not None:
            w.kill()
        os.killpg(ns.pid, signal.SIGKILL)
        ns.wait()
        raise
    fs.check_server_deaths(open(logf).read(), mnt)
    fs.check(env.get(url, "log") == b"".join(b"%08d\n" % i for i in range(n)),
             "every acknowledged line stored (%d lines)" % n)
    # both at once: the container killed with a file open and unflushed
    ns, init = pid1_start(env, url, mnt, opts, logf)
    data = os.urandom(2 << 20)
    writer = subprocess.Popen(
        ["nsenter", "-t", str(init), "-m", sys.executable, "-c",
         "import os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)\n"
         "d = sys.stdin.buffer.read(%d)\n"
         "off = 0\n"
         "while off < len(d):\n"
         "    off += os.write(fd, d[off:])\n"
         "print('written', flush=True)\n"
         "time.sleep(3600)\n" % len(data), mnt + "/f"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        writer.stdin.write(data)
        writer.stdin.close()
        fs.check(writer.stdout.readline() == b"written\n", "the writer wrote")
        os.kill(init, signal.SIGKILL)
        ns.wait(timeout=60)
    finally:
        writer.kill()
        writer.wait()
        if ns.poll() is None:
            os.killpg(ns.pid, signal.SIGKILL)
            ns.wait()
    fs.check(env.get(url, "f") is None, "nothing uploaded before the kill")
    m2 = env.mount(url, ["state_dir=" + sdir])
    msgs = log_msgs(m2)
    got = [x for x in msgs if "recovered f (2097152 bytes): uploaded" in x]
    fs.check(got, "the next mount recovered it: %s" % "\n".join(msgs))
    print("  container killed (PID 1 and its server at once): " + got[0], flush=True)
    fs.check(env.get(url, "f") == data, "the unflushed file is in the store, every byte")
    env.umount(m2)


def select_read(fd, timeout):
    import select
    ready, _, _ = select.select([fd], [], [], timeout)
    return (os.read(fd, 1) if ready else b""), None, None


def t_resume_request_timeout(env):
    """Linux 6.14's FUSE request timeout shorter than a takeover may take
    (a stand-in for /proc/sys/fs/fuse: the real one is global): -o resume
    is refused with an error naming it; the default mounts as one process
    and warns; noresume mounts quietly; 0 keeps resume."""
    fs = _fs()
    url = env.volume("reqtimeout")
    sysctl = os.path.join(env.work, "fake-sysctl")
    os.makedirs(sysctl)
    open(sysctl + "/max_request_timeout", "w").write("5\n")
    open(sysctl + "/default_request_timeout", "w").write("0\n")
    saved = env.tool_env
    env.tool_env = dict(saved, OBJFS_TEST_FUSE_SYSCTL_DIR=sysctl)
    try:
        mnt = os.path.join(env.work, "reqtimeout-mnt")
        os.makedirs(mnt)
        p = subprocess.run([fs.MOUNT, "-f", "-o", "resume", url, mnt], env=env.tool_env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        err = p.stderr.decode()
        fs.check(p.returncode != 0 and "cannot mount %s with resume" % url in err and
                 "unanswered for 5 s" in err and "max_request_timeout" in err,
                 "resume refused (%d): %s" % (p.returncode, err))
        fs.check(not os.path.ismount(mnt), "not mounted")
        m = env.mount(url)
        fs.check(any("mounting without resume" in x and "unanswered for 5 s" in x
                     for x in log_msgs(m)), "the default warns: %s" % log_msgs(m))
        fs.check(len(os.listdir("/proc/%d/task" % m["proc"].pid)) > 1 and
                 not ns_children(m["proc"].pid), "one process, no keeper")
        fs.wfile(m["dir"] + "/f", b"one")
        env.umount(m)
        fs.check(env.get(url, "f") == b"one", "stored")
        open(sysctl + "/max_request_timeout", "w").write("0\n")
        m = env.mount(url)
        fs.check(len(ns_children(m["proc"].pid)) == 1, "a keeper and its server")
        env.umount(m)
    finally:
        env.tool_env = saved


TESTS = [t_resume_kill9, t_resume_spool_numbers, t_resume_crash_in_request, t_resume_crash_init,
         t_resume_holder_crash_init, t_resume_delq, t_resume_link, t_resume_user_resend,
         t_resume_dirty_attrs, t_resume_stream,
         t_resume_detached_log, t_resume_sigterm, t_resume_crash_noticed,
         t_resume_recover_dead_keeper, t_resume_recover_kept, t_resume_any_death,
         t_resume_pid1,
         t_resume_request_timeout]
