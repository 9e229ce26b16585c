#!/usr/bin/env bash
# The main job, on a real GCC program: the seeds' Laplace solver in C with `#pragma acc`
# (scripts/gpu/laplace.c), built by `gcc -fopenacc` as it is, run on accprof's bundled runtime
# (libaccshim.so; its emulated device, with memory of its own, where there is no GPU) through
# `accprof run --runtime shim`: the report and the advice point at the .c lines. Then the version
# with the data region the advice asks for, and `accprof diff` shows what it bought.
# Arguments go to the solver: [n (3..NMAX)] [iterations]; default 1024 20 (NMAX 1024 here).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== building accprof (cargo build --release; the first build takes a few minutes)"
cargo build --release -p libaccprof -p accprof-cli -p accprof-tui -p runtime-shim --bins --lib
out=$(mktemp -d)
accprof=target/release/accprof
src=scripts/gpu/laplace.c

# -foffload=-lm: where gcc's nvptx offload compiler is installed, the kernels' fabs and fmax
# need the device's libm. Without one the option does nothing.
build() {
  gcc -O2 -g -fopenacc -foffload=-lm -DNMAX=1024 "$@" "$src" -lm 2> "$out/gcc.log" ||
    { cat "$out/gcc.log" >&2; exit 1; }
}
build -o "$out/laplace"
build -DDATA_REGION -o "$out/laplace_data"
args=("${@:-1024}")
[ $# -ge 2 ] || args+=(20)

echo "== gcc -fopenacc $src; accprof run --runtime shim --content --report --advise -- ./laplace ${args[*]}"
# --content hashes every transfer's bytes: the advice proves which copies were redundant and
# chooses each array's clause from what the program needed.
$accprof run --runtime shim --content --report --advise -o "$out/naive.trace" -- "$out/laplace" "${args[@]}"
echo
echo "== after the change: gcc -DDATA_REGION (#pragma acc data copy(A) create(Anew) around the loop)"
$accprof run --runtime shim --advise -o "$out/data.trace" -- "$out/laplace_data" "${args[@]}"
echo
echo "== accprof diff naive.trace data.trace"
$accprof diff "$out/naive.trace" "$out/data.trace"
echo
echo "Traces are in $out. Open one with: $accprof tui $out/naive.trace"
