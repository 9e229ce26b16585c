#!/usr/bin/env bash
# The checks CI runs beside the tests: formatting (rustfmt.toml), clippy with warnings denied
# on every target, rustdoc with warnings denied, and no import circle between the modules of
# a crate (scripts/module_cycles.py). Run it before you commit.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy (warnings denied)"
cargo clippy --workspace --all-targets --release -- -D warnings

echo "== cargo doc (warnings denied)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --release

echo "== import circles between modules"
python3 scripts/module_cycles.py --self-test
python3 scripts/module_cycles.py
