#!/usr/bin/python3
"""Refresh tests/corpus/{plain,complete,schemas}.txt from a run of gpuguard over ../shared/corpus.

Findings already recorded keep their judgement; new ones get the judgement given for their
rule with --judge RULE="text" (a new finding without one makes the script fail, so nothing is
recorded unjudged); findings that disappeared are dropped and listed.

  scripts/corpus-findings.py [--binary build/test/cli/gpuguard] [--judge rule="why"]...
"""
import argparse
import json
import os
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
shared = os.path.realpath(os.environ.get("GPUGUARD_SHARED", os.path.join(root, "..", "shared")))

ap = argparse.ArgumentParser()
ap.add_argument("--binary", default=os.path.join(root, "build", "test", "cli", "gpuguard"))
ap.add_argument("--judge", action="append", default=[])
args = ap.parse_args()
judge = dict(j.split("=", 1) for j in args.judge)
missing = set()

for mode, flags in (("plain", []), ("complete", ["--complete"]), ("schemas", ["--schemas", os.path.join(shared, "k8s-schemas")])):
    path = os.path.join(root, "tests", "corpus", mode + ".txt")
    header, known = [], {}
    if not os.path.exists(path):
        header = ["# Findings of `gpuguard lint --schemas ../shared/k8s-schemas` over ../shared/corpus: the plain",
                  "# findings plus what the schemas of Kubernetes and the CRDs refuse."]
    for line in (open(path) if os.path.exists(path) else []):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            if not known:
                header.append(line)
            continue
        finding, _, why = line.partition("  #")
        known[finding.strip()] = why.strip()
    out = subprocess.run([args.binary, "lint", "--no-config", "--format", "json", *flags, os.path.join(shared, "corpus")],
                         capture_output=True, text=True)
    doc = json.loads(out.stdout)
    got = []
    for f in doc["findings"]:
        file = f.get("file", "<cluster>")
        if file != "<cluster>":
            file = os.path.relpath(file, shared)
        got.append(f'{f["rule"]} {file}:{f.get("line", 0)}')
    lines = []
    for g in sorted(set(got)):
        why = known.get(g) or judge.get(g.split(" ")[0])
        if not why:
            missing.add(g.split(" ")[0])
            why = "UNJUDGED"
        lines.append(f"{g}  # {why}")
    gone = sorted(set(known) - set(got))
    for g in gone:
        print(f"{mode}: no longer found: {g}", file=sys.stderr)
    with open(path, "w") as fh:
        fh.write("\n".join(header).rstrip("\n") + "\n\n" + "\n".join(lines) + "\n")
if missing:
    sys.exit("new findings need a judgement: " + ", ".join(f'--judge {r}="..."' for r in sorted(missing)))
