#!/usr/bin/env bash
# The whole test suite: format, lints, cross-target type checks, tests.
set -euo pipefail
cd "$(dirname "$0")"
cargo fmt --all -- --check
cargo clippy --all-targets -- -D warnings
cargo check --target x86_64-apple-darwin --all-targets
cargo check --target x86_64-pc-windows-gnu --all-targets
cargo test --all-targets
