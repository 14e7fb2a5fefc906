#!/usr/bin/env python3
"""redis-benchmark's default run (every default test: PING, SET, GET, INCR, LPUSH, RPUSH, LPOP, RPOP, SADD,
HSET, SPOP, ZADD, ZPOPMIN, LRANGE_100..600, MSET) against `hopless serve` and `redis-server`, the same
client for both, servers alternating: each run starts a fresh server process on a free loopback port,
runs redis-benchmark once per pipeline depth, and stops it. Prints requests per second per test,
median [min-max] over the runs, and hopless/redis ratios of the medians.

    scripts/bench/redis_benchmark.py [--runs 3] [--requests 100000] [--pipelines 1,16] [--threads 1]
                                     [--hopless target/release/hopless] [--json PATH]

Needs redis-server and redis-benchmark (Debian's redis-server and redis-tools) and a release build of
the `hopless` command (`cargo build --release`).
"""

import argparse
import csv
import io
import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port: int, proc: subprocess.Popen) -> None:
    for _ in range(400):
        if proc.poll() is not None:
            sys.exit(f"the server exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return
        except OSError:
            time.sleep(0.025)
    sys.exit(f"no server on port {port} after 10 s")


def start(kind: str, port: int, args) -> subprocess.Popen:
    if kind == "hopless":
        cmd = [args.hopless, "serve", "--port", str(port), "--threads", str(args.threads)]
    else:
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc


def run_benchmark(port: int, pipeline: int, requests: int) -> dict[str, float]:
    out = subprocess.run(
        ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-n", str(requests), "-P", str(pipeline), "--csv"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = list(csv.reader(io.StringIO(out)))
    return {r[0]: float(r[1]) for r in rows[1:] if len(r) > 1}


def version() -> str:
    return subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--threads", type=int, default=1, help="hopless serve --threads (Redis runs commands on one)")
    ap.add_argument("--hopless", default=str(Path(__file__).resolve().parents[2] / "target/release/hopless"))
    ap.add_argument("--json")
    args = ap.parse_args()
    pipelines = [int(p) for p in args.pipelines.split(",")]
    servers = ["hopless", "redis"]
    # results[pipeline][server][test] = [rps per run]
    results = {p: {s: {} for s in servers} for p in pipelines}
    tests: list[str] = []
    t0 = time.time()
    total = args.runs * len(servers)
    done = 0
    for run in range(args.runs):
        order = servers if run % 2 == 0 else servers[::-1]
        for kind in order:
            port = free_port()
            proc = start(kind, port, args)
            try:
                for p in pipelines:
                    for test, rps in run_benchmark(port, p, args.requests).items():
                        results[p][kind].setdefault(test, []).append(rps)
                        if test not in tests:
                            tests.append(test)
            finally:
                proc.terminate()
                proc.wait()
            done += 1
            print(f"[{done}/{total}] run {run + 1} {kind} done, {time.time() - t0:.0f} s", file=sys.stderr)

    def med(xs):
        return statistics.median(xs) if xs else float("nan")

    print(
        f"redis-benchmark default run, -n {args.requests}, 50 clients, pipelines {args.pipelines}; "
        f"hopless serve --threads {args.threads} against {version()} (--save \"\" --appendonly no); "
        f"requests/s, median [min-max] of {args.runs} runs (a fresh server each, servers alternating), "
        f"{time.time() - t0:.0f} s"
    )
    summary = []
    for p in pipelines:
        print(f"\n-P {p}")
        print(f"{'test':<40} {'hopless':>26} {'redis':>26} {'ratio':>7}")
        ratios = []
        for t in tests:
            h, r = results[p]["hopless"].get(t, []), results[p]["redis"].get(t, [])
            ratio = med(h) / med(r) if h and r else float("nan")
            ratios.append(ratio)
            fmt = lambda xs: f"{med(xs) / 1e3:.0f}k [{min(xs) / 1e3:.0f}k-{max(xs) / 1e3:.0f}k]" if xs else "-"
            print(f"{t:<40} {fmt(h):>26} {fmt(r):>26} {ratio:>6.2f}x")
            summary.append({"pipeline": p, "test": t, "hopless": h, "redis": r, "ratio": ratio})
        good = [x for x in ratios if x == x]
        if good:
            print(f"{'min ratio / geomean':<40} {min(good):.2f}x / {statistics.geometric_mean(good):.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
