#!/usr/bin/python3
"""fsstress.py - an fsstress-like load (issue 34 item 7): a tree of worker
processes doing creates, writes, truncates, renames, hard links, unlinks,
mkdir and rmdir, seeded, so the same arguments give the same final tree
on any filesystem whatever the timing.

    fsstress.py run ROOT [--ops N] [--procs P] [--seed S] [--no-links]
        runs N operations in all (N / P per worker), each worker in its
        own directory ROOT/pI with its own generator; prints one JSON line
        {"ops": N, "seconds": T, "errors": {errno name: count}}
    fsstress.py digest ROOT
        prints the tree as JSON lines (path, type, size, nlink, sha256),
        sorted: two runs compare equal when they made the same tree

Debian has no fsstress package (apt-cache search fsstress finds none), so
this is the load the test suite (fs_suite.py t_fsstress) and
bench/fsstress.sh run.  Every operation is one a local filesystem either
does or refuses the same way (a rename over a non-empty directory, an
rmdir of one); expected refusals are counted by errno, never fatal.
"""
import errno
import hashlib
import json
import os
import random
import stat
import sys
import time

OPS = ("create", "write", "append", "truncate", "rename", "link", "unlink",
       "mkdir", "rmdir", "stat", "readdir", "read")
WEIGHTS = (14, 10, 8, 6, 10, 5, 10, 6, 4, 10, 5, 8)


class Worker:
    def __init__(self, root, seed, links=True):
        self.root = root
        self.weights = WEIGHTS if links else tuple(
            0 if op == "link" else w for op, w in zip(OPS, WEIGHTS))
        self.rng = random.Random(seed)
        self.dirs = [root]          # directories this worker made
        self.files = []             # paths of names of regular files
        self.serial = 0
        self.errors = {}

    def new_name(self, prefix):
        self.serial += 1
        return "%s%d" % (prefix, self.serial)

    def pick_dir(self):
        return self.rng.choice(self.dirs)

    def pick_file(self):
        return self.rng.choice(self.files) if self.files else None

    def data(self, n):
        # deterministic bytes from the generator (not os.urandom)
        return bytes(self.rng.getrandbits(8) for _ in range(min(n, 64))) * (n // 64 + 1)

    def op(self, name):
        r = self.rng
        if name == "create":
            p = os.path.join(self.pick_dir(), self.new_name("f"))
            with open(p, "wb") as f:
                f.write(self.data(r.randint(0, 8192))[:r.randint(0, 8192)])
            self.files.append(p)
        elif name in ("write", "append", "truncate", "read"):
            p = self.pick_file()
            if p is None:
                return
            if name == "write":
                off = r.randint(0, 16384)
                buf = self.data(r.randint(1, 4096))
                fd = os.open(p, os.O_WRONLY)
                try:
                    os.pwrite(fd, buf, off)
                finally:
                    os.close(fd)
            elif name == "append":
                with open(p, "ab") as f:
                    f.write(self.data(r.randint(1, 2048)))
            elif name == "truncate":
                os.truncate(p, r.randint(0, 12000))
            else:
                with open(p, "rb") as f:
                    f.read()
        elif name == "rename":
            p = self.pick_file()
            if p is None:
                return
            q = os.path.join(self.pick_dir(), self.new_name("r"))
            if r.random() < 0.3 and len(self.files) > 1:
                q = self.pick_file()        # over another file
            if p == q:
                return
            os.rename(p, q)
            # p and q now name the same file, if they were links of
            # one: keep the lists as the filesystem has them
            self.files = [x for x in self.files if x not in (p, q)]
            self.files.append(q)
        elif name == "link":
            p = self.pick_file()
            if p is None:
                return
            q = os.path.join(self.pick_dir(), self.new_name("l"))
            os.link(p, q)
            self.files.append(q)
        elif name == "unlink":
            p = self.pick_file()
            if p is None:
                return
            os.unlink(p)
            self.files.remove(p)
        elif name == "mkdir":
            if len(self.dirs) >= 40:
                return
            p = os.path.join(self.pick_dir(), self.new_name("d"))
            os.mkdir(p)
            self.dirs.append(p)
        elif name == "rmdir":
            if len(self.dirs) < 2:
                return
            p = r.choice(self.dirs[1:])
            os.rmdir(p)             # ENOTEMPTY when it has names
            self.dirs.remove(p)
        elif name == "stat":
            p = self.pick_file()
            if p is not None:
                os.lstat(p)
        elif name == "readdir":
            os.listdir(self.pick_dir())

    def run(self, n):
        for _ in range(n):
            name = self.rng.choices(OPS, self.weights)[0]
            try:
                self.op(name)
            except OSError as e:
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                k = errno.errorcode[e.errno]
                self.errors[k] = self.errors.get(k, 0) + 1


def run(root, ops, procs, seed, links=True):
    t0 = time.time()
    pids = []
    rfds = []
    for i in range(procs):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            code = 0
            try:
                d = os.path.join(root, "p%d" % i)
                os.mkdir(d)
                wk = Worker(d, seed * 1000 + i, links)
                wk.run(ops // procs + (1 if i < ops % procs else 0))
                os.write(w, json.dumps(wk.errors).encode())
            except BaseException as e:   # noqa: B902 - reported, then exit
                os.write(w, json.dumps({"exception": repr(e)}).encode())
                code = 1
            finally:
                os._exit(code)
        os.close(w)
        pids.append(pid)
        rfds.append(r)
    errors = {}
    failed = []
    for pid, r in zip(pids, rfds):
        out = b""
        while True:
            b = os.read(r, 65536)
            if not b:
                break
            out += b
        os.close(r)
        _, status = os.waitpid(pid, 0)
        got = json.loads(out.decode() or "{}")
        if status != 0 or "exception" in got:
            failed.append(got.get("exception", "status %d" % status))
        for k, v in got.items():
            if k != "exception":
                errors[k] = errors.get(k, 0) + v
    res = {"ops": ops, "procs": procs, "seconds": round(time.time() - t0, 3),
           "errors": errors}
    if failed:
        res["failed"] = failed
    return res


def digest(root):
    out = []
    for dp, dns, fns in os.walk(root):
        dns.sort()
        for n in sorted(dns + fns):
            p = os.path.join(dp, n)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if stat.S_ISDIR(st.st_mode):
                out.append({"path": rel, "type": "dir", "nlink": st.st_nlink})
            else:
                with open(p, "rb") as f:
                    h = hashlib.sha256(f.read()).hexdigest()
                out.append({"path": rel, "type": "file", "size": st.st_size,
                            "nlink": st.st_nlink, "sha256": h})
    return sorted(out, key=lambda e: e["path"])


def main(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=("run", "digest"))
    ap.add_argument("root")
    ap.add_argument("--ops", type=int, default=5000)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-links", action="store_true",
                    help="no hard links (for s3fs and rclone, which have none)")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        res = run(a.root, a.ops, a.procs, a.seed, not a.no_links)
        print(json.dumps(res))
        return 1 if "failed" in res else 0
    for e in digest(a.root):
        print(json.dumps(e, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
