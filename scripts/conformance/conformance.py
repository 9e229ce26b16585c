#!/usr/bin/env python3
"""Builds every subtest of the OpenACC validation suite alone, runs each on GCC's libgomp (host
fallback), on the shim's emulated device and on the shim with libaccprof loaded, and writes the
comparison (conformance.md) and the per-subtest table (conformance.tsv).

Started by scripts/conformance/run.sh, which builds the libraries first; see its header.
"""

import argparse
import concurrent.futures
import datetime
import fnmatch
import json
import os
import platform
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import outcome  # noqa: E402
import report  # noqa: E402
import vv_suite  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def build(subtest, work, compilers, seed, rebuild):
    """Builds `subtest` into its own folder (reused when the command is unchanged and the
    binary is newer than its sources). Returns (executable or None, why not)."""
    folder = os.path.join(work, "build", subtest.file.name, f"T{subtest.number}")
    os.makedirs(folder, exist_ok=True)
    exe = os.path.join(folder, "test")
    cmd = vv_suite.compile_command(subtest, compilers, exe, seed)
    stamp = os.path.join(folder, "command")
    log = os.path.join(folder, "compile.log")
    command_text = " ".join(cmd)
    sources = [subtest.file.path, *subtest.file.module_sources]
    if not rebuild and os.path.exists(stamp) and read(stamp) == command_text:
        fresh = [p for p in (exe, log) if os.path.exists(p) and all(os.path.getmtime(p) >= os.path.getmtime(s) for s in sources)]
        if exe in fresh:
            return exe, ""
        if log in fresh:
            return None, first_error(read(log))
    if os.path.exists(exe):
        os.unlink(exe)
    # In the subtest's folder, so that Fortran .mod files of parallel builds never meet.
    proc = subprocess.run(cmd, cwd=folder, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace")
    with open(log, "w") as f:
        f.write(proc.stderr)
    with open(stamp, "w") as f:
        f.write(command_text)
    if proc.returncode != 0 or not os.path.exists(exe):
        return None, first_error(proc.stderr)
    return exe, ""


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def first_error(text):
    for marks in (("undefined reference",), ("error:", "Error:"), None):
        line = outcome.first_line(text, marks)
        if line:
            return line
    return "compile failed"


def check(subtest, args, compilers):
    """Builds and runs one subtest; reruns all three runtimes when their outcomes differ, so
    that a difference that comes and goes is told from a steady one."""
    record = {"id": subtest.id, "file": subtest.file.name, "language": subtest.file.language}
    exe, why = build(subtest, args.work, compilers, args.seed, args.rebuild)
    if exe is None:
        record.update(build="nobuild", build_detail=why, runs={})
        return record
    record.update(build="ok", build_detail="", runs={r: [] for r in outcome.RUNTIMES})
    folder = os.path.dirname(exe)
    for _ in range(1 + args.reruns):
        for runtime in outcome.RUNTIMES:
            r = outcome.run(exe, runtime, args.lib_dir, folder, args.timeout)
            record["runs"][runtime].append(vars(r))
        if len({record["runs"][rt][0]["kind"] for rt in outcome.RUNTIMES}) == 1:
            break
    shim_runs = record["runs"]["shim"]
    if any(r["dropped"] for r in shim_runs) and any(r["kind"] != outcome.PASS for r in shim_runs):
        # Whether the "results dropped" warning is all that keeps the subtest from passing.
        quiet = outcome.run(exe, "shim", args.lib_dir, folder, args.timeout, {"ACCSHIM_DROP_CHECK": "0"})
        record["no_drop_check"] = quiet.kind
    if not args.keep_traces:
        trace_dir = os.path.join(folder, "trace")
        for t in os.listdir(trace_dir) if os.path.isdir(trace_dir) else []:
            os.unlink(os.path.join(trace_dir, t))
    return record


def compiler_version(cc):
    try:
        return subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "unknown"


def git(*a, cwd=REPO):
    try:
        return subprocess.run(["git", *a], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def metadata(args, started, seconds, compilers):
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    if git("status", "--porcelain", "--untracked-files=no"):
        commit += " with uncommitted changes"
    suite_commit = git("rev-parse", "--short", "HEAD", cwd=args.suite) or "unknown (not a git checkout)"
    if args.lib_label:
        libraries = args.lib_label
    elif os.path.realpath(args.lib_dir) == os.path.realpath(os.path.join(REPO, "target", "release")):
        last = git("log", "-1", "--format=%h", "--", "runtime-shim", "libaccprof", "accprof-abi") or "unknown"
        libraries = f"this checkout's (runtime-shim and libaccprof last changed at {last})"
    else:
        libraries = args.lib_dir
    return {
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "suite": "OpenACCUserGroup/OpenACCV-V " + suite_commit,
        "libraries": libraries,
        "compilers": [compiler_version(compilers[lang]) for lang in ("c", "c++", "fortran")],
        "machine": f"{platform.machine()} Linux {platform.release()}, {os.cpu_count()} CPUs",
        "jobs": args.jobs,
        "timeout": args.timeout,
        "reruns": args.reruns,
        "seed": args.seed,
        "seconds": round(seconds),
        "command": "bash scripts/conformance/run.sh " + " ".join(args.argv),
    }


def parse_args(argv):
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("suite", help="root of an OpenACCV-V checkout (holding Tests/)")
    p.add_argument("--work", default="/tmp/accprof-conformance", help="build and run folder (kept between runs: unchanged subtests are not rebuilt)")
    p.add_argument("--out", default=None, help="folder for conformance.md and conformance.tsv (default docs/performance, or --work with --only)")
    p.add_argument("--lib-dir", default=os.path.join(REPO, "target", "release"), help="where libaccshim.so and libaccprof.so are")
    p.add_argument("--lib-label", default="", help="what the libraries in --lib-dir are, for the report (e.g. 'branch x at abc1234')")
    p.add_argument("--jobs", type=int, default=2, help="subtests built and run at once (default 2)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds a run may take before it counts as a hang (default 60)")
    p.add_argument("--reruns", type=int, default=2, help="extra runs of a subtest whose runtimes disagree (default 2)")
    p.add_argument("--seed", type=int, default=1, help="the suite's SEED, the same for every runtime (default 1)")
    p.add_argument("--only", action="append", default=[], help="glob of subtests to run, e.g. 'acc_copyin*' or 'parallel.c:T2' (repeatable)")
    p.add_argument("--rebuild", action="store_true", help="rebuild every subtest")
    p.add_argument("--keep-traces", action="store_true", help="keep the shim+tool traces under --work")
    p.add_argument("--report-only", action="store_true", help="rewrite the report from --work's last results (after editing triage.tsv)")
    args = p.parse_args(argv)
    args.argv = argv
    args.suite = os.path.abspath(args.suite)
    args.work = os.path.abspath(args.work)
    if args.out is None:
        args.out = args.work if args.only else os.path.join(REPO, "docs", "performance")
    return args


def main(argv):
    args = parse_args(argv)
    os.makedirs(args.work, exist_ok=True)
    results_path = os.path.join(args.work, "results.json")
    notes = report.read_triage(os.path.join(HERE, "triage.tsv"))
    if args.report_only:
        with open(results_path) as f:
            saved = json.load(f)
        report.write(saved["records"], saved["meta"], notes, args.out)
        return 0
    for lib in ("libaccshim.so", "libaccprof.so"):
        if not os.path.exists(os.path.join(args.lib_dir, lib)):
            raise SystemExit(f"conformance: {lib} is not in {args.lib_dir}; build it first (scripts/conformance/run.sh does)")
    compilers = {
        "c": os.environ.get("CC", "gcc"),
        "c++": os.environ.get("CXX", "g++"),
        "fortran": os.environ.get("FC", "gfortran"),
    }
    todo = vv_suite.subtests(vv_suite.discover(args.suite))
    if args.only:
        todo = [s for s in todo if any(fnmatch.fnmatch(s.id, g) for g in args.only)]
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()
    records = []
    lock = threading.Lock()
    print(f"conformance: {len(todo)} subtests, {args.jobs} at a time, work folder {args.work}", flush=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(check, s, args, compilers) for s in todo]
        for fut in concurrent.futures.as_completed(futures):
            rec = fut.result()
            with lock:
                records.append(rec)
                n = len(records)
            if n % 100 == 0 or n == len(todo):
                elapsed = time.monotonic() - t0
                left = elapsed / n * (len(todo) - n)
                print(f"conformance: {n}/{len(todo)} done, {elapsed / 60:.1f} min, about {left / 60:.0f} min left", flush=True)
    records.sort(key=lambda r: r["id"])
    meta = metadata(args, started, time.monotonic() - t0, compilers)
    with open(results_path, "w") as f:
        json.dump({"meta": meta, "records": records}, f)
    report.write(records, meta, notes, args.out)
    print(f"conformance: {meta['seconds'] / 60:.1f} min; wrote {args.out}/conformance.md and conformance.tsv", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
