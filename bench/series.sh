#!/bin/sh
# bench/series.sh - the published series (issue 33 item 4: what Mountpoint's
# CI and rclone's users publish) on objfs-mount, s3fs and rclone over the
# same S3 server (bench/lib.sh: OBJFS_BENCH_SERVER=swift|rgw).  Run by hand
# as root from a build tree:  sh bench/series.sh   (never part of make check).
#
# Every client talks to the server through a counting proxy
# (tests/integration/faultproxy.py, delaying nothing), on a port of its own
# per client and step, which counts the requests (per method) and the bytes
# each way; every step runs on a fresh mount (page cache dropped, rclone's
# cache emptied), timed until the mount has stopped with everything stored.
# The steps (STEPS, in this order; sizes from the environment):
#   ls       `ls -f` and `ls -l` of a directory of N files, for each N in
#            LS_SIZES ("100 1000 10000"; 100000 is opt-in: rclone's and
#            s3fs's `ls -l` of 10,000 took 20-40 s on RGW, so 100,000
#            adds about half an hour to the run); the files (1 byte) are
#            put into the store beforehand by objfs-store-tool put-many (16
#            threads), not through a mount, and carry no client's metadata
#            (Mountpoint's method).  LS_OPS ("f l") chooses the listings:
#            f `ls -f`, l `ls -l`, find `find DIR -type f` (d_type: a
#            client that cannot type a name without stat looks it up);
#            LS_BYTES (1) the files' size (issue 33: objfs types a file
#            of 4 KiB or more from the listing, a smaller one may be a
#            symlink or a FIFO another objfs mount made)
#   create   CREATE_N (200) serial creates of 1 byte (open, write, close)
#            in a new directory: per-create latency as the application sees
#            it (mean, p50, p99; rclone uploads after close) and the time
#            until all are stored
#   cp       `cp -a` of a generated source tree onto the volume: CP_FILES
#            (5000) files of text, 100 B to 64 KiB (about 10 KiB on
#            average), in CP_DIRS (100) directories of 3 subdirectories
#   append   an appender that fsyncs every K KiB up to M MiB, for each K:M
#            in APPEND ("64:8 8192:128"); bytes sent per byte written.
#            APPEND=8192:512 is issue 33's figure (16 GiB sent by s3fs)
#   sqlite   a database of SQL_ROWS (100000) rows of 900 random bytes
#            (about 100 MiB, made by Debian's sqlite3 and put into the store
#            directly); SQL_SELECTS (10000) SELECTs of random rows on a
#            fresh mount, then on another SQL_UPDATES (1000) UPDATE
#            transactions (rollback journal, synchronous=FULL: one COMMIT
#            each), stopped after SQL_MAX_S (60) seconds: figures per
#            COMMIT done.  The database is checked (integrity_check)
#            after the updates.
#   fio      fio random reads (psync, one job, buffered, FIO_S (20) seconds)
#            of 4 KiB and of 128 KiB blocks from a file of FIO_MB (256) MiB
#            put into the store directly
# TOOLS: "objfs s3fs rclone rclone-full" (rclone: --vfs-cache-mode writes;
# rclone-full: --vfs-cache-mode full).  RUNS (1): how many times the steps
# run, on the same server; the report gives each run's table, then the
# min/median/max over the runs.  Everything is kept in OUT
# (/tmp/objfs-series-DATE): OUT/run*/results, proxy.json, report.
#
# On RGW a file-backed store (bluestore) of OBJFS_RGW_STORE_MB (enough for
# the appends' and the updates' overwrites) is started, with its garbage
# collected every OBJFS_RGW_GC_S (20) seconds: overwritten objects stay in
# the store until collected.
#
# Smaller: STEPS="ls create" LS_SIZES="100 1000" sh bench/series.sh
set -eu

STEPS=${STEPS:-"ls create cp append sqlite fio"}
TOOLS=${TOOLS:-"objfs s3fs rclone rclone-full"}
LS_SIZES=${LS_SIZES:-"100 1000 10000"}
LS_OPS=${LS_OPS:-"f l"}
LS_BYTES=${LS_BYTES:-1}
CREATE_N=${CREATE_N:-200}
CP_FILES=${CP_FILES:-5000}
CP_DIRS=${CP_DIRS:-100}
APPEND=${APPEND:-"64:8 8192:128"}
SQL_ROWS=${SQL_ROWS:-100000}
SQL_SELECTS=${SQL_SELECTS:-10000}
SQL_UPDATES=${SQL_UPDATES:-1000}
SQL_MAX_S=${SQL_MAX_S:-60}
FIO_MB=${FIO_MB:-256}
FIO_S=${FIO_S:-20}
RUNS=${RUNS:-1}
OUT=${OUT:-/tmp/objfs-series-$(date +%Y%m%d-%H%M%S)}
PY=/usr/bin/python3
export AWS_EC2_METADATA_DISABLED=true

has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
has sqlite && { command -v sqlite3 >/dev/null || { echo "bench: apt-get install sqlite3" >&2; exit 1; }; }
has fio && { command -v fio >/dev/null || { echo "bench: apt-get install fio" >&2; exit 1; }; }

