#!/usr/bin/env bash
# run.sh [OPTIONS] [NAME...] - the mutation check: puts each deliberate bug
# of tests/mutation/list/*.list into a scratch copy of the working tree, one
# at a time, and runs the tests named with it, which must catch it.
#
# With no NAME every mutation runs, and every test the list names must
# exist. With NAMEs only those run, and tests not defined yet are left out
# with a warning (a mutation with none of its tests is SKIPPED).
#
# Options:
#   -l            list the mutations and exit
#   -k            keep going: run all of a mutation's tests (default: stop at
#                 the first that fails, which is enough to call it caught)
#   -t TESTS      run the selected mutations against TESTS ('|' between test
#                 names) instead of their own: which other tests catch them
#   -j N          build jobs (default: $EMG_MUTATION_JOBS, else 2)
#   --keep        keep the scratch directory (build and logs) at the end
#
# Exit status: 0 when every mutation run was caught; 1 when one was missed,
# did not apply, did not build, or the unmutated tests failed; 2 for usage.
# SPDX-License-Identifier: Apache-2.0
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LIST=${EMG_MUTATION_LIST:-$HERE/list}
MUTATE=(python3 "$HERE/mutate.py")
SRC=$(git -C "$HERE" rev-parse --show-toplevel)
JOBS=${EMG_MUTATION_JOBS:-2}
TEST_TIMEOUT=${EMG_MUTATION_TEST_TIMEOUT:-600}   # for tests without a TIMEOUT of their own
KEEP_GOING=0 KEEP=0 OVERRIDE=

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e '/SPDX-License-Identifier/d' -e 's/^# \{0,1\}//' >&2; exit 2; }

while [ $# -gt 0 ]; do
  case $1 in
    -l) "${MUTATE[@]}" show "$LIST"; exit ;;
    -k) KEEP_GOING=1 ;;
    -t) [ $# -ge 2 ] || usage; OVERRIDE=$2; shift ;;
    -j) [ $# -ge 2 ] || usage; JOBS=$2; shift ;;
    --keep) KEEP=1 ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) echo "unknown option $1" >&2; usage ;;
    *) break ;;
  esac
  shift
