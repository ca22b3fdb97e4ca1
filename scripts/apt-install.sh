#!/usr/bin/env bash
# Installs Debian packages that are not installed yet, as root or through sudo, waiting for another apt run of the
# set-up to finish (CI prepares several tools side by side):
#
#   bash scripts/apt-install.sh podman runc
#
# Runs `apt-get update` only when something is missing. Prints nothing when every package is there.
set -euo pipefail

say() { printf '[apt-install] %s\n' "$*" >&2; }
missing=()
for pkg in "$@"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
((${#missing[@]} > 0)) || exit 0

command -v apt-get >/dev/null || {
  say "ERROR: missing ${missing[*]} and no apt-get to install them; install them yourself"
  exit 1
}
SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
  command -v sudo >/dev/null || {
    say "ERROR: missing ${missing[*]}; run as root or install sudo"
    exit 1
  }
  SUDO=(sudo)
fi
say "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
lock=(-o DPkg::Lock::Timeout=900)
"${SUDO[@]}" apt-get "${lock[@]}" update -qq
"${SUDO[@]}" apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
