#!/usr/bin/env python3
# No room of server/ calls a room it does not use: every symbol a room's
# library needs from another room comes from one below it (the rules of
# server/CMakeLists.txt), so there is no call circle between rooms either.
# Read from the built libraries with nm.
# tests/rooms/calls.py BUILD_DIR "RULES"
# SPDX-License-Identifier: Apache-2.0
import os
import subprocess
import sys

build, rules = sys.argv[1], sys.argv[2]
uses = {}
for rule in filter(None, rules.split('|')):
    room, _header, used = rule.split(':')
    uses[room] = [u for u in used.split(',') if u]

reach = {}
for room in uses:
    seen, todo = set(), list(uses[room])
    while todo:
        r = todo.pop()
        if r not in seen:
            seen.add(r)
            todo += uses[r]
    reach[room] = seen

defined, needed = {}, {}
for room in uses:
    lib = os.path.join(build, 'server', 'libemg_%s.a' % room)
    out = subprocess.run(['nm', '--defined-only', '-g', lib], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            defined[parts[2]] = room
    out = subprocess.run(['nm', '-u', lib], capture_output=True, text=True, check=True).stdout
    needed[room] = {line.split()[-1] for line in out.splitlines() if line.strip() and not line.endswith(':')}

breaches = []
for room, symbols in sorted(needed.items()):
    for sym in sorted(symbols):
        there = defined.get(sym)
        if there and there != room and there not in reach[room]:
            breaches.append('room %s calls %s of room %s, which it does not use' % (room, sym, there))
calls = sum(1 for room, symbols in needed.items() for s in symbols if defined.get(s, room) != room)
if not calls:
    print('not ok - no calls between rooms found: are the libraries built?')
    sys.exit(1)
for b in breaches:
    print('not ok - ' + b)
if not breaches:
    print('ok - %d calls between %d rooms, each to a room below' % (calls, len(uses)))
sys.exit(1 if breaches else 0)
