#!/usr/bin/env bash
# The checks CI runs beside the tests: formatting (rustfmt.toml), clippy with warnings denied
# on every target, no import circle among the bundled runtime's modules, and rustdoc with
# warnings denied. Run it before you commit.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy (warnings denied)"
cargo clippy --workspace --all-targets --release -- -D warnings

echo "== import circles between the bundled runtime's modules"
python3 scripts/module_cycles.py runtime-shim/src

echo "== cargo doc (warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --release
