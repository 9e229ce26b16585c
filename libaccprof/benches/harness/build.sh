#!/bin/bash
# Builds the C harness and its reference tools into DIR (run.sh, stages.sh, instructions.sh and
# scripts/gpu/overhead.sh call it): the fake runtime (libfakeacc.so), the trivial store tool
# (libstoretool.so), a tool that only reads the TSC (libtsctool.so) and the harness itself,
# which finds the fake runtime beside it.
#   bash libaccprof/benches/harness/build.sh DIR
set -eu
D=$1
H=$(dirname "$0")
mkdir -p "$D"
gcc -O2 -g -shared -fPIC -o "$D/libfakeacc.so" "$H/fake_runtime.c"
gcc -O2 -g -shared -fPIC -o "$D/libstoretool.so" "$H/store_tool.c"
gcc -O2 -g -shared -fPIC -DTSC_ONLY -o "$D/libtsctool.so" "$H/store_tool.c"
gcc -O2 -g -o "$D/harness" "$H/harness.c" -L"$D" -lfakeacc -Wl,-rpath,'$ORIGIN' -ldl
