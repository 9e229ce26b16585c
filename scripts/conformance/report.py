"""The comparison's two files: conformance.tsv (one row per subtest, for diffing runs) and
conformance.md (totals, and every subtest whose outcome differs between runtimes, by category).

A subtest's outcome on a runtime is the kind of its run (outcome.KINDS), or, where reruns
disagreed, the kinds seen joined by `/` (flaky). Categories come from the outcomes; triage.tsv
adds what only reading the test tells (a test invalid on a discrete device, the cause of a
crash) and may set the category, for the outcomes it was read for.
"""

import fnmatch
import os
import re
from collections import Counter

from outcome import CRASH, ERROR, FAIL, HANG, KINDS, PASS, REFUSED, RUNTIMES, WARN

# Category tokens (the TSV's), in the report's order, with a heading and what each means.
CATEGORIES = {
    "refused": ("Refused", "The shim stopped with its one line naming what it does not support."),
    "crash": ("Crash", "Killed by a signal with no runtime error message."),
    "hang": ("Hang", "Still running at the timeout."),
    "runtime-error": (
        "Runtime error",
        "The shim stopped the program with an OpenACC runtime error that libgomp does not raise.",
    ),
    "wrong-answer": (
        "Wrong answer",
        "The subtest's own check failed on the shim (non-zero exit, no runtime message), and the test is valid.",
    ),
    "invalid": (
        "Invalid on a discrete device",
        "Pass on libgomp's host fallback only because host and device share memory there, or because "
        "everything runs in order there: each reason was verified by reading the test and what GCC "
        "lowers it to (`-fdump-tree-omplower`).",
    ),
    "test-bug": (
        "Wrong on any runtime",
        "The test itself is wrong (an uninitialised variable, an expected value that contradicts the "
        "specification); verified by reading it.",
    ),
    "warning": (
        "Warning on stderr",
        "Exit status 0 with a line on stderr, which the suite counts as a failure.",
    ),
    "flaky": ("Flaky", "Outcomes differ between reruns of the same binary on the same runtime."),
    "tool-changed": ("Tool-changed outcome", "The shim alone and the shim with libaccprof loaded differ steadily."),
    "shim-only-pass": (
        "Passes on the shim only",
        "Fail on libgomp's host fallback (a test that needs separate device memory, or a routine "
        "libgomp refuses on a shared-memory device) and pass on the shim.",
    ),
    "both-fail": ("Fail differently on both", "Neither runtime passes, and their outcomes differ."),
}

# Categories that are the runtime's to fix: a subtest libgomp passes and the shim does not.
TO_FIX = ("refused", "crash", "hang", "runtime-error", "wrong-answer", "flaky", "tool-changed")

SHIM_KIND_CATEGORY = {
    REFUSED: "refused",
    CRASH: "crash",
    HANG: "hang",
    ERROR: "runtime-error",
    FAIL: "wrong-answer",
    WARN: "warning",
}
CATEGORY_KIND = {c: k for k, c in SHIM_KIND_CATEGORY.items()}


def read_triage(path):
    """[(subtest or glob, outcomes read for, category or "", reason)] from triage.tsv (`#` starts
    a comment line). A glob (`file.F90:*`) applies to every subtest it matches; an exact name wins
    over globs. A note applies only while the shim's and shim+tool's outcomes are among those it
    was read for (`*`: any): another outcome needs reading again, and may get a note of its own."""
    notes = []
    if not os.path.exists(path):
        return notes
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) != 4 or (cols[2] and cols[2] not in CATEGORIES):
                raise SystemExit(
                    f"conformance: {path}:{number}: want subtest, outcomes, category (one of "
                    f"{', '.join(CATEGORIES)} or empty) and reason, tab-separated"
                )
            notes.append(tuple(cols))
    return notes


def note_for(subtest, notes, shim, tool):
    """The note for `subtest` read for these outcomes, else (None, whether some note was read
    for others). An exact name wins over globs; a subtest may have one note per outcome."""
    exact = [n for n in notes if n[0] == subtest]
    named = exact or [n for n in notes if fnmatch.fnmatchcase(subtest, n[0])]
    seen = set(shim.split("/")) | set(tool.split("/"))
    for n in named:
        # A note naming an outcome's category (crash, ...) needs that outcome among the runs.
        shows = CATEGORY_KIND.get(n[2])
        if (n[1] == "*" or seen <= set(n[1].split("/"))) and (shows is None or shows in seen):
            return n, False
    return None, bool(named)


def outcome_of(runs):
    kinds = sorted({r["kind"] for r in runs}, key=KINDS.index)
    return "/".join(kinds)


def detail_of(runs):
    """The reason of the first run that did not pass."""
    for r in runs:
        if r["detail"]:
            return r["detail"]
    return ""


