#!/usr/bin/env bash
# bench-pressure.sh: `console bench pressure` and the same load on River
# (bench/river-pressure, River v0.51.2 through its Go client) on the same
# PostgreSQL, with the same pool size, workers, backlog, synchronous_commit
# and xmin holder (a session that wrote a row and keeps its transaction
# open). Each side runs a clean phase of DURATION, then a phase of HOLD
# under the holder; the script prints both reports and a side-by-side table:
# clean and pressure jobs/s, the share kept, the claim statement's p99 in
# each phase and the dead tuples at the end.
#
#   scripts/bench-pressure.sh                        # 10 min + 10 min each side: ~45 min
#   DURATION=1m HOLD=1m POOL=4 SYNC=on FIRST=river scripts/bench-pressure.sh
#   RATE=1500 scripts/bench-pressure.sh             # the same arrival rate for both
#   ONLY=console scripts/bench-pressure.sh          # one side (console or river)
#
# By default an inserter keeps a backlog waiting, so each engine runs as fast
# as it can and "kept" is its pressure throughput against its clean one; an
# engine that does more jobs also leaves more dead versions behind the
# holder. With RATE, jobs arrive at RATE per second in both phases (no
# backlog kept) and "kept" is the share of the jobs that arrived under
# pressure that started in the window: both engines then face the same load
# and about the same dead tuples.
#
# Without DATABASE_URL it starts its own scratch PostgreSQL on 127.0.0.1 (as
# the postgres user when run as root) and removes it afterwards. With
# DATABASE_URL it needs a role that may CREATE DATABASE: River runs in a
# database of its own, the console in a scratch database it drops. Each
# side starts from a CHECKPOINT (untimed), as in bench-vs-river.sh.
#
# The River side is a module of its own (bench/river-pressure/go.mod): the
# console's module never depends on River; it is built from the Go module
# proxy into .cache/river-pressure.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-10m}     # clean phase, both sides
HOLD=${HOLD:-10m}             # phase under the xmin holder, both sides
POOL=${POOL:-4}               # connections, both sides
WORKERS=${WORKERS:-2000}      # jobs in flight, both sides
BATCH=${BATCH:-1000}          # console largest claim
SYNC=${SYNC:-on}              # synchronous_commit, both sides
FIRST=${FIRST:-console}       # which side runs first: console or river
ONLY=${ONLY:-}                # run only this side: console or river
case "$ONLY" in
  console) SIDES="console" ;;
  river) SIDES="river" ;;
  "") if [ "$FIRST" = river ]; then SIDES="river console"; else SIDES="console river"; fi ;;
  *) echo "bench-pressure: ONLY=$ONLY: use console or river" >&2; exit 2 ;;
esac
RATE=${RATE:-0}               # jobs arriving per second, both sides; 0: keep a backlog
CACHE=.cache/river-pressure
GO=${GO:-go}

log() { echo "bench-pressure: $*" >&2; }

mkdir -p "$CACHE"
log "building the console and the River side"
$GO build -o "$CACHE/console" ./cmd/console
(cd bench/river-pressure && $GO build -o "../../$CACHE/river-pressure" .)
CONSOLE=$PWD/$CACHE/console
RIVER=$PWD/$CACHE/river-pressure

