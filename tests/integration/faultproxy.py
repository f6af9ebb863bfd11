"""faultproxy.py - a fault-injecting TCP proxy between objfs and the S3
server of the tests (fs_suite.py's outage, error and hedging checks, and
bench/hedge.sh), and a counting, delaying one (DelayProxy, bench/overload.sh)."""
import random


class FaultProxy:
    """A TCP proxy to the S3 server that can be switched to reset every
    connection (an unreachable store), or to stall answers (stop passing
    the server's bytes on, with a seeded probability per chunk: stall_p,
    or a share of the ranged GETs, after a random number of their bytes:
    stall_get_p), for the error checks and bench/hedge.sh."""

    def __init__(self, host, port):
        import socket
        import threading
        self.socket = socket
        self.upstream = (host, port)
        self.failing = False
        self.stall_p = 0.0
        self.stall_get_p = 0.0
        self.get_credit = 0.5
        self.stalled_keys = set()
        self.stalls = 0
        self.stalled = []               # (request line, Range) of each
        self.gets = 0
        self.rng = random.Random(1234)
        self.conns = []
        self.lock = threading.Lock()
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _kill(self, s):
        try:
            s.setsockopt(self.socket.SOL_SOCKET, self.socket.SO_LINGER,
                         b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
        except OSError:
            pass

    def _pump(self, a, b, conn, answers=False):
        try:
            while True:
                data = a.recv(1 << 16)
                if not data:
                    break
                if not answers and data.startswith(b"GET ") and b"\r\nRange:" in data:
                    self._ranged_get(data, conn)
                stall = False
                if answers and conn.get("stall_after") is not None:
                    left = conn["stall_after"]
                    if len(data) > left:
                        # counted here: an answer shorter than its
                        # stall point never stalls
                        stall = True
                        data = data[:left]
                        with self.lock:
                            self.stalls += 1
                            self.stalled.append(conn.get("stall_key"))
                    else:
                        conn["stall_after"] = left - len(data)
                elif answers and self.stall_p > 0:
                    with self.lock:
                        stall = self.rng.random() < self.stall_p
                        self.stalls += stall
                if stall:
                    if data:
                        b.sendall(data)
                    # hold the answer until the client gives up
                    while b.recv(1 << 16):
                        pass
                    break
                b.sendall(data)
        except OSError:
            pass
        for x in (a, b):
            try:
                x.shutdown(self.socket.SHUT_RDWR)
            except OSError:
                pass

    def _ranged_get(self, data, conn):
        """A ranged GET: one in 1/stall_get_p (every tenth for 0.1,
        counted, so deterministic) has its answer stall after a random
        number of bytes (maybe none; counted in stalls when the answer
        is longer, so really stalls).  A stall is the connection's, not
        the request's: the same request again (a retry, a hedge) does not
        stall."""
        line = data.split(b"\r\n", 1)[0]
        rng = [h for h in data.split(b"\r\n") if h.lower().startswith(b"range:")]
        key = (line, rng[0] if rng else b"")
        with self.lock:
            self.gets += 1
            if self.stall_get_p <= 0 or key in self.stalled_keys:
                return
            self.get_credit += self.stall_get_p
            if self.get_credit >= 1.0:
                self.get_credit -= 1.0
                self.stalled_keys.add(key)
                conn["stall_after"] = self.rng.randrange(0, 1 << 20)
                conn["stall_key"] = key

    def _accept(self):
        import threading
        while not self.stopped:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            if self.failing:
                self._kill(c)
                continue
            try:
                u = self.socket.create_connection(self.upstream)
            except OSError:
                self._kill(c)
                continue
            with self.lock:
                self.conns += [c, u]
            conn = {}
            threading.Thread(target=self._pump, args=(c, u, conn), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c, conn, True), daemon=True).start()

    def fail(self, on):
        """on: reset open connections and refuse new ones."""
        self.failing = on
        if on:
            with self.lock:
                for s in self.conns:
                    self._kill(s)
                self.conns = []

    def close(self):
        self.stopped = True
        self.fail(True)
        self.ls.close()


