"""Integration test of objfs's Prometheus metrics, scraped by a real
Prometheus.

Starts a real S3 server (OpenStack Swift with s3api, tests/s3server/
swift.sh), a real objfs-csi (mode all, --metrics-address) that creates,
stages and publishes a volume with the provisioner's PV/PVC names, a
standalone objfs-mount with -o metrics=127.0.0.1:PORT, and a real
Prometheus (Debian's package) on 127.0.0.1 with a temporary configuration
and storage directory, scraping both every second.  While a workload runs
it asks Prometheus's HTTP API and checks that the series exist and moved
as the workload says: FUSE operations and errors by errno, bytes written
and read by applications, store requests by op and result and HTTP
requests by status, retries, stalls and give-ups after the S3 server is
frozen (SIGSTOP), CSI calls by method and code, mounts by state, a repair,
the mount's metrics under volume_id/pv/pvc/pvc_namespace on the node, and
the metrics socket answering again after the mount's server is replaced.
`promtool check metrics` must accept every exposition.  Needs root,
/dev/fuse, Swift and prometheus; exits 77 only when one is absent.
"""
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csilib  # noqa: E402
import csi_node  # noqa: E402  (its process and mount helpers)

SWIFT = csi_node.SWIFT
MiB = 1 << 20


def skip_if_absent():
    csi_node.skip_if_absent()
    for prog in ("prometheus", "promtool"):
        if not any(os.access(os.path.join(d, prog), os.X_OK)
                   for d in ("/usr/bin", "/usr/local/bin")):
            print("SKIP: %s not installed (Debian package prometheus)" % prog)
            sys.exit(77)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


class Prometheus:
    def __init__(self, work, targets):
        self.dir = os.path.join(work, "prometheus")
        os.makedirs(os.path.join(self.dir, "data"))
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                    "scrape_configs:\n")
            for job, addr in targets.items():
                f.write("  - job_name: %s\n    static_configs:\n"
                        "      - targets: ['%s']\n" % (job, addr))
        self.log = open(os.path.join(self.dir, "log"), "wb")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file=" + cfg,
             "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port,
             "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        csi_node.wait_for(self.ready, 30, "prometheus ready")

    def ready(self):
        assert self.proc.poll() is None, "prometheus exited"
        try:
            return "Ready" in http_get(self.url + "/-/ready", 2)
        except OSError:
            return False

    def query(self, q):
        """{frozenset(labels.items()): float} of an instant query."""
        body = json.loads(http_get(self.url + "/api/v1/query?" +
                                   urllib.parse.urlencode({"query": q})))
        assert body["status"] == "success", body
        out = {}
        for r in body["data"]["result"]:
            labels = dict(r["metric"])
            for k in ("job", "instance"):
                labels.pop(k, None)
            out[frozenset(labels.items())] = float(r["value"][1])
        return out

    def value(self, q):
        """The one value of q (0 when no series), summed when several."""
        return sum(self.query(q).values())

    def wait(self, q, pred, what, timeout=30):
        """Waits until pred(value of q) holds; returns the value."""
        last = [None]

        def check():
            last[0] = self.value(q)
            return pred(last[0])
        try:
            csi_node.wait_for(check, timeout, what, step=0.5)
        except AssertionError:
            raise AssertionError("%s: %s is %r" % (what, q, last[0])) from None
        return last[0]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def promtool_check(text, what):
    p = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    assert p.returncode == 0, "promtool rejects the %s exposition:\n%s" % (
        what, p.stdout.decode()[-3000:])


