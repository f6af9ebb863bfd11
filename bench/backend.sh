#!/bin/sh
# backend.sh - throughput of the backend stack against a local S3 server
# (Swift, or Ceph RGW with OBJFS_BENCH_SERVER=rgw), next to curl
# single-stream on the same server in the same run.
#
#   bench/backend.sh [SIZE_MiB]     (default 256; run from the build dir, or
#                                    set OBJFS_BUILDDIR)
#
# Starts the server (tests/s3server/$OBJFS_BENCH_SERVER.sh, default swift;
# stopped on exit), then:
#   objfs: bench/store_bench: objfs_store_upload with parallel parts, parallel
#          ranged GETs; once with signed payloads (the default), once with
#          UNSIGNED-PAYLOAD; and once as one PUT and one GET (curl's shape);
#   curl:  one PUT and one GET of the same size with curl --aws-sigv4
#          (credentials from a netrc file: the access key "test:tester"
#          holds a colon, which curl's --user would split).
# Each round runs all four in turn; the medians of OBJFS_BENCH_ROUNDS rounds
# (default 3) are printed with the ratios objfs/curl, then every figure.
# Loopback, 2 shared cores: the figures are noisy.
set -eu

SIZE=${1:-256}
B=${OBJFS_BUILDDIR:-$(pwd)}
S=$(cd "$(dirname "$0")/.." && pwd)
PART=${OBJFS_BENCH_PART_MIB:-16}
SERVER=${OBJFS_BENCH_SERVER:-swift}
JOBS=${OBJFS_BENCH_JOBS:-4}

if [ ! -x "$B/bench/store_bench" ]; then
	echo "backend.sh: $B/bench/store_bench not built (make bench/store_bench)" >&2
	exit 1
fi

W=$(mktemp -d "${TMPDIR:-/tmp}/objfs-bench-XXXXXX")
cleanup() {
	sh "$S/tests/s3server/$SERVER.sh" stop "$W" || true
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

sh "$S/tests/s3server/$SERVER.sh" start "$W" >/dev/null
set -a
. "$W/env"
set +a

now() { date +%s.%N; }
rate() { awk -v s="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.1f", s / (b - a) }'; }

ROUNDS=${OBJFS_BENCH_ROUNDS:-3}
echo "object: $SIZE MiB, parts of $PART MiB, $JOBS parallel, median of $ROUNDS alternating rounds"
head -c "$((SIZE * 1048576))" /dev/urandom > "$W/obj"
URL="$OBJFS_TEST_S3_ENDPOINT/$OBJFS_TEST_S3_BUCKET/curl-bench"
CURL="curl -sS -f --netrc-file $OBJFS_TEST_S3_NETRC --aws-sigv4 aws:amz:$OBJFS_TEST_S3_REGION:s3 -H x-amz-content-sha256:UNSIGNED-PAYLOAD"

# One line per measurement: "<what> <put MiB/s> <get MiB/s>".
: > "$W/results"
bench_objfs() {
	out=$("$B/bench/store_bench" -s "$SIZE" "$@")
	echo "$out" | awk '/^upload/ { u = $2 } /^download/ { d = $2 }
		END { printf "%s %s\n", u, d }'
}
r=0
while [ $r -lt "$ROUNDS" ]; do
	echo "signed $(bench_objfs -p "$PART" -j "$JOBS")" >> "$W/results"
	echo "unsigned $(bench_objfs -p "$PART" -j "$JOBS" -u)" >> "$W/results"
	# The same request shapes as curl: one PUT, one GET.
	echo "single $(bench_objfs -p "$SIZE" -j 1 -u)" >> "$W/results"
	a=$(now); $CURL -T "$W/obj" "$URL" -o /dev/null; b=$(now)
	up=$(rate "$SIZE" "$a" "$b")
	a=$(now); $CURL "$URL" -o "$W/back"; b=$(now)
	echo "curl $up $(rate "$SIZE" "$a" "$b")" >> "$W/results"
	cmp -s "$W/obj" "$W/back" || { echo "backend.sh: curl round trip differs" >&2; exit 1; }
	r=$((r + 1))
done

median() {
	# $1: what, $2: column (2 put, 3 get)
	awk -v w="$1" -v c="$2" '$1 == w { print $c }' "$W/results" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
			else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
o_up=$(median signed 2); o_down=$(median signed 3)
u_up=$(median unsigned 2); u_down=$(median unsigned 3)
s_up=$(median single 2); s_down=$(median single 3)
c_up=$(median curl 2); c_down=$(median curl 3)

printf '%-34s %10s %10s\n' "" "PUT MiB/s" "GET MiB/s"
printf '%-34s %10s %10s\n' "objfs parallel (signed payload)" "$o_up" "$o_down"
printf '%-34s %10s %10s\n' "objfs parallel (UNSIGNED-PAYLOAD)" "$u_up" "$u_down"
printf '%-34s %10s %10s\n' "objfs single stream (UNSIGNED)" "$s_up" "$s_down"
printf '%-34s %10s %10s\n' "curl single stream" "$c_up" "$c_down"
awk -v a="$o_up" -v b="$o_down" -v c="$c_up" -v d="$c_down" \
	-v e="$u_up" -v f="$u_down" -v g="$s_up" -v h="$s_down" 'BEGIN {
	printf "ratio objfs/curl: parallel signed PUT %.2f GET %.2f; parallel unsigned PUT %.2f GET %.2f; single stream PUT %.2f GET %.2f\n",
		a / c, b / d, e / c, f / d, g / c, h / d }'
echo "all rounds (what put get):"
cat "$W/results"
