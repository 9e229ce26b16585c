#!/bin/bash
# Builds and runs the C harness (harness.c) against libaccprof and the reference tools.
#   bash libaccprof/benches/harness/run.sh [LIB] [ROUNDS]
# LIB: the libaccprof.so to measure (default target/release/libaccprof.so); more tools as
# NAME=PATH in TOOLS. Prints, for both event shapes, ns per callback: warm, l1 (first-level
# caches cold), tlb (address translations gone too) and cold.
# Set PRELOAD=1 to have libaccprof LD_PRELOADed (static TLS, as with `accprof run`) rather
# than dlopened (ACC_PROFLIB's way).
set -eu
cd "$(dirname "$0")/../../.."
LIB=$(realpath "${1:-target/release/libaccprof.so}")
ROUNDS=${2:-7}
B=${HARNESS_BUILD:-target/harness}
mkdir -p $B
H=libaccprof/benches/harness
bash $H/build.sh $B
export ACCPROF_OUT=${ACCPROF_OUT:-/tmp/accprof-harness-$$.trace} ACCPROF_QUIET=1 ACCPROF_SYMBOLS=off
PRE=()
[ "${PRELOAD:-0}" = 1 ] && PRE=(env LD_PRELOAD="$LIB")
# What an NVTX call costs with accprof as the program's NVTX tool (nvtx_cost.c), when NVIDIA's
# nvtx3 headers are installed (pip install nvidia-nvtx; or NVTX_INCLUDE).
INC=${NVTX_INCLUDE:-$(python3 -c "import sysconfig, glob; print((glob.glob(sysconfig.get_paths()['purelib'] + '/nvidia/*/include') or [''])[0])" 2>/dev/null)}
if [ -n "$INC" ] && [ -f "$INC/nvtx3/nvToolsExt.h" ]; then
  gcc -O2 -g -fopenacc -foffload=disable -I"$INC" -o $B/nvtx_cost $H/nvtx_cost.c -ldl
  $B/nvtx_cost 200000
  LD_PRELOAD="$LIB" $B/nvtx_cost 200000
  rm -f "$ACCPROF_OUT"
fi
for shape in shim gcc; do
  for mode in warm l1 tlb cold; do
    n=2000000; [ $mode != warm ] && n=5600; [ $mode = tlb ] && n=1120
    "${PRE[@]}" $B/harness $shape $mode $n $ROUNDS tsc=$B/libtsctool.so store=$B/libstoretool.so accprof=$LIB ${TOOLS:-}
    rm -f "$ACCPROF_OUT"
  done
done
