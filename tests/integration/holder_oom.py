"""The holder's shield from the OOM killer, said out loud (issue 35 item 3).

objfs-holder asks for oom_score_adj -1000 and reads back what it got; a
score that is not -1000 is logged as a warning naming it, and the node
plugin exports it as objfs_holder_oom_score_adj (with objfs_holder_up)
on its /metrics, asked of the holder at each scrape.

Runs a real objfs-holder and a real objfs-csi (mode node,
OBJFS_MOUNT_RUNNER=holder, --metrics-address 127.0.0.1:PORT) twice:
  - without CAP_SYS_RESOURCE (setpriv drops it from the bounding set), as
    a runtime that withholds it does: the score stays the one it started
    with (100, as a kubelet gives a Burstable container);
    the holder warns with that score and the cause, /metrics shows it;
  - as the test runs: the score is whatever this environment allows
    (-1000 with CAP_SYS_RESOURCE in the host's user namespace; in a user
    namespace the write is refused): /metrics equals the holder's
    /proc/PID/oom_score_adj, and the warning appears exactly when it is
    not -1000.
Then the holder is stopped: objfs_holder_up 0 and no score.
Needs root and setpriv (util-linux); exits 77 only without them.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

BUILDDIR = os.environ.get("OBJFS_BUILDDIR", os.getcwd())
HOLDER = os.path.join(BUILDDIR, "objfs-holder")
CSI = os.path.join(BUILDDIR, "objfs-csi")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(cond, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def start_score():
    """The score a container starts with (the kubelet's, e.g. a Burstable
    pod's): 100, so the number logged must be the one read back."""
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("100")


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("objfs_holder_"):
            name, value = line.split()
            out[name] = int(value)
    return out


def run_case(work, wrap, label):
    """One holder (argv prefix wrap) and one plugin: the holder's real
    score, its log, and what /metrics says."""
    state = os.path.join(work, label, "state")
    os.makedirs(state, mode=0o700)
    os.makedirs(os.path.join(work, label, "kubelet"))
    store = os.path.join(work, label, "store")
    os.makedirs(store)
    open(os.path.join(store, ".objfs-store"), "w").close()
    sock = os.path.join(state, "holder.sock")
    ready = os.path.join(work, label, "ready")
    hlog = os.path.join(work, label, "holder.log")
    port = free_port()
    holder = subprocess.Popen(wrap + [HOLDER, "--socket", sock, "--ready-file", ready],
                              stdout=open(hlog, "wb"), stderr=subprocess.STDOUT,
                              preexec_fn=start_score)
    plugin = None
    try:
        wait_for(lambda: os.path.exists(ready), 20, "%s: holder ready" % label)
        with open("/proc/%d/oom_score_adj" % holder.pid) as f:
            real = int(f.read())
        env = dict(os.environ, OBJFS_MOUNT_RUNNER="holder", OBJFS_HOLDER_SOCKET=sock)
        plugin = subprocess.Popen(
            [CSI, "--mode", "node", "--node-id", "n1",
             "--endpoint", "unix://" + os.path.join(work, label, "csi.sock"),
             "--state-dir", state, "--kubelet-dir", os.path.join(work, label, "kubelet"),
             "--store", "file://" + store, "--metrics-address", "127.0.0.1:%d" % port],
            env=env, stdout=open(os.path.join(work, label, "csi.log"), "wb"),
            stderr=subprocess.STDOUT)

        def up():
            try:
                return scrape(port).get("objfs_holder_up") == 1
            except OSError:
                return False
        wait_for(up, 20, "%s: objfs_holder_up 1" % label)
        got = scrape(port)
        assert got.get("objfs_holder_oom_score_adj") == real, (label, got, real)
        log = open(hlog).read()
        warned = ("oom_score_adj is %d, not -1000" % real) in log
        assert warned == (real != -1000), (label, real, log)
        if warned:
            assert "CAP_SYS_RESOURCE" in log and "restrict_oom_score_adj" in log, log
        # no holder: up 0, and no stale score
        holder.terminate()
        holder.wait(20)
        got = scrape(port)
        assert got == {"objfs_holder_up": 0}, (label, got)
        print("  %s: holder oom_score_adj %d, warned %s: ok" % (label, real, warned))
        return real
    finally:
        for p in (plugin, holder):
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def main():
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        print("SKIP: needs root and setpriv")
        return 77
    work = tempfile.mkdtemp(prefix="objfs-holder-oom.")
    failed = 0
    try:
        for label, wrap in (
                ("no CAP_SYS_RESOURCE", ["setpriv", "--inh-caps=-sys_resource",
                                         "--bounding-set=-sys_resource"]),
                ("as run", [])):
            try:
                score = run_case(work, wrap, label.replace(" ", "-"))
                if wrap:
                    assert score != -1000, "without CAP_SYS_RESOURCE the score was lowered"
            except AssertionError as e:
                failed = 1
                print("FAIL: %s: %s" % (label, e))
                for root, _, files in os.walk(os.path.join(work, label.replace(" ", "-"))):
                    for f in files:
                        if f.endswith(".log"):
                            print("--- %s\n%s" % (f, open(os.path.join(root, f)).read()[-3000:]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("PASS" if not failed else "FAIL")
    return failed


if __name__ == "__main__":
    sys.exit(main())
