#!/usr/bin/env bash
# persist_ratio.sh [PAIRS] [COUNT] - persist on against persist off: pairs of
# bench/gateway.sh COUNT, their order swapped every pair (bench/ratio.sh).
# SPDX-License-Identifier: Apache-2.0
exec "$(dirname "$0")/ratio.sh" PERSIST false true "$@"
