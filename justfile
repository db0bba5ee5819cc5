# Recipes mirror the scripts so the project also works without `just`.

# Build everything and run the main job on the examples.
quickstart:
    scripts/quickstart.sh

# Run every test (what CI runs).
test:
    scripts/test.sh

# Benchmarks of the YAML layer (release).
bench:
    cargo bench -p porch-variants-core --bench yaml

# Rebuild the kyaml oracle (needs Debian's golang-go and golang-gopkg-yaml.v3-dev).
oracle:
    tools/kyaml-oracle/build.sh
