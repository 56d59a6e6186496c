#!/usr/bin/env python3
"""Skew tables: the engine on co-located (and alone) meetings whose streams arrive apart.

For each DATASET and each skew (the largest per-stream delay, ms), runs
`activespeaker eval --json --skew MS --seed N [--drift D]` (every stream delayed by a random 0...MS ms,
drawn per meeting, its references moved with it; see docs/evaluation.md) with the engine's default
settings ("aligning") and with `--aligned` ("taking them as aligned": no delay measured, as before
stream alignment existed), and pools the figures by layout (meeting.json's "layout", or "co-located"
when it lists leakage):

  own-speech VAD F1 (collar 0), leaked-voice false alarms, floor accuracy, nobody accuracy,
  median and p90 switch latency.

Usage:
  python3 tools/evaluation/skew_tables.py --binary .build/release/activespeaker [--skews 0,20,50,100,200,300]
      [--seed 1] [--drift 20] [--config KEY=VALUE ...] [--markdown OUT.md] DATASET...
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path


def layout_of(meeting: Path) -> str:
    info = meeting / "meeting.json"
    if not info.exists():
        return "?"
    data = json.loads(info.read_text())
    if "layout" in data:
        return data["layout"]
    return "co-located" if data.get("leakage") else "alone"


def run_eval(binary: str, dataset: str, skew: int, seed: int, drift: float, aligned: bool, config: list[str]) -> dict:
    command = [binary, "eval", "--json", "--skew", str(skew), "--seed", str(seed)]
    if drift:
        command += ["--drift", str(drift)]
    if aligned:
        command.append("--aligned")
    for setting in config:
        command += ["--config", setting]
    command.append(dataset)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"skew_tables: {' '.join(command)} failed: {result.stderr.strip()}")
    return json.loads(result.stdout)


class Pool:
    """Frame counts and floor seconds added up over meetings."""

    def __init__(self):
        self.tp = self.fp = self.fn = 0
        self.leaked = self.leaked_frames = 0
        self.held = self.held_hits = 0.0
        self.nobody = self.nobody_hits = 0.0
        self.latencies: list[float] = []
        self.changes = self.missed = 0
        self.false_switches = 0
        self.minutes = 0.0

    def add(self, system: dict, duration: float):
        vad = system["vad"][0]
        self.tp += vad["truePositives"]
        self.fp += vad["falsePositives"]
        self.fn += vad["falseNegatives"]
        self.leaked += vad["leakedFalseAlarms"]
        self.leaked_frames += vad["leakedFrames"]
        floor = system.get("floor")
        if floor:
            if floor["accuracy"] is not None:
                self.held += floor["heldSeconds"]
                self.held_hits += floor["accuracy"] * floor["heldSeconds"]
            if floor["nobodyAccuracy"] is not None:
                self.nobody += floor["nobodySeconds"]
                self.nobody_hits += floor["nobodyAccuracy"] * floor["nobodySeconds"]
            self.latencies += [v for v in floor["latencies"] if v is not None]
            self.changes += floor["changes"]
            self.missed += floor["missed"]
            self.false_switches += floor["falseSwitches"]
            self.minutes += floor["duration"] / 60

    def figures(self) -> dict:
        def share(a, b):
            return a / b if b else None
        lat = sorted(self.latencies)
        return {
            "f1": share(2 * self.tp, 2 * self.tp + self.fp + self.fn),
            "leakedFA": share(self.leaked, self.leaked_frames),
            "floor": share(self.held_hits, self.held),
            "nobody": share(self.nobody_hits, self.nobody),
            "median": statistics.median(lat) if lat else None,
            "p90": lat[max(0, -(-len(lat) * 9 // 10) - 1)] if lat else None,
            "missed": f"{self.missed}/{self.changes}",
            "falsePerMin": share(self.false_switches, self.minutes),
        }


ROWS = [("f1", "own-speech VAD F1", "{:.3f}"), ("leakedFA", "leaked-voice false alarms", "{:.1%}"),
        ("floor", "floor accuracy", "{:.1%}"), ("nobody", "nobody accuracy", "{:.1%}"),
        ("median", "switch latency median (s)", "{:.2f}"), ("p90", "switch latency p90 (s)", "{:.2f}"),
        ("missed", "turns missed", "{}"), ("falsePerMin", "false switches / min", "{:.2f}")]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=".build/release/activespeaker")
    parser.add_argument("--skews", default="0,20,50,100,200,300")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--drift", type=float, default=0, help="ms per minute (with every skew)")
    parser.add_argument("--config", action="append", default=[])
    parser.add_argument("--markdown")
    parser.add_argument("--json")
    parser.add_argument("datasets", nargs="+")
    args = parser.parse_args(argv)
    skews = [int(s) for s in args.skews.split(",")]
    results: dict = {}
    lines = []
    for dataset in args.datasets:
        layouts = {}
        for meeting in sorted(Path(dataset).iterdir()):
            if meeting.is_dir():
                layouts[meeting.name] = layout_of(meeting)
        for mode in ("aligning", "as aligned"):
            for skew in skews:
                report = run_eval(args.binary, dataset, skew, args.seed, args.drift, mode == "as aligned", args.config)
                pools: dict[str, Pool] = {}
                for meeting in report["meetings"]:
                    layout = layouts.get(meeting["meeting"], "?")
                    for system in meeting["systems"]:
                        pools.setdefault(layout, Pool()).add(system, meeting["duration"])
                for layout, pool in pools.items():
                    results.setdefault(dataset, {}).setdefault(layout, {}).setdefault(mode, {})[skew] = pool.figures()
                print(f"skew_tables: {dataset} {mode} {skew} ms done", file=sys.stderr)
        for layout in sorted(results[dataset]):
            drift = f", drifting up to ±{args.drift:g} ms/min" if args.drift else ""
            lines.append(f"\n#### {dataset}: microphones {layout} (seed {args.seed}{drift})\n")
            lines.append("| streams apart by up to | " + " | ".join(f"{s} ms" for s in skews) + " |")
            lines.append("|---|" + "---|" * len(skews))
            for mode in ("aligning", "as aligned"):
                for key, label, form in ROWS:
                    cells = []
                    for skew in skews:
                        value = results[dataset][layout][mode][skew][key]
                        cells.append("-" if value is None else form.format(value))
                    lines.append(f"| {label} ({mode}) | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