class DelayProxy:
    """A counting proxy that delays requests, for bench/overload.sh: one
    listening port per label (a client and a phase), all to the same
    server.  It follows the HTTP/1.1 requests of each connection
    (Content-Length and chunked bodies) and holds a chosen request for
    `delay` seconds before passing its first byte on (the client then
    sees no byte move, its body included, for that long).  Chosen: part
    uploads (PUT with partNumber=) and GETs of objects (not bucket
    listings), each with probability p of its label, decided by a hash of
    the seed, the request (method, path, partNumber, Range; not the
    uploadId, which differs each run) and how many times the same request
    was seen before on that label: deterministic whatever the timing, and
    a retry is decided anew.  Counted per label: bytes in each direction
    (headers included), requests per method (PUT parts apart, "PUTpart"),
    requests delayed, connections."""

    def __init__(self, host, port, labels, delay=5.0, seed=1):
        import socket
        import threading
        self.socket = socket
        self.upstream = (host, port)
        self.delay = delay
        self.seed = seed
        self.lock = threading.Lock()
        self.stats = {}
        self.seen = {}
        self.ports = {}
        self.p = {}
        for label, p in labels:
            ls = socket.socket()
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind(("127.0.0.1", 0))
            ls.listen(128)
            self.ports[label] = ls.getsockname()[1]
            self.p[label] = p
            self.stats[label] = {"sent": 0, "recv": 0, "conns": 0,
                                 "delayed": 0, "requests": {}}
            threading.Thread(target=self._accept, args=(ls, label),
                             daemon=True).start()

    def _accept(self, ls, label):
        import threading
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            try:
                u = self.socket.create_connection(self.upstream)
            except OSError:
                c.close()
                continue
            for s in (c, u):
                s.setsockopt(self.socket.IPPROTO_TCP, self.socket.TCP_NODELAY, 1)
            with self.lock:
                self.stats[label]["conns"] += 1
            threading.Thread(target=self._requests, args=(c, u, label),
                             daemon=True).start()
            threading.Thread(target=self._answers, args=(u, c, label),
                             daemon=True).start()

    def _close(self, a, b):
        for x in (a, b):
            try:
                x.shutdown(self.socket.SHUT_RDWR)
            except OSError:
                pass

    def _answers(self, u, c, label):
        st = self.stats[label]
        try:
            while True:
                data = u.recv(1 << 16)
                if not data:
                    break
                c.sendall(data)
                with self.lock:
                    st["recv"] += len(data)
        except OSError:
            pass
        self._close(u, c)

    def _chosen(self, label, method, target, headers):
        """Whether this request is delayed (and counts it)."""
        import hashlib
        from urllib.parse import parse_qs, urlsplit
        t = urlsplit(target)
        q = parse_qs(t.query, keep_blank_values=True)
        st = self.stats[label]
        kind = method
        if method == "PUT" and "partNumber" in q:
            kind = "PUTpart"
        obj = t.path.strip("/").count("/") >= 1     # /bucket/key
        cand = kind == "PUTpart" or (method == "GET" and obj and
                                     "uploadId" not in q and "uploads" not in q)
        key = "%s %s %s %s" % (method, t.path, q.get("partNumber", [""])[0],
                               headers.get("range", ""))
        with self.lock:
            st["requests"][kind] = st["requests"].get(kind, 0) + 1
            if not cand or self.p[label] <= 0:
                return False
            n = self.seen.get((label, key), 0)
            self.seen[(label, key)] = n + 1
            h = hashlib.sha256(("%d|%s|%d" % (self.seed, key, n)).encode()).digest()
            chosen = int.from_bytes(h[:8], "big") / 2.0 ** 64 < self.p[label]
            if chosen:
                st["delayed"] += 1
            return chosen

    def _requests(self, c, u, label):
        """Client to server: parses the requests as they pass."""
        import time
        st = self.stats[label]
        buf = b""
        body = 0            # bytes of the current body still to pass on
        chunked = False     # in a chunked body (parsed from buf)
        try:
            while True:
                data = c.recv(1 << 16)
                if not data:
                    break
                with self.lock:
                    st["sent"] += len(data)
                buf += data
                while buf:
                    if body > 0:
                        n = min(body, len(buf))
                        u.sendall(buf[:n])
                        buf = buf[n:]
                        body -= n
                        continue
                    if chunked:
                        # size line, then size bytes and CRLF; 0: trailers
                        i = buf.find(b"\r\n")
                        if i < 0:
                            break
                        size = int(buf[:i].split(b";")[0], 16)
                        if size == 0:
                            j = buf.find(b"\r\n\r\n")
                            if j < 0:
                                break
                            u.sendall(buf[:j + 4])
                            buf = buf[j + 4:]
                            chunked = False
                            continue
                        u.sendall(buf[:i + 2])
                        buf = buf[i + 2:]
                        body = size + 2
                        continue
                    i = buf.find(b"\r\n\r\n")
                    if i < 0:
                        break
                    head = buf[:i + 4]
                    buf = buf[i + 4:]
                    lines = head.decode("latin-1").split("\r\n")
                    parts = lines[0].split(" ")
                    method, target = parts[0], parts[1] if len(parts) > 1 else "/"
                    headers = {}
                    for line in lines[1:]:
                        if ":" in line:
                            k, v = line.split(":", 1)
                            headers[k.strip().lower()] = v.strip()
                    if "chunked" in headers.get("transfer-encoding", "").lower():
                        chunked = True
                    else:
                        body = int(headers.get("content-length", "0") or 0)
                    if self._chosen(label, method, target, headers):
                        time.sleep(self.delay)
                    u.sendall(head)
        except (OSError, ValueError):
            pass
        self._close(c, u)