# RGW: a store that holds what the overwrites leave until collected (the
# appends: about M*M/K per client that overwrites, s3fs and objfs's
# server-side copies)
if [ "${OBJFS_BENCH_SERVER:-swift}" = rgw ]; then
	mb=8192
	for a in $APPEND; do
		k=${a%:*}
		m=${a#*:}
		mb=$((mb + 2 * m * (m * 1024 / k + 1)))
	done
	export OBJFS_RGW_STORE="${OBJFS_RGW_STORE:-bluestore}"
	export OBJFS_RGW_STORE_MB="${OBJFS_RGW_STORE_MB:-$mb}"
	export OBJFS_RGW_GC_S="${OBJFS_RGW_GC_S:-20}"
fi
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
SPY=$HERE/bench/series.py
mkdir -p "$OUT"
echo "bench/series.sh on $SERVER: results in $OUT" >&2

# the step names of a run, in order (one proxy port per client and step)
NAMES=""
for s in $STEPS; do
	case $s in
	ls) for n in $LS_SIZES; do for lo in $LS_OPS; do NAMES="$NAMES ls-$lo-$n"; done; done ;;
	create) NAMES="$NAMES create" ;;
	cp) NAMES="$NAMES cp-a" ;;
	append) for a in $APPEND; do NAMES="$NAMES append-${a%:*}k-${a#*:}m"; done ;;
	sqlite) NAMES="$NAMES sql-select sql-update" ;;
	fio) NAMES="$NAMES fio-4k fio-128k" ;;
	*) echo "bench: unknown step $s" >&2; exit 2 ;;
	esac
done

# the shared data, put into the store directly (not counted)
D=$RUN-data
if has ls; then
	for n in $LS_SIZES; do
		"$TOOL" "s3://$BUCKET" put "$D/n$n/" </dev/null >/dev/null
		"$TOOL" "s3://$BUCKET/$D" put-many "n$n/f" "$n" "$LS_BYTES" >/dev/null
	done
fi
if has fio; then
	head -c $((FIO_MB << 20)) /dev/urandom >"$W/fio.dat"
	"$TOOL" "s3://$BUCKET/$D" put fio.dat <"$W/fio.dat" >/dev/null
	rm -f "$W/fio.dat"
fi
if has cp; then
	mkdir -p "$W/src/tree"
	"$PY" "$SPY" tree "$W/src/tree" "$CP_FILES" "$CP_DIRS"
	CPB=$(du -sb --apparent-size "$W/src/tree" | awk '{ print $1 }')
fi
if has sqlite; then
	sqlite3 "$W/db.sqlite" "PRAGMA page_size=4096; CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $SQL_ROWS)
INSERT INTO t SELECT x, randomblob(900) FROM c;"
	DBB=$(stat -c %s "$W/db.sqlite")
fi

# fresh TOOL LABEL PREFIX: a fresh mount of PREFIX at $M through LABEL's port
fresh() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	rm -rf "$W/rclone-cache"
	MEP=$(counter_ep "$1.$2")
	do_mount "$1" "$3" "$M"
}
# done_step TOOL STEP T0 WORDS...: unmounts, and one line of results
done_step() {
	_t=$1 _s=$2 _t0=$3
	shift 3
	do_umount "$M" "$PID"
	echo "$_t $_s $_t.$_s s=$(elapsed "$_t0" "$(now)") cpu=$CPU objfsreq=$REQ $*" >>"$RES"
}

