#!/usr/bin/env bash
# GCC-compiled OpenACC programs on a GPU: libgomp (Debian's, with its nvptx plugin) against the
# shim preloaded (libaccshim.so, GCC's nvptx kernels on the CUDA backend), same binaries.
# Prepare on the build machine (gcc-12-offload-nvptx installed), into DIR:
#   F='-O2 -fopenacc -foffload=nvptx-none -foffload-options=-misa=sm_80 -foffload-options=-lm'
#   gcc $F -g scripts/gpu/laplace.c -o DIR/laplace -lm; gcc $F -g -DDATA_REGION ... -o DIR/laplace_data
#   the programs of runtime-shim/tests/gcc likewise (g++ for .cpp, gfortran for .f90), and
#   cp -L libgomp.so.1 libgomp-plugin-nvptx.so.1 target/release/libaccshim.so DIR/
#   (`bash scripts/gpu-validate.sh stage` prepares .device-carry/gpu/gccshim with the Laplace
#   programs, libgomp, libaccshim.so, accprof and libaccprof.so.)
# Run on the GPU machine: bash scripts/gpu/gcc_shim.sh DIR [naive iterations (25)] [data iterations (1100)]
# Prints whether each program's output is the same on both, naive runs' reports on the shim
# (static arrays copied directly, and all copies staged: ACCSHIM_PIN_STATIC=0), then the
# Laplace 4096^2 times per iteration (ROUNDS rounds, default 3, side by side: libgomp, the shim,
# the shim with every copy staged). With TRACE_DIR set, the staged run's per-upload timelines
# (ACCSHIM_STAGE_TRACE) go to TRACE_DIR/stage_trace.txt.
set -u
dir=${1:-.device-carry/gccshim}; naive_it=${2:-25}; data_it=${3:-1100}
cd "$dir" || exit 1
export LD_LIBRARY_PATH=$PWD ACC_DEVICE_TYPE=nvidia
shim() { env LD_PRELOAD="$PWD/libaccshim.so" ACCSHIM_QUIET=1 "$@"; }
nvidia-smi -L 2>/dev/null || true
echo "== outputs, libgomp vs shim"
for p in directives transfers missing_copyout async_scalars firstprivate_scalars launch_dims struct_members vector saxpy; do
  [ -x "./$p" ] || continue
  g=$(timeout 120 "./$p" 2>&1); s=$(timeout 120 env LD_PRELOAD="$PWD/libaccshim.so" ACCSHIM_QUIET=1 "./$p" 2>&1)
  if [ "$g" = "$s" ]; then echo "same  $p"; else echo "DIFF  $p"; echo "  libgomp: $g" | head -12; echo "  shim:    $s" | head -12; fi
done
if [ -x ./accprof ] && [ -f ./libaccprof.so ]; then
  for pin in 1 0; do
    echo "== accprof run --runtime shim --report: naive Laplace 4096^2, 3 iterations, ACCSHIM_PIN_STATIC=$pin"
    ACCSHIM_PIN_STATIC=$pin ACCPROF_SHIM_LIB=$PWD/libaccshim.so ACCPROF_LIB=$PWD/libaccprof.so ./accprof run --runtime shim --report -o /tmp/naive.trace -- ./laplace 4096 3 2>&1 |
      sed -n '/^Summary/,/^Top constructs/p'
  done
fi
if [ -n "${TRACE_DIR:-}" ]; then
  ACCSHIM_PIN_STATIC=0 ACCSHIM_STAGE_TRACE=1 shim ./laplace 4096 3 > "$TRACE_DIR/stage_trace.txt" 2>&1
fi
# Time per iteration in the steady state: the difference of two runs' loop times (the loop's
# clock starts before the first construct, so each run's device initialisation, JIT link of
# GCC's PTX included, cancels out), over the difference of their iteration counts.
total() { "$@" 2>&1 | awk '/total:/ {print $2}'; }
result() { "$@" 2>&1 | awk '/error=/ {print $NF}'; }
slope() { # n1 n2 command...
  local n1=$1 n2=$2; shift 2
  local t1 t2; t1=$(total "$@" 4096 "$n1"); t2=$(total "$@" 4096 "$n2")
  awk -v a="$t1" -v b="$t2" -v n1="$n1" -v n2="$n2" 'BEGIN {printf "%.3f ms/iteration", (b - a) * 1000 / (n2 - n1)}'
}
echo "== Laplace 4096^2 per iteration, steady state (naive: runs of 5 and $naive_it iterations; data region: 100 and $data_it)"
echo "  results: naive libgomp $(result ./laplace 4096 5) shim $(result shim ./laplace 4096 5); data libgomp $(result ./laplace_data 4096 100) shim $(result shim ./laplace_data 4096 100)"
staged() { env ACCSHIM_PIN_STATIC=0 LD_PRELOAD="$PWD/libaccshim.so" ACCSHIM_QUIET=1 "$@"; }
echo "  results, all copies staged: naive $(result staged ./laplace 4096 5); data $(result staged ./laplace_data 4096 100)"
for round in $(seq "${ROUNDS:-3}"); do
  echo "round $round"
  echo "  naive  libgomp $(slope 5 "$naive_it" ./laplace)"
  echo "  naive  shim    $(slope 5 "$naive_it" shim ./laplace)"
  echo "  naive  staged  $(slope 5 "$naive_it" staged ./laplace)"
  echo "  data   libgomp $(slope 100 "$data_it" ./laplace_data)"
  echo "  data   shim    $(slope 100 "$data_it" shim ./laplace_data)"
done
