#!/usr/bin/env bash
# install-deps.sh - install what emg needs to build, test and run, from Debian.
# Idempotent and non-interactive: packages already present are skipped, and
# apt is not touched at all when nothing is missing.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

packages=(
  # build
  build-essential cmake pkg-config clang libclang-rt-dev
  # libraries (doc/CodingStyle.md, "Libraries")
  libconfig-dev liblog4c-dev libjansson-dev libmicrohttpd-dev libhttp-parser-dev libyajl-dev
  libpq-dev postgresql libcurl4-openssl-dev libcunit1-dev libssl-dev openssl
  libcrypt-dev libsodium-dev libgnutls28-dev libsystemd-dev
  # packaging: man pages, the .deb, its checks
  scdoc debhelper dpkg-dev fakeroot lintian logrotate adduser systemd
  # independent implementations the tests cross-check against
  libsmpp34-dev libnet-smpp-perl tshark kannel libio-socket-ssl-perl stunnel4
  # benchmarks and tests (node-smpp, an independent SMSC, runs on Node.js)
  procps psmisc iproute2 strace jq curl nodejs chromium chromium-driver python3-selenium gnuplot-nox tmux
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# npm comes with some Node.js builds; Debian ships it apart.
command -v npm >/dev/null 2>&1 || missing+=(npm)

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root to install them" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer for it.
echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
