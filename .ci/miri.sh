#!/usr/bin/env bash
# Miri over the allocator core, the SLUB experiment's models and the store's unsafe pieces (.ci/run runs
# this in the background, beside its other steps). Needs a nightly toolchain with the miri component.
#
# Two streams, so that Miri has both cores once the steps beside it are done: the allocator core and the
# lab, and the store, each with a target directory of its own (a cargo build lock each). Each
# stream's output goes to a log of its own, printed here when both are done.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo +nightly miri setup >/dev/null
logs=$(mktemp -d)
(
  # The allocator core over a test page source, with strict provenance.
  MIRIFLAGS="-Zmiri-strict-provenance" cargo +nightly miri test -p hopless --lib
  # The SLUB experiment's models (crates/hopless-lab) over the same test page source.
  MIRIFLAGS="-Zmiri-strict-provenance" cargo +nightly miri test -p hopless-lab --lib
) >"$logs/core" 2>&1 &
core=$!
(
  export CARGO_TARGET_DIR=target/miri-store
  # The store's unsafe code under Miri (std's allocator): its counted value handle and the collections
  # inside items, its table, the thin buffer and the packed entries the compact types are made of, the
  # intset, the shards' bit edits and the deadline heap. The rest of the store is safe code over these,
  # left to the native run (the whole lib under Miri took 17.5 minutes, longer than anything else in CI).
  cargo +nightly miri test -p hopless-kv --lib -- value:: table:: types::thin_buf:: types::packed:: \
    types::set::intset:: store:: deadlines::
) >"$logs/store" 2>&1 &
store=$!
rc=0
wait "$core" || rc=1
wait "$store" || rc=1
echo "--- miri: the allocator core and the lab"
cat "$logs/core"
echo "--- miri: the store"
cat "$logs/store"
rm -rf "$logs"
exit "$rc"
