"""Hostile strings in every CSI request, over real gRPC to a real objfs-csi.

For every method of the Identity, Controller and Node services, a request is
built with every string field filled (at any depth, in repeated fields, in
both members of each oneof, map keys and values), then sent once per string
field with that one field made hostile: a NUL inside it, a control
character, and a value past the size limit.  Each call must answer
INVALID_ARGUMENT naming the field, and nothing may be created or deleted:
the plugin's state directory, its embedded store and the kubelet directory
are the same, file for file, before and after, and the plugin logs no
volume created, deleted, staged or published.

A value of a secrets map may hold line breaks (a PEM CA bundle) and be
longer (src/csi/pb.h): there a tab or line break is allowed and only a
larger value is refused.
"""
import os
import sys

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csilib  # noqa: E402

STRING_MAX = 4096       # OBJFS_PB_STRING_MAX
SECRET_MAX = 65536      # OBJFS_PB_SECRET_MAX
DEPTH = 5


def is_map(field):
    return (field.message_type is not None and
            field.message_type.GetOptions().map_entry)


def fill(msg, variant, depth=0):
    """Sets every string of msg to a plain value.  variant picks which
    member of each oneof stays set: 0 the last, 1 the first."""
    if depth > DEPTH:
        return
    fields = list(msg.DESCRIPTOR.fields)
    if variant == 1:
        fields.reverse()
    for f in fields:
        if f.type == f.TYPE_STRING:
            if f.label == f.LABEL_REPEATED:
                getattr(msg, f.name).extend(["ok0", "ok1"])
            else:
                setattr(msg, f.name, "ok")
        elif f.type == f.TYPE_MESSAGE:
            if is_map(f):
                m = getattr(msg, f.name)
                vt = f.message_type.fields_by_name["value"]
                if vt.type == vt.TYPE_STRING:
                    m["k1"] = "v1"
                    m["k2"] = "v2"
                continue
            if f.label == f.LABEL_REPEATED:
                fill(getattr(msg, f.name).add(), variant, depth + 1)
            else:
                sub = getattr(msg, f.name)
                sub.SetInParent()
                fill(sub, variant, depth + 1)


def slots(msg, path=""):
    """Yields (path as objfs names it, setter, is_secret_value) for every
    string now set in msg."""
    for f, value in msg.ListFields():
        name = (path + "." if path else "") + f.name
        if f.type == f.TYPE_STRING:
            if f.label == f.LABEL_REPEATED:
                for i in range(len(value)):
                    def set_rep(v, lst=value, i=i):
                        lst[i] = v
                    yield "%s[%d]" % (name, i), set_rep, False
            else:
                def set_one(v, m=msg, n=f.name):
                    setattr(m, n, v)
                yield name, set_one, False
        elif is_map(f):
            vt = f.message_type.fields_by_name["value"]
            if vt.type != vt.TYPE_STRING:
                continue
            secret = "secrets" in f.name
            for k in sorted(value.keys()):
                def set_val(v, m=value, k=k):
                    m[k] = v
                yield '%s["%s"]' % (name, k), set_val, secret

                def set_key(v, m=value, k=k):
                    m[v] = m.pop(k)
                yield "%s: a key" % name, set_key, False
        elif f.type == f.TYPE_MESSAGE:
            if f.label == f.LABEL_REPEATED:
                for i, sub in enumerate(value):
                    yield from slots(sub, "%s[%d]" % (name, i))
            else:
                yield from slots(value, name)


def tree(*roots):
    """Every file and directory under roots, with sizes of files."""
    seen = {}
    for root in roots:
        for d, dirs, files in os.walk(root):
            for n in dirs:
                seen[os.path.join(d, n)] = "dir"
            for n in files:
                p = os.path.join(d, n)
                if p.endswith(".log") or p.endswith(".sock"):
                    continue
                try:
                    seen[p] = os.lstat(p).st_size
                except OSError:
                    pass
    return seen


