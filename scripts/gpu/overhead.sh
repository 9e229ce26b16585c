#!/bin/bash
# What accprof costs a GPU program with CUPTI off, and what one callback costs on the GPU
# machine's host CPU (issue 33's figures; docs/performance/libaccprof.md has the results).
#
# Here (gcc-12-offload-nvptx installed):
#   bash scripts/gpu/overhead.sh stage            # builds into .device-carry/overhead
#   BASE_LIB=/path/libaccprof.so bash scripts/gpu/overhead.sh stage   # also stages another
#                                                 # build, run beside this one as "base"
#   BASE_BENCH=/path/hot_path-... (with BASE_LIB or BASE_REV)   # also that build's hot-path bench
#   BASE_SHIM=/path/libaccshim.so (with stage)    # another build of the bundled runtime: the
#                                                 # blocks and pairs add "oldshim" and "oldnoop",
#                                                 # accprof and the no-op tool on it (shim runs only)
#   BASE_REV=<commit> bash scripts/gpu/overhead.sh stage   # builds that commit's libaccprof
#                                                 # (in /tmp, a few minutes) and stages it as "base"
# There (carry .device-carry/overhead, 20 MB):
#   bash scripts/gpu/overhead.sh run [REPS]
# It stops starting paired repetitions once BUDGET_S seconds (default 420) have passed since it
# began, so that one call with timeout_s 540 ends with its summary; each section's line says
# how many seconds had passed. On the 2-core development machine (no GPU: host fallback,
# N=256 ITERS=100) the sections before the pairs took 47 s; on the GPU host a 4096^2 run is a
# CUDA start-up plus 0.2-0.8 s of loop, so a repetition (three GCC and three shim runs with
# "base") takes seconds and the budget cuts whatever of the 15 does not fit.
#
# It prints, in order:
#  1. the host: CPU model, cores, clocksource, GPU;
#  2. the C harness (libaccprof/benches/harness) on the host CPU: ns added per callback,
#     warm, with the first-level caches emptied between callbacks (l1: 64 KiB written, 64 KiB
#     of other code run), with their pages' address translations gone too (tlb: 4096 pages
#     touched) and with 4 MiB written, for the shim's events and GCC's; what an
#     NVTX push+pop and a mark cost with accprof; and the hot-path benchmark: ns per callback
#     and callbacks per second from 2 threads, read back;
#  3. ACCPROF_SELF_TIME: accprof's own time per callback on the program's thread, GCC's
#     data-region Laplace (4096^2, ITERS iterations) on libgomp and on the bundled runtime;
#  4. in-process blocks (scripts/gpu/laplace_blocks.c): the same binary switching every callback
#     off and on between blocks of LAPLACE_BLOCK iterations, BLOCK_RUNS runs (default 3) of
#     BLOCK_ITERS iterations (default 3000) per configuration: the loop's cost of a tool's
#     callbacks, paired at a scale of milliseconds (no tool gives the method's own spread);
#  5. REPS paired repetitions of the same runs, no tool against accprof with CUPTI and CUDA
#     events off, a no-op tool (ACC_PROFLIB: what any tool's presence costs the runtime) and
#     "base" when staged, the configurations interleaved with a rotating start:
#     the solver loop's time (" total:") and the whole run's, as medians, as the median of the
#     per-repetition differences, and their spread.
# Run it on more than one machine start: a start's figure moves by about a point (whole runs by
# several; the in-process blocks of section 4 by a few tenths).
# PAIRS_ONLY=1 runs the host line and section 5 only; BLOCKS_ONLY=1 the host line and section 4.
set -u
D=.device-carry/overhead
N=${N:-4096}
ITERS=${ITERS:-1000}

