#!/usr/bin/env bash
# Builds everything (the porch-variants binary with its embedded component,
# the kpt functions native and as kpt-ABI wasm modules, the browser
# playground) and runs the main job: the local-Git reconciler on a copy of
# examples/fleet (the checkout is never written to).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --workspace
echo "== kpt function wasm modules (target/kpt-wasm/)"
scripts/build-kpt-wasm.sh
echo "== browser playground (playground/build/; scripts/playground.sh --release serves it)"
scripts/playground.sh --build-only --no-cargo --release
demo=target/fleet-demo
rm -rf "$demo"
cp -r examples/fleet "$demo"
echo "== porch-variants local --init $demo   (creates the Git repositories, clones one draft per variant)"
target/release/porch-variants local --init "$demo"
echo "== porch-variants local $demo   (again: a fixed point, nothing to do)"
target/release/porch-variants local "$demo"
echo "== porch-variants rpkg --dir $demo list --repo team-a"
target/release/porch-variants rpkg --dir "$demo" list --repo team-a
draft=$(git --git-dir "$demo/repos/team-a" for-each-ref --format='%(refname:short)' refs/heads/drafts/web/ | head -1)
echo "== the team-a draft ($draft), rendered: web/deployment.yaml has namespace team-a and the blueprint's labels"
git --git-dir "$demo/repos/team-a" show "$draft:web/deployment.yaml" | head -14
echo "Status of every variant: $demo/.porch-variants/status/; repositories: $demo/repos/"
