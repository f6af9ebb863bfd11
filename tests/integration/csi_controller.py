"""Integration test of objfs-csi's Controller service over gRPC against a
real S3 server: OBJFS_TEST_S3_SERVER names its script in tests/s3server/
(swift, the default: OpenStack Swift with s3api; rgw: Ceph RGW, run by
csi_controller_rgw.sh, which leaves out the Swift-only check of a backend
failure in the middle of a delete: it kills one of Swift's servers).

The plugin runs in controller mode with no S3 keys of its own: every call
that touches the bucket carries the keys in its secrets map, as
external-provisioner and external-snapshotter pass them. Objects are written
and read back directly with objfs-store-tool to compare checksums.
"""
import concurrent.futures
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csilib  # noqa: E402

sys.path.insert(0, os.path.join(csilib.SRCDIR, "tests", "s3server"))
import awsreq  # noqa: E402

SERVER = os.environ.get("OBJFS_TEST_S3_SERVER", "swift")
SERVER_SH = os.path.join(csilib.SRCDIR, "tests", "s3server", SERVER + ".sh")
TOOL = os.path.join(csilib.BUILDDIR, "tests", "integration", "objfs-store-tool")
GIB = 1 << 30



class Store:
    """Direct access to the bucket with objfs-store-tool."""

    def __init__(self, s3):
        self.bucket = s3["OBJFS_TEST_S3_BUCKET"]
        self.env = dict(os.environ)
        self.env.update({
            "AWS_ENDPOINT_URL": s3["OBJFS_TEST_S3_ENDPOINT"],
            "AWS_REGION": s3["OBJFS_TEST_S3_REGION"],
            "AWS_ACCESS_KEY_ID": s3["OBJFS_TEST_S3_ACCESS_KEY"],
            "AWS_SECRET_ACCESS_KEY": s3["OBJFS_TEST_S3_SECRET_KEY"],
        })
        self.url = "s3://" + self.bucket

    def run(self, *args, data=None):
        p = subprocess.run([TOOL, self.url] + list(args), input=data, env=self.env,
                           capture_output=True, timeout=60)
        return p

    def put(self, key, data):
        p = self.run("put", key, data=data)
        assert p.returncode == 0, (key, p.stderr)

    def get(self, key):
        p = self.run("get", key)
        return p.stdout if p.returncode == 0 else None

    def list(self, prefix, busy_for=0):
        """The keys under prefix; busy_for: seconds to keep asking while the
        store answers 503 (a Swift server just restarted)."""
        deadline = time.time() + busy_for
        while True:
            p = self.run("list", prefix)
            if p.returncode == 0 or b"temporarily unavailable" not in p.stderr \
                    or time.time() > deadline:
                break
            time.sleep(0.5)
        assert p.returncode == 0, p.stderr
        return [k for k in p.stdout.decode().split("\n") if k]


