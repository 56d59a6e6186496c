#!/usr/bin/env python3
"""Turn the pyannote.audio wheel's labelled sample into two `activespeaker eval` meetings.

The sample (``pyannote/audio/sample/sample.wav`` + ``sample.rttm`` inside the wheel, MIT licence)
is ONE mixed channel of 30 s in which two people talk, with overlaps. It makes:

* ``<out>/sample/``        the recording as it is, one stream ``sample``;
* ``<out>/sample-music/``  the same with synthetic hold music mixed in at 10 dB SNR (speech level
  over music level), throughout the 30 s.

Each meeting's ``speech.rttm`` is the union of both speakers' segments as the single stream's own
speech: for voice activity a mixed channel has speech wherever anyone talks. There is no
``floor.rttm``: who holds the floor cannot be told from one mixed channel, so the floor is not scored.

The hold music is ``hold_music`` from tools/corpus/make_meetings.py with a fixed seed, so output is the
same from run to run (same numpy).

Usage: python3 tools/corpus/make_pyannote_meetings.py --wav sample.wav --rttm sample.rttm --out DIR
Requires numpy and scipy (pip install numpy scipy).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.io import wavfile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_meetings import hold_music  # noqa: E402  (the generator's own hold music)

SR = 16_000
STREAM = "sample"
MUSIC_SNR_DB = 10.0
MUSIC_SEED = 6464


def read_segments(path: Path) -> list[tuple[float, float]]:
    """(start, end) of every SPEAKER line of an RTTM file, any speaker."""
    segments = []
    for line in path.read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == "SPEAKER":
            start, duration = float(fields[3]), float(fields[4])
            segments.append((start, start + duration))
    return segments


def union(segments: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of intervals, as disjoint sorted intervals (touching ones merged)."""
    merged: list[list[float]] = []
    for start, end in sorted(segments):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def write_meeting(folder: Path, samples: np.ndarray, speech: list[tuple[float, float]]) -> None:
    """Writes <folder>/sample.wav (16-bit) and speech.rttm (speaker = the stream id)."""
    folder.mkdir(parents=True, exist_ok=True)
    pcm = np.clip(np.round(samples * 32767), -32768, 32767).astype(np.int16)
    wavfile.write(folder / f"{STREAM}.wav", SR, pcm)
    lines = [f"SPEAKER {folder.name} 1 {s:.3f} {e - s:.3f} <NA> <NA> {STREAM} <NA> <NA>\n" for s, e in speech]
    (folder / "speech.rttm").write_text("".join(lines))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wav", required=True, type=Path, help="the wheel's sample.wav (16 kHz mono)")
    ap.add_argument("--rttm", required=True, type=Path, help="the wheel's sample.rttm")
    ap.add_argument("--out", required=True, type=Path, help="folder for the two meetings")
    args = ap.parse_args(argv)

    rate, pcm = wavfile.read(args.wav)
    if rate != SR or pcm.ndim != 1 or pcm.dtype != np.int16:
        print(f"{args.wav}: expected 16 kHz mono 16-bit, got {rate} Hz {pcm.dtype} {pcm.shape}", file=sys.stderr)
        return 1
    x = pcm.astype(np.float64) / 32768
    speech = union(read_segments(args.rttm))

    # Speech level: RMS over the reference speech; music scaled 10 dB below it.
    active = np.zeros(len(x), dtype=bool)
    for start, end in speech:
        active[int(round(start * SR)):int(round(end * SR))] = True
    speech_rms = np.sqrt(np.mean(x[active] ** 2))
    music = hold_music(np.random.default_rng(MUSIC_SEED), len(x))[: len(x)]
    music *= speech_rms / np.sqrt(np.mean(music ** 2)) / 10 ** (MUSIC_SNR_DB / 20)
    mixed = x + music
    peak = np.max(np.abs(mixed))
    if peak > 0.99:  # keep the mix unclipped; the SNR is a ratio and does not change
        mixed *= 0.99 / peak

    write_meeting(args.out / "sample", x, speech)
    write_meeting(args.out / "sample-music", mixed, speech)
    print(f"wrote {args.out / 'sample'} and {args.out / 'sample-music'}: "
          f"{len(speech)} speech segments, {sum(e - s for s, e in speech):.2f} s of speech in {len(x) / SR:.2f} s, "
          f"speech {20 * np.log10(speech_rms):.1f} dBFS, music at {MUSIC_SNR_DB:g} dB SNR")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
