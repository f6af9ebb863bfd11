#!/usr/bin/python3
"""Checks on the rendered objfs Helm chart, the examples and the Dockerfile.

Called by render_test.sh with JSON produced by helmrender (the chart rendered
with tests/helm/values-*.yaml, then parsed by a strict YAML parser).  Each
check prints nothing on success; every failure is collected and printed, and
the exit status is 1 if there was any.

    check_manifests.py CASE RENDERED.json        chart checks for one values case
    check_manifests.py examples EXAMPLES.json    the examples/ manifests
    check_manifests.py values VALUES.yaml        every value in values.yaml commented
    check_manifests.py dockerfile DOCKERFILE     Dockerfile shape
    check_manifests.py dashboard DASHBOARD.json  the Grafana dashboard's queries
    check_manifests.py doc-commands OUTDIR DOC.md...
                                                 the values of every helm install/upgrade
                                                 in the docs' code blocks: OUTDIR/N.json,
                                                 "N RELEASE NAMESPACE WHERE" lines on stdout
    check_manifests.py classes RENDERED.json EXAMPLES.json WHERE
                                                 the examples' classes exist in the render
    check_manifests.py holder-memory WHERE RENDERED.json VALUES.json
                                                 the holder's memory limit covers maxSlots
                                                 mounts (VALUES.json: the values files
                                                 rendered, in order, from yaml2json)
    check_manifests.py quota WHERE RENDERED.json CLASSES-JSON
                                                 the ResourceQuota for the system-* classes
                                                 CLASSES-JSON (null: none wanted)

Environment: OBJFS_CSI (path of a built objfs-csi; when set, the objfs-csi
arguments of every rendered container are run through `objfs-csi --dry-run`),
WORKDIR (scratch directory for the fake container file systems).
"""

import json
import os
import re
import subprocess
import sys

DRIVER = "objfs.csi.io"
SECRET_KEYS_READ = {"accessKeyID", "secretAccessKey", "sessionToken", "endpoint", "caBundle"}
SECRET_KEYS_REQUIRED = {"accessKeyID", "secretAccessKey"}

# Flags accepted by each kubernetes-csi sidecar, by image name and major
# version, from the sidecars' READMEs (cmd/*/main.go) plus the klog/component
# flags every sidecar registers.  Bool flags may be given without a value.
KLOG = {"v", "vmodule", "logging-format", "log-flush-frequency", "version", "master"}
LEADER = {"leader-election", "leader-election-namespace", "leader-election-lease-duration",
          "leader-election-renew-deadline", "leader-election-retry-period",
          "leader-election-labels"}
KUBEAPI = {"kubeconfig", "kube-api-qps", "kube-api-burst", "http-endpoint", "metrics-path",
           "metrics-address", "enable-pprof", "timeout", "csi-address", "feature-gates"}
PROVISIONER = KLOG | LEADER | KUBEAPI | {
    "worker-threads", "extra-create-metadata", "retry-interval-start", "retry-interval-max",
    "default-fstype", "volume-name-prefix", "volume-name-uuid-length", "strict-topology",
    "immediate-topology", "enable-capacity", "capacity-ownerref-level",
    "capacity-poll-interval", "capacity-for-immediate-binding", "capacity-threads",
    "cloning-protection-threads", "node-deployment", "node-deployment-immediate-binding",
    "node-deployment-base-delay", "node-deployment-max-delay", "controller-publish-readonly",
    "prevent-volume-mode-conversion"}
RESIZER = KLOG | LEADER | KUBEAPI | {
    "handle-volume-inuse-error", "workers", "retry-interval-start", "retry-interval-max",
    "extra-modify-metadata", "resync-period"}
SNAPSHOTTER = KLOG | LEADER | KUBEAPI | {
    "extra-create-metadata", "snapshot-name-prefix", "snapshot-name-uuid-length",
    "worker-threads", "retry-interval-start", "retry-interval-max", "resync-period",
    "groupsnapshot-name-prefix", "groupsnapshot-name-uuid-length"}
LIVENESS = KLOG | {"csi-address", "health-port", "http-endpoint", "probe-timeout",
                   "metrics-address"}
REGISTRAR = KLOG | {"csi-address", "kubelet-registration-path", "http-endpoint",
                    "health-port", "timeout", "mode", "plugin-registration-path",
                    "enable-pprof"}
SIDECAR_FLAGS = {
    ("csi-provisioner", "v5"): PROVISIONER, ("csi-provisioner", "v6"): PROVISIONER,
    ("csi-resizer", "v1"): RESIZER, ("csi-resizer", "v2"): RESIZER,
    ("csi-snapshotter", "v8"): SNAPSHOTTER,
    ("livenessprobe", "v2"): LIVENESS,
    ("csi-node-driver-registrar", "v2"): REGISTRAR,
}
BOOL_FLAGS = {"extra-create-metadata", "leader-election", "handle-volume-inuse-error",
              "enable-capacity", "strict-topology", "immediate-topology", "node-deployment",
              "enable-pprof", "controller-publish-readonly", "prevent-volume-mode-conversion",
              "extra-modify-metadata", "capacity-for-immediate-binding"}
# Tags known to exist in registry.k8s.io/sig-storage (pulled on a real
# cluster).  A tag that was never published leaves the pod in ImagePullBackOff
# (node-driver-registrar v2.18.0 did): add a tag here only after pulling it.
PUBLISHED_TAGS = {
    "csi-provisioner": {"v6.3.0"},
    "csi-resizer": {"v2.2.1"},
    "csi-snapshotter": {"v8.6.0"},
    "livenessprobe": {"v2.19.0"},
    "csi-node-driver-registrar": {"v2.17.0"},
}

# The ClusterRole rules each controller sidecar's own repository ships for
# the tags above (external-provisioner and external-resizer
# deploy/kubernetes/rbac.yaml, external-snapshotter
# deploy/kubernetes/csi-snapshotter/rbac-csi-snapshotter.yaml), with the
# optional secret rules enabled: (apiGroup, resource, verbs).  The chart's
# ClusterRole of each sidecar must grant at least these.
UPSTREAM_RBAC = {
    "csi-provisioner": [
        ("", "secrets", ["get", "list"]),
        ("", "persistentvolumes", ["get", "list", "watch", "create", "patch", "delete"]),
        ("", "persistentvolumeclaims", ["get", "list", "watch", "update"]),
        ("storage.k8s.io", "storageclasses", ["get", "list", "watch"]),
        ("", "events", ["list", "watch", "create", "update", "patch"]),
        ("snapshot.storage.k8s.io", "volumesnapshots", ["get", "list", "watch", "update"]),
        ("snapshot.storage.k8s.io", "volumesnapshotcontents", ["get", "list"]),
        ("storage.k8s.io", "csinodes", ["get", "list", "watch"]),
        ("", "nodes", ["get", "list", "watch"]),
        ("storage.k8s.io", "volumeattachments", ["get", "list", "watch"]),
        ("storage.k8s.io", "volumeattributesclasses", ["get"]),
    ],
    "csi-resizer": [
        ("", "secrets", ["get", "list", "watch"]),
        ("", "persistentvolumes", ["get", "list", "watch", "patch"]),
        ("", "persistentvolumeclaims", ["get", "list", "watch"]),
        ("", "pods", ["get", "list", "watch"]),
        ("", "persistentvolumeclaims/status", ["patch"]),
        ("", "events", ["list", "watch", "create", "update", "patch"]),
        ("storage.k8s.io", "volumeattributesclasses", ["get", "list", "watch"]),
    ],
    "csi-snapshotter": [
        ("", "secrets", ["get", "list"]),
        ("", "events", ["list", "watch", "create", "update", "patch"]),
        ("snapshot.storage.k8s.io", "volumesnapshotclasses", ["get", "list", "watch"]),
        ("snapshot.storage.k8s.io", "volumesnapshotcontents",
         ["create", "get", "list", "watch", "update", "patch"]),
        ("snapshot.storage.k8s.io", "volumesnapshotcontents/status", ["update", "patch"]),
        ("groupsnapshot.storage.k8s.io", "volumegroupsnapshotclasses", ["get", "list", "watch"]),
        ("groupsnapshot.storage.k8s.io", "volumegroupsnapshotcontents",
         ["get", "list", "watch", "update", "patch"]),
        ("groupsnapshot.storage.k8s.io", "volumegroupsnapshotcontents/status", ["update", "patch"]),
    ],
}
LEADER_ELECTION_VERBS = ["get", "watch", "list", "delete", "update", "create"]

SIDECAR_REQUIRED = {"csi-node-driver-registrar": {"csi-address", "kubelet-registration-path"}}

# The scraper the chart's NetworkPolicies admit by default (values.yaml).
DEFAULT_SCRAPER = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                   "podSelector": {}}

CLUSTER_SCOPED = {"CSIDriver", "ClusterRole", "ClusterRoleBinding", "StorageClass",
                  "VolumeSnapshotClass", "PersistentVolume"}

