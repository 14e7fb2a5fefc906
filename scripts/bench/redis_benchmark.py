#!/usr/bin/env python3
"""redis-benchmark's default run (every default test: PING, SET, GET, INCR, LPUSH, RPUSH, LPOP, RPOP, SADD,
HSET, SPOP, ZADD, ZPOPMIN, LRANGE_100..600, MSET) against `hopless serve` and `redis-server`, the same
client for both, servers alternating: each run starts a fresh server process on a free loopback port,
runs redis-benchmark once per pipeline depth, and stops it. Prints requests per second per test,
median [min-max] over the runs, and hopless/redis ratios of the medians.

With --pin, the question a user sizing a machine asks: each server on cores of its own (`taskset`; hopless
serve --threads N on cores 0..N-1, redis-server on core 0, or 0..N-1 with --io-threads N when N > 1) and
redis-benchmark on the cores left, one test per redis-benchmark call, and for each test the server's CPU
time per request read from /proc/PID/stat (user + system, every thread) around the call. The figures are
then per core: requests/s with the server's cores busy, and CPU microseconds per request.

    scripts/bench/redis_benchmark.py [--runs 3] [--requests 100000] [--pipelines 1,16] [--threads 1]
                                     [--pin] [--random-keys N] [--client-threads N]
                                     [--hopless target/release/hopless] [--json PATH]
                                     [--before OLD.json [--tolerance 0.30]] [--compare NEW.json]

The regression guard: --before compares this run's figures with an earlier run's --json, test by test,
on the ratio against Redis (measured beside it in each run, so a slower or faster machine cancels out):
CPU per request where the runs were pinned, requests/s otherwise. A test whose ratio moved the wrong way by
more than --tolerance is flagged and the exit status is 1. --compare NEW.json does the same for two saved
runs without running anything.

Needs redis-server and redis-benchmark (Debian's redis-server and redis-tools) and a release build of
the `hopless` command (`cargo build --release`).
"""

import argparse
import csv
import io
import json
import os
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


# redis-benchmark's default tests, by the names `-t` takes (each selects one row of its output).
DEFAULT_TESTS = ["ping_inline", "ping_mbulk", "set", "get", "incr", "lpush", "rpush", "lpop", "rpop", "sadd",
                 "hset", "spop", "zadd", "zpopmin", "lrange_100", "lrange_300", "lrange_500", "lrange_600", "mset"]


def server_cores(args) -> str:
    return ",".join(str(c) for c in range(args.threads))


def client_cores(args) -> str:
    return ",".join(str(c) for c in range(args.threads, os.cpu_count() or 1))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, all its threads, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(kind: str, port: int, args) -> subprocess.Popen:
    if kind == "hopless":
        cmd = [args.hopless, "serve", "--port", str(port), "--threads", str(args.threads), "--save", ""]
    else:
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        if args.threads > 1:
            cmd += ["--io-threads", str(args.threads), "--io-threads-do-reads", "yes"]
    if args.pin:
        cmd = ["taskset", "-c", server_cores(args)] + cmd
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_ready(port, proc)
    return proc


def run_benchmark(port: int, pipeline: int, args, test: str | None = None) -> dict[str, float]:
    cmd = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-n", str(args.requests), "-P", str(pipeline),
           "--csv"]
    if args.random_keys:
        cmd += ["-r", str(args.random_keys)]
    if args.client_threads:
        cmd += ["--threads", str(args.client_threads)]
    if test:
        cmd += ["-t", test]
    if args.pin:
        cmd = ["taskset", "-c", client_cores(args)] + cmd
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = list(csv.reader(io.StringIO(out)))
    return {r[0]: float(r[1]) for r in rows[1:] if len(r) > 1}


def run_pinned(port: int, pipeline: int, args, pid: int) -> dict[str, tuple[float, float]]:
    """Per test: (requests/s, server CPU microseconds per request)."""
    out = {}
    for test in DEFAULT_TESTS:
        before = cpu_seconds(pid)
        rows = run_benchmark(port, pipeline, args, test)
        spent = cpu_seconds(pid) - before
        # One call can time more than one row (an LRANGE test first fills its list with LPUSH): the CPU
        # is shared between them in proportion to each row's time, the server's core being busy in both.
        # A request is what the client counts (MSET's ten keys are one).
        seconds = {name: args.requests / rps for name, rps in rows.items() if rps > 0}
        total = sum(seconds.values())
        for name, rps in rows.items():
            share = seconds.get(name, 0.0) / total if total > 0 else 0.0
            out[name] = (rps, spent * share / args.requests * 1e6)
    return out


