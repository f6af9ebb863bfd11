#!/bin/sh
# bench/work.sh - real workloads on objfs-mount, s3fs and rclone over the
# same S3 server (bench/lib.sh: OBJFS_BENCH_SERVER=swift|rgw).  Run by hand
# as root from a build tree:  sh bench/work.sh   (never part of make check).
#
# A source tree of TREE_FILES files (TREE_DIRS directories, 100 B to 64 KiB
# of text each; no symlinks: rclone 1.60 cannot store them) is made on
# local disk, with a tarball of it
# and a git repository of it.  Per filesystem, each step on a mount of its
# own, timed until the mount has stopped (so everything written is in the
# store; rclone uploads after close and not at unmount: its writing steps
# also wait until the store holds as many files as its mount shows):
#   tar      tar xf of the tarball onto the volume
#   rsync    rsync -a of the tree onto the volume
#   git      git clone (--no-local: packs, refs, a checkout) onto the volume
#   cp-out   cp -r of the extracted tree back to local disk (cold mount)
#   rm-rf    rm -rf of the three copies
# Beside each time: the mount process's CPU seconds per GiB moved, and
# objfs's store requests per file the step handles (rsync: the tree and
# its .git; git: the clone's files, .git included; rm-rf: all three
# copies).
#
# Smaller: TREE_FILES=200 sh bench/work.sh;  TOOLS="objfs s3fs" sh bench/work.sh
# The upload window (-o upload_delay): TOOLS="objfs objfs-delay rclone s3fs"
# Some steps only: STEPS="rsync git rm-rf" (rm-rf empties the store).
# Before and after a change, in the same run: OBJFS_BENCH_BASE=DIR (a build
# tree of the other commit) adds the tools objfs-base and objfs-delay-base,
# objfs and objfs-delay with DIR/objfs-mount:
#   OBJFS_BENCH_BASE=/tmp/base TOOLS="objfs-delay-base objfs-delay rclone"
set -eu

TREE_FILES=${TREE_FILES:-1000}
TREE_DIRS=${TREE_DIRS:-50}
TOOLS=${TOOLS:-"objfs s3fs rclone"}
STEPS=${STEPS:-"tar rsync git cp-out rm-rf"}
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

# the source tree, its tarball and its repository
SRC=$W/src/tree
mkdir -p "$SRC"
/usr/bin/python3 - "$SRC" "$TREE_FILES" "$TREE_DIRS" <<'EOF'
import os, random, sys
root, n, nd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(18)
words = [("w%d" % i).encode() for i in range(500)]
for i in range(n):
    d = os.path.join(root, "dir%02d" % (i % nd), "sub%d" % (i % 3))
    os.makedirs(d, exist_ok=True)
    size = int(100 * (640 ** rnd.random()))
    body = b" ".join(rnd.choice(words) for _ in range(size // 4 + 1))[:size]
    with open(os.path.join(d, "file%04d.c" % i), "wb") as f:
        f.write(body + b"\n")
EOF
BYTES=$(du -sb "$SRC" | awk '{ print $1 }')
tar cf "$W/src/tree.tar" -C "$W/src" tree
git -C "$SRC" init -q && git -C "$SRC" add -A &&
	git -C "$SRC" -c user.name=bench -c user.email=bench@objfs commit -qm tree
# files and bytes each step writes, reads or removes (for requests per file
# and CPU per GiB): rsync copies the tree with its .git
RSF=$(find "$SRC" -type f | wc -l)
RSB=$(du -sb "$SRC" | awk '{ print $1 }')
git clone -q --no-local "$SRC" "$W/src/clone"
GITF=$(find "$W/src/clone" -type f | wc -l)
GITB=$(du -sb "$W/src/clone" | awk '{ print $1 }')
rm -rf "$W/src/clone"

RES=$W/results
: >"$RES"
for t in $TOOLS; do
	case $t in
	objfs*-base)
		[ -x "${OBJFS_BENCH_BASE:-}/objfs-mount" ] ||
			{ echo "bench: $t needs OBJFS_BENCH_BASE, skipped" >&2; continue; } ;;
	objfs*) ;;
	*) command -v "$t" >/dev/null 2>&1 || { echo "bench: $t not installed, skipped" >&2; continue; } ;;
	esac
	P=$RUN-$t
	M=$W/mnt-$t
	for step in $STEPS; do
		rm -rf "$W/out"
		sync
		echo 3 >/proc/sys/vm/drop_caches
		case $t in
		objfs*-base)
			m0=$MOUNT
			MOUNT=$OBJFS_BENCH_BASE/objfs-mount
			do_mount "${t%-base}" "$P" "$M"
			MOUNT=$m0 ;;
		*) do_mount "$t" "$P" "$M" ;;
		esac
		t0=$(now)
		case $step in
		tar) tar xf "$W/src/tree.tar" -C "$M" ;;
		rsync) rsync -a "$SRC/" "$M/rsync/" ;;
		git) git clone -q --no-local "$SRC" "$M/git" ;;
		cp-out) cp -r "$M/tree" "$W/out" ;;
		rm-rf) rm -rf "$M/tree" "$M/rsync" "$M/git" ;;
		esac
		if [ "$t" = rclone ] && [ "$step" != cp-out ] && [ "$step" != rm-rf ]; then
			# rclone uploads after close and not at unmount: wait
			d=$(case $step in tar) echo tree ;; rsync) echo rsync ;; git) echo git ;; esac)
			wait_count "$P" "$d/" "$(find "$M/$d" -type f | wc -l)"
		fi
		do_umount "$M" "$PID"
		s=$(elapsed "$t0" "$(now)")
		n=-
		[ "$step" != cp-out ] || n=$(find "$W/out" -type f | wc -l)
		echo "$t $step $s $CPU $REQ" >>"$RES"
		[ "$n" = - ] || [ "$n" -eq "$TREE_FILES" ] ||
			echo "bench: $t $step: $n files, not $TREE_FILES" >&2
	done
	left=$("$TOOL" "s3://$BUCKET/$P" list 2>/dev/null | grep -v '^\.objfs/' | grep -v '/$' | head -3)
	[ -z "$left" ] || echo "bench: $t left objects after rm -rf:" $left >&2
