#!/usr/bin/env bash
# The shim's map kinds and `acc declare` on a GPU: the programs of runtime-shim/tests/gcc that
# exercise them (a C++ class with update of member arrays, a C grid struct, a Fortran derived
# type, declared globals, function-local declare), built with GCC's nvptx offloading, run on
# libgomp (Debian's, with its nvptx plugin), on the shim's CUDA backend (GCC's nvptx kernels;
# declared globals in the image's own variables) and on the shim's emulated device, same
# binaries.
#
# Here (needs GCC's nvptx offload compiler: `apt-get install gcc-12-offload-nvptx`, or its
# packages unpacked with `apt-get download gcc-12-offload-nvptx nvptx-tools
# libgomp-plugin-nvptx1` and `dpkg -x` into NVPTX_ROOT):
#   cargo build --release -p runtime-shim --lib
#   bash scripts/gpu/gcc_maps.sh stage [DIR]      # DIR defaults to .device-carry/gccmaps
# There (the GPU machine; nothing is built there), from the repository root:
#   bash scripts/gpu/gcc_maps.sh run [DIR]
# Prints, per program, whether the shim on CUDA and on the emulated device print on stdout what
# libgomp prints on the GPU ("same"), else what libgomp's host fallback prints ("host", with
# libgomp's GPU output), else both outputs and the shim's stderr ("DIFF", counted). (The shim says
# on stderr that declare_globals.c's update directive reached it with no variable.)
set -u
mode=${1:-}
dir=${2:-.device-carry/gccmaps}
progs="class_data.cpp grid_struct.c derived_type.f90 declare_globals.c declare_local.c struct_members.c"

if [ "$mode" = stage ]; then
  root=${NVPTX_ROOT:-}
  flags=(-O2 -g -fopenacc -foffload=nvptx-none -foffload-options=-misa=sm_80 -foffload-options=-lm)
  if [ -n "$root" ]; then
    export PATH="$root/usr/bin:$PATH"
    flags+=(-B "$root/usr/lib/gcc/x86_64-linux-gnu/12/")
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  repo=$PWD
  work=$(mktemp -d)
  for src in $progs; do
    case $src in *.cpp) cc=g++ ;; *.f90) cc=gfortran ;; *) cc=gcc ;; esac
    # In a scratch directory: gfortran writes module files where it runs.
    (cd "$work" && $cc "${flags[@]}" -pthread -o "$dir/${src%.*}" "$repo/runtime-shim/tests/gcc/$src" -lm) || exit 1
    nm -D "$dir/${src%.*}" | grep -q GOMP_offload_register_ver || { echo "$src: no nvptx image (is the offload compiler there?)" >&2; exit 1; }
  done
  rm -rf "$work"
  lib=/usr/lib/x86_64-linux-gnu
  plugin=$lib/libgomp-plugin-nvptx.so.1
  [ -e "$plugin" ] || plugin=$root$lib/libgomp-plugin-nvptx.so.1
  cp -L "$lib/libgomp.so.1" "$plugin" target/release/libaccshim.so "$dir/"
  echo "staged in $dir: carry it, then run: bash scripts/gpu/gcc_maps.sh run $dir"
  exit 0
fi

[ "$mode" = run ] || { echo "usage: $0 stage|run [DIR]" >&2; exit 2; }
cd "$dir" || exit 1
export LD_LIBRARY_PATH="$PWD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi -L 2>/dev/null || true
fails=0
for src in $progs; do
  p=./${src%.*}
  g=$(ACC_DEVICE_TYPE=nvidia timeout 120 "$p" 2>/tmp/gcc_maps.err; echo "status $?")
  h=$(ACC_DEVICE_TYPE=host timeout 120 "$p" 2>/dev/null; echo "status $?")
  for what in shim-cuda shim-emulated; do
    [ $what = shim-cuda ] && t=nvidia || t=emulated
    out=$(ACC_DEVICE_TYPE=$t LD_PRELOAD="$PWD/libaccshim.so" ACCSHIM_QUIET=1 timeout 120 "$p" 2>/tmp/gcc_maps.shim.err; echo "status $?")
    if [ "$out" = "$g" ]; then
      echo "same  $src  $what"
    elif [ "$out" = "$h" ]; then
      # libgomp's host fallback shares memory with the program, so a correct program's output
      # there is its intended one; the shim matching it where libgomp's nvptx plugin does not
      # is libgomp's difference, shown for the record.
      echo "host  $src  $what: as libgomp's host fallback; libgomp on the GPU differs:"
      { echo "$g"; cat /tmp/gcc_maps.err; } | sed 's/^/    libgomp on the GPU: /' | head -4
    else
      fails=$((fails + 1))
      echo "DIFF  $src  $what"
      { echo "$g"; cat /tmp/gcc_maps.err; } | sed 's/^/    libgomp: /' | head -14
      { echo "$out"; cat /tmp/gcc_maps.shim.err; } | sed "s/^/    $what: /" | head -14
    fi
  done
done
echo "$fails differences"
