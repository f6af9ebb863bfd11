#!/usr/bin/python3
"""posix_diff.py - the differential POSIX test (issue 13).

One sequence of operations (STEPS) runs on two trees: a directory of a
local filesystem (the reference) and a directory of an objfs mount.  Each
step runs in a forked child with the credentials it names (setgroups,
setresgid, setresuid), so permission checks, sticky bits and setgid
directories are the kernel's and the filesystem's, as for an application.
After each step the paths it touched and their parents are lstat'ed on
both sides and compared: the errno, existence, type, permission bits,
uid, gid, size (not of directories), nlink, rdev, WHICH of atime, mtime
and ctime changed across the step, and the exact values utimensat set.
At the end both trees are walked and compared (names and the same
fields); the caller then remounts and compares again (what the store
kept).  Also compared: the type readdir gives every name of the
directories a step touched (d_type: find, rsync, tar and os.scandir trust
it), whether a rename or link keeps the inode number, and, first thing
after the remount, every directory's st_nlink before anything lists it
(fresh_nlinks()).

A difference is either fixed or listed in KNOWN with its reason (the same
reasons are in docs/objfs-mount.md, "Known differences from a local
filesystem"); every step carries the tags of the known differences it may
show, and a difference in a step whose tags are all unknown fails the test.

Used by fs_suite.py's t_posix_diff (local store, Swift, Ceph RGW).
"""
import ctypes
import ctypes.util
import errno
import os
import socket
import stat
import time

# tag -> why objfs differs there (docs/objfs-mount.md says the same)
KNOWN = {
    "keylimit": "a key is at most 1,024 bytes with the volume prefix: a "
                "path longer than that cannot be created (ENAMETOOLONG), "
                "where a local filesystem takes paths up to PATH_MAX",
    "listing-lag": "Swift updates container listings asynchronously: under "
                   "load a directory's nlink, counted from its listing, can "
                   "miss subdirectories made seconds before or count ones "
                   "just removed, and a name the listing does not show yet "
                   "is looked up again, its per-mount times (a directory's "
                   "entry changes, a file's creation atime) read back from "
                   "the store (only with lagging_listings: a directory's "
                   "nlink alone, or more times changed on the mount)",
    "revalidated-times": "a directory's entry-change times and a file's "
                         "creation atime are the mount's memory, not the "
                         "store's: a step that finds an attribute or entry "
                         "timeout expired (a busy machine) looks the name up "
                         "again and may show more times changed than a local "
                         "filesystem, never fewer",
}

ROOT = (0, 0, [0])
U1 = (1001, 1001, [1001])
U2 = (1002, 1002, [1002, 1001])     # also in U1's group
U3 = (1003, 1003, [1003])

UTIME_NOW = (1 << 30) - 1
UTIME_OMIT = (1 << 30) - 2
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def utimensat(path, a, m, follow=True):
    """a, m: (sec, nsec), or UTIME_NOW / UTIME_OMIT; None for both: NULL."""
    if a is None:
        ts = None
    else:
        arr = (_Timespec * 2)()
        for i, v in enumerate((a, m)):
            if isinstance(v, tuple):
                arr[i].tv_sec, arr[i].tv_nsec = v
            else:
                arr[i].tv_sec, arr[i].tv_nsec = 0, v
        ts = arr
    rc = _libc.utimensat(AT_FDCWD, os.fsencode(path), ts,
                         0 if follow else AT_SYMLINK_NOFOLLOW)
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e), path)


LONG = "n" * 255
DEEP = ["p%03d" % i + "q" * 96 for i in range(11)]  # 11 x 101 bytes > 1,024


def deep(n):
    return "long/" + "/".join(DEEP[:n])


