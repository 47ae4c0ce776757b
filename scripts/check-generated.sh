#!/usr/bin/env bash
# Fails when the committed *_templ.go files do not match `templ generate`.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$(find views web -name '*_templ.go' -print0 | sort -z | xargs -0 sha256sum)
go tool templ generate -path . >/dev/null 2>&1
after=$(find views web -name '*_templ.go' -print0 | sort -z | xargs -0 sha256sum)
if [ "$before" != "$after" ]; then
  echo "generated templ files were stale; run 'make generate' and commit the result:" >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