def delay_main(argv):
    """python3 faultproxy.py delay HOST PORT DELAY SEED PORTFILE STATSFILE
    LABEL=P...: a DelayProxy; "LABEL PORT" lines in PORTFILE once it
    listens; the counts (JSON) written to STATSFILE on SIGUSR1 and at
    SIGTERM, when it exits."""
    import json
    import signal
    import threading
    host, port, delay, seed, portfile, statsfile = argv[:6]
    labels = []
    for a in argv[6:]:
        k, v = a.split("=", 1)
        labels.append((k, float(v)))
    proxy = DelayProxy(host, int(port), labels, float(delay), int(seed))
    done = threading.Event()

    def dump(*_):
        with proxy.lock:
            text = json.dumps(proxy.stats, indent=1, sort_keys=True)
        with open(statsfile + ".tmp", "w") as f:
            f.write(text)
        import os
        os.rename(statsfile + ".tmp", statsfile)

    signal.signal(signal.SIGUSR1, dump)
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    with open(portfile + ".tmp", "w") as f:
        for label, _ in labels:
            f.write("%s %d\n" % (label, proxy.ports[label]))
    import os
    os.rename(portfile + ".tmp", portfile)
    while not done.wait(1):
        pass
    dump()


def main():
    """python3 faultproxy.py HOST PORT STALL_GET_P PORTFILE: serves until
    killed (SIGTERM), the port it listens on written to PORTFILE; at exit,
    "GETS STALLS" is appended to PORTFILE."""
    import signal
    import sys
    import threading
    if sys.argv[1] == "delay":
        delay_main(sys.argv[2:])
        return
    host, port, p, portfile = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    proxy = FaultProxy(host, port)
    proxy.stall_get_p = p
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    with open(portfile, "w") as f:
        f.write("%d\n" % proxy.port)
    done.wait()
    with open(portfile, "a") as f:
        f.write("%d %d\n" % (proxy.gets, proxy.stalls))
    proxy.close()


if __name__ == "__main__":
    main()
