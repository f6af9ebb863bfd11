#!/bin/sh
# Render test for the Helm chart (charts/objfs), the examples and the
# Dockerfile, without Helm, a cluster or Docker.
#
#  1. builds tests/helm/helmrender (Go text/template + sprig + Helm's template
#     functions) offline from Debian's Go sources in /usr/share/gocode;
#  2. renders the chart with the default values plus s3.bucket (the one value
#     the default StorageClass needs), tests/helm/values-full.yaml
#     (every option changed) and tests/helm/values-existing.yaml (user-managed
#     Secret and CA ConfigMap), parses the output strictly and runs
#     check_manifests.py on it: objects, namespaces, socket paths shared by
#     plugin and sidecars, kubelet registration path, sidecar flags, RBAC,
#     Secret references and keys, the ResourceQuota for the system-* priority
#     classes, the holder's memory limit against maxSlots x the mount memory
#     bound, and `objfs-csi --dry-run` on the objfs-csi
#     arguments of each rendered container (when objfs-csi is built);
#  3. checks that invalid values are refused, NOTES.txt renders, every value
#     in values.yaml is commented, the examples parse and fit together, and
#     the Dockerfile has the required shape;
#  4. renders the chart with every `helm install` (and `helm upgrade`) command
#     in the code blocks of README.md, docs/*.md and the chart's README,
#     extracted from the documents here, and checks that every class the
#     examples use exists in the result.
#
# Needs: golang-go, golang-github-masterminds-sprig-dev,
# golang-gopkg-yaml.v2-dev, golang-gopkg-yaml.v3-dev (exit 77 without them).
set -eu

