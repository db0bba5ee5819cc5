#!/usr/bin/env bash
# Rebuilds the expectations of the YAML round-trip corpus with kyaml-oracle.
#
# usage: tools/kyaml-oracle/regen-corpus.sh [--check]
#   --check  do not write anything; fail if an expectation is missing or
#            differs from what the oracle produces now
# environment:
#   KYAML_ORACLE  oracle binary to use (default: <repo>/target/kyaml-oracle,
#                 built with build.sh when it does not exist)
#   CORPUS_DIR    corpus directory (default: <repo>/core-wasm/tests/corpus/roundtrip)
#
# For every input NN-name.yaml (any *.yaml that is not *.expected.yaml):
#   - the oracle succeeds: its stdout is NN-name.expected.yaml
#   - the oracle fails:    its stderr is NN-name.expected-error.txt
# Inputs whose name contains "invalid" must fail, all others must succeed;
# anything else is reported as an error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
corpus=${CORPUS_DIR:-$root/core-wasm/tests/corpus/roundtrip}
oracle=${KYAML_ORACLE:-$root/target/kyaml-oracle}

check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

if [ ! -x "$oracle" ]; then
  if [ -n "${KYAML_ORACLE:-}" ]; then
    echo "regen-corpus.sh: KYAML_ORACLE=$oracle is not executable" >&2
    exit 1
  fi
  "$here/build.sh" "$oracle"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kyaml-corpus.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

status=0
count=0
shopt -s nullglob
for input in "$corpus"/*.yaml; do
  case "$input" in *.expected.yaml) continue ;; esac
  base=${input%.yaml}
  name=$(basename "$input")
  count=$((count + 1))
  if "$oracle" "$input" >"$tmp/out" 2>"$tmp/err"; then
    result=ok
  else
    rc=$?
    if [ $rc -ne 1 ]; then
      echo "ERROR $name: oracle exited with status $rc" >&2
      cat "$tmp/err" >&2
      status=1
      continue
    fi
    result=error
  fi
  case "$name" in *invalid*) want=error ;; *) want=ok ;; esac
  if [ "$result" != "$want" ]; then
    if [ "$want" = ok ]; then
      echo "ERROR $name: the oracle rejected it: $(cat "$tmp/err")" >&2
    else
      echo "ERROR $name: named invalid but the oracle accepted it" >&2
    fi
    status=1
    continue
  fi
  if [ "$result" = ok ]; then
    produced=$tmp/out expected=$base.expected.yaml stale=$base.expected-error.txt
  else
    produced=$tmp/err expected=$base.expected-error.txt stale=$base.expected.yaml
  fi
  if [ $check = 1 ]; then
    if [ ! -f "$expected" ] || ! cmp -s "$produced" "$expected"; then
      echo "OUTDATED $(basename "$expected")" >&2
      status=1
    fi
    if [ -e "$stale" ]; then
      echo "STALE $(basename "$stale")" >&2
      status=1
    fi
  else
    cp "$produced" "$expected"
    rm -f "$stale"
  fi
done

for expected in "$corpus"/*.expected.yaml "$corpus"/*.expected-error.txt; do
  case "$expected" in
    *.expected.yaml) input=${expected%.expected.yaml}.yaml ;;
    *) input=${expected%.expected-error.txt}.yaml ;;
  esac
  if [ ! -f "$input" ]; then
    echo "ORPHAN $(basename "$expected") has no input $(basename "$input")" >&2
    status=1
  fi
done

if [ $count = 0 ]; then
  echo "regen-corpus.sh: no inputs in $corpus" >&2
  exit 1
fi
if [ $check = 1 ]; then
  [ $status = 0 ] && echo "all $count expectations are up to date"
else
  [ $status = 0 ] && echo "regenerated $count expectations in $corpus"
fi
exit $status