def categorize(rec, notes):
    """(categories, reason) of one subtest; ([], "") where every runtime agrees."""
    if rec["build"] != "ok":
        return ["nobuild"], rec["build_detail"]
    g, s, t = (outcome_of(rec["runs"][rt]) for rt in RUNTIMES)
    cats, reasons = [], []
    flaky = "/" in g or "/" in s or "/" in t
    if flaky:
        cats.append("flaky")
    elif g != s:
        if g == PASS:
            cats.append(SHIM_KIND_CATEGORY[s])
        elif s == PASS:
            cats.append("shim-only-pass")
        else:
            cats.append("both-fail")
    if g != s:
        reasons.append(detail_of(rec["runs"]["shim"]) or "libgomp: " + detail_of(rec["runs"]["libgomp"]))
    if s != t and not flaky:
        cats.append("tool-changed")
    if s != t:
        reasons.append(f"shim+tool: {detail_of(rec['runs']['shim+tool']) or t}")
    if not cats:
        return [], ""
    if "no_drop_check" in rec:
        reasons.append(f"with ACCSHIM_DROP_CHECK=0 the shim's run: {rec['no_drop_check']}")
    note, _ = note_for(rec["id"], notes, s, t)
    if note:
        if note[2]:
            cats[0] = note[2]
            cats = list(dict.fromkeys(cats))
        return cats, note[3]
    return cats, "; ".join(r for r in reasons if r)


# Heap and stack addresses in runtime messages change from run to run; the TSV is for diffing.
ADDRESS = re.compile(r"0x[0-9a-f]{8,}")


def tsv_cell(text):
    return ADDRESS.sub("0x...", text).replace("\t", " ").replace("\n", " ")


def md_cell(text):
    return ADDRESS.sub("0x...", text).replace("|", "\\|").replace("\n", " ")


