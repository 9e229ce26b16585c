#!/bin/bash
# Where a callback's time goes, stage by stage (docs/performance/libaccprof.md): builds
# libaccprof with the `bench-stages` feature (its own target directory: the shipped build is
# untouched), copies it once per setting of ACCPROF_BENCH_STAGE (libaccprof/src/bench_stage.rs)
# and times the copies side by side with the C harness, in one process, alternating rounds.
#   bash libaccprof/benches/harness/stages.sh stage DIR   # build into DIR (to carry elsewhere)
#   bash libaccprof/benches/harness/stages.sh run DIR [ROUNDS]
#   bash libaccprof/benches/harness/stages.sh [ROUNDS]     # both, here
# Settings: prologue (hot word, clock, thread state, re-entry flag), views (+ the panic guard
# entered and the event's kind read), no-emit (+ the record built on the open-event stack, not
# committed to the buffer), full.
set -eu
cd "$(dirname "$0")/../../.."
SETTINGS="prologue views no-emit full"
stage() {
  local D=$1
  CARGO_TARGET_DIR=${STAGES_TARGET:-target/stages} cargo build --release -p libaccprof --lib --features bench-stages
  bash libaccprof/benches/harness/build.sh "$D"
  for s in $SETTINGS; do
    cp "${STAGES_TARGET:-target/stages}/release/libaccprof.so" "$D/libaccprof-$s.so"
    strip "$D/libaccprof-$s.so"
  done
}
run() {
  local D=$1 ROUNDS=${2:-7}
  export ACCPROF_OUT=${ACCPROF_OUT:-/tmp/accprof-stages-$$.trace} ACCPROF_QUIET=1 ACCPROF_SYMBOLS=off
  local tools=()
  for s in $SETTINGS; do tools+=("$s@$s=$D/libaccprof-$s.so"); done
  for shape in shim gcc; do
    for mode in warm cold; do
      n=2000000; [ $mode = cold ] && n=2800
      "$D/harness" $shape $mode $n "$ROUNDS" tsc="$D/libtsctool.so" store="$D/libstoretool.so" "${tools[@]}"
      rm -f "$ACCPROF_OUT"*
    done
  done
}
case "${1:-}" in
  stage) stage "$2" ;;
  run) run "$2" "${3:-7}" ;;
  *) D=target/stages/harness; stage $D; run $D "${1:-7}" ;;
esac