srcdir=${OBJFS_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${OBJFS_BUILDDIR:-$srcdir}
py=${PYTHON3:-/usr/bin/python3}
gocode=/usr/share/gocode/src
chart=$srcdir/charts/objfs
check="$py $srcdir/tests/helm/check_manifests.py"

if ! command -v go >/dev/null 2>&1 || [ ! -d $gocode/github.com/Masterminds/sprig ] ||
   [ ! -d $gocode/gopkg.in/yaml.v2 ] || [ ! -d $gocode/gopkg.in/yaml.v3 ]; then
	echo "SKIP: needs golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v2-dev golang-gopkg-yaml.v3-dev"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/objfs-helm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# -- 1. the renderer ---------------------------------------------------------
# GOPATH mode over Debian's packaged sources; the /v3 import paths of sprig
# and semver are symlinked into a private GOPATH entry.  No network.
gp=$tmp/gopath
mkdir -p $gp/src/github.com/Masterminds/sprig $gp/src/github.com/Masterminds/semver
ln -s $gocode/github.com/Masterminds/sprig $gp/src/github.com/Masterminds/sprig/v3
ln -s $gocode/github.com/Masterminds/semver $gp/src/github.com/Masterminds/semver/v3
render=$tmp/helmrender
(cd "$srcdir/tests/helm/helmrender" &&
	env GO111MODULE=off GOPATH="$gp:/usr/share/gocode" GOPROXY=off GOFLAGS= \
	GOENV=off GOCACHE="$tmp/gocache" GOTMPDIR="$tmp" CGO_ENABLED=0 \
	timeout 300 go build -o "$render" main.go) || { echo "FAIL: building helmrender"; exit 1; }

# -- 2. chart cases ------------------------------------------------------------
objfs_csi=$builddir/objfs-csi
if [ -x "$objfs_csi" ]; then
	# Control: the dry run must refuse bad arguments, or passing means nothing.
	set +e
	"$objfs_csi" --dry-run --mode no-such-mode --endpoint unix://$tmp/x.sock \
		--node-id n >/dev/null 2>"$tmp/ctl.err"
	rc=$?
	set -e
	[ $rc -eq 2 ] || fail "objfs-csi --dry-run --mode no-such-mode exited $rc, want 2"
	[ "$(wc -l <"$tmp/ctl.err")" -eq 1 ] || fail "objfs-csi --dry-run error is not one line: $(cat "$tmp/ctl.err")"
	OBJFS_CSI=$objfs_csi
	export OBJFS_CSI
elif grep -Eq '^(bin|sbin)_PROGRAMS.*objfs-csi' "$srcdir/Makefile.am"; then
	fail "objfs-csi is part of the build but $objfs_csi does not exist"
else
	echo "NOTE: objfs-csi is not built in this tree yet: objfs-csi --dry-run checks not run"
fi
WORKDIR=$tmp/fs
export WORKDIR

render_case() { # name namespace case [values file]
	name=$1 ns=$2 case=$3
	shift 3
	if ! "$render" "$@" -name "$name" -namespace "$ns" "$chart" >"$tmp/$case.yaml" 2>"$tmp/$case.err"; then
		fail "$case: render: $(cat "$tmp/$case.err")"
		return
	fi
	if grep -n '<no value>' "$tmp/$case.yaml"; then
		fail "$case: '<no value>' in the output"
	fi
	if ! "$render" yaml2json "$tmp/$case.yaml" >"$tmp/$case.json" 2>"$tmp/$case.err"; then
		fail "$case: rendered YAML does not parse: $(cat "$tmp/$case.err")"
		return
	fi
	$check "$case" "$tmp/$case.json" || fail "$case: manifest checks"
	if ! "$render" -notes "$@" -name "$name" -namespace "$ns" "$chart" >"$tmp/$case.notes" 2>"$tmp/$case.err"; then
		fail "$case: NOTES.txt: $(cat "$tmp/$case.err")"
	elif ! grep -q 'objfs.csi.io' "$tmp/$case.notes" || grep -q '<no value>' "$tmp/$case.notes"; then
		fail "$case: NOTES.txt does not name the driver or has '<no value>'"
	fi
}
# the defaults plus the one value they need: the bucket of the StorageClass
printf 's3: {bucket: my-k8s-volumes}\n' >"$tmp/s3.yaml"
render_case objfs default default -f "$tmp/s3.yaml"
render_case objfs objfs-system full -f "$srcdir/tests/helm/values-full.yaml"
render_case rel storage existing -f "$srcdir/tests/helm/values-existing.yaml"
# The holder's memory limit covers every slot at the mount memory bound
# (maxSlots x node.mountMemoryMiB + holder.memoryBaseMiB): the defaults, and
# values-full.yaml with the holder on (it runs host systemd units)
printf 'node: {hostSystemd: {enabled: false}}\n' >"$tmp/holder-on.yaml"
holder_memory() { # case rendered-yaml values-files...
	hm=$1 out=$2
	shift 2
	if ! "$render" yaml2json "$out" >"$tmp/$hm.hm.json" 2>"$tmp/$hm.hm.err" ||
	   ! "$render" yaml2json "$chart/values.yaml" "$@" >"$tmp/$hm.values.json" 2>>"$tmp/$hm.hm.err"; then
		fail "$hm: holder memory: $(cat "$tmp/$hm.hm.err")"
		return
	fi
	$check holder-memory "$hm" "$tmp/$hm.hm.json" "$tmp/$hm.values.json" || fail "$hm: the holder's memory limit"
}
holder_memory default "$tmp/default.yaml" "$tmp/s3.yaml"
grep -q 'memory: 8208Mi' "$tmp/default.yaml" || fail "default: the holder's limit is not 128 x 64 + 16 = 8208Mi"
if "$render" -f "$srcdir/tests/helm/values-full.yaml" -f "$tmp/holder-on.yaml" -name objfs \
	-namespace objfs-system "$chart" >"$tmp/full-holder.yaml" 2>"$tmp/full-holder.err"; then
	holder_memory full-holder "$tmp/full-holder.yaml" "$srcdir/tests/helm/values-full.yaml" "$tmp/holder-on.yaml"
	# the holder alone uses a system-* class there: the quota names it alone
	$check quota full-holder "$tmp/full-holder.hm.json" '["system-node-critical"]' ||
		fail "full-holder: the ResourceQuota"
else
	fail "full with the holder: render: $(cat "$tmp/full-holder.err")"
fi
# an explicit holder.resources.limits.memory is kept
printf 'holder: {resources: {limits: {memory: 3Gi}}}\n' >"$tmp/holder-lim.yaml"
"$render" -f "$tmp/s3.yaml" -f "$tmp/holder-lim.yaml" "$chart" >"$tmp/holder-lim.out" 2>&1 ||
	fail "holder.resources.limits.memory=3Gi: $(cat "$tmp/holder-lim.out")"
grep -q 'memory: 3Gi' "$tmp/holder-lim.out" || fail "an explicit holder.resources.limits.memory is not kept"
# the system-* priority class quota: not in kube-system, not when turned off
for q in kube-system off; do
	if [ $q = off ]; then
		printf 'criticalPodsQuota: {create: false}\n' >"$tmp/quota.yaml"
		qns=objfs
	else
		: >"$tmp/quota.yaml"
		qns=kube-system
	fi
	if ! "$render" -f "$tmp/s3.yaml" -f "$tmp/quota.yaml" -namespace $qns "$chart" >"$tmp/quota.out" 2>&1; then
		fail "quota ($q): $(cat "$tmp/quota.out")"
	elif grep -q '^kind: ResourceQuota' "$tmp/quota.out"; then
		fail "quota ($q): a ResourceQuota was rendered"
	fi
done
# IRSA: the role annotation on every service account of the plugin
n=$(grep -c 'eks.amazonaws.com/role-arn: arn:aws:iam::111122223333:role/objfs' "$tmp/full.yaml" || true)
[ "$n" = 2 ] || fail "full: serviceAccountAnnotations on $n service accounts, not 2"

# -- 3. values the chart must refuse -------------------------------------------
refuse() { # expected-message values-yaml (over the s3.bucket of the default case)
	printf '%s\n' "$2" >"$tmp/bad.yaml"
	if "$render" -f "$tmp/s3.yaml" -f "$tmp/bad.yaml" "$chart" >/dev/null 2>"$tmp/bad.err"; then
		fail "accepted bad values: $2"
	elif ! grep -qF "$1" "$tmp/bad.err"; then
		fail "bad values ($2): error lacks '$1': $(cat "$tmp/bad.err")"
	fi
}
refuse 'logLevel must be' 'logLevel: verbose'
refuse 's3.addressingStyle must be' 's3: {addressingStyle: dns}'
refuse 'onDelete must be' 'storageClass: {onDelete: shred}'
refuse 'not both' 's3: {credentials: {create: true, accessKeyID: a, secretAccessKey: b, existingSecret: c}}'
refuse 'needs s3.credentials.accessKeyID' 's3: {credentials: {create: true}}'
refuse 'storageClass.create needs' 's3: {bucket: null}'
refuse 'storageClass.create needs' 's3: {bucket: ""}'
refuse 'kubeletDir must be an absolute path' 'kubeletDir: var/lib/kubelet'
refuse 'mountMemoryMiB must be at least' 'node: {mountMemoryMiB: 1}'
refuse 'holder.maxSlots must be between' 'holder: {maxSlots: 0}'
refuse 'holder.memoryBaseMiB must be at least' 'holder: {memoryBaseMiB: 2}'
refuse 'criticalPodsQuota.pods must be at least' 'criticalPodsQuota: {pods: 0}'
refuse 'metrics.nodePort must differ' 'metrics: {nodePort: 9809}'

# storageClass.create=false: no bucket needed, no StorageClass, NOTES say so
printf 'storageClass: {create: false}\n' >"$tmp/nosc.yaml"
if ! "$render" -f "$tmp/nosc.yaml" "$chart" >"$tmp/nosc.out" 2>"$tmp/nosc.err"; then
	fail "storageClass.create=false without a bucket: $(cat "$tmp/nosc.err")"
elif grep -q '^kind: StorageClass' "$tmp/nosc.out"; then
	fail "storageClass.create=false rendered a StorageClass"
fi
"$render" -notes -f "$tmp/nosc.yaml" "$chart" 2>&1 | grep -q 'No StorageClass was created' ||
	fail "NOTES.txt with storageClass.create=false does not say no PVC binds without a class"
grep -q 'The chart created the StorageClass "objfs" (not the cluster' "$tmp/default.notes" ||
	fail "NOTES.txt (default) does not name the StorageClass it created"
# metrics.networkPolicy off, or node.hostNetwork: NOTES warn who can read /metrics
printf 'metrics: {networkPolicy: {enabled: false}}\n' >"$tmp/nonp.yaml"
if "$render" -f "$tmp/s3.yaml" -f "$tmp/nonp.yaml" "$chart" | grep -q '^kind: NetworkPolicy'; then
	fail "metrics.networkPolicy.enabled=false rendered a NetworkPolicy"
fi
"$render" -notes -f "$tmp/s3.yaml" -f "$tmp/nonp.yaml" "$chart" | grep -q 'networkPolicy.enabled is off' ||
	fail "NOTES.txt does not warn that /metrics is open without the NetworkPolicy"
grep -q 'a NetworkPolicy does not' "$tmp/full.notes" ||
	fail "NOTES.txt (node.hostNetwork) does not say the NetworkPolicy cannot apply"
if "$render" -f "$tmp/s3.yaml" -kube-version v1.25.9 "$chart" >/dev/null 2>"$tmp/kv.err" ||
   ! grep -q 'incompatible with Kubernetes' "$tmp/kv.err"; then
	fail "chart accepted Kubernetes 1.25 (kubeVersion): $(cat "$tmp/kv.err")"
fi
"$render" -f "$tmp/s3.yaml" -kube-version v1.26.0 "$chart" >/dev/null || fail "chart refused Kubernetes 1.26"
"$render" -notes -upgrade -f "$tmp/s3.yaml" "$chart" >"$tmp/upgrade.notes" || fail "NOTES.txt (upgrade)"
grep -q 'a new holder takes every' "$tmp/upgrade.notes" ||
	fail "NOTES.txt (default: the holder) does not say how mounts are kept"
if grep -q 'this upgrade did not replace' "$tmp/upgrade.notes"; then
	fail "NOTES.txt on a rolling upgrade (holder) says the node pods were not replaced"
fi
printf 'holder: {enabled: false}\n' >"$tmp/noholder.yaml"
"$render" -notes -upgrade -f "$tmp/s3.yaml" -f "$tmp/noholder.yaml" "$chart" >"$tmp/upgrade-fork.notes" ||
	fail "NOTES.txt (upgrade, no holder)"
grep -q 'updateStrategy OnDelete: this upgrade did not replace' "$tmp/upgrade-fork.notes" ||
	fail "NOTES.txt on upgrade without the holder does not explain the OnDelete node roll"
"$render" -notes -upgrade -f "$srcdir/tests/helm/values-existing.yaml" "$chart" >"$tmp/upgrade-hs.notes" ||
	fail "NOTES.txt (upgrade, hostSystemd)"
if grep -q 'this upgrade did not replace' "$tmp/upgrade-hs.notes"; then
	fail "NOTES.txt on a rolling upgrade (hostSystemd) says the node pods were not replaced"
fi
if grep -q 'this upgrade did not replace' "$tmp/default.notes"; then
	fail "NOTES.txt on install talks about an upgrade"
fi

# -- 4. values comments, examples, Dockerfile ---------------------------------
$check values "$chart/values.yaml" || fail "values.yaml comments"
if "$render" yaml2json "$srcdir"/examples/*.yaml >"$tmp/examples.json" 2>"$tmp/ex.err"; then
	$check examples "$tmp/examples.json" || fail "examples"
else
	fail "examples do not parse: $(cat "$tmp/ex.err")"
fi
$check dockerfile "$srcdir/Dockerfile" || fail "Dockerfile"
$check dashboard "$chart/dashboards/objfs.json" || fail "the Grafana dashboard"
# One set of names: every documented install command (README.md, docs/,
# the chart's README: extracted from their code blocks, so a new one is
# covered) renders, and every class the examples use exists in its result;
# upgrades with --reuse-values are rendered over their document's install.
# The commands include what the node pods need (the Pod Security label, the
# image repository).
mkdir "$tmp/doc"
if ! $check doc-commands "$tmp/doc" "$srcdir/README.md" "$srcdir"/docs/*.md \
	"$srcdir/charts/objfs/README.md" >"$tmp/doc/list" 2>"$tmp/doc/err"; then
	fail "extracting the documented helm commands: $(cat "$tmp/doc/err")"
fi
ndoc=0
while read -r n name ns where; do
	ndoc=$((ndoc + 1))
	if ! "$render" -f "$tmp/doc/$n.json" -name "$name" -namespace "$ns" "$chart" \
		>"$tmp/doc/$n.yaml" 2>"$tmp/doc/$n.err"; then
		fail "$where: the documented helm command does not render: $(cat "$tmp/doc/$n.err")"
	elif ! "$render" yaml2json "$tmp/doc/$n.yaml" >"$tmp/doc/$n.out.json" 2>"$tmp/doc/$n.err"; then
		fail "$where: rendered YAML does not parse: $(cat "$tmp/doc/$n.err")"
	else
		$check classes "$tmp/doc/$n.out.json" "$tmp/examples.json" "$where" ||
			fail "$where: the examples' classes"
	fi
done <"$tmp/doc/list"
for d in README.md docs/kubernetes.md charts/objfs/README.md; do
	grep -q " $d:" "$tmp/doc/list" || fail "$d: no helm install command was found in it"
done
for d in README.md docs/kubernetes.md charts/objfs/README.md; do
	grep -q 'pod-security.kubernetes.io/enforce=privileged' "$srcdir/$d" ||
		fail "$d: the install lacks the Pod Security label the node pods need"
done
for d in README.md docs/kubernetes.md charts/objfs/README.md; do
	grep -q 'image.repository=' "$srcdir/$d" || fail "$d: the install does not set image.repository"
done
if grep -qi 'placeholder' "$srcdir/examples/README.md"; then
	fail "examples/README.md still calls something a placeholder"
fi
for f in .git build '**/.deps' '**/*.o' gen Makefile; do
	grep -qxF "$f" "$srcdir/.dockerignore" || fail ".dockerignore lacks $f"
done

[ $failed -eq 0 ] && echo "PASS: chart renders (3 value sets, $ndoc documented helm commands), bad value sets refused, examples, Dockerfile"
exit $failed
