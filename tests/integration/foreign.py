"""foreign.py - listings of objects another S3 client wrote (issue 33: the
`ls -f` figure of bench/series.sh), tests of fs_suite.py (local and s3).
Names with no objfs metadata and no attribute index entry cost the LIST
pages and no HEAD per name when only their names and types are read
(`ls -f`, `find -type f`, os.scandir), while the names another objfs
mount made as FIFOs, symlinks and hard links keep their true type.  They
count requests (the mount's metrics), never time."""
import os
import subprocess
import sys
import time


class _Suite:
    """fs_suite.py's helpers (its __main__ module)."""
    def __getattr__(self, name):
        return getattr(sys.modules["__main__"], name)


fsu = _Suite()


def counts(m):
    """(store requests by op, FUSE requests by op) so far."""
    store, fuse = {}, {}
    for k, v in fsu.scrape(m).items():
        for prefix, out in (("objfs_store_requests_total{", store),
                            ("objfs_fuse_requests_total{", fuse)):
            if k.startswith(prefix) and 'op="' in k:
                op = k.split('op="')[1].split('"')[0]
                out[op] = out.get(op, 0) + int(float(v))
    return store, fuse


def delta(a, b):
    return {k: b.get(k, 0) - a.get(k, 0) for k in b if b.get(k, 0) != a.get(k, 0)}


def kinds(d):
    """name -> the type os.scandir gives (d_type; lstat only for
    DT_UNKNOWN, which the FUSE lookups counted show)."""
    out = {}
    with os.scandir(d) as it:
        for e in it:
            if e.is_symlink():
                out[e.name] = "symlink"
            elif e.is_dir(follow_symlinks=False):
                out[e.name] = "dir"
            elif e.is_file(follow_symlinks=False):
                out[e.name] = "file"
            else:
                out[e.name] = "other"
    return out


# what the kernel and the mount hold stays valid however slow the
# machine: the counts do not depend on timing
LONG_TTLS = ("attr_ttl=600", "entry_ttl=600")


