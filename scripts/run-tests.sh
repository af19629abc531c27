#!/usr/bin/env bash
# run-tests.sh - set everything up and run the whole test suite:
#   1. the normal build (warnings are errors) and every ctest test,
#   2. the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer,
#   3. each libFuzzer target for a bounded time (EMG_FUZZ_SECONDS, default 20),
#   4. with EMG_MUTATION=1, the mutation check (tests/mutation/run.sh: every
#      deliberate bug of tests/mutation/list must be caught by its tests).
# Stage 1 checks that the mutation list still fits the code on every run
# (ctest's mutation.list); stage 4 runs it, which takes far longer.
# Exits non-zero on the first failing stage, and on any test skipped (one
# that could not run here: no root for a tmpfs, a filesystem without
# O_DIRECT, a missing peer). This script installs everything the suite
# needs, so a skip means a test did not run: EMG_ALLOW_SKIPS=1 lets a
# developer's machine without root pass anyway.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

jobs=$(nproc)
fuzz_seconds=${EMG_FUZZ_SECONDS:-20}

stage() { printf '\n===== %s =====\n' "$*"; }

# run_ctest DIR [ctest options]: ctest in DIR; fails when a test failed or
# was skipped.
run_ctest() {
  local dir=$1 log
  shift
  log=$(mktemp)
  (cd "$dir" && ctest "$@") 2>&1 | tee "$log"
  if grep -q '\*\*\*Skipped' "$log"; then
    echo "run-tests: tests were skipped in $dir:"
    grep '\*\*\*Skipped' "$log" | sed 's/^/  /'
    rm -f "$log"
    if [ "${EMG_ALLOW_SKIPS:-}" != 1 ]; then
      echo "run-tests: every test must run (EMG_ALLOW_SKIPS=1 accepts skips)"
      return 1
    fi
  fi
  rm -f "$log"
}

stage "build (RelWithDebInfo, -Werror)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMG_WERROR=ON >/dev/null
cmake --build build -j "$jobs"

stage "test suite"
run_ctest build --output-on-failure -V -j "$jobs"

stage "build with ASan+UBSan"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DEMG_SANITIZE=ON -DEMG_WERROR=ON >/dev/null
cmake --build build-asan -j "$jobs"

stage "test suite under ASan+UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  run_ctest build-asan --output-on-failure -j "$jobs"

stage "fuzzing, ${fuzz_seconds} s per target"
CC=clang cmake -S . -B build-fuzz -DEMG_WERROR=ON -DEMG_FUZZ=ON -DEMG_SANITIZE=ON -DEMG_INTEROP=OFF \
  -DEMG_FUZZ_SECONDS="$fuzz_seconds" >/dev/null
cmake --build build-fuzz -j "$jobs"
run_ctest build-fuzz --output-on-failure -R '^fuzz\.' -j "$jobs"

if [ "${EMG_MUTATION:-}" = 1 ]; then
  stage "mutation check (tests/mutation/run.sh)"
  tests/mutation/run.sh -j "$jobs"
fi

stage "all stages passed"
