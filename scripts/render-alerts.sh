#!/usr/bin/env bash
# Renders deploy/prometheus/alerts.yml for one console: every runbook_url
# points at BASE_URL instead of the placeholder https://console.example.internal.
#
#   scripts/render-alerts.sh BASE_URL [RULES_FILE] > alerts.yml
#
# BASE_URL is the address operators open the console at, e.g.
# https://console.example.com or https://ops.example.com/console (no
# trailing slash needed). Prints the rendered rules on stdout.
set -euo pipefail
placeholder="https://console.example.internal"
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 BASE_URL [RULES_FILE] > alerts.yml" >&2
  exit 2
fi
base=${1%/}
rules=${2:-"$(dirname "$0")/../deploy/prometheus/alerts.yml"}
case "$base" in
  http://?*|https://?*) ;;
  *) echo "render-alerts: BASE_URL must start with http:// or https:// (got \"$1\")" >&2; exit 2 ;;
esac
case "$base" in
  *[[:space:]\"\'\\]*) echo "render-alerts: BASE_URL must not contain spaces, quotes or backslashes" >&2; exit 2 ;;
esac
if ! grep -q "$placeholder" "$rules"; then
  echo "render-alerts: $rules has no $placeholder placeholder (already rendered?)" >&2
  exit 1
fi
# Escape what sed's replacement treats specially (the | delimiter and &).
escaped=$(printf '%s' "$base" | sed -e 's/[|&]/\\&/g')
sed -e "s|$placeholder|$escaped|g" "$rules"
