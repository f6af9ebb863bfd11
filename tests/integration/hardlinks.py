"""hardlinks.py - the hard link tests of fs_suite.py (issues 13 and 34):
names of one file on plain objects (fs/hardlink.c), across renames, two
mounts, rsync -aH and special files.  Run by fs_suite.py's harness (the
local store, Swift and Ceph RGW) like its own tests, which it shares:
check, wfile, rfile, the Env and its mounts (imported from the harness,
the __main__ that imports this module once it has defined them)."""
import errno
import os
import re
import shutil
import socket
import stat
import subprocess
import threading
import time

# the harness (fs_suite.py, run as __main__, imports this module once it
# has defined these)
from __main__ import Fail, check, expect_errno, listing_attrs, rfile, wfile  # noqa: E402


def hl_keys(env, url):
    """The keys of every link set of the volume (data and name entries)."""
    return env.keys(url, ".objfs/links/")


def t_hardlink_basic(env):
    """link(2): one inode and st_nlink for every name, data and attributes
    through any name, unlink keeps the data until the last name, and what
    the store holds (a data object, entries, small name objects)."""
    url = env.volume("hlink")
    m = env.mount(url)
    d = m["dir"]
    os.makedirs(d + "/a/b")
    wfile(d + "/a/f", b"first data\n")
    st0 = os.stat(d + "/a/f")
    check(st0.st_nlink == 1, "one name: nlink %d" % st0.st_nlink)
    check(hl_keys(env, url) == [], "a file with one name is a plain object")
    # open: the kernel keeps the inode (an inode it forgets, on memory
    # pressure or drop_caches, is numbered again at its next lookup)
    pin = os.open(d + "/a/f", os.O_RDONLY)
    time.sleep(1.1)
    os.link(d + "/a/f", d + "/a/b/g")
    st1, st2 = os.stat(d + "/a/f"), os.stat(d + "/a/b/g")
    check(st1.st_ino == st2.st_ino == st0.st_ino, "one inode: %d %d %d" % (st0.st_ino, st1.st_ino, st2.st_ino))
    check(st1.st_nlink == 2 and st2.st_nlink == 2, "nlink 2: %d %d" % (st1.st_nlink, st2.st_nlink))
    check(st1.st_ctime_ns > st0.st_ctime_ns, "link changes ctime")
    check(st1.st_mtime_ns == st0.st_mtime_ns, "link keeps mtime")
    check(rfile(d + "/a/b/g") == b"first data\n", "read through the new name")
    expect_errno(lambda: os.link(d + "/a/f", d + "/a/b/g"), (errno.EEXIST,), "link over a name")
    expect_errno(lambda: os.link(d + "/a", d + "/a2"), (errno.EPERM,), "link of a directory")
    expect_errno(lambda: os.link(d + "/nope", d + "/n2"), (errno.ENOENT,), "link of nothing")
    # writes, truncate, chmod, chown through one name, seen through the others
    with open(d + "/a/b/g", "ab") as f:
        f.write(b"appended\n")
    check(rfile(d + "/a/f") == b"first data\nappended\n", "append seen through the other name")
    os.chmod(d + "/a/f", 0o600)
    os.chown(d + "/a/f", 1234, 5678)
    st2 = os.stat(d + "/a/b/g")
    check(stat.S_IMODE(st2.st_mode) == 0o600 and (st2.st_uid, st2.st_gid) == (1234, 5678),
          "chmod/chown seen through the other name: %o %d %d" % (st2.st_mode, st2.st_uid, st2.st_gid))
    os.truncate(d + "/a/b/g", 5)
    check(rfile(d + "/a/f") == b"first", "truncate seen through the other name")
    os.close(pin)
    # a third name, then the store
    os.link(d + "/a/b/g", d + "/h")
    check(os.stat(d + "/a/f").st_nlink == 3, "nlink 3")
    env.umount(m)
    keys = hl_keys(env, url)
    data = [k for k in keys if k.endswith("/data")]
    names = [k for k in keys if "/names/" in k]
    check(len(data) == 1 and len(names) == 3, "a data object and 3 entries: %s" % keys)
    lid = data[0].split("/")[2]
    check(env.get(url, data[0]) == b"first", "the data object holds the data")
    toks = set()
    for n in ("a/f", "a/b/g", "h"):
        h = env.head(url, n)
        check(h is not None and h["meta"].get("objfs-link") == lid, "%s points at the set: %s" % (n, h))
        toks.add(h["meta"].get("objfs-link-token"))
        body = ("objfs-link %s %s\n" % (lid, h["meta"].get("objfs-link-token"))).encode()
        check(env.get(url, n) == body, "%s is a small object naming its set and token" % n)
    check(sorted(toks) == sorted(k.split("/")[-1] for k in names), "an entry per name's token: %s %s" % (toks, names))
    # a fresh mount: listing (ls -l) and stat agree, one inode
    m = env.mount(url)
    d = m["dir"]
    seen = listing_attrs(d + "/a/b")
    check(seen["g"][3] == 5 and stat.S_IMODE(seen["g"][0]) == 0o600, "ls -l of a link name: %s" % (seen["g"],))
    # a set's inode number comes from its id: the same whenever it is
    # looked up again
    inos = {os.stat(d + p).st_ino for p in ("/a/f", "/a/b/g", "/h")}
    check(len(inos) == 1, "one inode on a fresh mount: %s" % inos)
    check(os.lstat(d + "/h").st_nlink == 3, "nlink from the store")
    # unlink keeps the data; ctime changes (kept by the mount while it
    # has the inode: open); the last name frees it
    pin = os.open(d + "/h", os.O_RDONLY)
    st_before = os.stat(d + "/h")
    time.sleep(1.1)
    os.unlink(d + "/a/f")
    st = os.stat(d + "/h")
    os.close(pin)
    check(st.st_nlink == 2 and st.st_ctime_ns > st_before.st_ctime_ns, "unlink: nlink 2 (%d), ctime changed (%d -> %d)" % (st.st_nlink, st_before.st_ctime_ns, st.st_ctime_ns))
    check(rfile(d + "/a/b/g") == b"first", "data kept after an unlink")
    # open while its last names go: readable until closed
    f = open(d + "/h", "rb")
    os.unlink(d + "/a/b/g")
    check(os.fstat(f.fileno()).st_nlink == 1, "nlink 1")
    os.unlink(d + "/h")
    check(os.fstat(f.fileno()).st_nlink == 0, "nlink 0 once every name is gone")
    check(f.read() == b"first", "an open file outlives its last name")
    f.close()
    check(sorted(os.listdir(d)) == ["a"], "names gone: %s" % os.listdir(d))
    # links while another thread looks the names up (lookups in the
    # middle of a link): still one inode per file
    stop = []

    def looker():
        while not stop:
            for i in range(4):
                for n in ("s%d" % i, "s%d-b" % i):
                    try:
                        os.stat(d + "/a/" + n)
                    except OSError:
                        pass
    th = threading.Thread(target=looker)
    th.start()
    try:
        for i in range(4):
            wfile(d + "/a/s%d" % i, b"s")
            time.sleep(0.3)
            os.link(d + "/a/s%d" % i, d + "/a/s%d-b" % i)
    finally:
        stop.append(1)
        th.join()
    time.sleep(1.1)
    for i in range(4):
        a1, b1 = os.stat(d + "/a/s%d" % i), os.stat(d + "/a/s%d-b" % i)
        check(a1.st_ino == b1.st_ino and a1.st_nlink == 2, "looked up while linked: %d %d nlink %d" %
              (a1.st_ino, b1.st_ino, a1.st_nlink))
        os.unlink(d + "/a/s%d" % i)
        os.unlink(d + "/a/s%d-b" % i)
    env.umount(m)
    check(hl_keys(env, url) == [], "the last unlink frees the data: %s" % hl_keys(env, url))


