#!/usr/bin/env bash
# Runs every test of the workspace: unit tests, snapshot tests, and the integration tests that
# compile real OpenACC programs with gcc -fopenacc and run them under the real loader.
# The integration tests run release builds of libaccprof.so, accprof, accprof-tui and the
# shim's examples; this script builds them first.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== building release artifacts (libaccprof.so, accprof, accprof-tui, shim examples)"
cargo build --release --workspace --lib --bins --examples

# The export test checks files with the DevTools Performance panel's trace engine when node is
# installed; fetch its pinned packages once.
node_tools=accprof-cli/tests/tools/node
if command -v node >/dev/null 2>&1 && [ -f "$node_tools/package-lock.json" ] && [ ! -d "$node_tools/node_modules" ]; then
    echo "== installing the trace engine used by the export test (npm ci)"
    npm ci --prefix "$node_tools" --no-audit --no-fund
fi

echo "== running all tests"
INSTA_UPDATE=no cargo test --workspace
