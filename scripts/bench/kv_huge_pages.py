#!/usr/bin/env python3
"""The kv workload with hopless's huge-page settings side by side: `hopless bench kv`'s own child runs
(2 threads, 1 M keys, 2 M measured ops, the fixed hash seed), one fresh process per run, configurations
alternating (forward, then backward), each peer at its own default.

    scripts/bench/kv_huge_pages.py [--runs N] [--only a,b,...] [--exe PATH]

Configurations: system, jemalloc, mimalloc (each with its huge-page variable removed), hl-off
(HOPLESS_HUGE_PAGES=0), hl-auto (the default), hl-on (HOPLESS_HUGE_PAGES=1), and the same three for
dashmap over hopless (dm-off, dm-auto, dm-on). Prints Mops/s as median [min-max], the ratio to glibc's
median, and the medians of bytes per key, peak RSS and p99.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HUGE_VARS = ("GLIBC_TUNABLES", "_RJEM_MALLOC_CONF", "MIMALLOC_ALLOW_THP", "HOPLESS_HUGE_PAGES")
CONFIGS = [
    ("system", "hopless-kv:system", {}),
    ("jemalloc", "hopless-kv:jemalloc", {}),
    ("mimalloc", "hopless-kv:mimalloc", {}),
    ("hl-off", "hopless-kv:hopless", {"HOPLESS_HUGE_PAGES": "0"}),
    ("hl-auto", "hopless-kv:hopless", {}),
    ("hl-on", "hopless-kv:hopless", {"HOPLESS_HUGE_PAGES": "1"}),
    ("dm-off", "dashmap:hopless", {"HOPLESS_HUGE_PAGES": "0"}),
    ("dm-auto", "dashmap:hopless", {}),
    ("dm-on", "dashmap:hopless", {"HOPLESS_HUGE_PAGES": "1"}),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--only", default="system,jemalloc,mimalloc,hl-off,hl-auto,hl-on")
    ap.add_argument("--exe", default=os.path.join(os.path.dirname(__file__), "..", "..", "target", "release", "hopless"))
    a = ap.parse_args()
    only = a.only.split(",")
    configs = [c for c in CONFIGS if c[0] in only]
    base = {k: v for k, v in os.environ.items() if k not in HUGE_VARS}
    res = {c[0]: [] for c in configs}
    for r in range(a.runs):
        for name, spec, env in configs if r % 2 == 0 else configs[::-1]:
            out = subprocess.run(
                [a.exe, "bench", "kv", "--child", spec, "--threads", "2", "--keys", "1000000",
                 "--ops", "2000000", "--hash-seed", "0x5eed"],
                env={**base, **env}, capture_output=True, text=True, check=True)
            res[name].append(json.loads(out.stdout))
        print(f"run {r + 1}/{a.runs}", file=sys.stderr, flush=True)
    glibc = statistics.median(x["ops_per_sec"] for x in res["system"]) if "system" in res else None
    for name, runs in res.items():
        ops = [x["ops_per_sec"] / 1e6 for x in runs]
        rel = f"{statistics.median(ops) * 1e6 / glibc:.2f}x glibc" if glibc else ""
        print(f"{name:10} {statistics.median(ops):.3f} [{min(ops):.3f}-{max(ops):.3f}] Mops/s  {rel:>12}  "
              f"B/key {statistics.median(x['bytes_per_key'] for x in runs):.1f}  "
              f"peak {statistics.median(x['peak_rss_bytes'] for x in runs) / 2**20:.0f} MiB  "
              f"p99 {statistics.median(x['p99_ns'] for x in runs):.0f} ns")


if __name__ == "__main__":
    main()