def t_hardlink_open_write(env):
    """link of a file open and being written: the data written before and
    after the link reaches the data object on fsync and close."""
    url = env.volume("hlwrite")
    m = env.mount(url)
    d = m["dir"]
    f = open(d + "/w", "wb")
    f.write(b"before link;")
    os.link(d + "/w", d + "/w2")
    f.write(b"after link;")
    f.flush()
    os.fsync(f.fileno())
    keys = [k for k in hl_keys(env, url) if k.endswith("/data")]
    check(len(keys) == 1, "a data object: %s" % hl_keys(env, url))
    check(env.get(url, keys[0]) == b"before link;after link;", "fsync: in the store: %r" % env.get(url, keys[0]))
    f.write(b"at close")
    f.close()
    check(env.get(url, keys[0]) == b"before link;after link;at close", "close: in the store")
    check(rfile(d + "/w2") == b"before link;after link;at close", "read through the other name")
    # a streamed (multipart) writer linked half way
    big = os.urandom(7 << 20)
    with open(d + "/big", "wb") as f:
        f.write(big[:6 << 20])
        os.link(d + "/big", d + "/big2")
        f.write(big[6 << 20:])
    env.umount(m)
    m = env.mount(url)
    check(rfile(m["dir"] + "/big2") == big, "streamed file linked while written")
    check(os.stat(m["dir"] + "/big").st_nlink == 2, "nlink of the streamed file")
    env.umount(m)


