#!/usr/bin/env bash
# persist_ratio.sh [PAIRS] [COUNT] - persist on against persist off: pairs of
# bench/gateway.sh COUNT, their order swapped every pair (bench/ratio.sh).
exec "$(dirname "$0")/ratio.sh" PERSIST false true "$@"
