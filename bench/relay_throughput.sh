#!/usr/bin/env bash
# The relay's throughput inside `sbx run`: a loopback download of
# SIZE_MIB (default 256) MiB with curl, directly on this host and from
# inside the sandbox through a loopback forward (#36), which moves the
# bytes with the relay's tunnel (runtime::proxy::relay::tunnel, splice),
# RUNS times each (default 5), interleaved; prints each speed and the
# medians. curl's own figure (speed_download) leaves sbx's start-up out.
#   bench/relay_throughput.sh [SBX_BINARY]      (default target/release/sbx)
set -euo pipefail
cd "$(dirname "$0")/.."
sbx=${1:-target/release/sbx}
size=${SIZE_MIB:-256}
runs=${RUNS:-5}
command -v curl >/dev/null && command -v python3 >/dev/null ||
  { echo "needs curl and python3" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$tmp"' EXIT
# A server that answers every request with SIZE_MIB MiB of zeros.
cat > "$tmp/server.py" <<'PY'
import socket, sys, threading
size = int(sys.argv[1]) << 20
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", 0))
l.listen(16)
print(l.getsockname()[1], flush=True)
chunk = bytes(1 << 20)
def serve(c):
    c.recv(65536)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % size)
    for _ in range(size >> 20):
        c.sendall(chunk)
    c.close()
while True:
    c, _ = l.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
python3 "$tmp/server.py" "$size" > "$tmp/port" &
server=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")
printf 'version = 1\n[[net]]\nhost = "127.0.0.1"\nport = %s\n' "$port" > "$tmp/policy.toml"
get='curl -s -o /dev/null --noproxy 127.0.0.1 -w %{speed_download} http://127.0.0.1:'"$port"'/'
direct=() relayed=()
for i in $(seq "$runs"); do
  d=$($get)
  r=$("$sbx" run --workspace "$tmp" "$tmp/policy.toml" -- $get)
  direct+=("$d") relayed+=("$r")
  awk -v d="$d" -v r="$r" -v i="$i" \
    'BEGIN { printf "run %d: direct %.0f MiB/s, relayed %.0f MiB/s (%.0f %%)\n", i, d/1048576, r/1048576, 100*r/d }'
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
awk -v d="$(median "${direct[@]}")" -v r="$(median "${relayed[@]}")" \
  'BEGIN { printf "median: direct %.0f MiB/s, relayed %.0f MiB/s (%.0f %%)\n", d/1048576, r/1048576, 100*r/d }'