done
SELECTED=("$@")
SUBSET=$(( ${#SELECTED[@]} > 0 ))

now() { date +%s; }
T0=$(now)
log() { printf '[%4ss] %s\n' "$(( $(now) - T0 ))" "$*"; }
die() { echo "mutation check: $*" >&2; exit 1; }

# The mutations selected: NAMES[i] FILES[i] TESTS[i] BUGS[i].
NAMES=() FILES=() TESTS=() BUGS=()
listing=$("${MUTATE[@]}" list "$LIST" "${SELECTED[@]}") || exit 1
while IFS=$'\t' read -r name file tests bug; do
  [ -n "$name" ] || continue
  NAMES+=("$name") FILES+=("$file") TESTS+=("${OVERRIDE:-$tests}") BUGS+=("$bug")
done <<< "$listing"
[ ${#NAMES[@]} -gt 0 ] || die "no mutations in $LIST"

# ---- the scratch copy: tracked and untracked-but-not-ignored files ----

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/emg-mutation.XXXXXX")
# Tests that start PostgreSQL run initdb as its own user, which must reach
# the tree and the build: mktemp made the directory for its owner alone.
chmod 755 "$SCRATCH"
cleanup() {
  local rc=$?
  if [ "$KEEP" = 1 ]; then
    echo "scratch directory kept: $SCRATCH"
  else
    rm -rf "$SCRATCH"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
TREE=$SCRATCH/src BUILD=$SCRATCH/build LOGS=$SCRATCH/logs
mkdir -p "$TREE" "$BUILD" "$LOGS" "$SCRATCH/tmp" "$SCRATCH/orig"

log "copying $SRC (git ls-files -co --exclude-standard) to $TREE"
git -C "$SRC" ls-files -co --exclude-standard -z |
  while IFS= read -r -d '' f; do
    # Tracked files deleted in the working tree are not copied.
    if [ -e "$SRC/$f" ] || [ -L "$SRC/$f" ]; then printf '%s\0' "$f"; fi
  done |
  tar -C "$SRC" --null --no-recursion -T - -cf - | tar -C "$TREE" -xf -

# Every selected mutation must apply to the copy before anything is built.
"${MUTATE[@]}" check "$LIST" "$TREE" "${NAMES[@]}" ||
  die "the list no longer fits the code: fix $LIST (the original text must occur exactly once)"

# ---- one configure and build ----

CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if grep -q 'option(EMG_INTEROP' "$TREE/CMakeLists.txt"; then CMAKE_ARGS+=(-DEMG_INTEROP=OFF); fi
if command -v ninja > /dev/null; then CMAKE_ARGS+=(-G Ninja); fi
build() {  # build LOG
  nice -n 5 cmake --build "$BUILD" -j "$JOBS" > "$1" 2>&1
}
log "configuring ($BUILD: ${CMAKE_ARGS[*]})"
cmake -S "$TREE" -B "$BUILD" "${CMAKE_ARGS[@]}" > "$LOGS/configure.log" 2>&1 ||
  { tail -n 30 "$LOGS/configure.log" >&2; die "cmake failed on the unmutated tree"; }

# ---- which tests exist (known once configured) ----

declare -A DEFINED=()
while read -r t; do DEFINED[$t]=1; done < <(
  cd "$BUILD" && ctest -N | sed -n 's/^ *Test *#[0-9]*: *//p')

# regex NAMES: the anchored ctest regex of '|'-separated test names.
regex() {
  local IFS='|' names=() t
  for t in $1; do names+=("${t//./\\.}"); done
  echo "^(${names[*]})\$"
}

# present TESTS: those of TESTS that exist, '|' between them.
present() {
  local IFS='|' out=() t
  for t in $1; do [ -n "${DEFINED[$t]:-}" ] && out+=("$t"); done
  echo "${out[*]}"
}

missing_any=0
RUN_TESTS=()
for i in "${!NAMES[@]}"; do
  have=$(present "${TESTS[$i]}")
  if [ "$have" != "${TESTS[$i]}" ]; then
    IFS='|' read -ra want <<< "${TESTS[$i]}"
    for t in "${want[@]}"; do
      [ -n "${DEFINED[$t]:-}" ] || echo "warning: [${NAMES[$i]}] test $t is not defined" >&2
    done
    missing_any=1
  fi
  RUN_TESTS[$i]=$have
done
if [ "$missing_any" = 1 ] && [ "$SUBSET" = 0 ]; then
  die "tests named in $LIST are not defined (see above): a full run needs every one"
fi

# All the tests used (none when every selected mutation is skipped).
union=$(printf '%s\n' "${RUN_TESTS[@]}" | tr '|' '\n' | sed '/^$/d' | sort -u | paste -sd'|')
if [ -n "$union" ]; then
  log "building the unmutated tree (-j $JOBS)"
  build "$LOGS/build.log" || { tail -n 40 "$LOGS/build.log" >&2; die "the unmutated tree does not build"; }
fi

# ctest_run REGEX LOG [--stop-on-failure]: 0 when all passed; the names of
# the tests that failed go to LOG.failed.
ctest_run() {
  local regex=$1 out=$2 rc=0
  shift 2
  (cd "$BUILD" && TMPDIR=$SCRATCH/tmp ctest -R "$regex" --no-tests=error --output-on-failure \
     --timeout "$TEST_TIMEOUT" "$@") > "$out" 2>&1 || rc=$?
  sed -n '/The following tests FAILED:/,$s/^[[:space:]]*[0-9]* - \([^ ]*\) .*/\1/p' "$out" > "$out.failed"
  # What failing integration tests keep (under TMPDIR) goes, unless --keep.
  [ "$KEEP" = 1 ] || rm -rf "${SCRATCH:?}"/tmp/*
  return "$rc"
}

# ---- the baseline: every test used must pass unmutated ----

if [ -n "$union" ]; then
  log "baseline: the unmutated tree must pass ${union//|/, }"
  t=$(now)
  if ! ctest_run "$(regex "$union")" "$LOGS/baseline.log"; then
    cat "$LOGS/baseline.log" >&2
    die "the unmutated tree fails $(paste -sd' ' "$LOGS/baseline.log.failed"): a mutation check on it would mean nothing"
  fi
  log "baseline passed in $(( $(now) - t ))s"
fi

# ---- the mutations, one at a time ----

RESULT=() DETAIL=() BUILD_S=() TEST_S=() TOTAL_S=()
for i in "${!NAMES[@]}"; do
  name=${NAMES[$i]} file=${FILES[$i]} tests=${RUN_TESTS[$i]}
  BUILD_S[$i]=- TEST_S[$i]=- TOTAL_S[$i]=-
  if [ -z "$tests" ]; then
    RESULT[$i]=SKIPPED DETAIL[$i]="none of ${TESTS[$i]//|/, } is defined"
    log "$name: SKIPPED (${DETAIL[$i]})"
    continue
  fi
  log "$name: ${BUGS[$i]}"
  t_start=$(now)
  orig="$SCRATCH/orig/$i"
  cp "$TREE/$file" "$orig"
  if ! "${MUTATE[@]}" apply "$LIST" "$TREE" "$name" 2> "$LOGS/$name.apply.log"; then
    cat "$LOGS/$name.apply.log" >&2
    RESULT[$i]=BROKEN DETAIL[$i]="does not apply"
    continue
  fi
  if build "$LOGS/$name.build.log"; then
    t_built=$(now)
    BUILD_S[$i]=$(( t_built - t_start ))
    stop=(--stop-on-failure)
    [ "$KEEP_GOING" = 1 ] && stop=()
    if ctest_run "$(regex "$tests")" "$LOGS/$name.test.log" "${stop[@]}"; then
      RESULT[$i]=MISSED DETAIL[$i]="all passed: ${tests//|/, }"
    elif [ -s "$LOGS/$name.test.log.failed" ]; then
      RESULT[$i]=CAUGHT DETAIL[$i]="failed: $(paste -sd' ' "$LOGS/$name.test.log.failed")"
    else
      RESULT[$i]=ERROR DETAIL[$i]="ctest failed without naming a failed test"
      tail -n 20 "$LOGS/$name.test.log" >&2
    fi
    TEST_S[$i]=$(( $(now) - t_built ))
  else
    RESULT[$i]=BROKEN DETAIL[$i]="does not build (a mutation must compile)"
    BUILD_S[$i]=$(( $(now) - t_start ))
    grep -m 10 -E 'error|Error' "$LOGS/$name.build.log" >&2 || tail -n 20 "$LOGS/$name.build.log" >&2
  fi
  # Restored with a fresh time stamp: the next build compiles the file again.
  cp "$orig" "$TREE/$file"
  touch "$TREE/$file"
  TOTAL_S[$i]=$(( $(now) - t_start ))
  log "$name: ${RESULT[$i]} (${DETAIL[$i]}) in ${TOTAL_S[$i]}s"
done

# ---- the table ----

echo
printf '%-26s %-8s %6s %6s %6s  %s\n' mutation result build tests total detail
bad=0 caught=0 run=0
for i in "${!NAMES[@]}"; do
  printf '%-26s %-8s %6s %6s %6s  %s\n' "${NAMES[$i]}" "${RESULT[$i]}" "${BUILD_S[$i]}" \
    "${TEST_S[$i]}" "${TOTAL_S[$i]}" "${DETAIL[$i]}"
  case ${RESULT[$i]} in
    CAUGHT) caught=$((caught + 1)); run=$((run + 1)) ;;
    SKIPPED) ;;
    *) bad=$((bad + 1)); run=$((run + 1)) ;;
  esac
done
skipped=$(( ${#NAMES[@]} - run ))
echo
echo "caught $caught of $run$([ "$skipped" -gt 0 ] && echo ", $skipped skipped (tests not defined)")," \
  "$((bad)) not caught; $(( $(now) - T0 ))s in all"
[ -n "$OVERRIDE" ] && echo "(tests given with -t: $OVERRIDE)"
[ "$bad" = 0 ]
