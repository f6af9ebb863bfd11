#!/usr/bin/python3
"""docs_match.py - the docs say what the code does (issue 32 item 7).

1. Every objfs-mount option of the option table (src/common/mountopts.c,
   the parser's own) is in `objfs-mount --help` and in docs/objfs-mount.md's
   option tables, and neither names an option the parser lacks.
2. Every metric family a real mount exports (a local store, metrics on
   127.0.0.1) and every one a real objfs-csi exports (all mode, a local
   store) has a row in docs/metrics.md.
3. Defaults and bounds the docs state: hedge_after's and the prefetch and
   readahead_chunks limits, read back from the parser (a value past a
   documented maximum is refused).

Prints 'N passed, N failed'; needs root and /dev/fuse for the mount (the
option checks run without them).
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request

SRC = os.environ.get("OBJFS_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("OBJFS_BUILDDIR", SRC)
MOUNT = os.path.join(BUILD, "objfs-mount")
CSI = os.path.join(BUILD, "objfs-csi")
# options of the table a user never sets (the supervisor's test hooks)
TEST_ONLY = {"crash_at", "user_resend"}


def table_options():
    """The option names of mountopts.c's table (the parser)."""
    text = open(os.path.join(SRC, "src", "common", "mountopts.c")).read()
    names = set(re.findall(r'^\t(?:OWN|NODE)\(\w+, (\w+), K_\w+\)', text, re.M))
    names |= set(re.findall(r'^\t\[OBJFS_MOPT_\w+\] = \{ "(\w+)"', text, re.M))
    assert len(names) > 30, names
    return names


def help_options():
    out = subprocess.run([MOUNT, "--help"], capture_output=True, text=True,
                         timeout=30).stdout
    names = set()
    for m in re.finditer(r"^  ([^\s,]+(?:, [^\s,]+)*)", out, re.M):
        names |= set(re.findall(r"(?:^|, )([a-z_]+)(?:=|$|,)", m.group(1)))
    return names


def doc_options():
    """Names in the first column of docs/objfs-mount.md's tables."""
    names = set()
    for line in open(os.path.join(SRC, "docs", "objfs-mount.md")):
        if not line.startswith("| `"):
            continue
        first = re.split(r"(?<!\\)\|", line)[1]
        names |= set(re.findall(r"`([a-z_]+)(?:=[^`]*)?`", first))
    return names


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def families(url, timeout=30):
    deadline = time.time() + timeout
    while True:
        try:
            text = urllib.request.urlopen(url, timeout=10).read().decode()
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
    return set(re.findall(r"^# TYPE (\S+) ", text, re.M))


def documented_metrics():
    text = open(os.path.join(SRC, "docs", "metrics.md")).read()
    return set(re.findall(r"^\| `([a-z_0-9]+)`", text, re.M))


def main():
    passed = failed = 0
    work = tempfile.mkdtemp(prefix="objfs-docs-")

    def run(name, fn):
        nonlocal passed, failed
        try:
            fn()
        except Exception:  # noqa: BLE001 - every failure counts
            failed += 1
            print("FAIL: docs_match: %s" % name)
            traceback.print_exc(file=sys.stdout)
        else:
            passed += 1
            print("ok: docs_match: %s" % name)

    def options_match():
        code = table_options() - TEST_ONLY
        shown = help_options()
        doc = doc_options()
        # ready_fd is the supervisors' (its own section of the docs)
        assert code - shown == set(), "options --help lacks: %s" % sorted(code - shown)
        assert code - doc == set(), "options docs/objfs-mount.md lacks: %s" % sorted(code - doc)
        # FUSE's own options objfs-mount passes on are named too
        fuse = {"allow_other", "ro"}
        assert shown - code - fuse == set(), \
            "--help names options the parser lacks: %s" % sorted(shown - code - fuse)

    def bounds_match():
        doc = open(os.path.join(SRC, "docs", "objfs-mount.md")).read()
        shown = subprocess.run([MOUNT, "--help"], capture_output=True, text=True,
                               timeout=30).stdout
        for name in ("prefetch", "readahead_chunks"):
            m = re.search(r"\| `%s=N` \|[^|]*\|[^\n]*?(?:at most|max(?:imum)?) (\d+)" % name, doc)
            assert m, "docs state %s's maximum" % name
            most = int(m.group(1))
            for value, ok in ((most, True), (most + 1, False)):
                # settings are checked before the store: a missing
                # one fails after them, naming itself, not the option
                # (a store that cannot be made: a directory under a file)
                p = subprocess.run([MOUNT, "-f", "-o", "%s=%d,noresume" % (name, value),
                                    "file://%s/x" % os.path.realpath(__file__), work],
                                   capture_output=True, text=True, timeout=30)
                assert p.returncode != 0, "a store under a file mounted"
                said = "-o %s" % name in p.stderr
                assert said != ok, "%s=%d: %s" % (name, value, p.stderr.strip())
        # hedge_after: what --help and the docs say of its default
        hm = re.search(r"hedge_after=S[^\n]*\n((?:\s{20,}[^\n]*\n)*)", shown)
        assert hm, "--help describes hedge_after"
        assert "0.5" in hm.group(0) and "twice" in hm.group(0), \
            "--help: hedge_after is twice the p95, 0.5 s at least: %s" % hm.group(0)
        row = re.search(r"^\| `hedge_after=S` \|[^\n]*", doc, re.M)
        assert row and "0.5" in row.group(0) and "twice" in row.group(0), \
            "docs: hedge_after is twice the p95, 0.5 s at least: %s" % (row and row.group(0))

    def mount_metrics_documented():
        store = os.path.join(work, "store")
        mnt = os.path.join(work, "mnt")
        os.makedirs(store)
        os.makedirs(mnt)
        port = free_port()
        p = subprocess.run([MOUNT, "-o", "metrics=127.0.0.1:%d,noresume,log_file=%s"
                            % (port, os.path.join(work, "mount.log")),
                            "file://" + store, mnt], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0, p.stderr
        try:
            got = families("http://127.0.0.1:%d/metrics" % port)
        finally:
            subprocess.run(["fusermount3", "-u", mnt], timeout=60)
        assert len(got) > 20, got
        missing = got - documented_metrics()
        assert not missing, "docs/metrics.md lacks what a mount exports: %s" % sorted(missing)

    def csi_metrics_documented():
        port = free_port()
        state = os.path.join(work, "csi")
        sock = os.path.join(work, "csi.sock")
        proc = subprocess.Popen([CSI, "--endpoint", "unix://" + sock, "--mode", "all",
                                 "--node-id", "docs", "--state-dir", state,
                                 "--kubelet-dir", os.path.join(work, "kubelet"),
                                 "--metrics-address", "127.0.0.1:%d" % port],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            got = families("http://127.0.0.1:%d/metrics" % port)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        assert len(got) > 5, got
        missing = got - documented_metrics()
        assert not missing, "docs/metrics.md lacks what objfs-csi exports: %s" % sorted(missing)

    try:
        run("objfs-mount options: table, --help and docs", options_match)
        run("bounds and defaults the docs state", bounds_match)
        if os.geteuid() == 0 and os.path.exists("/dev/fuse"):
            run("every family a mount exports is documented", mount_metrics_documented)
        else:
            print("skip: docs_match: the mount's metrics (needs root and /dev/fuse)")
        run("every family objfs-csi exports is documented", csi_metrics_documented)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("docs_match: %d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