def main():
    work, cleanup = csilib.tempdir("objfs-controller-")
    pb, pbg = csilib.load_csi_stubs(work)
    r = csilib.Runner("csi_controller" if SERVER == "swift" else "csi_controller_" + SERVER)
    sw = os.path.join(work, SERVER)
    drv = None
    started = False
    try:
        subprocess.run(["sh", SERVER_SH, "start", sw], check=True, timeout=120,
                       stdout=subprocess.DEVNULL)
        started = True
        s3 = csilib.read_env(os.path.join(sw, "env"))
        store = Store(s3)
        endpoint = s3["OBJFS_TEST_S3_ENDPOINT"]
        region = s3["OBJFS_TEST_S3_REGION"]
        secret_key = s3["OBJFS_TEST_S3_SECRET_KEY"]
        secrets = {"accessKeyID": s3["OBJFS_TEST_S3_ACCESS_KEY"],
                   "secretAccessKey": secret_key}
        params = {"bucket": store.bucket, "basePrefix": "it", "endpoint": endpoint,
                  "region": region}
        env = {k: "" for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                               "AWS_SESSION_TOKEN")}
        drv = csilib.Driver(work, mode="controller", node_id=None, env=env)
        drv.start()
        ctrl = pbg.ControllerStub(drv.channel)
        ident = pbg.IdentityStub(drv.channel)

        def mount_cap(mode=pb.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER):
            return pb.VolumeCapability(
                mount=pb.VolumeCapability.MountVolume(),
                access_mode=pb.VolumeCapability.AccessMode(mode=mode))

        def create(name, size=None, source=None, p=None, timeout=60):
            req = pb.CreateVolumeRequest(name=name, volume_capabilities=[mount_cap()],
                                         parameters=p if p is not None else params,
                                         secrets=secrets)
            if size is not None:
                req.capacity_range.required_bytes = size
            if source is not None:
                req.volume_content_source.CopyFrom(source)
            return ctrl.CreateVolume(req, timeout=timeout).volume

        def delete(vid, timeout=60):
            ctrl.DeleteVolume(pb.DeleteVolumeRequest(volume_id=vid, secrets=secrets),
                              timeout=timeout)

        def prefix_of(vid):
            # objfs1:vol:s3:BUCKET:PREFIX
            return vid.split(":", 4)[4] + "/"

        def fill(vid, n, size):
            sums = {}
            for i in range(n):
                data = os.urandom(size + i)
                key = "%sdir/file-%02d" % (prefix_of(vid), i)
                store.put(key, data)
                sums["dir/file-%02d" % i] = hashlib.sha256(data).hexdigest()
            return sums

        def sums_of(prefix):
            out = {}
            for key in store.list(prefix):
                rel = key[len(prefix):]
                if rel.startswith(".objfs/"):
                    continue
                out[rel] = hashlib.sha256(store.get(key)).hexdigest()
            return out

        def capabilities():
            resp = ident.GetPluginCapabilities(pb.GetPluginCapabilitiesRequest(), timeout=5)
            services = {c.service.type for c in resp.capabilities if c.HasField("service")}
            assert pb.PluginCapability.Service.CONTROLLER_SERVICE in services, resp
            exp = [c.volume_expansion.type for c in resp.capabilities
                   if c.HasField("volume_expansion")]
            assert exp == [pb.PluginCapability.VolumeExpansion.ONLINE], resp
            resp = ctrl.ControllerGetCapabilities(pb.ControllerGetCapabilitiesRequest(),
                                                  timeout=5)
            T = pb.ControllerServiceCapability.RPC
            got = sorted(c.rpc.type for c in resp.capabilities)
            want = sorted([T.CREATE_DELETE_VOLUME, T.LIST_VOLUMES, T.GET_CAPACITY,
                           T.EXPAND_VOLUME, T.CREATE_DELETE_SNAPSHOT, T.LIST_SNAPSHOTS,
                           T.CLONE_VOLUME, T.GET_VOLUME, T.VOLUME_CONDITION,
                           T.SINGLE_NODE_MULTI_WRITER])
            assert got == want, got
            # Nothing advertised that does not answer; publish is not offered.
            code, _, _ = csilib.raw_call(drv.channel,
                                         "/csi.v1.Controller/ControllerPublishVolume", b"")
            assert code == grpc.StatusCode.UNIMPLEMENTED

        def lifecycle():
            v = create("pvc-life", size=2 * GIB, p=dict(params, mountOptions="ro"))
            assert v.volume_id == "objfs1:vol:s3:%s:it/pvc-life" % store.bucket, v.volume_id
            assert v.capacity_bytes == 2 * GIB
            ctx = dict(v.volume_context)
            assert ctx == {"source": "s3://%s/it/pvc-life" % store.bucket,
                           "endpoint": endpoint, "region": region,
                           "addressingStyle": "path", "mountOptions": "ro"}, ctx
            rec = store.get("it/pvc-life/.objfs/volume").decode()
            assert "capacity_bytes=%d\n" % (2 * GIB) in rec, rec
            assert secret_key not in rec
            # Idempotent; incompatible capacity is ALREADY_EXISTS.
            again = create("pvc-life", size=2 * GIB, p=dict(params, mountOptions="ro"))
            assert again == v, (again, v)
            csilib.expect_error(create, grpc.StatusCode.ALREADY_EXISTS, "pvc-life",
                                size=5 * GIB, p=dict(params, mountOptions="ro"))
            csilib.expect_error(create, grpc.StatusCode.ALREADY_EXISTS, "pvc-life",
                                size=2 * GIB)
            fill(v.volume_id, 3, 1000)
            val = ctrl.ValidateVolumeCapabilities(pb.ValidateVolumeCapabilitiesRequest(
                volume_id=v.volume_id, volume_context=v.volume_context,
                volume_capabilities=[mount_cap()], secrets=secrets), timeout=30)
            assert val.HasField("confirmed"), val
            blk = pb.VolumeCapability(block=pb.VolumeCapability.BlockVolume(),
                                      access_mode=pb.VolumeCapability.AccessMode(mode=1))
            val = ctrl.ValidateVolumeCapabilities(pb.ValidateVolumeCapabilitiesRequest(
                volume_id=v.volume_id, volume_capabilities=[blk], secrets=secrets),
                timeout=30)
            assert not val.HasField("confirmed") and "block" in val.message, val
            exp = ctrl.ControllerExpandVolume(pb.ControllerExpandVolumeRequest(
                volume_id=v.volume_id, secrets=secrets,
                capacity_range=pb.CapacityRange(required_bytes=3 * GIB)), timeout=30)
            assert exp.capacity_bytes == 3 * GIB and not exp.node_expansion_required
            assert "capacity_bytes=%d\n" % (3 * GIB) in store.get("it/pvc-life/.objfs/volume").decode()
            # No secrets on ControllerGetVolume and no keys in the plugin:
            # the store refuses; the volume is reported from the index, its
            # condition "not checked" (not abnormal), the expanded size.
            g = ctrl.ControllerGetVolume(pb.ControllerGetVolumeRequest(volume_id=v.volume_id),
                                         timeout=30)
            assert g.volume.volume_id == v.volume_id
            assert g.volume.capacity_bytes == 3 * GIB, g
            assert dict(g.volume.volume_context) == ctx, g
            assert g.status.HasField("volume_condition"), g
            assert not g.status.volume_condition.abnormal, g
            assert "not checked" in g.status.volume_condition.message, g
            delete(v.volume_id)
            assert store.list("it/pvc-life/") == []
            delete(v.volume_id)   # again: OK
            csilib.expect_error(ctrl.ControllerExpandVolume, grpc.StatusCode.NOT_FOUND,
                                pb.ControllerExpandVolumeRequest(
                                    volume_id=v.volume_id, secrets=secrets,
                                    capacity_range=pb.CapacityRange(required_bytes=GIB)),
                                timeout=30)
            # Ids objfs did not make name no volume: OK (the CSI spec, as
            # csi-sanity checks), and nothing in the bucket changes.
            before = store.list("")
            for bad in ("objfs1:vol:s3:%s:../it" % store.bucket, "objfs1:vol:def:/etc",
                        "somebody-elses-volume", "objfs1:vol:s3:%s:it" % store.bucket):
                delete(bad)
            assert store.list("") == before
            csilib.expect_error(delete, grpc.StatusCode.INVALID_ARGUMENT, "")

        def default_store_volume():
            # No parameters: the embedded local store under the state dir.
            req = pb.CreateVolumeRequest(name="pvc-plain", volume_capabilities=[mount_cap()])
            v = ctrl.CreateVolume(req, timeout=30).volume
            assert v.volume_id == "objfs1:vol:def:pvc-plain", v
            assert v.capacity_bytes == GIB
            src = v.volume_context["source"]
            assert src == "file://%s/store/pvc-plain" % drv.state, src
            cap = ctrl.GetCapacity(pb.GetCapacityRequest(), timeout=10)
            assert cap.available_capacity > 0
            cap = ctrl.GetCapacity(pb.GetCapacityRequest(parameters={"bucket": store.bucket}),
                                   timeout=10)
            assert cap.available_capacity == 0   # S3 reports no capacity
            g = ctrl.ControllerGetVolume(pb.ControllerGetVolumeRequest(volume_id=v.volume_id),
                                         timeout=10)
            assert not g.status.volume_condition.abnormal, g
            ctrl.DeleteVolume(pb.DeleteVolumeRequest(volume_id=v.volume_id), timeout=30)
            csilib.expect_error(ctrl.ControllerGetVolume, grpc.StatusCode.NOT_FOUND,
                                pb.ControllerGetVolumeRequest(volume_id=v.volume_id), timeout=10)

        many = []

        def concurrent_create():
            names = ["pvc-many-%02d" % i for i in range(50)]
            with concurrent.futures.ThreadPoolExecutor(50) as ex:
                vols = list(ex.map(lambda n: create(n, size=GIB, timeout=120), names))
            ids = {v.volume_id for v in vols}
            assert len(ids) == 50, len(ids)
            many.extend(sorted(ids))
            # Two racing calls for one name: one volume, never a half-made one.
            with concurrent.futures.ThreadPoolExecutor(2) as ex:
                futs = [ex.submit(create, "pvc-race", GIB) for _ in range(2)]
            outcomes = []
            for f in futs:
                try:
                    outcomes.append(f.result().volume_id)
                except grpc.RpcError as e:
                    assert e.code() == grpc.StatusCode.ABORTED, e
                    outcomes.append("ABORTED")
            assert any(o.startswith("objfs1:") for o in outcomes), outcomes
            assert create("pvc-race", GIB).volume_id == "objfs1:vol:s3:%s:it/pvc-race" % store.bucket
            delete("objfs1:vol:s3:%s:it/pvc-race" % store.bucket)

        def pagination():
            seen, token, pages = [], "", 0
            while True:
                resp = ctrl.ListVolumes(pb.ListVolumesRequest(max_entries=7,
                                                              starting_token=token),
                                        timeout=60)
                assert len(resp.entries) <= 7
                for e in resp.entries:
                    assert e.status.HasField("volume_condition")
                    seen.append(e.volume.volume_id)
                pages += 1
                token = resp.next_token
                if not token:
                    break
                assert pages < 20
            assert sorted(v for v in seen if "pvc-many-" in v) == many, seen
            assert len(seen) == len(set(seen))
            assert pages == 8, pages
            csilib.expect_error(ctrl.ListVolumes, grpc.StatusCode.ABORTED,
                                pb.ListVolumesRequest(max_entries=7,
                                                      starting_token="not-a-token"),
                                timeout=10)

        def concurrent_delete():
            with concurrent.futures.ThreadPoolExecutor(50) as ex:
                list(ex.map(lambda v: delete(v, timeout=120), many))
            left = [k for k in store.list("it/") if k.startswith("it/pvc-many-")]
            assert left == [], left[:5]
            resp = ctrl.ListVolumes(pb.ListVolumesRequest(), timeout=60)
            assert not [e for e in resp.entries if "pvc-many-" in e.volume.volume_id]

        def snapshots_and_clones():
            src = create("pvc-snapsrc", size=GIB)
            sums = fill(src.volume_id, 12, 20000)
            total = sum(20000 + i for i in range(12))
            snap = ctrl.CreateSnapshot(pb.CreateSnapshotRequest(
                name="snap-it-1", source_volume_id=src.volume_id, secrets=secrets),
                timeout=120).snapshot
            assert snap.ready_to_use and snap.size_bytes == total, snap
            # Under the volume's basePrefix, as everything objfs writes.
            assert snap.snapshot_id == "objfs1:snap:s3:%s:it/snap-it-1" % store.bucket
            assert snap.creation_time.seconds > 0
            again = ctrl.CreateSnapshot(pb.CreateSnapshotRequest(
                name="snap-it-1", source_volume_id=src.volume_id, secrets=secrets),
                timeout=120).snapshot
            assert again == snap
            other = create("pvc-other", size=GIB)
            csilib.expect_error(ctrl.CreateSnapshot, grpc.StatusCode.ALREADY_EXISTS,
                                pb.CreateSnapshotRequest(name="snap-it-1",
                                                         source_volume_id=other.volume_id,
                                                         secrets=secrets), timeout=60)
            # Change the volume after the cut.
            store.put(prefix_of(src.volume_id) + "dir/file-00", b"changed")
            restored = create("pvc-restored", size=GIB, source=pb.VolumeContentSource(
                snapshot=pb.VolumeContentSource.SnapshotSource(snapshot_id=snap.snapshot_id)))
            assert restored.content_source.snapshot.snapshot_id == snap.snapshot_id
            assert sums_of(prefix_of(restored.volume_id)) == sums
            clone = create("pvc-clone", size=GIB, source=pb.VolumeContentSource(
                volume=pb.VolumeContentSource.VolumeSource(volume_id=src.volume_id)))
            want = dict(sums, **{"dir/file-00": hashlib.sha256(b"changed").hexdigest()})
            assert sums_of(prefix_of(clone.volume_id)) == want
            csilib.expect_error(create, grpc.StatusCode.NOT_FOUND, "pvc-nosrc", GIB,
                                pb.VolumeContentSource(snapshot=pb.VolumeContentSource.SnapshotSource(
                                    snapshot_id="objfs1:snap:s3:%s:nope" % store.bucket)))
            csilib.expect_error(create, grpc.StatusCode.OUT_OF_RANGE, "pvc-tiny", 1000,
                                pb.VolumeContentSource(snapshot=pb.VolumeContentSource.SnapshotSource(
                                    snapshot_id=snap.snapshot_id)))
            ls = ctrl.ListSnapshots(pb.ListSnapshotsRequest(source_volume_id=src.volume_id,
                                                            secrets=secrets), timeout=60)
            assert [e.snapshot.snapshot_id for e in ls.entries] == [snap.snapshot_id]
            ls = ctrl.ListSnapshots(pb.ListSnapshotsRequest(snapshot_id=snap.snapshot_id,
                                                            secrets=secrets), timeout=60)
            assert len(ls.entries) == 1
            gs = ctrl.GetSnapshot(pb.GetSnapshotRequest(snapshot_id=snap.snapshot_id,
                                                        secrets=secrets), timeout=60)
            assert gs.snapshot.size_bytes == total
            for v in (src, other, restored, clone):
                delete(v.volume_id)
            # The snapshot outlives its volume.
            assert sums_of("it/.objfs-snapshots/snap-it-1/") == sums
            ctrl.DeleteSnapshot(pb.DeleteSnapshotRequest(snapshot_id=snap.snapshot_id,
                                                         secrets=secrets), timeout=60)
            assert store.list("it/.objfs-snapshots/snap-it-1/") == []
            ctrl.DeleteSnapshot(pb.DeleteSnapshotRequest(snapshot_id=snap.snapshot_id,
                                                         secrets=secrets), timeout=60)
            csilib.expect_error(ctrl.GetSnapshot, grpc.StatusCode.NOT_FOUND,
                                pb.GetSnapshotRequest(snapshot_id=snap.snapshot_id,
                                                      secrets=secrets), timeout=60)

        def scoped_user():
            """RGW: a user whose keys reach only it/ (a bucket policy, as
            AWS users scope keys to a prefix); (access, secret)."""
            ak, sk = "objfsscopedaccess", "objfsscopedsecret0123456789"
            subprocess.run(["radosgw-admin", "-c", os.path.join(sw, "ceph.conf"), "user",
                            "create", "--uid=scoped", "--display-name=scoped",
                            "--access-key=" + ak, "--secret-key=" + sk],
                           check=True, timeout=60, stdout=subprocess.DEVNULL)
            b = store.bucket
            policy = json.dumps({"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam:::user/scoped"]},
                 "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject",
                            "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
                 "Resource": ["arn:aws:s3:::%s/it/*" % b]},
                {"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam:::user/scoped"]},
                 "Action": ["s3:ListBucket"], "Resource": ["arn:aws:s3:::%s" % b],
                 "Condition": {"StringLike": {"s3:prefix": ["it/*"]}}}]})
            status, _, body = awsreq.request(endpoint, region, "s3",
                                             s3["OBJFS_TEST_S3_ACCESS_KEY"], secret_key,
                                             "PUT", "/" + b, {"policy": ""}, policy)
            assert status in (200, 204), (status, body)
            # The policy holds: outside it/ the scoped keys are refused.
            status, _, _ = awsreq.request(endpoint, region, "s3", ak, sk, "PUT",
                                          "/%s/outside" % b, body=b"x")
            assert status == 403, status
            return ak, sk

        def base_prefix_holds_everything():
            # Everything the controller writes for a volume stays under its
            # basePrefix: the volume, its snapshots, its archive.  On RGW
            # with keys that reach nothing else (a bucket policy); Swift's
            # s3api has no bucket policies: there, the bucket's listing
            # shows nothing outside it/.
            sec, st = secrets, store
            if SERVER == "rgw":
                ak, sk = scoped_user()
                sec = {"accessKeyID": ak, "secretAccessKey": sk}
                # RGW: objects belong to their writer; read them as it.
                st = Store(dict(s3, OBJFS_TEST_S3_ACCESS_KEY=ak,
                                OBJFS_TEST_S3_SECRET_KEY=sk))
            p = dict(params, onDelete="archive")

            def call(method, req):
                return getattr(ctrl, method)(req, timeout=120)

            def sums_in(prefix):
                return {k[len(prefix):]: hashlib.sha256(st.get(k)).hexdigest()
                        for k in st.list(prefix) if "/.objfs/" not in k}

            v = call("CreateVolume", pb.CreateVolumeRequest(
                name="pvc-scoped", volume_capabilities=[mount_cap()], parameters=p,
                secrets=sec)).volume
            sums = {}
            for i in range(3):
                data = os.urandom(500 + i)
                st.put("%sdir/file-%02d" % (prefix_of(v.volume_id), i), data)
                sums["dir/file-%02d" % i] = hashlib.sha256(data).hexdigest()
            sn = call("CreateSnapshot", pb.CreateSnapshotRequest(
                name="snap-scoped", source_volume_id=v.volume_id, secrets=sec)).snapshot
            assert sn.snapshot_id == "objfs1:snap:s3:%s:it/snap-scoped" % store.bucket, sn
            assert sums_in("it/.objfs-snapshots/snap-scoped/") == sums
            r = call("CreateVolume", pb.CreateVolumeRequest(
                name="pvc-scoped-restored", volume_capabilities=[mount_cap()], parameters=p,
                secrets=sec, volume_content_source=pb.VolumeContentSource(
                    snapshot=pb.VolumeContentSource.SnapshotSource(
                        snapshot_id=sn.snapshot_id)))).volume
            assert sums_in(prefix_of(r.volume_id)) == sums
            outside = [k for k in store.list("") if not k.startswith("it/")]
            assert outside == [], outside
            for vol in (v, r):
                call("DeleteVolume", pb.DeleteVolumeRequest(volume_id=vol.volume_id,
                                                            secrets=sec))
            assert sums_in("it/.objfs-archive/pvc-scoped/") == sums
            assert st.get("it/.objfs-archive/pvc-scoped/.objfs/volume") is not None
            assert store.list("it/pvc-scoped/") == []
            call("DeleteSnapshot", pb.DeleteSnapshotRequest(snapshot_id=sn.snapshot_id,
                                                            secrets=sec))
            assert store.list("it/.objfs-snapshots/snap-scoped/") == []
            outside = [k for k in store.list("") if not k.startswith("it/")]
            assert outside == [], outside
            for k in store.list("it/.objfs-archive/"):
                st.run("del", k)

        def kill_server(kind):
            pidf = os.path.join(sw, "run", kind + ".pid")
            with open(pidf) as f:
                pid = int(f.read().strip())
            os.killpg(pid, signal.SIGKILL)
            os.unlink(pidf)

        def start_server(kind):
            pidf = os.path.join(sw, "run", kind + ".pid")
            with open(os.path.join(sw, "log", kind + "-server.log"), "ab") as logf:
                subprocess.Popen(["/usr/bin/python3", os.path.join(sw, "run.py"),
                                  os.path.join(sw, "etc"), kind + "-server",
                                  os.path.join(sw, "etc", kind + "-server.conf"), pidf],
                                 stdin=subprocess.DEVNULL, stdout=logf, stderr=logf)

        def backend_failure_mid_delete():
            v = create("pvc-fail", size=GIB)
            fill(v.volume_id, 6, 100)
            # The container server dies: DeleteVolume reads the volume record
            # (object server), then listing the objects to delete fails.
            kill_server("container")
            try:
                details = csilib.expect_error(delete, grpc.StatusCode.UNAVAILABLE,
                                              v.volume_id, 120)
                assert "pvc-fail" in details and secret_key not in details, details
                # The record is deleted last: still there, the volume too.
                assert store.get("it/pvc-fail/.objfs/volume") is not None
            finally:
                start_server("container")
            # Python servers start slowly on a loaded machine.
            deadline = time.time() + 90
            while True:
                p = store.run("list", "it/pvc-fail/")
                if p.returncode == 0:
                    break
                if time.time() > deadline:
                    with open(os.path.join(sw, "log", "container-server.log"), "rb") as f:
                        tail = f.read()[-2000:].decode("utf-8", "replace")
                    raise AssertionError("container server did not come back:\n" + tail)
                time.sleep(0.5)
            # The retried delete completes the job.  Like external-provisioner,
            # retry while the store still answers UNAVAILABLE (a restarted
            # Swift server can refuse requests for a while), bounded in time.
            deadline = time.time() + 90
            while True:
                try:
                    delete(v.volume_id)
                    break
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.UNAVAILABLE or time.time() > deadline:
                        raise
                    time.sleep(2)
            assert store.list("it/pvc-fail/", busy_for=60) == []
            csilib.expect_error(ctrl.ValidateVolumeCapabilities, grpc.StatusCode.NOT_FOUND,
                                pb.ValidateVolumeCapabilitiesRequest(
                                    volume_id=v.volume_id, volume_capabilities=[mount_cap()],
                                    secrets=secrets), timeout=30)

        def config_errors():
            # A bucket that does not exist and a wrong secret key: the gRPC
            # message carries the store's code and what to check (never the
            # key), the code is not one a CO retries as in progress, and
            # the failed CreateVolume leaves nothing in the index.
            idx = os.path.join(drv.state, "store", ".objfs-csi")

            def index_files():
                return sorted(os.path.join(d, f) for d, _, fs in os.walk(idx) for f in fs)

            def expect_after_busy(code, *args, **kwargs):
                # A Swift server restarted by the test before answers 503
                # for a while (UNAVAILABLE, retried by a CO): ask again,
                # bounded in time, as the other tests do.
                deadline = time.time() + 90
                while True:
                    try:
                        create(*args, **kwargs)
                    except grpc.RpcError as e:
                        if e.code() == grpc.StatusCode.UNAVAILABLE and time.time() < deadline:
                            time.sleep(1)
                            continue
                        assert e.code() == code, (code, e.code(), e.details())
                        return e.details()
                    raise AssertionError("expected %s, the call succeeded" % code)

            before = index_files()
            msg = expect_after_busy(grpc.StatusCode.FAILED_PRECONDITION, "pvc-nob",
                                    p=dict(params, bucket="objfs-no-such-bucket"))
            assert "objfs-no-such-bucket" in msg and "does not exist" in msg, msg
            assert "NoSuchBucket" in msg, msg
            good = dict(secrets)
            secrets["secretAccessKey"] = "wrong-secret-key-for-the-test"
            try:
                msg = expect_after_busy(grpc.StatusCode.PERMISSION_DENIED, "pvc-badkey")
            finally:
                secrets.clear()
                secrets.update(good)
            assert "wrong-secret-key" not in msg, msg
            assert "403" in msg or "SignatureDoesNotMatch" in msg, msg
            assert "check" in msg, msg
            assert "\n" not in msg, msg
            assert index_files() == before, (before, index_files())

        def no_secrets_in_logs():
            log = drv.log()
            assert secret_key not in log
            assert '"level":"info"' in log or '"level":"debug"' in log

        r.run("capabilities", capabilities)
        r.run("lifecycle with secrets", lifecycle)
        r.run("default store volume", default_store_volume)
        r.run("50 concurrent CreateVolume", concurrent_create)
        r.run("ListVolumes pagination", pagination)
        r.run("50 concurrent DeleteVolume", concurrent_delete)
        r.run("snapshots and clones", snapshots_and_clones)
        r.run("everything under basePrefix (scoped keys on RGW)",
              base_prefix_holds_everything)
        if SERVER == "swift":
            r.run("backend failure mid-delete, retried", backend_failure_mid_delete)
        r.run("configuration errors name their cause, leave nothing", config_errors)
        r.run("no secrets in logs", no_secrets_in_logs)
    finally:
        if drv is not None:
            try:
                drv.stop(signal.SIGTERM, timeout=20)
            except Exception:  # noqa: BLE001
                pass
        if started or os.path.isdir(sw):
            subprocess.run(["sh", SERVER_SH, "stop", sw], timeout=60)
        cleanup()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
