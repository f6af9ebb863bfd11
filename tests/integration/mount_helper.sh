#!/bin/sh
# mount.objfs, the helper mount(8) and /etc/fstab use: installed where
# mount(8) looks (/sbin, whatever the prefix), mount-only options dropped,
# the rest passed to objfs-mount, remount refused in one clear line.
# Needs nothing but sh and make.
set -u
: "${OBJFS_SRCDIR:=$(dirname "$0")/../..}"
: "${OBJFS_BUILDDIR:=$OBJFS_SRCDIR}"
helper=$OBJFS_SRCDIR/src/mount.objfs
W=$(mktemp -d /tmp/objfs-mount-helper.XXXXXX)
trap 'rm -rf "$W"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# 1. where `make install` puts it
if make -s -C "$OBJFS_BUILDDIR" install-mounthelperSCRIPTS install-mounthelper-link \
	DESTDIR="$W/root" >"$W/install.out" 2>&1; then
	[ -x "$W/root/sbin/mount.objfs" ] ||
		fail "make install did not put mount.objfs in /sbin: $(cd "$W/root" && find . -name 'mount.objfs')"
	# mount(8) asks for mount.fuse.objfs for a live mount (remount)
	[ "$(readlink "$W/root/sbin/mount.fuse.objfs")" = mount.objfs ] ||
		fail "make install did not link mount.fuse.objfs to mount.objfs"
else
	fail "make install-mounthelperSCRIPTS: $(cat "$W/install.out")"
fi

# 2. options: a stand-in objfs-mount beside the helper records its argv
mkdir -p "$W/bin"
cp "$helper" "$W/bin/mount.objfs"
cat >"$W/bin/objfs-mount" <<'STUB'
#!/bin/sh
printf '%s\n' "$@" >"$(dirname "$0")/argv"
STUB
chmod +x "$W/bin/mount.objfs" "$W/bin/objfs-mount"
sh "$W/bin/mount.objfs" s3://b/p /mnt/x -o defaults,_netdev,nofail,endpoint=http://h:1,ro -v ||
	fail "mount.objfs with fstab options exited $?"
want=$(printf '%s\n' -o endpoint=http://h:1,ro s3://b/p /mnt/x)
[ "$(cat "$W/bin/argv" 2>/dev/null)" = "$want" ] ||
	fail "objfs-mount got: $(cat "$W/bin/argv" 2>/dev/null)"

# 3. remount: refused, one line that says so, mount's failure status
rm -f "$W/bin/argv"
sh "$W/bin/mount.objfs" s3://b/p /mnt/x -o remount,ro 2>"$W/err"
rc=$?
[ $rc -eq 32 ] || fail "remount exited $rc, want 32"
[ "$(wc -l <"$W/err")" -eq 1 ] && grep -q "remount is not supported" "$W/err" ||
	fail "remount message: $(cat "$W/err")"
[ ! -e "$W/bin/argv" ] || fail "remount ran objfs-mount"

# 4. mount -f (fake) does nothing
sh "$W/bin/mount.objfs" s3://b/p /mnt/x -f || fail "mount -f exited $?"
[ ! -e "$W/bin/argv" ] || fail "-f ran objfs-mount"

[ $failed -eq 0 ] && echo "PASS: mount.objfs installed in /sbin, options, remount, -f"
exit $failed
