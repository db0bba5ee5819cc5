#!/usr/bin/env python3
"""Writes a package to render: render-package.py MIB DIR [big|small].

big (the default): MIB ConfigMaps of 1 MiB each; small: MIB files of 1,000
Deployments of about 640 bytes. A Kptfile with a set-annotations mutator
that changes every resource. Used by docs/performance.md's memory table.
"""
import sys, os
mb = int(sys.argv[1]); d = sys.argv[2]; shape = sys.argv[3] if len(sys.argv) > 3 else "big"
os.makedirs(d, exist_ok=True)
open(os.path.join(d, "Kptfile"), "w").write("""apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: big
pipeline:
  mutators:
  - image: set-annotations:v0.1.5
    configMap:
      team: platform
""")
if shape == "big":
    line = "x" * 1023 + "\n"
    for i in range(mb):
        with open(os.path.join(d, f"cm-{i}.yaml"), "w") as f:
            f.write(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\ndata:\n  blob: |\n")
            for j in range(1000):
                f.write("    " + line[:1019] + "\n")
else:
    # many small resources: ~1 KB each, 1000 per file
    for i in range(mb):
        with open(os.path.join(d, f"many-{i}.yaml"), "w") as f:
            for j in range(1000):
                f.write(f"""---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-{i}-{j}
  labels:
    app: app-{i}-{j}
spec:
  replicas: 1
  selector:
    matchLabels:
      app: app-{i}-{j}
  template:
    metadata:
      labels:
        app: app-{i}-{j}
    spec:
      containers:
      - name: main  # the main container
        image: registry.example.com/app:{j}
        ports:
        - containerPort: 8080
        env:
        - name: A
          value: "{'v'*200}"
""")
