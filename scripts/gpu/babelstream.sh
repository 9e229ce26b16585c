#!/bin/bash
# What accprof (CUPTI off) costs a public OpenACC benchmark with short kernels: BabelStream's
# OpenACC model (UoB-HPC/BabelStream, src/acc), built by GCC with nvptx offloading and run on
# libgomp and on the bundled runtime. Each of its kernels is one compute construct that waits,
# so every operation pays the callbacks of one construct; BabelStream times each operation
# itself and reports the minimum and the average over --numtimes.
#
# Here (gcc-12-offload-nvptx installed, a BabelStream checkout at DIR):
#   bash scripts/gpu/babelstream.sh stage DIR      # builds into .device-carry/babel
# There (carry .device-carry/babel):
#   bash scripts/gpu/babelstream.sh run [REPS]     # REPS paired repetitions (default 8)
# Each repetition runs no tool, accprof and a no-op tool (ACC_PROFLIB: the runtime's dispatch
# alone) on libgomp and on the bundled runtime, in a rotating order; the summary gives, per
# kernel, the paired median of each configuration's minimum and average time against no tool,
# and ACCPROF_SELF_TIME's callbacks per operation and ns per callback.
# VARIANTS="NAME:VAR=VALUE,VAR=VALUE ..." adds accprof with those settings to the repetitions
# (e.g. "shm:ACCPROF_OUT=/dev/shm/b.trace heapoff:ACCPROF_HEAP=off"); RUNTIMES="gomp" runs one.
# BASE_SHIM=/path/libaccshim.so at stage time stages another build of the bundled runtime, run
# as the runtime "oldshim" (RUNTIMES="gomp shim oldshim").
set -u
D=.device-carry/babel
SIZE=${SIZE:-33554432}
TIMES=${TIMES:-100}

if [ "${1:-}" = stage ]; then
  set -e
  src=${2:?usage: $0 stage BABELSTREAM_CHECKOUT}
  cargo build --release -p libaccprof -p runtime-shim --lib
  rm -rf $D && mkdir -p $D/lib
  g++ -O3 -std=c++17 -fopenacc -foffload=nvptx-none -foffload-options=-misa=sm_80 -DACC \
    -Drestrict=__restrict -I"$src/src" -I"$src/src/acc" "$src/src/main.cpp" \
    "$src/src/acc/ACCStream.cpp" -o $D/acc-stream 2> >(grep -v 'relocation against\|DT_TEXTREL' >&2)
  gcc -O2 -shared -fPIC -o $D/libnoop_tool.so tests/programs/noop_tool.c
  cp target/release/libaccprof.so target/release/libaccshim.so $D/
  strip $D/libaccprof.so $D/libaccshim.so
  [ -n "${BASE_SHIM:-}" ] && cp "$BASE_SHIM" $D/libaccshim_base.so && strip $D/libaccshim_base.so
  cp -L /usr/lib/x86_64-linux-gnu/libgomp.so.1 /usr/lib/x86_64-linux-gnu/libgomp-plugin-nvptx.so.1 $D/lib/
  du -sh $D
  exit 0
fi

[ "${1:-}" = run ] || { echo "usage: $0 stage DIR | run [REPS]" >&2; exit 2; }
REPS=${2:-8}
B=/tmp/accprof-babel
rm -rf $B && cp -r $D $B && D=$B
export LD_LIBRARY_PATH=$D/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
T=$(mktemp -d)
echo "== host: $(date -u +%Y-%m-%dT%H:%MZ)"
grep -m1 'model name' /proc/cpuinfo
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "no GPU seen"
SECONDS=0

stream() { # runtime config [env...] -> BabelStream's csv
  local rt=$1 cfg=$2
  shift 2
  local e=(ACCSHIM_QUIET=1 ACCPROF_QUIET=1 ACCPROF_CUPTI=off ACCPROF_CUDA_EVENTS=off ACCPROF_OUT=$T/o.trace)
  local pre=""
  [ "$rt" = shim ] && pre=$D/libaccshim.so
  [ "$rt" = oldshim ] && pre=$D/libaccshim_base.so
  case $cfg in
    none) ;;
    noop) e+=(ACC_PROFLIB=$D/libnoop_tool.so) ;;
    *)
      pre="${pre:+$pre }$D/libaccprof.so"
      for v in ${VARIANTS:-}; do
        if [ "${v%%:*}" = "$cfg" ]; then
          local IFS=,
          for kv in ${v#*:}; do e+=("$kv"); done
        fi
      done
      ;;
  esac
  env "${e[@]}" ${pre:+LD_PRELOAD="$pre"} "$@" $D/acc-stream -s $SIZE -n $TIMES --csv
  rm -f $T/o*.trace
}

echo "== [${SECONDS}s] ACCPROF_SELF_TIME, $SIZE elements, $TIMES times"
RUNTIMES=${RUNTIMES:-gomp shim}
for rt in $RUNTIMES; do
  stream $rt accprof ACCPROF_SELF_TIME=1 2>&1 | grep -E 'time inside' | sed "s/^/$rt: /"
done

echo "== [${SECONDS}s] $REPS paired repetitions"
order=(none accprof noop)
for v in ${VARIANTS:-}; do order+=("${v%%:*}"); done
k=${#order[@]}
for r in $(seq $REPS); do
  for rt in $RUNTIMES; do
    rot=$(( (r - 1) % k ))
    for cfg in "${order[@]:rot}" "${order[@]:0:rot}"; do
      stream $rt $cfg 2>/dev/null | awk -F, -v k="$rt $r $cfg" 'NR > 1 && NF == 8 {print k, $1, $6, $8}'
    done
  done
done > $T/runs.txt
python3 - $T/runs.txt <<'PY'
import collections, statistics as st, sys
d = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    rt, r, cfg, kernel, mn, avg = line.split()
    d[(rt, kernel, int(r))][cfg] = (float(mn), float(avg))
def q(v, p):
    v = sorted(v); i = (len(v) - 1) * p; lo = int(i); hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (i - lo)
for rt in ("gomp", "shim", "oldshim"):
    for kernel in ("Copy", "Mul", "Add", "Triad", "Dot"):
        reps = [v for (r_, k, _), v in sorted(d.items()) if (r_, k) == (rt, kernel)]
        cfgs = sorted({c for x in reps for c in x} - {"none"})
        reps = [x for x in reps if "none" in x and all(c in x for c in cfgs)]
        if not reps:
            continue
        none_avg = st.median(x["none"][1] for x in reps)
        parts = []
        for cfg in cfgs:
            for what, i in (("min", 0), ("avg", 1)):
                diffs = [(x[cfg][i] - x["none"][i]) / x["none"][i] * 100 for x in reps]
                parts.append(f"{cfg} {what} {st.median(diffs):+.2f}% ({q(diffs, .25):+.2f} .. {q(diffs, .75):+.2f})")
        print(f"{rt} {kernel}: no tool avg {none_avg * 1e6:.1f} us, {len(reps)} reps; " + "; ".join(parts))
PY
echo "== [${SECONDS}s] done"
rm -rf $T
