#!/usr/bin/env python3
"""Compares device records from CUDA events (libaccprof ACCPROF_CUDA_EVENTS) with CUPTI's.

usage: compare_cuda_events.py NAME CUPTI.jsonl EVENTS.jsonl BOTH.jsonl
Each file is `accprof dump` of a trace: CUPTI only, CUDA events only, and both in one run.
CUPTI's records carry a correlation_id; records from CUDA events do not. Prints per-kernel
device time, copy counts, bytes and device time per direction, and, for the run with both,
the kernel-by-kernel difference (same launches, measured both ways).
"""
import json, statistics, sys

def load(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]

def device(recs, cupti):
    return [r for r in recs if r.get("event_type") in (1001, 1002) and (("correlation_id" in r) == cupti)]

def summary(recs):
    k, c = {}, {}
    for r in recs:
        if r["event_type"] == 1001:
            k.setdefault(r.get("kernel_name", "?"), []).append(r["duration_ns"])
        else:
            d = {1: "HtoD", 2: "DtoH"}.get(r.get("copy_kind", 0) & 0xFF, "other")
            n, b, t = c.get(d, (0, 0, 0))
            c[d] = (n + 1, b + r.get("bytes", 0), t + r["duration_ns"])
    return k, c

def pct(a, b):
    return (a / b - 1) * 100 if b else float("nan")

name, cupti_p, ev_p, both_p = sys.argv[1:5]
ref_k, ref_c = summary(device(load(cupti_p), True))
ev_k, ev_c = summary(device(load(ev_p), False))
print(f"== {name}: CUDA events (ACCPROF_CUPTI=off ACCPROF_CUDA_EVENTS=on) against CUPTI (separate runs)")
for kn in sorted(set(ref_k) | set(ev_k)):
    a, b = ev_k.get(kn, []), ref_k.get(kn, [])
    if a and b:
        print(f"  kernel {kn}: {len(a)} vs {len(b)} launches; total {sum(a)/1e6:.3f} vs {sum(b)/1e6:.3f} ms ({pct(sum(a), sum(b)):+.2f}%); median {statistics.median(a)/1e3:.1f} vs {statistics.median(b)/1e3:.1f} us ({pct(statistics.median(a), statistics.median(b)):+.2f}%)")
    else:
        print(f"  kernel {kn}: {len(a)} (events) vs {len(b)} (CUPTI) launches")
for d in ("HtoD", "DtoH", "other"):
    if d in ev_c or d in ref_c:
        (n1, b1, t1), (n2, b2, t2) = ev_c.get(d, (0, 0, 0)), ref_c.get(d, (0, 0, 0))
        print(f"  copies {d}: {n1} vs {n2} records, {b1} vs {b2} bytes ({'=' if b1 == b2 else 'DIFFERENT'}), device time {t1/1e6:.3f} vs {t2/1e6:.3f} ms ({pct(t1, t2):+.2f}%)")
both = load(both_p)
bk_ev, bc_ev = summary(device(both, False))
bk_cu, bc_cu = summary(device(both, True))
print(f"== {name}: both in one run (ACCPROF_CUPTI=on ACCPROF_CUDA_EVENTS=on), kernel by kernel")
for kn in sorted(set(bk_ev) & set(bk_cu)):
    a, b = bk_ev[kn], bk_cu[kn]
    if len(a) == len(b):
        diffs = [x - y for x, y in zip(a, b)]
        print(f"  kernel {kn}: {len(a)} launches; events minus CUPTI per launch: median {statistics.median(diffs)/1e3:+.2f} us, max {max(diffs)/1e3:+.2f} us; totals {sum(a)/1e6:.3f} vs {sum(b)/1e6:.3f} ms ({pct(sum(a), sum(b)):+.2f}%)")
    else:
        print(f"  kernel {kn}: {len(a)} vs {len(b)} launches")
for d in ("HtoD", "DtoH"):
    (n1, b1, t1), (n2, b2, t2) = bc_ev.get(d, (0, 0, 0)), bc_cu.get(d, (0, 0, 0))
    print(f"  copies {d}: {n1} vs {n2} records, {b1} vs {b2} bytes, device time {t1/1e6:.3f} vs {t2/1e6:.3f} ms ({pct(t1, t2):+.2f}%)")
ok = bool(ev_k) and all(len(ev_k.get(k, [])) == len(v) for k, v in ref_k.items())
print(f"  {name}: {'PASS' if ok else 'FAIL'}: every kernel launch CUPTI saw has a CUDA-event record")
sys.exit(0 if ok else 1)
