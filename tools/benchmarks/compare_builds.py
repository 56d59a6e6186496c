#!/usr/bin/env python3
"""Speed of two builds of the Benchmarks executable side by side, in one run: scenario 1 (full analysis,
rooms of 5) at the given stream counts, the two builds taking turns so that both see the same machine.

Each round runs `Benchmarks --scenario 1 --streams N --runs R` for the baseline, then for the candidate;
the figure is CPU time per stream-frame (ns, process CPU time: robust to other load, unlike wall time).
It prints, per stream count, the median over rounds of each build's median, candidate / baseline, and
the median of the rounds' own ratios (each round's two builds ran back to back, so this one cancels the
machine's slow drifts) with how many rounds the candidate was faster.

Typical use: the previous commit's build in a git worktree against this one:

  git worktree add /tmp/base HEAD~1 && (cd /tmp/base && swift build -c release --product Benchmarks)
  swift build -c release --product Benchmarks
  python3 tools/benchmarks/compare_builds.py /tmp/base/.build/release/Benchmarks .build/release/Benchmarks --rounds 3

Both builds read the fixture meetings of the current folder (--fixtures), so they play the same audio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def run(binary: str, streams: int, runs: int, fixtures: str, config: list[str]) -> float:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = [binary, "--scenario", "1", "--streams", str(streams), "--runs", str(runs),
                   "--fixtures", fixtures, "--json", out.name]
        for setting in config:
            command += ["--config", setting]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        report = json.loads(Path(out.name).read_text())
    row = report["scenarios"][0]["rows"][0]
    return row["metrics"]["nanosecondsPerStreamFrame"]["median"]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="Scenario 1 speed of two Benchmarks builds, taking turns.")
    ap.add_argument("baseline", help="the Benchmarks executable to compare against (e.g. the previous commit's)")
    ap.add_argument("candidate", help="the Benchmarks executable measured")
    ap.add_argument("--streams", default="1024", help="stream counts, comma-separated (default 1024)")
    ap.add_argument("--rounds", type=int, default=3, help="turns of each build (default 3)")
    ap.add_argument("--runs", type=int, default=5, help="measured runs per turn (default 5)")
    ap.add_argument("--fixtures", default="Fixtures/meetings", help="the meetings both builds play")
    ap.add_argument("--config", action="append", default=[], help="engine setting for the candidate only")
    args = ap.parse_args(argv)
    print("| streams | baseline ns/stream-frame | candidate ns/stream-frame | candidate / baseline "
          "| median of round ratios | rounds faster |")
    print("|---:|---:|---:|---:|---:|---:|")
    for streams in (int(s) for s in args.streams.split(",")):
        base, cand = [], []
        for round_ in range(args.rounds):
            base.append(run(args.baseline, streams, args.runs, args.fixtures, []))
            cand.append(run(args.candidate, streams, args.runs, args.fixtures, args.config))
            print(f"compare_builds: {streams} streams, round {round_ + 1}: {base[-1]:.0f} vs {cand[-1]:.0f} ns",
                  file=sys.stderr)
        b, c = statistics.median(base), statistics.median(cand)
        ratios = [y / x for x, y in zip(base, cand)]
        faster = sum(1 for r in ratios if r < 1)
        print(f"| {streams:,} | {b:,.0f} [{min(base):,.0f}–{max(base):,.0f}] | {c:,.0f} [{min(cand):,.0f}–{max(cand):,.0f}] "
              f"| {c / b:.3f} | {statistics.median(ratios):.3f} [{min(ratios):.3f}–{max(ratios):.3f}] "
              f"| {faster} of {len(ratios)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
