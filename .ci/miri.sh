#!/usr/bin/env bash
# Miri over the allocator core, the SLUB experiment's models and the store's unsafe pieces (.ci/run runs
# this in the background, beside its other steps). Needs a nightly toolchain with the miri component.
#
# Two streams, so that Miri has both cores once the steps beside it are done, each with a target
# directory of its own (a cargo build lock each; building the core under Miri takes seconds): the
# core's heap tests (about half of its Miri time) and the lab's models; the core's other tests and the
# store. Each stream's output goes to a log of its own, printed here when both are done.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo +nightly miri setup >/dev/null
logs=$(mktemp -d)
(
  # The allocator core over a test page source, with strict provenance: the heap as a whole.
  MIRIFLAGS="-Zmiri-strict-provenance" cargo +nightly miri test -p hopless --lib -- heap::
  # The SLUB experiment's models (crates/hopless-lab) over the same test page source.
  MIRIFLAGS="-Zmiri-strict-provenance" cargo +nightly miri test -p hopless-lab --lib
) >"$logs/a" 2>&1 &
a=$!
(
  export CARGO_TARGET_DIR=target/miri-b
  # The allocator core's other tests: caches, slabs, large blocks, remote frees, the lock.
  MIRIFLAGS="-Zmiri-strict-provenance" cargo +nightly miri test -p hopless --lib -- --skip heap::
  # The store's unsafe code under Miri (std's allocator): its counted value handle and the collections
  # inside items, its table, the thin buffer and the packed entries the compact types are made of, the
  # intset, the shards' bit edits and the deadline heap. The rest of the store is safe code over these,
  # left to the native run (the whole lib under Miri took 17.5 minutes, longer than anything else in CI).
  cargo +nightly miri test -p hopless-kv --lib -- value:: table:: types::thin_buf:: types::packed:: \
    types::set::intset:: store:: deadlines::
) >"$logs/b" 2>&1 &
b=$!
rc=0
wait "$a" || rc=1
wait "$b" || rc=1
echo "--- miri: the core's heap tests, the lab"
cat "$logs/a"
echo "--- miri: the core's other tests, the store"
cat "$logs/b"
rm -rf "$logs"
exit "$rc"
