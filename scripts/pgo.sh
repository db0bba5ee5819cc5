#!/usr/bin/env bash
# Profile-guided optimisation (PGO) of the YAML layer, natively.
#
#   scripts/pgo.sh profile      # writes target/pgo/pv-core.profdata
#   scripts/pgo.sh bench [ARGS] # the YAML benchmark on a PGO build
#                               # (`cargo bench --bench yaml ARGS`)
#   scripts/pgo.sh build ARGS   # `cargo build --release ARGS` with the
#                               # profile, into target/pgo/build/release
#                               # (e.g. `-p porch-variants-core --example
#                               # yaml_profile`, for scripts/yaml-ab.sh)
#
# The profile comes from an instrumented build of the `reformat` example
# (parse + emit, what `porch-variants fmt` and every package edit do) run
# over the repository's own YAML: CRDs, examples, conformance cases and test
# inputs. The benchmark's generated package is not among them, and the
# fuzz corpora (mostly invalid input) are left out. `bench` and `build` make
# the profile first when it is missing or older than a source file of the
# core. Code the training does not run (anything but the YAML layer) has no
# profile, and the compiler treats it as cold: profile only what the YAML
# layer dominates.
#
# PGO builds live in target/pgo/build: their compiler flags differ, so they
# share nothing with target/release. llvm-profdata comes from rustup's
# llvm-tools component, which this script adds.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
pgo=$root/target/pgo
profile=$pgo/pv-core.profdata

llvm_profdata() {
    rustup component add llvm-tools >/dev/null 2>&1 || true
    local sysroot host tool
    sysroot=$(rustc --print sysroot)
    host=$(rustc -vV | sed -n 's/^host: //p')
    tool=$sysroot/lib/rustlib/$host/bin/llvm-profdata
    if [ ! -x "$tool" ]; then
        echo "pgo: $tool is missing (rustup component add llvm-tools)" >&2
        exit 1
    fi
    echo "$tool"
}

make_profile() {
    local tool corpus raw n
    tool=$(llvm_profdata)
    corpus=$pgo/corpus
    raw=$pgo/raw
    rm -rf "$corpus" "$raw" "$pgo/out"
    mkdir -p "$corpus"
    # The training inputs, flattened into one directory (numbered, since
    # names repeat).
    n=0
    while IFS= read -r -d '' file; do
        n=$((n + 1))
        cp "$file" "$corpus/$n.yaml"
    done < <(git ls-files -z -- '*.yaml' '*.yml' ':!:fuzz/**' ':!:**/fuzz/**')
    echo "pgo: training on $n YAML files of the repository"
    RUSTFLAGS="-Cprofile-generate=$raw" CARGO_TARGET_DIR=$pgo/instrumented \
        cargo build --locked --release -p porch-variants-core --example reformat
    for _ in 1 2 3; do
        "$pgo/instrumented/release/examples/reformat" "$corpus" "$pgo/out" >/dev/null
    done
    "$tool" merge -o "$profile" "$raw"
    echo "pgo: wrote $profile"
}

profile_is_fresh() {
    [ -f "$profile" ] || return 1
    [ -z "$(find core-wasm/src core-wasm/Cargo.toml Cargo.lock -newer "$profile" -print -quit)" ]
}

# Runs cargo with the profile (made first when stale), into target/pgo/build.
with_profile() {
    profile_is_fresh || make_profile
    RUSTFLAGS="-Cprofile-use=$profile" CARGO_TARGET_DIR=$pgo/build cargo "$@"
}

case "${1:-}" in
    profile)
        make_profile
        ;;
    bench)
        shift
        with_profile bench --locked -p porch-variants-core --bench yaml "$@"
        ;;
    build)
        shift
        with_profile build --locked --release "$@"
        ;;
    *)
        echo "usage: scripts/pgo.sh profile | bench [ARGS] | build ARGS" >&2
        exit 2
        ;;
esac
