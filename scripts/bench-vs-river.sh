#!/usr/bin/env bash
# bench-vs-river.sh: River's own benchmark (`river bench`, CLI v0.47.0) and
# `console bench` on the same PostgreSQL, the same pool size and the same
# synchronous_commit for ROUNDS rounds, alternating which side runs first
# (River then console in odd rounds, console then River in even ones);
# prints every round, both medians and the ratio console/river. A run that
# fails, or whose output holds no figure, stops the script with its output:
# a median is never taken over a missing value.
#
#   scripts/bench-vs-river.sh            # or: make bench
#   JOBS=200000 POOL=4 SYNC=off ROUNDS=3 DURATION=20s scripts/bench-vs-river.sh
#
# Without DATABASE_URL it starts its own scratch PostgreSQL on 127.0.0.1 (as
# the postgres user when run as root) and removes it afterwards. With
# DATABASE_URL it needs a role that may CREATE DATABASE: River runs in a
# database of its own (its bench TRUNCATEs River's tables), the console in
# scratch databases it drops.
#
# Every timed run starts from a checkpoint (CHECKPOINT before it, untimed),
# so no run pays for the WAL of the one before it. Without it the order was
# not fair: River's burn-down writes about 530 MB of WAL on a table it
# keeps, the console's about 250 MB in a scratch database whose DROP forces
# a checkpoint at its end, so a console run after River's crossed the
# server's checkpoint threshold (max_wal_size / 1.9, 540 MB at the default
# 1 GB) and ran through that checkpoint, and River's run after the
# console's never did. The scratch server also gets max_wal_size=4GB, so
# that no run reaches the threshold on its own; on a DATABASE_URL server
# the header prints max_wal_size, and the CHECKPOINT needs a superuser or
# pg_checkpoint (without, the script says so and goes on without it).
#
# River is built from the Go module proxy into .cache/river (ignored by git):
# `go install ...@v0.47.0` fails on mirrors without @v/list, so the module
# is downloaded, copied out of the read-only module cache and built there.
# River's code is never committed.
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-100000}          # burn-down size, both sides
POOL=${POOL:-4}               # connections, both sides (River: pool_max_conns)
SYNC=${SYNC:-on}              # synchronous_commit, both sides
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-20s}     # continuous window, both sides
WORKERS=${WORKERS:-2000}      # console jobs in flight, as River's bench hard-codes (2,000)
BATCH=${BATCH:-1000}         # console largest claim (and the floor's claim and ack batch)
FLOOR=${FLOOR:-1}             # also run `console bench floor` each round (the SQL floor, and the reference statements)
RIVER_VERSION=v0.47.0
CACHE=.cache/river
GO=${GO:-go}

log() { echo "bench-vs-river: $*" >&2; }

# --- River's CLI -------------------------------------------------------------
if [ ! -x "$CACHE/river" ]; then
  log "building River's CLI $RIVER_VERSION into $CACHE"
  mkdir -p "$CACHE"
  $GO mod download github.com/riverqueue/river/cmd/river@$RIVER_VERSION
  src=$($GO env GOMODCACHE)/github.com/riverqueue/river/cmd/river@$RIVER_VERSION
  rm -rf "$CACHE/src" && cp -r "$src" "$CACHE/src" && chmod -R u+w "$CACHE/src"
  (cd "$CACHE/src" && GOFLAGS=-mod=mod $GO build -o ../river .)
fi
RIVER=$PWD/$CACHE/river
log "building the console"
$GO build -o "$CACHE/console" ./cmd/console
CONSOLE=$PWD/$CACHE/console

# --- PostgreSQL --------------------------------------------------------------
PGDIR=""
cleanup() {
  if [ -n "$PGDIR" ]; then
    as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$PGDIR"
  fi
}
trap cleanup EXIT
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
if [ -z "${DATABASE_URL:-}" ]; then
  PGBIN=${PG_BIN:-$(pg_config --bindir 2>/dev/null || true)}
  if [ ! -x "$PGBIN/initdb" ]; then PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1); fi
  PGDIR=$(mktemp -d /tmp/bench-vs-river.XXXXXX)
  chmod 755 "$PGDIR"
  if [ "$(id -u)" = 0 ]; then chown postgres "$PGDIR"; fi
  PORT=${PGPORT_BENCH:-55433}
  log "starting a scratch PostgreSQL ($PGBIN) on 127.0.0.1:$PORT"
  as_pg "$PGBIN/initdb" -D "$PGDIR/data" -U postgres --auth=trust >/dev/null
  as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/log" -w -o "-c listen_addresses=127.0.0.1 -c port=$PORT \
    -c unix_socket_directories=$PGDIR -c max_connections=200 -c shared_buffers=1GB -c max_wal_size=4GB -c synchronous_commit=$SYNC" start >/dev/null
  ADMIN_URL="postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable"
