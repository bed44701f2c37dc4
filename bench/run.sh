#!/usr/bin/env bash
# Whole-process benchmarks (docs/performance.md has the method and the
# figures): compile time and peak RSS per rule count and target, and
# `sbx run` start-up overhead against a bare exec and bubblewrap, and the
# network proxy's throughput against a direct download.
#
#   bench/run.sh [compile|run|proxy|all]    (default: all)
#
# Needs hyperfine and, for the comparison, bwrap:
#   apt-get install -y hyperfine bubblewrap
# Environment: COUNTS (rules per policy, default "10000 100000"), SHAPES
# (bench/gen_policy.py's shapes, default all), TARGETS (default "all
# check": `compile --target all` and `check`; any compile target works),
# RUNS (sbx run samples, default 1000), SBX (binary; default: a fresh
# release build).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
[ "$what" = proxy ] || command -v hyperfine >/dev/null || { echo "error: hyperfine is not installed (apt-get install -y hyperfine)" >&2; exit 2; }

if [ -z "${SBX:-}" ]; then
  cargo build --release --quiet
  SBX=$PWD/target/release/sbx
fi
COUNTS=${COUNTS:-"10000 100000"}
SHAPES=${SHAPES:-"missing siblings nested carveouts globs external env commands net layered"}
# What to time per shape: compile targets (all, linux, macos, ...) or check.
TARGETS=${TARGETS:-"all check"}
RUNS=${RUNS:-1000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ws"

# Median, min and max of a hyperfine JSON export, in ms, one line per command.
stats() {
  python3 - "$1" <<'EOF'
import json, statistics, sys
for r in json.load(open(sys.argv[1]))["results"]:
    t = sorted(x * 1000 for x in r["times"])
    print(f'{statistics.median(t):.3f} {t[0]:.3f} {t[-1]:.3f} {len(t)}')
EOF
}

echo "# sbx benchmarks: $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# sbx: $SBX ($("$SBX" --version))"
echo

compile_bench() {
  echo "## compile: median wall ms (min-max, runs) and peak RSS, per policy shape"
  echo
  echo "| shape | rules | command | median ms | min ms | max ms | runs | peak RSS MiB |"
  echo "|---|---:|---|---:|---:|---:|---:|---:|"
  for shape in $SHAPES; do
    for n in $COUNTS; do
      local d="$work/$shape$n"
      mkdir -p "$d"
      local gen
      gen=$(python3 bench/gen_policy.py "$shape" "$n" "$d")
      local runs=30
      [ "$n" -ge 10000 ] && runs=10
      [ "$n" -ge 100000 ] && runs=3
      for what in $TARGETS; do
        local args
        if [ "$what" = check ]; then
          args="$SBX check $gen"
        else
          mkdir -p "$d/out"
          args="$SBX compile $gen --target $what -o $d/out/$what"
          [ "$what" = all ] && args="$SBX compile $gen --target all -o $d/out"
        fi
        # `commands` resolves its programs through PATH.
        PATH="$d/bin:$PATH" hyperfine -N --warmup 1 --runs "$runs" --export-json "$work/h.json" \
          "$args" >/dev/null 2>&1
        read -r med min max cnt < <(stats "$work/h.json")
        # shellcheck disable=SC2086
        PATH="$d/bin:$PATH" /usr/bin/time -o "$work/rss" -f '%M' $args >/dev/null 2>&1 || true
        printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$shape" "$n" "$what" "$med" "$min" "$max" "$cnt" \
          "$(awk -v k="$(tail -n1 "$work/rss")" 'BEGIN { printf "%.1f", k / 1024 }')"
      done
      rm -rf "$d"
    done
  done
  echo
}

run_bench() {
  cat >"$work/typical.toml" <<'EOF'
version = 1

[[fs]]
path = "."
read = true
write = true

[[fs]]
path = ".git"
read = true

[[fs]]
path = "target"
read = true
write = true

[[net]]
host = "api.example.com"
scheme = "https"

[[env]]
name = "AWS_*"
read = true
EOF
  mkdir -p "$work/ws/.git" "$work/ws/target"
  "$SBX" compile "$work/typical.toml" --workspace "$work/ws" --target linux -o "$work/typical.json"
  local cmds=(
    "/bin/true"
    "$SBX run $work/typical.toml --workspace $work/ws -- /bin/true"
    "$SBX run --artifact $work/typical.json --workspace $work/ws -- /bin/true"
  )
  local names=("bare exec" "sbx run POLICY" "sbx run --artifact")
  if command -v bwrap >/dev/null; then
    cmds+=("bwrap --ro-bind / / --dev /dev --unshare-net /bin/true")
    names+=("bwrap")
  else
    echo "note: bwrap is not installed; no bubblewrap comparison (apt-get install -y bubblewrap)"
  fi
  # Interleaved rounds, so that load from other processes on the machine
  # falls on every command alike rather than on whichever ran last.
  local rounds=10 per=$((RUNS / 10))
  : >"$work/all.txt"
  for _ in $(seq "$rounds"); do
    hyperfine -N --warmup 20 --runs "$per" --export-json "$work/h.json" "${cmds[@]}" >/dev/null 2>&1
    python3 - "$work/h.json" >>"$work/all.txt" <<'EOF'
import json, sys
for i, r in enumerate(json.load(open(sys.argv[1]))["results"]):
    for t in r["times"]:
        print(i, t * 1000)
EOF
  done
  echo "## sbx run start-up: /bin/true under each, $RUNS runs each (interleaved)"
  echo
  python3 - "$work/all.txt" "${names[@]}" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    i, t = line.split()
    rows.setdefault(int(i), []).append(float(t))
names = sys.argv[2:]
med = {i: statistics.median(v) for i, v in rows.items()}
base = med[0]
bw = med.get(3)
print("| command | median ms | p10 ms | p90 ms | added over bare exec ms | share of bwrap's added time |")
print("|---|---:|---:|---:|---:|---:|")
for i, v in sorted(rows.items()):
    v = sorted(v)
    added = med[i] - base
    share = f"{added / (bw - base):.2f}" if bw and i else "-"
    print(f"| {names[i]} | {med[i]:.3f} | {v[len(v) // 10]:.3f} | {v[len(v) * 9 // 10]:.3f} | {added:.3f} | {share} |")
EOF
  echo
  echo "## peak RSS of the loader (sbx run --artifact, /usr/bin/time -v)"
  echo
  for c in "run --artifact $work/typical.json --workspace $work/ws -- /bin/true" \
           "run $work/typical.toml --workspace $work/ws -- /bin/true"; do
    # shellcheck disable=SC2086
    /usr/bin/time -o "$work/rss" -v "$SBX" $c >/dev/null 2>&1
    kb=$(awk -F': ' '/Maximum resident/ {print $2}' "$work/rss")
    printf -- '- `sbx %s`: %s MiB\n' "${c%% --workspace*}" "$(awk -v k="$kb" 'BEGIN { printf "%.1f", k / 1024 }')"
  done
  echo
}

# The network proxy: a 256 MiB loopback download, direct and through
# the proxy's HTTP CONNECT and SOCKS5 tunnels (benches/proxy.rs).
proxy_bench() {
  echo "## network proxy throughput"
  echo
  cargo bench --quiet --bench proxy
  echo
}

case $what in
  compile) compile_bench ;;
  run) run_bench ;;
  proxy) proxy_bench ;;
  all) compile_bench; run_bench; proxy_bench ;;
  *) echo "usage: bench/run.sh [compile|run|proxy|all]" >&2; exit 2 ;;
esac