def t_hardlink_rename(env):
    """rename of a link name, over a link name, and of two names of one
    file; the store keeps one entry per name."""
    url = env.volume("hlren")
    m = env.mount(url)
    d = m["dir"]
    os.mkdir(d + "/x")
    wfile(d + "/f", b"F")
    os.link(d + "/f", d + "/g")
    wfile(d + "/p", b"P")
    os.rename(d + "/g", d + "/x/g2")            # a link name moves
    check(os.stat(d + "/x/g2").st_ino == os.stat(d + "/f").st_ino, "renamed link name: same inode")
    check(os.stat(d + "/f").st_nlink == 2, "nlink after rename")
    os.rename(d + "/f", d + "/x/g2")            # two names of one file: nothing
    check(os.path.exists(d + "/f") and os.stat(d + "/f").st_nlink == 2, "rename between two names")
    os.rename(d + "/p", d + "/x/g2")            # a plain file over a link name
    check(rfile(d + "/x/g2") == b"P", "plain file renamed over a link name")
    check(os.stat(d + "/f").st_nlink == 1, "the set lost that name: %d" % os.stat(d + "/f").st_nlink)
    wfile(d + "/q", b"Q")
    os.link(d + "/q", d + "/q2")
    os.rename(d + "/q2", d + "/f")              # a link name over another set's last name
    check(rfile(d + "/f") == b"Q" and os.stat(d + "/q").st_nlink == 2, "link name over a link name")
    env.umount(m)
    keys = hl_keys(env, url)
    check(len([k for k in keys if k.endswith("/data")]) == 1 and
          len([k for k in keys if "/names/" in k]) == 2,
          "the replaced set is freed, the other has 2 entries: %s" % keys)
    m = env.mount(url)
    d = m["dir"]
    os.unlink(d + "/f")
    os.unlink(d + "/q")
    # a directory holding link names renamed: the names keep their
    # entries (their token travels in their metadata)
    os.makedirs(d + "/top/sub")
    wfile(d + "/o", b"O")
    os.link(d + "/o", d + "/top/sub/o2")
    os.link(d + "/o", d + "/top/o3")
    os.rename(d + "/top", d + "/top2")
    check(rfile(d + "/top2/sub/o2") == b"O" and os.stat(d + "/top2/o3").st_nlink == 3,
          "link names in a renamed directory")
    os.unlink(d + "/top2/sub/o2")
    os.unlink(d + "/top2/o3")
    check(os.stat(d + "/o").st_nlink == 1, "nlink after unlinking the moved names")
    os.unlink(d + "/o")
    env.umount(m)
    check(hl_keys(env, url) == [], "all freed: %s" % hl_keys(env, url))


def t_hardlink_two_mounts(env):
    """A link made on one mount is seen on the other (content, nlink 2);
    unlinking both names, one on each mount, frees the data."""
    url = env.volume("hl2")
    a = env.mount(url)
    b = env.mount(url)
    wfile(a["dir"] + "/f", b"shared")
    time.sleep(1.2)
    kept = open(b["dir"] + "/f", "rb")     # b knows f as a plain file
    check(os.fstat(kept.fileno()).st_nlink == 1, "plain on b first")
    os.link(a["dir"] + "/f", a["dir"] + "/g")
    time.sleep(1.2)     # entry and attribute caches (1 s)
    check(os.fstat(kept.fileno()).st_nlink == 2, "b's inode of f learns it was linked")
    check(rfile(b["dir"] + "/f") == b"shared", "b reads f after a linked it")
    st = os.stat(b["dir"] + "/g")
    check(st.st_nlink == 2 and st.st_ino == os.fstat(kept.fileno()).st_ino,
          "link seen on the other mount: nlink %d" % st.st_nlink)
    kept.close()
    check(rfile(b["dir"] + "/g") == b"shared" and rfile(b["dir"] + "/f") == b"shared", "content on the other mount")
    wfile(b["dir"] + "/g", b"changed on b")
    time.sleep(1.2)
    check(rfile(a["dir"] + "/f") == b"changed on b", "a write through one name on b, read through the other on a")
    os.unlink(a["dir"] + "/f")
    time.sleep(1.2)
    check(os.stat(b["dir"] + "/g").st_nlink == 1, "unlink on a seen on b")
    os.unlink(b["dir"] + "/g")
    env.umount(a)
    env.umount(b)
    check(hl_keys(env, url) == [], "both names unlinked: no hidden object left: %s" % hl_keys(env, url))
    # both mounts link and unlink names of one file at once: never a lost
    # file nor a leak once all is done
    a = env.mount(url)
    b = env.mount(url)
    wfile(a["dir"] + "/r", b"race")
    os.link(a["dir"] + "/r", a["dir"] + "/r0")
    errs = []

    def churn(mnt, tag):
        try:
            for i in range(8):
                n = "%s/%s%d" % (mnt, tag, i)
                os.link(mnt + "/r0", n)
                os.unlink(n)
        except OSError as e:
            errs.append(e)
    ts = [threading.Thread(target=churn, args=(m["dir"], t)) for m, t in ((a, "x"), (b, "y"))]
    [t.start() for t in ts]
    [t.join() for t in ts]
    check(errs == [], "concurrent links and unlinks: %s" % errs)
    time.sleep(1.2)
    check(rfile(b["dir"] + "/r") == b"race" and os.stat(b["dir"] + "/r").st_nlink == 2,
          "after the race: data and nlink 2 (%d)" % os.stat(b["dir"] + "/r").st_nlink)
    os.unlink(a["dir"] + "/r")
    os.unlink(b["dir"] + "/r0")
    env.umount(a)
    env.umount(b)
    check(hl_keys(env, url) == [], "after the race, no hidden object left: %s" % hl_keys(env, url))


