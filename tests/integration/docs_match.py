#!/usr/bin/python3
"""docs_match.py - the docs say what the code does (issue 32 item 7).

1. Every objfs-mount option of the option rows (src/common/mountopts.def,
   the parser's and --help's) is in `objfs-mount --help` and in
   docs/objfs-mount.md's option tables, and neither names an option the
   parser lacks.
2. Every metric family a real mount exports (a local store, metrics on
   127.0.0.1) and every one a real objfs-csi exports (all mode, a local
   store) has a row in docs/metrics.md.
3. Defaults and bounds: for every option, the default --help shows (the
   code's: objfs_fs_opts_default() and objfs-mount's settings) is the one
   docs/objfs-mount.md's table states; every bound --help states is in the
   docs' row, and objfs-mount takes the bound and refuses one past it;
   hedge_after is described as the code does it.

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
    """The option names of mountopts.def's rows (the parser)."""
    text = open(os.path.join(SRC, "src", "common", "mountopts.def")).read()
    names = set(re.findall(r'^MOPT\(\w+, "(\w+)",', text, re.M))
    assert len(names) > 30, names
    return names


def help_blocks():
    """--help's text of each option: {name: text}, lines joined."""
    out = subprocess.run([MOUNT, "--help"], capture_output=True, text=True,
                         timeout=30).stdout
    blocks = {}
    name = None
    for line in out.splitlines():
        m = re.match(r"^  ([a-z_]+)(?:=\S*)?(?:\s+(.*))?$", line)
        if m:
            name = m.group(1)
            blocks[name] = m.group(2) or ""
        elif name and re.match(r"^\s{20,}\S", line):
            blocks[name] += " " + line.strip()
        else:
            name = None
    assert len(blocks) > 30, blocks
    return blocks


def help_default_and_bound(text):
    """The "(default: D; at most M)" tail of an option's --help text."""
    m = re.search(r"\((?:default: (.*?))?(?:;? ?at most (\S+?))?\)$", text)
    if not m:
        return None, None
    return m.group(1), m.group(2)


def doc_rows():
    """{name: (default cell, whole row)} of docs/objfs-mount.md's options."""
    rows = {}
    for line in open(os.path.join(SRC, "docs", "objfs-mount.md")):
        if not line.startswith("| `"):
            continue
        cells = re.split(r"(?<!\\)\|", line)
        if len(cells) < 4:
            continue
        for name in re.findall(r"`([a-z_]+)(?:=[^`]*)?`", cells[1]):
            rows[name] = (cells[2].strip(), line)
    return rows


def size_value(text):
    m = re.match(r"^(\d+(?:\.\d+)?)([KMG]?)$", text)
    if not m:
        return None
    return float(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)]


def same_default(name, shown, doc):
    """Whether the docs' default cell states the default --help shows."""
    doc = doc.replace("`", "").replace("\\|", "|")
    first = re.split(r"[ ,]", doc, maxsplit=1)[0]
    if name == "umask":
        return int(shown, 8) == int(first, 8)
    if size_value(shown) is not None:
        return size_value(first) == size_value(shown)
    # words: the first of the list --help gives is the docs' too
    want = shown.split(",")[0].replace("$", "").strip().lower()
    return want in doc.replace("$", "").lower()


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

    def defaults_match():
        blocks = help_blocks()
        rows = doc_rows()
        checked = 0
        for name in sorted(table_options() - TEST_ONLY):
            shown, _ = help_default_and_bound(blocks[name])
            if shown is None:
                continue
            assert name in rows, "docs/objfs-mount.md has no row for %s" % name
            assert same_default(name, shown, rows[name][0]), \
                "%s: --help says the default is %r, the docs %r" % (name, shown, rows[name][0])
            checked += 1
        assert checked > 35, "only %d defaults compared" % checked

    def bounds_match():
        blocks = help_blocks()
        rows = doc_rows()
        bounded = 0
        for name in sorted(table_options() - TEST_ONLY):
            _, most = help_default_and_bound(blocks[name])
            if most is None:
                continue
            bounded += 1
            assert re.search(r"(?:at most|max(?:imum)?) %s\b" % re.escape(most), rows[name][1],
                             re.I), \
                "docs/objfs-mount.md's %s row does not state its bound, %s" % (name, most)
            past = str(int(float(most)) + 1)
            for value, ok in ((most, True), (past, False)):
                # settings are checked before the store: a missing
                # one fails after them, naming itself, not the option
                # (a store that cannot be made: a directory under a file)
                p = subprocess.run([MOUNT, "-f", "-o", "%s=%s,noresume" % (name, value),
                                    "file://%s/x" % os.path.realpath(__file__), work],
                                   capture_output=True, text=True, timeout=30)
                assert p.returncode != 0, "a store under a file mounted"
                said = re.search(r"\b%s\b[^\n]*at most %s" % (name, re.escape(most)),
                                 p.stderr) is not None
                assert said != ok, "%s=%s: %s" % (name, value, p.stderr.strip())
        # the filesystem's bounds and the store's waits
        assert bounded >= 6, "only %d bounded options in --help" % bounded
        # hedge_after: what --help and the docs say of its default
        hedge = blocks["hedge_after"]
        assert "0.5" in hedge and "twice" in hedge, \
            "--help: hedge_after is twice the p95, 0.5 s at least: %s" % hedge
        row = rows["hedge_after"][1]
        assert "0.5" in row and "twice" in row, \
            "docs: hedge_after is twice the p95, 0.5 s at least: %s" % row

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
        run("defaults: --help (the code's) and the docs", defaults_match)
        run("bounds: --help, the docs and the parser", bounds_match)
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
