"""owndirs.py - lookups of absent names in directories a mount made
(issue 33 item 2: rsync's and git's temporary and final names), tests of
fs_suite.py (local and s3) like its own.  A directory this mount made
answers a lookup of a name it lacks from memory for dir_ttl + 2 s
(src/fs/lookup.c, docs/objfs-mount.md "Listings and a mount's own
names"), then one LIST renews it; another mount's new name in it still
shows.  They count requests (the mount's metrics); time only widens what
they allow, never narrows it."""
import os
import sys
import time


class _Suite:
    """fs_suite.py's helpers (its __main__ module)."""
    def __getattr__(self, name):
        return getattr(sys.modules["__main__"], name)


fsu = _Suite()

DIR_TTL = 1.0           # objfs-mount's default dir_ttl
OWN_DIR_SLACK = 2.0     # lookup.c: what a directory made here adds to it


def requests(m):
    """The mount's store requests so far, by op (all results)."""
    out = {}
    for k, v in fsu.scrape(m).items():
        if k.startswith("objfs_store_requests_total{"):
            op = k.split('op="')[1].split('"')[0]
            out[op] = out.get(op, 0) + int(v)
    return out


def delta(a, b):
    return {k: b.get(k, 0) - a.get(k, 0) for k in b if b.get(k, 0) != a.get(k, 0)}


def rsync_like(d, names, stamp):
    """What rsync's receiver does per file, in a directory: the final
    name looked up, a temporary name created exclusively, written,
    closed, its times and mode set, renamed to the final name."""
    for n in names:
        try:
            os.lstat(d + "/" + n)
            raise fsu.Fail("%s/%s exists before it is made" % (d, n))
        except FileNotFoundError:
            pass
        tmp = "%s/.%s.Xq3ZpA" % (d, n)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, n.encode() * 3)
        os.close(fd)
        os.utime(tmp, (stamp, stamp))
        os.chmod(tmp, 0o644)
        os.rename(tmp, d + "/" + n)