def version() -> str:
    return subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--pipelines", default="1,16")
    ap.add_argument("--threads", type=int, default=1, help="hopless serve --threads (Redis runs commands on one)")
    ap.add_argument("--pin", action="store_true", help="servers on cores 0..threads-1, the client on the rest")
    ap.add_argument("--random-keys", type=int, default=0, help="redis-benchmark -r N")
    ap.add_argument("--client-threads", type=int, default=0, help="redis-benchmark --threads N")
    ap.add_argument("--hopless", default=str(Path(__file__).resolve().parents[2] / "target/release/hopless"))
    ap.add_argument("--json")
    ap.add_argument("--before", help="an earlier run's --json to compare this one with")
    ap.add_argument("--tolerance", type=float, default=0.30, help="a ratio change flagged as a regression")
    ap.add_argument("--compare", help="with --before: a saved run to compare, instead of running")
    args = ap.parse_args()
    if args.compare:
        if not args.before:
            sys.exit("--compare needs --before")
        load = lambda path: json.loads(Path(path).read_text())
        return compare(load(args.before), load(args.compare), args.tolerance)
    if args.pin and not client_cores(args):
        sys.exit(f"--pin needs more than {args.threads} cores: the client runs on the cores the servers leave")
    pipelines = [int(p) for p in args.pipelines.split(",")]
    servers = ["hopless", "redis"]
    # results[pipeline][server][test] = [rps per run]; cpu[...] = [server CPU us per request per run]
    results = {p: {s: {} for s in servers} for p in pipelines}
    cpu = {p: {s: {} for s in servers} for p in pipelines}
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
                    if args.pin:
                        rows = run_pinned(port, p, args, proc.pid)
                    else:
                        rows = {t: (rps, None) for t, rps in run_benchmark(port, p, args).items()}
                    for test, (rps, us) in rows.items():
                        results[p][kind].setdefault(test, []).append(rps)
                        if us is not None:
                            cpu[p][kind].setdefault(test, []).append(us)
                        if test not in tests:
                            tests.append(test)
            finally:
                proc.terminate()
                proc.wait()
            done += 1
            print(f"[{done}/{total}] run {run + 1} {kind} done, {time.time() - t0:.0f} s", file=sys.stderr)

    def med(xs):
        return statistics.median(xs) if xs else float("nan")

    pinned = (f"pinned: servers on cores {server_cores(args)}, redis-benchmark on {client_cores(args)}; "
              if args.pin else "not pinned: servers and client share every core; ")
    redis_threads = f" --io-threads {args.threads}" if args.threads > 1 else ""
    print(
        f"redis-benchmark default run, -n {args.requests}, 50 clients"
        f"{f', -r {args.random_keys}' if args.random_keys else ''}, pipelines {args.pipelines}; "
        f"hopless serve --threads {args.threads} against {version()} (--save \"\" --appendonly no{redis_threads}); "
        f"{pinned}requests/s, median [min-max] of {args.runs} runs (a fresh server each, servers alternating), "
        f"{time.time() - t0:.0f} s"
    )
    summary = []
    for p in pipelines:
        print(f"\n-P {p}")
        head = f"{'test':<40} {'hopless':>26} {'redis':>26} {'ratio':>7}"
        if args.pin:
            head += f" {'CPU us/req h':>13} {'r':>6} {'ratio':>6}"
        print(head)
        ratios, cpu_ratios = [], []
        for t in tests:
            h, r = results[p]["hopless"].get(t, []), results[p]["redis"].get(t, [])
            ratio = med(h) / med(r) if h and r else float("nan")
            ratios.append(ratio)
            fmt = lambda xs: f"{med(xs) / 1e3:.0f}k [{min(xs) / 1e3:.0f}k-{max(xs) / 1e3:.0f}k]" if xs else "-"
            line = f"{t:<40} {fmt(h):>26} {fmt(r):>26} {ratio:>6.2f}x"
            row = {"pipeline": p, "test": t, "hopless": h, "redis": r, "ratio": ratio}
            if args.pin:
                ch, cr = cpu[p]["hopless"].get(t, []), cpu[p]["redis"].get(t, [])
                cratio = med(ch) / med(cr) if ch and cr and med(cr) > 0 else float("nan")
                cpu_ratios.append(cratio)
                line += f" {med(ch):>13.3f} {med(cr):>6.3f} {cratio:>5.2f}x"
                row.update({"per_core": True, "server_cores": args.threads, "hopless_cpu_us_per_request": ch,
                            "redis_cpu_us_per_request": cr, "cpu_ratio": cratio})
            print(line)
            summary.append(row)
        good = [x for x in ratios if x == x]
        if good:
            print(f"{'min ratio / geomean':<40} {min(good):.2f}x / {statistics.geometric_mean(good):.2f}x")
        good = [x for x in cpu_ratios if x == x and x > 0]
        if good:
            print(f"{'CPU per request, max ratio / geomean':<40} {max(good):.2f}x / {statistics.geometric_mean(good):.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))
    if args.before:
        return compare(json.loads(Path(args.before).read_text()), summary, args.tolerance)
    return 0


def compare(before: list, now: list, tolerance: float) -> int:
    """Prints each test's ratio against Redis before and now; 1 when one regressed past `tolerance`.

    Pinned rows compare CPU per request (lower is better), the others requests/s (higher is better)."""
    old = {(r["pipeline"], r["test"]): r for r in before}
    worse = []
    print(f"\n{'pipeline / test':<46} {'before':>8} {'now':>8} {'change':>8}")
    for r in now:
        b = old.get((r["pipeline"], r["test"]))
        if b is None:
            continue
        cpu = "cpu_ratio" in r and "cpu_ratio" in b
        key = "cpu_ratio" if cpu else "ratio"
        x, y = b[key], r[key]
        if not (x == x and y == y) or x <= 0:
            continue
        change = y / x - 1
        regressed = change > tolerance if cpu else change < -tolerance
        name = f"-P {r['pipeline']} {r['test']} ({'CPU/req' if cpu else 'req/s'})"
        print(f"{name:<46} {x:>7.2f}x {y:>7.2f}x {change:>+7.0%}{'  REGRESSION' if regressed else ''}")
        if regressed:
            worse.append(name)
    if worse:
        print(f"{len(worse)} regressed past {tolerance:.0%}: {', '.join(worse)}")
        return 1
    print(f"no test regressed past {tolerance:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