done

echo
echo "workloads on $SERVER ($EP): a tree of $TREE_FILES files, $((BYTES / 1024)) KiB"
awk -v bytes="$BYTES" -v files="$TREE_FILES" -v gitf="$GITF" -v rsf="$RSF" \
	-v rsb="$RSB" -v gitb="$GITB" '
BEGIN {
	# files and bytes each step moves: rsync copies the tree with its .git
	nb["tar"] = bytes; nb["rsync"] = rsb; nb["git"] = gitb
	nb["cp-out"] = bytes; nb["rm-rf"] = bytes + rsb + gitb
	nf["tar"] = files; nf["rsync"] = rsf; nf["git"] = gitf
	nf["cp-out"] = files; nf["rm-rf"] = files + rsf + gitf
}
{
	if (!($1 in seen)) { seen[$1] = 1; tools[++nt] = $1 }
	if (!(($2) in mseen)) { mseen[$2] = 1; ms[++nm] = $2 }
	v[$1, $2] = $3; c[$1, $2] = $4; r[$1, $2] = $5
}
END {
	printf "%-7s", "step"
	for (k = 1; k <= nt; k++) printf " %9s", tools[k]
	# ratios to the first tool of TOOLS (objfs by default)
	for (k = 2; k <= nt; k++) printf " %13s", tools[k] "/" tools[1]
	for (k = 1; k <= nt; k++) if (tools[k] ~ /^objfs/) printf " %18s", "req/file_" tools[k]
	for (k = 1; k <= nt; k++) printf " %14s", "cpu_s/GiB_" tools[k]
	printf "\n"
	for (m = 1; m <= nm; m++) {
		n = ms[m]
		printf "%-7s", n
		for (k = 1; k <= nt; k++) printf " %9s", v[tools[k], n]
		b = v[tools[1], n]
		for (k = 2; k <= nt; k++)
			if (b > 0) printf " %13.2f", v[tools[k], n] / b; else printf " %13s", "-"
		for (k = 1; k <= nt; k++) {
			if (tools[k] !~ /^objfs/) continue
			q = r[tools[k], n]
			if (q != "" && q != "-") printf " %18.2f", q / nf[n]; else printf " %18s", "-"
		}
		for (k = 1; k <= nt; k++) printf " %14.1f", c[tools[k], n] / (nb[n] / 1073741824)
		printf "\n"
	}
	printf "(seconds until the mount stopped with everything stored; tool/%s > 1: %s is faster)\n", tools[1], tools[1]
}' "$RES"
true
