#!/bin/bash
# Checks the launch geometry and device limits accprof records from CUPTI on a real GPU
# (scripts/gpu/geometry.c: a loop launched with num_gangs(4), and the same loop with the
# compiler's gangs). docs/performance/gpu.md has what it showed.
#
# Here (a machine with GCC's nvptx offloading):
#   bash scripts/gpu-geometry.sh stage [dir]     # builds into dir (.device-carry/geometry)
# There (the GPU machine; nothing is built there):
#   bash scripts/gpu-geometry.sh run [dir] [outdir]
# `run` writes gcc_geometry.trace (ACCPROF_CUPTI=on), GOMP_DEBUG's launch lines (what libgomp
# asked the driver for) and nvidia-smi's view of the device into outdir; the test
# accprof-cli/tests/gpu_geometry.rs reads the committed trace.
set -u
D=${2:-.device-carry/geometry}
ITERS=${ITERS:-5}

if [ "${1:-}" = stage ]; then
  set -e
  cargo build --release -p libaccprof
  rm -rf "$D" && mkdir -p "$D/lib"
  cp target/release/libaccprof.so "$D/"
  strip "$D/libaccprof.so"
  gcc -O2 -g -fopenacc -foffload=nvptx-none "-foffload-options=-misa=sm_80 -lm" \
    scripts/gpu/geometry.c -o "$D/gcc_geometry" -lm
  cp -L /usr/lib/x86_64-linux-gnu/libgomp.so.1 /usr/lib/x86_64-linux-gnu/libgomp-plugin-nvptx.so.1 "$D/lib/"
  du -sh "$D"
  exit 0
fi

[ "${1:-}" = run ] || { echo "usage: $0 stage [dir] | run [dir] [outdir]" >&2; exit 2; }
OUT=${3:-${OUT:-/tmp/accprof-geometry}}
mkdir -p "$OUT"
# Run from the path the committed traces name, so that `accprof symbolize` there resolves them.
B=/tmp/accprof-gpu-bin
mkdir -p $B && cp -r "$D"/. $B/
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
{
  echo "accprof launch geometry on the GPU, $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader
} | tee "$OUT/device.txt"
status=0
GOMP_DEBUG=1 ACCPROF_CUPTI=on ACCPROF_OUT=$OUT/gcc_geometry.trace LD_PRELOAD=$B/libaccprof.so \
  $B/gcc_geometry "$ITERS" > "$OUT/gomp_debug.log" 2>&1 || status=1
grep -E "^geometry|accprof" "$OUT/gomp_debug.log" | tee -a "$OUT/device.txt"
# libgomp's own account of each launch: the grid and block it asked for.
grep -iE "launch|gangs|workers|vectors|omp_fn" "$OUT/gomp_debug.log" | sort | uniq -c | head -40 | tee -a "$OUT/device.txt"
gzip -9 -f "$OUT/gomp_debug.log"
echo "status $status" | tee -a "$OUT/device.txt"
exit $status
