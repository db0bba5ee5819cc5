#!/usr/bin/env python3
"""Times `porch-variants fn render` as whole processes on packages of 1,000
and 10,000 Deployments (scripts/render-package.py's small shape), each
builtin alone against the same package with an empty pipeline (read, parse,
emit, write: the floor), the runs taking turns, ROUNDS rounds; prints the
median seconds and the ratio to the floor.

    cargo build --release && scripts/render-bench.py [ROUNDS]   # default 5

The binary is target/release/porch-variants, or $PORCH_VARIANTS. Each run
renders a fresh copy of the package.
"""
import os, shutil, statistics, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
binary = os.environ.get("PORCH_VARIANTS", os.path.join(here, "..", "target", "release", "porch-variants"))
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
pipelines = {
    "empty pipeline": "",
    "set-annotations": "  - image: set-annotations:v0.1.5\n    configMap:\n      team: platform\n",
    "set-namespace": "  - image: set-namespace:v0.4\n    configMap:\n      namespace: prod\n",
    "set-labels": "  - image: set-labels:v0.2\n    configMap:\n      tier: web\n",
    "apply-setters": "  - image: apply-setters:v0.2\n    configMap:\n      replicas: '3'\n",
    "ensure-name-substring": "  - image: ensure-name-substring:v0.2\n    configMap:\n      prepend: prod-\n",
    "set-image": "  - image: set-image:v0.1\n    configMap:\n      name: registry.example.com/app\n      newTag: '2'\n",
    "create-setters": "  - image: create-setters:v0.1\n    configMap:\n      container: main\n",
    "list-setters": "  - image: list-setters:v0.1\n",
    "search-replace": "  - image: search-replace:v0.2\n    configMap:\n      by-path: spec.replicas\n      put-value: '5'\n",
    "set-enforcement-action": "  - image: set-enforcement-action:v0.1\n    configMap:\n      enforcementAction: deny\n",
    "upsert-resource": "  - image: upsert-resource:v0.2\n    configMap:\n      key: value\n",
    "remove-local-config-resources": "  - image: remove-local-config-resources:v0.1\n",
}
work = tempfile.mkdtemp(prefix="render-bench-")
try:
    for files in (1, 10):
        subprocess.run([sys.executable, os.path.join(here, "render-package.py"), str(files),
                        os.path.join(work, f"tpl-{files}"), "small"], check=True)
    times = {}
    for _ in range(rounds):
        for files in (1, 10):
            for name, steps in pipelines.items():
                run = os.path.join(work, "run")
                shutil.rmtree(run, ignore_errors=True)
                shutil.copytree(os.path.join(work, f"tpl-{files}"), run)
                kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: big\n"
                if steps:
                    kptfile += "pipeline:\n  mutators:\n" + steps
                with open(os.path.join(run, "Kptfile"), "w") as f:
                    f.write(kptfile)
                start = time.monotonic()
                out = subprocess.run([binary, "fn", "render", run], capture_output=True)
                took = time.monotonic() - start
                if out.returncode != 0:
                    sys.exit(f"{name} on {files * 1000} resources failed:\n{out.stderr.decode()}")
                times.setdefault((files, name), []).append(took)
    print("| resources | pipeline | median | against the floor |")
    print("|---|---|---|---|")
    for (files, name), runs in sorted(times.items()):
        floor = statistics.median(times[(files, "empty pipeline")])
        median = statistics.median(runs)
        print(f"| {files * 1000:,} | {name} | {median:.3f} s | {median / floor:.2f}× |")
finally:
    shutil.rmtree(work, ignore_errors=True)
