#!/bin/bash
# Validates accprof's device recording (CUPTI) on a real GPU, with GCC's OpenACC and the
# bundled runtime's CUDA backend, and measures its overhead. docs/performance/gpu.md has the
# figures and how they were taken.
#
# Here (a machine with GCC's nvptx offloading and CUPTI's headers):
#   apt-get install -y gcc-12-offload-nvptx
#   (without a CUDA toolkit: CUPTI's and CUDA's headers from the pip wheels nvidia-cuda-cupti-cu12
#   and nvidia-cuda-runtime-cu12, unzipped, with CUPTI_STUB=scripts/gpu/cupti_stub for nvcc's
#   crt/host_defines.h)
#   CUPTI_INCLUDE=/usr/local/cuda/extras/CUPTI/include CUDA_INCLUDE=/usr/local/cuda/include \
#     bash scripts/gpu-validate.sh stage            # builds everything into .device-carry/gpu
# There (the GPU machine; nothing is built there):
#   bash scripts/gpu-validate.sh run [outdir]       # traces, reports, results table -> outdir
#
# Cost per CUDA driver call of each tool (bare collector, accprof with and without CUPTI):
#   bash scripts/gpu-validate.sh calls              # there; see the comment at that branch
#
# Device times from CUDA events (ACCPROF_CUDA_EVENTS) against CUPTI, shim only:
#   bash scripts/gpu-validate.sh stage-lib          # here: refreshes accprof, libaccprof.so, shim_laplace
#   bash scripts/gpu-validate.sh cuda-events [outdir]   # there: the shim's Laplace (naive, data)
#     with ACCPROF_CUPTI=on, with ACCPROF_CUPTI=off ACCPROF_CUDA_EVENTS=on, and with both;
#     scripts/gpu/compare_cuda_events.py compares the records; then wall-time medians of REPS
#     runs of the data version (ITERS iterations): no tool against CUDA events.
#
# What `run` checks, per program (GCC naive and data region on libgomp, the same two GCC binaries
# on the shim through `accprof run --runtime shim`, the shim's own example naive and data region):
# the trace's transfer counts and bytes equal a bare CUPTI collector's (scripts/gpu/cupti_bare.c)
# over the same program, kernel device time within 3%, every copy tied to a construct, and
# `accprof advise` asks for the data region (with A and Anew named) on the naive runs only; and
# each GCC binary prints the same result on the shim as on libgomp.
# SKIP_OVERHEAD=1 leaves out the overhead medians below.
# Then wall-time medians of REPS runs of the data-region programs (ITERS iterations): no tool,
# ACCPROF_CUPTI=off, ACCPROF_CUPTI=on, and the bare collector.
set -u
D=.device-carry/gpu
N=${N:-4096}
TRACE_ITERS_NAIVE=${TRACE_ITERS_NAIVE:-4}
TRACE_ITERS_DATA=${TRACE_ITERS_DATA:-10}
ITERS=${ITERS:-1000}
REPS=${REPS:-7}

