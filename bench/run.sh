#!/usr/bin/env bash
# Whole-process benchmarks (docs/performance.md has the method and the
# figures): compile time and peak RSS per rule count and target, and
# `sbx run` start-up overhead against a bare exec and bubblewrap, and the
# network proxy's throughput against a direct download.
#
#   bench/run.sh [compile|run|mounts|protect|proxy|all]    (default: all;
#   mounts, which needs root, only when named)
#
# Needs hyperfine and, for the comparison, bwrap:
#   apt-get install -y hyperfine bubblewrap
# Environment: COUNTS (rules per policy, default "10000 100000"), SHAPES
# (bench/gen_policy.py's shapes, default all), TARGETS (default "all
# check": `compile --target all` and `check`; any compile target works),
# RUNS (sbx run samples, default 1000), JOBS (`--jobs` for compile and
# check; default: one per core), SBX (binary; default: a fresh release
# build).
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

# Median, min and max of a hyperfine JSON export, in ms, the run count and
# the mean CPU time (user + system, ms), one line per command. CPU time
# barely moves when other processes load the machine; wall time does.
stats() {
  python3 - "$1" <<'EOF'
import json, statistics, sys
for r in json.load(open(sys.argv[1]))["results"]:
    t = sorted(x * 1000 for x in r["times"])
    cpu = (r["user"] + r["system"]) * 1000
    print(f'{statistics.median(t):.3f} {t[0]:.3f} {t[-1]:.3f} {len(t)} {cpu:.3f}')
EOF
}

echo "# sbx benchmarks: $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# sbx: $SBX ($("$SBX" --version))"
echo

compile_bench() {
  echo "## compile: median wall ms (min-max, runs) and peak RSS, per policy shape"
  echo
  echo "| shape | rules | command | median ms | min ms | max ms | runs | CPU ms | peak RSS MiB |"
  echo "|---|---:|---|---:|---:|---:|---:|---:|---:|"
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
        [ -n "${JOBS:-}" ] && args="$args --jobs $JOBS"
        # `commands` resolves its programs through PATH.
        PATH="$d/bin:$PATH" hyperfine -N --warmup 1 --runs "$runs" --export-json "$work/h.json" \
          "$args" >/dev/null 2>&1
        read -r med min max cnt cpu < <(stats "$work/h.json")
        # shellcheck disable=SC2086
        PATH="$d/bin:$PATH" /usr/bin/time -o "$work/rss" -f '%M' $args >/dev/null 2>&1 || true
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$shape" "$n" "$what" "$med" "$min" "$max" "$cnt" "$cpu" \
          "$(awk -v k="$(tail -n1 "$work/rss")" 'BEGIN { printf "%.1f", k / 1024 }')"
      done
      rm -rf "$d"
    done
  done
  echo
}

# ROUNDS rounds of RUNS / 10 runs of each command after WARMUP runs,
# interleaved so that load from other processes on the machine falls on
# every command alike rather than on whichever ran last; each run's wall
# time appended to OUT as "INDEX MS", and each round's mean CPU time
# (user + system of the command and every child it waits for) as "cpu
# INDEX MS".
interleaved() {
  local rounds=$1 warmup=$2 out=$3
  shift 3
  : >"$out"
  for _ in $(seq "$rounds"); do
    hyperfine -N --warmup "$warmup" --runs "$((RUNS / 10))" --export-json "$work/h.json" "$@" >/dev/null 2>&1
    python3 - "$work/h.json" >>"$out" <<'EOF'
import json, sys
for i, r in enumerate(json.load(open(sys.argv[1]))["results"]):
    for t in r["times"]:
        print(i, t * 1000)
    print("cpu", i, (r["user"] + r["system"]) * 1000)
EOF
  done
}

# The policies `run` and `mounts` time, compiled for this workspace.
make_run_policies() {
  [ -f "$work/typical.json" ] && return
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
  "$SBX" compile "$work/typical.toml" --workspace "$work/ws" --target linux -o "$work/typical.json" 2>/dev/null
  # The same policy with Landlock alone (what the namespace layer costs:
  # the typical policy gets mount and PID namespaces for `.git`), and
  # without its [[net]] rule (a network namespace too).
  { cat "$work/typical.toml"; printf '\n[linux]\nnamespaces = "never"\n'; } >"$work/never.toml"
  "$SBX" compile "$work/never.toml" --workspace "$work/ws" --target linux -o "$work/never.json" 2>/dev/null
  grep -v -e '^\[\[net\]\]' -e '^host' -e '^scheme' "$work/typical.toml" >"$work/nonet.toml"
  "$SBX" compile "$work/nonet.toml" --workspace "$work/ws" --target linux -o "$work/nonet.json" 2>/dev/null
  # With a port rule instead of the host rule: mount and PID namespaces
  # only (the carve-out), on the host's network.
  sed -e '/^host/d' -e 's/^scheme = .*/port = 443/' "$work/typical.toml" >"$work/port.toml"
  "$SBX" compile "$work/port.toml" --workspace "$work/ws" --target linux -o "$work/port.json" 2>/dev/null
}