# What each values case must produce: (kind, name) pairs, release namespace,
# and the values the checks compare against.
CASES = {
    # the chart's defaults plus the one value they need (s3.bucket)
    "default": {
        "namespace": "default", "fullname": "objfs", "kubelet": "/var/lib/kubelet",
        "state": "/var/lib/objfs", "secret": None, "created_secret": False,
        "ca": None, "storageclass": "objfs", "vsc": None, "hostsystemd": False,
        "hostnetwork": False,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
        "extra": {("StorageClass", "objfs")},
        "metrics": {"controller": 9811, "node": 9812},
        "netpol": {"controller", "node"},
        "quota": ["system-cluster-critical", "system-node-critical"],
    },
    "full": {
        "namespace": "objfs-system", "fullname": "objfs-full",
        "kubelet": "/var/lib/k0s/kubelet", "state": "/srv/objfs/state",
        "secret": "objfs-keys", "created_secret": True, "ca": "objfs-full-ca",
        "storageclass": "objfs-rwx", "vsc": "objfs-snap", "hostsystemd": True,
        "hostnetwork": True,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}},
        "extra": {("Secret", "objfs-keys"), ("ConfigMap", "objfs-full-ca"),
                  ("StorageClass", "objfs-rwx"), ("VolumeSnapshotClass", "objfs-snap"),
                  ("ServiceMonitor", "objfs-full-controller"),
                  ("ServiceMonitor", "objfs-full-node"), ("PodMonitor", "objfs-full"),
                  ("ConfigMap", "objfs-full-dashboard")},
        "metrics": {"controller": 19811, "node": 19812},
        # node.hostNetwork: no NetworkPolicy can apply to the node pods
        "netpol": {"controller"},
        # objfs-* classes, and no holder (hostSystemd): no quota
        "quota": None,
    },
    "existing": {
        "namespace": "storage", "fullname": "rel-objfs", "kubelet": "/var/lib/kubelet",
        "state": "/var/lib/objfs", "secret": "my-s3-keys", "created_secret": False,
        "ca": "corp-ca", "storageclass": "objfs", "vsc": "objfs", "hostsystemd": True,
        "hostnetwork": False,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
        "extra": {("StorageClass", "objfs"), ("VolumeSnapshotClass", "objfs")},
        "metrics": None,
        "netpol": set(),
        "quota": ["system-cluster-critical", "system-node-critical"],
    },
}

errors = []


def fail(msg):
    errors.append(msg)


def expected_objects(case):
    fn = case["fullname"]
    objs = {("CSIDriver", DRIVER),
            ("ServiceAccount", fn + "-controller"), ("ServiceAccount", fn + "-node"),
            ("Deployment", fn + "-controller"), ("DaemonSet", fn + "-node"),
            ("PodDisruptionBudget", fn + "-controller"),
            ("Role", fn + "-leader-election"), ("RoleBinding", fn + "-leader-election")}
    for s in ("provisioner", "resizer", "snapshotter"):
        objs |= {("ClusterRole", fn + "-" + s), ("ClusterRoleBinding", fn + "-" + s)}
    if not case["hostsystemd"]:
        objs.add(("DaemonSet", fn + "-holder"))
    if case["metrics"]:
        objs |= {("Service", fn + "-controller-metrics"), ("Service", fn + "-node-metrics")}
    objs |= {("NetworkPolicy", "%s-%s-metrics" % (fn, c)) for c in case["netpol"]}
    if case["quota"]:
        objs.add(("ResourceQuota", fn + "-critical-pods"))
    return objs | case["extra"]


def check_quota(where, docs, want):
    """The ResourceQuota that admits system-* priority classes outside
    kube-system: present exactly when a rendered pod uses one, scoped to
    exactly those classes (want: the classes, or None for no quota)."""
    pcs = set()
    for d in docs:
        if d.get("kind") in ("Deployment", "DaemonSet"):
            pc = d["spec"]["template"]["spec"].get("priorityClassName")
            if pc and pc.startswith("system-"):
                pcs.add(pc)
    quotas = [d for d in docs if d.get("kind") == "ResourceQuota"]
    if want is not None and sorted(pcs) != sorted(want):
        fail("%s: system-* classes of the pods %s, want %s" % (where, sorted(pcs), want))
    if not pcs or want is None:
        if quotas:
            fail("%s: a ResourceQuota without (or not wanting) a system-* class" % where)
        return
    if len(quotas) != 1:
        fail("%s: %d ResourceQuotas for the classes %s, want 1" % (where, len(quotas), sorted(pcs)))
        return
    spec = quotas[0]["spec"]
    exprs = spec.get("scopeSelector", {}).get("matchExpressions", [])
    if len(exprs) != 1 or exprs[0].get("scopeName") != "PriorityClass" \
            or exprs[0].get("operator") != "In" or sorted(exprs[0].get("values", [])) != sorted(pcs):
        fail("%s: ResourceQuota scopeSelector %r, want PriorityClass In %s"
             % (where, exprs, sorted(pcs)))
    pods = spec.get("hard", {}).get("pods")
    nodes_pods = 1 + sum(1 for d in docs if d.get("kind") == "DaemonSet")
    if pods is None or int(pods) < 1000 * nodes_pods:
        fail("%s: ResourceQuota hard.pods %r is not generous (1000 nodes need %d)"
             % (where, pods, 1000 * nodes_pods))
    if set(spec.get("hard", {})) != {"pods"}:
        fail("%s: ResourceQuota limits more than pods: %r" % (where, spec.get("hard")))


QUANTITY = {"": 1, "k": 1000, "M": 1000 ** 2, "G": 1000 ** 3, "T": 1000 ** 4,
            "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}


def quantity(q):
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(|k|M|G|T|Ki|Mi|Gi|Ti)", str(q))
    if not m:
        return None
    return float(m.group(1)) * QUANTITY[m.group(2)]


def merged_values(values_docs):
    vals = {}
    for v in values_docs:
        merge_values(vals, v)
    return vals


def check_holder_memory(where, docs, values_docs):
    """The holder's memory limit covers every slot at the mount memory bound:
    limit >= holder.maxSlots x node.mountMemoryMiB + holder.memoryBaseMiB."""
    vals = merged_values(values_docs)
    h, n = vals["holder"], vals["node"]
    need = (int(h["maxSlots"]) * int(n["mountMemoryMiB"]) + int(h["memoryBaseMiB"])) << 20
    ds = [d for d in docs if d.get("kind") == "DaemonSet"
          and d["metadata"]["name"].endswith("-holder")]
    if len(ds) != 1:
        fail("%s: %d holder DaemonSets, want 1" % (where, len(ds)))
        return
    c = [c for c in ds[0]["spec"]["template"]["spec"]["containers"] if c["name"] == "objfs-holder"]
    lim = c[0].get("resources", {}).get("limits", {}).get("memory") if c else None
    got = quantity(lim) if lim is not None else None
    if got is None or got < need:
        fail("%s: holder memory limit %r < maxSlots %s x mountMemoryMiB %s + memoryBaseMiB %s (%d MiB)"
             % (where, lim, h["maxSlots"], n["mountMemoryMiB"], h["memoryBaseMiB"], need >> 20))
    a = c[0].get("args", []) if c else []
    slots = a[a.index("--max-slots") + 1] if "--max-slots" in a[:-1] else None
    if slots != str(h["maxSlots"]):
        fail("%s: --max-slots %r is not holder.maxSlots %s" % (where, slots, h["maxSlots"]))


def index(docs):
    out = {}
    for d in docs:
        out[(d.get("kind"), (d.get("metadata") or {}).get("name"))] = d
    return out


def parse_flag(arg):
    m = re.match(r"^--?([A-Za-z0-9][A-Za-z0-9_.-]*)(=(.*))?$", arg)
    if not m:
        return None, None
    return m.group(1), m.group(3)


def sidecar_args(container):
    flags = {}
    for a in container.get("args", []):
        name, val = parse_flag(a)
        if name is None:
            fail("%s: argument %r is not a --flag" % (container["name"], a))
            continue
        flags[name] = val
    return flags


def check_sidecar(where, c):
    image = c.get("image", "")
    m = re.match(r"^.*/([^/:]+):(v\d+)\.\d+\.\d+$", image)
    if not m:
        fail("%s/%s: image %r is not <repo>/<name>:vX.Y.Z" % (where, c["name"], image))
        return None
    key = (m.group(1), m.group(2))
    tag = image.rsplit(":", 1)[1]
    if tag not in PUBLISHED_TAGS.get(key[0], ()):
        fail("%s/%s: %s is not a tag known to be published (PUBLISHED_TAGS): "
             "pods would stay in ImagePullBackOff" % (where, c["name"], image))
    known = SIDECAR_FLAGS.get(key)
    if known is None:
        fail("%s/%s: no known flag list for %s %s.x: add it to SIDECAR_FLAGS after "
             "checking the sidecar's README" % (where, c["name"], key[0], key[1]))
        return None
    flags = sidecar_args(c)
    for name, val in flags.items():
        if name not in known:
            fail("%s/%s: %s %s.x has no flag --%s" % (where, c["name"], key[0], key[1], name))
        if val is None and name not in BOOL_FLAGS:
            fail("%s/%s: --%s needs =value (not a bool flag; a bare flag would swallow "
                 "the next argument)" % (where, c["name"], name))
        if name == "feature-gates" and val is not None:
            for g in val.split(","):
                if not re.match(r"^[A-Za-z0-9]+=(true|false)$", g):
                    fail("%s/%s: bad feature gate %r" % (where, c["name"], g))
    for r in SIDECAR_REQUIRED.get(key[0], {"csi-address"}):
        if r not in flags:
            fail("%s/%s: missing --%s" % (where, c["name"], r))
    if "csi-address" not in flags:
        fail("%s/%s: missing --csi-address" % (where, c["name"]))
    return flags


def health_port(where, flags):
    """livenessprobe's port: --http-endpoint=[host]:port, else the deprecated
    --health-port (default 9808); setting both is refused by livenessprobe."""
    if "http-endpoint" in flags and "health-port" in flags:
        fail("%s: livenessprobe refuses --http-endpoint with --health-port" % where)
    ep = flags.get("http-endpoint")
    if ep is not None:
        m = re.match(r"^[^:]*:(\d+)$", ep)
        if not m:
            fail("%s: livenessprobe --http-endpoint %r is not [host]:port" % (where, ep))
            return -1
        return int(m.group(1))
    return int(flags.get("health-port", "9808"))


def mount_for(container, path, volumes):
    """Volume name and mount of the deepest volumeMount holding path."""
    best = None
    for vm in container.get("volumeMounts", []):
        mp = vm["mountPath"].rstrip("/") or "/"
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best["mountPath"].rstrip("/")):
                best = vm
    return best