run=1
while [ "$run" -le "$RUNS" ]; do
	RD=$OUT/run$run
	mkdir -p "$RD"
	RES=$RD/results
	: >"$RES"
	labels=""
	for t in $TOOLS; do
		for s in $NAMES; do labels="$labels $t.$s"; done
	done
	# shellcheck disable=SC2086
	counter_start "$RD/proxy.json" $labels
	for t in $TOOLS; do
		command -v "${t%-full}" >/dev/null 2>&1 || [ "$t" = objfs ] ||
			{ echo "bench: $t not installed, skipped" >&2; continue; }
		P=$RUN-r$run-$t
		M=$W/mnt-$t
		echo "run $run: $t" >&2
		for s in $STEPS; do
			case $s in
			ls)
				for n in $LS_SIZES; do
					for lo in $LS_OPS; do
						fresh "$t" "ls-$lo-$n" "$D"
						t0=$(now)
						# ls -f: . and ..; ls -l: "total"
						case $lo in
						find) c=$(find "$M/n$n" -type f | wc -l); want=$n ;;
						l) c=$(ls -l "$M/n$n" | wc -l); want=$((n + 1)) ;;
						*) c=$(ls "-$lo" "$M/n$n" | wc -l); want=$((n + 2)) ;;
						esac
						[ "$c" -eq "$want" ] || echo "bench: $t ls-$lo listed $c lines, not $want" >&2
						done_step "$t" "ls-$lo-$n" "$t0" files="$n" lines="$c"
					done
				done ;;
			create)
				fresh "$t" create "$P"
				mkdir "$M/create"
				t0=$(now)
				r=$("$PY" "$SPY" create "$M/create" "$CREATE_N")
				wait_count "$P" create/ "$CREATE_N"
				done_step "$t" create "$t0" files="$CREATE_N" $r ;;
			cp)
				fresh "$t" cp-a "$P"
				t0=$(now)
				# rclone cannot chmod: cp -a says so for every file
				# (the data is copied: counted below), and fails
				rc=0
				cp -a "$W/src/tree" "$M/tree" 2>"$W/cp.err" || rc=$?
				case $t in rclone*) wait_count "$P" tree/ "$CP_FILES" ;; esac
				done_step "$t" cp-a "$t0" files="$CP_FILES" bytes="$CPB" cp_rc=$rc \
					cp_errors="$(wc -l <"$W/cp.err")"
				[ "$t" != objfs ] || [ $rc -eq 0 ] || { echo "bench: objfs cp -a failed:" >&2; head -5 "$W/cp.err" >&2; }
				c=$("$TOOL" "s3://$BUCKET/$P" list tree/ | grep -vc '/$' || true)
				[ "$c" -eq "$CP_FILES" ] || echo "bench: $t cp -a stored $c files, not $CP_FILES" >&2 ;;
			append)
				for a in $APPEND; do
					k=${a%:*}
					m=${a#*:}
					fresh "$t" "append-${k}k-${m}m" "$P"
					t0=$(now)
					r=$("$PY" "$SPY" append "$M/app-$k" "$k" "$m")
					wait_key "$P" "app-$k" $((m << 20))
					done_step "$t" "append-${k}k-${m}m" "$t0" $r
					"$TOOL" "s3://$BUCKET/$P" del "app-$k" >/dev/null 2>&1 || true
				done ;;
			sqlite)
				"$TOOL" "s3://$BUCKET/$P" put db.sqlite <"$W/db.sqlite" >/dev/null
				fresh "$t" sql-select "$P"
				t0=$(now)
				r=$("$PY" "$SPY" sqlsel "$M/db.sqlite" "$SQL_SELECTS" "$run")
				done_step "$t" sql-select "$t0" db="$DBB" $r
				e0=$("$TOOL" "s3://$BUCKET/$P" head db.sqlite | awk '$1 == "etag" { print $2 }')
				fresh "$t" sql-update "$P"
				t0=$(now)
				r=$("$PY" "$SPY" sqlupd "$M/db.sqlite" "$SQL_UPDATES" "$run" "$SQL_MAX_S")
				case $t in rclone*) wait_etag "$P" db.sqlite "$e0" ;; esac
				done_step "$t" sql-update "$t0" db="$DBB" $r
				"$TOOL" "s3://$BUCKET/$P" get db.sqlite >"$W/check.sqlite"
				c=$(sqlite3 "$W/check.sqlite" "PRAGMA integrity_check" 2>&1 | head -n 1)
				[ "$c" = ok ] || echo "bench: $t: the database after the updates: $c" >&2
				rm -f "$W/check.sqlite"
				"$TOOL" "s3://$BUCKET/$P" del db.sqlite >/dev/null 2>&1 || true ;;
			fio)
				for bs in 4k 128k; do
					fresh "$t" "fio-$bs" "$D"
					t0=$(now)
					fio --name=rand --filename="$M/fio.dat" --readonly --rw=randread \
						--bs="$bs" --size="${FIO_MB}m" --ioengine=psync --numjobs=1 \
						--runtime="$FIO_S" --time_based --randseed="$run" \
						--output-format=json >"$W/fio.json" 2>"$W/fio.err" ||
						{ echo "bench: $t fio $bs failed:" >&2; cat "$W/fio.err" >&2; }
					r=$("$PY" -c '
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]["read"]
print("iops=%.1f mibs=%.2f read_bytes=%d" % (j["iops"], j["bw_bytes"] / 1048576, j["io_bytes"]))
' "$W/fio.json" 2>/dev/null || echo "iops=nan mibs=nan read_bytes=0")
					done_step "$t" "fio-$bs" "$t0" $r
				done ;;
			esac
		done
	done
	counter_stop
	"$PY" "$SPY" report "$OUT" "$run" >/dev/null
	run=$((run + 1))
done

{
	echo "bench/series.sh on $SERVER ($EP), $(date -u +%Y-%m-%dT%H:%MZ): TOOLS=\"$TOOLS\" STEPS=\"$STEPS\" RUNS=$RUNS"
	echo "LS_SIZES=\"$LS_SIZES\" CREATE_N=$CREATE_N CP_FILES=$CP_FILES (${CPB:-0} bytes) APPEND=\"$APPEND\""
	echo "SQL_ROWS=$SQL_ROWS (${DBB:-0} bytes) SQL_SELECTS=$SQL_SELECTS SQL_UPDATES=$SQL_UPDATES SQL_MAX_S=$SQL_MAX_S FIO_MB=$FIO_MB FIO_S=$FIO_S"
	echo "(s: until the mount stopped with everything stored; req, sent, recv: the proxy's counts, headers included)"
	"$PY" "$SPY" report "$OUT" "$RUNS"
} | tee "$OUT/report"
