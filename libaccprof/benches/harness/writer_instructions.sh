#!/bin/bash
# Instructions the writer thread runs per recorded event, with valgrind's callgrind counting
# only inside the collector's write_untaken (decoding a thread buffer's records, encoding them,
# writing the chunks): the difference between a short and a long run of the C harness, divided
# by the events between them (read back from the two traces), so that the start drops out.
#   bash libaccprof/benches/harness/writer_instructions.sh [LIB]
# Prints it for the harness's two event shapes, per event and per callback. Instruction counts
# do not move with the machine's load.
set -eu
cd "$(dirname "$0")/../../.."
LIB=$(realpath "${1:-target/release/libaccprof.so}")
ACCPROF=$(realpath target/release/accprof)
B=${HARNESS_BUILD:-target/harness}
mkdir -p $B
bash libaccprof/benches/harness/build.sh $B
T=$(mktemp -d)
export ACCPROF_QUIET=1 ACCPROF_SYMBOLS=off
counted() { # shape callbacks -> "instructions events"
  ACCPROF_OUT=$T/w.trace valgrind --tool=callgrind --callgrind-out-file=$T/cg.out \
    --toggle-collect='*Collector*write_untaken*' $B/harness $1 warm $2 1 t=$LIB 2>&1 \
    | sed -n 's/.*Collected : //p' | tr -d '\n'
  echo " $("$ACCPROF" dump $T/w.trace | wc -l)"
  rm -f $T/w*.trace*
}
for shape in shim gcc; do
  k=2; [ $shape = gcc ] && k=28
  read -r ia ea <<<"$(counted $shape 56000)"
  read -r ib eb <<<"$(counted $shape 280000)"
  # Each run: a warm-up of iterations/10 + 1 constructs, then one round.
  n=$(( (280000 / k / 10 - 56000 / k / 10 + 280000 / k - 56000 / k) * k ))
  python3 -c "print(f'harness, $shape events: {($ib - $ia) / ($eb - $ea):.1f} writer instructions per event, {($ib - $ia) / $n:.1f} per callback ({$eb - $ea} events, $n callbacks)')"
done
rm -rf $T