def expand_env(s, env):
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), s)


def container_env(c, objs, ns):
    env = {}
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = str(e["value"])
        elif "valueFrom" in e:
            vf = e["valueFrom"]
            if "fieldRef" in vf:
                env[e["name"]] = {"spec.nodeName": "render-test-node",
                                  "status.podIP": "10.0.0.7"}.get(
                    vf["fieldRef"]["fieldPath"], "x")
            elif "secretKeyRef" in vf:
                ref = vf["secretKeyRef"]
                sec = objs.get(("Secret", ref["name"]))
                if sec is None:
                    # A user-supplied Secret: stand-in values.
                    env[e["name"]] = "existing-" + ref["key"]
                    continue
                if sec["metadata"].get("namespace") != ns:
                    fail("Secret %s is not in the release namespace" % ref["name"])
                data = sec.get("stringData", {})
                if ref["key"] in data:
                    env[e["name"]] = data[ref["key"]]
                elif not ref.get("optional"):
                    fail("%s: env %s: Secret %s has no key %s and the ref is not optional"
                         % (c["name"], e["name"], ref["name"], ref["key"]))
    return env


def materialize(c, pod, objs, root):
    """Build the container's mounts under root: directories for every mount,
    files for ConfigMap/Secret volumes (content from the rendered objects or
    stand-ins for objects the user provides)."""
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    for vm in c.get("volumeMounts", []):
        d = root + vm["mountPath"]
        if vm["mountPath"] == "/dev/fuse":
            continue
        os.makedirs(d, exist_ok=True)
        v = vols.get(vm["name"], {})
        for kind, src in (("ConfigMap", v.get("configMap")), ("Secret", v.get("secret"))):
            if not src:
                continue
            name = src.get("name") or src.get("secretName")
            obj = objs.get((kind, name))
            data = (obj or {}).get("data") or (obj or {}).get("stringData") or {}
            items = src.get("items") or [{"key": k, "path": k} for k in data]
            for it in items:
                content = data.get(it["key"])
                if content is None:
                    if obj is not None:
                        fail("%s %s has no key %s mounted by %s" % (kind, name, it["key"], c["name"]))
                    content = STANDIN_PEM
                with open(os.path.join(d, it["path"]), "w") as f:
                    f.write(content)


def rewrite_paths(args, c, root):
    """Point absolute paths inside the container's mounts at root."""
    mps = sorted((vm["mountPath"].rstrip("/") for vm in c.get("volumeMounts", [])),
                 key=len, reverse=True)

    def fix(v):
        prefix = ""
        if v.startswith("unix://"):
            prefix, v = "unix://", v[len("unix://"):]
        if v.startswith("/") and any(v == m or v.startswith(m + "/") for m in mps):
            return prefix + root + v
        return prefix + v
    out = []
    for a in args:
        if a.startswith("--") and "=" in a:
            k, v = a.split("=", 1)
            out.append(k + "=" + fix(v))
        else:
            out.append(fix(a))
    return out


