#!/usr/bin/env bash
# Installs libhopless for C programs under PREFIX:
#   PREFIX/lib/libhopless.so, PREFIX/lib/libhopless.a, PREFIX/include/hopless.h and
#   PREFIX/lib/pkgconfig/hopless.pc (from crates/hopless-malloc/hopless.pc.in, prefix and version filled).
# Then: cc app.c $(PKG_CONFIG_PATH=PREFIX/lib/pkgconfig pkg-config --cflags --libs hopless).
#
# Builds the release libraries first (no std, panic = abort: what ships), unless HOPLESS_LIB_DIR names a
# directory that already holds libhopless.so and libhopless.a (the tests install the build under test).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 PREFIX" >&2; exit 2; }
cd "$(dirname "$0")/.."
prefix=$(realpath -m "$1")
case "$prefix" in
  *[[:space:]]*) echo "install.sh: pkg-config cannot name a prefix with spaces: $prefix" >&2; exit 2 ;;
esac
if [ -n "${HOPLESS_LIB_DIR:-}" ]; then
  lib_dir=$HOPLESS_LIB_DIR
else
  cargo build --release -p hopless-malloc --quiet
  lib_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release
fi
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 755 "$lib_dir/libhopless.so" "$prefix/lib/libhopless.so"
install -m 644 "$lib_dir/libhopless.a" "$prefix/lib/libhopless.a"
install -m 644 crates/hopless-malloc/include/hopless.h "$prefix/include/hopless.h"
# The prefix as sed's replacement text: `\`, `&` and the `|` delimiter escaped.
esc=${prefix//\\/\\\\}
esc=${esc//&/\\&}
esc=${esc//|/\\|}
sed -e "s|@PREFIX@|$esc|" -e "s|@VERSION@|$version|" crates/hopless-malloc/hopless.pc.in \
  > "$prefix/lib/pkgconfig/hopless.pc"
echo "installed libhopless $version under $prefix"
