#!/bin/bash
# On the GPU machine, after `bash scripts/gpu-validate.sh stage` here: runs the naive GCC Laplace
# under libaccprof, kills it with SIGKILL after 4 s, and reports and advises on what the trace kept.
# Usage: bash scripts/gpu/killed.sh OUTDIR   (docs/performance/gpu.md has the figures)
D=$PWD/.device-carry/gpu
O=$1; mkdir -p $O
export LD_LIBRARY_PATH=$D/lib
T=$(mktemp -d); cp $D/gcc_laplace_naive $T/app
cd $T
ACCPROF_OUT=$T/kill.trace LD_PRELOAD=$D/libaccprof.so ./app 4096 400 > app.out 2>&1 &
pid=$!; sleep 4; kill -9 $pid; wait $pid; echo "killed rc=$?"
$D/accprof report kill.trace > $O/kill_report.txt 2>&1; echo "report rc=$?"
$D/accprof advise kill.trace > $O/kill_advise.txt 2>&1
cp kill.trace $O/
