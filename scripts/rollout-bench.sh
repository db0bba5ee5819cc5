#!/usr/bin/env bash
# Times a fleet upgrade as a platform team runs it, whole processes with the
# CLI's default flags: a fleet of N variants (scripts/fleet.sh) whose
# template asks for Nephio's approval policy `always`, initialised
# (`local --init`, every first draft approved), then blueprint v2 published
# (rpkg copy, pull, edit, push, propose, approve) and the set's upstream
# revision raised; the timed run is `porch-variants local DIR`, which takes
# every variant to v2. Two modes take turns, ROUNDS rounds:
#
#   staged   the set's rollout strategy (scripts/fleet.sh --rollout:
#            us-west1 first, then the rest a tenth at a time), approval
#            moving each step on;
#   at-once  no strategy: every upgrade draft in the first pass.
#
# Prints each run (seconds, passes, writes, converged, revisions of the
# blueprint's v2 published downstream), then per size and mode the medians
# and the staged/at-once ratio.
#
#   scripts/rollout-bench.sh [SIZES] [ROUNDS]     # default: 100,1000 and 3
#
# The binary is target/release/porch-variants (`cargo build --release`
# first), or $PORCH_VARIANTS; fleets live under $ROLLOUT_BENCH_DIR (default
# target/rollout-bench) and are removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-100,1000}
rounds=${2:-3}
bin=$(realpath -m "${PORCH_VARIANTS:-target/release/porch-variants}")
work=${ROLLOUT_BENCH_DIR:-target/rollout-bench}
[ -x "$bin" ] || { echo "rollout-bench: $bin is missing (cargo build --release)" >&2; exit 2; }
rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")
trap 'rm -rf "$work"/fleet-*' EXIT
results="$work/results.tsv"
: >"$results"

# prepare N DIR MODE: the fleet, initialised, with v2 published and asked for.
prepare() {
    local n=$1 dir=$2 mode=$3
    if [ "$mode" = staged ]; then
        scripts/fleet.sh "$n" "$dir" --rollout
    else
        scripts/fleet.sh "$n" "$dir"
    fi
    python3 - "$dir/fleet.yaml" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace("        fleet.example.com/managed-by: web-fleet\n",
              "        fleet.example.com/managed-by: web-fleet\n        approval.nephio.org/policy: always\n")
open(p, "w").write(s)
EOF
    (
        cd "$dir"
        "$bin" local --init . --no-progress >/dev/null
        "$bin" rpkg --dir . copy blueprints.web.v1 --workspace v2 >/dev/null
        "$bin" rpkg --dir . pull blueprints.web.v2 work >/dev/null
        sed -i 's/web:1.4.2/web:1.5.0/' work/deployment.yaml
        "$bin" rpkg --dir . push blueprints.web.v2 work >/dev/null
        "$bin" rpkg --dir . propose blueprints.web.v2 >/dev/null
        "$bin" rpkg --dir . approve blueprints.web.v2 >/dev/null
        rm -rf work
        sed -i 's/^    revision: 1$/    revision: 2/' fleet.yaml
    )
}

IFS=, read -r -a sizes <<<"$sizes"
for n in "${sizes[@]}"; do
    for ((r = 1; r <= rounds; r++)); do
        for mode in staged at-once; do
            dir="$work/fleet-$n-$mode-$r"
            prepare "$n" "$dir" "$mode"
            start=$(date +%s.%N)
            (cd "$dir" && "$bin" local . --output json >"$work/out.json") || true
            end=$(date +%s.%N)
            upgraded=$(cd "$dir" && "$bin" rpkg --dir . get --output json | python3 -c '
import json, sys
objs = json.load(sys.stdin)
print(sum(1 for o in objs
          if o["spec"]["repository"].startswith("site-")
          and o["spec"].get("lifecycle") == "Published"
          and o.get("status", {}).get("revision") == 2))')
            python3 - "$n $mode" "$start" "$end" "$work/out.json" "$upgraded" >>"$results" <<'EOF'
import json, sys
label, start, end, out, upgraded = sys.argv[1:]
s = json.load(open(out))
print(f"{label}\t{float(end) - float(start):.3f}\t{s['passes']}\t{len(s['events'])}\t{s['converged']}\t{upgraded}")
EOF
            tail -n 1 "$results"
        done
    done
done

python3 - "$results" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, secs, passes, writes, converged, upgraded = line.rstrip("\n").split("\t")
    rows.setdefault(label, []).append((float(secs), int(passes), int(writes), converged, int(upgraded)))
print("\n| variants | mode | upgrade run (median) | passes | writes | converged | at v2 |")
print("|---|---|---|---|---|---|---|")
for label, runs in rows.items():
    n, mode = label.split()
    med = statistics.median(r[0] for r in runs)
    print(f"| {int(n):,} | {mode} | {med:.2f} s | {runs[0][1]} | {runs[0][2]:,} | "
          f"{'/'.join(r[3] for r in runs)} | {runs[0][4]:,} |")
for label in rows:
    n, mode = label.split()
    if mode == "staged" and f"{n} at-once" in rows:
        s = [r[0] for r in rows[label]]
        a = [r[0] for r in rows[f"{n} at-once"]]
        print(f"{int(n):,} variants: staged / at-once {statistics.median(s) / statistics.median(a):.2f}x "
              f"(pairwise {', '.join(f'{x / y:.2f}' for x, y in zip(s, a))})")
EOF
