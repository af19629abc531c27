#!/usr/bin/env bash
# build-deb.sh [OUTDIR] - the Debian package from this tree: installs what
# the build needs (install-deps.sh), builds with dpkg-buildpackage in a copy
# of the tree (the build leaves nothing here), checks the result with
# lintian and puts emg_VERSION_ARCH.deb and lintian's report into OUTDIR
# (default dist/). Exits non-zero when the build fails or lintian reports
# an error.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mkdir -p "${1:-dist}" && cd "${1:-dist}" && pwd)
scripts/install-deps.sh >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/emg-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/emg"
tar --exclude=./.git --exclude='./build*' --exclude=./dist --exclude=./var -cf - . | tar -C "$work/emg" -xf -
(cd "$work/emg" && dpkg-buildpackage -b -us -uc -j"$(nproc)") > "$out/build.log" 2>&1 ||
  { tail -30 "$out/build.log" >&2; echo "build-deb: dpkg-buildpackage failed (log: $out/build.log)" >&2; exit 1; }
deb=$(ls "$work"/emg_*.deb)
cp "$deb" "$out/"
lintian --tag-display-limit 0 "$deb" > "$out/lintian.txt" 2>&1 || true
echo "build-deb: $out/$(basename "$deb")"
if grep -q '^E: ' "$out/lintian.txt"; then
  grep '^E: ' "$out/lintian.txt" >&2
  echo "build-deb: lintian reports errors (all of its report: $out/lintian.txt)" >&2
  exit 1
fi
echo "build-deb: lintian: $(grep -c '^E: ' "$out/lintian.txt") errors, $(grep -c '^W: ' "$out/lintian.txt") warnings ($out/lintian.txt)"
