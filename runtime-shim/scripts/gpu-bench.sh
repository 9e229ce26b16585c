#!/bin/sh
# Runs the GPU measurements of PERFORMANCE-shim.md on the lent device machine.
# Build here first:  cargo build --release -p runtime-shim --lib --examples
#                    sh runtime-shim/scripts/gpu-bench.sh stage   (copies binaries to .device-carry/shim)
# Then, there (carry .device-carry/shim):  sh runtime-shim/scripts/gpu-bench.sh run
# `sweep` (there, after `run`) measures the staging pipeline's shapes (ACCSHIM_STAGE_*) and
# repeats the Laplace data run; `h2d` repeats the pageable upload with neighbouring shapes;
# `trace` writes the timelines of 64 MiB uploads (ACCSHIM_STAGE_TRACE) under $OUT; `load`
# measures the staging threads' warm window beside a program's own busy threads; `semantics`
# runs runtime-shim/tests' C programs (data semantics, life cycle, memory, errors) on the CUDA backend.
set -u
# SHIM_DIR: where the staged binaries are (to compare another build's, staged elsewhere).
D=${SHIM_DIR:-.device-carry/shim}
if [ "${1:-}" = stage ]; then
  mkdir -p $D
  for e in bench_gpu laplace saxpy async_pipeline; do cp target/release/examples/$e $D/ && strip $D/$e; done
  gcc -shared -fPIC -O1 -o $D/event_logger.so runtime-shim/tests/c/event_logger.c -lpthread
  gcc -O2 -pthread -o $D/busy_work scripts/gpu/busy_work.c
  # The C test programs of runtime-shim/tests, linked to the libaccshim.so beside them, for
  # `semantics` (the same cases on the CUDA backend).
  cp target/release/libaccshim.so $D/ && strip $D/libaccshim.so
  for t in data_semantics lifecycle_cycles lifecycle_callbacks memory_churn errors api_memory; do
    gcc -O1 -g -o $D/$t runtime-shim/tests/c/$t.c -I runtime-shim/include -L$D -laccshim -lm -lpthread \
      -Wl,--disable-new-dtags,-rpath,'$ORIGIN'
  done
  exit 0
fi
OUT=${OUT:-/tmp}
if [ "${1:-}" = semantics ]; then
  # runtime-shim/tests' C programs on the CUDA backend: the data-semantics cases (all but
  # no_create_argument, whose kernel has only a host implementation), init/shutdown cycles with
  # staged (64 MiB) arrays, callbacks calling the runtime on each lifecycle event, and device
  # memory allocated and freed 50 times. Each line: what, exit status, last line printed.
  r() { what=$1; shift; out=$(timeout 120 "$@" 2>&1); rc=$?; echo "$what: rc=$rc $(echo "$out" | tail -1)"; }
  for c in concurrent_copyin copyout_section region_copyout_section detach_before_copyout attach_after_copyin \
           reattach_new_target attach_null target_deleted copyout_attached zero_length map_twice; do
    r "data_semantics $c" env ACCSHIM_QUIET=1 $D/data_semantics $c
  done
  echo "-- lifecycle_cycles 10 cycles, two 64 MiB arrays (threads and resident KiB after the first and last)"
  ACCSHIM_QUIET=1 timeout 300 $D/lifecycle_cycles 10 8388608
  for ev in 2 3 4 5; do for a in prop wait stream init shutdown; do
    r "lifecycle_callbacks $ev $a" env ACCSHIM_QUIET=1 $D/lifecycle_callbacks $ev $a
  done; done
  echo "-- memory_churn 64 MiB arrays, 50 rounds"
  ACCSHIM_QUIET=1 timeout 300 $D/memory_churn 8388608 50
  # Error cases that involve the device's own address checks (expected: rc=134 and the
  # acc_error_* line of runtime-shim/tests/errors.rs).
  for c in not_present partly_present copyin_wraps map_wraps memcpy_past_allocation memcpy_wraps memcpy_not_device \
           d2d_not_present d2d_other_device; do
    r "errors $c" env ACCSHIM_QUIET=1 $D/errors $c
  done
  # acc_memcpy_d2d between device copies (expected: b[0] 1 ... b[100] 2 b[200] 1 b[209] 1 b[210] 2).
  ACCSHIM_QUIET=1 $D/api_memory d2d | grep "^b\[0\]"
  for c in free_bytes free_mapped free_unmapped; do r "api_memory $c" env ACCSHIM_QUIET=1 $D/api_memory $c; done
  exit 0
