#!/usr/bin/env python3
"""Differential check of our YAML round trip against kyaml-oracle.

usage: tools/kyaml-oracle/differential.py [--oracle BIN] [--reformat BIN] DIR...

Every file of every DIR (for example the fuzz corpus fuzz/corpus/yaml_roundtrip
after a long run) goes through the oracle and through our `reformat` example
(cargo build --release -p porch-variants-core --example reformat), and the
outcomes are compared:

  same           both wrote the same bytes
  differ         both wrote, not the same bytes
  both-error     both refused the input with the same message
  error-text     both refused it, with other messages
  oracle-error   only the oracle refused it
  ours-error     only we refused it
  not-utf8       skipped: we refuse input that is not UTF-8 before parsing

Prints the count of each outcome and, for every outcome but `same` and
`both-error`, the files with what tells them apart. Exits 0: the differences
are for review (docs/yaml-compatibility.md lists the known ones).
"""

import argparse
import collections
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def first_difference(a: bytes, b: bytes) -> str:
    la, lb = a.split(b"\n"), b.split(b"\n")
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            return f"line {i + 1}: oracle {x[:80]!r}, ours {y[:80]!r}"
    return f"oracle has {len(la)} lines, ours {len(lb)}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--oracle", default=os.path.join(ROOT, "target", "kyaml-oracle"))
    ap.add_argument("--reformat", default=os.path.join(ROOT, "target", "release", "examples", "reformat"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("dirs", nargs="+")
    args = ap.parse_args()
    for what, path in (("oracle", args.oracle), ("reformat", args.reformat)):
        if not os.access(path, os.X_OK):
            sys.exit(f"differential: the {what} binary {path} is missing (see the usage)")

    for d in args.dirs:
        if not os.path.isdir(d):
            sys.exit(f"differential: {d} is not a directory")
    outcomes = collections.defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="pv-differential-") as tmp:
        for n, d in enumerate(args.dirs):
            ours_dir = os.path.join(tmp, str(n))
            subprocess.run([args.reformat, d, ours_dir], check=True)

            def one(name: str, d=d, ours_dir=ours_dir):
                path = os.path.join(d, name)
                data = open(path, "rb").read()
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError:
                    return path, "not-utf8", ""
                oracle = subprocess.run([args.oracle], input=data, capture_output=True, timeout=60)
                out = os.path.join(ours_dir, name + ".out")
                err = os.path.join(ours_dir, name + ".err")
                ours_ok = os.path.exists(out)
                ours = open(out if ours_ok else err, "rb").read()
                if oracle.returncode == 0 and ours_ok:
                    if ours == oracle.stdout:
                        return path, "same", ""
                    return path, "differ", first_difference(oracle.stdout, ours)
                if oracle.returncode == 0:
                    return path, "ours-error", ours.decode().strip()
                theirs = oracle.stderr.decode(errors="replace").strip()
                if ours_ok:
                    return path, "oracle-error", theirs
                mine = ours.decode().strip()
                if mine == theirs:
                    return path, "both-error", ""
                return path, "error-text", f"oracle {theirs!r}, ours {mine!r}"

            names = sorted(n for n in os.listdir(d) if os.path.isfile(os.path.join(d, n)))
            with ThreadPoolExecutor(args.jobs) as pool:
                for path, outcome, detail in pool.map(one, names):
                    outcomes[outcome].append((path, detail))

    total = sum(len(v) for v in outcomes.values())
    print(f"{total} files")
    for outcome in ("same", "both-error", "error-text", "differ", "oracle-error", "ours-error", "not-utf8"):
        print(f"{outcome:13} {len(outcomes[outcome])}")
    for outcome in ("differ", "oracle-error", "ours-error", "error-text"):
        for path, detail in outcomes[outcome]:
            print(f"{outcome}: {path}: {detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
