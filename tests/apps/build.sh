#!/usr/bin/env bash
# Builds the realistic OpenACC programs of tests/apps with GCC 12 -fopenacc -g.
#
#   bash tests/apps/build.sh [OUT_DIR]        # default tests/apps/build
#   OFFLOAD=disable bash tests/apps/build.sh  # host code only (-foffload=disable)
#
# With Debian's offload compiler (gcc-12-offload-nvptx) installed, GCC also
# builds nvptx images, and kernels that call libm need `-foffload=-lm`; without
# it (as on CI) GCC builds host code only and the flag is not passed. The MPI
# program is built only when mpicc (Open MPI) is installed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/build}"
mkdir -p "$out"

CC="${CC:-gcc}"
CXX="${CXX:-g++}"
FC="${FC:-gfortran}"
flags=(-fopenacc -g -O2)

case "${OFFLOAD:-auto}" in
disable) flags+=(-foffload=disable) ;;
auto)
    # GCC prints the bare name back when the offload compiler is not installed.
    mkoffload="$("$CC" -print-prog-name=accel/nvptx-none/mkoffload)"
    if [[ -x "$mkoffload" ]]; then
        flags+=(-foffload=-lm)
    fi
    ;;
*)
    echo "build.sh: OFFLOAD must be auto or disable, not '${OFFLOAD}'" >&2
    exit 2
    ;;
esac

build() {
    echo "  $*" >&2
    "$@"
}

for v in naive data edit; do
    build "$CC" "${flags[@]}" "$here/laplace_$v.c" -o "$out/laplace_$v" -lm
done
build "$CC" "${flags[@]}" "$here/async_pipeline.c" -o "$out/async_pipeline"
build "$CC" "${flags[@]}" -pthread "$here/interop.c" -o "$out/interop"
build "$CXX" "${flags[@]}" -I"$here" "$here/stencil_main.cpp" "$here/stencil_float.cpp" -o "$out/stencil"
# Fortran: the module file goes to the output directory, not the source tree.
build "$FC" "${flags[@]}" -J"$out" "$here/heat_mod.f90" "$here/heat_main.f90" -o "$out/heat"
build "$FC" "${flags[@]}" "$here/jacobi_naive.f90" -o "$out/jacobi_naive"
build "$FC" "${flags[@]}" -J"$out" "$here/relax_args.f90" -o "$out/relax_args"
build "$CC" "${flags[@]}" "$here/heat_calls.c" -o "$out/heat_calls"
build "$CC" "${flags[@]}" "$here/stack_arrays.c" -o "$out/stack_arrays"
build "$CXX" "${flags[@]}" "$here/field_class.cpp" -o "$out/field_class"
build "$FC" "${flags[@]}" -J"$out" "$here/fields_mod.f90" -o "$out/fields_mod"
build "$CC" "${flags[@]}" "$here/scratch_malloc.c" -o "$out/scratch_malloc"
if command -v mpicc > /dev/null; then
    build env OMPI_CC="$CC" mpicc "${flags[@]}" "$here/mpi_halo.c" -o "$out/mpi_halo" -lm
else
    echo "build.sh: mpicc not found (apt-get install libopenmpi-dev openmpi-bin): mpi_halo skipped" >&2
fi
echo "built in $out" >&2
