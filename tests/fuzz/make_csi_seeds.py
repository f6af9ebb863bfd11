#!/usr/bin/python3
"""make_csi_seeds.py - the seed corpus of tests/fuzz/fuzz_csi.c.

Writes tests/fuzz/corpus/csi/NAME: sequences of CSI calls in the target's
input format (a method byte: the index in csi/driver.c's table, i.e. the
methods of the Identity, Controller, GroupController, SnapshotMetadata and
Node services in proto order; a 16-bit big-endian length; the packed
request).  Paths use the placeholder root /tmp/objfs-fuzz-csi-XXXXXX, which
the target replaces by its own root (the same length, so the messages stay
valid).  Needs python3-grpc-tools (compiles proto/csi.proto).  Run by hand:
    /usr/bin/python3 tests/fuzz/make_csi_seeds.py
"""
import os
import struct
import sys
import tempfile

from grpc_tools import protoc

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
ROOT = "/tmp/objfs-fuzz-csi-XXXXXX"
KUBELET = ROOT + "/kubelet"
STAGING = KUBELET + "/plugins/kubernetes.io/csi/objfs.csi.io/abc/globalmount"
TARGET = KUBELET + "/pods/p1/volumes/kubernetes.io~csi/pv/mount"

out = tempfile.mkdtemp()
inc = os.path.join(os.path.dirname(protoc.__file__), "_proto")
if protoc.main(["protoc", "-I" + os.path.join(TOP, "proto"), "-I" + inc,
                "--python_out=" + out, os.path.join(TOP, "proto", "csi.proto")]) != 0:
    sys.exit("protoc failed")
sys.path.insert(0, out)
import csi_pb2 as pb  # noqa: E402

index = {}
for svc in ("Identity", "Controller", "GroupController", "SnapshotMetadata", "Node"):
    for m in pb.DESCRIPTOR.services_by_name[svc].methods:
        index[m.name] = len(index)


def cap(mode=pb.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER, **mount):
    return pb.VolumeCapability(mount=pb.VolumeCapability.MountVolume(**mount),
                               access_mode=pb.VolumeCapability.AccessMode(mode=mode))


def call(method, msg):
    data = msg.SerializeToString()
    return bytes([index[method]]) + struct.pack(">H", len(data)) + data


VOL = "objfs1:vol:def:pvc-1"
seeds = {
    "identity": call("GetPluginInfo", pb.GetPluginInfoRequest()) +
    call("Probe", pb.ProbeRequest()) +
    call("GetPluginCapabilities", pb.GetPluginCapabilitiesRequest()),
    "create-stage-publish": call("CreateVolume", pb.CreateVolumeRequest(
        name="pvc-1", volume_capabilities=[cap()],
        capacity_range=pb.CapacityRange(required_bytes=1 << 30))) +
    call("NodeStageVolume", pb.NodeStageVolumeRequest(
        volume_id=VOL, staging_target_path=STAGING,
        volume_capability=cap(mount_flags=["noatime"], volume_mount_group="1000"),
        volume_context={"source": "s3://defbucket/base/pvc-1"})) +
    call("NodePublishVolume", pb.NodePublishVolumeRequest(
        volume_id=VOL, staging_target_path=STAGING, target_path=TARGET,
        volume_capability=cap(), readonly=True)) +
    call("NodeGetVolumeStats", pb.NodeGetVolumeStatsRequest(
        volume_id=VOL, volume_path=TARGET)),
    "unpublish-unstage": call("NodeUnpublishVolume", pb.NodeUnpublishVolumeRequest(
        volume_id=VOL, target_path=TARGET)) +
    call("NodeUnstageVolume", pb.NodeUnstageVolumeRequest(
        volume_id=VOL, staging_target_path=STAGING)),
    "create-bucket-expand-delete": call("CreateVolume", pb.CreateVolumeRequest(
        name="pvc-2", volume_capabilities=[cap()],
        parameters={"bucket": "other-bucket", "endpoint": "http://127.0.0.1:9",
                    "region": "us-east-1", "onDelete": "retain"},
        secrets={"accessKeyID": "AK", "secretAccessKey": "SK"})) +
    call("ControllerExpandVolume", pb.ControllerExpandVolumeRequest(
        volume_id="objfs1:vol:s3:other-bucket:pvc-2",
        capacity_range=pb.CapacityRange(required_bytes=2 << 30))) +
    call("ListVolumes", pb.ListVolumesRequest(max_entries=1)) +
    call("DeleteVolume", pb.DeleteVolumeRequest(volume_id="objfs1:vol:s3:other-bucket:pvc-2")),
    "snapshot": call("CreateVolume", pb.CreateVolumeRequest(
        name="pvc-1", volume_capabilities=[cap()])) +
    call("CreateSnapshot", pb.CreateSnapshotRequest(
        source_volume_id=VOL, name="snap-1")) +
    call("ListSnapshots", pb.ListSnapshotsRequest(source_volume_id=VOL)) +
    call("CreateVolume", pb.CreateVolumeRequest(
        name="pvc-3", volume_capabilities=[cap()],
        volume_content_source=pb.VolumeContentSource(
            snapshot=pb.VolumeContentSource.SnapshotSource(
                snapshot_id="objfs1:snap:def:snap-1")))),
    "validate-capacity": call("ValidateVolumeCapabilities", pb.ValidateVolumeCapabilitiesRequest(
        volume_id=VOL, volume_capabilities=[cap(pb.VolumeCapability.AccessMode.SINGLE_NODE_WRITER)])) +
    call("GetCapacity", pb.GetCapacityRequest()) +
    call("ControllerGetCapabilities", pb.ControllerGetCapabilitiesRequest()) +
    call("NodeGetInfo", pb.NodeGetInfoRequest()),
    "hostile-paths": call("NodePublishVolume", pb.NodePublishVolumeRequest(
        volume_id=VOL, staging_target_path=STAGING,
        target_path=KUBELET + "/pods/../../../etc", volume_capability=cap())) +
    call("NodeStageVolume", pb.NodeStageVolumeRequest(
        volume_id="objfs1:vol:def:../../x", staging_target_path="/etc",
        volume_capability=cap())) +
    call("NodeUnpublishVolume", pb.NodeUnpublishVolumeRequest(
        volume_id=VOL, target_path=KUBELET + "/../state/node")),
}
dest = os.path.join(HERE, "corpus", "csi")
os.makedirs(dest, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(dest, name), "wb") as f:
        f.write(data)
print("make_csi_seeds: %d seeds in %s" % (len(seeds), dest))