else
  ADMIN_URL=$DATABASE_URL
fi
# synchronous_commit travels in the URL too, so it holds on a server we do
# not own; pgx passes `options` to the server for both programs.
with_param() { case "$1" in *\?*) echo "$1&$2" ;; *) echo "$1?$2" ;; esac; }
ADMIN_URL=$(with_param "$ADMIN_URL" "options=-c%20synchronous_commit%3D$SYNC")
RIVER_DB=river_bench_$$
psql_admin() { psql -X -q -v ON_ERROR_STOP=1 "${ADMIN_URL%%\?*}" "$@"; }
psql_admin -c "CREATE DATABASE $RIVER_DB" >/dev/null
drop_river_db() { psql_admin -c "DROP DATABASE IF EXISTS $RIVER_DB WITH (FORCE)" >/dev/null 2>&1 || true; cleanup; }
trap drop_river_db EXIT
RIVER_URL=$(echo "$ADMIN_URL" | sed -E "s#/[^/?]*(\?|$)#/$RIVER_DB\1#")
RIVER_URL=$(with_param "$RIVER_URL" "pool_max_conns=$POOL")
"$RIVER" migrate-up --database-url "$RIVER_URL" >/dev/null

PGVERSION=$(psql_admin -At -c "SHOW server_version")
MAXWAL=$(psql_admin -At -c "SHOW max_wal_size")
CHECKPOINTS=1
if ! psql_admin -c CHECKPOINT >/dev/null 2>&1; then
  CHECKPOINTS=0
  log "WARNING: this role may not run CHECKPOINT (it needs a superuser or pg_checkpoint): runs start without one, and a run may pay for the WAL of the run before it"
fi
log "PostgreSQL $PGVERSION, synchronous_commit=$SYNC, max_wal_size $MAXWAL, pool $POOL, $JOBS jobs, $ROUNDS rounds, continuous $DURATION"

# --- the runs ----------------------------------------------------------------
river_rate() { # the overall job/sec of River's last line
  sed -n 's/.*overall job\/sec \[ *\([0-9.]*\) *\].*/\1/p' | tail -1
}
OUT=$(mktemp)
LOGS=$(mktemp -d)
fail() { # what, log file: say what failed, show its output, stop
  log "FAILED: $1; the last lines of its output ($2 and $2.err):"
  tail -n 20 "$2" "$2.err" >&2
  exit 1
}
positive() { awk -v v="$1" 'BEGIN {exit !(v ~ /^[0-9.]+([eE][+-]?[0-9]+)?$/ && v + 0 > 0)}'; }
record() { # test round value, from the run whose log is $RUNLOG
  positive "$3" || fail "$1 round $2 gave no figure (\"$3\")" "$RUNLOG"
  echo "$1 $2 $3" >>"$OUT"
  echo "round $2 $1: $3 jobs/s" >&2
}
# run test round cmd...: runs one benchmark after a checkpoint (see the
# top), with its standard output in $RUNLOG and its standard error in
# $RUNLOG.err, and stops the script when it fails.
run() {
  local t=$1 r=$2; shift 2
  RUNLOG=$LOGS/$t-$r.log
  if [ "$CHECKPOINTS" = 1 ]; then psql_admin -c CHECKPOINT >/dev/null; fi
  "$@" >"$RUNLOG" 2>"$RUNLOG.err" || fail "$t round $r exited with status $?" "$RUNLOG"
}
river_burn() {
  run river-burn "$1" "$RIVER" bench --database-url "$RIVER_URL" --num-total-jobs "$JOBS"
  record river-burn "$1" "$(cat "$RUNLOG" "$RUNLOG.err" | river_rate)"
}
console_burn() {
  run console-burn "$1" env DATABASE_URL="$ADMIN_URL" "$CONSOLE" bench burn --jobs "$JOBS" --pool "$POOL" \
    --workers "$WORKERS" --batch "$BATCH" --json
  record console-burn "$1" "$(jq -r .jobs_per_second "$RUNLOG" 2>/dev/null | tail -1)"
}
river_continuous() {
  run river-continuous "$1" "$RIVER" bench --database-url "$RIVER_URL" --duration "$DURATION"
  record river-continuous "$1" "$(cat "$RUNLOG" "$RUNLOG.err" | river_rate)"
}
console_continuous() {
  run console-continuous "$1" env DATABASE_URL="$ADMIN_URL" "$CONSOLE" bench continuous --duration "$DURATION" \
    --pool "$POOL" --workers "$WORKERS" --batch "$BATCH" --json
  record console-continuous "$1" "$(jq -r .jobs_per_second "$RUNLOG" 2>/dev/null | tail -1)"
}
# first_in r: which side runs first in round r.
first_in() { if [ $(($1 % 2)) = 1 ]; then echo river; else echo console; fi; }

