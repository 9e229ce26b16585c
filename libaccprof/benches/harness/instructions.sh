#!/bin/bash
# Instructions a tool library runs per OpenACC callback, with valgrind's callgrind counting only
# inside accprof's callback (on_event): the difference between a short and a long run, divided
# by the callbacks between them, so that the first event (which starts recording) drops out.
#   bash libaccprof/benches/harness/instructions.sh [LIB]
# Prints it for the C harness's two event shapes and for GCC's data-region Laplace
# (scripts/gpu/laplace.c, host fallback) on libgomp and on the bundled runtime (target/release
# must hold libaccshim.so). Instruction counts do not move with the machine's load.
set -eu
cd "$(dirname "$0")/../../.."
LIB=$(realpath "${1:-target/release/libaccprof.so}")
SHIM=$(realpath target/release/libaccshim.so)
B=${HARNESS_BUILD:-target/harness}
mkdir -p $B
H=libaccprof/benches/harness
bash $H/build.sh $B
gcc -O2 -g -fopenacc -foffload=disable -DDATA_REGION -o $B/laplace_host scripts/gpu/laplace.c -lm
T=$(mktemp -d)
export ACCPROF_OUT=$T/i.trace ACCPROF_QUIET=1 ACCPROF_SYMBOLS=off ACCSHIM_QUIET=1
counted() { # command... -> instructions inside the callback
  valgrind --tool=callgrind --callgrind-out-file=$T/cg.out --toggle-collect='*callback*on_event*' "$@" 2>&1 \
    | sed -n 's/.*Collected : //p'
  rm -f $T/i*.trace*
}
per() { python3 -c "print(f'{($2 - $1) / $3:.1f}')"; }
for shape in shim gcc; do
  k=2; [ $shape = gcc ] && k=28
  a=$(counted $B/harness $shape warm 56000 1 t=$LIB)
  b=$(counted $B/harness $shape warm 280000 1 t=$LIB)
  # Each run: a warm-up of iterations/10 + 1 constructs, then one round.
  n=$(( (280000 / k / 10 - 56000 / k / 10 + 280000 / k - 56000 / k) * k ))
  echo "harness, $shape events: $(per $a $b $n) instructions per callback"
done
callbacks() { # command... -> OpenACC callbacks the run made (ACCPROF_SELF_TIME's count)
  ACCPROF_QUIET=0 ACCPROF_SELF_TIME=1 "$@" 2>&1 | sed -n 's/.* in \([0-9]*\) OpenACC callbacks.*/\1/p'
  rm -f $T/i*.trace*
}
for rt in libgomp shim; do
  pre=$LIB; [ $rt = shim ] && pre="$SHIM $LIB"
  a=$(LD_PRELOAD="$pre" counted $B/laplace_host 64 100)
  b=$(LD_PRELOAD="$pre" counted $B/laplace_host 64 300)
  # The runtime decides how many events an iteration makes: counted, not assumed.
  n=$(( $(LD_PRELOAD="$pre" callbacks $B/laplace_host 64 300) - $(LD_PRELOAD="$pre" callbacks $B/laplace_host 64 100) ))
  echo "GCC's data-region Laplace on $rt: $(per $a $b $n) instructions per callback ($((n / 200)) callbacks per iteration)"
done
rm -rf $T
