#!/usr/bin/env python3
"""What the debug code costs: `hopless bench alloc` on hopless in four configurations, alternating.

  plain     a build without the `debug` feature
  compiled  a build with it, modes off (the fast path's one extra load and branch)
  debug     that build with HOPLESS_DEBUG=1
  hardened  that build with HOPLESS_HARDENED=1

Each round runs every configuration once (`bench alloc --quick --rounds 1 --peers hopless`), the order
rotating; the table shows each workload's median ns/op and its ratio to `plain`.

    scripts/bench/debug_cost.py [--rounds N] [--json PATH]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build(target_dir, features):
    cmd = ["cargo", "build", "--release", "-p", "hopless-cli", "--target-dir", target_dir]
    if features:
        cmd += ["--features", features]
    print("building:", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, cwd=ROOT, check=True)
    return os.path.join(target_dir, "release", "hopless")


def run(binary, env_extra):
    env = dict(os.environ)
    env.pop("HOPLESS_DEBUG", None)
    env.pop("HOPLESS_HARDENED", None)
    env.update(env_extra)
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([binary, "bench", "alloc", "--quick", "--rounds", "1", "--peers", "hopless", "--json", f.name],
                       env=env, check=True, capture_output=True)
        return {r["workload"]: r["ns_per_op"] for r in json.load(open(f.name))["results"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json")
    args = ap.parse_args()
    plain = build(os.path.join(ROOT, "target"), None)
    compiled = build(os.path.join(ROOT, "target", "with-debug"), "hopless/debug")
    configs = {
        "plain": (plain, {}),
        "compiled": (compiled, {}),
        "debug": (compiled, {"HOPLESS_DEBUG": "1"}),
        "hardened": (compiled, {"HOPLESS_HARDENED": "1"}),
    }
    names = list(configs)
    samples = {n: {} for n in names}
    for r in range(args.rounds):
        for k in range(len(names)):
            n = names[(k + r) % len(names)]
            for w, v in run(*configs[n]).items():
                samples[n].setdefault(w, []).append(v)
            print(f"\rround {r + 1}/{args.rounds} {n:<9}", end="", file=sys.stderr)
    print(file=sys.stderr)
    workloads = list(samples["plain"])
    med = {n: {w: statistics.median(samples[n][w]) for w in workloads} for n in names}
    print(f"hopless bench alloc (hopless only), median of {args.rounds} rounds, configurations alternating\n")
    print(f"{'workload (ns/op)':<18}" + "".join(f"{n:>20}" for n in names))
    for w in workloads:
        base = med["plain"][w]
        print(f"{w:<18}" + "".join(f"{med[n][w]:>11.2f} ({med[n][w] / base:5.2f}x)" for n in names))
    geo = {n: math.exp(sum(math.log(med[n][w] / med["plain"][w]) for w in workloads) / len(workloads)) for n in names}
    print(f"{'geomean vs plain':<18}" + "".join(f"{geo[n]:>19.3f}x" for n in names))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": [{"config": n, "workload": w, "ns_per_op": med[n][w]} for n in names for w in workloads]}, f, indent=2)


if __name__ == "__main__":
    main()
