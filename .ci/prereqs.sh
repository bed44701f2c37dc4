#!/usr/bin/env bash
# What ./test.sh needs beyond cargo, installed when missing and quick when
# everything is there:
#   - rustup targets: the macOS and Windows type checks, the musl build;
#   - Wine, mingw gcc and dlltool: the Windows loader under Wine;
#   - strace: the crash-safety tests kill writers at exact system calls,
#     and `sbx run --denials` and `sbx learn` trace with it;
#   - git, python3 with venv, node and npm, java, make and gcc: the everyday
#     tools tests/everyday_tools.rs runs under the default policy.
# Without root (or with SBX_NO_INSTALL=1) nothing is installed: each
# missing piece is named with the command that installs it, and the
# script exits 1.
set -euo pipefail

install=1
if [ "${SBX_NO_INSTALL:-}" = 1 ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    install=0
fi

missing=()   # commands to run, for the message

# The toolchain itself is the user's to install; without it nothing else
# can be checked.
for c in cargo rustup; do
    if ! command -v $c >/dev/null 2>&1; then
        echo "test.sh: $c is not on PATH; install Rust with rustup (https://rustup.rs):" >&2
        echo "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh" >&2
        exit 1
    fi
done

targets=()
installed=$(rustup target list --installed)
for t in x86_64-apple-darwin x86_64-pc-windows-gnu x86_64-unknown-linux-musl; do
    grep -qx "$t" <<<"$installed" || targets+=("$t")
done
if [ ${#targets[@]} -gt 0 ]; then
    # rustup is the user's own: no root needed.
    if [ "${SBX_NO_INSTALL:-}" = 1 ]; then
        missing+=("rustup target add ${targets[*]}")
    else
        rustup target add "${targets[@]}"
    fi
fi

# Debian's wine64 installs the loader as /usr/lib/wine/wine64 on some
# versions; the tests call `wine`.
if ! command -v wine >/dev/null 2>&1 && [ -x /usr/lib/wine/wine64 ] && [ $install = 1 ]; then
    ln -sf /usr/lib/wine/wine64 /usr/local/bin/wine
fi

apt=()
command -v wine >/dev/null 2>&1 || apt+=(wine64 wine)
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || apt+=(gcc-mingw-w64-x86-64)
# windows-sys links through raw-dylib, which calls the mingw dlltool.
command -v x86_64-w64-mingw32-dlltool >/dev/null 2>&1 || apt+=(binutils-mingw-w64-x86-64)
command -v strace >/dev/null 2>&1 || apt+=(strace)
# tests/everyday_tools.rs runs these under the default policy.
command -v git >/dev/null 2>&1 || apt+=(git)
if ! command -v python3 >/dev/null 2>&1; then
    apt+=(python3 python3-venv)
elif ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    apt+=(python3-venv)
fi
command -v node >/dev/null 2>&1 || apt+=(nodejs)
command -v npm >/dev/null 2>&1 || apt+=(npm)
command -v java >/dev/null 2>&1 || apt+=(default-jdk-headless)
command -v make >/dev/null 2>&1 || apt+=(make)
command -v gcc >/dev/null 2>&1 || apt+=(gcc)
if [ ${#apt[@]} -gt 0 ]; then
    if [ $install = 1 ]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${apt[@]}" >/dev/null
        if ! command -v wine >/dev/null 2>&1 && [ -x /usr/lib/wine/wine64 ]; then
            ln -sf /usr/lib/wine/wine64 /usr/local/bin/wine
        fi
    else
        missing+=("sudo apt-get install ${apt[*]}")
    fi
fi

if [ ${#missing[@]} -gt 0 ]; then
    echo "test.sh: missing prerequisites; run:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    echo "(or run ./test.sh as root, which installs them)" >&2
    exit 1
fi
