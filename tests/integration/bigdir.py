"""bigdir.py - revalidation cost tests of fs_suite.py (issues 31, 33 and
34): a large directory read file by file is renewed, not listed whole
each dir_ttl; a single writer's load (fsstress.py) asks the store little
more than its own operations need.  Run by fs_suite.py (local and s3)
like its own tests; they count requests (the mount's metrics), never
time."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


class _Suite:
    """fs_suite.py's helpers (its __main__ module: importing it again
    would run a second copy)."""
    def __getattr__(self, name):
        return getattr(sys.modules["__main__"], name)


fsu = _Suite()

HERE = os.path.dirname(os.path.abspath(__file__))
FSSTRESS = os.path.join(HERE, "fsstress.py")


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


def metric(m, name):
    return int(fsu.scrape(m).get(name, 0))


def write_many(d, names):
    todo = list(names)
    lock = threading.Lock()
    errs = []

    def writer():
        while True:
            with lock:
                if not todo:
                    return
                n = todo.pop()
            try:
                fsu.wfile(d + "/" + n, n.encode())
            except OSError as e:
                errs.append(e)
                return
    ts = [threading.Thread(target=writer) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    fsu.check(not errs, "writing %d files: %s" % (len(names), errs[:3]))


def t_bigdir_cat(env):
    """cat of every file of a 5,000-name directory (5 LIST pages) sends
    one whole listing of it: past dir_ttl its listing is renewed (a LIST
    of its tail and its index's new segments: objfs_fs_listings_renewed_
    total), not listed whole again, whatever the time the reads take (a
    whole listing is due again only 60 x dir_ttl after the first: allowed
    for, by the reads' duration, so the test holds on a slow machine).
    Then a name another objfs mount writes between the listed names and
    one another client writes after the last show in the reader's listing
    (the index; the tail LIST), polled with a generous deadline."""
    n = 5000
    pages = n // 1000
    url = env.volume("bigdir")
    w = env.mount(url)
    d = w["dir"] + "/d"
    os.mkdir(d)
    names = ["f%05d" % i for i in range(n)]
    write_many(d, names)
    env.umount(w)                       # its index written
    r = env.mount(url)
    rd = r["dir"] + "/d"
    r0 = requests(r)
    renewed0 = metric(r, "objfs_fs_listings_renewed_total")
    t0 = time.monotonic()
    listed = sorted(os.listdir(rd))
    fsu.check(listed == names, "listing: %d names, want %d" % (len(listed), n))
    for name in listed:
        with open(rd + "/" + name, "rb") as f:
            got = f.read()
        fsu.check(got == name.encode(), "%s: %r" % (name, got[:20]))
    elapsed = time.monotonic() - t0
    r1 = requests(r)
    renewed = metric(r, "objfs_fs_listings_renewed_total") - renewed0
    lists = delta(r0, r1).get("list", 0)
    # whole listings allowed: 1, and one more per 60 x dir_ttl (1 s) the
    # reads took; a renewal costs 2 LISTs (its tail, its index's
    # segments) and now and then the volume's index catalogue's: 3; 8
    # more: the index read by the first lookups (the LIST of its
    # segments, the catalogue's), the root's listing and the probes of
    # d.  Listed whole each dir_ttl as before, the reads would cost 5
    # LISTs a second.
    whole = 1 + int(elapsed // 60)
    print("  cat of %d files in %.1f s: %s, %d renewals" % (
        n, elapsed, delta(r0, r1), renewed), flush=True)
    fsu.check(lists <= whole * pages + 3 * renewed + 8,
              "cat of %d files in %.0f s: %d LISTs, %d renewals, at most %d "
              "whole listings of %d pages allowed: %s" % (
                  n, elapsed, lists, renewed, whole, pages, delta(r0, r1)))
    if elapsed > 2:
        # the reads outlived dir_ttl: the listing was renewed at least once
        fsu.check(renewed >= 1, "renewed: %d in %.0f s" % (renewed, elapsed))
    # HEADs: a lookup of a name the kernel got from plain readdir (it
    # uses readdirplus for part of a large directory only) is one HEAD,
    # never a HEAD and a LIST; d's own lookup a marker HEAD per entry_ttl
    heads = delta(r0, r1).get("head", 0)
    fsu.check(heads <= n + 20 + 2 * elapsed,
              "HEADs in the cat of %d files in %.0f s: %d" % (n, elapsed, heads))

    # other writers: an objfs mount's new name between the listed ones
    # (its index segment), another client's after the last (the tail)
    w2 = env.mount(url)
    fsu.wfile(w2["dir"] + "/d/f02500x", b"other mount")
    fsu.check(os.listdir(w2["dir"] + "/d") is not None, "w2 lists")
    env.tool(url, "put", "d/zz-other-tool", data=b"tool")
    deadline = time.monotonic() + 120
    want = {"f02500x", "zz-other-tool"}
    seen = set()
    while time.monotonic() < deadline:
        seen = want & set(os.listdir(rd))
        if seen == want:
            break
        time.sleep(0.5)
    fsu.check(seen == want, "names of other writers shown: %s of %s" % (seen, want))
    with open(rd + "/f02500x", "rb") as f:
        fsu.check(f.read() == b"other mount", "the other mount's file read")
    env.umount(w2)
    env.umount(r)


def run_fsstress(root, ops, seed):
    p = subprocess.run([sys.executable, FSSTRESS, "run", root, "--ops", str(ops),
                        "--seed", str(seed)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=1800)
    fsu.check(p.returncode == 0, "fsstress on %s: %s %s" % (
        root, p.stdout.decode()[-500:], p.stderr.decode()[-2000:]))
    return json.loads(p.stdout.decode())


def digest(root):
    p = subprocess.run([sys.executable, FSSTRESS, "digest", root],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    fsu.check(p.returncode == 0, "digest of %s: %s" % (root, p.stderr.decode()[-2000:]))
    return p.stdout.decode().splitlines()


# Requests per operation allowed for fsstress.py's mix.  What its
# operations need, by type (weights of fsstress.py's OPS): create 1 PUT;
# write, append and truncate a GET of the file (or a HEAD at its open)
# and a PUT at its close (3 with the open's revalidation); rename a COPY
# and a DELETE, 1 more for the target (3); link about 4 (the link set's
# data and names); unlink 1 (a share of a DeleteObjects or a DELETE);
# mkdir 1; rmdir 2 (its marker and index); stat, readdir, read at most 1.
# Weighted: 1.85 per operation.  20% on top for the attribute index
# (its segments and their LISTs): 2.2.  Then what the documented windows
# allow per second the load runs, whatever the machine's speed: each of
# the 4 workers works down a path of up to 8 directories, each listed
# again at most once per dir_ttl (1 s), and asks for up to 8 names not
# its own past attr_ttl (1 s), and for a hard link's set and its names:
# at most about 4 x 32 = 125 requests a second of the run, shared by its
# operations (0.025 per operation per second of a 5,000-operation run;
# the 2,000 of an S3 server's run share it too: a fixed 0.025 failed
# there at 3.54 per operation in 49 s under load).  Before issue 34 item 7 the local store
# took 2.66-2.84 per operation in 6-8 s (bound 2.35-2.4), RGW 6.7 in
# 136 s (bound 5.6); after, 1.7-2.1 in 6-17 s and 4.4 in 152 s.
FSSTRESS_REQS_PER_OP = 2.2
FSSTRESS_REQS_S = 125


def t_fsstress(env):
    """fsstress.py (4 workers, 5,000 operations: creates, writes,
    truncates, renames, hard links, unlinks, mkdir, rmdir) on the mount
    and on a local directory: the same tree (names, types, sizes, link
    counts, bytes), the same refusals (ENOTEMPTY), and at most
    FSSTRESS_REQS_PER_OP store requests per operation.  Its time beside
    the local directory's: bench/fsstress.sh.  5,000 operations on the
    local store (issue 34's load); 2,000 of the same mix on an S3 server,
    where it checks correctness (5,000 took 306 s on Swift, a third of
    the suite's time)."""
    ops = 5000 if env.kind == "local" else 2000
    ref = tempfile.mkdtemp(prefix="fsstress-ref-", dir=env.work)
    want = run_fsstress(ref, ops, 7)
    url = env.volume("fsstress")
    m = env.mount(url)
    r0 = requests(m)
    got = run_fsstress(m["dir"], ops, 7)
    r1 = requests(m)
    fsu.check(got["errors"] == want["errors"],
              "refusals: %s, local %s" % (got["errors"], want["errors"]))
    a, b = digest(ref), digest(m["dir"])
    diff = sorted(set(a) ^ set(b))
    fsu.check(a == b, "the tree differs from the local one (%d lines, %d "
              "local): %s" % (len(b), len(a), diff[:6]))
    env.umount(m)
    m = env.mount(url)
    c = digest(m["dir"])
    env.umount(m)
    fsu.check(c == a, "after a remount the tree differs: %s" %
              sorted(set(a) ^ set(c))[:6])
    dr = delta(r0, r1)
    total = sum(dr.values())
    per_op = total / ops
    print("  fsstress: %d ops in %.1f s (local %.1f s), %d requests, %.2f per "
          "op: %s" % (ops, got["seconds"], want["seconds"], total, per_op, dr),
          flush=True)
    bound = FSSTRESS_REQS_PER_OP + FSSTRESS_REQS_S * got["seconds"] / ops
    fsu.check(per_op <= bound,
              "%.2f requests per operation in %.0f s (at most %.2f): %s" % (
                  per_op, got["seconds"], bound, dr))


TESTS = [t_bigdir_cat, t_fsstress]