# --- PostgreSQL --------------------------------------------------------------
PGDIR=""
RIVER_DB=""
cleanup() {
  if [ -n "$RIVER_DB" ]; then psql_admin -c "DROP DATABASE IF EXISTS $RIVER_DB WITH (FORCE)" >/dev/null 2>&1 || true; fi
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
  PGDIR=$(mktemp -d /tmp/bench-pressure.XXXXXX)
  chmod 755 "$PGDIR"
  if [ "$(id -u)" = 0 ]; then chown postgres "$PGDIR"; fi
  PORT=${PGPORT_BENCH:-55434}
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
psql_admin() { psql -X -q -v ON_ERROR_STOP=1 "${ADMIN_URL%%\?*}" "$@"; }
RIVER_DB=river_pressure_$$
psql_admin -c "CREATE DATABASE $RIVER_DB" >/dev/null
RIVER_URL=$(echo "$ADMIN_URL" | sed -E "s#/[^/?]*(\?|$)#/$RIVER_DB\1#")

PGVERSION=$(psql_admin -At -c "SHOW server_version")
CHECKPOINTS=1
if ! psql_admin -c CHECKPOINT >/dev/null 2>&1; then
  CHECKPOINTS=0
  log "WARNING: this role may not run CHECKPOINT: each side starts without one"
fi
log "PostgreSQL $PGVERSION, synchronous_commit=$SYNC, pool $POOL, workers $WORKERS, clean $DURATION, hold $HOLD, rate $RATE, $FIRST first"

# --- the runs ----------------------------------------------------------------
LOGS=$(mktemp -d)
fail() { # what, log file: say what failed, show its output, stop
  log "FAILED: $1; the last lines of its output ($2 and $2.err):"
  tail -n 20 "$2" "$2.err" >&2
  exit 1
}
run() { # side cmd...: one side after a checkpoint; its JSON in $LOGS/side.json
  local side=$1; shift
  if [ "$CHECKPOINTS" = 1 ]; then psql_admin -c CHECKPOINT >/dev/null; fi
  log "$side: start, load $(cut -d' ' -f1-3 /proc/loadavg)"
  "$@" >"$LOGS/$side.json" 2>"$LOGS/$side.json.err" || fail "$side exited with status $?" "$LOGS/$side.json"
  jq -e '.jobs_pressure > 0 and .jobs_clean > 0' "$LOGS/$side.json" >/dev/null || fail "$side reported no jobs" "$LOGS/$side.json"
  echo "$side: end, load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$LOGS/loads"
  log "$side: done, load $(cut -d' ' -f1-3 /proc/loadavg)"
}
console_side() {
  run console env DATABASE_URL="$ADMIN_URL" "$CONSOLE" bench pressure --duration "$DURATION" --hold "$HOLD" \
    --pool "$POOL" --workers "$WORKERS" --batch "$BATCH" --rate "$RATE" --json
}
river_side() {
  run river "$RIVER" --database-url "$RIVER_URL" --duration "$DURATION" --hold "$HOLD" \
    --pool "$POOL" --workers "$WORKERS" --rate "$RATE" --json
}
for side in $SIDES; do "${side}_side"; done

# --- the table -----------------------------------------------------------------
for side in $SIDES; do
  echo "== $side, per minute"
  jq -r 'def r: . * 100 | round / 100; to_entries[] | select(.key | test("_minute_")) |
    "\(.key)\t\(.value.jobs_per_second | round) jobs/s\tclaim p50 \(.value.claim_p50_ms | r) p99 \(.value.claim_p99_ms | r) ms\tstart p99 \(.value.start_p99_ms | round) ms\tdead \(.value.dead_tuples)\(if .value.head_claims == null then "" else "\tfrom the head \(.value.head_claims), p99 \(.value.head_p99_ms | r) ms" end)"' \
    "$LOGS/$side.json"
  jq -r '"dead tuples, clean:    \(.dead_tuples_series_clean)", "dead tuples, pressure: \(.dead_tuples_series_pressure)"' "$LOGS/$side.json"
done
echo
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at the end; $(tr '\n' ';' <"$LOGS/loads") PostgreSQL $PGVERSION; synchronous_commit=$SYNC; pool $POOL; workers $WORKERS; clean $DURATION, hold $HOLD; rate $RATE; $FIRST first; $(date -u +%Y-%m-%dT%H:%MZ)"
if [ "$RATE" != 0 ]; then echo "arrival rate $RATE jobs/s, both sides: kept = jobs started under pressure / jobs that arrived under pressure"; fi
echo "claim p99: the claim statement, from sending it to its rows read (console: JobClaim; River: JobGetAvailable)"
printf '%-8s %12s %12s %7s %15s %15s %10s %14s\n' engine "clean jobs/s" "hold jobs/s" kept "claim p99 clean" "claim p99 hold" "p99 ratio" "dead tuples"
for side in $SIDES; do
  jq -r --arg s "$side" '[$s, .jobs_per_second_clean, .jobs_per_second_pressure, .kept_percent,
      .claim_p99_ms_clean, .claim_p99_ms_pressure, (.claim_p99_ratio // 0), .dead_tuples_pressure] | @tsv' "$LOGS/$side.json" |
    awk -F'\t' '{printf "%-8s %12.0f %12.0f %6.1f%% %12.2f ms %12.2f ms %10.2f %14d\n", $1, $2, $3, $4, $5, $6, $7, $8}'
done
rm -rf "$LOGS"
