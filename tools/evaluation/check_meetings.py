#!/usr/bin/env python3
"""Check generated meetings and measure what a detector will face.

For each meeting folder (one made by tools/corpus/make_meetings.py) this script:

* validates speech.rttm and floor.rttm (format, 3 decimals, inside the meeting, no
  overlapping segments of one stream, floor intervals disjoint and ordered);
* reads every <stream>.flac back (through sox) and checks rate, channels and length;
* prints per stream: speech fraction, measured speech level, noise floor and SNR;
* measures the leakage of each talker into each other mic, from frames where only
  that talker speaks, and prints it beside the configured gain;
* prints the floor statistics: turns, floor intervals, handovers, nobody stretches.

Usage: python3 tools/evaluation/check_meetings.py Fixtures/meetings/*   (exit status 1 on a problem)
Requires numpy and scipy (pip install numpy scipy) and sox.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.io import wavfile

SR = 16_000
HOP = SR // 100
RTTM = re.compile(r"^SPEAKER (\S+) 1 (\d+\.\d{3}) (\d+\.\d{3}) <NA> <NA> (\S+) <NA> <NA>$")


def read_rttm(path: Path, meeting: str, duration: float, problems: list[str]) -> list[tuple[float, float, str]]:
    """Parse an RTTM file into (start, end, who), recording format problems."""
    out = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        m = RTTM.match(line)
        if not m:
            problems.append(f"{path}:{number}: not a SPEAKER line with 3 decimals: {line!r}")
            continue
        if m.group(1) != meeting:
            problems.append(f"{path}:{number}: file id {m.group(1)} != {meeting}")
        start, dur = float(m.group(2)), float(m.group(3))
        if dur <= 0 or start < 0 or start + dur > duration + 1e-6:
            problems.append(f"{path}:{number}: segment outside (0, {duration}]")
        out.append((start, start + dur, m.group(4)))
    return out


def read_flac(path: Path, problems: list[str]) -> np.ndarray:
    """Decode a FLAC to float through sox and check it is 16 kHz mono 16-bit."""
    info = [subprocess.run(["sox", "--i", flag, str(path)], capture_output=True, text=True,
                           check=True).stdout.strip() for flag in ("-r", "-c", "-b")]
    if info != ["16000", "1", "16"]:
        problems.append(f"{path}: rate/channels/bits {info}, expected 16000 1 16")
    with tempfile.NamedTemporaryFile(suffix=".wav") as tmp:
        subprocess.run(["sox", str(path), "-e", "floating-point", "-b", "32", tmp.name], check=True)
        _, x = wavfile.read(tmp.name)
    return x.astype(np.float64)


def frame_power(x: np.ndarray) -> np.ndarray:
    """Mean power of each 10 ms frame."""
    n = len(x) // HOP
    return np.mean(x[: n * HOP].reshape(n, HOP) ** 2, axis=1)


def mask_of(segments: list[tuple[float, float]], n: int, pad: float = 0.0) -> np.ndarray:
    """Boolean frame mask of the given second intervals, widened by ``pad`` seconds."""
    m = np.zeros(n, dtype=bool)
    for a, b in segments:
        m[max(0, int(round((a - pad) * 100))):min(n, int(round((b + pad) * 100)))] = True
    return m


def db(p: float) -> float:
    """Power -> dB (-inf safe)."""
    return 10 * math.log10(p) if p > 0 else -math.inf


def expected_floor(turns: list[dict], speech: list[tuple[float, float, str]], duration: float,
                   silence: float) -> list[tuple[float, float, str]]:
    """Recompute the floor reference from the turn onsets and speech.rttm (Fixtures/README.md).

    The floor is the speaker of the latest turn onset; it is nobody's from (end of the
    last speech + ``silence``) to the next turn onset whenever nobody at all speaks for
    more than ``silence`` seconds. Computed on a 10 ms grid, independently of the generator.
    """
    n = int(round(duration * 100))
    holder = [""] * n
    onsets = sorted((round(t["onset_s"] * 100), t["speaker"]) for t in turns)
    for i, (start, who) in enumerate(onsets):
        end = onsets[i + 1][0] if i + 1 < len(onsets) else n
        holder[start:end] = [who] * (end - start)
    talking = mask_of([(a, b) for a, b, _ in speech], n)
    limit = int(round(silence * 100))
    quiet_run = 0
    for i in range(n):
        quiet_run = 0 if talking[i] else quiet_run + 1
        if quiet_run > limit:            # silent for more than `silence` up to this frame
            # nobody from here until the next turn onset
            j = i
            next_onset = min((o for o, _ in onsets if o > i - quiet_run + limit), default=n)
            while j < n and j < next_onset:
                holder[j] = ""
                j += 1
    out: list[tuple[float, float, str]] = []
    for i, who in enumerate(holder):
        if not who:
            continue
        if out and out[-1][2] == who and abs(out[-1][1] - i / 100) < 1e-9:
            out[-1] = (out[-1][0], (i + 1) / 100, who)
        else:
            out.append((i / 100, (i + 1) / 100, who))
    return out


def check_meeting(folder: Path) -> list[str]:
    """Validate and measure one meeting; print a report; return the problems found."""
    problems: list[str] = []
    meta = json.loads((folder / "meeting.json").read_text())
    name, duration = meta["meeting"], meta["duration_s"]
    streams = [p["stream"] for p in meta["participants"]]
    speech = read_rttm(folder / "speech.rttm", name, duration, problems)
    floor = read_rttm(folder / "floor.rttm", name, duration, problems)
    if speech != sorted(speech, key=lambda s: (s[0], s[2], s[1])):
        problems.append(f"{folder}/speech.rttm: not sorted by start time")
    for s in streams:
        segs = sorted((a, b) for a, b, w in speech if w == s)
        if any(b1 > a2 for (_, b1), (a2, _) in zip(segs, segs[1:])):
            problems.append(f"{folder}/speech.rttm: overlapping segments of {s}")
    if any(b1 > a2 + 1e-9 for (_, b1, _), (a2, _, _) in zip(floor, floor[1:])):
        problems.append(f"{folder}/floor.rttm: overlapping or unordered intervals")
    unknown = {w for _, _, w in speech + floor} - set(streams)
    if unknown:
        problems.append(f"{folder}: unknown stream ids {sorted(unknown)}")

    audio = {s: read_flac(folder / f"{s}.flac", problems) for s in streams}
    n = int(round(duration * 100))
    for s, x in audio.items():
        if len(x) != int(round(duration * SR)):
            problems.append(f"{folder}/{s}.flac: {len(x)} samples, expected {int(round(duration * SR))}")
    power = {s: frame_power(x)[:n] for s, x in audio.items()}
    active = {s: mask_of([(a, b) for a, b, w in speech if w == s], n) for s in streams}
    near = {s: mask_of([(a, b) for a, b, w in speech if w == s], n, pad=0.5) for s in streams}
    anyone = np.any(list(near.values()), axis=0)

    def events_mask(p: dict, music: bool) -> np.ndarray:
        """Frames near a participant's keyboard and coughs (and hold music if ``music``)."""
        spans = [(e["start_s"], e["end_s"]) for e in p["keyboard"] + p["coughs"]]
        if music and p.get("hold_music"):
            spans.append((p["hold_music"]["start_s"], p["hold_music"]["end_s"]))
        return mask_of(spans, n, pad=0.3)

    # Keyboard and coughs leak into every mic; hold music is only on its own mic.
    own_events = {p["stream"]: events_mask(p, music=True) for p in meta["participants"]}
    room_events = np.any([events_mask(p, music=False) for p in meta["participants"]], axis=0)
    noise = {}
    print(f"== {name} ({meta['profile']}, seed {meta['seed']}, {duration:g} s, {len(streams)} streams)")
    for p in meta["participants"]:
        s = p["stream"]
        quiet = ~anyone & ~room_events & ~own_events[s]
        approx = ""
        if quiet.sum() >= 50:
            noise[s] = float(np.mean(power[s][quiet]))
        else:
            # Nobody is ever silent on this mic outside its events: take the quietest fifth
            # of the frames away from its own speech and events (a rough, low estimate).
            pool = np.sort(power[s][~near[s] & ~room_events & ~own_events[s]])
            noise[s] = float(np.mean(pool[: max(1, len(pool) // 5)])) if len(pool) else float("nan")
            approx = "~"
        level = db(float(np.mean(power[s][active[s]]))) if active[s].any() else -math.inf
        extras = [k for k in ("hum", "keyboard", "coughs", "hold_music") if p.get(k)]
        print(f"  {s:6s} {p['voice']['id']:16s} speech {active[s].mean():5.1%}  level {level:6.1f} dBFS "
              f"(meta {p['speech_level_dbfs']:6.1f})  noise {approx}{db(noise[s]):6.1f} dBFS "
              f"-> SNR {level - db(noise[s]):5.1f} dB (meta {p['noise']['snr_db']:5.1f} {p['noise']['type']}) "
              f"{' '.join(extras)}")

    print("  leakage (mic <- talker): configured / measured dB from frames where only the talker speaks")
    for leak in meta["leakage"]:
        m, t = leak["mic"], leak["talker"]
        others = np.any([near[o] for o in streams if o != t], axis=0)
        frames = active[t] & ~others & ~room_events & ~own_events[m] & ~own_events[t]
        if frames.sum() < 20:
            print(f"    {m:6s} <- {t:6s} {leak['gain_db']:6.1f} / (too few exclusive frames)")
            continue
        leaked = float(np.mean(power[m][frames])) - noise[m]
        direct = float(np.mean(power[t][frames])) - noise[t]
        if math.isnan(leaked) or math.isnan(direct) or direct <= 0:
            measured = "n/a (no noise estimate)"
        else:
            measured = f"{db(leaked) - db(direct):6.1f}" if leaked > 0 else "below the noise floor"
        print(f"    {m:6s} <- {t:6s} {leak['gain_db']:6.1f} / {measured}   "
              f"(delay {leak['delay_ms']:4.1f} ms, RT60 {leak['rt60_s']:.2f} s, {int(frames.sum())} frames)")

    turns = meta["script"]["turns"]
    expected = expected_floor(turns, speech, duration, meta["floor_silence_s"])
    if [(round(a, 2), round(b, 2), w) for a, b, w in expected] != [(round(a, 2), round(b, 2), w) for a, b, w in floor]:
        problems.append(f"{folder}/floor.rttm differs from the floor recomputed from the definition: "
                        f"{expected}")
    handovers = sum(1 for a, b in zip(floor, floor[1:]) if abs(a[1] - b[0]) < 1e-9 and a[2] != b[2])
    covered = sum(b - a for a, b, _ in floor)
    nobody = [(floor[i][1], floor[i + 1][0]) for i in range(len(floor) - 1) if floor[i + 1][0] - floor[i][1] > 1e-9]
    print(f"  turns {len(turns)} ({sum(t['interrupts_previous'] for t in turns)} interruptions), "
          f"backchannels {len(meta['script']['backchannels'])}, floor intervals {len(floor)}, "
          f"direct handovers {handovers}, nobody stretches inside {len(nobody)} "
          f"({', '.join(f'{a:.2f}-{b:.2f}' for a, b in nobody) or 'none'}), floor held {covered / duration:.0%}")
    print(f"  first speech onset {min(a for a, _, _ in speech):.2f} s; floor: "
          + " ".join(f"{w}@{a:.2f}" for a, _, w in floor))
    return problems


def main(argv: list[str]) -> int:
    """Check every meeting folder given on the command line."""
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    problems = []
    for arg in argv:
        problems += check_meeting(Path(arg))
    for p in problems:
        print(f"PROBLEM: {p}", file=sys.stderr)
    print(f"{len(argv)} meetings checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
