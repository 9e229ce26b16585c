#!/usr/bin/env bash
# The main job, on the bundled example: profile the seeds' Laplace solver (per-iteration copies,
# on the bundled runtime's emulated device), print the report and the advice; then run the
# version with the data region the advice asks for and show what it bought.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p libaccprof -p accprof-cli -p accprof-tui -p runtime-shim --examples --bins --lib
out=$(mktemp -d)
accprof=target/release/accprof
laplace=target/release/examples/laplace

echo "== accprof run --report --advise -- laplace --version naive"
$accprof run --report --advise -o "$out/naive.trace" -- $laplace --version naive "$@"
echo
echo "== after the change: laplace --version data (copy(A) create(Anew) around the loop)"
$accprof run --advise -o "$out/data.trace" -- $laplace --version data "$@"
echo
echo "== accprof diff naive.trace data.trace"
$accprof diff "$out/naive.trace" "$out/data.trace"
echo
echo "Traces are in $out. Open one with: $accprof tui $out/naive.trace"
