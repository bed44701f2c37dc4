#!/usr/bin/env bash
# The escape battery again as an unprivileged user (uid/gid 65534, no
# groups, no capabilities), for a build's target directory:
#   tests/linux_escape/unprivileged.sh [--target TRIPLE]
# Both binaries are copied where that user can execute them (the
# checkout may sit under a directory it cannot enter). Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "$(id -u)" != 0 ]; then
  echo "unprivileged.sh: needs root (it drops to uid 65534 itself)" >&2
  exit 1
fi
exe=$(cargo test "$@" --test linux_escape --no-run --message-format=json 2>/dev/null |
  sed -n 's/.*"executable":"\([^"]*linux_escape[^"]*\)".*/\1/p' | tail -n1)
dir=$(dirname "$(dirname "$exe")")
[ -x "$exe" ] && [ -x "$dir/sbx" ] || { echo "unprivileged.sh: no test binary ($exe)" >&2; exit 1; }
tmp=$(mktemp -d)
# A directory of that user outside every temp directory, for
# ns_metadata_outside_temp: a policy there needs the namespace layer for
# nothing but keeping the user's files' modes and times.
nontemp=$(mktemp -d -p /var/lib sbx-escape-XXXXXX)
chown 65534:65534 "$nontemp"
trap 'rm -rf "$tmp" "$nontemp"' EXIT
cp "$exe" "$tmp/linux_escape"
cp "$dir/sbx" "$tmp/sbx"
chmod 755 "$tmp" "$tmp/linux_escape" "$tmp/sbx"
cd "$tmp"
SBX_BIN="$tmp/sbx" SBX_ESCAPE_NONTEMP="$nontemp" HOME=/nonexistent setpriv --reuid=65534 --regid=65534 --clear-groups \
  --inh-caps=-all --bounding-set=-all ./linux_escape