if [ "${1:-}" = stage ]; then
  set -e
  cargo build --release -p libaccprof -p runtime-shim --lib
  cargo bench -p libaccprof --bench hot_path --no-run 2> /tmp/overhead-bench.log
  bench=$(grep -o 'target/release/deps/hot_path-[0-9a-f]*' /tmp/overhead-bench.log | tail -1)
  rm -rf $D && mkdir -p $D/lib $D/harness
  cp target/release/libaccprof.so target/release/libaccshim.so "$bench" $D/
  mv $D/$(basename "$bench") $D/hot_path
  if [ -n "${BASE_REV:-}" ]; then
    src=$(mktemp -d)
    git archive "$BASE_REV" | tar -x -C "$src"
    (cd "$src" && CARGO_TARGET_DIR=${BASE_TARGET:-/tmp/accprof-base-target} cargo build --release -p libaccprof --lib)
    BASE_LIB=${BASE_TARGET:-/tmp/accprof-base-target}/release/libaccprof.so
    rm -rf "$src"
  fi
  [ -n "${BASE_LIB:-}" ] && cp "$BASE_LIB" $D/libaccprof_base.so && strip $D/libaccprof_base.so
  [ -n "${BASE_SHIM:-}" ] && cp "$BASE_SHIM" $D/libaccshim_base.so && strip $D/libaccshim_base.so
  # The base commit's hot-path bench binary (cargo bench -p libaccprof --bench hot_path --no-run
  # in a checkout of it), to compare two-thread rates on the same machine start.
  [ -n "${BASE_BENCH:-}" ] && cp "$BASE_BENCH" $D/hot_path_base && strip $D/hot_path_base
  OFF=(-O2 -g -fopenacc -foffload=nvptx-none "-foffload-options=-misa=sm_80 -lm")
  gcc "${OFF[@]}" -DDATA_REGION scripts/gpu/laplace.c -o $D/gcc_laplace_data -lm
  gcc "${OFF[@]}" -DDATA_REGION -Iscripts/gpu scripts/gpu/laplace_blocks.c -o $D/gcc_laplace_blocks -lm
  cp -L /usr/lib/x86_64-linux-gnu/libgomp.so.1 /usr/lib/x86_64-linux-gnu/libgomp-plugin-nvptx.so.1 $D/lib/
  INC=${NVTX_INCLUDE:-$(python3 -c "import sysconfig, glob; print(glob.glob(sysconfig.get_paths()['purelib'] + '/nvidia/*/include')[0])")}
  gcc -O2 -g -fopenacc -foffload=disable -I"$INC" -o $D/harness/nvtx_cost libaccprof/benches/harness/nvtx_cost.c -ldl
  bash libaccprof/benches/harness/build.sh $D/harness
  # A tool that registers every event and does nothing: what a tool's presence costs the
  # runtime's dispatch, apart from accprof's own callback.
  gcc -O2 -shared -fPIC -o $D/libnoop_tool.so tests/programs/noop_tool.c
  strip $D/libaccprof.so $D/libaccshim.so $D/hot_path
  du -sh $D
  exit 0
fi

[ "${1:-}" = run ] || { echo "usage: $0 stage | run [REPS]" >&2; exit 2; }
REPS=${2:-${REPS:-15}}
BUDGET_S=${BUDGET_S:-420}
SECONDS=0
B=/tmp/accprof-overhead
rm -rf $B && cp -r $D $B && D=$B
export LD_LIBRARY_PATH=$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
T=$(mktemp -d)
HAVE_BASE=0; [ -f $D/libaccprof_base.so ] && HAVE_BASE=1
OLD_SHIM=(); [ -f $D/libaccshim_base.so ] && OLD_SHIM=(oldshim oldnoop)

echo "== host: $(date -u +%Y-%m-%dT%H:%MZ)"
grep -m1 'model name' /proc/cpuinfo
echo "cores: $(nproc); clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no GPU seen"

if [ "${PAIRS_ONLY:-0}" != 1 ] && [ "${BLOCKS_ONLY:-0}" != 1 ]; then
echo "== [${SECONDS}s] C harness on the host CPU (ns per callback; 'added' is over the empty callback)"
export ACCPROF_OUT=$T/h.trace ACCPROF_QUIET=1 ACCPROF_SYMBOLS=off
TOOLS=(tsc=$D/harness/libtsctool.so store=$D/harness/libstoretool.so accprof=$D/libaccprof.so)
[ $HAVE_BASE = 1 ] && TOOLS+=(base=$D/libaccprof_base.so)
for shape in shim gcc; do
  for mode in warm l1 tlb cold; do
    n=2000000; [ $mode != warm ] && n=5600; [ $mode = tlb ] && n=1120
    $D/harness/harness $shape $mode $n 7 "${TOOLS[@]}"
    rm -f $T/h*.trace
  done
done
echo "== [${SECONDS}s] an NVTX push+pop and a mark, no tool and accprof (3 runs)"
for r in 1 2 3; do
  ACC_DEVICE_TYPE=host $D/harness/nvtx_cost 1000000
  ACC_DEVICE_TYPE=host LD_PRELOAD=$D/libaccprof.so $D/harness/nvtx_cost 1000000
  rm -f $T/h*.trace
done
echo "== [${SECONDS}s] hot-path benchmark (3 runs; alternating with base's bench when staged)"
for r in 1 2 3; do
  echo "accprof:"; (cd $T && $D/hot_path --bench) | grep -E "added|thread CPU|two threads|read back"
  if [ -x $D/hot_path_base ]; then
    echo "base:"; (cd $T && $D/hot_path_base --bench) | grep -E "added|thread CPU|two threads|read back"
  fi
