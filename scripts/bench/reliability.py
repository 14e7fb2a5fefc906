#!/usr/bin/env python3
"""The drop-in reliability figures, measured side by side: large-block growth by realloc, the memory
2000 joined threads leave and the cost of a short-lived thread, under glibc, jemalloc, mimalloc and
hopless (each preloaded, alternating).

    scripts/bench/reliability.py [--rounds N] [--so PATH] [--before PATH]

Runs three cases of crates/hopless-malloc/tests/c/reliability.c (compiled with -O2):
  realloc_grow  a buffer grown from 1 byte to 64 MiB in 4 KiB steps, every new byte written, then shrunk
                back in 4 KiB steps (seconds for the growth, and for the shrink);
  thread_rss    2000 threads alive at once, each with one 64-byte block, then joined (VmRSS after, kB);
  thread_churn  2000 short-lived threads one after another (64 blocks of 16..3000 bytes each, contents
                checked) while another thread keeps a core busy (microseconds per thread).
Prints the median of the rounds with the min-max beside it.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBDIR = "/usr/lib/x86_64-linux-gnu"


def run(binary, case, so):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if so:
        env["LD_PRELOAD"] = so
    p = subprocess.run([binary, case], env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"{case} under {so or 'glibc'}: exit {p.returncode}\n{p.stderr[-2000:]}")
    values = {}
    for line in p.stderr.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                values[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return values


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--so", default=os.path.join(ROOT, "target/release/libhopless.so"))
    ap.add_argument("--before", help="an earlier libhopless.so, run as hopless-before")
    args = ap.parse_args()
    peers = {"glibc": None}
    for name, lib in [("jemalloc", "libjemalloc.so.2"), ("mimalloc", "libmimalloc.so.2")]:
        if os.path.exists(os.path.join(LIBDIR, lib)):
            peers[name] = os.path.join(LIBDIR, lib)
    peers["hopless"] = args.so
    if args.before:
        peers["hopless-before"] = args.before
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "reliability")
        src = os.path.join(ROOT, "crates/hopless-malloc/tests/c/reliability.c")
        subprocess.run(["cc", "-O2", "-pthread", "-w", src, "-o", binary, "-ldl"], check=True)
        rows = {
            ("realloc_grow", "grow_seconds"): {},
            ("realloc_grow", "shrink_seconds"): {},
            ("thread_rss", "vmrss_kb"): {},
            ("thread_churn", "us_per_thread"): {},
        }
        names = list(peers)
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                for case in ("realloc_grow", "thread_rss", "thread_churn"):
                    try:
                        got = run(binary, case, peers[name])
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        print(f"{name}: {e}", file=sys.stderr)
                        got = {}
                    for (c, key), table in rows.items():
                        if c == case and key in got:
                            table.setdefault(name, []).append(got[key])
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"median of {args.rounds} rounds (min-max), allocators alternating")
    print(f"{'measure':<28}" + "".join(f"{n:>26}" for n in names))
    for (case, key), table in rows.items():
        line = f"{case + ' ' + key:<28}"
        for n in names:
            v = table.get(n, [])
            if v:
                line += f"{statistics.median(v):>12.3f} ({min(v):.3f}-{max(v):.3f})"
            else:
                line += f"{'failed':>26}"
        print(line)


if __name__ == "__main__":
    main()
