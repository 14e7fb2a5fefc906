#!/usr/bin/env bash
# Fuzzes hopless for a bounded time with cargo-fuzz (libFuzzer + AddressSanitizer): see fuzz/README.md.
#
#   FUZZ_SECONDS   time per target (default 60)
#   FUZZ_TARGETS   targets to run (default: alloc_ops resp_codec commands)
#
# Needs a nightly toolchain: installs one (minimal profile) when rustup can, and cargo-fuzz when it is
# missing. Without them it prints a WARNING and exits 0. A crash, a leak or a hang (an input running past
# 60 s: a deadlock) fails the run; the input is left in fuzz/artifacts/TARGET/ (cargo fuzz prints the actions it
# decodes to).
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-alloc_ops resp_codec commands}

have_nightly() { command -v rustup >/dev/null && rustup toolchain list 2>/dev/null | grep -q '^nightly'; }
if ! have_nightly && command -v rustup >/dev/null; then
  rustup toolchain install nightly --profile minimal >/dev/null 2>&1 || true
fi
if ! have_nightly; then
  echo "WARNING: no nightly Rust toolchain (cargo-fuzz needs one): the fuzz run was skipped" >&2
  exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  if ! cargo install cargo-fuzz --locked; then
    echo "WARNING: cargo-fuzz could not be installed: the fuzz run was skipped" >&2
    exit 0
  fi
fi

cd fuzz
status=0
for t in $targets; do
  echo "== fuzz $t for ${secs}s"
  mkdir -p "corpus/$t" "artifacts/$t"
  stamp=$(mktemp)
  if ! cargo +nightly fuzz run "$t" -- -max_total_time="$secs" -timeout=60 -print_final_stats=1; then
    status=1
    echo "FAIL: fuzz target $t failed (a crash, leak or hang; or it did not build)" >&2
    # The inputs this run saved (cargo fuzz printed the actions they decode to above).
    find "artifacts/$t" -type f -newer "$stamp" | while read -r a; do
      echo "  fuzz/$a  (reproduce: cd fuzz && cargo +nightly fuzz run $t $a)" >&2
    done || true
  fi
  rm -f "$stamp"
done
exit $status