run_bench() {
  make_run_policies
  local cmds=(
    "/bin/true"
    "$SBX run $work/typical.toml --workspace $work/ws -- /bin/true"
    "$SBX run --artifact $work/typical.json --workspace $work/ws -- /bin/true"
    "$SBX run --artifact $work/never.json --workspace $work/ws -- /bin/true"
    "$SBX run --artifact $work/nonet.json --workspace $work/ws -- /bin/true"
    "$SBX run --artifact $work/port.json --workspace $work/ws -- /bin/true"
    "$SBX run $work/nonet.toml --workspace $work/ws -- /bin/true"
  )
  # The last sbx row is issue #38's "default-shape policy": no [[net]],
  # run from its file.
  local names=("bare exec" "sbx run POLICY" "sbx run --artifact" "--artifact, namespaces = never" "--artifact, no [[net]]" "--artifact, port rule" "sbx run POLICY, no [[net]]")
  # The kernel's own price of the namespaces (bwrap --unshare-net pays the
  # network one too): util-linux unshare with and without them (the
  # differences), the network namespace alone and the layer's three with
  # a fresh /proc.
  if command -v unshare >/dev/null; then
    cmds+=("unshare /bin/true" "unshare --net /bin/true"
      "unshare --net --mount --pid --fork --mount-proc /bin/true")
    names+=("unshare" "unshare --net" "unshare, the layer's namespaces")
  fi
  if command -v bwrap >/dev/null; then
    cmds+=("bwrap --ro-bind / / --dev /dev --unshare-net /bin/true")
    names+=("bwrap")
  else
    echo "note: bwrap is not installed; no bubblewrap comparison (apt-get install -y bubblewrap)"
  fi
  interleaved 10 20 "$work/all.txt" "${cmds[@]}"
  echo "## sbx run start-up: /bin/true under each, $RUNS runs each (interleaved)"
  echo
  python3 - "$work/all.txt" "${names[@]}" <<'EOF'
import statistics, sys
rows, cpus = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "cpu":
        cpus.setdefault(int(f[1]), []).append(float(f[2]))
    else:
        rows.setdefault(int(f[0]), []).append(float(f[1]))
names = sys.argv[2:]
med = {i: statistics.median(v) for i, v in rows.items()}
cpu = {i: statistics.median(v) for i, v in cpus.items()}
bw = names.index("bwrap") if "bwrap" in names else None
def share(d, i):
    return f"{(d[i] - d[0]) / (d[bw] - d[0]):.2f}" if bw is not None and i else "-"
print("| command | median ms | p10 ms | p90 ms | added ms | share of bwrap's added time | CPU ms | added CPU ms | share of bwrap's added CPU |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for i, v in sorted(rows.items()):
    v = sorted(v)
    print(f"| {names[i]} | {med[i]:.3f} | {v[len(v) // 10]:.3f} | {v[len(v) * 9 // 10]:.3f} | "
          f"{med[i] - med[0]:.3f} | {share(med, i)} | {cpu[i]:.3f} | {cpu[i] - cpu[0]:.3f} | {share(cpu, i)} |")
# The floor of a run in a private network namespace: sbx's Landlock path
# alone plus what the kernel charges for the namespaces themselves.
if bw is not None and "unshare --net" in names:
    never, u = names.index("--artifact, namespaces = never"), names.index("unshare")
    print()
    for what, d in (("wall", med), ("CPU", cpu)):
        for ns, label in (("unshare --net", "a network namespace"),
                          ("unshare, the layer's namespaces", "network, mount and PID namespaces and a /proc")):
            cost = d[names.index(ns)] - d[u]
            floor = d[never] - d[0] + cost
            print(f"- {what}: {label} alone cost {cost:.3f} ms ({ns} minus unshare); Landlock alone "
                  f"plus that is {floor:.3f} ms, {floor / (d[bw] - d[0]):.2f} of bwrap's added time")
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

# `sbx run` start-up per protected path (POLICY.md §7a, docs/protected.md):
# a writable workspace holding K git repositories one level down, each
# adding its hooks and config to the protections; the slope over K is the
# cost of one protected path (finding it, and enforcing it).
protect_bench() {
  echo "## sbx run start-up per protected path (PROTECT_REPOS, default \"0 10 50 100\")"
  echo
  echo "| repositories | protected paths | median ms | added per protected path ms |"
  echo "|---:|---:|---:|---:|"
  local base_ms="" base_n=""
  printf 'version = 1\n\n[[fs]]\npath = "."\nread = true\nwrite = true\n' >"$work/protect.toml"
  for k in ${PROTECT_REPOS:-0 10 50 100}; do
    local ws="$work/protect$k"
    mkdir -p "$ws/.git/hooks" "$ws/.vscode"
    printf '[core]\n\tbare = false\n' >"$ws/.git/config"
    for i in $(seq 1 "$k"); do
      mkdir -p "$ws/r$i/.git/hooks"
      printf '[core]\n\tbare = false\n' >"$ws/r$i/.git/config"
    done
    local n
    n=$("$SBX" compile "$work/protect.toml" --workspace "$ws" --target ir 2>/dev/null |
      python3 -c 'import json,sys; print(sum(g["source"]["kind"] == "protected" for g in json.load(sys.stdin)["fs"]))')
    hyperfine -N --warmup 20 --runs "$((RUNS / 10))" --export-json "$work/h.json" \
      "$SBX run $work/protect.toml --workspace $ws --quiet -- /bin/true" >/dev/null 2>&1
    local med
    read -r med _ < <(stats "$work/h.json")
    local per="-"
    if [ -z "$base_ms" ]; then
      base_ms=$med base_n=$n
    elif [ "$n" != "$base_n" ]; then
      per=$(awk -v a="$med" -v b="$base_ms" -v n="$n" -v m="$base_n" 'BEGIN { printf "%.4f", (a - b) / (n - m) }')
    fi
    printf '| %s | %s | %s | %s |\n' "$k" "$n" "$med" "$per"
  done
  echo
}

# `sbx run` start-up on a host with many mounts (snaps, containers): the
# same commands in two mount namespaces, one as the host's and one with
# MOUNTS (default 1000) more tmpfs mounts, entered with nsenter (its cost
# is in every row alike). Cloning the host's mounts into a new namespace
# and detaching them again grows with their number. Needs root.
mounts_bench() {
  [ "$(id -u)" = 0 ] || { echo "error: bench/run.sh mounts needs root (it mounts)" >&2; exit 2; }
  make_run_policies
  local n=${MOUNTS:-1000}
  ns="$work/ns"
  mkdir -p "$ns"
  # A private mount for the namespace files, undone at the end.
  mount --bind "$ns" "$ns" && mount --make-private "$ns"
  trap 'umount "$ns/few" "$ns/many" 2>/dev/null; umount "$ns" 2>/dev/null; rm -rf "$work"' EXIT
  touch "$ns/few" "$ns/many"
  unshare --mount="$ns/few" --propagation private true
  unshare --mount="$ns/many" --propagation private true
  nsenter --mount="$ns/many" sh -c "mkdir -p /mnt/sbx-bench-mounts && for i in \$(seq $n); do
    mkdir -p /mnt/sbx-bench-mounts/\$i && mount -t tmpfs -o size=1m none /mnt/sbx-bench-mounts/\$i; done"
  local few_count many_count
  few_count=$(nsenter --mount="$ns/few" cat /proc/self/mountinfo | wc -l)
  many_count=$(nsenter --mount="$ns/many" cat /proc/self/mountinfo | wc -l)
  local what=(
    "/bin/true"
    "$SBX run --artifact $work/never.json --workspace $work/ws -- /bin/true"
    "$SBX run --artifact $work/nonet.json --workspace $work/ws -- /bin/true"
    "$SBX run $work/typical.toml --workspace $work/ws -- /bin/true"
  )
  local names=("bare exec" "--artifact, namespaces = never" "--artifact, no [[net]]" "sbx run POLICY (typical)")
  if command -v bwrap >/dev/null; then
    what+=("bwrap --ro-bind / / --dev /dev --unshare-net /bin/true")
    names+=("bwrap")
  fi
  local cmds=()
  for c in "${what[@]}"; do
    cmds+=("nsenter --mount=$ns/few $c" "nsenter --mount=$ns/many $c")
  done
  local rounds=5
  interleaved "$rounds" 5 "$work/mounts.txt" "${cmds[@]}"
  echo "## sbx run start-up with $n more mounts ($few_count against $many_count lines of mountinfo), $rounds x $((RUNS / 10)) runs each (interleaved)"
  echo
  python3 - "$work/mounts.txt" "$few_count" "$many_count" "${names[@]}" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] != "cpu":
        rows.setdefault(int(f[0]), []).append(float(f[1]))
few, many = int(sys.argv[2]), int(sys.argv[3])
names = sys.argv[4:]
med = {i: statistics.median(v) for i, v in rows.items()}
print("| command | median ms, host's mounts | median ms, more mounts | added per 1,000 mounts ms |")
print("|---|---:|---:|---:|")
for k, name in enumerate(names):
    a, b = med[2 * k], med[2 * k + 1]
    print(f"| {name} | {a:.2f} | {b:.2f} | {(b - a) * 1000 / (many - few):.2f} |")
EOF
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
  mounts) mounts_bench ;;
  protect) protect_bench ;;
  proxy) proxy_bench ;;
  all) compile_bench; run_bench; protect_bench; proxy_bench ;;
  *) echo "usage: bench/run.sh [compile|run|mounts|protect|proxy|all]" >&2; exit 2 ;;
esac