def write(records, meta, notes, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    rows = []
    for rec in records:
        cats, reason = categorize(rec, notes)
        outs = [outcome_of(rec["runs"][rt]) if rec["build"] == "ok" else "nobuild" for rt in RUNTIMES]
        rows.append((rec, outs, cats, reason))
    with open(os.path.join(out_dir, "conformance.tsv"), "w", encoding="utf-8") as f:
        f.write("subtest\tlibgomp\tshim\tshim+tool\tcategory\treason\n")
        for rec, outs, cats, reason in rows:
            f.write("\t".join([rec["id"], *outs, ",".join(cats), tsv_cell(reason)]) + "\n")
    md_path = os.path.join(out_dir, "conformance.md")
    history = earlier_runs(md_path, meta)
    with open(md_path, "w", encoding="utf-8") as f:
        f.write(markdown(rows, meta, notes))
        if history:
            f.write("\n## Earlier runs\n\n" + "\n".join(history) + "\n")


RUN_LINE = re.compile(r"^Run (\d{4}-\d\d-\d\d \d\d:\d\d UTC), (.*?), OpenACCUserGroup")
SUMMARY_LINE = re.compile(r"^Of the \d+ subtests libgomp passes")


def earlier_runs(md_path, meta):
    """The history kept by the report `md_path` holds now: its own run's summary first (unless
    it is the run being written again), then its earlier runs."""
    if not os.path.exists(md_path):
        return []
    with open(md_path, encoding="utf-8") as f:
        text = f.read().splitlines()
    run = next((m for m in map(RUN_LINE.match, text) if m), None)
    summary = next((line for line in text if SUMMARY_LINE.match(line)), None)
    kept = []
    if "## Earlier runs" in text:
        kept = [line for line in text[text.index("## Earlier runs") + 1:] if line.startswith("- ")]
    if run and summary and run.group(1) != meta["date"]:
        kept.insert(0, f"- {run.group(1)}, {run.group(2)}: {summary}")
    return kept


def markdown(rows, meta, notes):
    built = [r for r in rows if r[0]["build"] == "ok"]
    rejected = [r for r in rows if r[0]["build"] != "ok"]
    lines = [
        "# The OpenACC validation suite on libgomp, the shim, and the shim with libaccprof",
        "",
        f"Run {meta['date']}, accprof commit {meta['commit']}, libaccshim.so and libaccprof.so "
        f"{meta.get('libraries', 'of that commit')}, {meta['suite']}; "
        f"{'; '.join(dict.fromkeys(meta['compilers']))}; {meta['machine']}; "
        f"{meta['jobs']} subtests at a time, {meta['timeout']:g} s timeout, "
        f"{meta['reruns']} reruns where runtimes disagree, SEED={meta['seed']}; "
        f"{meta['seconds'] / 60:.0f} minutes. Command: `{meta['command']}`.",
        "",
        "Each subtest is built alone, as the suite's infrastructure.py builds it (the suite's flags, "
        "every other subtest defined out), and run three times: on libgomp's host fallback (GCC's "
        "own runtime, no GPU), on the shim's emulated discrete device (`LD_PRELOAD=libaccshim.so`), "
        "and on the shim with libaccprof recording (as `accprof run --runtime shim`). A run passes "
        "when it exits 0 with nothing on stderr, the suite's rule. Every row is in "
        "[conformance.tsv](conformance.tsv); the reasons read from the tests are in "
        "scripts/conformance/triage.tsv, which the script applies.",
        "",
        f"{len(rows)} subtests; GCC built {len(built)} ({by_language(built)}) and rejected "
        f"{len(rejected)} ({by_language(rejected)}; GCC 12 ignores or rejects much of OpenACC 2.7-3.x, "
        "e.g. `declare` and `routine` tests, and libgomp lacks routines such as acc_get_default_async; "
        "the TSV gives each compiler's first error).",
        "",
        "## Totals",
        "",
        "| runtime | " + " | ".join(KINDS) + " | flaky | exit 0 (pass + warn) |",
        "|---" * (len(KINDS) + 3) + "|",
    ]
    for i, rt in enumerate(RUNTIMES):
        counts = Counter(r[1][i] if "/" not in r[1][i] else "flaky" for r in built)
        lines.append(
            f"| {rt} | " + " | ".join(str(counts[k]) for k in (*KINDS, "flaky")) + f" | {counts[PASS] + counts[WARN]} |"
        )
    gomp_pass = [r for r in built if r[1][0] == PASS]
    lost = [r for r in gomp_pass if r[1][1] != PASS]
    lost_by = Counter(r[2][0] for r in lost)
    to_fix = sum(n for c, n in lost_by.items() if c in TO_FIX)
    lines += [
        "",
        f"Of the {len(gomp_pass)} subtests libgomp passes, the shim does not pass {len(lost)}: "
        f"{to_fix} for the runtime to fix ("
        + ", ".join(f"{CATEGORIES[c][0].lower()} {lost_by[c]}" for c in TO_FIX if lost_by[c])
        + f"), {lost_by['invalid']} invalid on a discrete device, {lost_by['test-bug']} wrong on any runtime, "
        f"{lost_by['warning']} only warned on stderr. "
        f"With the tool loaded, {sum('tool-changed' in r[2] for r in built)} outcomes change steadily "
        f"and {sum(r[1][1] != r[1][2] for r in built)} differ in all (flaky ones included).",
    ]
    no_trace = [r[0]["id"] for r in built if r[1][2] == PASS and any(x["trace_bytes"] == 0 for x in r[0]["runs"]["shim+tool"])]
    if no_trace:
        lines.append(
            f"{len(no_trace)} runs with the tool passed but wrote no trace (libaccprof writes none when the "
            f"runtime dispatched no event), e.g. {', '.join(no_trace[:4])}."
        )
    lines += ["", "## Subtests whose outcomes differ, by category", ""]
    by_cat = Counter(c for r in built for c in r[2])
    lines.append(", ".join(f"{CATEGORIES[c][0].lower()}: {by_cat[c]}" for c in CATEGORIES if by_cat[c]) or "None.")
    for cat, (heading, meaning) in CATEGORIES.items():
        members = [r for r in built if cat in r[2]]
        if not members:
            continue
        lines += ["", f"### {heading} ({len(members)})", "", meaning, "",
                  "| subtest | libgomp | shim | shim+tool | reason |", "|---|---|---|---|---|"]
        for rec, outs, _, reason in members:
            lines.append(f"| {rec['id']} | " + " | ".join(outs) + f" | {md_cell(reason)} |")
    differing = {r[0]["id"] for r in built if r[2]}
    ran = {r[0]["id"] for r in rows}
    stale = sorted(n[0] for n in notes if n[0] in ran and n[0] not in differing)
    if stale:
        lines += ["", "## Triage notes for subtests that no longer differ", "",
                  "Remove them from scripts/conformance/triage.tsv: " + ", ".join(stale) + "."]
    unread = []
    for rec, outs, cats, _ in built:
        note, other = note_for(rec["id"], notes, outs[1], outs[2])
        if cats and note is None and other:
            unread.append(f"{rec['id']} (now {outs[1]}, and {outs[2]} with the tool)")
    if unread:
        lines += ["", "## Triage notes read for other outcomes", "",
                  "Their notes in scripts/conformance/triage.tsv were read for other outcomes, so the categories "
                  "above are computed and the notes not applied; read the tests again: "
                  + "; ".join(unread) + "."]
    return "\n".join(lines) + "\n"


def by_language(rows):
    c = Counter(r[0]["language"] for r in rows)
    return ", ".join(f"{lang} {c[lang]}" for lang in ("c", "c++", "fortran"))