def t_own_dir_absent_names(env):
    """rsync's pattern in directories this mount made (mkdir), with the
    upload window (one PUT per file): the generator's lookups of every
    final name first, then, past dir_ttl, the receiver's temporary name,
    write, close, times, mode and rename of each file.  The names it
    looks up are absent, and the directories' listings answer them from
    memory for dir_ttl + 2 s, then a LIST renews each listing: no HEAD per
    file, and LISTs per directory only per window of the time the copy
    took (a LIST per absent name's lookup past dir_ttl before).  The
    directories' times, stored after, cost no HEAD (mkdir knows them
    without user.* attributes).  Every file is then read back by a second
    mount."""
    ndirs, nfiles = 3, 15
    stamp = 1500000000
    url = env.volume("owndirs")
    m = env.mount(url, ["upload_delay=1"])
    top = m["dir"] + "/copy"
    r0 = requests(m)
    t0 = time.monotonic()
    os.mkdir(top)
    dirs = ["%s/sub%d" % (top, k) for k in range(ndirs)]
    names = ["file%03d.c" % i for i in range(nfiles)]
    for d in dirs:
        os.mkdir(d)
        for n in names:                 # the generator's lstat of each
            fsu.check(not os.path.lexists(d + "/" + n), "%s/%s exists" % (d, n))
    # the receiver comes later: past dir_ttl (a lower bound: a slow
    # machine only makes the copy longer, which the bound allows for)
    time.sleep(DIR_TTL + 0.3)
    for d in dirs:
        rsync_like(d, names, stamp)
        os.utime(d, (stamp, stamp))     # rsync sets the times at the end
    os.utime(top, (stamp, stamp))
    elapsed = time.monotonic() - t0
    # the directories' times stored (deferred: 0.5 s after the change)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        h = env.head(url, "copy/sub%d/" % (ndirs - 1))
        if h is not None and h["meta"].get("mtime", "").startswith(str(stamp)):
            break
        time.sleep(0.2)
    r1 = requests(m)
    dr = delta(r0, r1)
    files = ndirs * nfiles
    heads, lists = dr.get("head", 0), dr.get("list", 0)
    # LISTs: a listing of each directory made here is renewed once per
    # dir_ttl + 2 s it is used, whatever the number of names looked up;
    # 4 more for the attribute index's flushes (a LIST of the names it
    # resolves per directory) and the catalogue.  Before, every lookup
    # of an absent name past dir_ttl listed the directory again
    # (one LIST per dir_ttl per directory at least, up to one per file).
    windows = int(elapsed // (DIR_TTL + OWN_DIR_SLACK)) + 1
    dirs_made = ndirs + 1
    allowed_lists = dirs_made * windows + 2 * dirs_made + 4
    print("  %d files in %d directories made here, in %.1f s: %s; %.2f HEADs "
          "and %.2f LISTs per file (at most %d LISTs)" % (
              files, dirs_made, elapsed, dr, heads / files, lists / files,
              allowed_lists), flush=True)
    # HEADs: none per file (the names are absent, the directories made
    # here); a directory's marker when the kernel forgot its inode or its
    # attributes are revalidated: at most one per directory and attr_ttl
    # (1 s) of the copy, and 2 besides (45 or more if a file cost one)
    allowed_heads = dirs_made * (int(elapsed // DIR_TTL) + 1) + 2
    fsu.check(heads <= allowed_heads,
              "HEADs for %d files in %d directories made here in %.1f s: %d, "
              "at most %d (%s)" % (files, dirs_made, elapsed, heads,
                                   allowed_heads, dr))
    fsu.check(lists <= allowed_lists,
              "LISTs for %d files in %d directories made here in %.1f s: %d, "
              "at most %d (%s)" % (files, dirs_made, elapsed, lists,
                                   allowed_lists, dr))
    fsu.check(dr.get("copy", 0) == 0, "no COPY with the upload window: %s" % dr)
    env.umount(m)
    keys = env.keys(url, "copy/")
    want = ["copy/"] + sorted(["copy/sub%d/" % k for k in range(ndirs)] +
                              ["copy/sub%d/%s" % (k, n) for k in range(ndirs)
                               for n in names])
    fsu.check(sorted(keys) == want, "in the store: %s" % [k for k in keys if k not in want][:4])
    for k in range(ndirs):
        h = env.head(url, "copy/sub%d/" % k)
        fsu.check(h is not None and h["meta"].get("mtime", "").startswith(str(stamp)),
                  "the times of sub%d stored in its marker: %s" % (k, h))
    r = env.mount(url)
    for k in range(ndirs):
        d = "%s/copy/sub%d" % (r["dir"], k)
        fsu.check(sorted(os.listdir(d)) == names, "%s lists %s" % (d, os.listdir(d)[:4]))
        for n in names:
            fsu.check(fsu.rfile(d + "/" + n) == n.encode() * 3, "%s/%s read back" % (d, n))
    env.umount(r)


def t_own_dir_other_mount(env):
    """The window stays what docs/objfs-mount.md says: a name another
    mount creates in a directory this mount made, and that this mount
    keeps looking up (answered from memory meanwhile), shows here within
    dir_ttl + 2 s of its creation (a renewed listing) plus the kernel's
    negative entry (negative_ttl, 1 s); polled with a generous deadline,
    the time it took printed.  And the reverse: a name this mount made in
    it is seen by the other mount, and a name the other mount removes is
    gone here."""
    url = env.volume("owndirs-other")
    a = env.mount(url)
    b = env.mount(url)
    os.mkdir(a["dir"] + "/d")
    fsu.wfile(a["dir"] + "/d/mine", b"a")
    # b finds d (a HEAD of its marker), then creates a name in it, while a
    # keeps asking for that name: from memory at first
    deadline = time.monotonic() + 60
    while not os.path.isdir(b["dir"] + "/d"):
        fsu.check(time.monotonic() < deadline, "b sees d")
        time.sleep(0.2)
    fsu.check(not os.path.lexists(a["dir"] + "/d/theirs"), "absent at first")
    fsu.wfile(b["dir"] + "/d/theirs", b"from b")
    t0 = time.monotonic()
    deadline = t0 + 60
    seen = False
    while time.monotonic() < deadline:
        if os.path.lexists(a["dir"] + "/d/theirs"):
            seen = True
            break
        time.sleep(0.1)
    took = time.monotonic() - t0
    print("  another mount's name in a directory made here shown after "
          "%.1f s (window: dir_ttl + 2 s, plus negative_ttl)" % took, flush=True)
    fsu.check(seen, "another mount's new name never shown in 60 s")
    fsu.check(fsu.rfile(a["dir"] + "/d/theirs") == b"from b", "its bytes")
    fsu.check(sorted(os.listdir(a["dir"] + "/d")) == ["mine", "theirs"],
              "a lists both: %s" % os.listdir(a["dir"] + "/d"))
    fsu.check(fsu.rfile(b["dir"] + "/d/mine") == b"a", "b reads a's file")
    os.unlink(b["dir"] + "/d/theirs")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "theirs" in os.listdir(a["dir"] + "/d"):
        time.sleep(0.2)
    fsu.check(os.listdir(a["dir"] + "/d") == ["mine"],
              "the other mount's removal shown: %s" % os.listdir(a["dir"] + "/d"))
    env.umount(b)
    env.umount(a)


TESTS = [t_own_dir_absent_names, t_own_dir_other_mount]