for r in $(seq 1 "$ROUNDS"); do
  log "round $r ($(first_in "$r") first): load $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ "$(first_in "$r")" = river ]; then river_burn "$r"; console_burn "$r"; else console_burn "$r"; river_burn "$r"; fi
  if [ "$FLOOR" = 1 ]; then
    run console-floor "$r" env DATABASE_URL="$ADMIN_URL" "$CONSOLE" bench floor --jobs "$JOBS" --pool "$POOL" --batch "$BATCH" --json
    record console-floor "$r" "$(jq -r .jobs_per_second "$RUNLOG" 2>/dev/null | tail -1)"
    record reference-floor "$r" "$(jq -r .seed_jobs_per_second "$RUNLOG" 2>/dev/null | tail -1)"
  fi
done
for r in $(seq 1 "$ROUNDS"); do
  log "round $r ($(first_in "$r") first): load $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ "$(first_in "$r")" = river ]; then river_continuous "$r"; console_continuous "$r"; else console_continuous "$r"; river_continuous "$r"; fi
done

# --- the table -----------------------------------------------------------------
median() {
  local n
  n=$(grep -c "^$1 " "$OUT" || true)
  if [ "$n" != "$ROUNDS" ]; then log "FAILED: $1 has $n figures for $ROUNDS rounds"; exit 1; fi
  grep "^$1 " "$OUT" | awk '{print $3}' | sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}
rounds() { grep "^$1 " "$OUT" | awk '{printf "%s%.0f", (NR>1?" ":""), $3}'; }
# per_round a b: a / b in each round, in round order, then their median. The
# two ran minutes apart in the same round, so the machine's drift between
# rounds (often larger than the change measured) mostly cancels out of each
# ratio.
per_round() {
  awk -v a="$1" -v b="$2" '
    $1 == a {x[$2] = $3}
    $1 == b {y[$2] = $3}
    END {
      n = 0
      for (r = 1; r in x; r++) if (y[r] > 0) { s[++n] = x[r] / y[r]; printf "%s%.2f", (n > 1 ? " " : ""), s[n] }
      for (i = 2; i <= n; i++) for (j = i; j > 1 && s[j-1] > s[j]; j--) { t = s[j]; s[j] = s[j-1]; s[j-1] = t }
      if (n) printf " (median %.2f)", (n % 2 ? s[(n+1)/2] : (s[n/2] + s[n/2+1]) / 2)
    }' "$OUT"
}
echo
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GB, load $(cut -d' ' -f1-3 /proc/loadavg); PostgreSQL $PGVERSION; synchronous_commit=$SYNC; max_wal_size $MAXWAL; a checkpoint before each run: $([ "$CHECKPOINTS" = 1 ] && echo yes || echo no); pool $POOL; $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%-22s %10s %10s %8s   %s\n' test river console ratio "rounds (river | console); odd rounds river first"
for t in burn continuous; do
  rv=$(median river-$t); cv=$(median console-$t)
  printf '%-22s %10.0f %10.0f %8.2f   %s | %s\n' "$t jobs/s" "$rv" "$cv" "$(awk -v a="$cv" -v b="$rv" 'BEGIN {print (b>0 ? a/b : 0)}')" \
    "$(rounds river-$t)" "$(rounds console-$t)"
done
if [ "$FLOOR" = 1 ]; then
  fv=$(median console-floor); cv=$(median console-burn)
  printf '%-22s %10s %10.0f %8.2f   engine burn / floor; floor rounds %s\n' "SQL floor jobs/s" - "$fv" \
    "$(awk -v a="$cv" -v b="$fv" 'BEGIN {print (b>0 ? a/b : 0)}')" "$(rounds console-floor)"
  sv=$(median reference-floor)
  printf '%-22s %10s %10.0f %8.2f   engine floor / reference statements; reference rounds %s\n' "reference floor jobs/s" - "$sv" \
    "$(awk -v a="$fv" -v b="$sv" 'BEGIN {print (b>0 ? a/b : 0)}')" "$(rounds reference-floor)"
fi
echo "per round: burn console / river $(per_round console-burn river-burn); continuous $(per_round console-continuous river-continuous)"
if [ "$FLOOR" = 1 ]; then
  echo "per round: engine burn / floor $(per_round console-burn console-floor)"
fi
rm -rf "$OUT" "$LOGS"
