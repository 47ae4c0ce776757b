#!/usr/bin/env bash
# Lighthouse's mobile audit of the incident pages, in one command:
#
#   scripts/lighthouse.sh                 # build, start a console, audit, stop it
#   RUNS=1 scripts/lighthouse.sh          # one run per page instead of three
#   CPU_SLOWDOWN=auto scripts/lighthouse.sh
#   FLOW=1 scripts/lighthouse.sh          # the pages opened one from another in one tab
#
# It builds the console, starts it on the embedded default (a private
# PostgreSQL and the demo workload, in a temporary folder, on a free port),
# creates an admin API token for Lighthouse to send, opens an
# incident, and runs Lighthouse RUNS times (3 by default) on the overview, a
# runbook step, the jobs list, the history page and the incident's page,
# with its mobile settings (a mid-range phone on a slow 4G link). It prints
# one line per page: the median performance score, the accessibility score,
# the median of the load metrics, and the host's benchmark index. Reports
# are kept in OUT (a temporary folder unless set), one JSON file per run.
#
# Lighthouse simulates the phone's CPU by multiplying the main-thread time it
# observes by CPU_SLOWDOWN (its default, 4, assumes a desktop whose
# benchmark index is about 1000 or more). On a slower or busy host set it
# by hand, or to "auto": the multiplier that brings the host's benchmark
# index (measured first) to the low-end phone Chrome's calibration aims at
# (index 264), at most 4. The table says which was used.
#
# Needs node and npm (scripts/deps.sh lighthouse installs Lighthouse, which
# this runs first) and chromium (CHROME_PATH, /usr/bin/chromium by default).
# BASE and TOKEN audit a console already running instead (TOKEN an API
# token, from `console token create`; INCIDENT the id of an incident).
# With FLOW=1 each run opens the overview first (not scored) and then scores
# each page navigated to from the one before, in one tab, as a person goes
# through the console (scripts/lighthouse-flow.mjs): the console's
# Cross-Origin-Opener-Policy makes the first page a tab opens from another
# origin, Lighthouse's about:blank included, start a new renderer process,
# which a single-page run counts as that page's blocking time.
# TABLE_ONLY=1 OUT=... prints the table of reports taken before; PAGES
# ("name=/path ...") audits other pages.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-3}
CPU_SLOWDOWN=${CPU_SLOWDOWN:-4}
export CHROME_PATH=${CHROME_PATH:-/usr/bin/chromium}
OUT=${OUT:-$(mktemp -d /tmp/lighthouse-XXXXXX)}
mkdir -p "$OUT"

if [ -n "${TABLE_ONLY:-}" ]; then
  # Only the table, from the reports already in OUT (BASE set, INCIDENT
  # as when they were taken).
  BASE=${BASE:-none}
else
  scripts/deps.sh lighthouse
fi
LH=$(scripts/deps.sh lighthouse-bin)
[ -x "$CHROME_PATH" ] || { echo "lighthouse: no chromium at $CHROME_PATH (set CHROME_PATH)" >&2; exit 1; }

console_pid=""
cleanup() {
  if [ -n "$console_pid" ]; then
    kill "$console_pid" 2>/dev/null || true
    wait "$console_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

if [ -z "${BASE:-}" ]; then
  echo "lighthouse: building the console" >&2
  go build -o "$OUT/console" ./cmd/console
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  BASE=http://127.0.0.1:$port
  "$OUT/console" --addr "127.0.0.1:$port" --data-dir "$OUT/var" >"$OUT/console.log" 2>&1 &
  console_pid=$!
  echo "lighthouse: console on $BASE (log: $OUT/console.log)" >&2
  for _ in $(seq 1 240); do
    grep -q "console is serving" "$OUT/console.log" && break
    kill -0 "$console_pid" 2>/dev/null || { echo "lighthouse: the console stopped:" >&2; tail -20 "$OUT/console.log" >&2; exit 1; }
    sleep 1
  done
  grep -q "console is serving" "$OUT/console.log" || { echo "lighthouse: the console did not start within 4 minutes" >&2; exit 1; }
  # Lighthouse sends an API token on every request of the page (Chromium
  # drops a Cookie header given that way): a token of the admin role.
  dburl=$(sed -n 's/.*its DATABASE_URL[^:]*: \([^ ]*\).*/\1/p' "$OUT/console.log" | head -1)
  TOKEN=$(DATABASE_URL=$dburl "$OUT/console" token create --name "lighthouse-$port" --role admin | awk '{print $NF}')
  [ -n "$TOKEN" ] || { echo "lighthouse: creating an API token failed" >&2; exit 1; }

  # An open incident, so its page (and the top bar's pill) has content.
  INCIDENT=$(curl -fsS -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \
    -d '{"params": {"title": "checkout latency after the deploy", "impact": "checkouts time out"}, "reason": "a page to audit"}' \
    "$BASE/api/v1/actions/incident.open" | node -e '
      let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
        const r = JSON.parse(s); console.log((r.result && (r.result.id || r.result.ID)) || ""); });')
  [ -n "$INCIDENT" ] || { echo "lighthouse: opening an incident failed" >&2; exit 1; }
  # The demo's first minute: a lock chain, dead letters and history.
  sleep "${WARMUP:-60}"
fi

pages="overview=/ step=/runbook/blocking jobs=/jobs history=/history"
[ -n "${INCIDENT:-}" ] && pages="$pages incident=/incidents/$INCIDENT"
pages=${PAGES:-$pages}

