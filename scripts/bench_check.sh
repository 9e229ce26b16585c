#!/usr/bin/env bash
# What `accprof check` costs on the bundled Laplace demo (scripts/gpu/laplace.c, as
# scripts/demo.sh builds it): the same binary on the emulated device without the checker
# (libaccshim.so preloaded, as `accprof run --runtime shim` runs it, without the tool) and
# under `accprof check`, alternating, ROUNDS times each; prints the median of the solver's own
# loop time (" total:") and of the wall time of each, and their ratios.
# Usage: scripts/bench_check.sh [n] [iterations] [rounds]   (default 1024 20 5)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1024} iters=${2:-20} rounds=${3:-5}
cargo build --release -q -p libaccprof -p accprof-cli -p runtime-shim --bins --lib
out=$(mktemp -d)
gcc -O2 -g -fopenacc -foffload=-lm -DNMAX=1024 scripts/gpu/laplace.c -o "$out/laplace" -lm
shim=$PWD/target/release/libaccshim.so accprof=$PWD/target/release/accprof
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for r in $(seq "$rounds"); do
  for mode in plain check; do
    start=$(date +%s.%N)
    if [ $mode = plain ]; then
      line=$(ACC_DEVICE_TYPE=emulated ACCSHIM_QUIET=1 LD_PRELOAD=$shim "$out/laplace" "$n" "$iters")
    else
      line=$($accprof check -- "$out/laplace" "$n" "$iters" 2>"$out/check.txt")
    fi
    end=$(date +%s.%N)
    echo "$line" | awk '/total:/ {print $2}' >> "$out/$mode.loop"
    echo "$end - $start" | bc >> "$out/$mode.wall"
  done
done
pl=$(median < "$out/plain.loop") cl=$(median < "$out/check.loop")
pw=$(median < "$out/plain.wall") cw=$(median < "$out/check.wall")
echo "laplace $n x $n, $iters iterations, $rounds rounds (medians):"
printf "  emulated device        loop %.3f s   wall %.3f s\n" "$pl" "$pw"
printf "  accprof check          loop %.3f s   wall %.3f s\n" "$cl" "$cw"
printf "  ratio                  loop %.2fx    wall %.2fx\n" "$(echo "$cl / $pl" | bc -l)" "$(echo "$cw / $pw" | bc -l)"
echo "  findings: $(head -1 "$out/check.txt")"
