#!/usr/bin/env bash
# The hostile-conditions probe: runs each odd ending, file and signal case of
# docs/performance/robustness.md many times with real programs under the real loader and
# prints how often each went right. The tests (tests/tests/hostile.rs) run each case once;
# this counts races.
#
#   bash scripts/robustness-probe.sh [RUNS] [BUILD_DIR]
#
# RUNS (default 20) runs per case; BUILD_DIR (default target/release) holds libaccprof.so,
# accprof and libaccshim.so: give another build's directory to measure it the same way.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
build=$(realpath "${2:-target/release}")
lib=$build/libaccprof.so
cli=$build/accprof
shim=$build/libaccshim.so
for f in "$lib" "$cli" "$shim"; do
    [ -e "$f" ] || { echo "missing $f: cargo build --release --workspace --lib --bins --examples" >&2; exit 1; }
done
work=$(mktemp -d /tmp/accprof-probe.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -fopenacc -O1 -g -o "$work/hp" tests/programs/hostile_program.c -lpthread
gcc -fopenacc -O1 -g -o "$work/dies" tests/programs/dies.c -lpthread
gcc -fopenacc -O1 -o "$work/fork_hang" tests/programs/fork_hang.c -lpthread
gcc -shared -fPIC -o "$work/libnoop_tool.so" tests/programs/noop_tool.c
cd "$work"

# Compute constructs with both ends in a trace (what the reader recovers included).
constructs() { "$cli" dump --no-symbols -q "$1" 2>/dev/null | grep -c '"event_type":"acc_ev_compute_construct_start"'; }
say() { printf '%-58s %s\n' "$1" "$2"; }

ok=0
for i in $(seq "$runs"); do
    out=$(ACCPROF_OUT=s.trace LD_PRELOAD=$lib timeout 60 ./hp sigwait 200 2>/dev/null)
    [ $? -eq 0 ] && [ "$out" = "got SIGTERM" ] && ok=$((ok + 1))
    rm -f s.trace*
done
say "sigwait: the program's own thread takes its SIGTERM" "$ok of $runs"

ok=0
for i in $(seq "$runs"); do
    mkfifo f1
    ACCPROF_OUT=f1 LD_PRELOAD=$lib timeout 30 ./hp reexec 500 0 >/dev/null 2>&1 && ok=$((ok + 1))
    rm -f f1
done
say "FIFO without a reader: the program ends, status 0" "$ok of $runs"

ok=0
for i in $(seq "$runs"); do
    mkfifo f2
    # The reader takes 4 KB and goes away; the program runs on and exits.
    (head -c 4096 f2 >/dev/null) &
    ACCPROF_OUT=f2 LD_PRELOAD=$lib timeout 30 ./hp reexec 20000 0 >/dev/null 2>&1 && ok=$((ok + 1))
    wait
    rm -f f2
done
say "FIFO whose reader goes away: status 0 (not 141)" "$ok of $runs"

ok=0
for i in $(seq "$runs"); do
    mkdir -p x && rm -f x/*
    ACCPROF_OUT=x/p.%p.trace LD_PRELOAD=$lib timeout 60 ./hp reexec 400 2 >/dev/null 2>&1
    whole=0
    for t in x/*.trace; do [ "$(constructs "$t")" = 400 ] && whole=$((whole + 1)); done
    [ $whole -eq 3 ] && ok=$((ok + 1))
done
say "exec of itself, 3 images: 3 whole traces" "$ok of $runs"

lost=0
for i in $(seq "$runs"); do
    rm -rf c && mkdir c
    ACCPROF_OUT=c/same.trace LD_PRELOAD=$lib ./hp quiet 10 >/dev/null 2>&1
    pids=()
    fds=()
    for j in 1 2 3 4 5 6; do
        mkfifo "c/go$j"
        (ACCPROF_OUT=c/same.trace LD_PRELOAD=$lib ./hp gate 300 <"c/go$j" >/dev/null 2>&1) &
        pids+=($!)
    done
    # All six let go at once, kept running until all have recorded.
    for j in 1 2 3 4 5 6; do exec {fd}>"c/go$j"; printf g >&$fd; fds[$j]=$fd; done
    sleep 0.5
    for j in 1 2 3 4 5 6; do eval "exec ${fds[$j]}>&-"; done
    wait "${pids[@]}"
    whole=0
    for t in c/same*.trace; do [ "$(constructs "$t")" = 300 ] && whole=$((whole + 1)); done
    lost=$((lost + 6 - whole))
done
say "6 processes starting together over an old trace: traces lost" "$lost of $((6 * runs))"

max=0
for i in $(seq "$runs"); do
    start=$(date +%s%N)
    # In a shell of its own, whose report of the abort goes nowhere.
    ACCPROF_OUT=h.trace LD_PRELOAD=$lib sh -c './hp heap-corrupt 1000' >/dev/null 2>&1
    ms=$((($(date +%s%N) - start) / 1000000))
    [ $ms -gt $max ] && max=$ms
    n=$(constructs h.trace)
    [ "$n" = 1000 ] || say "  heap-corrupt run $i: $n of 1000 constructs" ""
    rm -f h.trace*
done
say "death inside the allocator: longest run (ms; 10 s before)" "$max"

ok=0
for i in $(seq "$runs"); do
    timeout 0.5 env ACCPROF_OUT=t.trace LD_PRELOAD=$lib ./hp spin 0 >/dev/null 2>err
    grep -q "before SIGTERM" err && [ ! -e t.trace.live ] && ok=$((ok + 1))
    rm -f t.trace*
done
say "timeout (two SIGTERMs): exit line said, no live file left" "$ok of $runs"

forks=$((runs * 10))
for tool in none noop accprof; do
    for where in "the thread that forked" "a new thread"; do
        case $tool in
            none) env=() ;;
            noop) env=(ACC_PROFLIB=$work/libnoop_tool.so) ;;
            accprof) env=(LD_PRELOAD=$lib ACCPROF_QUIET=1 ACCPROF_OUT=fh.trace) ;;
        esac
        arg=()
        [ "$where" = "a new thread" ] && arg=(thread)
        r=$(env "${env[@]}" ./fork_hang "$forks" 1 "${arg[@]}")
        say "fork, child's construct on $where, tool $tool" "${r#forks }"
        rm -f fh.trace*
    done
done