# (who, op, args..., {"tags": [...]}) -- paths are relative to the tree.
def _steps():
    s = []

    def add(who, op, *args, tags=()):
        s.append((who, op, args, tuple(tags)))

    # setup
    add(ROOT, "mkdir", "d", 0o777)
    add(ROOT, "chmod", "d", 0o777)
    add(ROOT, "mkdir", "sticky", 0o777)
    add(ROOT, "chmod", "sticky", 0o1777)
    add(ROOT, "mkdir", "sg", 0o775)
    add(ROOT, "chown", "sg", 0, 1001)
    add(ROOT, "chmod", "sg", 0o2775)
    add(ROOT, "mkdir", "priv", 0o755)
    # open(O_CREAT, O_EXCL, O_TRUNC), write, truncate
    add(ROOT, "creat", "d/f", 0o644, os.O_EXCL)
    add(ROOT, "creat", "d/f", 0o644, os.O_EXCL)
    add(ROOT, "creat", "d/f", 0o600, 0)
    add(ROOT, "write", "d/f", b"hello world")
    add(ROOT, "open", "d/f", os.O_WRONLY | os.O_TRUNC)
    add(ROOT, "write", "d/f", b"0123456789" * 10)
    add(ROOT, "truncate", "d/f", 1000)
    add(ROOT, "truncate", "d/f", 7)
    add(ROOT, "truncate", "d/f", 7)
    add(ROOT, "truncate", "d", 0)
    add(ROOT, "truncate", "d/nonexistent", 0)
    add(ROOT, "creat", "d/nonexistent/x", 0o644, 0)
    add(ROOT, "creat", "d/f/x", 0o644, 0)
    add(U1, "creat", "priv/u1", 0o644, 0)
    add(U1, "creat", "d/u1", 0o640, os.O_EXCL)
    add(U2, "open", "d/u1", os.O_RDONLY)
    add(U3, "open", "d/u1", os.O_RDONLY)
    add(U3, "open", "d/u1", os.O_WRONLY | os.O_TRUNC)
    add(U2, "truncate", "d/u1", 0)
    add(U1, "truncate", "d/u1", 3)
    # chmod, chown
    add(ROOT, "chmod", "d/f", 0o600)
    add(ROOT, "chmod", "d/f", 0o4755)
    add(ROOT, "chown", "d/f", 1001, 1001)
    add(U1, "chmod", "d/f", 0o2755)
    add(U1, "chmod", "d/f", 0o644)
    add(U2, "chmod", "d/f", 0o666)
    add(U2, "chown", "d/f", 1002, -1)
    add(U1, "chown", "d/f", -1, 1002)
    add(U1, "chown", "d/f", -1, 1001)
    add(U1, "chown", "d/f", 1001, -1)
    add(U2, "chown", "d/u1", -1, 1001)
    add(ROOT, "chmod", "d/f", 0o6755)
    add(U1, "write", "d/f", b"x")
    add(ROOT, "chown", "d/f", 1001, 1001)
    add(ROOT, "chmod", "d/nonexistent", 0o644)
    # utimensat
    add(ROOT, "utime", "d/f", (1000000000, 123456789), (2000000000, 987654321))
    add(ROOT, "utime", "d/f", UTIME_OMIT, (1500000000, 5))
    add(ROOT, "utime", "d/f", (1200000000, 7), UTIME_OMIT)
    add(ROOT, "utime", "d/f", UTIME_OMIT, UTIME_OMIT)
    add(ROOT, "utime", "d/f", UTIME_NOW, UTIME_OMIT)
    add(ROOT, "utime", "d/f", UTIME_OMIT, UTIME_NOW)
    add(ROOT, "utime", "d/f", None, None)
    add(U1, "utime", "d/f", None, None)
    add(U2, "utime", "d/f", None, None)
    add(U2, "utime", "d/f", (5, 0), (5, 0))
    add(U3, "utime", "d/f", UTIME_NOW, UTIME_NOW)
    add(ROOT, "chmod", "d/u1", 0o666)
    add(U3, "utime", "d/u1", None, None)
    add(U3, "utime", "d/u1", (5, 0), (5, 0))
    add(ROOT, "utime", "d", (1100000000, 0), (1100000001, 0))
    # mkdir, rmdir
    add(ROOT, "mkdir", "d/sub", 0o755)
    add(ROOT, "mkdir", "d/sub", 0o755)
    add(ROOT, "mkdir", "d/sub2", 0o700)
    add(ROOT, "creat", "d/sub2/x", 0o644, 0)
    add(ROOT, "rmdir", "d/sub2")
    add(ROOT, "rmdir", "d/f")
    add(ROOT, "rmdir", "d/none")
    add(ROOT, "mkdir", "d/f", 0o755)
    add(ROOT, "mkdir", "d/none/x", 0o755)
    add(U3, "mkdir", "priv/x", 0o755)
    add(U1, "mkdir", "d/u1dir", 0o777)
    add(ROOT, "rmdir", "d/sub")
    add(ROOT, "unlink", "d/sub2/x")
    add(ROOT, "rmdir", "d/sub2")
    # symlink
    add(ROOT, "symlink", "target/of/link", "d/ln")
    add(ROOT, "symlink", "x", "d/ln")
    add(ROOT, "symlink", "x", "d/f")
    add(U3, "symlink", "x", "priv/ln")
    add(ROOT, "symlink", "t" * 1000, "d/ln1000")
    add(ROOT, "utime", "d/ln", (1300000000, 1), (1300000000, 2), False)
    add(ROOT, "lchown", "d/ln", 1001, 1001)
    # mkfifo, mknod, bind
    add(ROOT, "mkfifo", "d/fifo", 0o644)
    add(ROOT, "mkfifo", "d/fifo", 0o644)
    add(U1, "mkfifo", "d/u1fifo", 0o600)
    add(ROOT, "mknod", "d/sock", stat.S_IFSOCK | 0o755, 0)
    add(ROOT, "mknod", "d/chr", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    add(ROOT, "mknod", "d/blk", stat.S_IFBLK | 0o640, os.makedev(7, 200))
    add(ROOT, "mknod", "d/reg", stat.S_IFREG | 0o640, 0)
    add(U1, "mknod", "d/u1chr", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    add(U1, "mknod", "d/u1fifo2", stat.S_IFIFO | 0o600, 0)
    add(U3, "mkfifo", "priv/fifo", 0o644)
    add(ROOT, "bind", "d/bsock")
    add(ROOT, "bind", "d/bsock")
    add(U1, "bind", "d/u1sock")
    add(ROOT, "chmod", "d/fifo", 0o600)
    add(ROOT, "chown", "d/chr", 1001, 1002)
    add(ROOT, "utime", "d/blk", (1400000000, 9), (1400000001, 8))
    add(ROOT, "truncate", "d/fifo", 0)
    add(ROOT, "rename", "d/chr", "d/chr2")
    add(ROOT, "rename", "d/fifo", "sticky/fifo")
    add(ROOT, "unlink", "d/blk")
    add(ROOT, "unlink", "d/sock")
    # rename
    add(ROOT, "creat", "d/r1", 0o644, 0)
    add(ROOT, "write", "d/r1", b"r1")
    add(ROOT, "creat", "d/r2", 0o600, 0)
    add(ROOT, "rename", "d/r1", "d/r2")
    add(ROOT, "rename", "d/r1", "d/r3")
    add(ROOT, "rename", "d/r2", "d/r2")
    add(ROOT, "mkdir", "d/rd1", 0o755)
    add(ROOT, "mkdir", "d/rd2", 0o711)
    add(ROOT, "mkdir", "d/rd3", 0o755)
    add(ROOT, "creat", "d/rd3/x", 0o644, 0)
    add(ROOT, "rename", "d/r2", "d/rd1")
    add(ROOT, "rename", "d/rd1", "d/r2")
    add(ROOT, "rename", "d/rd1", "d/rd2")
    add(ROOT, "rename", "d/rd2", "d/rd3")
    add(ROOT, "rename", "d/rd3", "d/rd3/x/y")
    add(ROOT, "mkdir", "d/rd4", 0o755)
    add(ROOT, "rename", "d/rd3", "d/rd4/in")
    add(ROOT, "rename", "d/rd4", "d/rd4/in/deeper")
    add(ROOT, "rename", "d/rd4/in/x", "d/moved")
    add(ROOT, "rename", "d/moved", "sg/moved")
    add(ROOT, "rename", "d/ln", "d/ln2")
    add(ROOT, "rename", "d/none", "d/none2")
    add(U3, "rename", "d/u1", "d/u3")
    add(U1, "rename", "d/u1", "priv/u1x")
    # unlink
    add(ROOT, "unlink", "d/r2")
    add(ROOT, "unlink", "d/r2")
    add(ROOT, "unlink", "d/rd2")
    add(ROOT, "unlink", "d/ln2")
    add(U3, "unlink", "priv/u1")
    # sticky directory
    add(U1, "creat", "sticky/a", 0o666, 0)
    add(U1, "mkdir", "sticky/adir", 0o777)
    add(U2, "creat", "sticky/b", 0o666, 0)
    add(U2, "unlink", "sticky/a")
    add(U2, "rename", "sticky/a", "sticky/c")
    add(U2, "rename", "sticky/b", "sticky/a")
    add(U2, "rmdir", "sticky/adir")
    add(U2, "write", "sticky/a", b"shared")
    add(U1, "unlink", "sticky/b")
    add(U1, "rename", "sticky/a", "sticky/c")
    add(ROOT, "unlink", "sticky/b")
    add(U1, "rmdir", "sticky/adir")
    # setgid directory
    add(U2, "creat", "sg/u2", 0o664, 0)
    add(U2, "mkdir", "sg/u2dir", 0o775)
    add(U2, "mknod", "sg/u2fifo", stat.S_IFIFO | 0o664, 0)
    add(U2, "symlink", "x", "sg/u2ln")
    add(U2, "creat", "sg/u2dir/deeper", 0o664, 0)
    add(U2, "chmod", "sg/u2", 0o2775)
    add(U3, "creat", "sg/u3", 0o664, 0)
    add(U2, "creat", "d/u2sg", 0o2775, 0)
    add(U2, "mkdir", "d/u2sgdir", 0o2775)
    add(U1, "chown", "sg/u2", 1001, -1)
    add(ROOT, "chmod", "sg/u2dir", 0o775)
    add(ROOT, "chown", "sg/u2dir", 1002, 1002)
    # names and paths
    add(ROOT, "creat", "d/" + LONG, 0o644, 0)
    add(ROOT, "creat", "d/" + LONG + "x", 0o644, 0)
    add(ROOT, "stat", "d/" + LONG + "x")
    add(ROOT, "mkdir", "d/" + LONG + "y", 0o755)
    add(ROOT, "symlink", "x", "d/" + LONG + "z")
    add(ROOT, "mkfifo", "d/" + LONG + "z", 0o644)
    add(ROOT, "rename", "d/" + LONG, "d/" + LONG + "w")
    add(ROOT, "unlink", "d/" + LONG + "w")
    add(ROOT, "rmdir", "d/" + LONG + "w")
    add(ROOT, "stat", "d/" + LONG)
    add(ROOT, "mkdir", "long", 0o755)
    for i in range(1, 10):
        add(ROOT, "mkdir", deep(i), 0o755)
    add(ROOT, "creat", deep(9) + "/f" + "z" * 40, 0o644, 0)
    add(ROOT, "mkdir", deep(10), 0o755, tags=["keylimit"])
    add(ROOT, "creat", deep(9) + "/" + "z" * 200, 0o644, 0, tags=["keylimit"])
    add(ROOT, "stat", deep(9) + "/" + "z" * 200, tags=["keylimit"])
    add(ROOT, "mkfifo", deep(9) + "/" + "z" * 200, 0o644, tags=["keylimit"])
    add(ROOT, "rename", deep(9) + "/f" + "z" * 40, deep(9) + "/" + "z" * 200,
        tags=["keylimit"])
    add(ROOT, "rename", deep(9), "long/p000short", tags=["keylimit"])
    add(ROOT, "unlink", "long/p000short/f" + "z" * 40, tags=["keylimit"])
    # hard links
    hl = ["hardlink"]
    add(ROOT, "mkdir", "h1", 0o755)
    add(ROOT, "mkdir", "h2", 0o755)
    add(ROOT, "creat", "h1/a", 0o644, 0)
    add(ROOT, "write", "h1/a", b"linked data")
    add(ROOT, "link", "h1/a", "h1/b", tags=hl)
    add(ROOT, "link", "h1/a", "h2/c", tags=hl)
    add(ROOT, "link", "h1/a", "h2/c", tags=hl)
    add(ROOT, "link", "h1", "h2/dir", tags=hl)
    add(ROOT, "link", "h1/none", "h2/none", tags=hl)
    add(ROOT, "chmod", "h2/c", 0o600, tags=hl)
    add(ROOT, "write", "h1/b", b"through b", tags=hl)
    add(ROOT, "unlink", "h1/a", tags=hl)
    add(ROOT, "rename", "h1/b", "h2/c", tags=hl)
    add(ROOT, "link", "h2/c", "h2/d", tags=hl)
    add(ROOT, "rename", "h2/d", "h1/e", tags=hl)
    add(ROOT, "unlink", "h2/c", tags=hl)
    add(U3, "link", "h1/e", "d/u3link", tags=hl)
    # a file linked in the second it was made (touch -d; ln), special
    # files and symlinks (Linux links them, objfs too)
    add(ROOT, "creat", "h1/t", 0o644, 0)
    add(ROOT, "utime", "h1/t", (1200000000, 5), (1200000000, 6))
    add(ROOT, "link", "h1/t", "h2/t2")
    add(ROOT, "link", "sticky/fifo", "d/fifolink")
    add(ROOT, "symlink", "some/target", "h1/sl")
    add(ROOT, "link", "h1/sl", "h2/sl2")
    add(ROOT, "mknod", "h1/chr", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    add(ROOT, "link", "h1/chr", "h2/chr2")
    add(ROOT, "chown", "h2/chr2", 1001, 1002)
    add(ROOT, "bind", "h1/sock")
    add(ROOT, "link", "h1/sock", "h1/sock2")
    add(ROOT, "unlink", "h1/sock")
    # issue 34 item 1: readdir's d_type of hard-linked names that are not
    # regular files (compared after every step: dtypes())
    add(ROOT, "mkdir", "dt", 0o755)
    add(ROOT, "symlink", "nowhere", "dt/sl")
    add(ROOT, "link", "dt/sl", "dt/sl2")
    add(ROOT, "mknod", "dt/c0", stat.S_IFCHR | 0o644, os.makedev(0, 0))
    add(ROOT, "link", "dt/c0", "dt/c1")
    add(ROOT, "mkfifo", "dt/p0", 0o644)
    add(ROOT, "link", "dt/p0", "dt/p1")
    add(ROOT, "bind", "dt/s0")
    add(ROOT, "link", "dt/s0", "dt/s1")
    # item 2: a directory's st_nlink (and after the remount: fresh_nlinks())
    add(ROOT, "mkdir", "nl", 0o755)
    add(ROOT, "mkdir", "nl/a", 0o755)
    add(ROOT, "mkdir", "nl/a/b", 0o755)
    add(ROOT, "mkdir", "nl/a/c", 0o755)
    add(ROOT, "creat", "nl/a/f", 0o644, 0)
    add(ROOT, "stat", "nl/a")
    add(ROOT, "rmdir", "nl/a/c")
    add(ROOT, "rename", "nl/a/b", "nl/b2")
    # item 3: inode numbers across renames (compared for every rename and
    # link: same_ino()): pjdfstest rename/00.t's socket, rename/10.t's
    # sticky directory with entries of other types renamed over and back
    add(ROOT, "mkdir", "ri", 0o755)
    add(ROOT, "bind", "ri/n0")
    add(ROOT, "rename", "ri/n0", "ri/n1")
    add(ROOT, "link", "ri/n1", "ri/n0")
    add(ROOT, "rename", "ri/n1", "ri/n2")
    add(ROOT, "stat", "ri/n0")
    add(ROOT, "mkdir", "ri/st", 0o777)
    add(ROOT, "chmod", "ri/st", 0o1777)
    add(U1, "mkdir", "ri/st/from", 0o755)
    for i, (kind, mk) in enumerate((
            ("fifo", ("mkfifo", 0o644)), ("sym", ("symlink",)),
            ("sock", ("bind",)), ("reg", ("creat", 0o644, 0)))):
        n2, n3 = "ri/st/from/n2", "ri/st/n3" + kind
        add(U1, "creat", n2, 0o644, 0)
        if mk[0] == "symlink":
            add(U1, "symlink", "x", n3)
        else:
            add(U1, mk[0], n3, *mk[1:])
        add(U1, "rename", n2, n3)
        add(U1, "rename", n3, n2)
        add(U1, "unlink", n2)
    # item 4: attributes of a hard-linked name (pjdfstest link/00.t)
    add(ROOT, "mkdir", "l4", 0o755)
    for kind, mode in (("b", stat.S_IFBLK), ("p", stat.S_IFIFO)):
        n = ["l4/%s%d" % (kind, i) for i in range(3)]
        add(ROOT, "mknod", n[0], mode | 0o644, os.makedev(1, 2))
        add(ROOT, "link", n[0], n[1])
        add(ROOT, "link", n[1], n[2])
        add(ROOT, "chmod", n[1], 0o201)
        add(ROOT, "chown", n[1], 65534, 65533)
        add(ROOT, "stat", n[0])
        add(ROOT, "stat", n[2])
    return s


STEPS = _steps()


def _write(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _bind(path):
    so = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        so.bind(path)
    finally:
        so.close()


# op -> what it does with its arguments (paths joined to the tree's root)
OPS = {
    "mkdir": lambda p: os.mkdir(p[0], p[1]),
    "rmdir": lambda p: os.rmdir(p[0]),
    "chmod": lambda p: os.chmod(p[0], p[1]),
    "chown": lambda p: os.chown(p[0], p[1], p[2]),
    "lchown": lambda p: os.lchown(p[0], p[1], p[2]),
    "creat": lambda p: os.close(os.open(p[0], os.O_CREAT | os.O_WRONLY | p[2], p[1])),
    "open": lambda p: os.close(os.open(p[0], p[1])),
    "write": lambda p: _write(p[0], p[1]),
    "truncate": lambda p: os.truncate(p[0], p[1]),
    "utime": lambda p: utimensat(p[0], p[1], p[2], p[3] if len(p) > 3 else True),
    "mkfifo": lambda p: os.mkfifo(p[0], p[1]),
    "mknod": lambda p: os.mknod(p[0], p[1], p[2]),
    "bind": lambda p: _bind(p[0]),
    "rename": lambda p: os.rename(p[0], p[1]),
    "unlink": lambda p: os.unlink(p[0]),
    "link": lambda p: os.link(p[0], p[1], follow_symlinks=False),   # link(2)
    "stat": lambda p: os.lstat(p[0]),
}


def _run(root, op, args):
    if op == "symlink":     # the target is not a path of the tree
        os.symlink(args[0], os.path.join(root, args[1]))
        return
    OPS[op]([os.path.join(root, a) if isinstance(a, str) else a for a in args])


def run_as(who, root, op, args):
    """The errno of op run with who's credentials (0: success)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(r)
            uid, gid, groups = who
            os.setgroups(groups)
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            os.umask(0o022)
            _run(root, op, args)
        except OSError as e:
            code = e.errno or 255
        except BaseException:
            code = 254
        os.write(w, b"%d" % code)
        os._exit(0)
    os.close(w)
    out = b""
    while True:
        b = os.read(r, 64)
        if not b:
            break
        out += b
    os.close(r)
    os.waitpid(pid, 0)
    code = int(out or b"253")
    if code in (253, 254):
        raise RuntimeError("step %s %r crashed in its child" % (op, args))
    return code


def _paths(args):
    out = []
    for a in args:
        if isinstance(a, str) and not a.startswith("t" * 10) and \
           a not in ("target/of/link", "x"):
            cur = a
            while cur:
                if cur not in out:
                    out.append(cur)
                cur = os.path.dirname(cur)
    out.append("")
    return out


def snap(root, rel):
    try:
        return os.lstat(os.path.join(root, rel) if rel else root)
    except OSError as e:
        return e.errno


FIELDS = ("type", "perm", "uid", "gid", "size", "nlink", "rdev")


def fields(st):
    if isinstance(st, int):
        return {"errno": st}
    d = {
        "type": stat.S_IFMT(st.st_mode),
        "perm": "%o" % stat.S_IMODE(st.st_mode),
        "uid": st.st_uid,
        "gid": st.st_gid,
        "nlink": st.st_nlink,
    }
    if not stat.S_ISDIR(st.st_mode):
        d["size"] = st.st_size
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        d["rdev"] = (os.major(st.st_rdev), os.minor(st.st_rdev))
    return d


def changed(before, after):
    if isinstance(before, int) or isinstance(after, int):
        return None
    return "".join(c for c, a, b in (
        ("a", before.st_atime_ns, after.st_atime_ns),
        ("m", before.st_mtime_ns, after.st_mtime_ns),
        ("c", before.st_ctime_ns, after.st_ctime_ns)) if a != b) or "-"


def explicit(op, args, st):
    """Whether lstat shows the times utimensat set explicitly."""
    if op != "utime" or isinstance(st, int):
        return None
    out = {}
    if isinstance(args[1], tuple):
        out["atime"] = st.st_atime_ns == args[1][0] * 10**9 + args[1][1]
    if isinstance(args[2], tuple):
        out["mtime"] = st.st_mtime_ns == args[2][0] * 10**9 + args[2][1]
    return out


def short(a):
    s = repr(a) if not isinstance(a, str) else a
    return s if len(s) < 60 else s[:28] + "..." + s[-28:]


def describe(who, op, args):
    return "uid %d: %s(%s)" % (who[0], op, ", ".join(short(a) for a in args))


def lag_only(f_ref, f_mnt):
    """The difference is a directory's nlink alone."""
    if f_ref.get("type") != stat.S_IFDIR or f_mnt.get("type") != stat.S_IFDIR:
        return False
    rest = lambda f: {k: v for k, v in f.items() if k != "nlink"}  # noqa: E731
    return rest(f_ref) == rest(f_mnt)


def lag_times(c_ref, c_mnt):
    """The mount shows the local changes and more (times read back)."""
    return c_ref == "-" and c_mnt != "-" or set(c_ref) < set(c_mnt)


def dtypes(root, rel):
    """name -> the type readdir gives it (d_type, not following symlinks:
    os.scandir asks lstat only for DT_UNKNOWN), for the directory rel; an
    errno when it cannot be read."""
    def kind(e):
        if e.is_symlink():
            return "symlink"
        if e.is_dir(follow_symlinks=False):
            return "dir"
        if e.is_file(follow_symlinks=False):
            return "file"
        return "other"
    try:
        with os.scandir(os.path.join(root, rel) if rel else root) as it:
            return {e.name: kind(e) for e in it}
    except OSError as e:
        return e.errno


def same_ino(op, args, before, after):
    """For rename and link: whether the new name has the inode number the
    old one had (None when the step did not run through)."""
    if op not in ("rename", "link") or isinstance(before, int) or isinstance(after, int):
        return None
    return before.st_ino == after.st_ino


def run_steps(ref, mnt, log=None, settle=0.015, lagging_listings=False):
    """Runs STEPS on both trees; returns (unknown, known) differences.
    lagging_listings: the store's listings lag behind writes (Swift)."""
    unknown, known = [], []

    def differ(tags, what):
        tag = next((t for t in tags if t in KNOWN), None)
        (known if tag else unknown).append(what + (" [known: %s]" % tag if tag else ""))

    for who, op, args, tags in STEPS:
        paths = _paths(args)
        before = [(snap(ref, p), snap(mnt, p)) for p in paths]
        src = (snap(ref, args[0]), snap(mnt, args[0])) if op in ("rename", "link") else (0, 0)
        time.sleep(settle)      # let a coarse clock tick between steps
        e_ref = run_as(who, ref, op, args)
        e_mnt = run_as(who, mnt, op, args)
        step = describe(who, op, args)
        if log:
            log("%s -> %s / %s" % (step, errno.errorcode.get(e_ref, e_ref),
                                   errno.errorcode.get(e_mnt, e_mnt)))
        if e_ref != e_mnt:
            differ(tags, "%s: errno %s, objfs %s" % (
                step, errno.errorcode.get(e_ref, e_ref),
                errno.errorcode.get(e_mnt, e_mnt)))
        for p, (b_ref, b_mnt) in zip(paths, before):
            a_ref, a_mnt = snap(ref, p), snap(mnt, p)
            f_ref, f_mnt = fields(a_ref), fields(a_mnt)
            if f_ref != f_mnt:
                lag = ("listing-lag",) if lagging_listings and lag_only(f_ref, f_mnt) else ()
                differ(tags + lag, "%s: %s: %s, objfs %s" % (step, short(p or "."), f_ref, f_mnt))
            c_ref, c_mnt = changed(b_ref, a_ref), changed(b_mnt, a_mnt)
            if c_ref != c_mnt and c_ref is not None and c_mnt is not None:
                lag = (("listing-lag",) if lagging_listings else ("revalidated-times",)) \
                    if lag_times(c_ref, c_mnt) else ()
                differ(tags + lag, "%s: %s: times changed %s, objfs %s" % (
                    step, short(p or "."), c_ref, c_mnt))
            x_ref = explicit(op, args, a_ref) if p == args[0] else None
            x_mnt = explicit(op, args, a_mnt) if p == args[0] else None
            if x_ref != x_mnt:
                differ(tags, "%s: %s: set times %s, objfs %s" % (step, short(p), x_ref, x_mnt))
        if op in ("rename", "link"):
            k_ref = same_ino(op, args, src[0], snap(ref, args[1]))
            k_mnt = same_ino(op, args, src[1], snap(mnt, args[1]))
            if k_ref != k_mnt:
                differ(tags, "%s: %s keeps the inode number: %s, objfs %s" % (
                    step, short(args[1]), k_ref, k_mnt))
        for p in paths:
            d_ref = dtypes(ref, p)
            if isinstance(d_ref, int):
                continue        # not a directory
            d_mnt = dtypes(mnt, p)
            if d_ref != d_mnt:
                differ(tags, "%s: %s: readdir types %s, objfs %s" % (
                    step, short(p or "."), d_ref, d_mnt))
    return unknown, known


def fresh_nlinks(ref, mnt, what):
    """st_nlink of every directory of the reference tree, lstat'ed on the
    mount before anything lists it (a fresh mount: issue 34 item 2):
    (unknown, known) differences.  Call it first thing after a mount."""
    unknown, known = [], []
    dirs = []
    for dirpath, dirnames, _ in os.walk(ref):
        dirs += [os.path.relpath(os.path.join(dirpath, n), ref) for n in dirnames]
    for rel in sorted(dirs, key=lambda r: (r.count("/"), r)):
        n_ref = os.lstat(os.path.join(ref, rel)).st_nlink
        try:
            n_mnt = os.lstat(os.path.join(mnt, rel)).st_nlink
        except OSError as e:
            n_mnt = errno.errorcode.get(e.errno, e.errno)
        if n_ref != n_mnt:
            line = "%s: %s: nlink %s, objfs %s" % (what, short(rel), n_ref, n_mnt)
            if rel.startswith("long/") and "keylimit" in KNOWN:
                known.append(line + " [known: keylimit]")
            else:
                unknown.append(line)
    return unknown, known


def walk(root):
    """Every name under root and its fields: all directories are listed
    before anything is lstat'ed (a directory's nlink counts the
    subdirectories its listing shows)."""
    names = []
    for dirpath, dirnames, filenames in os.walk(root):
        names += [os.path.join(dirpath, n) for n in dirnames + filenames]
    return {os.path.relpath(full, root): fields(os.lstat(full)) for full in names}


def compare_trees(ref, mnt, what):
    """Differences between the final trees: (unknown, known)."""
    unknown, known = [], []
    t_ref, t_mnt = walk(ref), walk(mnt)
    for rel in sorted(set(t_ref) | set(t_mnt)):
        f_ref, f_mnt = t_ref.get(rel), t_mnt.get(rel)
        if f_ref == f_mnt:
            continue
        line = "%s: %s: %s, objfs %s" % (what, short(rel), f_ref, f_mnt)
        if rel.startswith(("h1", "h2")) and "hardlink" in KNOWN:
            known.append(line + " [known: hardlink]")
        elif rel.startswith("long/") and "keylimit" in KNOWN:
            # what the keylimit steps made on the local side only
            known.append(line + " [known: keylimit]")
        else:
            unknown.append(line)
    return unknown, known