done
unset ACCPROF_OUT ACCPROF_QUIET ACCPROF_SYMBOLS
fi

# VARIANTS="NAME:VAR=VALUE,VAR=VALUE NAME2:..." adds configurations to the paired runs: accprof
# with those settings (e.g. "heapoff:ACCPROF_HEAP=off"); PROFLIB as a setting loads accprof
# through ACC_PROFLIB instead of LD_PRELOAD.
variant_env() { # config -> its settings, comma-separated ("" for none)
  for v in ${VARIANTS:-}; do [ "${v%%:*}" = "$1" ] && { echo "${v#*:}"; return; }; done
}
tool_env() { # config -> env arguments that load accprof (LD_PRELOAD, after PRE) with its settings
  local pre=$1 cfg=$2 extra lib
  extra=$(variant_env "$cfg")
  lib=$D/$(lib "$cfg")
  local args=(ACCPROF_CUPTI=off ACCPROF_CUDA_EVENTS=off ACCPROF_QUIET=1 ACCPROF_OUT=$T/o.trace)
  if [[ ",$extra," == *",PROFLIB,"* ]]; then
    args+=(ACC_PROFLIB=$lib ${pre:+LD_PRELOAD=$pre})
  else
    args+=("LD_PRELOAD=${pre:+$pre }$lib")
  fi
  local IFS=,
  for kv in $extra; do [ "$kv" != PROFLIB ] && [ -n "$kv" ] && args+=("$kv"); done
  printf '%s\n' "${args[@]}"
}
# PROG (default gcc_laplace_data) and IT (default ITERS) pick the binary and its iterations.
gcc_run() { # config -> runs GCC's Laplace on libgomp
  local p=$D/${PROG:-gcc_laplace_data} it=${IT:-$ITERS}
  case $1 in
    none) $p $N $it ;;
    noop) ACC_PROFLIB=$D/libnoop_tool.so $p $N $it ;;
    *) mapfile -t e < <(tool_env "" "$1"); env "${e[@]}" $p $N $it ;;
  esac
}
shim_run() { # config -> the same binary on the bundled runtime
  local p=$D/${PROG:-gcc_laplace_data} it=${IT:-$ITERS} shim=$D/libaccshim.so cfg=$1
  case $cfg in oldshim) shim=$D/libaccshim_base.so cfg=accprof ;; oldnoop) shim=$D/libaccshim_base.so cfg=noop ;; esac
  case $cfg in
    none) ACCSHIM_QUIET=1 LD_PRELOAD=$shim $p $N $it ;;
    noop) ACCSHIM_QUIET=1 ACC_PROFLIB=$D/libnoop_tool.so LD_PRELOAD=$shim $p $N $it ;;
    *) mapfile -t e < <(tool_env "$shim" "$cfg"); env ACCSHIM_QUIET=1 "${e[@]}" $p $N $it ;;
  esac
}
lib() { [ "$1" = base ] && echo libaccprof_base.so || echo libaccprof.so; }

if [ "${PAIRS_ONLY:-0}" != 1 ] && [ "${BLOCKS_ONLY:-0}" != 1 ]; then
echo "== [${SECONDS}s] ACCPROF_SELF_TIME (CUPTI and CUDA events off), $N^2, $ITERS iterations"
for prog in gcc shim; do
  for r in 1 2 3; do
    for cfg in accprof $([ $HAVE_BASE = 1 ] && echo base); do
      line=$(ACCPROF_SELF_TIME=1 ${prog}_run $cfg 2>&1 | grep -E 'total:|time inside' | tr '\n' ' ')
      echo "$prog $cfg: $line"
      rm -f $T/o*.trace
    done
  done
done

fi

if [ "${PAIRS_ONLY:-0}" != 1 ]; then
BLOCK_RUNS=${BLOCK_RUNS:-3} BLOCK_ITERS=${BLOCK_ITERS:-3000}
export LAPLACE_BLOCK=${LAPLACE_BLOCK:-10}
echo "== [${SECONDS}s] in-process blocks: callbacks off and on every $LAPLACE_BLOCK iterations, $N^2, $BLOCK_ITERS iterations, $BLOCK_RUNS runs"
order=(none accprof noop "${OLD_SHIM[@]}"); [ $HAVE_BASE = 1 ] && order+=(base)
for v in ${VARIANTS:-}; do order+=("${v%%:*}"); done
for r in $(seq $BLOCK_RUNS); do
  for prog in gcc shim; do
    for cfg in "${order[@]}"; do
      [ $prog = gcc ] && [[ $cfg == old* ]] && continue
      PROG=gcc_laplace_blocks IT=$BLOCK_ITERS ${prog}_run $cfg 2>&1 | awk -v k="$prog $cfg $r" '/^block /{print k, $3, $4}'
      rm -f $T/o*.trace
    done
  done
