#!/usr/bin/env bash
# Run each fuzz target for SECONDS (default 20), seeded from the committed
# corpus; new inputs go to a scratch directory, crashes to fuzz/artifacts/.
#   fuzz/run.sh [SECONDS] [TARGET...]
# Stable Rust: cargo-fuzz's nightly-only flags are let through with
# RUSTC_BOOTSTRAP=1. SANITIZER=address for long runs by hand (CI uses
# none: the harnesses run safe Rust, and it builds and runs faster).
set -euo pipefail
secs=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(policy sbpl sbpl_injection)
cd "$(dirname "$0")"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
for t in "${targets[@]}"; do
  scratch=$(mktemp -d)
  echo "fuzz: $t for ${secs}s"
  cargo fuzz run --sanitizer "${SANITIZER:-none}" "$t" "$scratch" "corpus/$t" -- \
    -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 2>&1 |
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|ERROR|panicked|SUMMARY|Done' || true
  # A crash leaves an input in artifacts/: fail.
  if compgen -G "artifacts/$t/*" >/dev/null; then
    echo "fuzz: $t found a failing input:" artifacts/"$t"/* >&2
    rm -rf "$scratch"
    exit 1
  fi
  rm -rf "$scratch"
done
echo "fuzz: ${#targets[@]} passed, 0 failed"
