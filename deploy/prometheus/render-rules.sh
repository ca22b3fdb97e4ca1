#!/usr/bin/env bash
# Prints ttlstream-rules.yml with every alert's runbook_url under your own base: the URL where you serve
# docs/operations.md (a wiki page, your fork of the repository, an internal docs site). Each alert links to
# <base>#<alert name in lower case>, an anchor of that page.
#
#   deploy/prometheus/render-rules.sh --runbook-base https://docs.example.com/ttlstream/operations.md > rules.yml
#
# For a plain Prometheus (`rule_files:`). With the Prometheus operator, deploy/k8s's production overlay holds the
# same rules as a PrometheusRule and sets the base by its own patch (kustomization.yaml). The committed file carries
# the placeholder base below; `promtool test rules` (deploy/prometheus/tests) runs on it,
# test/unit/deploy/prometheus-rules.test.ts on this script's output. Exits 2, with one line on stderr, on a bad argument.
set -euo pipefail

readonly PLACEHOLDER_BASE='https://ttlstream.invalid/docs/operations.md'
rules="$(dirname "${BASH_SOURCE[0]}")/ttlstream-rules.yml"

usage() {
  echo "render-rules.sh: $1 (usage: see the head of this script)" >&2
  exit 2
}

base=''
while (($# > 0)); do
  case "$1" in
    --runbook-base) base="${2-}" && shift 2 || usage '--runbook-base needs a URL' ;;
    *) usage "unknown argument \"$1\"" ;;
  esac
done

# Quoted in single quotes in the YAML, and followed by #anchor: no quote, space or '#' of its own.
[[ -n "$base" ]] || usage '--runbook-base is required (the URL of docs/operations.md as you serve it)'
[[ "$base" =~ ^https?://[^[:space:]\'\"#]+$ ]] ||
  usage "--runbook-base: expected an http(s) URL without spaces, quotes or '#', got \"$base\""

# sed's replacement: '&', '|' and '\' are special.
replacement=${base//\\/\\\\}
replacement=${replacement//&/\\&}
replacement=${replacement//|/\\|}
sed "s|${PLACEHOLDER_BASE}#|${replacement}#|g" "$rules"
