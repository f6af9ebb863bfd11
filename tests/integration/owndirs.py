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
# the mount's requests by op, and what changed between two counts
from bigdir import delta, requests  # noqa: E402

DIR_TTL = 1.0           # objfs-mount's default dir_ttl
OWN_DIR_SLACK = 2.0     # lookup.c: what a directory made here adds to it


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
    upload window (one PUT per file; 60 s: nothing uploaded before the
    unmount, so the only LISTs are the lookups'): the generator's lookups
    of every final name first, then, past dir_ttl, the receiver's
    temporary name, write, close, times, mode and rename of each file.
    The names it looks up are absent, and the directories' listings
    answer them from memory for dir_ttl + 2 s, then a LIST renews each
    listing: no HEAD per file, and LISTs per directory only per dir_ttl +
    2 s of the time the copy took (before: a LIST of each directory at
    its first lookup past dir_ttl, and each dir_ttl after).  The
    directories' times, stored at the unmount, cost no HEAD (mkdir knows
    them without user.* attributes).  A second mount reads every file."""
    ndirs, nfiles = 8, 6
    stamp = 1500000000
    url = env.volume("owndirs")
    m = env.mount(url, ["upload_delay=60"])
    top = m["dir"] + "/copy"
    t0 = time.monotonic()
    os.mkdir(top)
    dirs = ["%s/sub%d" % (top, k) for k in range(ndirs)]
    names = ["file%03d.c" % i for i in range(nfiles)]
    for d in dirs:
        os.mkdir(d)
        for n in names:                 # the generator's lstat of each
            fsu.check(not os.path.lexists(d + "/" + n), "%s/%s exists" % (d, n))
    # the receiver comes later: past dir_ttl (a lower bound: a slow
    # machine only makes the copy longer, which the bounds allow for)
    time.sleep(DIR_TTL + 0.3)
    r0 = requests(m)
    for d in dirs:
        rsync_like(d, names, stamp)
        os.utime(d, (stamp, stamp))     # rsync sets the times at the end
    os.utime(top, (stamp, stamp))
    r1 = requests(m)
    elapsed = time.monotonic() - t0
    dr = delta(r0, r1)
    files = ndirs * nfiles
    heads, lists = dr.get("head", 0), dr.get("list", 0)
    dirs_made = ndirs + 1
    # LISTs: each directory's listing renewed once per dir_ttl + 2 s past
    # the first (from its mkdir), whatever the names looked up; besides,
    # the root's (not made here: 2) and the top directory's each dir_ttl
    # (it confirms its subdirectories, names of this mount's own, for the
    # path walk past entry_ttl: docs/objfs-mount.md, as before).  Before,
    # each of the 8 subdirectories was listed at its first lookup here
    # (past dir_ttl) and again each dir_ttl: 10 or more however fast
    allowed_lists = (dirs_made * int(elapsed // (DIR_TTL + OWN_DIR_SLACK)) +
                     2 + int(elapsed // DIR_TTL) + 1)
    # HEADs: none per file (the names are absent, the directories made
    # here); a directory's marker when the kernel forgot its inode or its
    # attributes are revalidated: at most one per directory and attr_ttl
    # (1 s) of the copy, and 2 besides (45 or more if a file cost one)
    allowed_heads = dirs_made * int(elapsed // DIR_TTL) + 2
    print("  %d files in %d directories made here, %.1f s after the first "
          "mkdir: %s; %.2f HEADs and %.2f LISTs per file (at most %d and %d)" % (
              files, dirs_made, elapsed, dr, heads / files, lists / files,
              allowed_heads, allowed_lists), flush=True)
    fsu.check(heads <= allowed_heads,
              "HEADs for %d files in %d directories made here in %.1f s: %d, "
              "at most %d (%s)" % (files, dirs_made, elapsed, heads,
                                   allowed_heads, dr))
    fsu.check(lists <= allowed_lists,
              "LISTs for %d files in %d directories made here in %.1f s: %d, "
              "at most %d (%s)" % (files, dirs_made, elapsed, lists,
                                   allowed_lists, dr))
    env.umount(m)
    r = fsu.store_requests(env, m)
    fsu.check(r is not None, "the mount logged its store requests")
    # the whole mount: its root's attributes (2), the directories' markers
    # and their times (2 PUTs each), a PUT per file, the index segments
    # and their LISTs; no COPY, no DELETE, and HEADs only those of phase
    # two and the root's (the markers' times: none)
    fsu.check(int(r.get("copy", 0)) == 0 and int(r.get("del", 0)) == 0 and
              int(r.get("del_many", 0)) == 0, "no COPY or DELETE: %s" % r)
    fsu.check(int(r.get("head", 0)) <= heads + 2,
              "HEADs besides the copy's: %s (the copy's %d)" % (r, heads))
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