done > $T/blocks.txt
python3 - $T/blocks.txt <<'PY'
import collections, statistics as st, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    prog, cfg, r, state, secs = line.split()
    runs[(prog, cfg, r)].append((state == "on", float(secs)))
def q(v, p):
    v = sorted(v); i = (len(v) - 1) * p; lo = int(i); hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (i - lo)
# A pair is blocks 2p and 2p+1 (one off, one on); the first pair (start-up) is left out.
for prog in ("gcc", "shim"):
    for cfg in dict.fromkeys(c for (p, c, _) in runs if p == prog):
        diffs, on_s, off_s, per_run, secs = [], 0.0, 0.0, [], []
        for (p, c, r), blocks in sorted(runs.items()):
            if (p, c) != (prog, cfg):
                continue
            d = []
            secs += [x for _, x in blocks]
            for i in range(2, len(blocks) - 1, 2):
                (a_on, a), (b_on, b) = blocks[i], blocks[i + 1]
                on, off = (a, b) if a_on else (b, a)
                d.append((on - off) / off * 100)
                on_s += on; off_s += off
            per_run.append(st.median(d) if d else float("nan"))
            diffs += d
        if not diffs:
            print(f"{prog} {cfg}: no blocks"); continue
        print(f"{prog} {cfg}: callbacks on vs off, {len(diffs)} pairs of blocks: paired median {st.median(diffs):+.2f}% "
              f"(quartiles {q(diffs, .25):+.2f}% .. {q(diffs, .75):+.2f}%), total on/off {(on_s / off_s - 1) * 100:+.2f}%, "
              f"per run {', '.join(f'{m:+.2f}%' for m in per_run)}; block median {st.median(secs) * 1e3:.2f} ms")
PY
fi
[ "${BLOCKS_ONLY:-0}" = 1 ] && { echo "== [${SECONDS}s] done"; rm -rf $T; exit 0; }

echo "== [${SECONDS}s] paired repetitions (up to $REPS, until ${BUDGET_S}s), $N^2, $ITERS iterations"
order=(none accprof noop); [ $HAVE_BASE = 1 ] && order+=(base)
for v in ${VARIANTS:-}; do order+=("${v%%:*}"); done
k=${#order[@]}
# GCC's and the shim's repetitions interleaved, so that a budget cut leaves both with as many.
for r in $(seq $REPS); do
  [ $SECONDS -ge $BUDGET_S ] && { echo "budget: stopped before repetition $r" >&2; break; }
  for prog in gcc shim; do
    rot=$(( (r - 1) % k ))
    for cfg in "${order[@]:rot}" "${order[@]:0:rot}"; do
      t0=$(date +%s%N)
      out=$(${prog}_run $cfg 2>&1)
      t1=$(date +%s%N)
      loop=$(echo "$out" | awk '/ total: /{print $2}')
      echo "$prog $r $cfg ${loop:-nan} $(( (t1 - t0) / 1000 ))"
      rm -f $T/o*.trace
    done
  done
done | tee $T/pairs.txt > /dev/null
python3 - $T/pairs.txt <<'PY'
import collections, statistics as st, sys
d = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    prog, r, cfg, loop, wall_us = line.split()
    d[(prog, int(r))][cfg] = (float(loop), int(wall_us) / 1e6)
cfgs = sorted({c for v in d.values() for c in v} - {"none"})
def q(v, p):
    v = sorted(v); i = (len(v) - 1) * p; lo = int(i); hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (i - lo)
for prog in ("gcc", "shim"):
    reps = [v for (p, _), v in sorted(d.items()) if p == prog and "none" in v and all(c in v for c in cfgs)]
    if not reps:
        continue
    for what, i in (("loop", 0), ("wall", 1)):
        none = [x["none"][i] for x in reps]
        print(f"{prog} {what}: no tool median {st.median(none):.4f} s (min {min(none):.4f}, max {max(none):.4f}), {len(reps)} repetitions")
        for c in cfgs:
            v = [x[c][i] for x in reps]
            diffs = [(x[c][i] - x["none"][i]) / x["none"][i] * 100 for x in reps]
            print(f"  {c}: median {st.median(v):.4f} s, {(st.median(v) / st.median(none) - 1) * 100:+.2f}% of medians; "
                  f"paired: median {st.median(diffs):+.2f}%, quartiles {q(diffs, .25):+.2f}% .. {q(diffs, .75):+.2f}%, "
                  f"range {min(diffs):+.2f}% .. {max(diffs):+.2f}%  (target <= 1%)")
PY
echo "== [${SECONDS}s] done"
rm -rf $T