def t_ls_foreign(env):
    """N files put by the store tool (no objfs metadata, no index entry)
    listed on a fresh mount: `ls -f` (getdents: readdirplus) sends no HEAD
    (it used to send one per name); os.scandir's types of files of 4 KiB
    and more are DT_REG (no lookup, no HEAD); smaller ones (which could be
    a symlink, a FIFO or a hard link's name) are DT_UNKNOWN: lstat asks
    for the first reply's names, the next replies come with attributes
    (HEADed ahead, once the mount saw the lookups), DT_REG.  `ls -l` on
    a fresh mount gets every size right with a HEAD per name, looking up
    only the names of its first reply, a short one (16 entries) one by
    one.  Then a FIFO, a symlink and hard links (of a file and of
    a FIFO) another mount made a moment before (its index segment not
    written yet) and after it unmounted (written) keep their types."""
    n = 600                      # more than one readdirplus reply holds
    url = env.volume("foreign")
    env.tool(url, "put-many", "big/f", str(n), "5000")
    env.tool(url, "put-many", "small/f", str(n), "1")
    r = env.mount(url, opts=LONG_TTLS)
    names = ["f%06d" % i for i in range(n)]

    for sub, size in (("big", 5000), ("small", 1)):
        d = r["dir"] + "/" + sub
        s0, f0 = counts(r)
        listed = sorted(os.listdir(d))          # `ls -f`
        s1, f1 = counts(r)
        fsu.check(listed == names, "%s: %d names listed, want %d" % (sub, len(listed), n))
        ds = delta(s0, s1)
        print("  ls -f of %d %s files: store %s, fuse %s" % (n, sub, ds, delta(f0, f1)),
              flush=True)
        # the LIST pages, the index's LIST and the directory's marker
        fsu.check(ds.get("head", 0) <= 2, "%s: ls -f sent %d HEADs: %s" % (
            sub, ds.get("head", 0), ds))
        fsu.check(ds.get("list", 0) >= 1, "%s: not listed: %s" % (sub, ds))
        ty = kinds(d)
        s2, f2 = counts(r)
        fsu.check(set(ty.values()) == {"file"}, "%s: types %s" % (
            sub, sorted(set(ty.values()))))
        looked = delta(f1, f2).get("lookup", 0)
        heads = delta(s1, s2).get("head", 0)
        print("  scandir of %d %s files: %d lookups, %d HEADs" % (n, sub, looked, heads),
              flush=True)
        if size >= 4096:
            # (a lookup of the directory itself may be counted late)
            fsu.check(looked <= 1 and heads == 0, "%s: DT_REG wanted: %d lookups, "
                      "%d HEADs" % (sub, looked, heads))
        else:
            # DT_UNKNOWN: lstat asks for the first reply's names; the
            # next replies come with attributes (HEADed ahead)
            fsu.check(looked >= 1 and heads <= n + 2,
                      "%s: DT_UNKNOWN wanted: %d lookups, %d HEADs" % (sub, looked, heads))
        # what lstat gives (a revalidation may HEAD a name again: on
        # Swift every name was, the local store none)
        sizes = {e: os.lstat(d + "/" + e).st_size for e in listed}
        fsu.check(set(sizes.values()) == {size}, "%s: sizes %s" % (sub, set(sizes.values())))
        s3, _ = counts(r)
        print("  lstat of %d %s files: %s" % (n, sub, delta(s2, s3)), flush=True)
        fsu.check(delta(s0, s3).get("head", 0) <= 2 * n + 4, "%s: HEADs %s" % (
            sub, delta(s0, s3)))
    env.umount(r)

    # `ls -l` on a fresh mount (it lstats each reply's names before it
    # reads the next): the first (short) reply's names are looked up one
    # by one, the next replies' are HEADed ahead, in parallel
    r = env.mount(url, opts=LONG_TTLS)
    d = r["dir"] + "/big"
    s0, f0 = counts(r)
    p = subprocess.run(["ls", "-l", "--color=never", d], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600)
    s1, f1 = counts(r)
    lines = p.stdout.decode().splitlines()[1:]          # "total N" first
    fsu.check(p.returncode == 0 and len(lines) == n, "ls -l: %d lines, %s" % (
        len(lines), p.stderr.decode()[-300:]))
    for line in lines:
        f = line.split()
        fsu.check(f[0].startswith("-") and f[4] == "5000", "ls -l: %r" % line)
    print("  ls -l of %d files: store %s, fuse %s" % (n, delta(s0, s1), delta(f0, f1)),
          flush=True)
    fsu.check(delta(s0, s1).get("head", 0) <= 2 * n + 4, "ls -l: %s" % delta(s0, s1))
    # the first reply is short (16 entries: . and .. and 14 names)
    fsu.check(delta(f0, f1).get("lookup", 0) <= 20, "ls -l: names looked up "
              "one by one: %s" % delta(f0, f1))
    env.umount(r)

    # what another objfs mount made keeps its type
    w = env.mount(url)
    wd = w["dir"] + "/mixed"
    os.mkdir(wd)
    fsu.wfile(wd + "/plain", b"x" * 5000)
    fsu.wfile(wd + "/small", b"x")
    os.mkfifo(wd + "/fifo")
    os.symlink("target-of-link", wd + "/sym")
    os.mkfifo(wd + "/fifo2")
    os.link(wd + "/fifo2", wd + "/fifo2-link")
    os.link(wd + "/small", wd + "/small-link")
    want = {"plain": "file", "small": "file", "fifo": "other", "sym": "symlink",
            "fifo2": "other", "fifo2-link": "other", "small-link": "file"}
    for when in ("before its index is written", "after"):
        r = env.mount(url)
        deadline = time.monotonic() + 60
        got = {}
        while time.monotonic() < deadline:
            got = kinds(r["dir"] + "/mixed")
            if set(got) == set(want):
                break
            time.sleep(0.5)
        fsu.check(got == want, "types %s: %s, want %s" % (when, got, want))
        env.umount(r)
        if w is not None:
            env.umount(w)       # its index written
            w = None


TESTS = [
    t_ls_foreign,
]
