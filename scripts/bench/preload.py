#!/usr/bin/env python3
"""hopless bench preload: real programs with glibc, jemalloc, mimalloc and hopless preloaded, side by side.

Each program runs once per allocator per round, the allocator order rotating each round, and the default
number of rounds is a whole number of rotations (one with --quick, two without), so every allocator runs
in every position of a round equally often: run times drift within a round (git's grew from 0.19 s to
0.52 s over one --quick run), and with 3 rounds of 4 allocators the one placed after mimalloc ran later
than it in every round. The table shows
the median wall time and the median peak RSS (ru_maxrss of the measured process, from wait4), each with
its ratio to mimalloc, and checks that every run printed exactly what the glibc run printed.

    scripts/bench/preload.py [--quick] [--rounds N] [--json PATH] [--so PATH] [--before PATH] [--scratch DIR]

The programs' files (git's repositories, sort's input, redis's directory) go in a fresh directory under
--scratch, by default /dev/shm when it is a writable tmpfs: on a virtual disk, git's writes and their
writeback made one allocator's git run take anywhere from 0.23 to 0.79 s within one --quick run, for every
allocator alike, which buried the allocators' differences. The last table line gives each allocator's
per-round geomean against mimalloc's in the same round (runs next to each other in time), median and
min-max over the rounds: the spread says how far one run's geomean can be trusted.

--before adds another libhopless.so (an earlier build) as the peer "hopless-before", run in the same
alternating rounds, for before/after comparisons of a change.

--profiling adds two peers that sample heap profiles at the same mean interval, 512 KiB: "hopless-prof"
(HOPLESS_PROF=1) and "jemalloc-prof" (MALLOC_CONF=prof:true,lg_prof_sample:19), neither writing a dump;
a last line gives each one's per-round geomean against itself without profiling.

Peers are Debian's libjemalloc2 and libmimalloc2.0 (apt-get install libjemalloc2 libmimalloc2.0).
"""
import argparse
import hashlib
import json
import math
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBDIR = "/usr/lib/x86_64-linux-gnu"
PEERS = {
    "glibc": None,
    "jemalloc": os.path.join(LIBDIR, "libjemalloc.so.2"),
    "mimalloc": os.path.join(LIBDIR, "libmimalloc.so.2"),
}


GNU_TIME = "/usr/bin/time"


class Preload(str):
    """A library to preload, with environment variables the allocator reads (profiling settings)."""

    def __new__(cls, path, env=None):
        obj = super().__new__(cls, path)
        obj.env = env or {}
        return obj


