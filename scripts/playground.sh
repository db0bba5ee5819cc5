#!/usr/bin/env bash
# Builds the browser playground (playground/) and serves it on 127.0.0.1.
#
#   scripts/playground.sh [--build-only] [--no-cargo] [--release] [--port N]
#
# 1. cargo build -p porch-variants (its build script builds the component);
# 2. porch-variants component export playground/build/porch-variants.wasm;
# 3. npm ci in playground/ (when package-lock.json changed since the last);
# 4. node build.mjs: jco transpile, the YAML library, the gallery;
# 5. node serve.mjs: prints the URL and serves until Ctrl+C.
#
# --build-only stops after step 4; --no-cargo skips step 1 and exports from
# the binary already built; --release uses the release profile; --port
# (default 8787, or $PORT) picks the port, 0 a free one.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=debug
serve=1
cargo=1
port="${PORT:-8787}"
while [ $# -gt 0 ]; do
    case "$1" in
        --build-only) serve=0 ;;
        --no-cargo) cargo=0 ;;
        --release) profile=release ;;
        --port)
            [ $# -ge 2 ] || { echo "playground: --port needs a value" >&2; exit 2; }
            port="$2"
            shift
            ;;
        -h | --help)
            sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "playground: unknown argument $1 (see --help)" >&2
            exit 2
            ;;
    esac
    shift
done

for tool in node npm; do
    command -v "$tool" >/dev/null || { echo "playground: $tool is not installed" >&2; exit 1; }
done

binary="${CARGO_TARGET_DIR:-target}/$profile/porch-variants"
if [ "$cargo" = 1 ]; then
    echo "== cargo build -p porch-variants ($profile)"
    if [ "$profile" = release ]; then
        cargo build --locked -p porch-variants --release
    else
        cargo build --locked -p porch-variants
    fi
fi
[ -x "$binary" ] || { echo "playground: $binary is missing (build it, or drop --no-cargo)" >&2; exit 1; }

echo "== component export"
"$binary" component export playground/build/porch-variants.wasm

cd playground
# npm ci only when the lock file changed since the last install.
stamp=node_modules/.porch-variants-lock
if ! cmp -s package-lock.json "$stamp" 2>/dev/null; then
    echo "== npm ci (playground)"
    npm ci --no-audit --no-fund --loglevel=error
    cp package-lock.json "$stamp"
fi

echo "== jco transpile, YAML library, gallery"
node build.mjs

if [ "$serve" = 1 ]; then
    exec node serve.mjs --port "$port"
fi
