#!/usr/bin/env python3
"""Checks one profiled run against CUPTI's raw totals and prints the result rows.

  check.py NAME REPORT.json ADVICE.json BARE.txt SOURCE|- EXPECT(data-region|none)

REPORT.json is `accprof report --format json`, ADVICE.json `accprof advise --format json` of the
trace; BARE.txt the totals of scripts/gpu/cupti_bare.so over a run of the same program. Counts
and bytes must agree exactly (the programs are deterministic), kernel device time within 3%
(a different run). The per-construct rows must add up to the trace's device totals (every
device record tied to a construct). Exit status 1 when a check fails."""
import json, sys

name, report_path, advice_path, bare_path, source, expect = sys.argv[1:7]
p = json.load(open(report_path))["traces"][0]["profile"]
advice = json.load(open(advice_path))
bare = {}
for line in open(bare_path):
    f = line.split()
    if len(f) == 4:
        bare[f[0]] = tuple(int(x) for x in f[1:])
s = p["summary"]
fails = []

def check(what, ok, got, want):
    print(f"  {'ok  ' if ok else 'FAIL'} {what}: accprof {got}, CUPTI {want}")
    if not ok:
        fails.append(what)

up, down, k = s["uploads"], s["downloads"], s["kernels"]
check("host->device copies", up["count"] == bare["htod"][0], up["count"], bare["htod"][0])
check("host->device bytes", s["upload_bytes"] == bare["htod"][1], s["upload_bytes"], bare["htod"][1])
check("device->host copies", down["count"] == bare["dtoh"][0], down["count"], bare["dtoh"][0])
check("device->host bytes", s["download_bytes"] == bare["dtoh"][1], s["download_bytes"], bare["dtoh"][1])
check("kernels", k["count"] == bare["kernel"][0], k["count"], bare["kernel"][0])
check("times are device times", k["source"] == "device" and up["source"] == "device", k["source"] + "/" + up["source"], "device")
kt, bt = k["total_ns"], bare["kernel"][2]
check("kernel device time within 3%", bt > 0 and abs(kt - bt) <= 0.03 * bt, f"{kt/1e6:.3f} ms", f"{bt/1e6:.3f} ms ({(kt-bt)/max(bt,1)*100:+.2f}%)")
check("memsets", s["memsets"]["count"] == bare["memset"][0], s["memsets"]["count"], bare["memset"][0])

# Per construct: the copies and kernels under each construct add up to the totals.
rows = []
tot = {"Upload": [0, 0], "Download": [0, 0], "Launch": [0, 0]}
for c in p["constructs"]:
    per = {}
    for ch in c["children"]:
        kind = {"upload": "Upload", "download": "Download", "launch": "Launch"}.get(ch["kind"])
        if kind:
            per.setdefault(kind, [0, 0, 0, ""])
            per[kind][0] += ch["count"]
            per[kind][1] += ch["bytes"]
            per[kind][2] += ch["time"]["total_ns"]
            per[kind][3] = ch["time"]["source"]
            tot[kind][0] += ch["count"]
            tot[kind][1] += ch["bytes"]
    if per:
        rows.append((c["location"].get("line"), c["kind"], per))
print(f"  per construct ({name}):")
for line, kind, per in sorted(rows, key=lambda r: (r[0] or 0, r[1])):
    parts = []
    for kk, word in (("Upload", "copyin"), ("Download", "copyout"), ("Launch", "kernels")):
        if kk in per:
            n, b, t, src = per[kk]
            parts.append(f"{word} {n} x ({b/2**20:.1f} MiB) {t/1e6:.3f} ms [{src}]")
    print(f"    line {line} {kind}: " + "; ".join(parts))
outside = s["device_records_outside"]
# Every device record is tied to a construct (a runtime's staged copies to the transfer it
# reported, which the per-construct rows count once, as the runtime reported it).
check("every device record tied to a construct", outside == 0 and s["device_records"] > 0,
      f"{s['device_records']} device records, {outside} outside every construct", "0 outside")

# Advice: the naive version gets the data region at its line, with the arrays named.
dr = [f for f in advice["findings"] if f["rule"] == "data_region"] if isinstance(advice, dict) and "findings" in advice else \
     [f for t in advice.get("traces", []) for f in (t.get("findings", []) if isinstance(t, dict) else []) if f["rule"] == "data_region"]
if expect == "data-region":
    want_line = None
    if source != "-":
        lines = open(source).read().splitlines()
        first = next(i for i, l in enumerate(lines) if l.strip().startswith("#pragma acc parallel loop"))
        # The region wraps the loop statement that repeats the constructs (issue 23): the
        # innermost `while`/`for`/`do` above the first construct.
        want_line = next(i + 1 for i in range(first - 1, -1, -1)
                         if lines[i].strip().startswith(("while", "for", "do")))
    f = dr[0] if dr else None
    named = f is not None and "A" in f["change"] and "Anew" in f["change"]
    at = f and (want_line is None or f["location"]["line"] == want_line)
    check("advice: data region, arrays named, at the loop around the constructs", bool(f and named and at),
          (f["change"] + " @ line " + str(f["location"]["line"])) if f else "no data_region finding", f"A, Anew @ line {want_line}")
else:
    check("advice: no data region finding", not dr, f"{len(dr)} data_region findings", 0)
print(f"  {name}: {'PASS' if not fails else 'FAIL: ' + ', '.join(fails)}")
sys.exit(1 if fails else 0)
