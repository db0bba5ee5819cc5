# Recipes mirror the scripts so the project also works without `just`.

# Build everything and run the main job on the examples.
quickstart:
    scripts/quickstart.sh

# Run every test (what CI runs).
test:
    scripts/test.sh

# Build the browser playground and serve it on 127.0.0.1 (prints the URL).
playground *ARGS:
    scripts/playground.sh {{ARGS}}

# The playground's unit tests and its end-to-end test in Chromium.
playground-test:
    scripts/playground-test.sh

# Benchmarks of the YAML layer (release).
bench:
    cargo bench -p porch-variants-core --bench yaml

# The same on a profile-guided build (trained on the repository's YAML).
bench-pgo:
    scripts/pgo.sh bench

# The YAML layer against Go's yaml.v3 + kyaml encoder (needs `just oracle`).
bench-yaml-peer:
    cargo bench -p porch-variants-core --bench yaml_peer

# Rebuild the kyaml oracle (needs Debian's golang-go and golang-gopkg-yaml.v3-dev).
oracle:
    tools/kyaml-oracle/build.sh

# The kpt functions' wasm modules (Go js/wasm ABI) into target/kpt-wasm/.
kpt-wasm:
    scripts/build-kpt-wasm.sh

# Golden tests of the kpt functions (native, wasm under node, in process).
kpt-golden:
    cargo test -p porch-variants-functions --test golden

# Regenerate the golden expectations from the code (review the diff!).
kpt-golden-update:
    UPDATE_GOLDEN=1 cargo test -p porch-variants-functions --test golden

# Native binary vs wasm module on a 1,000-resource package.
kpt-bench:
    cargo bench -p porch-variants-functions --bench native_vs_wasm