chrome_flags="--no-sandbox --headless --disable-gpu --disable-background-networking --disable-component-update --disable-sync"

# run NAME PATH I MULTIPLIER: one Lighthouse run into OUT/NAME-I.json, with
# a fresh profile. A run that fails (on a busy host Lighthouse sometimes
# loses the trace) is tried again, three times in all.
run() {
  local profile try
  for try in 1 2 3; do
    profile=$(mktemp -d "$OUT/profile-XXXXXX")
    if "$LH" "$BASE$2" --quiet --form-factor=mobile --only-categories=performance,accessibility \
      --throttling.cpuSlowdownMultiplier="$4" \
      --extra-headers="{\"Authorization\": \"Bearer $TOKEN\"}" \
      --chrome-flags="$chrome_flags --user-data-dir=$profile" \
      --output=json --output-path="$OUT/$1-$3.json" >/dev/null 2>"$OUT/$1-$3.log"; then
      rm -rf "$profile"
      return 0
    fi
    rm -rf "$profile"
    echo "lighthouse: $1 run $3 failed (try $try of 3): $(grep -m1 -i error "$OUT/$1-$3.log" || tail -1 "$OUT/$1-$3.log")" >&2
  done
  return 1
}

if [ -n "${TABLE_ONLY:-}" ]; then
  :
elif [ "$CPU_SLOWDOWN" = auto ]; then
  run calibrate /login 0 4
  CPU_SLOWDOWN=$(node -e '
    const bi = require(process.argv[1]).environment.benchmarkIndex;
    console.log(Math.min(4, Math.max(1, bi / 264)).toFixed(1));' "$OUT/calibrate-0.json")
  echo "lighthouse: CPU slowdown $CPU_SLOWDOWN from the host's benchmark index" >&2
fi

if [ -n "${FLOW:-}" ] && [ -z "${TABLE_ONLY:-}" ]; then
  for i in $(seq 1 "$RUNS"); do
    echo "lighthouse: the pages in one tab, run $i of $RUNS" >&2
    BASE=$BASE TOKEN=$TOKEN LIGHTHOUSE_MODULES=$(dirname "$(dirname "$LH")") \
      node scripts/lighthouse-flow.mjs "$OUT" "$i" "$CPU_SLOWDOWN" $pages 2>"$OUT/flow-$i.log" ||
      echo "lighthouse: run $i failed: $(tail -3 "$OUT/flow-$i.log")" >&2
  done
fi

for p in $pages; do
  [ -n "${TABLE_ONLY:-}${FLOW:-}" ] && break
  name=${p%%=*}
  path=${p#*=}
  for i in $(seq 1 "$RUNS"); do
    echo "lighthouse: $name ($path), run $i of $RUNS" >&2
    run "$name" "$path" "$i" "$CPU_SLOWDOWN" || true
  done
done

node - "$OUT" "$RUNS" "$CPU_SLOWDOWN" $pages <<'EOF'
const fs = require("fs"), path = require("path");
const [out, runs, slowdown, ...pages] = process.argv.slice(2);
const median = xs => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor((s.length - 1) / 2)]; };
const ms = v => v >= 1000 ? (v / 1000).toFixed(1) + " s" : Math.round(v) + " ms";
const rows = [["page", "perf (median)", "perf (runs)", "a11y", "FCP", "LCP", "TBT", "CLS", "bench index"]];
const notes = [];
for (const p of pages) {
  const [name, url] = p.split("=");
  const reps = [];
  for (let i = 1; i <= Number(runs); i++) {
    const f = path.join(out, `${name}-${i}.json`);
    const r = fs.existsSync(f) && JSON.parse(fs.readFileSync(f));
    if (r && !r.runtimeError && r.categories.performance.score !== null) reps.push(r);
  }
  if (reps.length === 0) { rows.push([`${name} ${url}`, "failed", "", "", "", "", "", "", ""]); continue; }
  const perf = reps.map(r => Math.round(r.categories.performance.score * 100));
  const a11y = reps.map(r => Math.round(r.categories.accessibility.score * 100));
  const m = id => median(reps.map(r => r.audits[id].numericValue));
  rows.push([`${name} ${url}`, String(median(perf)), perf.join(" "), String(Math.min(...a11y)),
    ms(m("first-contentful-paint")), ms(m("largest-contentful-paint")), ms(m("total-blocking-time")),
    m("cumulative-layout-shift").toFixed(3), String(Math.round(median(reps.map(r => r.environment.benchmarkIndex))))]);
  for (const r of reps) for (const a of Object.values(r.audits)) {
    const cat = r.categories.accessibility.auditRefs.some(x => x.id === a.id && x.weight > 0);
    if (cat && a.score !== null && a.score < 1) notes.push(`${name}: ${a.id}: ${a.title}`);
  }
}
const w = rows[0].map((_, c) => Math.max(...rows.map(r => r[c].length)));
for (const r of rows) console.log(r.map((v, c) => v.padEnd(w[c])).join("  ").trimEnd());
console.log(`\nmobile, CPU slowdown ${slowdown}, ${runs} run(s) per page${process.env.FLOW ? ", each page opened from the one before in one tab" : ""}; reports in ${out}`);
for (const n of [...new Set(notes)]) console.log("accessibility: " + n);
EOF
