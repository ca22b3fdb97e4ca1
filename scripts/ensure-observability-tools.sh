#!/usr/bin/env bash
# Makes the binaries the observability tests need available on PATH:
#
#   bash scripts/ensure-observability-tools.sh
#
# - promtool and prometheus (Debian `prometheus`): `promtool check/test rules` on deploy/prometheus/ and the
#   integration suite that runs a real Prometheus scraping a real `ttlstream run`;
# - chromium (Debian `chromium`): the integration suite that renders `ttlstream audit --html` headless.
#
# Idempotent: installs nothing when every binary is already there, and runs `apt-get update` only when it has
# to install. Packaged services are not started (the tests start their own Prometheus on a free port); if the
# package's service did start anyway, it is stopped so nothing stays on port 9090.
set -euo pipefail

say() { printf '[ensure-observability-tools] %s\n' "$*" >&2; }
die() {
  say "ERROR: $*"
  exit 1
}

declare -A PACKAGE_OF=([promtool]=prometheus [prometheus]=prometheus [chromium]=chromium)
missing=()
for bin in promtool prometheus chromium; do
  command -v "$bin" >/dev/null || missing+=("${PACKAGE_OF[$bin]}")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  say "promtool, prometheus and chromium are installed"
  exit 0
fi

# Unique package names, in order.
mapfile -t packages < <(printf '%s\n' "${missing[@]}" | awk '!seen[$0]++')
bash "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" "${packages[@]}"
SUDO=()
[[ "$(id -u)" -eq 0 ]] || SUDO=(sudo)

# The Debian package enables a prometheus service listening on :9090; the tests need none of it.
if command -v systemctl >/dev/null && systemctl is-active --quiet prometheus 2>/dev/null; then
  "${SUDO[@]}" systemctl stop prometheus || true
  "${SUDO[@]}" systemctl disable prometheus >/dev/null 2>&1 || true
elif command -v service >/dev/null && service prometheus status >/dev/null 2>&1; then
  "${SUDO[@]}" service prometheus stop >/dev/null 2>&1 || true
fi

for bin in promtool prometheus chromium; do
  command -v "$bin" >/dev/null || die "$bin still missing after installing ${packages[*]}"
done
say "installed: $(promtool --version 2>&1 | head -1); $(chromium --version 2>/dev/null | head -1)"