def run_rusage(cmd, preload, cwd=None, env_extra=None):
    """Runs cmd with `preload`; returns (seconds, the program's own peak RSS, its stdout, its stderr).

    Linux carries a process's peak RSS across exec, so a program started straight from this (large)
    Python process would report at least this process's RSS; GNU time (`apt-get install time`), a small
    process, starts it instead and reports the program's own figure.
    """
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload
        env.update(getattr(preload, "env", {}))
    env.update(env_extra or {})
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile(mode="r") as rss:
        wrapped = [GNU_TIME, "-f", "%M", "-o", rss.name, *cmd] if os.path.exists(GNU_TIME) else cmd
        t = time.perf_counter()
        p = subprocess.Popen(wrapped, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        secs = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            raise RuntimeError(f"{cmd} exited {p.returncode} with {preload}: {err.read().decode()[-2000:]}")
        if wrapped is cmd:
            peak = ru.ru_maxrss * 1024
        else:
            peak = int(rss.read().strip().splitlines()[-1]) * 1024
        return secs, peak, out.read(), err.read()


class Workload:
    def __init__(self, name):
        self.name = name

    def setup(self, tmp, quick):
        pass

    def run(self, preload):
        """Returns (seconds, peak_rss_bytes, output_digest)."""
        raise NotImplementedError


class Python(Workload):
    def __init__(self):
        super().__init__("python-script")

    def run(self, preload):
        script = os.path.join(ROOT, "crates/hopless-malloc/tests/programs/alloc_heavy.py")
        s, rss, out, _ = run_rusage([sys.executable, script], preload)
        return s, rss, hashlib.sha256(out).hexdigest()


class PyUnittest(Workload):
    def __init__(self):
        super().__init__("python-unittest")

    def run(self, preload):
        mods = ["test.test_json", "test.test_collections", "test.test_heapq", "test.test_bisect"]
        s, rss, _, err = run_rusage([sys.executable, "-m", "unittest", "-q", *mods], preload)
        # unittest reports on stderr: "Ran N tests in T s" then "OK" (or "OK (skipped=K)") or "FAILED (...)".
        # The digest is the count and the verdict, without the time.
        text = err.decode(errors="replace")
        ran = re.search(r"^Ran (\d+) tests?", text, re.M)
        verdict = [l for l in text.splitlines() if l.startswith(("OK", "FAILED"))]
        if not ran or not verdict:
            raise RuntimeError(f"python-unittest under {preload}: no result lines: {text[-2000:]}")
        return s, rss, f"ran {ran.group(1)}: {verdict[-1]}"


class Git(Workload):
    def __init__(self):
        super().__init__("git")

    def setup(self, tmp, quick):
        self.tmp = tmp
        self.files = 500 if quick else 2000

    def run(self, preload):
        d = tempfile.mkdtemp(dir=self.tmp)
        os.makedirs(os.path.join(d, "src"))
        for i in range(self.files):
            with open(os.path.join(d, "src", f"f{i}.txt"), "w") as f:
                f.write("".join(f"line {i} {j}\n" for j in range(i % 80)))
        env = {
            "GIT_AUTHOR_NAME": "h", "GIT_AUTHOR_EMAIL": "h@example.invalid", "GIT_COMMITTER_NAME": "h",
            "GIT_COMMITTER_EMAIL": "h@example.invalid", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
            "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        total, peak, outs = 0.0, 0, b""
        for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "gen"],
                     ["log", "--stat", "--format=%H %s"], ["gc", "-q"], ["fsck", "--no-progress"]):
            s, rss, out, _ = run_rusage(["git", *args], preload, cwd=d, env_extra=env)
            total += s
            peak = max(peak, rss)
            outs += out
        shutil.rmtree(d)
        return total, peak, hashlib.sha256(outs).hexdigest()


class Sort(Workload):
    def __init__(self):
        super().__init__("sort")

    def setup(self, tmp, quick):
        self.path = os.path.join(tmp, "sort-input.txt")
        size = (25 if quick else 100) << 20
        x = 0x9E3779B97F4A7C15
        written = 0
        with open(self.path, "w") as f:  # streamed: this process's own RSS stays small
            while written < size:
                x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
                x ^= x >> 7
                x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
                line = "%016x %s\n" % (x, "abcdefghij" * (x % 7))
                f.write(line)
                written += len(line)

    def run(self, preload):
        s, rss, out, _ = run_rusage(["sort", self.path], preload, env_extra={"LC_ALL": "C"})
        return s, rss, hashlib.sha256(out).hexdigest()


