#!/usr/bin/env bash
# Builds kyaml-oracle: Debian's gopkg.in/yaml.v3 v3.0.1 with the kyaml fork's
# emitter changes (patches/kyaml-fork.patch) plus main.go, in GOPATH mode
# (no Go module proxy needed).
#
# usage: tools/kyaml-oracle/build.sh [OUTPUT [WORKDIR]]
#   OUTPUT   path of the binary (default: <repo>/target/kyaml-oracle)
#   WORKDIR  directory for the GOPATH (default: a temporary directory that is
#            removed afterwards)
# environment:
#   YAML_V3_SRC              yaml.v3 source (default /usr/share/gocode/src/gopkg.in/yaml.v3)
#   KYAML_ORACLE_SKIP_TESTS  set to 1 to skip the patch self-tests
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/target/kyaml-oracle}
yaml_src=${YAML_V3_SRC:-/usr/share/gocode/src/gopkg.in/yaml.v3}

missing=()
if ! command -v go >/dev/null 2>&1; then
  missing+=(golang-go)
fi
if [ ! -f "$yaml_src/yaml.go" ] || [ ! -f "$yaml_src/emitterc.go" ]; then
  missing+=(golang-gopkg-yaml.v3-dev)
fi
if ! command -v patch >/dev/null 2>&1; then
  missing+=(patch)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "build.sh: missing build requirements." >&2
  echo "  Install them with: apt-get update && apt-get install -y ${missing[*]}" >&2
  echo "  (golang-go is the Go toolchain; golang-gopkg-yaml.v3-dev puts the yaml.v3 v3.0.1" >&2
  echo "   source in /usr/share/gocode/src/gopkg.in/yaml.v3; or set YAML_V3_SRC)" >&2
  exit 1
fi

if command -v dpkg-query >/dev/null 2>&1 && [ -z "${YAML_V3_SRC:-}" ]; then
  ver=$(dpkg-query -W -f='${Version}' golang-gopkg-yaml.v3-dev 2>/dev/null || true)
  case "$ver" in
    3.0.1*) ;;
    *) echo "build.sh: warning: golang-gopkg-yaml.v3-dev version is '$ver', the patch targets 3.0.1" >&2 ;;
  esac
fi

if [ $# -ge 2 ]; then
  work=$2
  mkdir -p "$work"
  work=$(cd "$work" && pwd)
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/kyaml-oracle.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi

gopath=$work/gopath
pkg=$gopath/src/gopkg.in/yaml.v3
app=$gopath/src/kyaml-oracle
rm -rf "$pkg" "$app"
mkdir -p "$(dirname "$pkg")" "$app"
cp -R "$yaml_src" "$pkg"
chmod -R u+w "$pkg"
rm -f "$pkg"/go.mod "$pkg"/go.sum
if ! patch -p1 -s --forward --no-backup-if-mismatch -d "$pkg" <"$here/patches/kyaml-fork.patch"; then
  echo "build.sh: patches/kyaml-fork.patch does not apply to $yaml_src (expected yaml.v3 v3.0.1)" >&2
  exit 1
fi
cp "$here/main.go" "$here/oracle_test.go" "$app/"

export GOPATH=$gopath GO111MODULE=off GOPROXY=off GOTOOLCHAIN=local
unset GOFLAGS
cache=$(go env GOCACHE 2>/dev/null || true)
if [ -z "$cache" ] || [ "$cache" = off ]; then
  export GOCACHE=$work/gocache
fi

mkdir -p "$(dirname "$out")"
case "$out" in /*) ;; *) out=$PWD/$out ;; esac
(cd "$app" && go build -o "$out" .)
if [ "${KYAML_ORACLE_SKIP_TESTS:-0}" != 1 ]; then
  (cd "$app" && go test . >"$work/test.log" 2>&1) || {
    cat "$work/test.log" >&2
    echo "build.sh: the patched yaml.v3 does not behave like the kyaml fork" >&2
    exit 1
  }
fi
echo "built $out"
