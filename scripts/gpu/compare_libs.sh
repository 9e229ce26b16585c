#!/bin/bash
# Two builds of libaccprof against each other and the bare CUPTI collector on the GPU machine:
# accprof's own time per callback (ACCPROF_SELF_TIME), then REPS repetitions of the data-region
# Laplace (GCC's loop, the shim's steady state) in four configurations, interleaved with a
# rotating start, summarised as differences of medians and as medians of per-repetition
# differences (paired). Also runs scripts/gpu/h2d_paths if staged.
#
# Here: `bash scripts/gpu-validate.sh stage`, then put the other build at
# .device-carry/gpu/libaccprof_base.so (e.g. from `git stash; cargo build --release -p libaccprof`)
# and, optionally, the h2d_paths binary at .device-carry/gpu/h2d_paths.
# There (carry .device-carry/gpu): `bash scripts/gpu/compare_libs.sh`
G=/tmp/accprof-gpu-bin; rm -rf $G && cp -r .device-carry/gpu $G
export LD_LIBRARY_PATH=$G/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
date -u
[ -x $G/h2d_paths ] && { echo "=== h2d_paths 64 MiB"; timeout 200 $G/h2d_paths 64 5 2>&1
echo "=== h2d_paths 64 MiB cold"; timeout 120 $G/h2d_paths 64 5 1 2>&1 | grep -E "register_pipelined|staged|pinned|pageable"; }
date -u
export ACCPROF_QUIET=1 ACCSHIM_QUIET=1
for r in 1 2; do for l in libaccprof_base libaccprof; do
  echo "== self $l GCC"; ACCPROF_SELF_TIME=1 ACCPROF_CUPTI=on ACCPROF_OUT=/tmp/t.trace LD_PRELOAD=$G/$l.so $G/gcc_laplace_data 4096 1000 2>&1 | grep -E "total|accprof"
  echo "== self $l shim"; ACCPROF_SELF_TIME=1 ACCPROF_CUPTI=on ACCPROF_OUT=/tmp/t.trace LD_PRELOAD=$G/$l.so $G/shim_laplace --version data --n 4096 --iters 1000 2>&1 | grep -E "after the first|accprof"
done; done
REPS=${REPS:-13}
run_cfg() { # cfg prog...
  local cfg=$1; shift
  case $cfg in
    none) "$@" ;;
    bare) CUPTI_BARE_OUT=/tmp/o.bare LD_PRELOAD=$G/cupti_bare.so "$@" ;;
    base) ACCPROF_CUPTI=on ACCPROF_OUT=/tmp/o.trace LD_PRELOAD=$G/libaccprof_base.so "$@" ;;
    new) ACCPROF_CUPTI=on ACCPROF_OUT=/tmp/o.trace LD_PRELOAD=$G/libaccprof.so "$@" ;;
  esac
}
order=(none bare base new)
for prog in gcc shim; do
  for r in $(seq $REPS); do
    rot=$(( (r - 1) % 4 ))
    for cfg in "${order[@]:rot}" "${order[@]:0:rot}"; do
      if [ $prog = gcc ]; then
        v=$(run_cfg $cfg $G/gcc_laplace_data 4096 1000 2>&1 | awk '/ total: /{print $2}')
      else
        v=$(run_cfg $cfg $G/shim_laplace --version data --n 4096 --iters 1000 2>&1 | awk '/after the first: /{print $6}')
      fi
      echo "$prog $r $cfg $v"
    done
  done
done | tee /tmp/pairs.txt
python3 - <<'PY'
import statistics as st, collections
d = collections.defaultdict(dict)
for line in open('/tmp/pairs.txt'):
    p, r, c, v = line.split()
    d[(p, int(r))][c] = float(v)
for prog in ("gcc", "shim"):
    reps = [v for (p, r), v in sorted(d.items()) if p == prog and len(v) == 4]
    med = {c: st.median(x[c] for x in reps) for c in ("none", "bare", "base", "new")}
    print(prog, "medians", {c: round(m, 5) for c, m in med.items()}, "reps", len(reps))
    for c in ("bare", "base", "new"):
        print(f"  {prog} {c}: median {(med[c]/med['none']-1)*100:+.2f}% vs none")
    for c in ("base", "new"):
        diffs = [(x[c] - x['bare']) / x['none'] * 100 for x in reps]
        print(f"  {prog} {c} - bare: difference of medians {(med[c]-med['bare'])/med['none']*100:+.2f} points; median of paired differences {st.median(diffs):+.2f} points; pairs {' '.join(f'{x:+.1f}' for x in diffs)}")
PY
date -u
