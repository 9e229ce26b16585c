#!/usr/bin/env bash
# What ACCPROF_CONTENT (accprof run --content) costs a real program: the seeds' naive Laplace
# (scripts/gpu/laplace.c, every iteration copies A and Anew both ways) on the bundled runtime's
# emulated device, run alternately with and without hashing; prints each run's wall time and
# the medians. Then the hash's own throughput against memcpy (libaccprof's content_hash bench).
# Arguments: [n] [iterations] [runs]; default 1024 20 5.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1024}; iters=${2:-20}; runs=${3:-5}
echo "building (cargo build --release: libaccprof, accprof, the bundled runtime) ..."
cargo build --release -q -p libaccprof -p accprof-cli -p runtime-shim --bins --lib
out=$(mktemp -d)
gcc -O2 -g -fopenacc -foffload=-lm -DNMAX="$n" scripts/gpu/laplace.c -o "$out/laplace" -lm
accprof=target/release/accprof
export ACCSHIM_QUIET=1
wall() { # prints the seconds one run took
  local s e
  s=$(date +%s.%N)
  "$accprof" run -q --runtime shim "$@" -o "$out/t.trace" -- "$out/laplace" "$n" "$iters" > /dev/null
  e=$(date +%s.%N)
  echo "$e - $s" | bc -l
}
plain=(); hashed=()
for _ in $(seq "$runs"); do
  plain+=("$(wall)")
  hashed+=("$(wall --content)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "naive Laplace n=$n iterations=$iters, $runs runs each, alternated (seconds, accprof run included)"
echo "without --content: ${plain[*]}  median $(median "${plain[@]}")"
echo "with    --content: ${hashed[*]}  median $(median "${hashed[@]}")"
"$accprof" run -q --runtime shim --content -o "$out/t.trace" -- "$out/laplace" "$n" "$iters" > /dev/null
"$accprof" report -q "$out/t.trace" | grep -E "data transfers|host->device|device->host" | head -3
echo
cargo bench -q -p libaccprof --bench content_hash 2>/dev/null | tail -6
rm -rf "$out"
