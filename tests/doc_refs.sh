#!/usr/bin/env bash
# doc_refs.sh [ROOT] - fails when a file of the repository cites a document that is not in it,
# so that a reader of a fresh clone can open every document a comment or a page names.
#
# What counts as a citation, in every file git knows (tracked, or new and not ignored; ROOT is
# the repository, by default this script's parent folder):
#   - a word ending in ".md" made of letters, digits and _ . / - (a Markdown document), and
#   - a word starting with "doc/" (anything under the documents folder: pages, man pages).
# Words that start with "/" (absolute paths such as /usr/share/doc/emg/...), or hold ":", "$"
# or "~" (URLs, shell variables, home folders), are not citations of repository files and are
# left alone.
# A cited path is found when it exists relative to the citing file's folder, to ROOT, or (for a
# bare name such as "limits.md") to ROOT/doc. Anything else is reported as FILE:LINE and the
# script exits 1.
# SPDX-License-Identifier: Apache-2.0
set -uo pipefail

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || { echo "doc_refs: no folder $root" >&2; exit 2; }

# The files to read, NUL-separated: what git lists and is still there, or (no git) every file
# outside build folders.
list_files() {
  if git rev-parse --git-dir >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard |
      while IFS= read -r -d '' f; do [ -f "$f" ] && printf '%s\0' "$f"; done
  else
    find . -type f -not -path './.git/*' -not -path './build*' -printf '%P\0'
  fi
}

# Every candidate as FILE:LINE:WORD (binary files skipped).
candidates() {
  list_files | xargs -0 -r grep -HnoIE '[A-Za-z0-9_.~$:/-]*\.md\b' 2>/dev/null
  list_files | xargs -0 -r grep -HnoIE '[A-Za-z0-9_.~$:/-]*doc/[A-Za-z0-9_./-]*' 2>/dev/null
}

# Whether word, cited in file, names something in the repository.
found() {
  local file=$1 word=$2 dir
  dir=$(dirname "$file")
  [ -e "$dir/$word" ] || [ -e "$word" ] || { [[ $word != */* ]] && [ -e "doc/$word" ]; }
}

missing=0
checked=0
declare -A seen
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  word=${rest#*:}
  case $word in
    /* | *:* | *'$'* | *'~'*) continue ;; # absolute paths, URLs, variables, home folders
  esac
  while [[ $word == *. ]]; do word=${word%.}; done # a sentence's full stop
  case $word in
    *.md) [[ ${word%.md} =~ [A-Za-z0-9_-]$ ]] || continue ;; # ".md" alone, "*.md"
    doc/*) ;;
    *) continue ;; # "doc/" inside another word, e.g. share/doc/...
  esac
  [ -z "${seen[$file:$line:$word]:-}" ] || continue
  seen[$file:$line:$word]=1
  checked=$((checked + 1))
  if ! found "$file" "$word"; then
    echo "$file:$line: cites $word, which is not in the repository"
    missing=$((missing + 1))
  fi
done < <(candidates | sort -u)

if [ "$missing" -gt 0 ]; then
  echo "doc_refs: $missing citation(s) of documents that do not exist (of $checked checked)"
  exit 1
fi
echo "doc_refs: all $checked citations of documents resolve"
