#!/usr/bin/env python3
"""Snapshots against redis-server, the same data, servers alternating: for each run, a fresh server in a
directory of its own (taskset: server on core 0, this script on the other cores), N small string keys
(`key:<i>` = 20 bytes) written pipelined, then

- BGSAVE: wall time from the command to the end of the child (INFO persistence polled every 5 ms), the
  extra memory while it runs (the saving child's private dirty pages, from /proc/<child>/smaps_rollup,
  at their peak: the copy-on-write the snapshot costs), and the latency a client sees meanwhile (GETs one
  at a time through the whole save: p50 and p99, and the same without a save for the baseline);
- the file's size;
- a load at start: a fresh server on the same file, wall time until it answers with every key.

Medians [min-max] over --runs, and hopless/redis ratios of the medians.

    scripts/bench/persistence.py [--keys 2000000] [--runs 3] [--hopless target/release/hopless]
                                 [--json PATH]

Needs redis-server (Debian's) and a release build of `hopless`.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Conn:
    def __init__(self, port: int):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        l, self.buf = self.buf.split(b"\r\n", 1)
        return l

    def reply(self):
        l = self.line()
        if l[:1] == b"$":
            n = int(l[1:])
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.s.recv(1 << 16)
            v, self.buf = self.buf[:n], self.buf[n + 2:]
            return v
        if l[:1] == b":":
            return int(l[1:])
        return l

    def cmd(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.s.sendall(out)
        return self.reply()


def start(kind: str, hopless: str, port: int, d: Path) -> subprocess.Popen:
    if kind == "hopless":
        cmd = [hopless, "serve", "--port", str(port), "--threads", "1", "--save", "", "--dir", str(d)]
    else:
        cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
               "no", "--dir", str(d)]
    p = subprocess.Popen(["taskset", "-c", "0"] + cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p


def wait_ready(port: int, proc: subprocess.Popen, timeout: float = 600) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            sys.exit(f"the server exited with {proc.returncode}")
        try:
            c = Conn(port)
            if c.cmd("PING") == b"+PONG":
                return time.monotonic() - t0
        except OSError:
            pass
        time.sleep(0.005)
    sys.exit("no server after the timeout")


def fill(port: int, n: int) -> None:
    c = Conn(port)
    value = b"v" * 20
    batch = 10000
    for start_at in range(0, n, batch):
        out = bytearray()
        for i in range(start_at, min(n, start_at + batch)):
            k = b"key:%d" % i
            out += b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$20\r\n%s\r\n" % (len(k), k, value)
        c.s.sendall(out)
        for _ in range(start_at, min(n, start_at + batch)):
            c.line()


def info_field(c: Conn, section: str, field: str) -> str:
    text = c.cmd("INFO", section).decode()
    for l in text.splitlines():
        if l.startswith(field + ":"):
            return l.split(":", 1)[1]
    return ""


def children(pid: int) -> list:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def private_dirty_kb(pid: int) -> int:
    try:
        for l in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if l.startswith("Private_Dirty:"):
                return int(l.split()[1])
    except OSError:
        pass
    return 0


def latencies(port: int, seconds: float, stop=None) -> list:
    c = Conn(port)
    out = []
    t_end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < t_end and not (stop and stop()):
        t = time.perf_counter()
        c.cmd("GET", b"key:%d" % (i % 1000))
        out.append(time.perf_counter() - t)
        i += 1
    return out


def pct(v: list, q: float) -> float:
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] * 1e6 if v else 0.0


def one_run(kind: str, hopless: str, n: int) -> dict:
    d = Path(tempfile.mkdtemp(prefix=f"persist-{kind}-"))
    port = free_port()
    p = start(kind, hopless, port, d)
    try:
        wait_ready(port, p)
        fill(port, n)
        c = Conn(port)
        base = latencies(port, 1.0)
        ctl = Conn(port)
        t0 = time.monotonic()
        assert ctl.cmd("BGSAVE").startswith(b"+Background saving started"), "BGSAVE refused"
        peak = 0
        lat = []
        lc = Conn(port)
        i = 0
        while True:
            for child in children(p.pid):
                peak = max(peak, private_dirty_kb(child))
            t = time.perf_counter()
            lc.cmd("GET", b"key:%d" % (i % 1000))
            lat.append(time.perf_counter() - t)
            i += 1
            if i % 20 == 0 and info_field(c, "persistence", "rdb_bgsave_in_progress") == "0":
                break
        save_s = time.monotonic() - t0
        ok = info_field(c, "persistence", "rdb_last_bgsave_status")
        assert ok == "ok", f"{kind}: BGSAVE ended {ok}"
    finally:
        p.kill()
        p.wait()
    size = (d / "dump.rdb").stat().st_size
    port = free_port()
    p = start(kind, hopless, port, d)
    try:
        load_s = wait_ready(port, p)
        got = Conn(port).cmd("DBSIZE")
        assert got == n, f"{kind} loaded {got} keys of {n}"
    finally:
        p.kill()
        p.wait()
    shutil.rmtree(d, ignore_errors=True)
    return {
        "bgsave_s": save_s,
        "extra_mib": peak / 1024,
        "p50_us": pct(lat, 0.5),
        "p99_us": pct(lat, 0.99),
        "base_p99_us": pct(base, 0.99),
        "file_mib": size / (1 << 20),
        "load_s": load_s,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hopless", default="target/release/hopless")
    ap.add_argument("--json")
    args = ap.parse_args()
    if not shutil.which("redis-server"):
        sys.exit("redis-server is not installed")
    try:
        os.sched_setaffinity(0, set(range(1, os.cpu_count() or 2)) or {0})
    except OSError:
        pass
    runs = {"hopless": [], "redis": []}
    for r in range(args.runs):
        for kind in ("hopless", "redis") if r % 2 == 0 else ("redis", "hopless"):
            res = one_run(kind, args.hopless, args.keys)
            runs[kind].append(res)
            print(f"run {r + 1} {kind}: " + ", ".join(f"{k} {v:.3f}" for k, v in res.items()), flush=True)
    fields = [("bgsave_s", "BGSAVE (s)"), ("extra_mib", "extra memory while saving (MiB)"),
              ("p50_us", "GET p50 during BGSAVE (us)"), ("p99_us", "GET p99 during BGSAVE (us)"),
              ("base_p99_us", "GET p99 without a save (us)"), ("file_mib", "file (MiB)"),
              ("load_s", "load at start (s)")]
    print(f"\n{args.keys} keys of 20-byte values, {args.runs} runs, server pinned to core 0\n")
    print("| measure | hopless | Redis 7.0.15 | ratio |\n|---|---|---|---|")
    summary = {}
    for k, label in fields:
        h = [x[k] for x in runs["hopless"]]
        rd = [x[k] for x in runs["redis"]]
        mh, mr = statistics.median(h), statistics.median(rd)
        summary[k] = {"hopless": h, "redis": rd}
        fmt = lambda v: f"{v:.2f}" if v < 100 else f"{v:.0f}"
        print(f"| {label} | {fmt(mh)} [{fmt(min(h))}–{fmt(max(h))}] | {fmt(mr)} [{fmt(min(rd))}–{fmt(max(rd))}] "
              f"| {mh / mr if mr else 0:.2f}x |")
    if args.json:
        Path(args.json).write_text(json.dumps({"keys": args.keys, "runs": summary}, indent=1))


if __name__ == "__main__":
    main()
