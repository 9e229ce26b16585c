#!/bin/sh
# Runs the GPU measurements of PERFORMANCE-shim.md on the lent device machine.
# Build here first:  cargo build --release -p runtime-shim --examples
#                    sh runtime-shim/scripts/gpu-bench.sh stage   (copies binaries to .device-carry/shim)
# Then, there (carry .device-carry):  sh runtime-shim/scripts/gpu-bench.sh run
set -u
D=.device-carry/shim
if [ "${1:-}" = stage ]; then
  mkdir -p $D
  for e in bench_gpu laplace saxpy async_pipeline; do cp target/release/examples/$e $D/; done
  gcc -shared -fPIC -O1 -o $D/event_logger.so runtime-shim/tests/c/event_logger.c -lpthread
  exit 0
fi
OUT=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
date -u
echo "== bench_gpu"; $D/bench_gpu --launches 20000 --reps 5
echo "== laplace data 4096 x 1000"; $D/laplace --version data --n 4096 --iters 1000
echo "== laplace naive 4096 x 20"; $D/laplace --version naive --n 4096 --iters 20
echo "== laplace data 512 x 100 (checksum must equal the emulated device's 3118.563774)"; $D/laplace --version data --n 512 --iters 100
echo "== saxpy"; $D/saxpy --n 16777216 --reps 20
echo "== async_pipeline"; $D/async_pipeline --n 16777216 --chunks 16 --queues 4
echo "== events on CUDA (C tool via ACC_PROFLIB)"
ACC_PROFLIB=$PWD/$D/event_logger.so ACCSHIM_TOOL_LOG=$OUT/cuda_events.txt $D/laplace --version data --n 256 --iters 2
grep -c . $OUT/cuda_events.txt; grep -m3 "enqueue_launch_start\|enqueue_upload_start" $OUT/cuda_events.txt
