#!/usr/bin/env bash
# Runs every program of tests/apps (built by build.sh) and compares its
# checksum line with expected.txt (libgomp's host-fallback results).
#
#   bash tests/apps/check.sh [BUILD_DIR] [-- PREFIX...]
#
# PREFIX runs each program under something else, e.g.
#   bash tests/apps/check.sh build -- accprof run -q -o /tmp/t/ --
#   bash tests/apps/check.sh build -- env LD_PRELOAD=/path/libaccshim.so
# mpi_halo runs as one rank without mpirun (Open MPI's isolated singleton).
# Prints one line per program and exits non-zero when any differs or fails.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$here/build"
if [[ $# -gt 0 && "$1" != "--" ]]; then
    build="$1"
    shift
fi
prefix=()
if [[ $# -gt 0 && "$1" == "--" ]]; then
    shift
    prefix=("$@")
fi

failed=0
while IFS=$'\t' read -r prog want; do
    if [[ ! -x "$build/$prog" ]]; then
        echo "SKIP $prog (not built in $build)"
        continue
    fi
    log="$(mktemp)"
    got="$(cd "$build" && OMPI_MCA_ess_singleton_isolated=1 "${prefix[@]}" "./$prog" 2> "$log" | tail -n 1)"
    rc=$?
    if [[ $rc -eq 0 && "$got" == "$want" ]]; then
        echo "OK   $prog"
    else
        failed=1
        echo "FAIL $prog (exit $rc)"
        echo "     want: $want"
        echo "     got:  $got"
        sed 's/^/     stderr: /' "$log" | tail -n 5
    fi
    rm -f "$log"
done < "$here/expected.txt"
exit $failed
