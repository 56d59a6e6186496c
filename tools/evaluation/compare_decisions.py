#!/usr/bin/env python3
"""Compare the decisions of two builds (or two configurations) on every evaluation set.

Issue 17's rule for speed work: every evaluation set within 0.005 VAD F1 and 0.5 % floor accuracy
of the previous commit. This runs `activespeaker eval --json --policies hysteresis` with a base and a
candidate on each set, prints both pooled figures side by side, and exits 1 when a set moved past
the tolerance (either way: a gain that large is a change to explain too, not only a loss).

Usage:
  python3 tools/evaluation/compare_decisions.py --base /tmp/base/activespeaker --new .build/release/activespeaker
  python3 tools/evaluation/compare_decisions.py --base B --new B --new-config vad.speakingInterval=2 [SET ...]

Default sets: the seven of tools/evaluation/run_evaluation.sh that exist here.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

DEFAULT_SETS = [
    "datasets-local/real-dev", "datasets-local/real-test", "Fixtures/meetings", "datasets-local/dev",
    "datasets-local/dev2", "datasets-local/heldout", "datasets-local/pyannote",
]


def pooled(binary, configs, dataset):
    command = [binary, "eval", "--json", "--policies", "hysteresis"]
    for config in configs:
        command += ["--config", config]
    result = subprocess.run(command + [dataset], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} {dataset}: exit {result.returncode}\n{result.stderr}")
    report = json.loads(result.stdout)
    entry = report["pooled"][0]
    vad = next(v for v in entry["vad"] if v["collar"] == 0)
    floor = entry.get("floor")
    return vad["f1"], (floor["accuracy"] if floor else None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="activespeaker binary of the reference")
    parser.add_argument("--new", required=True, help="activespeaker binary of the candidate")
    parser.add_argument("--base-config", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--new-config", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--f1-tolerance", type=float, default=0.005)
    parser.add_argument("--floor-tolerance", type=float, default=0.005, help="as a fraction (0.005 = 0.5 %%)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("sets", nargs="*")
    args = parser.parse_args()
    sets = args.sets or [s for s in DEFAULT_SETS if os.path.isdir(s)]
    if not sets:
        raise SystemExit("no evaluation sets found (run tools/evaluation/run_evaluation.sh once, or name sets)")

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        base = {s: pool.submit(pooled, args.base, args.base_config, s) for s in sets}
        new = {s: pool.submit(pooled, args.new, args.new_config, s) for s in sets}
        results = [(s, base[s].result(), new[s].result()) for s in sets]

    print(f"{'set':<26} {'F1 base':>8} {'F1 new':>8} {'ΔF1':>8}   {'floor base':>10} {'floor new':>10} {'Δfloor':>8}")
    failed = []
    for dataset, (f1a, fla), (f1b, flb) in results:
        name = os.path.basename(dataset.rstrip("/"))
        line = f"{name:<26} {f1a:8.4f} {f1b:8.4f} {f1b - f1a:+8.4f}   "
        bad = abs(f1b - f1a) > args.f1_tolerance
        if fla is not None and flb is not None:
            line += f"{100 * fla:9.2f}% {100 * flb:9.2f}% {100 * (flb - fla):+7.2f}%"
            bad = bad or abs(flb - fla) > args.floor_tolerance
        else:
            line += f"{'-':>10} {'-':>10} {'-':>8}"
        if bad:
            failed.append(name)
            line += "   OUT OF TOLERANCE"
        print(line)
    if failed:
        print(f"compare_decisions: {len(failed)} set(s) moved more than {args.f1_tolerance} F1 or "
              f"{100 * args.floor_tolerance:.1f} % floor: {', '.join(failed)}")
        return 1
    print(f"compare_decisions: every set within {args.f1_tolerance} F1 and {100 * args.floor_tolerance:.1f} % floor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
