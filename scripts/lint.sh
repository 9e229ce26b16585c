#!/usr/bin/env bash
# The checks CI runs beside the tests: formatting (rustfmt.toml), clippy with warnings denied
# on every target, no import circle between the modules of any crate (scripts/module_cycles.py),
# and rustdoc with warnings denied. Run it before you commit.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy (warnings denied)"
cargo clippy --workspace --all-targets --release -- -D warnings
# The per-stage benchmark's build of the tool library (libaccprof/src/bench_stage.rs).
cargo clippy -p libaccprof --lib --release --features bench-stages -- -D warnings

echo "== import circles between modules (every crate)"
python3 scripts/module_cycles.py --self-test
python3 scripts/module_cycles.py

echo "== cargo doc (warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --release