class Redis(Workload):
    def __init__(self):
        super().__init__("redis")

    def setup(self, tmp, quick):
        self.tmp = tmp
        self.n = "50000" if quick else "200000"

    def run(self, preload):
        with socket.socket() as sk:
            sk.bind(("127.0.0.1", 0))
            port = str(sk.getsockname()[1])
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        if preload:
            env["LD_PRELOAD"] = preload
            env.update(getattr(preload, "env", {}))
        server = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
             "--dir", self.tmp, "--enable-debug-command", "local"], env=env, stdout=subprocess.DEVNULL)
        try:
            for _ in range(200):
                r = subprocess.run(["redis-cli", "-p", port, "ping"], capture_output=True)
                if r.stdout == b"PONG\n":
                    break
                time.sleep(0.02)
            t = time.perf_counter()
            subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", port, "-n", self.n, "-c", "50", "-q",
                            "-t", "set,get,lpush,lpop,incr,mset,hset", "-d", "256", "-r", "100000"],
                           check=True, capture_output=True)
            secs = time.perf_counter() - t
            with open(f"/proc/{server.pid}/status") as f:
                hwm = next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) * 1024
            dbsize = int(subprocess.run(["redis-cli", "-p", port, "dbsize"], capture_output=True).stdout)
            if dbsize == 0:
                raise RuntimeError(f"redis under {preload}: empty database after the benchmark")
            # Untimed: a deterministic load (one client, fixed keys and values), and redis's digest of
            # every key and value it then holds. It must be the same under every allocator.
            cli = ["redis-cli", "-p", port]
            subprocess.run([*cli, "flushall"], check=True, capture_output=True)
            subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", port, "-n", "3000", "-c", "1", "-q",
                            "-t", "set,lpush,incr,mset,hset,sadd,zadd", "-d", "300"],
                           check=True, capture_output=True)
            digest = subprocess.run([*cli, "debug", "digest"], check=True, capture_output=True).stdout.strip()
            keys = subprocess.run([*cli, "dbsize"], check=True, capture_output=True).stdout.strip()
        finally:
            subprocess.run(["redis-cli", "-p", port, "shutdown", "nosave"], capture_output=True)
            server.wait(timeout=10)
        return secs, hwm, f"{keys.decode()} keys, digest {digest.decode()}"


