#!/usr/bin/env bash
# build-matrix.sh [OUTDIR] - builds the tree as users and distributions do,
# each in a fresh folder without -Werror: the default build type, Release
# and Debug, with gcc and with clang, all with Debian's hardening flags
# (dpkg-buildflags: -O2 -fstack-protector-strong -D_FORTIFY_SOURCE=2,
# -Wformat -Werror=format-security, relro, now). Prints one line per build
# with its warnings; exits non-zero when any build fails.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mkdir -p "${1:-build-matrix}" && cd "${1:-build-matrix}" && pwd)
export DEB_BUILD_MAINT_OPTIONS=hardening=+all
cflags=$(dpkg-buildflags --get CFLAGS) cppflags=$(dpkg-buildflags --get CPPFLAGS)
ldflags=$(dpkg-buildflags --get LDFLAGS)
failed=0
for cc in gcc clang; do
  for type in "" Release Debug; do
    dir=$out/$cc-${type:-default}
    rm -rf "$dir"
    if CC=$cc CFLAGS="$cflags $cppflags" LDFLAGS="$ldflags" cmake -S . -B "$dir" ${type:+-DCMAKE_BUILD_TYPE=$type} \
         > "$dir.log" 2>&1 && cmake --build "$dir" -j "$(nproc)" >> "$dir.log" 2>&1; then
      printf '%-6s %-8s ok, %s warnings\n' "$cc" "${type:-default}" "$(grep -c 'warning:' "$dir.log" || true)"
    else
      printf '%-6s %-8s FAILED (%s)\n' "$cc" "${type:-default}" "$dir.log"
      failed=1
    fi
  done
done
exit $failed
