#!/usr/bin/env bash
# The OpenACC validation suite (OpenACCUserGroup/OpenACCV-V) on GCC's libgomp, on the shim, and
# on the shim with libaccprof: every subtest built alone with gcc/g++/gfortran -fopenacc, run on
# each runtime with a timeout, compared in docs/performance/conformance.md and .tsv.
#
#   git clone https://github.com/OpenACCUserGroup/OpenACCV-V /tmp/OpenACCV-V
#   bash scripts/conformance/run.sh /tmp/OpenACCV-V            # about an hour on 2 cores
#   bash scripts/conformance/run.sh /tmp/OpenACCV-V --only 'acc_copyin*'   # report in --work
#   bash scripts/conformance/run.sh /tmp/OpenACCV-V --report-only          # after editing triage.tsv
#
# It fetches nothing: the suite's checkout is given, and its files stay outside this repository.
# Builds are kept in --work (default /tmp/accprof-conformance) and reused while their command and
# source are unchanged, so a rerun after a runtime change only runs. Not part of CI (it is long).
# Options: python3 scripts/conformance/conformance.py --help. After a run,
# `python3 scripts/conformance/check_suite.py` runs `accprof check` on every subtest libgomp
# passes and lists the findings (docs/performance/check-suite.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [[ $# -lt 1 || $1 == -* ]]; then
  echo "usage: bash scripts/conformance/run.sh SUITE_CHECKOUT [options]   (options: python3 scripts/conformance/conformance.py --help)" >&2
  exit 2
fi
for tool in gcc g++ gfortran python3; do
  command -v "$tool" >/dev/null || { echo "conformance: $tool is not installed" >&2; exit 1; }
done
if [[ " $* " != *" --report-only "* ]]; then
  # The runtime and the tool as a user builds them; the libraries only, which is quick.
  (cd "$root" && cargo build --release --quiet -p runtime-shim -p libaccprof --lib)
fi
exec python3 "$root/scripts/conformance/conformance.py" "$@"
