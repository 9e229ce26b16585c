#!/usr/bin/env bash
# The bundled runtime's correctness, lifetime and error programs (runtime-shim/tests/gcc) on a
# GPU: the shim's CUDA backend against libgomp with its nvptx plugin, same binaries.
#
# Here (gcc-12-offload-nvptx installed: apt-get install -y gcc-12-offload-nvptx), from the
# repository root, after `cargo build --release -p runtime-shim --lib`:
#   bash scripts/gpu/shim_runtime.sh stage        # builds into .device-carry/shimrt
# There (carry .device-carry/shimrt):
#   bash scripts/gpu/shim_runtime.sh run          # prints one line per check: ok or FAIL
# (A dry run without a GPU: SHIMRT_DEVICE=emulated SHIMRT_GOMP_DEVICE=host ... run.)
#
# What each check expects:
# - pointers_by_value (miniWeather's shape: pointers GCC passes into kernels by value, update
#   host async + wait) and kernels_by_value (a kernels construct's pointer variables, mapped
#   whole): the shim on CUDA prints what libgomp's host fallback prints. libgomp on the GPU
#   passes the host addresses to the kernels; its output is shown, not judged.
# - release_under_async, async_update_host, construct_kinds, sync_after_async (copies back and
#   a synchronous kernel right after async kernels, no wait; a store after an async update
#   self): the same output on both.
# - exit_during_constructs: 10 runs on the shim, each status 0, "main returns", nothing on stderr.
# - error_after_output (kernels, update): status 1, the line printed before kept, one error line
#   naming the directive and its source line.
# - construct_kinds with the C event logger: compute constructs reported as kernels, parallel,
#   serial, then parallel on the host (if false).
set -u
carry=.device-carry/shimrt
case "${1:-}" in
stage)
  set -e
  mkdir -p "$carry"
  root=$PWD
  src=$root/runtime-shim/tests/gcc
  progs=(pointers_by_value.cpp kernels_by_value.c release_under_async.c async_update_host.c
    construct_kinds.c sync_after_async.c exit_during_constructs.c error_after_output.c)
  for p in "${progs[@]}"; do cp "$src/$p" "$carry/"; done
  cd "$carry"
  # Built where they run, their debug information naming the sources relative to that folder,
  # so that there the runtime finds each directive's line (construct kinds, error lines).
  F=(-O2 -g -fdebug-prefix-map="$PWD"=. -fopenacc -foffload=nvptx-none
    -foffload-options=-misa=sm_80 -foffload-options=-lm)
  for p in "${progs[@]}"; do
    case $p in *.cpp) cc=g++ ;; *) cc=gcc ;; esac
    "$cc" "${F[@]}" -pthread "$p" -o "${p%.*}" -lm
  done
  gcc -O1 -shared -fPIC "$root/runtime-shim/tests/c/event_logger.c" -o event_logger.so -lpthread
  cp "$root/target/release/libaccshim.so" .
  cp -L /usr/lib/x86_64-linux-gnu/libgomp.so.1 /usr/lib/x86_64-linux-gnu/libgomp-plugin-nvptx.so.1 .
  echo "staged in $carry"
  ;;
run)
  cd "$carry" || exit 1
  export LD_LIBRARY_PATH=$PWD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  nvidia-smi -L 2>/dev/null || true
  gomp() { ACC_DEVICE_TYPE=${SHIMRT_GOMP_DEVICE:-nvidia} timeout 120 "$@"; }
  gomp_host() { ACC_DEVICE_TYPE=host timeout 120 "$@"; }
  shim() { ACC_DEVICE_TYPE=${SHIMRT_DEVICE:-nvidia} LD_PRELOAD=$PWD/libaccshim.so ACCSHIM_QUIET=1 timeout 120 "$@"; }
  verdict() { if [ "$1" = 1 ]; then echo "ok    $2"; else echo "FAIL  $2"; fi; }
  same() { [ "$1" = "$2" ] && echo 1 || echo 0; }

  for p in pointers_by_value kernels_by_value; do
    want=$(gomp_host "./$p" 2>&1)
    got=$(shim "./$p" 2>/dev/null)
    verdict "$(same "$want" "$got")" "$p: shim on CUDA = libgomp's host fallback"
    [ "$want" = "$got" ] || { echo "  want: $want" | head -8; echo "  shim: $got" | head -8; }
    echo "  (libgomp on the GPU, for the record: $(gomp "./$p" 2>&1 | tail -2 | tr '\n' ' '))"
  done

  for p in release_under_async async_update_host construct_kinds sync_after_async; do
    g=$(gomp "./$p" 2>&1); s=$(shim "./$p" 2>/dev/null)
    verdict "$(same "$g" "$s")" "$p: the same output as libgomp on the GPU"
    [ "$g" = "$s" ] || { echo "  libgomp: $g" | head -6; echo "  shim:    $s" | head -6; }
  done

  bad=0
  for i in $(seq 10); do
    out=$(shim ./exit_during_constructs 2>/tmp/shimrt_err); rc=$?
    if [ $rc != 0 ] || [ "$out" != "main returns" ] || [ -s /tmp/shimrt_err ]; then
      bad=$((bad + 1)); echo "  run $i: status $rc, stdout '$out', stderr: $(head -2 /tmp/shimrt_err)"
    fi
  done
  verdict "$(same $bad 0)" "exit_during_constructs: 10 runs, status 0 and quiet ($bad bad)"

  for arg in kernels update; do
    case $arg in kernels) what="kernels construct"; pat="acc kernels" ;; *) what="update"; pat="acc update" ;; esac
    line=$(grep -n "$pat" error_after_output.c | head -1 | cut -d: -f1)
    out=$(shim ./error_after_output "$arg" 2>/tmp/shimrt_err); rc=$?
    err=$(cat /tmp/shimrt_err)
    good=0
    if [ $rc = 1 ] && [ "$out" = "before the error" ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] &&
      printf '%s' "$err" | grep -q "in $what at .*error_after_output.c:$line: "; then good=1; fi
    verdict $good "error_after_output $arg: status 1, output kept, one line at line $line"
    [ $good = 1 ] || echo "  status $rc, stdout '$out', stderr: $err"
  done

  ACC_PROFLIB=$PWD/event_logger.so ACCSHIM_TOOL_LOG=/tmp/shimrt_log shim ./construct_kinds > /dev/null 2>&1
  kinds=$(awk '/^compute_construct_start/ { for (i = 1; i <= NF; i++) if ($i ~ /^(construct|devtype)=/) printf "%s ", $i; printf "| " }' /tmp/shimrt_log)
  d=5; [ "${SHIMRT_DEVICE:-nvidia}" = emulated ] && d=3  # acc_device_nvidia, or the emulated device
  want_kinds="devtype=$d construct=1 | devtype=$d construct=0 | devtype=$d construct=16 | devtype=2 construct=0 | "
  verdict "$(same "$kinds" "$want_kinds")" "construct_kinds: kernels, parallel, serial, parallel on the host"
  [ "$kinds" = "$want_kinds" ] || echo "  got: $kinds"
  ;;
*)
  echo "usage: bash scripts/gpu/shim_runtime.sh stage|run" >&2
  exit 2
  ;;
esac
