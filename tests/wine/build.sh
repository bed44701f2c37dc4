#!/usr/bin/env bash
# Cross-build sbx.exe and the winprobe test helper for x86_64-pc-windows-gnu
# and put the bcryptprimitives.dll stand-in beside them (Wine 8 has none).
# Prints the directory holding the exes.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
target=x86_64-pc-windows-gnu
out="${CARGO_TARGET_DIR:-$root/target}/$target/debug"

cargo build --quiet --manifest-path "$root/Cargo.toml" --target "$target" \
    --bin sbx --example winprobe >&2

dll="$out/bcryptprimitives.dll"
src="$root/tests/wine/bcryptprimitives.c"
def="$root/tests/wine/bcryptprimitives.def"
if [ ! -f "$dll" ] || [ "$src" -nt "$dll" ] || [ "$def" -nt "$dll" ]; then
    x86_64-w64-mingw32-gcc -shared -O2 -s -o "$dll" "$src" "$def" -ladvapi32
fi
cp -f "$dll" "$out/examples/bcryptprimitives.dll"
echo "$out"