if [ "${1:-}" = stage ]; then
  set -e
  cargo build --release -p libaccprof -p accprof-cli
  # --lib: building the example alone leaves libaccshim.so (the cdylib) as it was.
  cargo build --release -p runtime-shim --lib --example laplace
  rm -rf $D && mkdir -p $D/lib
  cp target/release/libaccprof.so target/release/accprof target/release/libaccshim.so target/release/examples/laplace $D/
  mv $D/laplace $D/shim_laplace
  OFF=(-O2 -g -fopenacc -foffload=nvptx-none "-foffload-options=-misa=sm_80 -lm")
  gcc "${OFF[@]}" scripts/gpu/laplace.c -o $D/gcc_laplace_naive -lm
  gcc "${OFF[@]}" -DDATA_REGION scripts/gpu/laplace.c -o $D/gcc_laplace_data -lm
  # The sources the traces' line numbers point into, at the path the debug info names.
  cp -L /usr/lib/x86_64-linux-gnu/libgomp.so.1 /usr/lib/x86_64-linux-gnu/libgomp-plugin-nvptx.so.1 $D/lib/
  gcc -O2 -shared -fPIC ${CUPTI_STUB:+-I$CUPTI_STUB} -I"${CUPTI_INCLUDE:?set CUPTI_INCLUDE}" -I"${CUDA_INCLUDE:?set CUDA_INCLUDE}" \
      scripts/gpu/cupti_bare.c -o $D/cupti_bare.so -ldl
  # Only the executables the traces name need their symbols.
  strip $D/accprof $D/shim_laplace $D/libaccprof.so $D/libaccshim.so
  # What scripts/gpu/gcc_shim.sh runs (it runs inside its folder, with its libraries there).
  mkdir -p $D/gccshim
  cp $D/gcc_laplace_naive $D/gccshim/laplace && cp $D/gcc_laplace_data $D/gccshim/laplace_data
  cp $D/lib/* $D/libaccshim.so $D/accprof $D/libaccprof.so $D/gccshim/
  du -sh $D
  exit 0
fi

if [ "${1:-}" = stage-lib ]; then
  set -e
  cargo build --release -p libaccprof -p accprof-cli
  cargo build --release -p runtime-shim --example laplace
  mkdir -p $D
  cp target/release/libaccprof.so target/release/accprof $D/
  cp target/release/examples/laplace $D/shim_laplace
  strip $D/accprof $D/shim_laplace $D/libaccprof.so
  du -sh $D
  exit 0
fi

if [ "${1:-}" = calls ]; then
  # What each tool adds per CUDA driver call (runtime-shim's bench_gpu --only calls), bare and under
  # the bare CUPTI collector, accprof with CUPTI, and accprof without CUPTI or CUDA events;
  # ROUNDS rounds, the configurations in turn. Needs .device-carry/shim/bench_gpu too.
  B=${BENCH:-.device-carry/shim/bench_gpu}
  for round in $(seq ${ROUNDS:-3}); do
    for cfg in none bare accprof-cupti accprof-off; do
      echo "-- round $round: $cfg"
      case $cfg in
        none) ACCSHIM_QUIET=1 $B --only calls --launches 20000 --reps 7 ;;
        bare) CUPTI_BARE_OUT=/tmp/bare.txt LD_PRELOAD=$PWD/$D/cupti_bare.so ACCSHIM_QUIET=1 $B --only calls --launches 20000 --reps 7 ;;
        accprof-cupti) ACCPROF_OUT=/tmp/calls.trace ACCPROF_QUIET=1 ACCPROF_CUPTI=on LD_PRELOAD=$PWD/$D/libaccprof.so ACCSHIM_QUIET=1 $B --only calls --launches 20000 --reps 7 ;;
        accprof-off) ACCPROF_OUT=/tmp/calls.trace ACCPROF_QUIET=1 ACCPROF_CUPTI=off ACCPROF_CUDA_EVENTS=off LD_PRELOAD=$PWD/$D/libaccprof.so ACCSHIM_QUIET=1 $B --only calls --launches 20000 --reps 7 ;;
      esac
    done
  done
  exit 0
fi

if [ "${1:-}" = cuda-events ]; then
  OUT=${2:-${OUT:-/tmp/accprof-gpu}}
  mkdir -p "$OUT"
  T=$(mktemp -d)
  B=/tmp/accprof-gpu-bin
  rm -rf $B && cp -r $D $B && D=$B
  RES=$OUT/cuda_events.txt
  LOG=$OUT/cuda_events.log
  : > "$RES"; : > "$LOG"
  {
    echo "accprof CUDA events against CUPTI, $(date -u +%Y-%m-%dT%H:%MZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    echo "N=$N iterations naive=$TRACE_ITERS_NAIVE data=$TRACE_ITERS_DATA; overhead: $ITERS iterations, median of $REPS"
  } | tee -a "$RES"
  status=0
  for v in naive data; do
    if [ $v = naive ]; then it=$TRACE_ITERS_NAIVE; else it=$TRACE_ITERS_DATA; fi
    prog=($D/shim_laplace --version $v --n $N --iters $it)
    for cfg in cupti events both; do
      case $cfg in
        cupti) env=(ACCPROF_CUPTI=on ACCPROF_CUDA_EVENTS=off) ;;
        events) env=(ACCPROF_CUPTI=off ACCPROF_CUDA_EVENTS=on) ;;
        both) env=(ACCPROF_CUPTI=on ACCPROF_CUDA_EVENTS=on) ;;
      esac
      tr=$OUT/shim_${v}_$cfg.trace
      [ $cfg = events ] && [ $v = naive ] && tr=$OUT/shim_naive_cudaevents.trace
      echo "== shim $v $cfg: ${env[*]} ${prog[*]}" >> "$LOG"
      env "${env[@]}" ACCPROF_OUT=$tr LD_PRELOAD=$D/libaccprof.so "${prog[@]}" >> "$LOG" 2>&1 || { echo "  FAIL: shim $v $cfg run failed" | tee -a "$RES"; status=1; }
      $D/accprof dump "$tr" > $T/${v}_$cfg.jsonl
      [ $cfg = events ] && $D/accprof report "$tr" >> "$LOG" 2>&1
    done
    python3 scripts/gpu/compare_cuda_events.py "shim $v" $T/${v}_cupti.jsonl $T/${v}_events.jsonl $T/${v}_both.jsonl 2>&1 | tee -a "$RES" || status=1
  done
  echo "== overhead: shim data, $ITERS iterations" | tee -a "$RES"
  declare -A times loops
  for r in $(seq $REPS); do
    for cfg in none events; do
      t0=$(date +%s%N)
      case $cfg in
        none) $D/shim_laplace --version data --n $N --iters $ITERS > $T/stdout 2>&1 ;;
        events) ACCPROF_QUIET=1 ACCPROF_CUPTI=off ACCPROF_CUDA_EVENTS=on ACCPROF_OUT=$T/o.trace LD_PRELOAD=$D/libaccprof.so $D/shim_laplace --version data --n $N --iters $ITERS > $T/stdout 2>&1 ;;
      esac
      t1=$(date +%s%N)
      times[$cfg]="${times[$cfg]:-} $(( (t1 - t0) / 1000 ))"
      loops[$cfg]="${loops[$cfg]:-} $(awk '/ total: /{printf "%d", $2 * 1e6}' $T/stdout)"
    done
  done
  python3 - "${times[none]}" "${times[events]}" "${loops[none]}" "${loops[events]}" <<'PY' | tee -a "$RES"
import statistics, sys
w0, w1, l0, l1 = ([int(x) / 1e6 for x in a.split()] for a in sys.argv[1:5])
for what, a, b in (("wall", w0, w1), ("loop", l0, l1)):
    if a and b:
        m0, m1 = statistics.median(a), statistics.median(b)
        print(f"  {what}: no tool {m0:.3f} s, CUDA events {m1:.3f} s ({(m1/m0-1)*100:+.2f}%); no tool {' '.join(f'{x:.3f}' for x in a)}; events {' '.join(f'{x:.3f}' for x in b)}")
PY
  echo "status $status" | tee -a "$RES"
  exit $status
fi

[ "${1:-}" = run ] || { echo "usage: $0 stage | stage-lib | run [outdir] | cuda-events [outdir]" >&2; exit 2; }
OUT=${2:-${OUT:-/tmp/accprof-gpu}}
mkdir -p "$OUT"
T=$(mktemp -d)
# Run from a fixed path: the traces name the executables there, and the tests that report the
# committed traces put the committed binaries at the same path to resolve their source lines.
B=/tmp/accprof-gpu-bin
rm -rf $B && cp -r $D $B && D=$B
export LD_LIBRARY_PATH=$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ACCPROF_QUIET=1
LOG=$OUT/validate.log
RES=$OUT/results.txt
: > "$LOG"; : > "$RES"
{
  echo "accprof GPU validation, $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  ls -l /usr/local/cuda/targets/x86_64-linux/lib/libcupti.so* 2>/dev/null | awk '{print $NF}' | head -3
  echo "N=$N trace iterations naive=$TRACE_ITERS_NAIVE data=$TRACE_ITERS_DATA; overhead: $ITERS iterations, median of $REPS"
} | tee -a "$RES"

status=0
# name, expect, source, command...; RUNTIME=shim runs the program on the shim: profiled through
# `accprof run --runtime shim`, the bare collector preloaded after libaccshim.so.
validate() {
  local name=$1 expect=$2 src=$3; shift 3
  echo "== $name: ${RUNTIME:-default} $*" | tee -a "$RES" >> "$LOG"
  if [ "${RUNTIME:-default}" = shim ]; then
    ACCPROF_CUPTI=on ACC_DEVICE_TYPE=nvidia ACCSHIM_QUIET=1 ACCPROF_SHIM_LIB=$D/libaccshim.so ACCPROF_LIB=$D/libaccprof.so \
      $D/accprof run --runtime shim -q -o $OUT/$name.trace -- "$@" > $T/$name.out 2>> "$LOG" || { echo "  FAIL: the profiled run failed" | tee -a "$RES"; status=1; return; }
    CUPTI_BARE_MEMSET=1 CUPTI_BARE_OUT=$T/$name.bare ACC_DEVICE_TYPE=nvidia ACCSHIM_QUIET=1 LD_PRELOAD="$D/libaccshim.so $D/cupti_bare.so" "$@" >> "$LOG" 2>&1
  else
    ACCPROF_CUPTI=on ACCPROF_OUT=$OUT/$name.trace LD_PRELOAD=$D/libaccprof.so "$@" > $T/$name.out 2>> "$LOG" || { echo "  FAIL: the profiled run failed" | tee -a "$RES"; status=1; return; }
    CUPTI_BARE_MEMSET=1 CUPTI_BARE_OUT=$T/$name.bare LD_PRELOAD=$D/cupti_bare.so "$@" >> "$LOG" 2>&1
  fi
  cat $T/$name.out >> "$LOG"
  $D/accprof report --format json "$OUT/$name.trace" > "$T/$name.json"
  $D/accprof advise --format json "$OUT/$name.trace" > "$T/$name.advice.json"
  { $D/accprof report "$OUT/$name.trace"; $D/accprof advise "$OUT/$name.trace"; } >> "$LOG" 2>&1
  python3 scripts/gpu/check.py "$name" "$T/$name.json" "$T/$name.advice.json" "$T/$name.bare" "$src" "$expect" >> "$RES" 2>&1 || status=1
}
if [ "${ONLY_OVERHEAD:-0}" != 1 ]; then
validate gcc_naive data-region scripts/gpu/laplace.c $D/gcc_laplace_naive $N $TRACE_ITERS_NAIVE
validate gcc_data none scripts/gpu/laplace.c $D/gcc_laplace_data $N $TRACE_ITERS_DATA
RUNTIME=shim validate gcc_shim_naive data-region scripts/gpu/laplace.c $D/gcc_laplace_naive $N $TRACE_ITERS_NAIVE
RUNTIME=shim validate gcc_shim_data none scripts/gpu/laplace.c $D/gcc_laplace_data $N $TRACE_ITERS_DATA
validate shim_naive data-region - $D/shim_laplace --version naive --n $N --iters $TRACE_ITERS_NAIVE
validate shim_data none - $D/shim_laplace --version data --n $N --iters $TRACE_ITERS_DATA
# The same binary's result on libgomp and on the shim (the solver's error after its iterations).
for v in naive data; do
  g=$(grep -h '^laplace' $T/gcc_$v.out 2>/dev/null); s=$(grep -h '^laplace' $T/gcc_shim_$v.out 2>/dev/null)
  if [ -n "$g" ] && [ "$g" = "$s" ]; then echo "  ok   gcc $v result, libgomp and shim: $g" | tee -a "$RES"
  else echo "  FAIL gcc $v result: libgomp '$g', shim '$s'" | tee -a "$RES"; status=1; fi
done
fi
[ "${SKIP_OVERHEAD:-0}" = 1 ] && { ls -l "$OUT" >> "$LOG"; echo "status $status" | tee -a "$RES"; exit $status; }

# Overhead: wall time of whole runs, configurations interleaved so drift hits all alike.
now() { date +%s%N; }
overhead() {
  local name=$1; shift
  declare -A times loops steady
  local order=(none off on bare)
  for r in $(seq $REPS); do
    # Each repetition starts at another configuration, so none of them always runs first or
    # last in the cycle (the machine drifts during a run).
    local rot=$(( (r - 1) % 4 ))
    for cfg in "${order[@]:rot}" "${order[@]:0:rot}"; do
      local t0 t1
      t0=$(now)
      case $cfg in
        none) "$@" > $T/stdout 2>&1 ;;
        # "off": the tool without device recording. CUDA events are off too: with CUPTI off they
        # would time the shim's streams instead (ACCPROF_CUDA_EVENTS=auto), a different cost.
        off) ACCPROF_CUPTI=off ACCPROF_CUDA_EVENTS=off ACCPROF_OUT=$T/o.trace LD_PRELOAD=$D/libaccprof.so "$@" > $T/stdout 2>&1 ;;
        on) ACCPROF_CUPTI=on ACCPROF_OUT=$T/o.trace LD_PRELOAD=$D/libaccprof.so "$@" > $T/stdout 2>&1 ;;
        bare) CUPTI_BARE_OUT=$T/o.bare LD_PRELOAD=$D/cupti_bare.so "$@" > $T/stdout 2>&1 ;;
      esac
      t1=$(now)
      times[$cfg]="${times[$cfg]:-} $(( (t1 - t0) / 1000 ))"
      # The program's own timing of its solver loop (" total: S s"), without process start-up
      # and exit.
      loops[$cfg]="${loops[$cfg]:-} $(awk '/ total: /{printf "%d", $2 * 1e6}' $T/stdout)"
      # The shim's example also prints its steady state (" per iteration after the first: X
      # ms"), without the first iteration's kernel compilation and upload; X ms per iteration
      # reads as X s per 1000 iterations in the table below.
      steady[$cfg]="${steady[$cfg]:-} $(awk '/after the first: /{printf "%d", $6 * 1e6}' $T/stdout)"
    done
  done
  for what in wall loop steady; do
  case $what in
    wall) set -- "${times[none]}" "${times[off]}" "${times[on]}" "${times[bare]}" ;;
    loop) set -- "${loops[none]}" "${loops[off]}" "${loops[on]}" "${loops[bare]}" ;;
    steady) [ -n "${steady[none]// /}" ] || continue
      set -- "${steady[none]}" "${steady[off]}" "${steady[on]}" "${steady[bare]}" ;;
  esac
  python3 - "$name $what" "$@" <<'PY' | tee -a "$RES"
import statistics, sys
name = sys.argv[1]
cfg = dict(zip(["none", "off", "on", "bare"], [[int(x) / 1e6 for x in a.split()] for a in sys.argv[2:6]]))
med = {k: statistics.median(v) for k, v in cfg.items()}
for k, v in cfg.items():
    print(f"  {name} {k:5s} median {med[k]:.3f} s  (min {min(v):.3f}, max {max(v):.3f}; {' '.join(f'{x:.3f}' for x in v)})")
off = (med["off"] / med["none"] - 1) * 100
on = (med["on"] / med["none"] - 1) * 100
bare = (med["bare"] / med["none"] - 1) * 100
print(f"  {name}: ACCPROF_CUPTI=off {off:+.2f}% vs no tool (target <= 1%); on {on:+.2f}%, bare collector {bare:+.2f}%, difference {on - bare:+.2f} points (target <= 1)")
mins = {k: min(v) for k, v in cfg.items()}
print(f"  {name} (minima): off {(mins['off']/mins['none']-1)*100:+.2f}%, on {(mins['on']/mins['none']-1)*100:+.2f}%, bare {(mins['bare']/mins['none']-1)*100:+.2f}%")
PY
  done
}
echo "== overhead" | tee -a "$RES"
overhead gcc_data $D/gcc_laplace_data $N $ITERS
overhead shim_data $D/shim_laplace --version data --n $N --iters $ITERS
ls -l "$OUT" >> "$LOG"
echo "status $status" | tee -a "$RES"
exit $status
