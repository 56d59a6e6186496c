#!/usr/bin/env python3
"""Per-condition tables for real-audio meetings: music alone on a microphone, speech under music,
other sounds, languages, and microphones alone or in one room.

For each meeting of each DATASET (made by tools/corpus/make_real_meetings.py: per-stream audio, speech.rttm,
and conditions.json naming, per stream, the intervals where music plays while its owner is silent,
where the owner speaks over music, and where other sounds play, plus the stream's language and the
meeting's layout), this scores, on 10 ms frames:

* ActiveSpeaker: `activespeaker detect --rttm` with the default settings (speech segments, and the
  dominant-speaker events from its output);
* the other systems whose RTTM files tools/evaluation/compare_vads.py wrote (--systems DIR/<dataset>/<system>/):
  Silero VAD in its three forms (``silero``: the raw model, a 32 ms window is speech at probability
  >= 0.5; ``silero-causal``: the package's streaming VADIterator, window by window; ``silero-offline``:
  the package's get_speech_timestamps, which looks ahead; see compare_vads.py), TEN VAD, and WebRTC
  VAD's default (mode 0, 30 ms) and most aggressive (mode 3, 10 ms) settings. A system whose folder is
  missing is left out of the table.

Rows:
  music alone -> speech      share of music-only frames (owner silent) marked speech (lower is better)
  music mic holds the floor  share of those frames where that microphone is the dominant speaker (ours)
  speech under music recall  share of the owner's speech frames under music marked speech
  sounds -> speech           share of other-sound frames (owner silent) marked speech
  sounds mic holds the floor share of those frames where that microphone is the dominant speaker (ours)
    ...: marked speech       of the same frames: held while ours marks them speech (the sound taken for speech)
    ...: unmarked, <= 1.5 s  held while not marked speech, within 1.5 s after the owner's own speech (the
                             floor's tail: the VAD's hangover and the floor's release)
    ...: reference says not  held where floor.rttm does not give that microphone the floor (the floor
                             reference keeps a turn until the next one or 1.0 s into the room's silence,
                             so most of the tail is the reference's own)
    ...: reference names another  of those, held where floor.rttm names another participant (the floor
                             not yet handed to the next talker); the rest the reference gives nobody
  F1 <language> / <layout>   own-speech frame F1 of the streams of that language / layout

Usage:
  python3 tools/evaluation/condition_tables.py --binary .build/release/activespeaker \\
      --systems out/evaluation/systems datasets-local/real-dev datasets-local/real-test
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

# The frame rule of `activespeaker eval` (a frame counts when its centre lies in a segment) and the RTTM
# reader, shared with the error breakdown.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from vad_error_breakdown import frames_of, read_rttm  # noqa: E402

FPS = 100
AUDIO_EXTENSIONS = {".flac", ".wav", ".ogg", ".opus"}
OTHER_SYSTEMS = [("silero", "Silero raw (0.5 per window)"), ("silero-causal", "Silero VADIterator (causal)"),
                 ("silero-offline", "Silero timestamps (offline)"), ("ten-vad", "TEN VAD"),
                 ("webrtc-m0-30ms", "WebRTC default"), ("webrtc-m3-10ms", "WebRTC mode 3")]


def run_engine(binary: str, meeting: Path, files: list[Path], config: list[str]) -> tuple[dict, list[tuple[float, str | None]]]:
    with tempfile.TemporaryDirectory() as scratch:
        rttm = Path(scratch) / "out.rttm"
        options = [item for setting in config for item in ("--config", setting)]
        result = subprocess.run([binary, "detect", *options, "--rttm", str(rttm), "--name", meeting.name, *map(str, files)],
                                capture_output=True, text=True, check=True)
        segments = read_rttm(rttm)
    floor = []
    for line in result.stdout.splitlines():
        event = json.loads(line)
        if event.get("type") == "dominant":
            floor.append((event["t"], event["stream"]))
    return segments, floor


def floor_frames(floor: list[tuple[float, str | None]], stream: str, n: int) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    holder, since = None, 0
    for t, who in floor + [(n / FPS, None)]:
        frame = int(round(t * FPS))
        if holder == stream:
            mask[since:min(frame, n)] = True
        holder, since = who, frame
    return mask


# Frames after the owner's last speech frame that count as the floor's tail (1.5 s: the VAD's hangover and
# the floor's release, 0.4 + 1.0 s, with a margin).
TAIL_FRAMES = 150


def after_own_speech(own: np.ndarray, frames: int) -> np.ndarray:
    """Frames within `frames` after a frame of `own` (and not in it)."""
    index = np.where(own, np.arange(len(own)), -10 * frames)
    last = np.maximum.accumulate(index)
    return ~own & (np.arange(len(own)) - last <= frames)


class Tally:
    def __init__(self):
        self.counts: dict[tuple[str, str], list[float]] = {}

    def add(self, row: str, system: str, hits: int, total: int):
        entry = self.counts.setdefault((row, system), [0, 0])
        entry[0] += hits
        entry[1] += total

    def add_f1(self, row: str, system: str, reference: np.ndarray, hypothesis: np.ndarray):
        entry = self.counts.setdefault((row, system), [0, 0, 0])
        entry[0] += int((reference & hypothesis).sum())
        entry[1] += int(hypothesis.sum())
        entry[2] += int(reference.sum())

    def value(self, row: str, system: str) -> str:
        entry = self.counts.get((row, system))
        if entry is None:
            return "-"
        if len(entry) == 3:
            tp, hyp, ref = entry
            return "-" if hyp + ref == 0 else f"{2 * tp / (hyp + ref):.3f}"
        hits, total = entry
        return "-" if total == 0 else f"{100 * hits / total:.1f}%"

    def total(self, row: str, system: str) -> int:
        entry = self.counts.get((row, system))
        return 0 if entry is None else int(entry[1] if len(entry) == 2 else entry[2])


def score(binary: str, dataset: Path, systems_dir: Path | None, tally: Tally, config: list[str]) -> None:
    for meeting in sorted(p for p in dataset.iterdir() if (p / "conditions.json").exists()):
        conditions = json.loads((meeting / "conditions.json").read_text())
        files = sorted(f for f in meeting.iterdir() if f.suffix.lower() in AUDIO_EXTENSIONS)
        duration = max(float(subprocess.run(["soxi", "-D", str(f)], capture_output=True, text=True).stdout) for f in files)
        n = int(round(duration * FPS))
        reference = read_rttm(meeting / "speech.rttm")
        floor_reference = read_rttm(meeting / "floor.rttm") if (meeting / "floor.rttm").exists() else {}
        # Frames where the reference gives the floor to anyone (it names one holder at a time).
        referenced_anyone = np.zeros(n, dtype=bool)
        for segments in floor_reference.values():
            referenced_anyone |= frames_of(segments, n)
        ours, floor = run_engine(binary, meeting, files, config)
        hypotheses = {"ours": ours}
        if systems_dir is not None:
            for system, _ in OTHER_SYSTEMS:
                path = systems_dir / dataset.name / system / f"{meeting.name}.rttm"
                if path.exists():
                    hypotheses[system] = read_rttm(path)
        layout = conditions.get("layout", "?")
        for stream, info in conditions["streams"].items():
            own = frames_of(reference.get(stream, []), n)
            music = frames_of(info.get("music", []), n) & ~own
            under = frames_of(info.get("speech_under_music", []), n) & own
            sounds = frames_of(info.get("sounds", []), n) & ~own
            holds = floor_frames(floor, stream, n)
            marked_ours = frames_of(ours.get(stream, []), n)
            tail = after_own_speech(own, TAIL_FRAMES) & ~marked_ours
            # Where the floor reference itself gives this microphone the floor: its owner's turn runs on
            # until the next turn or 1.0 s into a silence of the whole room (make_meetings.floor_reference).
            referenced = frames_of(floor_reference.get(stream, []), n)
            for kind, frames in (("music", music), ("sounds", sounds)):
                held = holds & frames
                tally.add(f"{kind} mic holds the floor", "ours", int(held.sum()), int(frames.sum()))
                tally.add(f"{kind} mic holds the floor: marked speech", "ours", int((held & marked_ours).sum()), int(frames.sum()))
                tally.add(f"{kind} mic holds the floor: unmarked, <= 1.5 s after own speech", "ours",
                          int((held & tail).sum()), int(frames.sum()))
                tally.add(f"{kind} mic holds the floor: the floor reference says not", "ours",
                          int((held & ~referenced).sum()), int(frames.sum()))
                tally.add(f"{kind} mic holds the floor: the floor reference names another", "ours",
                          int((held & ~referenced & referenced_anyone).sum()), int(frames.sum()))
            for system, segments in hypotheses.items():
                marked = frames_of(segments.get(stream, []), n)
                tally.add("music alone -> speech", system, int((marked & music).sum()), int(music.sum()))
                tally.add("speech under music: recall", system, int((marked & under).sum()), int(under.sum()))
                tally.add("sounds -> speech", system, int((marked & sounds).sum()), int(sounds.sum()))
                tally.add_f1(f"F1, language {info.get('language', '?')}", system, own, marked)
                tally.add_f1(f"F1, microphones {layout}", system, own, marked)
                tally.add_f1("F1, all streams", system, own, marked)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="Per-condition tables for real-audio meetings.")
    ap.add_argument("datasets", nargs="+", type=Path)
    ap.add_argument("--binary", default=".build/release/activespeaker")
    ap.add_argument("--systems", type=Path, help="compare_vads.py's --work folder (RTTMs of the other systems)")
    ap.add_argument("--markdown", type=Path, help="write the tables here instead of standard output")
    ap.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                    help="engine setting for ActiveSpeaker's runs, as detect --config (repeatable)")
    args = ap.parse_args(argv)
    out = []
    for dataset in args.datasets:
        tally = Tally()
        score(args.binary, dataset, args.systems, tally, args.config)
        systems = ["ours"] + [s for s, _ in OTHER_SYSTEMS if any(k[1] == s for k in tally.counts)]
        names = {"ours": "ActiveSpeaker (ours)", **dict(OTHER_SYSTEMS)}
        rows = sorted({row for row, _ in tally.counts}, key=lambda r: (r.startswith("F1"), r))
        out.append(f"### {dataset.name}: by condition\n")
        out.append("| condition | frames | " + " | ".join(names[s] for s in systems) + " |")
        out.append("|---|---:|" + "---:|" * len(systems))
        for row in rows:
            frames = max(tally.total(row, s) for s in systems)
            out.append(f"| {row} | {frames} | " + " | ".join(tally.value(row, s) for s in systems) + " |")
        out.append("")
    text = "\n".join(out) + "\n"
    if args.markdown:
        args.markdown.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
