#!/usr/bin/env bash
# run-tests.sh - set everything up and run the whole test suite:
#   1. the normal build (warnings are errors) and every ctest test,
#   2. the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer,
#   3. each libFuzzer target for a bounded time (EMG_FUZZ_SECONDS, default 20).
# Exits non-zero on the first failing stage.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

jobs=$(nproc)
fuzz_seconds=${EMG_FUZZ_SECONDS:-20}

stage() { printf '\n===== %s =====\n' "$*"; }

stage "build (RelWithDebInfo, -Werror)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"

stage "test suite"
(cd build && ctest --output-on-failure -V -j "$jobs")

stage "build with ASan+UBSan"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DEMG_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$jobs"

stage "test suite under ASan+UBSan"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
   ctest --output-on-failure -j "$jobs")

stage "fuzzing, ${fuzz_seconds} s per target"
CC=clang cmake -S . -B build-fuzz -DEMG_FUZZ=ON -DEMG_SANITIZE=ON -DEMG_INTEROP=OFF \
  -DEMG_FUZZ_SECONDS="$fuzz_seconds" >/dev/null
cmake --build build-fuzz -j "$jobs"
(cd build-fuzz && ctest --output-on-failure -R '^fuzz\.' -j "$jobs")

stage "all stages passed"