def default_scratch():
    """/dev/shm when it is a writable tmpfs (no disk writeback in the timings), else None (the default)."""
    try:
        with open("/proc/mounts") as f:
            tmpfs = any(l.split()[1] == "/dev/shm" and l.split()[2] == "tmpfs" for l in f)
    except OSError:
        return None
    return "/dev/shm" if tmpfs and os.access("/dev/shm", os.W_OK) else None


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--json")
    ap.add_argument("--so", help="the libhopless.so to test (default: the release build, built if missing)")
    ap.add_argument("--before", help="an earlier libhopless.so, run as the peer hopless-before")
    ap.add_argument("--only", help="comma-separated workloads")
    ap.add_argument("--profiling", action="store_true",
                    help="add hopless and jemalloc sampling heap profiles at 512 KiB as peers")
    ap.add_argument("--scratch", help="where the programs' files go (default: /dev/shm if a writable tmpfs, "
                                      "else the system's temporary directory)")
    args = ap.parse_args()
    if not args.so:
        meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"],
                                         cwd=ROOT, check=True, capture_output=True).stdout)
        args.so = os.path.join(meta["target_directory"], "release", "libhopless.so")
    if not os.path.exists(args.so):
        subprocess.run(["cargo", "build", "--release", "-p", "hopless-malloc"], cwd=ROOT, check=True)
    peers = dict(PEERS)
    peers["hopless"] = args.so
    if args.before:
        peers["hopless-before"] = args.before
    if args.profiling:
        peers["hopless-prof"] = Preload(args.so, {"HOPLESS_PROF": "1"})
        peers["jemalloc-prof"] = Preload(PEERS["jemalloc"], {"MALLOC_CONF": "prof:true,lg_prof_sample:19"})
    for name, path in peers.items():
        if path and not os.path.exists(path):
            sys.exit(f"{name}: {path} is missing (apt-get install libjemalloc2 libmimalloc2.0)")
    rotation = len(peers)
    rounds = args.rounds or (rotation if args.quick else 2 * rotation)
    if rounds % rotation:
        print(f"note: {rounds} rounds is not a whole number of rotations of {rotation} allocators: "
              "positions in a round are unbalanced", file=sys.stderr)
    workloads = [Python(), PyUnittest(), Git(), Sort(), Redis()]
    if args.only:
        keep = set(args.only.split(","))
        workloads = [w for w in workloads if w.name in keep]
    names = list(peers)
    samples = {(w.name, p): [] for w in workloads for p in names}
    digests = {}  # (workload, allocator) -> set of output digests
    failures = []
    scratch = args.scratch or default_scratch()
    print(f"scratch directory: {scratch or tempfile.gettempdir()}", file=sys.stderr)
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        for w in workloads:
            w.setup(tmp, args.quick)
        total = rounds * len(workloads) * len(names)
        done = 0
        start = time.time()
        for r in range(rounds):
            for w in workloads:
                for k in range(len(names)):
                    p = names[(k + r) % len(names)]
                    secs, rss, digest = w.run(peers[p])
                    samples[(w.name, p)].append((secs, rss))
                    digests.setdefault((w.name, p), set()).add(digest)
                    done += 1
                    el = time.time() - start
                    print(f"\r[{done}/{total}] {w.name:<16} {p:<9} {secs:7.3f}s  "
                          f"elapsed {el:5.0f}s eta {el / done * (total - done):5.0f}s", end="", file=sys.stderr)
        print(file=sys.stderr)
    # Outputs: every allocator's digest must equal glibc's.
    for w in workloads:
        ref = digests[(w.name, "glibc")]
        for p in names:
            if digests[(w.name, p)] != ref or len(ref) != 1:
                failures.append(f"{w.name}: output under {p} differs from glibc's: "
                                f"{sorted(digests[(w.name, p)])} vs {sorted(ref)}")
    results = []
    print(f"hopless bench preload: median of {rounds} rounds, allocators alternating\n")
    print(f"{'program':<17}" + "".join(f"{p + ' s':>20}" for p in names) + "".join(f"{p + ' MiB':>20}" for p in names))
    for w in workloads:
        med = {p: (statistics.median(s for s, _ in samples[(w.name, p)]),
                   statistics.median(m for _, m in samples[(w.name, p)])) for p in names}
        base = med["mimalloc"]
        row = f"{w.name:<17}"
        row += "".join(f"{med[p][0]:>11.3f} ({med[p][0] / base[0]:4.2f}x)" for p in names)
        row += "".join(f"{med[p][1] / 2**20:>11.1f} ({med[p][1] / base[1]:4.2f}x)" for p in names)
        print(row)
        for p in names:
            results.append({"workload": w.name, "allocator": p, "seconds": med[p][0], "peak_rss_bytes": int(med[p][1])})
    print(f"{'geomean / mimalloc':<17}", end="")
    for field in ("seconds", "peak_rss_bytes"):
        for p in names:
            ratios = [next(r[field] for r in results if r["workload"] == w.name and r["allocator"] == p)
                      / next(r[field] for r in results if r["workload"] == w.name and r["allocator"] == "mimalloc")
                      for w in workloads]
            print(f"{geomean(ratios):>18.3f}x", end=" ")
    print(f"\n{'per-round geomean':<17}", end="")
    per_round = {p: [geomean([samples[(w.name, p)][r][0] / samples[(w.name, "mimalloc")][r][0]
                              for w in workloads]) for r in range(rounds)] for p in names}
    for p in names:
        pr = per_round[p]
        print(f"{statistics.median(pr):>6.3f}x [{min(pr):.2f}-{max(pr):.2f}]", end=" ")
    print("\n(ratios: relative to mimalloc in the same run; lower is better. Per-round: time only, median "
          "[min-max] over rounds)")
    if args.profiling:
        for prof, plain in (("hopless-prof", "hopless"), ("jemalloc-prof", "jemalloc")):
            pr = [geomean([samples[(w.name, prof)][r][0] / samples[(w.name, plain)][r][0] for w in workloads])
                  for r in range(rounds)]
            per_round[f"{prof}/{plain}"] = pr
            print(f"profiling cost, {prof} / {plain} per round: {statistics.median(pr):.3f}x "
                  f"[{min(pr):.3f}-{max(pr):.3f}]")
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"results": results, "per_round_geomean": per_round, "scratch": scratch}, f, indent=2)
        print(f"wrote {args.json}")
    if failures:
        print("\n".join(sorted(set(failures))), file=sys.stderr)
        sys.exit(1)
    print("outputs: identical to glibc's for every program and allocator:")
    for w in workloads:
        print(f"  {w.name:<17} {next(iter(digests[(w.name, 'glibc')]))}")


if __name__ == "__main__":
    main()
