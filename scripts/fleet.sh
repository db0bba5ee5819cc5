#!/usr/bin/env bash
# Makes a fleet of N variants from examples/fleet for measuring local mode as
# a user runs it: the blueprint, its four regional endpoint ConfigMaps, N
# deployment repositories labelled tier=edge (regions in turn) and the
# example's PackageVariantSet template over them (a repository selector).
#
#   scripts/fleet.sh N DIR [--rollout]   # then: porch-variants local --init DIR; porch-variants local DIR
#
# --rollout gives the set examples/fleet's rollout strategy (us-west1
# first, then the rest, a tenth of them at a time).
set -euo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ] || ! [[ "$1" =~ ^[0-9]+$ ]] || { [ $# -eq 3 ] && [ "$3" != --rollout ]; }; then
    echo "usage: scripts/fleet.sh N DIR [--rollout]" >&2
    exit 2
fi
n=$1
dir=$2
rollout=${3:-}
src="$(cd "$(dirname "$0")/.." && pwd)/examples/fleet"
rm -rf "$dir"
mkdir -p "$dir/packages"
cp -r "$src/packages/blueprints" "$dir/packages/"
cp "$src/endpoints.yaml" "$dir/"
regions=(us-west1 eu-west1 asia-east1 us-east1)
{
    cat <<'EOF'
apiVersion: config.porch.kpt.dev/v1alpha1
kind: Repository
metadata:
  name: blueprints
spec:
  type: git
  content: Package
  git:
    branch: main
EOF
    for ((i = 1; i <= n; i++)); do
        printf -- '---\napiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: site-%05d\n  labels:\n    tier: edge\n    region: %s\nspec:\n  type: git\n  deployment: true\n  git:\n    branch: main\n' \
            "$i" "${regions[$((i % 4))]}"
    done
} >"$dir/repositories.yaml"
cat >"$dir/fleet.yaml" <<'EOF'
# The example fleet's template over every repository labelled tier=edge.
apiVersion: config.porch.kpt.dev/v1alpha2
kind: PackageVariantSet
metadata:
  name: web-fleet
spec:
  upstream:
    repo: blueprints
    package: web
    revision: 1
  targets:
  - repositorySelector:
      matchLabels:
        tier: edge
    template:
      downstream:
        packageExpr: "'web'"
      labelExprs:
      - key: fleet.example.com/region
        valueExpr: repository.labels.region
      annotations:
        fleet.example.com/managed-by: web-fleet
      packageContext:
        dataExprs:
        - key: region
          valueExpr: repository.labels.region
        - key: site
          valueExpr: repository.name
      injectors:
      - kind: ConfigMap
        nameExpr: repository.labels.region + '-endpoints'
EOF
if [ "$rollout" = --rollout ]; then
    cat >>"$dir/fleet.yaml" <<'EOF'
  rolloutStrategy:
    steps:
    - name: us-west1
      selector:
        matchLabels:
          fleet.example.com/region: us-west1
    - name: everyone
      maxUpdate: 10%
EOF
fi
