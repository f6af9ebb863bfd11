"""Shared helpers for the objfs CSI integration tests.

A real gRPC client (Debian's python3-grpcio) talks to a real objfs-csi over a
unix socket. The CSI Python stubs are generated at run time from
proto/csi.proto with grpc_tools (python3-grpc-tools), into a temp directory.
Every test prints 'N passed, N failed' and exits non-zero on any failure.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

import grpc

BUILDDIR = os.environ.get("OBJFS_BUILDDIR", os.getcwd())
# No test ever asks the real EC2 instance metadata (169.254.169.254): a
# process without keys ends its credential chain there unless this says
# no (common/creds.h); the IMDS tests point AWS_EC2_METADATA_SERVICE_ENDPOINT
# at their fake server on 127.0.0.1 and drop this themselves.  Nor do the
# tests read the machine's ~/.aws files.
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
os.environ.pop("AWS_EC2_METADATA_SERVICE_ENDPOINT", None)
os.environ.setdefault("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/objfs-test/credentials")
os.environ.setdefault("AWS_CONFIG_FILE", "/nonexistent/objfs-test/config")
SRCDIR = os.environ.get("OBJFS_SRCDIR", os.getcwd())
CSI_BIN = os.path.join(BUILDDIR, "objfs-csi")
MOUNT_BIN = os.path.join(BUILDDIR, "objfs-mount")


def load_csi_stubs(workdir):
    """Compiles proto/csi.proto into workdir and imports csi_pb2(_grpc)."""
    from grpc_tools import protoc

    out = os.path.join(workdir, "pb")
    os.makedirs(out, exist_ok=True)
    inc = os.path.join(os.path.dirname(protoc.__file__), "_proto")
    args = ["protoc", "-I" + os.path.join(SRCDIR, "proto"), "-I/usr/include"]
    if os.path.isdir(inc):
        args.append("-I" + inc)
    args += ["--python_out=" + out, "--grpc_python_out=" + out,
             os.path.join(SRCDIR, "proto", "csi.proto")]
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed on csi.proto")
    sys.path.insert(0, out)
    import csi_pb2
    import csi_pb2_grpc
    return csi_pb2, csi_pb2_grpc


class Driver:
    """An objfs-csi process on a socket in its own temp dir."""

    def __init__(self, workdir, mode="all", node_id="node-1", extra=(),
                 env=None, name="csi"):
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir, exist_ok=True)
        self.sock = os.path.join(self.dir, "csi.sock")
        self.endpoint = "unix://" + self.sock
        self.state = os.path.join(self.dir, "state")
        self.log_path = os.path.join(self.dir, "objfs-csi.log")
        self.args = [CSI_BIN, "--endpoint", self.endpoint, "--mode", mode,
                     "--state-dir", self.state, "--log-level", "debug"]
        if node_id:
            self.args += ["--node-id", node_id]
        self.args += list(extra)
        self.env = dict(os.environ)
        self.env.update(env or {})
        self.proc = None
        self.channel = None

    def start(self, wait=True):
        self.logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.logf,
                                     stderr=subprocess.STDOUT, env=self.env,
                                     stdin=subprocess.DEVNULL)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("objfs-csi exited with %d:\n%s" %
                                   (self.proc.returncode, self.log()))
            if os.path.exists(self.sock):
                self.channel = grpc.insecure_channel(self.endpoint)
                try:
                    grpc.channel_ready_future(self.channel).result(timeout=2)
                    return
                except grpc.FutureTimeoutError:
                    self.channel.close()
                    self.channel = None
            time.sleep(0.05)
        raise RuntimeError("objfs-csi did not come up:\n" + self.log())

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Stops the process; returns its exit code."""
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError("objfs-csi did not stop within %ds" % timeout)
        self.logf.close()
        check_sanitizer_log(self.log())
        return self.proc.returncode


def check_sanitizer_log(text):
    """Fails when a sanitizer (ASan, LSan, UBSan) reported anything."""
    for marker in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                   "runtime error:"):
        assert marker not in text, "sanitizer report:\n" + text[-4000:]


def raw_call(channel, path, body, timeout=10):
    """Calls path with raw request bytes; returns (code, details, bytes)."""
    fn = channel.unary_unary(path, request_serializer=None,
                             response_deserializer=None)
    try:
        resp = fn(body, timeout=timeout)
        return grpc.StatusCode.OK, "", resp
    except grpc.RpcError as e:
        return e.code(), e.details(), None


def expect_error(fn, code, *args, **kwargs):
    """Runs fn and asserts it fails with code; returns the details."""
    try:
        fn(*args, **kwargs)
    except grpc.RpcError as e:
        assert e.code() == code, "expected %s, got %s: %s" % (code, e.code(), e.details())
        return e.details()
    raise AssertionError("expected %s, the call succeeded" % code)


class Runner:
    """Runs named test functions, counts, prints the closing line."""

    def __init__(self, suite):
        self.suite = suite
        self.passed = 0
        self.failed = 0

    def run(self, name, fn, *args):
        t0 = time.time()
        try:
            fn(*args)
        except Exception:  # noqa: BLE001 - report every failure
            self.failed += 1
            print("FAIL: %s: %s (%.1fs)" % (self.suite, name, time.time() - t0))
            traceback.print_exc(file=sys.stdout)
        else:
            self.passed += 1
            print("ok: %s: %s (%.1fs)" % (self.suite, name, time.time() - t0))
        sys.stdout.flush()

    def finish(self):
        print("%s: %d passed, %d failed" % (self.suite, self.passed, self.failed))
        return 0 if self.failed == 0 and self.passed > 0 else 1


def read_env(path):
    """The KEY=VALUE lines of a test server's env file (tests/s3server)."""
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if "=" in line and not line.startswith("#"):
                k, v = line.split("=", 1)
                env[k] = v.strip("'\"")
    return env


def tempdir(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    return d, lambda: shutil.rmtree(d, ignore_errors=True)
