#!/usr/bin/env bash
# Installs what a fresh machine needs to build porch-variants: the wasm targets
# of the pinned toolchain. Idempotent.
#
#   scripts/setup.sh [--playground] [--go] [--containers]
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target add wasm32-wasip2 wasm32-unknown-unknown >/dev/null

playground=false
go=false
containers=false
for arg in "$@"; do
    case "$arg" in
        --playground) playground=true ;;
        --go) go=true ;;
        --containers) containers=true ;;
        *) echo "setup: unknown option $arg (expected --playground, --go, --containers)" >&2; exit 2 ;;
    esac
done

# --go: Debian's golang-go, installed with apt-get when `go` is missing. The
# Go js/wasm runtime's tests (host/tests/gojs_runtime.rs) build their Go KRM
# function fixture with it (GOOS=js GOARCH=wasm) and run it beside Go's own
# wasm_exec.js under node; without it they skip.
if $go && ! command -v go >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing golang-go (apt-get)"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go >/dev/null
    else
        echo "setup: go is missing: install Debian's golang-go (apt-get install golang-go)" >&2
        exit 1
    fi
fi

# --containers: Debian's podman, runc and busybox-static, installed with
# apt-get when podman is missing. The container runtime's real test
# (host/tests/function_runner.rs) builds a busybox function image and runs
# it with podman as kpt runs images; without them it skips.
if $containers && ! command -v podman >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing podman, runc and busybox-static (apt-get)"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc busybox-static >/dev/null
    else
        # Optional: the real container test skips without them.
        echo "setup: podman is missing (the real container test will skip): install Debian's podman, runc and busybox-static to run it" >&2
    fi
fi

# --playground: also what the browser playground's tests need
# (scripts/playground-test.sh passes it): Debian's Chromium, installed with
# apt-get when /usr/bin/chromium is missing, and the playground's npm
# packages (npm ci when its lock file changed since the last install).
$playground || exit 0
if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing chromium (apt-get)"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "setup: /usr/bin/chromium is missing: install Debian's chromium (apt-get install chromium)" >&2
        exit 1
    fi
fi
if ! cmp -s playground/package-lock.json playground/node_modules/.porch-variants-lock 2>/dev/null; then
    echo "setup: npm ci (playground)"
    (cd playground && npm ci --no-audit --no-fund --loglevel=error)
    cp playground/package-lock.json playground/node_modules/.porch-variants-lock
fi
