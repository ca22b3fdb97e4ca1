#!/usr/bin/env bash
# Prints ttlstream-rules.yml with every alert's runbook_url under your own base: the URL where you serve
# docs/operations.md (a wiki page, your fork of the repository, an internal docs site). Each alert links to
# <base>#<alert name in lower case>, an anchor of that page.
#
#   deploy/prometheus/render-rules.sh --runbook-base URL                          > ttlstream-rules.yml
#   deploy/prometheus/render-rules.sh --runbook-base URL --prometheus-rule \
#     [--name ttlstream] [--namespace NS] [--label KEY=VALUE]...                  | kubectl apply -f -
#
# The second form wraps the rules in a PrometheusRule (monitoring.coreos.com/v1) for the Prometheus operator, as
# kube-prometheus-stack runs it: give it the label its ruleSelector wants (the chart's default is
# `release: <its release name>`). The committed file carries the placeholder base below; `promtool test rules`
# (deploy/prometheus/tests) runs on it, test/unit/deploy/prometheus-rules.test.ts on this script's output.
# Exits 2, with one line on stderr, on a bad argument.
set -euo pipefail

readonly PLACEHOLDER_BASE='https://ttlstream.invalid/docs/operations.md'
rules="$(dirname "${BASH_SOURCE[0]}")/ttlstream-rules.yml"

usage() {
  echo "render-rules.sh: $1 (usage: see the head of this script)" >&2
  exit 2
}

base=''
crd=0
name='ttlstream'
namespace=''
labels=()
while (($# > 0)); do
  case "$1" in
    --runbook-base) base="${2-}" && shift 2 || usage '--runbook-base needs a URL' ;;
    --prometheus-rule) crd=1 && shift ;;
    --name) name="${2-}" && shift 2 || usage '--name needs a value' ;;
    --namespace) namespace="${2-}" && shift 2 || usage '--namespace needs a value' ;;
    --label) labels+=("${2-}") && shift 2 || usage '--label needs KEY=VALUE' ;;
    *) usage "unknown argument \"$1\"" ;;
  esac
done

# Quoted in single quotes in the YAML, and followed by #anchor: no quote, space or '#' of its own.
[[ -n "$base" ]] || usage '--runbook-base is required (the URL of docs/operations.md as you serve it)'
[[ "$base" =~ ^https?://[^[:space:]\'\"#]+$ ]] ||
  usage "--runbook-base: expected an http(s) URL without spaces, quotes or '#', got \"$base\""
if ((crd == 0)) && { [[ -n "$namespace" ]] || ((${#labels[@]} > 0)) || [[ "$name" != 'ttlstream' ]]; }; then
  usage '--name, --namespace and --label go with --prometheus-rule'
fi
dns_name='^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$'
[[ "$name" =~ $dns_name ]] || usage "--name: not a Kubernetes object name: \"$name\""
[[ -z "$namespace" || "$namespace" =~ $dns_name ]] || usage "--namespace: not a namespace name: \"$namespace\""
for label in "${labels[@]}"; do
  [[ "$label" =~ ^([A-Za-z0-9./_-]{1,253})=([A-Za-z0-9._-]{0,63})$ ]] ||
    usage "--label: expected KEY=VALUE (a Kubernetes label), got \"$label\""
done

# sed's replacement: '&', '|' and '\' are special.
replacement=${base//\\/\\\\}
replacement=${replacement//&/\\&}
replacement=${replacement//|/\\|}
rendered="$(sed "s|${PLACEHOLDER_BASE}#|${replacement}#|g" "$rules")"

if ((crd == 0)); then
  printf '%s\n' "$rendered"
  exit 0
fi
echo 'apiVersion: monitoring.coreos.com/v1'
echo 'kind: PrometheusRule'
echo 'metadata:'
echo "  name: $name"
[[ -z "$namespace" ]] || echo "  namespace: $namespace"
if ((${#labels[@]} > 0)); then
  echo '  labels:'
  for label in "${labels[@]}"; do echo "    ${label%%=*}: \"${label#*=}\""; done
fi
echo 'spec:'
# The rules file's top level is `groups:`: indented under spec, comments and all (empty lines stay empty).
printf '%s\n' "$rendered" | sed -E 's/^(.)/  \1/'
