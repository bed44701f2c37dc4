#!/usr/bin/env bash
# Toolchain for building sbx for Windows and testing it under Wine.
# Idempotent: installs only what is missing. Needs root (apt-get).
set -euo pipefail

need_apt=()
command -v wine >/dev/null 2>&1 || need_apt+=(wine64 wine)
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || need_apt+=(gcc-mingw-w64-x86-64)
# windows-sys 0.61 links through raw-dylib, which calls the mingw dlltool.
command -v x86_64-w64-mingw32-dlltool >/dev/null 2>&1 || need_apt+=(binutils-mingw-w64-x86-64)

if [ ${#need_apt[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

if ! rustup target list --installed | grep -qx x86_64-pc-windows-gnu; then
    rustup target add x86_64-pc-windows-gnu
fi

# Debian's wine64 package installs the loader as wine64 only on some
# versions; the tests call `wine`.
if ! command -v wine >/dev/null 2>&1 && [ -x /usr/lib/wine/wine64 ]; then
    ln -sf /usr/lib/wine/wine64 /usr/local/bin/wine
fi

wine --version
x86_64-w64-mingw32-gcc --version | head -n1
x86_64-w64-mingw32-dlltool --version | head -n1
