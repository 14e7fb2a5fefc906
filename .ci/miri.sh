#!/usr/bin/env bash
# Miri over the allocator core, the SLUB experiment's models and the store's unsafe pieces (.ci/run runs
# this in the background, beside its other steps). Needs a nightly toolchain with the miri component.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo +nightly miri setup >/dev/null
# The allocator core over a test page source, with strict provenance.
MIRIFLAGS="-Zmiri-strict-provenance" cargo +nightly miri test -p hopless --lib
# The SLUB experiment's models (crates/hopless-lab) over the same test page source.
MIRIFLAGS="-Zmiri-strict-provenance" cargo +nightly miri test -p hopless-lab --lib
# The store's counted value handle, its table and deadline heap (std's allocator under Miri).
cargo +nightly miri test -p hopless-kv --lib
