#!/usr/bin/env python3
"""Where does the engine's voice activity go wrong? A breakdown of its errors on generated meetings.

For every meeting of a DATASET made by tools/corpus/make_meetings.py (it reads each meeting.json), runs
``activespeaker detect --quiet --rttm`` (with any --config given here) and sorts every 10 ms frame
the system got wrong, per stream, with the frame rule of `activespeaker eval` (a frame is active
when its centre lies inside a segment):

missed speech (own speech, system silent):
  onset      in the first 200 ms of a reference segment
  offset     in the last 200 ms of a reference segment
  short      anywhere in a reference segment shorter than 0.6 s (backchannels)
  overlap    elsewhere, while another participant also speaks
  interior   elsewhere
false alarms (no own speech, system speaking):
  keyboard, cough, hold music   during this participant's own event of that kind (meeting.json)
  leak       another participant speaks (their voice leaking into this microphone)
  edge       up to 300 ms after the end (or 100 ms before the start) of an own segment
  others' events  during another participant's keyboard burst or cough (they leak too)
  noise      anything else: stationary noise, hum

It prints one line per stream (noise colour, SNR, hum, voice, F1, miss and false-alarm shares) and
the pooled breakdown, so a tuning step can be judged by the kind of error it removes.

Usage: python3 tools/evaluation/vad_error_breakdown.py [--binary PATH] [--config KEY=VALUE ...] DATASET
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

FRAME = 0.01


def frames_of(segments: list[tuple[float, float]], count: int) -> np.ndarray:
    """Frames whose centre lies in a segment."""
    active = np.zeros(count, dtype=bool)
    for start, end in segments:
        first = max(0, int(np.ceil(start / FRAME - 0.5)))
        last = min(count, int(np.ceil(end / FRAME - 0.5)))
        active[first:last] = True
    return active


def read_rttm(path: Path) -> dict[str, list[tuple[float, float]]]:
    segments: dict[str, list[tuple[float, float]]] = {}
    for line in path.read_text().splitlines():
        f = line.split()
        if f and f[0] == "SPEAKER":
            segments.setdefault(f[7], []).append((float(f[3]), float(f[3]) + float(f[4])))
    return segments


def windows(events: list[dict]) -> list[tuple[float, float]]:
    return [(e["start_s"], e["end_s"]) for e in events]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="Break the engine's VAD errors down by kind.")
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--binary", default=".build/release/activespeaker")
    ap.add_argument("--config", action="append", default=[], help="passed to activespeaker detect")
    args = ap.parse_args(argv)

    meetings = sorted(p.parent for p in args.dataset.glob("*/meeting.json")) or (
        [args.dataset] if (args.dataset / "meeting.json").exists() else [])
    if not meetings:
        sys.exit(f"vad_error_breakdown: {args.dataset}: no meetings with meeting.json")
    misses: Counter[str] = Counter()
    alarms: Counter[str] = Counter()
    totals = Counter()
    print(f"{'meeting':<12} {'stream':<7} {'noise':<6} {'SNR':>5} {'hum':>4} {'voice':<16} {'F1':>6} "
          f"{'miss':>6} {'FA':>6}  worst kinds")
    with tempfile.TemporaryDirectory() as scratch:
        for meeting in meetings:
            info = json.loads((meeting / "meeting.json").read_text())
            files = sorted(str(meeting / p["file"]) for p in info["participants"])
            rttm = Path(scratch) / f"{meeting.name}.rttm"
            command = [args.binary, "detect", "--quiet", "--rttm", str(rttm)]
            for setting in args.config:
                command += ["--config", setting]
            subprocess.run(command + files, check=True)
            system = read_rttm(rttm)
            reference = read_rttm(meeting / "speech.rttm")
            count = int(round(info["duration_s"] / FRAME))
            people = {p["stream"]: p for p in info["participants"]}
            for stream, person in people.items():
                own_segments = reference.get(stream, [])
                own = frames_of(own_segments, count)
                decided = frames_of(system.get(stream, []), count)
                others = frames_of([s for who, segs in reference.items() if who != stream for s in segs], count)
                onset = frames_of([(s, min(e, s + 0.2)) for s, e in own_segments], count)
                offset = frames_of([(max(s, e - 0.2), e) for s, e in own_segments], count)
                short = frames_of([(s, e) for s, e in own_segments if e - s < 0.6], count)
                edge = frames_of([(e, e + 0.3) for _, e in own_segments] + [(s - 0.1, s) for s, _ in own_segments], count)
                keyboard = frames_of(windows(person["keyboard"]), count)
                cough = frames_of(windows(person["coughs"]), count)
                music = frames_of([(person["hold_music"]["start_s"], person["hold_music"]["end_s"])]
                                  if person["hold_music"] else [], count)
                other_events = frames_of([w for who, p in people.items() if who != stream
                                          for w in windows(p["keyboard"]) + windows(p["coughs"])], count)
                kinds_miss = Counter()
                kinds_fa = Counter()
                for i in np.flatnonzero(own & ~decided):
                    kind = ("short" if short[i] else "onset" if onset[i] else "offset" if offset[i]
                            else "overlap" if others[i] else "interior")
                    kinds_miss[kind] += 1
                for i in np.flatnonzero(decided & ~own):
                    kind = ("hold music" if music[i] else "keyboard" if keyboard[i] else "cough" if cough[i]
                            else "leak" if others[i] else "edge" if edge[i]
                            else "others' events" if other_events[i] else "noise")
                    kinds_fa[kind] += 1
                tp = int(np.sum(own & decided))
                fn = sum(kinds_miss.values())
                fp = sum(kinds_fa.values())
                f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0
                misses.update(kinds_miss)
                alarms.update(kinds_fa)
                totals.update(speech=int(own.sum()), silence=int((~own).sum()), tp=tp, fn=fn, fp=fp)
                worst = ", ".join(f"{k} {v}" for k, v in (kinds_miss + kinds_fa).most_common(3))
                hum = "yes" if person["hum"] else "-"
                print(f"{meeting.name:<12} {stream:<7} {person['noise']['type']:<6} {person['noise']['snr_db']:>5.1f} {hum:>4} "
                      f"{person['voice']['id']:<16} {f1:>6.3f} {fn / max(1, own.sum()):>6.1%} "
                      f"{fp / max(1, (~own).sum()):>6.1%}  {worst}")
    print(f"\npooled: F1 {2 * totals['tp'] / (2 * totals['tp'] + totals['fp'] + totals['fn']):.3f}; "
          f"missed {totals['fn']} of {totals['speech']} speech frames, false alarms {totals['fp']} of "
          f"{totals['silence']} non-speech frames")
    print("missed speech: " + ", ".join(f"{k} {v} ({v / max(1, totals['fn']):.0%})" for k, v in misses.most_common()))
    print("false alarms:  " + ", ".join(f"{k} {v} ({v / max(1, totals['fp']):.0%})" for k, v in alarms.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
