"""faultproxy.py - a fault-injecting TCP proxy between objfs and the S3
server of the tests (fs_suite.py's outage, error and hedging checks, and
bench/hedge.sh)."""
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


def main():
    """python3 faultproxy.py HOST PORT STALL_GET_P PORTFILE: serves until
    killed (SIGTERM), the port it listens on written to PORTFILE; at exit,
    "GETS STALLS" is appended to PORTFILE."""
    import signal
    import sys
    import threading
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
