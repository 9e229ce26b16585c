#!/usr/bin/env bash
# Time and peak memory of every command over one synthetic trace of each shape, 10 M events by
# default: the figures of docs/PERFORMANCE.md ("Every shape, 10 M events").
#
#   bash scripts/bench_shapes.sh [EVENTS] [ACCPROF...]
#
# Builds the release accprof and synth_trace, writes the traces into a scratch directory, and
# runs report, advise, export (JSON and Perfetto), plot and dump on each, with every accprof
# binary given (default: target/release/accprof; give an older build's too to compare, the runs
# alternated; `ONLY=REGEX` keeps the shapes whose names match). Prints one line per run: shape, command, binary, wall seconds, peak resident
# memory, and for Perfetto the bytes per event; the machine's load average before each shape.
set -euo pipefail
cd "$(dirname "$0")/.."

events=${1:-10000000}
shift || true
binaries=("$@")
cargo build --release -q -p accprof-cli -p accprof-testkit --bins --examples
if [ ${#binaries[@]} -eq 0 ]; then
    binaries=(target/release/accprof)
fi
synth=target/release/examples/synth_trace
dir=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$dir"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), traces in $dir"

# shape name, then the synth_trace arguments after the event count.
shapes=(
    "inside:naive"
    "outside:loose --threads 2"
    "many threads:loose --threads 64"
    "async queues:loose --threads 8 --queues 4"
    "CUPTI with calls:naive --cupti"
    "CUPTI without calls:loose --threads 2 --cupti-by-name"
    "4 MPI ranks:ranks"
)

for entry in "${shapes[@]}"; do
    name=${entry%%:*}
    spec=${entry#*:}
    if [ -n "${ONLY:-}" ] && ! [[ "$name" =~ $ONLY ]]; then
        continue
    fi
    file=$dir/$(echo "$name" | tr ' ' '_').trace
    traces=("$file")
    if [ "$spec" = ranks ]; then
        traces=()
        for r in 0 1 2 3; do
            t=$dir/rank$r.trace
            [ -f "$t" ] || "$synth" naive $((events / 4)) "$t" --rank $r >/dev/null
            traces+=("$t")
        done
    else
        read -r -a words <<<"$spec"
        [ -f "$file" ] || "$synth" "${words[0]}" "$events" "$file" "${words[@]:1}" >/dev/null
    fi
    echo "## $name: $(cat /proc/loadavg | cut -d' ' -f1-3) load"
    for bin in "${binaries[@]}"; do
        run() {
            local what=$1
            shift
            /usr/bin/time -f "%e %M" -o "$dir/time" "$@" >/dev/null 2>"$dir/err" || {
                echo "$name | $what | $bin | failed: $(tail -1 "$dir/err")"
                return
            }
            read -r secs kb <"$dir/time"
            local extra=""
            if [ "$what" = "export perfetto" ]; then
                local n
                n=$(grep -o '[0-9]* events' "$dir/err" | head -1 | cut -d' ' -f1)
                extra=" | $(awk -v b="$(stat -c %s "$dir/out.pftrace")" -v n="$n" 'BEGIN {printf "%.1f B/event", b / n}')"
            fi
            echo "$name | $what | $bin | ${secs} s | $((kb / 1024)) MiB$extra"
        }
        run "report" "$bin" report -q "${traces[@]}"
        run "advise" "$bin" advise -q "${traces[@]}"
        run "export json" "$bin" export -o "$dir/out.json" "${traces[@]}"
        run "export perfetto" "$bin" export -o "$dir/out.pftrace" "${traces[@]}"
        run "plot" "$bin" plot -q -o "$dir/out.svg" "${traces[@]}"
        if [ ${#traces[@]} -eq 1 ]; then
            run "dump" "$bin" dump -q "${traces[0]}"
        fi
        rm -f "$dir/out.json" "$dir/out.pftrace" "$dir/out.svg"
    done
done