def main():
    work, cleanup = csilib.tempdir("objfs-hostile-")
    pb, pbg = csilib.load_csi_stubs(work)
    r = csilib.Runner("csi_hostile")
    kubelet = os.path.join(work, "kubelet")
    os.makedirs(kubelet)
    drv = csilib.Driver(work, mode="all", extra=["--kubelet-dir", kubelet])
    methods = []
    for svc in pb.DESCRIPTOR.services_by_name.values():
        for m in svc.methods:
            methods.append(("/%s/%s" % (svc.full_name, m.name),
                            getattr(pb, m.input_type.name)))
    try:
        drv.start()
        # one real volume, so that a cut id would have something to hit
        ctrl = pbg.ControllerStub(drv.channel)
        cap = pb.VolumeCapability(
            mount=pb.VolumeCapability.MountVolume(),
            access_mode=pb.VolumeCapability.AccessMode(
                mode=pb.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER))
        vol = ctrl.CreateVolume(pb.CreateVolumeRequest(
            name="a", volume_capabilities=[cap]), timeout=30).volume
        before = tree(drv.state, kubelet)
        log_before = len(drv.log())
        counted = {"calls": 0}

        def hostile(path, cls, poison, why, secret_why):
            # a method objfs does not serve refuses everything as such
            code, _, _ = csilib.raw_call(drv.channel, path, b"")
            served = code != grpc.StatusCode.UNIMPLEMENTED

            def run():
                n = 0
                for variant in (0, 1):
                    base = cls()
                    fill(base, variant)
                    for i, (name, _, secret) in enumerate(list(slots(base))):
                        req = cls()
                        req.CopyFrom(base)
                        _, setter, _ = list(slots(req))[i]
                        setter(poison(secret))
                        code, details, _ = csilib.raw_call(
                            drv.channel, path, req.SerializeToString())
                        n += 1
                        if not served:
                            assert code == grpc.StatusCode.UNIMPLEMENTED, \
                                (path, name, code, details)
                            continue
                        assert code == grpc.StatusCode.INVALID_ARGUMENT, \
                            (path, name, code, details)
                        want = "%s %s" % (name, secret_why if secret else why)
                        assert details == want, (path, want, details)
                assert n > 0, path
                counted["calls"] += n
            return run

        def filled(cls):
            m = cls()
            fill(m, 0)
            return m

        for path, cls in methods:
            if not list(slots(filled(cls))):
                continue        # no string to make hostile (Probe, ...)
            r.run(path + " NUL", hostile(
                path, cls, lambda s: "a\x00b", "holds a NUL byte", "holds a NUL byte"))
            r.run(path + " control", hostile(
                path, cls, lambda s: "a\nb" if not s else "a\x01b",
                "holds a control character", "holds a control character"))
            r.run(path + " size", hostile(
                path, cls, lambda s: "x" * (SECRET_MAX + 1 if s else STRING_MAX + 1),
                "is longer than %d bytes" % STRING_MAX,
                "is longer than %d bytes" % SECRET_MAX))

        def nothing_changed():
            assert counted["calls"] > 300, counted
            after = tree(drv.state, kubelet)
            assert after == before, (set(after.items()) ^ set(before.items()))
            log = drv.log()[log_before:]
            for word in ("created volume", "deleted volume", "staged", "published"):
                assert word not in log, log[-2000:]
            # the real volume is still there
            got = ctrl.ListVolumes(pb.ListVolumesRequest(), timeout=30)
            assert vol.volume_id in [e.volume.volume_id for e in got.entries], got

        r.run("nothing created or deleted", nothing_changed)

        def secret_lines_allowed():
            # a secret value that spans lines (a PEM bundle) reaches the
            # handler, which answers on its own grounds
            req = pb.DeleteVolumeRequest(volume_id="objfs1:vol:def:none",
                                         secrets={"caBundle": "-----BEGIN\nAAAA\n-----END\n"})
            code, details, _ = csilib.raw_call(
                drv.channel, "/csi.v1.Controller/DeleteVolume", req.SerializeToString())
            assert "secrets" not in details, details
            assert code in (grpc.StatusCode.OK, grpc.StatusCode.NOT_FOUND), (code, details)

        r.run("a secret may span lines", secret_lines_allowed)
    finally:
        drv.stop()
        cleanup()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
