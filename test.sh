#!/usr/bin/env bash
# The whole test suite: format, lints (also of the macOS and Windows code,
# type-checked for their targets), tests, and a bounded fuzz run.
# It installs what it needs first (.ci/prereqs.sh; as root, or it names
# the commands to run). FUZZ_SECONDS=0 skips the fuzz run.
set -euo pipefail
cd "$(dirname "$0")"
# Nothing in the suite reads the terminal.
exec </dev/null
.ci/prereqs.sh
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo clippy --target x86_64-apple-darwin --all-targets -- -D warnings
cargo clippy --target x86_64-pc-windows-gnu --all-targets -- -D warnings
# Windows exes for the Wine tests.
tests/wine/build.sh >/dev/null
# Every failing test binary, not only the first.
cargo test --all-targets --no-fail-fast
# The static musl build (docs/performance.md: the faster `sbx run`): the
# library's unit tests, the escape battery and the kernel oracle again.
cargo test --target x86_64-unknown-linux-musl --no-fail-fast --lib \
  --test linux_escape --test kernel_oracle
# The escape battery again as uid 65534, on both builds (as root; run
# unprivileged, the battery above already was).
if [ "$(id -u)" = 0 ]; then
  tests/linux_escape/unprivileged.sh
  tests/linux_escape/unprivileged.sh --target x86_64-unknown-linux-musl
fi
# Each fuzz target for a bounded time (stable Rust, see fuzz/run.sh).
if [ "${FUZZ_SECONDS:-20}" != 0 ]; then
  fuzz/run.sh "${FUZZ_SECONDS:-20}"
fi
