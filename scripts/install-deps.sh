#!/usr/bin/env bash
# Installs podsim's build and test dependencies from Debian 12 packages.
# Idempotent: when everything is present it prints nothing and returns at once.
set -euo pipefail

packages=(
  g++ cmake make pkg-config
  libsystemc-dev
  libboost1.81-dev libboost-json1.81-dev libboost-program-options1.81-dev
  libfmt-dev
  catch2
  openmpi-bin libopenmpi-dev
  libprotobuf-dev protobuf-compiler
)
# Extra packages can be asked for by the caller (e.g. the test set-up adds chromium).
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
apt_install() { "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
# Try with the package lists we have; refresh them only if that fails (fresh machines have none).
if ! apt_install 2>/dev/null; then
  "${sudo[@]}" apt-get update -qq >/dev/null
  apt_install
fi