def t_hardlink_attrs_special(env):
    """A file linked while its attributes are on their way (touch -d then
    ln; utime and chmod on the open file, then ln, then close; a chmod
    whose copy is deferred, then ln) and links of a FIFO, a device and a
    socket: a fresh mount shows one inode and nlink 2 on both names, by
    `ls -l` (the attribute index) and by stat; removing the names leaves
    nothing under .objfs/links/.  Zero-byte plain files and the names of
    a link set have one ETag: an attribute index entry of the file made
    the first name a plain file of one link on the next mount."""
    url = env.volume("hlattr")
    m = env.mount(url)
    d = m["dir"]
    p = subprocess.run(["touch", "-d", "2020-01-01", d + "/e"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
    check(p.returncode == 0, "touch -d: %s" % p.stdout.decode())
    e_mtime = os.stat(d + "/e").st_mtime_ns
    os.link(d + "/e", d + "/f")
    # a new file: utime and chmod through the open handle, link, close
    fd = os.open(d + "/g", os.O_CREAT | os.O_WRONLY, 0o644)
    os.utime(fd, ns=(10**18, 10**18))
    os.fchmod(fd, 0o640)
    os.link(d + "/g", d + "/h")
    os.close(fd)
    # a stored file open: chmod and utime (a deferred copy), link, a
    # write through the handle after the link, close
    wfile(d + "/k", b"data")
    fd = os.open(d + "/k", os.O_RDWR)
    os.fchmod(fd, 0o600)
    os.utime(d + "/k", ns=(2 * 10**18, 2 * 10**18))
    os.link(d + "/k", d + "/l")
    os.pwrite(fd, b"DATA", 0)
    os.close(fd)
    # a chmod by name just before the link, a chown through the new name
    wfile(d + "/m", b"")
    os.chmod(d + "/m", 0o700)
    os.link(d + "/m", d + "/n")
    os.chown(d + "/n", 1234, 5678)
    # special files
    os.mkfifo(d + "/p", 0o640)
    os.link(d + "/p", d + "/q")
    os.mknod(d + "/c", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    os.link(d + "/c", d + "/c2")
    so = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    so.bind(d + "/s")
    so.close()
    os.link(d + "/s", d + "/s2")
    os.symlink("e", d + "/y")
    os.link(d + "/y", d + "/y2", follow_symlinks=False)     # as Linux does
    os.symlink("only/one", d + "/z")
    env.umount(m)
    want = {   # first name, second name, type, permissions, size, mtime, uid, rdev
        "e": ("f", stat.S_IFREG, 0o644, 0, e_mtime, 0, 0),
        "g": ("h", stat.S_IFREG, 0o640, 0, 10**18, 0, 0),
        "k": ("l", stat.S_IFREG, 0o600, 4, None, 0, 0),
        "m": ("n", stat.S_IFREG, 0o700, 0, None, 1234, 0),
        "p": ("q", stat.S_IFIFO, 0o640, 0, None, 0, 0),
        "c": ("c2", stat.S_IFCHR, 0o600, 0, None, 0, os.makedev(1, 3)),
        "s": ("s2", stat.S_IFSOCK, None, 0, None, 0, 0),
        "y": ("y2", stat.S_IFLNK, None, 1, None, 0, 0),
    }
    for rnd in range(2):
        # a fresh mount each: first what `ls -l` shows (readdirplus, the
        # attribute index), then stat by name on one that never listed
        m = env.mount(url)
        d = m["dir"]
        seen = listing_attrs(d) if rnd == 0 else None
        for a, (b, typ, perm, size, mtime, uid, rdev) in sorted(want.items()):
            sa, sb = os.lstat(d + "/" + a), os.lstat(d + "/" + b)
            for st, n in ((sa, a), (sb, b)):
                what = "%s (%s): mode %o nlink %d size %d mtime %d uid %d rdev %d" % (
                    n, "ls -l" if rnd == 0 else "stat", st.st_mode, st.st_nlink, st.st_size,
                    st.st_mtime_ns, st.st_uid, st.st_rdev)
                check(stat.S_IFMT(st.st_mode) == typ and st.st_nlink == 2 and
                      (perm is None or stat.S_IMODE(st.st_mode) == perm) and st.st_size == size and
                      (mtime is None or st.st_mtime_ns == mtime) and st.st_uid == uid and
                      st.st_rdev == rdev, what)
                if seen is not None:
                    check(seen[n][0] == st.st_mode and seen[n][3] == st.st_size,
                          "ls -l agrees with stat: %s %s" % (seen[n], what))
            check(sa.st_ino == sb.st_ino, "%s and %s: one inode (%d, %d)" % (a, b, sa.st_ino, sb.st_ino))
        if rnd == 1:
            check(rfile(d + "/l") == b"DATA", "written through the handle after the link")
            # the FIFO works through either name
            got = []
            th = threading.Thread(target=lambda: got.append(rfile(d + "/q")))
            th.start()
            wfile(d + "/p", b"through the fifo")
            th.join(30)
            check(got == [b"through the fifo"], "a linked FIFO: %s" % got)
            check(os.readlink(d + "/y") == "e" and os.readlink(d + "/y2") == "e",
                  "a linked symlink reads its target through both names")
            for a, (b, *_rest) in want.items():
                os.unlink(d + "/" + a)
                check(os.lstat(d + "/" + b).st_nlink == 1, "%s: nlink 1 after unlinking %s" % (b, a))
                os.unlink(d + "/" + b)
        env.umount(m)
    check(hl_keys(env, url) == [], "every name removed: nothing left: %s" % hl_keys(env, url))
    m = env.mount(url)
    check(sorted(os.listdir(m["dir"])) == ["z"] and os.readlink(m["dir"] + "/z") == "only/one",
          "only the unlinked symlink left: %s" % os.listdir(m["dir"]))
    env.umount(m)


def index_entries(env, url):
    """Every entry line of the volume's attribute index segments."""
    out = []
    for k in env.keys(url, ".objfs/attrs/"):
        out += [ln for ln in (env.get(url, k) or b"").decode().splitlines() if ln.startswith("e ")]
    return out


def t_hardlink_same_second(env):
    """An empty file hard-linked in the second it was made, its attribute
    index entry already written (the mount that made it unmounted: its
    flush) and the link from a second mount; and the same on one mount,
    the entry written after the link.  A fresh mount's `ls -l` and stat
    show nlink 2, the file's mode and one inode for both names.  The
    entry's ETag is the empty body's and Last-Modified has whole seconds
    on Swift and AWS: a name of a link set that was a zero-byte object
    matched it (attrindex.c); a name has a body of its own now.  Whether
    the link lands in the entry's second depends on the machine's speed,
    so what is asserted holds in any second: the name's object after the
    link has an ETag other than the entry's, and a fresh mount takes its
    attributes from the object, never from the stale entry."""
    url = env.volume("hlsec")
    b = env.mount(url)
    pairs = []
    same = 0
    for t in range(3):
        a = env.mount(url)
        # from the start of a second, so that on a quiet machine the file,
        # a's unmount (which writes its index entry) and b's link share it
        time.sleep(1.02 - time.time() % 1)
        fd = os.open("%s/e%d" % (a["dir"], t), os.O_CREAT | os.O_WRONLY, 0o640)
        os.close(fd)
        env.umount(a)
        os.link("%s/e%d" % (b["dir"], t), "%s/f%d" % (b["dir"], t))
        pairs.append(("e%d" % t, "f%d" % t))
        ent = [ln for ln in index_entries(env, url) if ln.startswith("e e%d " % t)]
        check(len(ent) == 1 and " size=0 " in ent[0] and " etag=" in ent[0],
              "e%d: the empty file's index entry written before the link: %s" % (t, ent))
        made = int(re.search(r" lm=(\d+)", ent[0]).group(1)) // 10**9
        etag = re.search(r" etag=(\S+)", ent[0]).group(1)
        h = env.head(url, "e%d" % t)
        check(h is not None and h["meta"].get("objfs-link") and int(h["size"]) > 0,
              "e%d: a name of a link set, with a body: %s" % (t, h))
        check(h["etag"].strip('"') != etag.strip('"'),
              "e%d: the link's object has the stale entry's ETag %s: a Last-Modified in "
              "the entry's second would match it" % (t, etag))
        if int(h["mtime"].split(".")[0]) == made:
            same += 1
    print("  links in the second of their file's entry: %d of 3" % same)
    # on one mount: the entry is still pending at the link (the flusher
    # waits a second), written after it
    for t in range(3):
        fd = os.open("%s/g%d" % (b["dir"], t), os.O_CREAT | os.O_WRONLY, 0o640)
        os.close(fd)
        os.link("%s/g%d" % (b["dir"], t), "%s/h%d" % (b["dir"], t))
        pairs.append(("g%d" % t, "h%d" % t))
    # and one linked after its entry was written on this mount
    fd = os.open(b["dir"] + "/k", os.O_CREAT | os.O_WRONLY, 0o640)
    os.close(fd)
    time.sleep(2.5)
    os.link(b["dir"] + "/k", b["dir"] + "/l")
    pairs.append(("k", "l"))
    env.umount(b)
    for rnd in range(2):
        # a fresh mount each: `ls -l` (readdirplus, the index), then stat
        # by name on one that never listed the directory
        m = env.mount(url)
        seen = listing_attrs(m["dir"]) if rnd == 0 else None
        for x, y in pairs:
            sx, sy = os.lstat(m["dir"] + "/" + x), os.lstat(m["dir"] + "/" + y)
            for st, n in ((sx, x), (sy, y)):
                what = "%s (%s): mode %o nlink %d size %d" % (
                    n, "ls -l" if rnd == 0 else "stat", st.st_mode, st.st_nlink, st.st_size)
                check(st.st_mode == stat.S_IFREG | 0o640 and st.st_nlink == 2 and st.st_size == 0,
                      what)
                if seen is not None:
                    check(seen[n][0] == st.st_mode and seen[n][3] == 0,
                          "ls -l agrees with stat: %s %s" % (seen[n], what))
            check(sx.st_ino == sy.st_ino, "%s and %s: one inode (%d, %d)" % (x, y, sx.st_ino, sy.st_ino))
        env.umount(m)


def t_hardlink_orphans(env):
    """A link set down to data with no name (the last unlink's DELETE of
    the data failed, or raced a link on another mount) is counted and
    logged by the usage listing, and kept; the data and entries of link
    sets count in the volume's usage, as the mount counts them."""
    url = env.volume("hlorph")
    m = env.mount(url)
    wfile(m["dir"] + "/a", b"x" * 5000)
    os.link(m["dir"] + "/a", m["dir"] + "/b")
    wfile(m["dir"] + "/c", b"y" * 3000)
    os.link(m["dir"] + "/c", m["dir"] + "/d")
    env.umount(m)
    lid = env.head(url, "c")["meta"].get("objfs-link")
    check(lid, "c is a name of a link set")
    # what a failed DELETE of the data leaves after the last unlink
    for k in env.keys(url, ".objfs/links/%s/names/" % lid):
        env.tool(url, "del", k)
    env.tool(url, "del", "c")
    env.tool(url, "del", "d")
    env.tool(url, "del", ".objfs/usage")        # the next mount lists
    m = env.mount(url, ["log_level=info"])
    want = "1 of 2 link sets have data but no name (3000 bytes)"
    for _ in range(300):
        if want in open(m["log"]).read():
            break
        time.sleep(0.1)
    check(want in open(m["log"]).read(), "the orphan logged: %s" % open(m["log"]).read()[-2000:])
    check(sorted(os.listdir(m["dir"])) == ["a", "b"], "names: %s" % os.listdir(m["dir"]))
    env.umount(m)
    check(".objfs/links/%s/data" % lid in env.keys(url, ".objfs/links/"), "the orphan kept")
    doc = (env.get(url, ".objfs/usage") or b"").decode()
    mb = re.search(r"bytes\D+(\d+)", doc)
    mo = re.search(r"objects\D+(\d+)", doc)
    # a, b (names with their bodies), the data of each set, a's two entries
    check(mb is not None and int(mb.group(1)) >= 8000 and mo is not None and int(mo.group(1)) == 6,
          "link sets counted in the usage: %s" % doc)


def t_hardlink_rename_over_listed(env):
    """A link's name renamed over a plain file of a directory this mount
    has listed, then readdir (readdirplus) of it: the replaced name shows
    the link set's file (one inode, its size and nlink), never a second
    inode with the replaced file's attributes (the listing kept the
    replaced object's ETag, Last-Modified and size, so the attribute
    index entry of the replaced file matched it; issue 34, t_fsstress:
    two inodes of one set, whose writes then overwrote each other or
    failed with EIO).  Long TTLs: the listing stays in use, whatever the
    machine's speed."""
    url = env.volume("hlrol")
    m = env.mount(url, ["attr_ttl=3600", "entry_ttl=3600", "dir_ttl=3600"])
    d = m["dir"]
    os.makedirs(d + "/a")
    wfile(d + "/a/old", b"o" * 1000)
    wfile(d + "/a/f", b"f" * 3000)
    # the attribute index holds old's entry (its flusher writes it)
    for _ in range(600):
        if env.keys(url, ".objfs/attrs/"):
            break
        time.sleep(0.1)
    check(env.keys(url, ".objfs/attrs/"), "no attribute index written")
    os.listdir(d + "/a")
    os.link(d + "/a/f", d + "/a/l")     # drops the listing
    # a lookup lists the directory again (no attributes fetched yet)
    check(not os.path.exists(d + "/a/nothing"), "a/nothing exists")
    os.rename(d + "/a/l", d + "/a/old")
    check(sorted(os.listdir(d + "/a")) == ["f", "old"],
          "names after the rename: %s" % os.listdir(d + "/a"))
    st_f, st_o = os.stat(d + "/a/f"), os.stat(d + "/a/old")
    check(st_o.st_ino == st_f.st_ino,
          "one inode for both names: %d %d" % (st_f.st_ino, st_o.st_ino))
    check((st_o.st_size, st_o.st_nlink) == (3000, 2),
          "the replaced name: size %d nlink %d, wanted 3000 and 2" % (
              st_o.st_size, st_o.st_nlink))
    # writes through either name reach one file
    with open(d + "/a/old", "r+b") as fh:
        fh.seek(10)
        fh.write(b"W" * 10)
    with open(d + "/a/f", "ab") as fh:
        fh.write(b"A" * 100)
    want = b"f" * 10 + b"W" * 10 + b"f" * 2980 + b"A" * 100
    for n in ("f", "old"):
        got = rfile(d + "/a/" + n)
        check(got == want, "content through %s: %d bytes, wanted %d" % (
            n, len(got), len(want)))
    env.umount(m)


def t_hardlink_renamed_over_held(env):
    """Another mount renames a link name over a file this mount holds
    (open, its data read): `ln g h; mv h f` on b while a holds f (issue
    34: hl_adopt() made a's inode of f a second data inode of g's set, so
    two inodes of a held one set's data and their writes overwrote each
    other).  The rule: no two inodes of a mount hold one set's data.  A
    file a holds whose name became a link name joins the set as its one
    inode (its number kept, st_nlink 2, the set's data, its writes in
    the set's data object); when a already has an inode of the set (it
    knew g, now linked), the held file is the file the rename replaced
    (POSIX: st_nlink 0, its writes reach nothing) and the name is the
    set's inode.  Default TTLs: a's views are taken after they passed."""
    url = env.volume("hlroh")
    a = env.mount(url)
    b = env.mount(url)
    da, db = a["dir"], b["dir"]
    gdata, fdata = b"G" * 1000, b"F" * 500
    for n in ("g", "f", "g2", "f2", "g3", "f3"):
        wfile(da + "/" + n, gdata if n.startswith("g") else fdata)
    ttl = 1.2   # past a's attribute and entry caches (1 s)

    def data_keys():
        return [k for k in hl_keys(env, url) if k.endswith("/data")]

    # 1. a holds f open (read: cached) and never looked g up: f's inode
    #    becomes the set's, with its number
    fd = os.open(da + "/f", os.O_RDWR)
    check(os.pread(fd, 10, 0) == b"F" * 10, "a reads f before")
    ino_f = os.fstat(fd).st_ino
    os.link(db + "/g", db + "/h")
    os.rename(db + "/h", db + "/f")
    time.sleep(ttl)
    st_fd = os.fstat(fd)
    st_f, st_g = os.stat(da + "/f"), os.stat(da + "/g")
    check(st_fd.st_ino == st_f.st_ino == st_g.st_ino == ino_f,
          "one inode, f's number: fd %d f %d g %d (was %d)" % (st_fd.st_ino, st_f.st_ino, st_g.st_ino, ino_f))
    check((st_fd.st_nlink, st_f.st_nlink, st_g.st_nlink, st_fd.st_size) == (2, 2, 2, 1000),
          "nlink 2 and the set's size: %d %d %d size %d" % (st_fd.st_nlink, st_f.st_nlink, st_g.st_nlink, st_fd.st_size))
    check(rfile(da + "/f") == gdata and rfile(da + "/g") == gdata, "a reads the set's data through f and g")
    os.pwrite(fd, b"W" * 10, 0)
    os.fsync(fd)
    os.close(fd)
    want = b"W" * 10 + gdata[10:]
    keys = data_keys()
    check(len(keys) == 1, "one data object: %s" % hl_keys(env, url))
    check(env.get(url, keys[0]) == want, "the write through a's open fd is in the set's data: %r" %
          (env.get(url, keys[0]) or b"")[:20])
    h = env.head(url, "f")
    check(h is not None and h["meta"].get("objfs-link") == keys[0].split("/")[2], "f is still a link name: %s" % h)
    time.sleep(ttl)
    check(rfile(db + "/g") == want and rfile(db + "/f") == want, "b reads a's write through both names")
    check(rfile(da + "/g") == want, "a reads its write through g")

    # 2. a knows g2 (open) and holds f2 open: g2's inode becomes the set's
    #    (its number kept), f2's is the replaced file
    fg = os.open(da + "/g2", os.O_RDWR)
    ff = os.open(da + "/f2", os.O_RDWR)
    check(os.pread(ff, 10, 0) == b"F" * 10 and os.pread(fg, 10, 0) == b"G" * 10, "a reads g2 and f2")
    ino_g, ino_f = os.fstat(fg).st_ino, os.fstat(ff).st_ino
    os.link(db + "/g2", db + "/h2")
    os.rename(db + "/h2", db + "/f2")
    time.sleep(ttl)
    st_fg = os.fstat(fg)
    st_ff = os.fstat(ff)
    st_f, st_g = os.stat(da + "/f2"), os.stat(da + "/g2")
    check(st_fg.st_ino == st_f.st_ino == st_g.st_ino == ino_g,
          "one inode, g2's number: fd %d f2 %d g2 %d (was %d)" % (st_fg.st_ino, st_f.st_ino, st_g.st_ino, ino_g))
    check((st_fg.st_nlink, st_f.st_nlink, st_g.st_nlink) == (2, 2, 2),
          "nlink 2: %d %d %d" % (st_fg.st_nlink, st_f.st_nlink, st_g.st_nlink))
    check(st_ff.st_ino == ino_f and st_ff.st_nlink == 0,
          "the replaced file: ino %d (was %d) nlink %d, wanted 0" % (st_ff.st_ino, ino_f, st_ff.st_nlink))
    os.pwrite(ff, b"X" * 10, 0)         # the replaced file: nowhere
    os.fsync(ff)
    os.close(ff)
    os.pwrite(fg, b"Y" * 10, 0)
    os.fsync(fg)
    os.close(fg)
    want = b"Y" * 10 + gdata[10:]
    keys = data_keys()
    check(len(keys) == 2, "a data object per set: %s" % hl_keys(env, url))
    lid = env.head(url, "g2")["meta"].get("objfs-link")
    got = env.get(url, ".objfs/links/%s/data" % lid)
    check(got == want, "the set's data holds the write through g2, not f2's: %r" % (got or b"")[:20])
    h = env.head(url, "f2")
    check(h is not None and h["meta"].get("objfs-link") == lid, "f2 is still a link name: %s" % h)
    check(rfile(da + "/f2") == want and rfile(da + "/g2") == want, "a reads the set's data through f2 and g2")
    time.sleep(ttl)
    check(rfile(db + "/f2") == want, "b reads it through f2")

    # 3. the same, a's first view a lookup of g3 (open, never read: the
    #    kernel keeps its inode, drop_caches or not): its inode becomes
    #    the set's (its number kept), f3's the replaced
    fg = os.open(da + "/g3", os.O_RDONLY)
    ino_g = os.fstat(fg).st_ino
    ff = os.open(da + "/f3", os.O_RDWR)
    ino_f = os.fstat(ff).st_ino
    os.link(db + "/g3", db + "/h3")
    os.rename(db + "/h3", db + "/f3")
    time.sleep(ttl)
    st_g = os.stat(da + "/g3")
    st_ff = os.fstat(ff)
    st_f = os.stat(da + "/f3")
    check(st_g.st_ino == st_f.st_ino == ino_g and (st_g.st_nlink, st_f.st_nlink) == (2, 2),
          "one inode, g3's number, nlink 2: g3 %d/%d f3 %d/%d (was %d)" % (
              st_g.st_ino, st_g.st_nlink, st_f.st_ino, st_f.st_nlink, ino_g))
    check(st_ff.st_ino == ino_f and st_ff.st_nlink == 0,
          "the replaced file: ino %d (was %d) nlink %d" % (st_ff.st_ino, ino_f, st_ff.st_nlink))
    os.pwrite(ff, b"X" * 10, 0)
    os.close(ff)
    check(os.fstat(fg).st_ino == ino_g, "g3's open inode: %d" % os.fstat(fg).st_ino)
    os.close(fg)
    check(rfile(da + "/f3") == gdata and rfile(da + "/g3") == gdata, "a reads the set's data through f3 and g3")
    check(len(data_keys()) == 3, "a data object per set: %s" % hl_keys(env, url))
    env.umount(a)
    env.umount(b)


def t_hardlink_attrs_back_to_back(env):
    """chmod then chown, back to back, on a link name of a block device
    and of FIFOs (issue 34 item 4, pjdfstest link/00.t: on Swift the
    older of two updates of the set's data object won, 1 in 1 on a block
    device, 1 in 20 on FIFOs): every name shows both changes at once and
    on a fresh mount (what the store kept); link(2) advances ctime.  Ten
    sets of each kind, so a reordering shows."""
    url = env.volume("hlb2b")
    m = env.mount(url)
    d = m["dir"]
    kinds = [("b", stat.S_IFBLK)] * 2 + [("p", stat.S_IFIFO)] * 8
    names = []
    for i, (kind, mode) in enumerate(kinds):
        n = ["%s/%s%d_%d" % (d, kind, i, j) for j in range(3)]
        os.mknod(n[0], mode | 0o644, os.makedev(1, 2))
        c0 = os.lstat(n[0]).st_ctime_ns
        time.sleep(0.01)
        os.link(n[0], n[1])
        check(os.lstat(n[0]).st_ctime_ns > c0, "%s: link advances ctime" % n[0])
        os.link(n[1], n[2])
        os.chmod(n[1], 0o201)
        os.chown(n[1], 65534, 65533)
        for x in (n[0], n[2]):
            st = os.lstat(x)
            check((stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_nlink) == (0o201, 65534, 65533, 3),
                  "%s: mode %o uid %d gid %d nlink %d" % (x, st.st_mode, st.st_uid, st.st_gid, st.st_nlink))
        names.append([os.path.basename(x) for x in n])
    env.umount(m)
    m = env.mount(url)
    for n in names:
        for x in n:
            st = os.lstat(m["dir"] + "/" + x)
            check((stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_nlink) == (0o201, 65534, 65533, 3),
                  "fresh mount: %s: mode %o uid %d gid %d nlink %d" % (
                      x, st.st_mode, st.st_uid, st.st_gid, st.st_nlink))
    env.umount(m)


def t_hardlink_rsync(env):
    """rsync -aH of a tree with hard links onto the mount and back: the same
    tree, the same link groups."""
    if shutil.which("rsync") is None:
        raise Fail("rsync missing (scripts/install-deps.sh installs it)")
    url = env.volume("hlrsync")
    src = os.path.join(env.work, "hl-src")
    back = os.path.join(env.work, "hl-back")
    os.makedirs(src + "/d1/d2")
    wfile(src + "/one", b"1" * 1000)
    wfile(src + "/d1/two", os.urandom(100000))
    wfile(src + "/solo", b"alone")
    os.link(src + "/one", src + "/d1/one-b")
    os.link(src + "/one", src + "/d1/d2/one-c")
    os.link(src + "/d1/two", src + "/two-b")
    for there in (True, False):
        # a mount each: back from what the store holds
        m = env.mount(url)
        a, b = (src + "/", m["dir"] + "/t/") if there else (m["dir"] + "/t/", back + "/")
        p = subprocess.run(["rsync", "-aH", a, b], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=300)
        env.umount(m)
        check(p.returncode == 0, "rsync -aH %s %s: %s" % (a, b, p.stdout.decode()[-2000:]))

    def tree(root):
        out, groups = {}, {}
        for dp, dns, fns in os.walk(root):
            for n in fns:
                p = os.path.join(dp, n)
                st = os.lstat(p)
                rel = os.path.relpath(p, root)
                out[rel] = (rfile(p), stat.S_IMODE(st.st_mode), st.st_nlink, st.st_mtime_ns // 10**9)
                groups.setdefault(st.st_ino, []).append(rel)
        return out, sorted(sorted(g) for g in groups.values())
    ts, gs = tree(src)
    tb, gb = tree(back)
    check(ts == tb, "rsync -aH round trip: the same files")
    check(gs == gb, "the same link groups: %s vs %s" % (gs, gb))


TESTS = [
    t_hardlink_basic,
    t_hardlink_open_write,
    t_hardlink_rename,
    t_hardlink_two_mounts,
    t_hardlink_attrs_special,
    t_hardlink_same_second,
    t_hardlink_orphans,
    t_hardlink_rename_over_listed,
    t_hardlink_renamed_over_held,
    t_hardlink_attrs_back_to_back,
    t_hardlink_rsync,
]
