#!/usr/bin/env python3
"""Runs `accprof check` on every subtest of the OpenACC validation suite that GCC's libgomp
passes, from the builds of the last conformance run (scripts/conformance/run.sh), and lists
what it found: docs/performance/check-suite.md and check-suite.tsv.

A subtest libgomp passes is a correct program on a host; what the checker says of it is either
a bug of the test that a discrete GPU would expose (by-value pointers, results never copied
back) or a false finding of ours. Subtests with findings are built once more with -g and
checked again, so that each finding has its line.

    bash scripts/conformance/run.sh /tmp/OpenACCV-V        # once: builds and libgomp outcomes
    python3 scripts/conformance/check_suite.py              # about 10 min on 2 cores
    python3 scripts/conformance/check_suite.py --only 'acc_copyin*'
"""

import argparse
import collections
import concurrent.futures
import datetime
import fnmatch
import json
import os
import platform
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def parse_args(argv):
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("--work", default="/tmp/accprof-conformance", help="the conformance run's folder (its results.json and build/)")
    p.add_argument("--accprof", default=os.path.join(REPO, "target", "release", "accprof"), help="the accprof binary")
    p.add_argument("--out", default=None, help="folder for check-suite.md and .tsv (default docs/performance, or --work with --only)")
    p.add_argument("--jobs", type=int, default=2, help="subtests checked at once (default 2)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds a checked run may take (default 120)")
    p.add_argument("--only", action="append", default=[], help="glob of subtests, e.g. 'acc_copyin*' (repeatable)")
    args = p.parse_args(argv)
    if args.out is None:
        args.out = args.work if args.only else os.path.join(REPO, "docs", "performance")
    return args


def check(exe, args):
    """`accprof check` on `exe` in its folder: (status, findings or None, stderr's last line)."""
    folder = os.path.dirname(exe)
    out = os.path.join(folder, "check.json")
    if os.path.exists(out):
        os.unlink(out)
    env = {k: v for k, v in os.environ.items() if k not in ("ACC_DEVICE_TYPE", "LD_PRELOAD", "ACC_PROFLIB")}
    try:
        proc = subprocess.run(
            [args.accprof, "check", "--format", "json", "-o", out, "--", exe],
            cwd=folder, env=env, stdin=subprocess.DEVNULL, capture_output=True,
            text=True, errors="replace", timeout=args.timeout, start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return "timeout", None, ""
    last = (proc.stderr.strip().splitlines() or [""])[-1]
    if not os.path.exists(out):
        # exit 0 without a report: no construct ran on the device, nothing to check.
        return f"exit {proc.returncode}", [] if proc.returncode == 0 else None, last
    with open(out) as f:
        return f"exit {proc.returncode}", json.load(f)["findings"], last


def with_lines(exe):
    """The subtest built again with -g beside `exe` (its recorded command, -g added)."""
    folder = os.path.dirname(exe)
    with open(os.path.join(folder, "command")) as f:
        cmd = shlex.split(f.read())
    exe_g = os.path.join(folder, "test-g")
    cmd[cmd.index("-o") + 1] = exe_g
    cmd.insert(1, "-g")
    proc = subprocess.run(cmd, cwd=folder, stdin=subprocess.DEVNULL, capture_output=True)
    return exe_g if proc.returncode == 0 and os.path.exists(exe_g) else None


def one(record, args):
    file, number = record["id"].split(":T")
    exe = os.path.join(args.work, "build", file, f"T{number}", "test")
    status, found, last = check(exe, args)
    if found:
        exe_g = with_lines(exe)
        if exe_g:
            status_g, found_g, last_g = check(exe_g, args)
            if found_g is not None:
                status, found, last = status_g, found_g, last_g
    return {"id": record["id"], "status": status, "findings": found, "stderr": last}


def main(argv):
    args = parse_args(argv)
    with open(os.path.join(args.work, "results.json")) as f:
        saved = json.load(f)
    passing = [
        r for r in saved["records"]
        if r.get("build") == "ok" and r["runs"].get("libgomp") and all(x["kind"] == "pass" for x in r["runs"]["libgomp"])
    ]
    if args.only:
        passing = [r for r in passing if any(fnmatch.fnmatch(r["id"], g) for g in args.only)]
    print(f"check-suite: {len(passing)} subtests libgomp passes, {args.jobs} at a time", flush=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = sorted(pool.map(lambda r: one(r, args), passing), key=lambda r: r["id"])
    write(results, saved["meta"], started, args)
    return 0


def git(*a):
    return subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True).stdout.strip()


def write(results, meta, started, args):
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "check-suite.tsv"), "w") as f:
        f.write("subtest\tstatus\tkind\tvariable\tfile\tline\tconstruct_line\toccurrences\n")
        for r in results:
            for x in r["findings"] or []:
                f.write("\t".join(str(v) for v in (
                    r["id"], r["status"], x["kind"], x["variable"], os.path.basename(x["file"] or ""),
                    x["line"], x["construct_line"], x.get("occurrences", 1))) + "\n")
            if not r["findings"]:
                f.write(f"{r['id']}\t{r['status']}\t\t\t\t\t\t\n")
    kinds = collections.Counter(x["kind"] for r in results for x in r["findings"] or [])
    with_findings = [r for r in results if r["findings"]]
    no_report = [r for r in results if r["findings"] is None]
    commit = git("rev-parse", "--short", "HEAD") + (" with uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else "")
    lines = [
        "# accprof check on the OpenACC validation suite",
        "",
        f"{started:%Y-%m-%d %H:%M} UTC, commit {commit}, {platform.machine()} {platform.system()}, {os.cpu_count()} CPUs;",
        f"suite {meta.get('suite', '?')}, builds of the conformance run of {meta.get('date', '?')} ({', '.join(meta.get('compilers', [])[:1])});",
        "`python3 scripts/conformance/check_suite.py`" + (f" {' '.join('--only ' + shlex.quote(g) for g in args.only)}" if args.only else "") + ".",
        "",
        f"Subtests libgomp passes: {len(results)}. Checked without a finding: {len(results) - len(with_findings) - len(no_report)};",
        f"with findings: {len(with_findings)}; no report (the program did not finish on the checker): {len(no_report)}.",
        "",
        "| kind | findings |",
        "|---|---|",
        *[f"| {k} | {n} |" for k, n in kinds.most_common()],
        "",
        "## Subtests with findings (kind of array at line; the construct's line)",
        "",
    ]
    for r in with_findings:
        said = "; ".join(
            f"{x['kind']} of {x['variable']} at {x['line'] if x['line'] is not None else '?'}"
            + (f" (construct {x['construct_line']})" if x.get("construct_line") else "")
            + (f" x{x['occurrences']}" if x.get("occurrences", 1) > 1 else "")
            for x in r["findings"]
        )
        lines.append(f"- {r['id']} ({r['status']}): {said}")
    if no_report:
        lines += ["", "## No report", ""]
        lines += [f"- {r['id']} ({r['status']}): {r['stderr'][:200]}" for r in no_report]
    with open(os.path.join(args.out, "check-suite.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"check-suite: {len(with_findings)} with findings, {len(no_report)} without a report; wrote {args.out}/check-suite.md", flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
