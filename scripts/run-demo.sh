#!/usr/bin/env bash
# run-demo.sh - set everything up and run emg's main job on the embedded defaults.
# Until the gateway exists, that is the codec benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)" --target codec_bench
build/codec_bench "$@"
