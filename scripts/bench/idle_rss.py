#!/usr/bin/env python3
"""Memory back when idle: `crates/hopless-malloc/tests/c/idle.c` under each allocator.

The program allocates 1 GiB (2 M blocks of 256 B, 512 of 1 MiB, every byte written), frees it all and
sleeps without calling the allocator, reading its resident size every quarter second. Each round runs
every library once, preloaded in its own process, the order rotating; the table shows the parent's
resident MiB above its baseline at the peak, 1 s and 2 s after the frees: median [min-max].

    scripts/bench/idle_rss.py [--rounds N]

Needs `cargo build --release -p hopless-malloc` first and gcc.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = "/usr/lib/x86_64-linux-gnu"
PEERS = [
    ("hopless", os.path.join(ROOT, "target/release/libhopless.so"), {}),
    ("glibc", None, {}),
    ("jemalloc", f"{LIB}/libjemalloc.so.2", {}),
    ("jemalloc, background thread", f"{LIB}/libjemalloc.so.2", {"MALLOC_CONF": "background_thread:true"}),
    ("mimalloc", f"{LIB}/libmimalloc.so.2", {}),
    ("tcmalloc", f"{LIB}/libtcmalloc_minimal.so.4", {}),
]


def run(exe, lib, extra):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if lib:
        env["LD_PRELOAD"] = lib
    env.update(extra)
    out = subprocess.run([exe], env=env, capture_output=True, text=True, check=True).stdout
    w = out.splitlines()[0].split()
    base, peak, after = int(w[2]), int(w[4]), [int(x) for x in w[6:]]
    return (peak - base) / 1024, (after[3] - base) / 1024, (after[7] - base) / 1024


def cell(xs):
    return f"{statistics.median(xs):.1f} [{min(xs):.1f}-{max(xs):.1f}]"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    peers = [p for p in PEERS if p[1] is None or os.path.exists(p[1])]
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "idle")
        subprocess.run(["cc", "-O2", "-o", exe, os.path.join(ROOT, "crates/hopless-malloc/tests/c/idle.c")], check=True)
        got = {name: [] for name, _, _ in peers}
        for r in range(args.rounds):
            for i in range(len(peers)):
                name, lib, extra = peers[(i + r) % len(peers)]
                got[name].append(run(exe, lib, extra))
                print(f"round {r + 1}/{args.rounds}: {name}", file=sys.stderr)
    print("| library | peak above baseline | 1 s after the frees | after 2 s |")
    print("|---|---|---|---|")
    for name, _, _ in peers:
        cols = list(zip(*got[name]))
        print(f"| {name} | {statistics.median(cols[0]):.0f} MiB | {cell(cols[1])} MiB | {cell(cols[2])} MiB |")


if __name__ == "__main__":
    main()
