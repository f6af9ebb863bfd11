"""series.py - the workloads and the report of bench/series.sh (run by it
with /usr/bin/python3; never alone).  Each workload prints "key=value"
words on one line, which series.sh appends to its results:

  tree ROOT N DIRS          a source tree of N files (100 B to 64 KiB of
                            text, seeded) in DIRS directories of 3 subdirs
  create DIR N              N serial creates of 1 byte (open, write,
                            close): app_s, mean_ms, p50_ms, p99_ms
  append PATH KIB MIB       writes MIB MiB in writes of KIB KiB, fsync
                            after each: app_s, fsyncs, written
  sqlsel DB N SEED          N SELECTs of random rows: app_s, ops
  sqlupd DB N SEED MAX_S    N UPDATE transactions of a random row (one
                            COMMIT each), stopping after MAX_S seconds:
                            app_s, ops (the COMMITs done)
  report OUT RUNS           the tables of every run, then min/median/max
                            over the runs (OUT/run*/results, proxy.json)
"""
import os
import random
import sqlite3
import sys
import time


def tree(root, n, ndirs):
    rnd = random.Random(18)
    words = [("w%d" % i).encode() for i in range(500)]
    for i in range(n):
        d = os.path.join(root, "dir%03d" % (i % ndirs), "sub%d" % (i % 3))
        os.makedirs(d, exist_ok=True)
        size = int(100 * (640 ** rnd.random()))
        body = b" ".join(rnd.choice(words) for _ in range(size // 4 + 1))[:size]
        with open(os.path.join(d, "file%05d.c" % i), "wb") as f:
            f.write(body + b"\n")


def create(d, n):
    lat = []
    t0 = time.monotonic()
    for i in range(n):
        a = time.monotonic()
        with open("%s/c%06d" % (d, i), "wb") as f:
            f.write(b"x")
        lat.append(time.monotonic() - a)
    app = time.monotonic() - t0
    lat.sort()
    print("app_s=%.3f mean_ms=%.2f p50_ms=%.2f p99_ms=%.2f" % (
        app, 1000 * sum(lat) / n, 1000 * lat[n // 2],
        1000 * lat[min(n - 1, int(n * 0.99))]))


def append(path, kib, mib):
    chunk = kib * 1024
    total = mib * 1048576
    rnd = random.Random(33)
    pool = rnd.randbytes(1 << 20)
    t0 = time.monotonic()
    done = 0
    fsyncs = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while done < total:
            n = min(chunk, total - done)
            off = 0
            while off < n:
                # incompressible bytes, never the same 1 MiB twice in a row
                k = min(n - off, len(pool))
                s = rnd.randrange(0, len(pool) - k + 1)
                os.write(fd, pool[s:s + k])
                off += k
            done += n
            os.fsync(fd)
            fsyncs += 1
    finally:
        os.close(fd)
    print("app_s=%.3f fsyncs=%d written=%d" % (time.monotonic() - t0, fsyncs, done))


def sqlsel(db, n, seed):
    rnd = random.Random(seed)
    c = sqlite3.connect(db)
    rows = c.execute("SELECT max(id) FROM t").fetchone()[0]
    t0 = time.monotonic()
    got = 0
    for _ in range(n):
        r = c.execute("SELECT length(v) FROM t WHERE id = ?",
                      (rnd.randint(1, rows),)).fetchone()
        got += r is not None
    app = time.monotonic() - t0
    c.close()
    if got != n:
        sys.exit("series.py: %d of %d rows found" % (got, n))
    print("app_s=%.3f ops=%d" % (app, n))


def sqlupd(db, n, seed, max_s):
    rnd = random.Random(seed)
    # autocommit: every UPDATE is its own transaction, one COMMIT
    c = sqlite3.connect(db, isolation_level=None)
    rows = c.execute("SELECT max(id) FROM t").fetchone()[0]
    t0 = time.monotonic()
    done = 0
    while done < n and time.monotonic() - t0 < max_s:
        c.execute("UPDATE t SET v = randomblob(900) WHERE id = ?",
                  (rnd.randint(1, rows),))
        done += 1
    app = time.monotonic() - t0
    c.close()
    print("app_s=%.3f ops=%d" % (app, done))


# --- report ---------------------------------------------------------------

# per step kind: (what the figures are per, the columns)
def load(out, run):
    import json
    rd = os.path.join(out, "run%d" % run)
    stats = {}
    p = os.path.join(rd, "proxy.json")
    if os.path.exists(p):
        stats = json.load(open(p))
    rows = []
    for line in open(os.path.join(rd, "results")):
        f = line.split()
        if len(f) < 3:
            continue
        r = {"tool": f[0], "step": f[1], "label": f[2]}
        for w in f[3:]:
            k, v = w.split("=", 1)
            r[k] = v
        st = stats.get(r["label"], {})
        r["sent"] = st.get("sent", 0)
        r["recv"] = st.get("recv", 0)
        req = st.get("requests", {})
        r["req"] = sum(req.values())
        r["reqs"] = " ".join("%s=%d" % kv for kv in sorted(req.items()))
        rows.append(r)
    return rows


def figures(r):
    """The figures of one step of one tool: {name: value}; the first is
    the one tool ratios are taken of (a time: smaller is better, or a
    rate: larger is better, named so)."""
    s = r["step"]
    f = {}
    num = lambda k: float(r.get(k, "nan"))
    if s.startswith("ls"):
        n = num("files")
        f["s"] = num("s")
        f["req"] = r["req"]
        f["req/1k"] = 1000 * r["req"] / n
    elif s == "create":
        n = num("files")
        f["p50_ms"] = num("p50_ms")
        f["mean_ms"] = num("mean_ms")
        f["p99_ms"] = num("p99_ms")
        f["stored_s"] = num("s")
        f["req/file"] = r["req"] / n
        f["sent/file"] = r["sent"] / n
    elif s == "cp-a":
        f["s"] = num("s")
        f["req/file"] = r["req"] / num("files")
        f["sent/byte"] = r["sent"] / num("bytes")
    elif s.startswith("append"):
        f["s"] = num("s")
        f["sent/written"] = r["sent"] / num("written")
        f["req/fsync"] = r["req"] / num("fsyncs")
        f["app_s"] = num("app_s")
    elif s == "sql-select":
        f["s"] = num("app_s")
        f["ms/select"] = 1000 * num("app_s") / num("ops")
        f["req"] = r["req"]
        f["recv_MiB"] = r["recv"] / 1048576
    elif s == "sql-update":
        ops = num("ops")
        f["ms/commit"] = 1000 * num("s") / ops
        f["commits"] = ops
        f["sent_KiB/commit"] = r["sent"] / 1024 / ops
        f["req/commit"] = r["req"] / ops
    elif s.startswith("fio"):
        f["iops"] = num("iops")
        f["MiB/s"] = num("mibs")
        f["req"] = r["req"]
        f["recv/read"] = r["recv"] / max(1.0, num("read_bytes"))
    return f


def ratio(step, name, base, other):
    """other over objfs, > 1 where objfs is better"""
    if base is None or other is None or base != base or other != other:
        return None
    rate = name in ("iops", "MiB/s")
    try:
        return base / other if rate else other / base
    except ZeroDivisionError:
        return None


def table(rows):
    tools = []
    steps = []
    by = {}
    for r in rows:
        if r["tool"] not in tools:
            tools.append(r["tool"])
        if r["step"] not in steps:
            steps.append(r["step"])
        by[(r["tool"], r["step"])] = r
    out = {}
    lines = []
    for s in steps:
        lines.append("%s:" % s)
        for t in tools:
            r = by.get((t, s))
            if r is None:
                continue
            f = figures(r)
            out[(t, s)] = f
            lines.append("  %-12s %s   %s" % (t, "  ".join(
                "%s=%s" % (k, fmt(v)) for k, v in f.items()), r["reqs"]))
        base = out.get(("objfs", s))
        if base:
            k = next(iter(base))
            rr = []
            for t in tools:
                if t != "objfs" and (t, s) in out:
                    x = ratio(s, k, base[k], out[(t, s)][k])
                    out[(t, s)]["ratio"] = x
                    rr.append("%s/objfs %s" % (t, fmt(x)))
            if rr:
                lines.append("  %s (of %s; > 1: objfs is better)" % (", ".join(rr), k))
    return lines, out


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, int):
        return str(v)
    if v != v:
        return "-"
    if abs(v) >= 100:
        return "%.0f" % v
    if abs(v) >= 10:
        return "%.1f" % v
    if abs(v) >= 1:
        return "%.2f" % v
    return "%.3f" % v


def report(out, runs):
    every = []
    for run in range(1, runs + 1):
        p = os.path.join(out, "run%d" % run, "results")
        if not os.path.exists(p):
            continue
        lines, figs = table(load(out, run))
        print("run %d" % run)
        print("\n".join(lines))
        every.append(figs)
    if len(every) < 2:
        return
    print()
    print("min/median/max over %d runs" % len(every))
    keys = []
    for figs in every:
        for k in figs:
            if k not in keys:
                keys.append(k)
    step = None
    for t, s in sorted(keys, key=lambda k: (next(i for i, x in enumerate(keys) if x[1] == k[1]), k[0] != "objfs")):
        if s != step:
            print("%s:" % s)
            step = s
        names = []
        for figs in every:
            for n in figs.get((t, s), {}):
                if n not in names:
                    names.append(n)
        cells = []
        for n in names:
            v = sorted(x for x in (figs.get((t, s), {}).get(n) for figs in every)
                       if x is not None and x == x)
            if v:
                cells.append("%s=%s/%s/%s" % (n, fmt(v[0]), fmt(v[len(v) // 2]), fmt(v[-1])))
        print("  %-12s %s" % (t, "  ".join(cells)))


def main():
    a = sys.argv[1:]
    if a[0] == "tree":
        tree(a[1], int(a[2]), int(a[3]))
    elif a[0] == "create":
        create(a[1], int(a[2]))
    elif a[0] == "append":
        append(a[1], int(a[2]), int(a[3]))
    elif a[0] == "sqlsel":
        sqlsel(a[1], int(a[2]), int(a[3]))
    elif a[0] == "sqlupd":
        sqlupd(a[1], int(a[2]), int(a[3]), float(a[4]))
    elif a[0] == "report":
        report(a[1], int(a[2]))
    else:
        sys.exit("series.py: unknown command %s" % a[0])


if __name__ == "__main__":
    main()