def dry_run(where, c, pod, objs, ns, root):
    objfs_csi = os.environ.get("OBJFS_CSI")
    if not objfs_csi:
        return
    os.makedirs(root, exist_ok=True)
    materialize(c, pod, objs, root)
    env = container_env(c, objs, ns)
    argv = [expand_env(a, env) for a in c.get("command", [])[1:] + c.get("args", [])]
    argv = rewrite_paths(argv, c, root)
    run_env = {"PATH": "/usr/bin:/bin", "HOME": root}
    run_env.update(env)
    try:
        p = subprocess.run([objfs_csi, "--dry-run"] + argv, env=run_env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        fail("%s: objfs-csi --dry-run timed out" % where)
        return
    if p.returncode != 0 or p.stdout:
        fail("%s: objfs-csi --dry-run %s -> exit %d, stdout %r, stderr %r"
             % (where, " ".join(argv), p.returncode, p.stdout, p.stderr.strip()))


def check_upgrade_docs(where, strat):
    """docs/kubernetes.md and values.yaml say how the holder rolls on
    `helm upgrade` (the rendered strategy), that the new pod takes the
    mounts over, and what `kubectl delete pod` of a holder does."""
    root = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
    ru = strat.get("rollingUpdate", {})
    for rel in ("docs/kubernetes.md", "charts/objfs/values.yaml"):
        text = re.sub(r"\s*\n\s*#?\s*", " ", open(os.path.join(root, rel)).read())
        for want in ("type: %s" % strat.get("type"), "maxSurge: %s" % ru.get("maxSurge"),
                     "maxUnavailable: %s" % ru.get("maxUnavailable"), "helm upgrade",
                     "takes every mount over", "kubectl delete pod", "ENOTCONN"):
            if want not in text:
                fail("%s: %s does not say %r (how the holder rolls, or what deleting "
                     "its pod does)" % (where, rel, want))


def check_pod_basics(where, pod):
    names = [c["name"] for c in pod.get("initContainers", []) + pod["containers"]]
    if len(names) != len(set(names)):
        fail("%s: duplicate container names %s" % (where, names))
    vols = [v["name"] for v in pod.get("volumes", [])]
    if len(vols) != len(set(vols)):
        fail("%s: duplicate volume names %s" % (where, vols))
    ports = []
    for c in pod.get("initContainers", []) + pod["containers"]:
        for vm in c.get("volumeMounts", []):
            if vm["name"] not in vols:
                fail("%s/%s: volumeMount %s has no volume" % (where, c["name"], vm["name"]))
        for p in c.get("ports", []):
            ports.append(p["containerPort"])
        lp = c.get("livenessProbe", {}).get("httpGet")
        if lp and not any(p.get("name") == lp["port"] or p["containerPort"] == lp["port"]
                          for p in c.get("ports", [])):
            fail("%s/%s: liveness probe port %s not declared" % (where, c["name"], lp["port"]))
        if not c.get("resources", {}).get("requests"):
            fail("%s/%s: no resource requests" % (where, c["name"]))
    if len(ports) != len(set(ports)):
        fail("%s: duplicate container ports %s" % (where, ports))


def check_socket(where, pod, plugin, sidecars):
    """The plugin's --endpoint and each sidecar's --csi-address name the same
    file in the same volume."""
    args = plugin["args"]
    if "--endpoint" not in args:
        fail("%s: objfs-csi has no --endpoint" % where)
        return None
    ep = args[args.index("--endpoint") + 1]
    if not ep.startswith("unix:///"):
        fail("%s: endpoint %r is not unix:///..." % (where, ep))
        return None
    sock = ep[len("unix://"):]
    pm = mount_for(plugin, sock, pod["volumes"])
    if pm is None:
        fail("%s: socket %s is not on a volume" % (where, sock))
        return None
    for sc, flags in sidecars:
        addr = (flags or {}).get("csi-address", "")
        addr = addr[len("unix://"):] if addr.startswith("unix://") else addr
        sm = mount_for(sc, addr, pod["volumes"])
        if sm is None or sm["name"] != pm["name"]:
            fail("%s/%s: --csi-address %s is not on volume %s" % (where, sc["name"], addr, pm["name"]))
            continue
        rel_p = os.path.relpath(sock, pm["mountPath"])
        rel_s = os.path.relpath(addr, sm["mountPath"])
        if rel_p != rel_s:
            fail("%s/%s: socket %s (in volume: %s) != plugin's %s (%s)"
                 % (where, sc["name"], addr, rel_s, sock, rel_p))
    return sock, pm


def plugin_arg(c, flag):
    a = c["args"]
    return a[a.index(flag) + 1] if flag in a else None


def check_chart(case_name, docs):
    case = CASES[case_name]
    ns, fn = case["namespace"], case["fullname"]
    objs = index(docs)
    got = set(objs)
    want = expected_objects(case)
    if got != want:
        fail("%s: objects: missing %s, unexpected %s"
             % (case_name, sorted(want - got), sorted(got - want)))
    for (kind, name), d in objs.items():
        md = d.get("metadata", {})
        if not d.get("apiVersion") or not name:
            fail("%s: %s without apiVersion/name" % (case_name, kind))
        if kind in CLUSTER_SCOPED:
            if "namespace" in md:
                fail("%s: cluster-scoped %s/%s has a namespace" % (case_name, kind, name))
        elif md.get("namespace") != ns:
            fail("%s: %s/%s namespace %r != %r" % (case_name, kind, name, md.get("namespace"), ns))
        if len(name) > 63 and kind not in ("CSIDriver",):
            fail("%s: %s/%s name longer than 63" % (case_name, kind, name))

    drv = objs.get(("CSIDriver", DRIVER), {}).get("spec", {})
    want_drv = {"attachRequired": False, "podInfoOnMount": True, "fsGroupPolicy": "File",
                "volumeLifecycleModes": ["Persistent"]}
    for k, v in want_drv.items():
        if drv.get(k) != v:
            fail("%s: CSIDriver %s = %r, want %r" % (case_name, k, drv.get(k), v))

    # RBAC: bindings point at rendered roles and service accounts, no wildcards.
    for (kind, name), d in objs.items():
        if kind in ("ClusterRoleBinding", "RoleBinding"):
            rk = d["roleRef"]["kind"]
            if (rk, d["roleRef"]["name"]) not in objs:
                fail("%s: %s/%s refers to missing %s %s" % (case_name, kind, name, rk, d["roleRef"]["name"]))
            for s in d["subjects"]:
                if ("ServiceAccount", s["name"]) not in objs or s.get("namespace") != ns:
                    fail("%s: %s/%s subject %s/%s not rendered" % (case_name, kind, name, s.get("namespace"), s["name"]))
        if kind in ("ClusterRole", "Role"):
            for r in d["rules"]:
                if "*" in r.get("verbs", []) + r.get("resources", []) + r.get("apiGroups", []):
                    fail("%s: %s/%s has a wildcard rule" % (case_name, kind, name))

    def rules_allow(role, group, resource, verb):
        for r in (role or {}).get("rules", []):
            if group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"]:
                return True
        return False

    # Controller.
    dep = objs.get(("Deployment", fn + "-controller"))
    if dep:
        pod = dep["spec"]["template"]["spec"]
        where = "%s: Deployment/%s" % (case_name, fn + "-controller")
        check_pod_basics(where, pod)
        sel = dep["spec"]["selector"]["matchLabels"]
        if any(dep["spec"]["template"]["metadata"]["labels"].get(k) != v for k, v in sel.items()):
            fail("%s: selector does not match the pod labels" % where)
        sa = pod.get("serviceAccountName")
        if ("ServiceAccount", sa) not in objs:
            fail("%s: serviceAccountName %s not rendered" % (where, sa))
        sctx = pod.get("securityContext", {})
        if sctx.get("runAsNonRoot") is not True or not sctx.get("runAsUser"):
            fail("%s: controller pod must run as non-root" % where)
        cs = {c["name"]: c for c in pod["containers"]}
        plugin = cs.get("objfs-csi")
        if plugin is None:
            fail("%s: no objfs-csi container" % where)
        else:
            if plugin.get("command") != ["objfs-csi"] or plugin_arg(plugin, "--mode") != "controller":
                fail("%s: objfs-csi must run with --mode controller" % where)
            if plugin.get("securityContext", {}).get("privileged"):
                fail("%s: controller objfs-csi must not be privileged" % where)
            sidecars = []
            for name in ("csi-provisioner", "csi-resizer", "csi-snapshotter", "liveness-probe"):
                c = cs.get(name)
                if c is None:
                    fail("%s: no %s container" % (where, name))
                    continue
                flags = check_sidecar(where, c)
                sidecars.append((c, flags))
                if flags and name != "liveness-probe":
                    if flags.get("leader-election") not in ("true", None) or "leader-election" not in flags:
                        fail("%s/%s: leader election must be on (replicas > 1)" % (where, name))
                    if flags.get("leader-election-namespace") != ns:
                        fail("%s/%s: leader election namespace != %s" % (where, name, ns))
                    role = objs.get(("ClusterRole", "%s-%s" % (fn, name[4:])))
                    for g, r, verbs in UPSTREAM_RBAC[name]:
                        for v in verbs:
                            if not rules_allow(role, g, r, v):
                                fail("%s/%s: ClusterRole %s-%s lacks %s %s/%s (the sidecar's own RBAC grants it)"
                                     % (where, name, fn, name[4:], v, g or "core", r))
                if flags and name in ("csi-provisioner", "csi-snapshotter") and "extra-create-metadata" not in flags:
                    fail("%s/%s: --extra-create-metadata missing" % (where, name))
                if flags and name == "liveness-probe":
                    hp = health_port(where, flags)
                    if not any(p["containerPort"] == hp for p in plugin.get("ports", [])):
                        fail("%s: livenessprobe --health-port %d is not the objfs-csi healthz port" % (where, hp))
            for v in LEADER_ELECTION_VERBS:
                if not rules_allow(objs.get(("Role", fn + "-leader-election")), "coordination.k8s.io", "leases", v):
                    fail("%s: leader-election Role lacks %s leases" % (where, v))
            check_socket(where, pod, plugin, sidecars)
            check_plugin_common(where, plugin, pod, objs, case)
            dry_run(where + "/objfs-csi", plugin, pod, objs, ns,
                    os.path.join(os.environ.get("WORKDIR", "/tmp"), case_name + "-controller"))

    # Node.
    ds = objs.get(("DaemonSet", fn + "-node"))
    if ds:
        pod = ds["spec"]["template"]["spec"]
        where = "%s: DaemonSet/%s" % (case_name, fn + "-node")
        check_pod_basics(where, pod)
        if pod.get("hostPID"):
            fail("%s: hostPID must be off" % where)
        if bool(pod.get("hostNetwork")) != case["hostnetwork"]:
            fail("%s: hostNetwork %r, want %r (node.hostNetwork)" % (where, pod.get("hostNetwork"), case["hostnetwork"]))
        if pod.get("hostNetwork") and pod.get("dnsPolicy") != "ClusterFirstWithHostNet":
            fail("%s: hostNetwork needs dnsPolicy ClusterFirstWithHostNet" % where)
        # An upgrade that changes the node pod must take effect by itself
        # wherever replacing the pod keeps the mounts (hostSystemd), and must
        # not replace it where that breaks them.
        strat = ds["spec"].get("updateStrategy", {})
        if strat != case["strategy"]:
            fail("%s: updateStrategy %r, want %r" % (where, strat, case["strategy"]))
        if pod.get("automountServiceAccountToken") is not False:
            fail("%s: node pods need no API token" % where)
        tol = pod.get("tolerations", [])
        if case_name == "default" and {"operator": "Exists"} not in tol:
            fail("%s: default tolerations must tolerate every taint" % where)
        cs = {c["name"]: c for c in pod["containers"]}
        vols = {v["name"]: v for v in pod["volumes"]}
        plugin = cs.get("objfs-csi")
        if plugin is None:
            fail("%s: no objfs-csi container" % where)
            return
        if plugin_arg(plugin, "--mode") != "node" or plugin_arg(plugin, "--node-id") != "$(NODE_ID)":
            fail("%s: objfs-csi must run with --mode node --node-id $(NODE_ID)" % where)
        env = {e["name"]: e for e in plugin.get("env", [])}
        if env.get("NODE_ID", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != "spec.nodeName":
            fail("%s: NODE_ID must come from spec.nodeName" % where)
        if plugin.get("securityContext", {}).get("privileged") is not True \
                or plugin["securityContext"].get("runAsUser") != 0:
            fail("%s: node objfs-csi must be privileged and run as root (image user is not)" % where)
        kd = case["kubelet"]
        if plugin_arg(plugin, "--kubelet-dir") != kd:
            fail("%s: --kubelet-dir %r != %r" % (where, plugin_arg(plugin, "--kubelet-dir"), kd))
        km = [vm for vm in plugin["volumeMounts"] if vm["mountPath"] == kd]
        if not km or km[0].get("mountPropagation") != "Bidirectional" \
                or vols[km[0]["name"]].get("hostPath", {}).get("path") != kd:
            fail("%s: kubelet dir %s must be a hostPath mounted at the same path, Bidirectional" % (where, kd))
        sd = case["state"]
        if plugin_arg(plugin, "--state-dir") != sd:
            fail("%s: --state-dir %r != %r" % (where, plugin_arg(plugin, "--state-dir"), sd))
        sm = mount_for(plugin, sd, vols)
        if sm is None or vols[sm["name"]].get("hostPath", {}).get("path") != sd:
            fail("%s: state dir %s is not the hostPath %s" % (where, sd, sd))
        fm = [vm for vm in plugin["volumeMounts"] if vm["mountPath"] == "/dev/fuse"]
        if not fm or vols[fm[0]["name"]].get("hostPath", {}).get("type") != "CharDevice":
            fail("%s: /dev/fuse not mounted from the host" % where)
        mem = plugin_arg(plugin, "--mount-memory-mib")
        if mem is None or not mem.isdigit():
            fail("%s: --mount-memory-mib missing" % where)
        sidecars = []
        for name in ("node-driver-registrar", "liveness-probe"):
            c = cs.get(name)
            if c is None:
                fail("%s: no %s container" % (where, name))
                continue
            sidecars.append((c, check_sidecar(where, c)))
        res = check_socket(where, pod, plugin, sidecars)
        reg = cs.get("node-driver-registrar")
        if res and reg:
            sock, pm = res
            host_dir = vols[pm["name"]].get("hostPath", {}).get("path")
            want_dir = "%s/plugins/%s" % (kd, DRIVER)
            if host_dir != want_dir:
                fail("%s: socket volume hostPath %r != %r" % (where, host_dir, want_dir))
            host_sock = os.path.normpath(os.path.join(host_dir or "", os.path.relpath(sock, pm["mountPath"])))
            rp = sidecar_args(reg).get("kubelet-registration-path")
            if rp != host_sock:
                fail("%s: --kubelet-registration-path %r != host socket %r" % (where, rp, host_sock))
            rm = [vm for vm in reg["volumeMounts"] if vm["mountPath"] == "/registration"]
            if not rm or vols[rm[0]["name"]].get("hostPath", {}).get("path") != kd + "/plugins_registry":
                fail("%s: registrar /registration is not %s/plugins_registry" % (where, kd))
        lp = cs.get("liveness-probe")
        if lp:
            hp = health_port(where, sidecar_args(lp))
            if not any(p["containerPort"] == hp for p in plugin.get("ports", [])):
                fail("%s: livenessprobe --health-port %d is not the objfs-csi healthz port" % (where, hp))
        hs = [vm for vm in plugin["volumeMounts"] if vm["mountPath"] == "/run/systemd"]
        if case["hostsystemd"]:
            if not hs or vols[hs[0]["name"]].get("hostPath", {}).get("path") != "/run/systemd":
                fail("%s: hostSystemd: /run/systemd not mounted" % where)
            if env.get("OBJFS_MOUNT_RUNTIME_DIR", {}).get("value") != sd + "/runtime/current":
                fail("%s: hostSystemd: OBJFS_MOUNT_RUNTIME_DIR wrong" % where)
            inits = {c["name"]: c for c in pod.get("initContainers", [])}
            ic = inits.get("install-mount-runtime")
            if not ic or not mount_for(ic, sd + "/runtime", vols):
                fail("%s: hostSystemd: install-mount-runtime must write to %s" % (where, sd))
        elif hs or pod.get("initContainers"):
            fail("%s: /run/systemd or init containers without hostSystemd" % where)
        check_holder(case_name, case, objs, fn, plugin, env, vols)
        check_plugin_common(where, plugin, pod, objs, case)
        dry_run(where + "/objfs-csi", plugin, pod, objs, ns,
                os.path.join(os.environ.get("WORKDIR", "/tmp"), case_name + "-node"))

    check_secrets(case_name, case, objs)
    check_metrics(case_name, case, objs)


def check_metrics(case_name, case, objs):
    """objfs-csi serves /metrics on the port its container names
    "metrics", the Services select those pods and name that port, the
    monitors select the Services (or pods), the dashboard parses."""
    fn = case["fullname"]
    pods = {"controller": objs.get(("Deployment", fn + "-controller")),
            "node": objs.get(("DaemonSet", fn + "-node"))}
    for comp, wl in pods.items():
        if wl is None:
            continue
        where = "%s: %s metrics" % (case_name, comp)
        tmpl = wl["spec"]["template"]
        plugin = {c["name"]: c for c in tmpl["spec"]["containers"]}["objfs-csi"]
        addr = plugin_arg(plugin, "--metrics-address")
        ports = {p["name"]: p["containerPort"] for p in plugin.get("ports", [])}
        if not case["metrics"]:
            if addr is not None or "metrics" in ports:
                fail("%s: metrics are off but served" % where)
            continue
        port = case["metrics"][comp]
        # on the pod's own address (metrics.bindPodIP), not every interface
        env = {e["name"]: e for e in plugin.get("env", [])}
        if addr != "[$(POD_IP)]:%d" % port or ports.get("metrics") != port:
            fail("%s: --metrics-address %r / port %r, want [$(POD_IP)]:%d" %
                 (where, addr, ports.get("metrics"), port))
        if env.get("POD_IP", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") \
                != "status.podIP":
            fail("%s: POD_IP must come from status.podIP (the downward API)" % where)
        check_netpol(where, case, objs, fn, comp, tmpl, port)
        if list(ports.values()).count(port) != 1:
            fail("%s: port %d used twice in the container" % (where, port))
        svc = objs.get(("Service", "%s-%s-metrics" % (fn, comp)))
        if svc is None:
            continue
        sel = svc["spec"]["selector"]
        if any(tmpl["metadata"]["labels"].get(k) != v for k, v in sel.items()):
            fail("%s: Service selector %r does not select the pods" % (where, sel))
        sp = svc["spec"]["ports"]
        if len(sp) != 1 or sp[0]["name"] != "metrics" or sp[0]["targetPort"] != "metrics":
            fail("%s: Service ports %r" % (where, sp))
        sm = objs.get(("ServiceMonitor", "%s-%s" % (fn, comp)))
        if sm is not None:
            ml = sm["spec"]["selector"]["matchLabels"]
            if any(svc["metadata"]["labels"].get(k) != v for k, v in ml.items()):
                fail("%s: ServiceMonitor does not select the Service" % where)
            if sm["spec"]["endpoints"][0]["port"] != "metrics":
                fail("%s: ServiceMonitor port" % where)
    pm = objs.get(("PodMonitor", fn))
    if pm is not None:
        exprs = {e["key"]: e["values"] for e in pm["spec"]["selector"]["matchExpressions"]}
        for comp, wl in pods.items():
            labels = wl["spec"]["template"]["metadata"]["labels"]
            if any(labels.get(k) not in v for k, v in exprs.items()):
                fail("%s: PodMonitor does not select the %s pods" % (case_name, comp))
    cm = objs.get(("ConfigMap", fn + "-dashboard"))
    if cm is not None:
        try:
            dash = json.loads(cm["data"]["objfs.json"])
            if not dash.get("panels"):
                fail("%s: the dashboard has no panels" % case_name)
        except (KeyError, ValueError) as e:
            fail("%s: the dashboard ConfigMap: %s" % (case_name, e))


def check_netpol(where, case, objs, fn, comp, tmpl, port):
    """The component's NetworkPolicy: it selects the pods, admits ingress
    only to the metrics port and only from the scraper (never from
    everyone), and no other policy of the chart opens another port."""
    name = "%s-%s-metrics" % (fn, comp)
    np = objs.get(("NetworkPolicy", name))
    if comp not in case["netpol"]:
        if np is not None:
            fail("%s: NetworkPolicy %s rendered where it cannot apply" % (where, name))
        return
    if np is None:
        fail("%s: no NetworkPolicy %s: any pod can read /metrics" % (where, name))
        return
    sp = np["spec"]
    sel = sp.get("podSelector", {}).get("matchLabels", {})
    if not sel or any(tmpl["metadata"]["labels"].get(k) != v for k, v in sel.items()):
        fail("%s: NetworkPolicy podSelector %r does not select the pods" % (where, sel))
    if sp.get("policyTypes") != ["Ingress"]:
        fail("%s: NetworkPolicy policyTypes %r, want [Ingress]" % (where, sp.get("policyTypes")))
    rules = sp.get("ingress", [])
    if len(rules) != 1:
        fail("%s: NetworkPolicy has %d ingress rules, want 1" % (where, len(rules)))
        return
    if rules[0].get("ports") != [{"port": port, "protocol": "TCP"}]:
        fail("%s: NetworkPolicy ports %r, want only the metrics port %d" %
             (where, rules[0].get("ports"), port))
    peers = rules[0].get("from")
    if not peers:
        fail("%s: NetworkPolicy admits every source (no from)" % where)
    elif case["namespace"] != "objfs-system" and peers != [DEFAULT_SCRAPER]:
        fail("%s: NetworkPolicy from %r, want the default scraper %r" % (where, peers, DEFAULT_SCRAPER))
    for p in peers or []:
        # {} and {} (or a lone {}) admit every pod: not a scraper
        if "ipBlock" in p or not (p.get("namespaceSelector") or p.get("podSelector")):
            fail("%s: NetworkPolicy peer %r is not a scraper selector" % (where, p))


def check_dashboard(path):
    """Every query of the Grafana dashboard is PromQL that promtool
    accepts (when promtool is installed), over metrics docs/metrics.md
    documents."""
    dash = json.load(open(path))
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    if len(exprs) < 10:
        fail("dashboard: only %d queries" % len(exprs))
    doc = open(os.path.join(os.path.dirname(path), "..", "..", "..", "docs",
                            "metrics.md")).read()
    for e in exprs:
        for name in re.findall(r"\b(objfs_[a-z0-9_]+|process_[a-z_]+)", e):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            if "`%s`" % base not in doc and "`%s`" % name not in doc:
                fail("dashboard: %s is not in docs/metrics.md" % name)
    promtool = next((p for p in ("/usr/bin/promtool", "/usr/local/bin/promtool")
                     if os.access(p, os.X_OK)), None)
    if promtool is None:
        return
    rules = "groups:\n- name: dashboard\n  rules:\n" + "".join(
        "  - record: q%d\n    expr: %s\n" % (i, json.dumps(
            e.replace("$namespace", ".*").replace("$pvc", ".*")))
        for i, e in enumerate(exprs))
    p = subprocess.run([promtool, "check", "rules", "/dev/stdin"], input=rules.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        fail("dashboard: promtool rejects a query: %s" % p.stdout.decode()[-2000:])


def check_holder(case_name, case, objs, fn, plugin, env, pvols):
    """The objfs-holder DaemonSet (without hostSystemd): it keeps the mounts
    the plugin asks for, so it sees the same paths, and rolls without loss."""
    ds = objs.get(("DaemonSet", fn + "-holder"))
    where = "%s: DaemonSet/%s" % (case_name, fn + "-holder")
    runner = env.get("OBJFS_MOUNT_RUNNER", {}).get("value")
    if case["hostsystemd"]:
        if ds or runner != "host-systemd":
            fail("%s: hostSystemd: no holder, runner host-systemd (got %r)" % (where, runner))
        return
    if not ds:
        fail("%s: missing (the default keeps mounts out of the node pod)" % where)
        return
    if runner != "holder":
        fail("%s: objfs-csi needs OBJFS_MOUNT_RUNNER=holder, got %r" % (where, runner))
    strat = ds["spec"].get("updateStrategy", {})
    if strat != {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}:
        fail("%s: updateStrategy %r: a roll must start the new holder first" % (where, strat))
    if case_name == "default":
        check_upgrade_docs(where, strat)
    pod = ds["spec"]["template"]["spec"]
    check_pod_basics(where, pod)
    if pod.get("priorityClassName") != "system-node-critical":
        fail("%s: priorityClassName must be system-node-critical" % where)
    if pod.get("hostPID"):
        fail("%s: hostPID must be off" % where)
    if bool(pod.get("hostNetwork")) != case["hostnetwork"]:
        fail("%s: hostNetwork must follow node.hostNetwork (the mounts reach S3)" % where)
    cs = {c["name"]: c for c in pod["containers"]}
    h = cs.get("objfs-holder")
    if h is None:
        fail("%s: no objfs-holder container" % where)
        return
    vols = {v["name"]: v for v in pod["volumes"]}
    if h.get("securityContext", {}).get("privileged") is not True \
            or h["securityContext"].get("runAsUser") != 0:
        fail("%s: must be privileged and root (FUSE mounts)" % where)
    args = h.get("args", [])
    sock = args[args.index("--socket") + 1] if "--socket" in args else None
    if sock != env.get("OBJFS_HOLDER_SOCKET", {}).get("value") or sock != case["state"] + "/holder.sock":
        fail("%s: --socket %r is not objfs-csi's OBJFS_HOLDER_SOCKET in the state dir" % (where, sock))
    probe = h.get("readinessProbe", {}).get("exec", {}).get("command", [])
    ready = args[args.index("--ready-file") + 1] if "--ready-file" in args else None
    if probe[:2] != ["objfs-holder", "--check"] or sock not in probe or ready not in probe:
        fail("%s: readinessProbe must be objfs-holder --check on its socket and ready file" % where)
    rm = mount_for(h, ready or "/nonexistent", vols)
    if rm is None or "emptyDir" not in vols[rm["name"]]:
        fail("%s: the ready file must be in the pod (an emptyDir), not on the host" % where)
    kd = case["kubelet"]
    km = [vm for vm in h["volumeMounts"] if vm["mountPath"] == kd]
    if not km or km[0].get("mountPropagation") != "Bidirectional" \
            or vols[km[0]["name"]].get("hostPath", {}).get("path") != kd:
        fail("%s: kubelet dir %s must be a hostPath at the same path, Bidirectional" % (where, kd))
    sm = mount_for(h, case["state"], vols)
    if sm is None or vols[sm["name"]].get("hostPath", {}).get("path") != case["state"]:
        fail("%s: state dir is not the hostPath %s" % (where, case["state"]))
    fm = [vm for vm in h["volumeMounts"] if vm["mountPath"] == "/dev/fuse"]
    if not fm or vols[fm[0]["name"]].get("hostPath", {}).get("type") != "CharDevice":
        fail("%s: /dev/fuse not mounted from the host" % where)
    # every path the plugin hands a mount (CA file) must exist in the holder
    pm = {vm["mountPath"] for vm in plugin["volumeMounts"]}
    hm = {vm["mountPath"] for vm in h["volumeMounts"]}
    for p in pm - hm:
        if p.startswith("/etc/objfs"):
            fail("%s: %s is mounted in objfs-csi but not in the holder" % (where, p))
    lim = h.get("resources", {}).get("limits", {}).get("memory")
    if not lim:
        fail("%s: a memory limit is required (the mounts' memory is here)" % where)


def check_plugin_common(where, plugin, pod, objs, case):
    text = json.dumps(plugin.get("args", []) + plugin.get("command", []))
    for d in objs.values():
        if d["kind"] == "Secret":
            for k, v in d.get("stringData", {}).items():
                if v and v in text:
                    fail("%s: Secret value of %s appears in the arguments" % (where, k))
    ll = plugin_arg(plugin, "--log-level")
    if ll not in ("debug", "info", "warn", "error"):
        fail("%s: --log-level %r" % (where, ll))
    ca = plugin_arg(plugin, "--s3-ca-file")
    vols = {v["name"]: v for v in pod["volumes"]}
    if case["ca"]:
        m = mount_for(plugin, ca or "", vols)
        if not ca or m is None or vols[m["name"]].get("configMap", {}).get("name") != case["ca"]:
            fail("%s: --s3-ca-file %r is not in ConfigMap %s" % (where, ca, case["ca"]))
        else:
            key = os.path.relpath(ca, m["mountPath"])
            items = vols[m["name"]]["configMap"].get("items", [])
            if not any(i["path"] == key for i in items):
                fail("%s: --s3-ca-file %s: no item %s in the volume" % (where, ca, key))
            cm = objs.get(("ConfigMap", case["ca"]))
            if cm is not None:
                src = [i["key"] for i in items if i["path"] == key]
                pem = cm["data"].get(src[0] if src else "", "")
                if "BEGIN CERTIFICATE" not in pem:
                    fail("%s: ConfigMap %s key %s holds no PEM certificate" % (where, case["ca"], key))
    elif ca:
        fail("%s: --s3-ca-file without a CA bundle" % where)
    env = {e["name"]: e for e in plugin.get("env", [])}
    if case["secret"]:
        for var, key in (("AWS_ACCESS_KEY_ID", "accessKeyID"), ("AWS_SECRET_ACCESS_KEY", "secretAccessKey"),
                         ("AWS_SESSION_TOKEN", "sessionToken")):
            ref = env.get(var, {}).get("valueFrom", {}).get("secretKeyRef", {})
            if ref.get("name") != case["secret"] or ref.get("key") != key:
                fail("%s: %s must come from Secret %s key %s" % (where, var, case["secret"], key))
    elif any(v.startswith("AWS_") for v in env):
        fail("%s: AWS_* variables without a Secret" % where)


def check_secrets(case_name, case, objs):
    ns = case["namespace"]
    sec_name = case["secret"]
    sec = objs.get(("Secret", sec_name)) if sec_name else None
    if case["created_secret"]:
        if sec is None:
            fail("%s: Secret %s not rendered" % (case_name, sec_name))
        else:
            keys = set(sec.get("stringData", {}))
            if not SECRET_KEYS_REQUIRED <= keys or not keys <= SECRET_KEYS_READ:
                fail("%s: Secret keys %s: need %s, allowed %s"
                     % (case_name, sorted(keys), sorted(SECRET_KEYS_REQUIRED), sorted(SECRET_KEYS_READ)))
    for kind, name, roles in (("StorageClass", case["storageclass"],
                               ("provisioner", "node-stage", "controller-expand")),
                              ("VolumeSnapshotClass", case["vsc"], ("snapshotter",))):
        if not name:
            continue
        o = objs.get((kind, name))
        if o is None:
            continue
        drv = o.get("provisioner") if kind == "StorageClass" else o.get("driver")
        if drv != DRIVER:
            fail("%s: %s/%s driver %r" % (case_name, kind, name, drv))
        params = o.get("parameters", {}) or {}
        for k, v in params.items():
            if not isinstance(v, str):
                fail("%s: %s/%s parameter %s is not a string" % (case_name, kind, name, k))
        for role in roles:
            n = params.get("csi.storage.k8s.io/%s-secret-name" % role)
            s = params.get("csi.storage.k8s.io/%s-secret-namespace" % role)
            if sec_name is None and n is None and s is None:
                continue        # no Secret: the plugin's own keys (IRSA, ...)
            if n != sec_name or s != ns:
                fail("%s: %s/%s %s secret %s/%s, want %s/%s"
                     % (case_name, kind, name, role, s, n, ns, sec_name))
        if kind == "StorageClass":
            if not params.get("bucket"):
                fail("%s: StorageClass without bucket" % case_name)
            if params.get("onDelete") not in ("delete", "retain", "archive"):
                fail("%s: StorageClass onDelete %r" % (case_name, params.get("onDelete")))
            if params.get("addressingStyle") not in ("path", "virtual"):
                fail("%s: StorageClass addressingStyle %r" % (case_name, params.get("addressingStyle")))
            bp = params.get("basePrefix", "")
            if bp.startswith("/") or bp.endswith("/"):
                fail("%s: basePrefix %r has leading/trailing slash" % (case_name, bp))


def check_examples(docs):
    objs = index(docs)
    kinds = sorted(k for k, _ in objs)
    for need in ("StorageClass", "PersistentVolumeClaim", "Pod", "VolumeSnapshot", "PersistentVolume"):
        if need not in kinds:
            fail("examples: no %s" % need)
    scs = {n for k, n in objs if k == "StorageClass"}
    for (k, n), d in objs.items():
        if k == "StorageClass" and d.get("provisioner") != DRIVER:
            fail("examples: StorageClass %s provisioner %r" % (n, d.get("provisioner")))
        if k == "PersistentVolumeClaim":
            sp = d["spec"]
            if sp.get("storageClassName") not in scs | {""}:
                fail("examples: PVC %s uses unknown StorageClass %r" % (n, sp.get("storageClassName")))
            ds = sp.get("dataSource")
            if ds and (ds.get("kind"), ds.get("name")) not in objs:
                fail("examples: PVC %s dataSource %s/%s not in the examples" % (n, ds.get("kind"), ds.get("name")))
        if k == "VolumeSnapshot":
            src = d["spec"]["source"].get("persistentVolumeClaimName")
            if ("PersistentVolumeClaim", src) not in objs:
                fail("examples: VolumeSnapshot %s source PVC %r missing" % (n, src))
        if k == "Pod":
            for v in d["spec"].get("volumes", []):
                c = v.get("persistentVolumeClaim", {}).get("claimName")
                if c and ("PersistentVolumeClaim", c) not in objs:
                    fail("examples: Pod %s uses missing PVC %s" % (n, c))
        if k == "PersistentVolume":
            csi = d["spec"].get("csi", {})
            if csi.get("driver") != DRIVER:
                fail("examples: PV %s driver %r" % (n, csi.get("driver")))
            if not csi.get("volumeHandle"):
                fail("examples: PV %s has no volumeHandle" % n)
            # what NodeStageVolume reads (src/csi/node.c stage_spec)
            attrs = csi.get("volumeAttributes", {})
            unknown = set(attrs) - {"source", "endpoint", "region", "addressingStyle", "mountOptions"}
            if unknown:
                fail("examples: PV %s volumeAttributes the node ignores: %s" % (n, sorted(unknown)))
            if not re.match(r"^s3://[a-z0-9][a-z0-9.-]+/.+$", attrs.get("source", "")):
                fail("examples: PV %s source %r is not s3://<bucket>/<prefix>" % (n, attrs.get("source")))
            ref = csi.get("nodeStageSecretRef")
            if ref and ("Secret", ref["name"]) in objs:
                keys = set(objs[("Secret", ref["name"])].get("stringData", {}))
                if not SECRET_KEYS_REQUIRED <= keys <= SECRET_KEYS_READ:
                    fail("examples: Secret %s keys %s" % (ref["name"], sorted(keys)))
    rwx = [n for (k, n), d in objs.items() if k == "PersistentVolumeClaim"
           and "ReadWriteMany" in d["spec"].get("accessModes", [])]
    if not rwx:
        fail("examples: no ReadWriteMany PVC")
    pods_on = {}
    for (k, n), d in objs.items():
        if k == "Pod":
            for v in d["spec"].get("volumes", []):
                c = v.get("persistentVolumeClaim", {}).get("claimName")
                if c:
                    pods_on.setdefault(c, []).append(n)
    if not any(len(p) >= 2 for c, p in pods_on.items() if c in rwx):
        fail("examples: no two pods sharing a ReadWriteMany PVC")


# ---- the install commands of the docs ------------------------------------------

HELM_FLAGS = {"--create-namespace", "--wait", "--atomic", "--reuse-values", "--install", "-i",
              "--debug", "--dry-run", "--reset-values", "--wait-for-jobs", "--devel"}
HELM_OPTS = {"--version", "--timeout", "--description"}
DOC_CHART = {"charts/objfs", "./charts/objfs"}


def split_set(arg):
    """Helm's --set list: a=b,c=d, with \\, escaping a comma and {x,y}
    lists kept whole."""
    out, cur, depth, i = [], "", 0, 0
    while i < len(arg):
        ch = arg[i]
        if ch == "\\" and i + 1 < len(arg):
            cur += arg[i:i + 2]
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    out.append(cur)
    return [x for x in out if x]


def helm_scalar(v, typed):
    """A --set value as Helm's strvals types it (--set-string: typed False)."""
    if not typed:
        return v
    if v in ("true", "false"):
        return v == "true"
    if v == "null":
        return None
    if re.match(r"^-?(0|[1-9][0-9]*)$", v):
        return int(v)
    return v


def set_path(vals, key, value, where):
    parts = [p.replace("\\.", ".") for p in re.split(r"(?<!\\)\.", key)]
    d = vals
    for p in parts[:-1]:
        if not re.match(r"^[A-Za-z0-9_-]+$", p):
            raise ValueError("%s: unsupported --set key %r" % (where, key))
        d = d.setdefault(p, {})
        if not isinstance(d, dict):
            raise ValueError("%s: --set %s crosses a non-map value" % (where, key))
    if not re.match(r"^[A-Za-z0-9_./-]+$", parts[-1]):
        raise ValueError("%s: unsupported --set key %r" % (where, key))
    d[parts[-1]] = value


def apply_set(vals, kind, arg, where, root):
    if kind == "--set-json":
        k, v = arg.split("=", 1)
        set_path(vals, k, json.loads(v), where)
        return
    if kind == "--set-file":
        k, v = arg.split("=", 1)
        path = os.path.join(root, v)
        set_path(vals, k, open(path).read() if os.path.exists(path) else STANDIN_PEM, where)
        return
    for item in split_set(arg):
        if "=" not in item:
            raise ValueError("%s: --set %r has no value" % (where, item))
        k, v = item.split("=", 1)
        if v.startswith("{") and v.endswith("}"):
            value = [helm_scalar(x, kind == "--set") for x in split_set(v[1:-1])]
        else:
            value = helm_scalar(v.replace("\\,", ","), kind == "--set")
        set_path(vals, k, value, where)


def merge_values(dst, src):
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            merge_values(dst[k], v)
        else:
            dst[k] = v


def parse_helm(tokens, where, root):
    """One `helm install|upgrade` command line: (verb, reuse, name, ns,
    values); verb "install" also for `upgrade --install`."""
    verb = tokens[1]
    pos, vals, ns, reuse, install = [], {}, "default", False, verb == "install"
    i = 2
    while i < len(tokens):
        t = tokens[i]
        opt, eq, inline = t.partition("=") if t.startswith("--") else (t, "", "")
        if opt in ("--set", "--set-string", "--set-json", "--set-file", "-f", "--values",
                   "-n", "--namespace") or opt in HELM_OPTS:
            if eq:
                arg = inline
            else:
                i += 1
                if i >= len(tokens):
                    raise ValueError("%s: %s without a value" % (where, opt))
                arg = tokens[i]
            if opt in ("-n", "--namespace"):
                ns = arg
            elif opt in ("-f", "--values"):
                path = os.path.join(root, arg)
                if not os.path.exists(path):
                    raise ValueError("%s: values file %s is not in the repository" % (where, arg))
                import yaml     # PyYAML: only for a doc command with -f
                with open(path) as f:
                    merge_values(vals, json.loads(json.dumps(yaml.safe_load(f) or {})))
            elif opt.startswith("--set"):
                apply_set(vals, opt, arg, where, root)
        elif t in HELM_FLAGS:
            reuse |= t == "--reuse-values"
            install |= t in ("--install", "-i")
        elif t.startswith("-"):
            raise ValueError("%s: helm option %s unknown to this test: teach parse_helm" % (where, t))
        else:
            pos.append(t)
        i += 1
    if len(pos) != 2 or pos[1] not in DOC_CHART:
        raise ValueError("%s: want RELEASE %s, got %r" % (where, " or ".join(sorted(DOC_CHART)), pos))
    return ("install" if install else "upgrade"), reuse, pos[0], ns, vals


def doc_helm_commands(path, root):
    """Every helm install/upgrade command in the fenced code blocks of a
    Markdown file: (line, tokens)."""
    import shlex
    out, fence, buf, start = [], False, "", 0
    for n, line in enumerate(open(path).read().split("\n"), 1):
        if line.lstrip().startswith("```"):
            fence, buf = not fence, ""
            continue
        if not fence:
            continue
        if not buf:
            start = n
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        cmd, buf = (buf + line).split("#", 1)[0].strip(), ""
        if re.match(r"^helm\s+(install|upgrade)\b", cmd):
            out.append((start, shlex.split(cmd)))
    return out


def doc_commands(outdir, docs):
    """Writes the values of every documented helm install (and upgrade,
    on top of the doc's last install with --reuse-values) to
    OUTDIR/N.json and prints "N RELEASE NAMESPACE FILE:LINE" per command.
    A document named here with no install command fails."""
    root = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
    n = 0
    for doc in docs:
        rel = os.path.relpath(doc, root)
        last, installs = None, 0
        for line, tokens in doc_helm_commands(doc, root):
            where = "%s:%d" % (rel, line)
            try:
                verb, reuse, name, ns, vals = parse_helm(tokens, where, root)
            except (ValueError, KeyError, IndexError) as e:
                fail(str(e))
                continue
            if verb == "install":
                installs += 1
                last = vals
            elif reuse:
                if last is None:
                    fail("%s: helm upgrade --reuse-values before any install in the document" % where)
                    continue
                base = json.loads(json.dumps(last))
                merge_values(base, vals)
                vals = base
            n += 1
            with open(os.path.join(outdir, "%d.json" % n), "w") as f:
                json.dump(vals, f)
            print(n, name, ns, where)
        if installs == 0 and os.path.basename(rel) in ("README.md", "kubernetes.md"):
            fail("%s: no helm install command found in its code blocks" % rel)


def check_classes(where, rendered, examples):
    """Every class an example uses exists in what the chart rendered, the
    classes the examples make by hand have the chart's names, and no
    documented install makes its StorageClass the cluster default."""
    objs, ex = index(rendered), index(examples)
    scs = {n for k, n in objs if k == "StorageClass"}
    vscs = {n for k, n in objs if k == "VolumeSnapshotClass"}
    if not scs:
        fail("%s: no StorageClass rendered: examples/ PVCs would stay Pending" % where)
    for (k, n), d in ex.items():
        if k == "PersistentVolumeClaim":
            sc = d["spec"].get("storageClassName")
            if sc and sc not in scs:
                fail("%s: examples PVC %s uses StorageClass %r; the install makes %s"
                     % (where, n, sc, sorted(scs)))
        if k == "VolumeSnapshot" and vscs:
            c = d["spec"].get("volumeSnapshotClassName")
            if c and c not in vscs:
                fail("%s: examples VolumeSnapshot %s uses class %r; the install makes %s"
                     % (where, n, c, sorted(vscs)))
        if k == "StorageClass" and scs and n not in scs:
            fail("%s: examples/storageclass.yaml makes %s by hand, the chart %s" % (where, n, sorted(scs)))
        if k == "VolumeSnapshotClass" and vscs and n not in vscs:
            fail("%s: examples/volumesnapshotclass.yaml makes %s by hand, the chart %s"
                 % (where, n, sorted(vscs)))
    for (k, n), d in objs.items():
        if k == "StorageClass" and "storageclass.kubernetes.io/is-default-class" in \
                (d["metadata"].get("annotations") or {}):
            fail("%s: StorageClass %s is made the cluster default without being asked" % (where, n))


# Values whose children are free-form Kubernetes structures or plain image
# coordinates: their children need no comment of their own.
OPAQUE_PARENTS = {"resources", "requests", "limits", "nodeSelector", "tolerations", "affinity",
                  "podAnnotations", "podLabels", "updateStrategy", "rollingUpdate",
                  "featureGates", "parameters", "mountOptions", "image",
                  "namespaceSelector", "podSelector"}


def check_values(path):
    lines = open(path).read().split("\n")
    stack = []  # (indent, key)
    prev = ""
    for i, line in enumerate(lines, 1):
        s = line.strip()
        if not s:
            prev = ""
            continue
        if s.startswith("#"):
            prev = s
            continue
        indent = len(line) - len(line.lstrip(" "))
        m = re.match(r"^([A-Za-z0-9_]+):", s)
        if m:
            while stack and stack[-1][0] >= indent:
                stack.pop()
            parents = [k for _, k in stack]
            opaque = any(p in OPAQUE_PARENTS for p in parents)
            if not prev.startswith("#") and not opaque:
                fail("values.yaml:%d: %s has no comment" % (i, ".".join(parents + [m.group(1)])))
            stack.append((indent, m.group(1)))
        prev = s


STANDIN_PEM = "-----BEGIN CERTIFICATE-----\nstand-in\n-----END CERTIFICATE-----\n"


def check_dockerfile(path):
    text = open(path).read()
    body = "\n".join(l for l in text.split("\n") if not l.lstrip().startswith("#"))
    joined = re.sub(r"\\\n", " ", body)
    froms = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", joined, re.M | re.I)
    if len(froms) < 2:
        fail("Dockerfile: want a multi-stage build, found %d FROM" % len(froms))
        return
    if not all(f[0].startswith("debian:bookworm") for f in froms):
        fail("Dockerfile: every stage must be Debian 12 (bookworm): %s" % [f[0] for f in froms])
    if froms[-1][0] != "debian:bookworm-slim":
        fail("Dockerfile: runtime stage must be debian:bookworm-slim, is %s" % froms[-1][0])
    stages = re.split(r"^FROM\s", joined, flags=re.M | re.I)[1:]
    build, runtime = stages[0], stages[-1]
    for step in ("autoreconf -fi", "./configure", "make", "make install DESTDIR="):
        if step not in build:
            fail("Dockerfile: build stage lacks %r" % step)
    if "apt-get install" not in build:
        fail("Dockerfile: build stage must install its dependencies with apt-get")
    for pkg in ("fuse3", "ca-certificates", "libfuse3-3", "libcurl4", "libssl3",
                "libprotobuf-c1", "libgrpc29", "libexpat1"):
        if not re.search(r"(^|\s)%s(\s|$)" % re.escape(pkg), runtime):
            fail("Dockerfile: runtime stage does not install %s" % pkg)
    for dev in re.findall(r"\S+-dev\b", runtime):
        fail("Dockerfile: runtime stage installs a -dev package: %s" % dev)
    if not re.search(r"COPY\s+--from=", runtime):
        fail("Dockerfile: runtime stage copies nothing from the build stage")
    for prog in ("objfs-csi", "objfs-mount"):
        if prog not in runtime:
            fail("Dockerfile: runtime stage does not mention %s" % prog)
    if not re.search(r"^USER\s+\S+", runtime, re.M):
        fail("Dockerfile: no USER (non-root) in the runtime stage")
    if re.search(r"\b(curl|wget)\b[^\n|]*\|\s*(ba|da)?sh\b", joined):
        fail("Dockerfile: pipes a download into a shell")
    if re.search(r"\b(curl|wget)\s", joined):
        fail("Dockerfile: downloads with curl/wget (use apt-get only)")
    if re.search(r"amd64|x86_64|aarch64|arm64", body):
        fail("Dockerfile: architecture-specific names; one file must build amd64 and arm64")
    if "apt-get update" in joined and "rm -rf /var/lib/apt/lists" not in runtime:
        fail("Dockerfile: runtime stage keeps the apt lists")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "doc-commands":
        doc_commands(sys.argv[2], sys.argv[3:])
        for e in errors:
            print("FAIL:", e, file=sys.stderr)
        return 1 if errors else 0
    if len(sys.argv) == 5 and sys.argv[1] == "classes":
        check_classes(sys.argv[4], json.load(open(sys.argv[2])), json.load(open(sys.argv[3])))
        for e in errors:
            print("FAIL:", e)
        return 1 if errors else 0
    if len(sys.argv) == 5 and sys.argv[1] in ("holder-memory", "quota"):
        docs = json.load(open(sys.argv[3]))
        if sys.argv[1] == "holder-memory":
            check_holder_memory(sys.argv[2], docs, json.load(open(sys.argv[4])))
        else:
            want = json.loads(sys.argv[4])
            check_quota(sys.argv[2], docs, want)
        for e in errors:
            print("FAIL:", e)
        return 1 if errors else 0
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    what, path = sys.argv[1:]
    if what in CASES:
        docs = json.load(open(path))
        check_chart(what, docs)
        check_quota(what, docs, CASES[what]["quota"])
    elif what == "examples":
        check_examples(json.load(open(path)))
    elif what == "values":
        check_values(path)
    elif what == "dockerfile":
        check_dockerfile(path)
    elif what == "dashboard":
        check_dashboard(path)
    else:
        print("unknown check %s" % what, file=sys.stderr)
        return 2
    for e in errors:
        print("FAIL:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
