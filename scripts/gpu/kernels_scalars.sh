#!/usr/bin/env bash
# kernels_scalars on a GPU: tests/apps/relax_args.f90 (2000 steps) as written (kernels: every
# scalar argument copied back after each launch), with `copyin(...)` of the scalars on its
# kernels directives, and with `parallel loop`; wall times alternated, then one traced run of
# the kernels version built with -g (for `accprof advise`).
#
#   here:  bash scripts/gpu/kernels_scalars.sh stage      # builds into .device-carry/ks
#   there: bash .device-carry/ks/run.sh                    # with carry [".device-carry/ks"]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$root/.device-carry/ks"
[[ "${1:-}" == stage ]] || { echo "usage: $0 stage" >&2; exit 2; }
rm -rf "$out" && mkdir -p "$out"
src="$out/src" && mkdir -p "$src"
sed -e 's/n = 64, steps = 30/n = 64, steps = 2000/' "$root/tests/apps/relax_args.f90" > "$src/kern.f90"
# kernels directives are lines 19 (smooth) and 37 (copy_back).
sed -e '19s/.*/!$acc kernels copyin(x_min, x_max, y_min, y_max, depth, weight)/' \
    -e '37s/.*/!$acc kernels copyin(x_min, x_max, y_min, y_max, depth)/' "$src/kern.f90" > "$src/cin.f90"
sed -e 's/^!\$acc kernels$/!$acc parallel loop/' -e 's/^!\$acc end kernels$//' \
    -e '/^!\$acc loop independent$/{N;s/^!\$acc loop independent\n\(    do k\)/\1/}' "$src/kern.f90" > "$src/par.f90"
fc=(gfortran-12 -O2 -fopenacc -foffload=nvptx-none -foffload-options=-misa=sm_80)
for v in kern cin par; do (cd "$src" && "${fc[@]}" "$v.f90" -o "$out/$v"); done
(cd "$src" && "${fc[@]}" -g kern.f90 -o "$out/kern_g")
cp -L /usr/lib/x86_64-linux-gnu/libgomp.so.1 /usr/lib/x86_64-linux-gnu/libgomp-plugin-nvptx.so.1 "$out/"
cp "$root/target/release/libaccprof.so" "$out/"
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
set -u
d="$(cd "$(dirname "$0")" && pwd)"
export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name --format=csv,noheader
for r in 1 2 3; do
  for v in kern cin par; do
    s=$(date +%s.%N); timeout 60 "$d/$v" > /dev/null; e=$(date +%s.%N)
    echo "$v run$r wall $(echo "$s $e" | awk '{print $2-$1}')"
  done
done
ACCPROF_OUT="$OUT/kern_g.trace" LD_PRELOAD="$d/libaccprof.so" timeout 60 "$d/kern_g" > /dev/null
RUN
chmod +x "$out/run.sh"
echo "staged in $out ($(du -sh "$out" | cut -f1))"