fi
if [ "${1:-}" = tune ]; then
  # Laplace kernel mappings and launch geometry (steady state of 300 iterations, twice each,
  # interleaved), then the staging shapes (first, chunk, threads, buffers, non-temporal).
  echo "== tune: Laplace 4096 data, 300 iterations"
  for round in 1 2; do
    for cfg in "flat 0 0" "rows 0 0" "rows 0 256" "rows 0 512" "rows 0 1024" "rows 2048 256" "rows 8192 128"; do
      set -- $cfg
      printf -- "-- round %s kernels=%s gangs=%s vector=%s: " $round $1 $2 $3
      ACCSHIM_QUIET=1 $D/laplace --version data --n 4096 --iters 300 --kernels $1 --gangs $2 --vector $3 | grep "after the first" | tr -d '\n'
      echo
    done
  done
  echo "== tune: H2D staging shapes (upload_pipeline: first chunk, largest chunk, piece, buffers, threads)"
  for cfg in "65536 4194304 262144 8 16" "65536 4194304 524288 8 16" "65536 4194304 1048576 8 16" \
             "65536 8388608 262144 4 16" "131072 4194304 262144 8 16" "65536 4194304 262144 8 12"; do
    set -- $cfg
    echo "-- first=$1 chunk=$2 piece=$3 bufs=$4 threads=$5"
    ACCSHIM_QUIET=1 ACCSHIM_STAGE_FIRST=$1 ACCSHIM_STAGE_UP_CHUNK=$2 ACCSHIM_STAGE_PIECE=$3 ACCSHIM_STAGE_UP_BUFS=$4 \
      ACCSHIM_STAGE_THREADS=$5 $D/bench_gpu --only h2d --reps 5 | grep h2d
  done
  exit 0
fi
if [ "${1:-}" = h2d ]; then
  # The pageable upload, ROUNDS rounds, interleaved, best of 7 each: the committed staging
  # shape; the same with each of VARIANTS (space-separated; each VAR=value, or several joined
  # by commas; default the pool's threads not kept warm between uploads); and another build's
  # bench_gpu in $BASE if set. Each with the source as the benchmark leaves it (just read,
  # cold 0), evicted from the caches first (cold 1) and just rewritten by the program (cold 3),
  # or the COLDS given (docs/performance/shim.md).
  b() { dir=$1; c=$2; shift 2; echo "-- $dir, cold $c: $*"; env "$@" $dir/bench_gpu --only h2d --reps 7 --sizes 64,256 --cold $c 2>&1 | grep -E "^h2d (64|256) MiB pageable"; }
  for round in $(seq ${ROUNDS:-3}); do
    echo "=== round $round"
    for c in ${COLDS:-0 1 3}; do
      b $D $c ACCSHIM_QUIET=1
      [ -n "${BASE:-}" ] && b $BASE $c ACCSHIM_QUIET=1
      for v in ${VARIANTS:-ACCSHIM_STAGE_WARM_US=0}; do b $D $c ACCSHIM_QUIET=1 $(echo $v | tr , ' '); done
    done
  done
  exit 0
fi
if [ "${1:-}" = load ]; then
  # What the staging threads' warm window (ACCSHIM_STAGE_WARM_US) costs a program's own busy
  # threads, and what it does to the upload beside them: busy_work alone, then beside 64 MiB
  # uploads of an evicted source with the window and without (docs/performance/shim.md).
  # Compare the busy_work totals within a round.
  for n in ${BUSY:-16 8}; do
    for round in $(seq ${ROUNDS:-3}); do
      echo "=== $n busy threads, round $round"
      $D/busy_work $n 2
      for w in 200000 0; do
        $D/busy_work $n 2.5 & p=$!; sleep 0.2
        echo "-- ACCSHIM_STAGE_WARM_US=$w"
        ACCSHIM_QUIET=1 ACCSHIM_STAGE_WARM_US=$w $D/bench_gpu --only h2d --reps 7 --sizes 64 --cold 1 2>&1 | grep -E "^h2d 64 MiB pageable"
        wait $p
      done
    done
  done
  echo "=== alone, with the benchmark's CPU time"
  for round in $(seq ${ROUNDS:-3}); do
    for w in 200000 0; do
      echo "-- ACCSHIM_STAGE_WARM_US=$w"
      ACCSHIM_QUIET=1 ACCSHIM_STAGE_WARM_US=$w $D/bench_gpu --only h2d --reps 7 --sizes 64 --cold 1 2>&1 | grep -E "^h2d 64 MiB pageable|^cpu time"
    done
  done
  exit 0
fi
if [ "${1:-}" = trace ]; then
  # Each 64 MiB upload's timeline (upload_trace; docs/performance/shim.md)
  # into $OUT/trace_cold<c>_tail<t>.err, the source as the benchmark leaves it and evicted first,
  # with and without the halving chunks at the end.
  for c in 0 1; do
    for t in 262144 0; do
      ACCSHIM_QUIET=1 ACCSHIM_STAGE_TRACE=1 ACCSHIM_STAGE_TAIL=$t $D/bench_gpu --only h2d --reps 7 --sizes 64 --cold $c >/dev/null 2>$OUT/trace_cold${c}_tail$t.err
      grep -c "stage trace" $OUT/trace_cold${c}_tail$t.err
    done
  done
  exit 0
fi
if [ "${1:-}" = sweep ]; then
  echo "== sweep: H2D staging shapes (largest upload chunk, piece)"
  for cfg in "4194304 262144" "1048576 1048576" "4194304 1048576" "4194304 262144"; do
    set -- $cfg
    echo "-- up_chunk=$1 piece=$2"
    ACCSHIM_QUIET=1 ACCSHIM_STAGE_UP_CHUNK=$1 ACCSHIM_STAGE_PIECE=$2 $D/bench_gpu --only h2d --reps 5 | grep h2d
  done
  echo "== sweep: Laplace 4096 x 1000 (data), three more runs (run-to-run spread)"
  for g in 1 2 3; do
    echo "-- run $g"
    ACCSHIM_QUIET=1 $D/laplace --version data --n 4096 --iters 1000 | grep "per iteration\|900,"
  done
  exit 0
fi
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
