#!/usr/bin/env bash
# The benches at 1 to N threads on a many-core machine, from binaries built elsewhere (the machine needs
# no Rust): the C-ABI table with thread-owned slabs beside the default (`--variant`), and the KV
# workload (Zipf 0.99, 60% SET / 40% GET) at several thread counts, owned slabs on and off alternating
# at all cores. Each part's table and JSON go into a results folder that OUT/results.tgz packs again
# after each part: one file to fetch back, and a run cut short keeps what it finished.
#
#   scripts/bench/many_cores.sh --pack DIR [BEFORE]       # here: the release binaries and peers into DIR
#   scripts/bench/many_cores.sh DIR OUT [RUNS [PARTS]]    # there: results into OUT
#
# BEFORE: a folder with another build's `hopless` and `libhopless.so` (say, a checkout of the commit
# before a change, built), packed as DIR/before: the C-ABI tables then have its library as the column
# `before`, and the part kv-before compares the two builds.
#
# RUNS: C-ABI runs per cell (default 7). PARTS: a comma-separated choice of cross (the C-ABI cross-thread
# rows), kv-owned (the KV workload at all cores, owned slabs off and on alternating, RUNS pairs of
# invocations), single (a few single-thread C-ABI rows), kv-threads (the KV workload at 1, 4 and 8
# threads), kv-before (the KV workload at all cores, DIR/before's build and this one alternating, RUNS
# pairs of invocations); default all but kv-before.
#
# DIR holds `hopless` and `libhopless.so` (`cargo build --release -p hopless-cli -p hopless-malloc`) and
# `lib/` with Debian's libmimalloc.so.2, libjemalloc.so.2 and libtcmalloc_minimal.so.4; a library that
# does not load on the target machine is dropped from the C-ABI table (and named in `env.txt`).
set -uo pipefail

if [[ ${1:-} == --pack ]]; then
    dir=${2:?usage: $0 --pack DIR [BEFORE]}
    before=${3:-}
    root=$(cd "$(dirname "$0")/../.." && pwd)
    sys=/usr/lib/$(uname -m)-linux-gnu
    rm -rf "$dir" && mkdir -p "$dir/lib"
    cp "$root/target/release/hopless" "$root/target/release/libhopless.so" "$dir/" || exit 1
    strip "$dir/hopless"
    for f in libmimalloc.so.2 libjemalloc.so.2 libtcmalloc_minimal.so.4; do
        cp -L "$sys/$f" "$dir/lib/" || echo "not packed: $f"
    done
    if [[ -n $before ]]; then
        mkdir -p "$dir/before"
        cp "$before/hopless" "$before/libhopless.so" "$dir/before/" || exit 1
        strip "$dir/before/hopless"
    fi
    du -sh "$dir"
    exit 0
fi

dir=$(cd "${1:?usage: $0 DIR OUT [RUNS]}" && pwd)
out=${2:?usage: $0 DIR OUT [RUNS]}
runs=${3:-7}
parts=,${4:-cross,kv-owned,single,kv-threads},
mkdir -p "$out"
tgz=$(cd "$out" && pwd)/results.tgz
out=$(mktemp -d)/results
mkdir "$out"
exe=$dir/hopless
start=$(date +%s)

stamp() {
    echo "[$(($(date +%s) - start)) s] $*" | tee -a "$out/log.txt"
    tar czf "$tgz" -C "$out/.." results
}
want() { [[ $parts == *,$1,* ]]; }

{
    date -u
    uname -a
    nproc
    lscpu
    free -g
    ldd --version 2>&1 | head -1
    for lib in "$dir"/lib/*.so*; do
        if LD_PRELOAD=$lib /bin/true 2>/dev/null; then
            echo "loads: $lib"
        else
            echo "does not load, dropped: $lib"
            rm -f "$lib"
        fi
    done
} >"$out/env.txt" 2>&1

cross=exchange-2,exchange-4,exchange-16,queue-churn,producer-consumer-1,producer-consumer-3,producer-consumer-15,handoff-1,handoff-3,handoff-15,all-to-all-4,all-to-all-16
single=pair-16,pair-64,batch-100,fifo-lifo-400,fifo-lifo-1600,mixed-sizes

before=()
[[ -f $dir/before/libhopless.so ]] && before=(--before "$dir/before/libhopless.so")

cabi() { # NAME WORKLOADS RUNS
    stamp "c-abi $1 ($3 runs)"
    timeout 400 "$exe" bench alloc --c-abi --runs "$3" --lib-dir "$dir/lib" "${before[@]}" \
        --variant owned=HOPLESS_OWNED_SLABS=1 --workloads "$2" --json "$out/cabi-$1.json" \
        >"$out/cabi-$1.txt" 2>&1
    stamp "c-abi $1: exit $?"
}

kv() { # NAME THREADS RUNS [ENV...] (KV_EXE: another build's hopless)
    local name=$1 threads=$2 n=$3
    shift 3
    stamp "kv $name"
    env "$@" timeout 300 "${KV_EXE:-$exe}" bench kv --quick --no-eviction --threads "$threads" --runs "$n" \
        --json "$out/kv-$name.json" >"$out/kv-$name.txt" 2>&1
    stamp "kv $name: exit $?"
}

cores=$(nproc)
want cross && cabi cross "$cross" "$runs"
# Owned slabs off and on alternate, an invocation of two runs each, so an hour's drift falls on both.
if want kv-owned; then
    for ((r = 1; r <= runs; r++)); do
        kv "t$cores-default-$r" "$cores" 2
        kv "t$cores-owned-$r" "$cores" 2 HOPLESS_OWNED_SLABS=1
    done
fi
if want kv-before && [[ -x $dir/before/hopless ]]; then
    for ((r = 1; r <= runs; r++)); do
        KV_EXE=$dir/before/hopless kv "t$cores-before-$r" "$cores" 2
        kv "t$cores-after-$r" "$cores" 2
    done
fi
want single && cabi single "$single" 5
if want kv-threads; then
    for t in 1 4 8; do
        kv "t$t-default" "$t" 3
    done
fi
stamp done
