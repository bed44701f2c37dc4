#!/usr/bin/env bash
# The whole test suite: format, lints (also of the macOS and Windows code,
# type-checked for their targets), tests.
set -euo pipefail
cd "$(dirname "$0")"
# Nothing in the suite reads the terminal.
exec </dev/null
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo clippy --target x86_64-apple-darwin --all-targets -- -D warnings
cargo clippy --target x86_64-pc-windows-gnu --all-targets -- -D warnings
# Windows exes for the Wine tests (tests/wine.rs skips without them, or
# fails under CI=true).
if command -v wine >/dev/null && command -v x86_64-w64-mingw32-gcc >/dev/null; then
  tests/wine/build.sh >/dev/null
fi
# Every failing test binary, not only the first.
cargo test --all-targets --no-fail-fast
# The static musl build (docs/performance.md: the faster `sbx run`): the
# library's unit tests, the escape battery and the kernel oracle again.
cargo test --target x86_64-unknown-linux-musl --no-fail-fast --lib \
  --test linux_escape --test kernel_oracle