def main():
    skip_if_absent()
    work, rmtree = csilib.tempdir("objfs-metrics-")
    os.chmod(work, 0o755)
    pb, pbg = csilib.load_csi_stubs(work)
    r = csilib.Runner("metrics")
    swift_dir = os.path.join(work, "swift")
    kubelet = os.path.join(work, "kubelet")
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt)
    driver = prom = mount = mount_log = None
    swift_up = False
    frozen = []
    try:
        subprocess.run(["sh", SWIFT, "start", swift_dir], check=True, timeout=120,
                       stdout=subprocess.DEVNULL)
        swift_up = True
        s3 = csilib.read_env(os.path.join(swift_dir, "env"))
        bucket = s3["OBJFS_TEST_S3_BUCKET"]
        creds = os.path.join(work, "plugin-creds")
        with open(creds, "w") as f:
            f.write("access_key_id=%s\nsecret_access_key=%s\n" %
                    (s3["OBJFS_TEST_S3_ACCESS_KEY"], s3["OBJFS_TEST_S3_SECRET_KEY"]))
        os.chmod(creds, 0o600)

        csi_port, mount_port = free_port(), free_port()
        driver = csilib.Driver(work, mode="all", node_id="node-m", extra=[
            "--kubelet-dir", kubelet,
            "--store", "s3://%s/vols" % bucket,
            "--s3-endpoint", s3["OBJFS_TEST_S3_ENDPOINT"],
            "--s3-region", s3["OBJFS_TEST_S3_REGION"],
            "--credentials-file", creds,
            "--mount-program", csilib.MOUNT_BIN,
            "--metrics-address", "127.0.0.1:%d" % csi_port]).start()
        env = dict(os.environ,
                   AWS_ACCESS_KEY_ID=s3["OBJFS_TEST_S3_ACCESS_KEY"],
                   AWS_SECRET_ACCESS_KEY=s3["OBJFS_TEST_S3_SECRET_KEY"])
        mount_log = open(os.path.join(work, "mount.log"), "wb")
        mount = subprocess.Popen(
            [csilib.MOUNT_BIN, "-f", "-o",
             "endpoint=%s,region=%s,spool_dir=%s,metrics=127.0.0.1:%d,"
             "stall_timeout=1,retry_timeout=3,attr_ttl=0,entry_ttl=0,negative_ttl=0"
             % (s3["OBJFS_TEST_S3_ENDPOINT"], s3["OBJFS_TEST_S3_REGION"], work,
                mount_port),
             "s3://%s/standalone" % bucket, mnt],
            env=env, stdout=mount_log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)
        csi_node.wait_for(lambda: csi_node.is_mountpoint(mnt), 20, "the standalone mount")
        prom = Prometheus(work, {"csi": "127.0.0.1:%d" % csi_port,
                                 "mount": "127.0.0.1:%d" % mount_port})
        csi_url = "http://127.0.0.1:%d/metrics" % csi_port
        mount_url = "http://127.0.0.1:%d/metrics" % mount_port

        def up():
            prom.wait('sum(up{job="csi"})', lambda v: v == 1, "csi scraped")
            prom.wait('sum(up{job="mount"})', lambda v: v == 1, "mount scraped")

        payload = os.urandom(8 * MiB)

        def standalone_workload():
            with open(os.path.join(mnt, "big"), "wb") as f:
                f.write(payload)
            for i in range(20):
                with open(os.path.join(mnt, "small-%d" % i), "wb") as f:
                    f.write(b"x" * 1000)
            written = 8 * MiB + 20 * 1000
            # the page cache would answer the read: drop the file's pages
            fd = os.open(os.path.join(mnt, "big"), os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                got = b""
                while True:
                    b = os.read(fd, MiB)
                    if not b:
                        break
                    got += b
            finally:
                os.close(fd)
            assert got == payload
            os.mkdir(os.path.join(mnt, "d"))
            with open(os.path.join(mnt, "d", "x"), "wb"):
                pass
            try:
                os.rmdir(os.path.join(mnt, "d"))
                raise AssertionError("rmdir of a directory with a file succeeded")
            except OSError as e:
                assert e.errno == errno.ENOTEMPTY, e
            q = 'objfs_fs_written_bytes_total{job="mount"}'
            v = prom.wait(q, lambda v: v == written, "bytes written counted")
            print("  written: %d bytes" % v)
            # every byte once (a page the kernel drops under memory
            # pressure before it is copied out may be read twice)
            v = prom.wait('objfs_fs_read_bytes_total{job="mount"}',
                          lambda v: len(payload) <= v <= len(payload) * 1.1,
                          "bytes read counted")
            print("  read: %d bytes" % v)
            prom.wait('objfs_fuse_requests_total{job="mount",op="create"}',
                      lambda v: v >= 21, "creates counted")
            prom.wait('objfs_fuse_request_errors_total{job="mount",op="rmdir",errno="ENOTEMPTY"}',
                      lambda v: v == 1, "the ENOTEMPTY counted")
            prom.wait('objfs_fuse_request_duration_seconds_count{job="mount",op="write"}',
                      lambda v: v >= 8, "write latencies")
            prom.wait('objfs_store_bytes_total{job="mount",direction="written"}',
                      lambda v: written <= v < written + MiB, "store bytes written")
            prom.wait('objfs_store_bytes_total{job="mount",direction="read"}',
                      lambda v: v >= len(payload), "store bytes read")
            prom.wait('objfs_store_requests_total{job="mount",op="put",result="ok"}',
                      lambda v: v >= 21, "PUTs by result")
            prom.wait('objfs_store_requests_total{job="mount",result="not_found"}',
                      lambda v: v >= 1, "lookups of new names: not_found")
            prom.wait('objfs_s3_http_requests_total{job="mount",method="PUT",code="200"}',
                      lambda v: v >= 21, "HTTP PUTs by status")
            prom.wait('objfs_s3_http_requests_total{job="mount",method="HEAD",code="404"}',
                      lambda v: v >= 1, "HTTP 404s")
            prom.wait('objfs_s3_connections_total{job="mount",reused="true"}',
                      lambda v: v >= 1, "connections reused")
            prom.wait('sum(rate(objfs_store_request_duration_seconds_count{job="mount"}[1m]))',
                      lambda v: v > 0, "store latency histogram")
            prom.wait('process_resident_memory_bytes{job="mount"}',
                      lambda v: v > MiB, "RSS")
            # an open file pins its inode (entry_ttl=0: the kernel forgets
            # the others at once)
            with open(os.path.join(mnt, "big"), "rb"):
                prom.wait('objfs_fs_inodes{job="mount"}', lambda v: v >= 1, "inodes")
                prom.wait('objfs_fs_open_handles{job="mount"}', lambda v: v >= 1,
                          "open handles")

        def induced_failure():
            # freeze the S3 server: requests stall, are tried again, and
            # the application gets EIO once retry_timeout (3 s) is spent
            tries = ('(sum(objfs_store_retries_total{job="mount"}) or vector(0)) + '
                     '(sum(objfs_store_retries_exhausted_total{job="mount"}) or vector(0))')
            before = prom.value(tries)
            with open(os.path.join(swift_dir, "run", "proxy.pid")) as f:
                pgid = int(f.read())
            os.killpg(pgid, signal.SIGSTOP)
            frozen.append(pgid)
            try:
                os.stat(os.path.join(mnt, "not-there-while-frozen"))
                raise AssertionError("stat succeeded with the store frozen")
            except OSError as e:
                assert e.errno == errno.EIO, e
            finally:
                os.killpg(pgid, signal.SIGCONT)
                frozen.remove(pgid)
            # a try abandoned as stalled is retried while retry_timeout
            # lasts; on a busy machine the stall threshold (relative to
            # the store's recent silences) may outlast it, and the one try
            # gives up: either way the store's failure is counted
            prom.wait(tries, lambda v: v > before, "retries or a give-up counted")
            prom.wait('sum(objfs_store_retries_exhausted_total{job="mount"})',
                      lambda v: v >= 1, "give-ups counted")
            prom.wait('objfs_s3_transport_errors_total{job="mount",kind="stall"}',
                      lambda v: v >= 1, "stalls counted")
            prom.wait('objfs_store_requests_total{job="mount",result="timeout"}',
                      lambda v: v >= 1, "timed-out requests counted")
            prom.wait('objfs_fuse_request_errors_total{job="mount",errno="EIO"}',
                      lambda v: v >= 1, "the EIO counted")
            # and the mount serves again
            with open(os.path.join(mnt, "after"), "wb") as f:
                f.write(b"ok")

        vol = {}
        staging = os.path.join(kubelet, "plugins/kubernetes.io/csi/objfs.csi.io/m1/globalmount")
        target = os.path.join(kubelet, "pods/pm/volumes/kubernetes.io~csi/pv-m/mount")
        os.makedirs(staging)
        os.makedirs(os.path.dirname(target))
        labels = '{job="csi",pvc="data",pvc_namespace="team-a",pv="pv-m"}'

        def csi_workload():
            cs = pbg.ControllerStub(driver.channel)
            ns = pbg.NodeStub(driver.channel)
            cap = pb.VolumeCapability(
                mount=pb.VolumeCapability.MountVolume(),
                access_mode=pb.VolumeCapability.AccessMode(
                    mode=pb.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER))
            csilib.expect_error(cs.CreateVolume, csilib.grpc.StatusCode.INVALID_ARGUMENT,
                                pb.CreateVolumeRequest(name="", volume_capabilities=[cap]),
                                timeout=30)
            resp = cs.CreateVolume(pb.CreateVolumeRequest(
                name="pvc-m", volume_capabilities=[cap], parameters={
                    "csi.storage.k8s.io/pvc/name": "data",
                    "csi.storage.k8s.io/pvc/namespace": "team-a",
                    "csi.storage.k8s.io/pv/name": "pv-m"}), timeout=60)
            v = resp.volume
            ctx = dict(v.volume_context)
            assert ctx.get("csi.storage.k8s.io/pvc/name") == "data", ctx
            vol["id"] = v.volume_id
            ns.NodeStageVolume(pb.NodeStageVolumeRequest(
                volume_id=v.volume_id, staging_target_path=staging,
                volume_capability=cap, volume_context=ctx), timeout=90)
            ns.NodePublishVolume(pb.NodePublishVolumeRequest(
                volume_id=v.volume_id, staging_target_path=staging,
                target_path=target, volume_capability=cap, volume_context=ctx),
                timeout=90)
            with open(os.path.join(target, "f"), "wb") as f:
                f.write(b"y" * MiB)
            prom.wait('objfs_csi_call_duration_seconds_count{job="csi",'
                      'method="/csi.v1.Controller/CreateVolume",code="OK"}',
                      lambda x: x == 1, "CreateVolume OK counted")
            prom.wait('objfs_csi_call_duration_seconds_count{job="csi",'
                      'method="/csi.v1.Controller/CreateVolume",code="INVALID_ARGUMENT"}',
                      lambda x: x == 1, "CreateVolume INVALID_ARGUMENT counted")
            prom.wait('objfs_csi_call_duration_seconds_count{job="csi",'
                      'method="/csi.v1.Node/NodeStageVolume",code="OK"}',
                      lambda x: x == 1, "NodeStageVolume counted")
            prom.wait('objfs_csi_mounts{job="csi",state="healthy"}', lambda x: x == 1,
                      "one healthy mount")
            prom.wait('objfs_fs_written_bytes_total' + labels, lambda x: x == MiB,
                      "the volume's bytes under its PVC's labels")
            got = prom.query('objfs_mount_up' + labels)
            assert list(got.values()) == [1.0], got
            assert dict(next(iter(got))).get("volume_id") == vol["id"], got
            prom.wait('objfs_store_requests_total{job="csi",volume_id="",op="put",result="ok"}',
                      lambda x: x >= 1, "the controller's own store requests")

        def expositions_valid():
            promtool_check(http_get(mount_url), "objfs-mount")
            text = http_get(csi_url)
            assert 'volume_id="%s"' % vol["id"] in text
            promtool_check(text, "objfs-csi")

        def server_replaced():
            # -o resume: the keeper's next server binds the socket again
            server = csi_node.server_pid(staging)
            os.kill(server, signal.SIGKILL)
            csi_node.wait_for(lambda: csi_node.server_pid(staging) != server, 15,
                              "a successor")
            with open(os.path.join(target, "g"), "wb") as f:
                f.write(b"z" * 1000)
            # its counters started again at zero
            prom.wait('objfs_fs_written_bytes_total' + labels, lambda x: x == 1000,
                      "the successor's counters")
            prom.wait('objfs_mount_up' + labels, lambda x: x == 1, "the successor answering")

        def repair_counted():
            keeper = csi_node.mount_pid(staging)
            os.kill(keeper, signal.SIGKILL)
            prom.wait('objfs_csi_repairs_total{job="csi",result="ok"}', lambda x: x >= 1,
                      "the repair counted", timeout=40)
            prom.wait('objfs_csi_mounts{job="csi",state="healthy"}', lambda x: x == 1,
                      "healthy again")
            prom.wait('objfs_mount_up' + labels, lambda x: x == 1, "the new mount answering")

        r.run("both targets scraped", up)
        r.run("standalone mount: ops, bytes, store requests by op and status",
              standalone_workload)
        r.run("a frozen store: retries, stalls, give-ups, EIO", induced_failure)
        r.run("objfs-csi: calls by method and code, mounts, labels of the PVC",
              csi_workload)
        r.run("promtool check metrics accepts both expositions", expositions_valid)
        r.run("the metrics socket answers after the server is replaced", server_replaced)
        r.run("a repair is counted", repair_counted)
    finally:
        for pgid in frozen:
            os.killpg(pgid, signal.SIGCONT)
        if prom is not None:
            prom.stop()
        if mount is not None and mount.poll() is None:
            mount.terminate()
            try:
                mount.wait(30)
            except subprocess.TimeoutExpired:
                mount.kill()
                mount.wait()
            mount_log.close()
            with open(os.path.join(work, "mount.log"), "rb") as f:
                text = f.read().decode("utf-8", "replace")

            def stopped_clean():
                csilib.check_sanitizer_log(text)
                assert mount.returncode == 0, "objfs-mount exited %d" % mount.returncode
            r.run("the standalone mount stops clean, no sanitizer report", stopped_clean)
        if driver is not None:
            try:
                driver.stop(signal.SIGTERM, timeout=30)
            except Exception:  # noqa: BLE001
                driver.stop(signal.SIGKILL, timeout=5)
        csi_node.cleanup_all(work)
        if swift_up:
            subprocess.run(["sh", SWIFT, "stop", swift_dir], timeout=60,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        csi_node.cleanup_all(work)
        rmtree()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
