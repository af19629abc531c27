#!/usr/bin/env bash
# man_pages.sh BUILD - the man pages say what the programs do: every option
# of each tool's --help is in its man page and every option its man page
# names is in --help; every key emgd.conf(5) names is a key of the
# configuration's tables; the pages were built (scdoc) and render.
# SPDX-License-Identifier: Apache-2.0
BIN=${BIN:-$1}
source "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
command -v scdoc >/dev/null || skip "scdoc is not installed"

options() { grep -oE -- '--[a-z][a-z0-9-]*' | sort -u; }
for pair in emgd:8 emgctl:1 emgload:1 emgsink:1; do
  tool=${pair%%:*} section=${pair#*:}
  page=$SRC/doc/man/$tool.$section.scd
  "$BIN/$tool" --help | options > "$TMP/$tool.help"
  options < "$page" > "$TMP/$tool.man"
  missing=$(comm -23 "$TMP/$tool.help" "$TMP/$tool.man" | tr '\n' ' ')
  extra=$(comm -13 "$TMP/$tool.help" "$TMP/$tool.man" | tr '\n' ' ')
  check "$tool: every --help option is in $tool($section) ${missing:+(missing: $missing)}" [ -z "$missing" ]
  check "$tool: every option of $tool($section) is in --help ${extra:+(not in --help: $extra)}" [ -z "$extra" ]
  check "$tool: -h prints the same as --help" cmp -s <("$BIN/$tool" -h) <("$BIN/$tool" --help)
  check "$tool: --version" bash -c "'$BIN/$tool' --version | grep -qx '$tool [0-9][0-9.]*'"
  check "$tool($section) built and renders" bash -c "[ -s '$BIN/man/$tool.$section' ] && man -l '$BIN/man/$tool.$section' 2>/dev/null | grep -q NAME"
done

# The keys of emgd.conf(5): each *key* of its sections is one the tables read.
# (The top-level sections are its headings.)
sed -n '/^# GENERAL/,/^# SIGNALS/p' "$SRC/doc/man/emgd.conf.5.scd" | grep '^\*' | grep -oE '\*[a-z_]+\*' |
  grep -oE '[a-z_]+' | sort -u > "$TMP/conf.keys"
grep -ohE '_KEY\("[a-z_]+"' "$SRC"/server/config/config*.c | grep -oE '"[a-z_]+"' | tr -d '"' |
  grep -vxE 'general|admin|database|accounts|routes|plugins' | sort -u > "$TMP/table.keys"
unknown=$(comm -23 "$TMP/conf.keys" "$TMP/table.keys" | tr '\n' ' ')
check "emgd.conf(5) names $(wc -l < "$TMP/conf.keys") keys, each read by the configuration ${unknown:+(unknown: $unknown)}" \
  [ -z "$unknown" -a "$(wc -l < "$TMP/conf.keys")" -gt 80 ]
absent=$(comm -13 "$TMP/conf.keys" "$TMP/table.keys" | tr '\n' ' ')
check "... and every key of the tables is in emgd.conf(5) ${absent:+(absent: $absent)}" [ -z "$absent" ]
check "emgd.conf(5) built and renders" bash -c "man -l '$BIN/man/emgd.conf.5' 2>/dev/null | grep -q 'tls_subject'"
finish
