#!/usr/bin/env python3
"""Mix labelled training/evaluation files for a small speech/music/sound classifier.

    python3 tools/corpus/make_classifier_set.py --corpus corpus-local --split train --out DIR \
        --count N --seed S [--duration 30]

Uses only the sources of the given split of the corpus built by tools/corpus/make_corpus.py. Writes

* ``DIR/<name>.wav``     16 kHz mono 16-bit, ``--duration`` seconds;
* ``DIR/<name>.labels``  one ASCII digit per 10 ms frame (length floor(samples / 160)), no
  separators: 0 = nothing (silence or steady background noise only), 1 = speech (the talker's
  own voice, alone or over music/noise/sounds), 2 = music without speech, 3 = another sound
  (an effect, a transient) without speech or music;
* with ``--teacher DIR`` (tools/corpus/teacher_labels.py): ``DIR/<name>.speech``, the teacher's speech
  probability of the placed speech clips (one byte x 255 per frame; 0 where no speech clip is placed,
  so the corpus's kinds win over the teacher), and ``DIR/<name>.background``, one digit per frame for
  what is audible besides speech (0 nothing, 2 music, 3 sound; music wins over sound);
* ``DIR/manifest.json``  per file: seed, background, channel, every event with its source,
  clip, offsets, gain and level, and the class fractions.

Each file: a background bed (white/pink/brown noise and/or 50/60 Hz mains hum, each at
-75...-40 dBFS; sometimes digital silence at the start), then a timeline of events: speech
runs (one to three talkers per file, active level -35...-10 dBFS), music passages (3-20 s,
-45...-15 dBFS, at least 6 dB over the bed), speech over music (speech-to-music ratio
0-10 dB; in at least a quarter of the files), sound effects (-40...-12 dBFS, at least 6 dB over
the bed, often in clusters of 2-4); sometimes a mild reverb (exponentially decaying noise
impulse response, RT60 0.15-0.6 s) and sometimes telephone band-limiting (300-3400 Hz).

Labels: speech from the clips' ``segments`` (the clean-clip energy rule of tools/corpus/make_meetings.py)
shifted to their place; a frame is speech when speech covers at least half of it. Music and
sound frames are where the passage/effect is audible: its frame level is above its own peak
- 45 dB (music) or - 35 dB (sounds) and no more than 3 dB under the bed, runs < 30 ms dropped,
gaps < 150 ms (sounds) or 300 ms (music) bridged. Priority speech > music > sound > nothing.
Reverb tails are not labelled (like the meeting references).

File i uses ``numpy.random.default_rng([seed, i])``: the same corpus and options give the same
files. Requires numpy and scipy.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import wave
from pathlib import Path

import numpy as np
from scipy import signal

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_meetings import (HOP, SR, coloured_noise, db_to_gain, draw_hum, mains_hum,  # noqa: E402
                           reverb_ir, runs_of, write_pcm16_wav)

CLASSES = {0: "nothing", 1: "speech", 2: "music", 3: "sound"}


def log(msg: str) -> None:
    """Progress on stderr."""
    print(f"[make_classifier_set] {msg}", file=sys.stderr, flush=True)


def read_wav(path: Path) -> np.ndarray:
    """16-bit mono WAV as float64."""
    with wave.open(str(path)) as w:
        assert w.getframerate() == SR and w.getnchannels() == 1 and w.getsampwidth() == 2, path
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64) / 32768.0


def frame_db(x: np.ndarray) -> np.ndarray:
    """RMS dBFS per whole 10 ms frame."""
    n = len(x) // HOP
    return 10 * np.log10(np.mean(x[: n * HOP].reshape(n, HOP) ** 2, axis=1) + 1e-20)


def activity(levels: np.ndarray, threshold: float, min_run: int = 3, bridge: int = 15) -> np.ndarray:
    """Boolean frames above ``threshold``: short runs dropped, short gaps bridged."""
    mask = np.zeros(len(levels), dtype=bool)
    runs = [r for r in runs_of(levels > threshold) if r[1] - r[0] >= min_run]
    merged: list[list[int]] = []
    for a, b in runs:
        if merged and a - merged[-1][1] < bridge:
            merged[-1][1] = b
        else:
            merged.append([a, b])
    for a, b in merged:
        mask[a:b] = True
    return mask


class Corpus:
    """The clips of one split, loaded lazily."""

    def __init__(self, root: Path, split: str, teacher: Path | None = None):
        self.root = root
        self.teacher = teacher
        doc = json.loads((root / "sources.json").read_text())
        self.sources = [s for s in doc["sources"] if s["split"] == split]
        if not self.sources:
            raise SystemExit(f"no sources in split {split!r} of {root}/sources.json")
        self.speech = [s for s in self.sources if s["kind"] == "speech"]
        self.music = [s for s in self.sources if s["kind"] == "music"]
        self.sound = [s for s in self.sources if s["kind"] == "sound"]
        self.talkers: dict[str, list[dict]] = {}
        for s in self.speech:
            self.talkers.setdefault(s["talker"], []).append(s)
        self.cache: dict[str, np.ndarray] = {}

    def audio(self, clip: dict) -> np.ndarray:
        """The clip's samples (cached)."""
        f = clip["file"]
        if f not in self.cache:
            self.cache[f] = read_wav(self.root / f)
        return self.cache[f]

    def teacher_speech(self, clip: dict) -> np.ndarray:
        """The teacher's speech probability per 10 ms frame of the clean clip (tools/corpus/teacher_labels.py)."""
        assert self.teacher is not None
        path = self.teacher / (clip["file"][:-len(".wav")] + ".u8")
        if not path.exists():
            raise SystemExit(f"make_classifier_set: no teacher labels for {clip['file']}: run tools/corpus/teacher_labels.py")
        return np.frombuffer(path.read_bytes(), dtype=np.uint8).astype(np.float64) / 255


def speech_level_db(x: np.ndarray, segments: list[list[float]]) -> float:
    """RMS dBFS over the speech segments of a clip."""
    parts = [x[int(a * SR):int(b * SR)] for a, b in segments]
    parts = [p for p in parts if len(p)]
    if not parts:
        return -100.0
    return 10 * math.log10(float(np.mean(np.concatenate(parts) ** 2)) + 1e-20)


class Mixture:
    """One file being built: the event track, the bed, the label evidence and the manifest."""

    def __init__(self, rng: np.random.Generator, corpus: Corpus, duration: float):
        self.rng = rng
        self.corpus = corpus
        self.n = int(round(duration * SR))
        self.frames = self.n // HOP
        self.events = np.zeros(self.n)
        self.speech_cov = np.zeros(self.frames)       # fraction of each frame covered by speech
        self.speech_track = np.zeros(self.n)          # the speech alone, for --masked-speech
        self.speech_soft = np.zeros(self.frames)      # the teacher's speech probability of placed clips
        self.music = np.zeros(self.frames, dtype=bool)
        self.sound = np.zeros(self.frames, dtype=bool)
        self.log: list[dict] = []
        self.bed_db = -100.0
        self.start = 0.0

    # -- helpers -------------------------------------------------------------
    def add(self, x: np.ndarray, at: int) -> np.ndarray:
        """Add samples at sample ``at`` (clipped to the file); returns the part placed."""
        a, b = max(0, at), min(self.n, at + len(x))
        if b <= a:
            return x[:0]
        part = x[a - at:b - at]
        self.events[a:b] += part
        return part

    def mark_speech(self, segs: list[list[float]], at_s: float) -> None:
        """Add coverage of speech segments (seconds in the clip) placed at ``at_s``."""
        for a, b in segs:
            s, e = (a + at_s) * 100.0, (b + at_s) * 100.0
            s, e = max(0.0, s), min(float(self.frames), e)
            if e <= s:
                continue
            i0, i1 = int(math.floor(s)), int(math.ceil(e))
            for i in range(i0, i1):
                self.speech_cov[i] += max(0.0, min(e, i + 1) - max(s, i))

    def mark_teacher(self, p: np.ndarray, at: int) -> None:
        """The teacher's probabilities of a clip placed at sample ``at`` (nearest frame), where no clip has more."""
        f0 = int(round(at / HOP))
        a, b = max(0, f0), min(self.frames, f0 + len(p))
        if b > a:
            self.speech_soft[a:b] = np.maximum(self.speech_soft[a:b], p[a - f0:b - f0])

    def mark_audible(self, target: np.ndarray, x: np.ndarray, at: int, rel_db: float, bridge: int) -> None:
        """Mark frames where the placed sound ``x`` (gain applied) is audible (see docstring)."""
        lv = frame_db(x)
        if not len(lv):
            return
        mask = activity(lv, max(float(lv.max()) + rel_db, self.bed_db - 3.0), 3, bridge)
        f0 = at // HOP
        for i in np.flatnonzero(mask):
            j = f0 + int(i)
            if 0 <= j < self.frames:
                target[j] = True

    # -- events --------------------------------------------------------------
    def speech_run(self, talker: str, t: float, max_len: float, level_db: float) -> float:
        """Clips of one talker from ``t``: whole utterances, or several words with short pauses.

        Returns the end time of the run (seconds)."""
        sources = self.corpus.talkers[talker]
        end = t
        words = 0
        while True:
            src = sources[int(self.rng.integers(len(sources)))]
            clip = src["clips"][int(self.rng.integers(len(src["clips"])))]
            x = self.corpus.audio(clip)
            if not clip["segments"]:
                break
            if end + len(x) / SR > t + max_len and words > 0:
                break
            lvl = speech_level_db(x, clip["segments"])
            target = level_db + float(self.rng.uniform(-3, 3))
            gain = target - lvl
            peak = 20 * math.log10(float(np.max(np.abs(x))) + 1e-12)
            gain = min(gain, -1.0 - peak)
            at = int(round(end * SR))
            placed = self.add(x * db_to_gain(gain), at)
            self.speech_track[at:at + len(placed)] += placed
            self.mark_speech(clip["segments"], at / SR)
            if self.corpus.teacher is not None:
                self.mark_teacher(self.corpus.teacher_speech(clip), at)
            self.log.append({"type": "speech", "source": src["id"], "talker": talker,
                             "language": src["language"], "clip": clip["file"],
                             "start_s": round(at / SR, 3), "end_s": round(at / SR + len(x) / SR, 3),
                             "gain_db": round(gain, 2), "active_level_dbfs": round(lvl + gain, 2)})
            end = at / SR + len(x) / SR
            words += 1
            span = clip["segments"][-1][1] - clip["segments"][0][0]
            if span > 1.2 or end - t > max_len * float(self.rng.uniform(0.4, 1.0)):
                break
            end += float(self.rng.uniform(0.12, 0.5))
        return end

    def music_passage(self, t: float, length: float, level_db: float) -> tuple[float, float]:
        """A music passage of ``length`` s at ``t`` with 50 ms fades; returns (start, end) s."""
        for _ in range(10):
            src = self.corpus.music[int(self.rng.integers(len(self.corpus.music)))]
            clip = src["clips"][0]
            x = self.corpus.audio(clip)
            m = int(min(length, len(x) / SR - 0.1) * SR)
            if m < SR:
                continue
            off = int(self.rng.integers(0, len(x) - m + 1))
            seg = x[off:off + m].copy()
            rms_db = 10 * math.log10(float(np.mean(seg ** 2)) + 1e-20)
            if rms_db < -60:
                continue                      # a silent stretch of the track
            fade = int(0.05 * SR)
            seg[:fade] *= np.linspace(0, 1, fade)
            seg[-fade:] *= np.linspace(1, 0, fade)
            gain = level_db - rms_db
            peak = 20 * math.log10(float(np.max(np.abs(seg))) + 1e-12)
            gain = min(gain, -1.0 - peak)
            at = int(round(t * SR))
            y = seg * db_to_gain(gain)
            self.add(y, at)
            self.mark_audible(self.music, y, at, -45.0, 30)
            self.log.append({"type": "music", "source": src["id"], "package": src["package"],
                             "genre": src["genre"], "clip": clip["file"], "clip_offset_s": round(off / SR, 3),
                             "start_s": round(at / SR, 3), "end_s": round((at + m) / SR, 3),
                             "gain_db": round(gain, 2), "level_dbfs": round(rms_db + gain, 2)})
            return at / SR, (at + m) / SR
        return t, t

    def sound_effect(self, t: float, max_len: float, level_db: float) -> float:
        """One sound effect at ``t`` (cut to ``max_len``); returns its end (s)."""
        src = self.corpus.sound[int(self.rng.integers(len(self.corpus.sound)))]
        clip = src["clips"][int(self.rng.integers(len(src["clips"])))]
        x = self.corpus.audio(clip)
        m = min(len(x), int(max_len * SR))
        seg = x[:m].copy()
        if m > int(0.05 * SR) and m < len(x):
            seg[-int(0.05 * SR):] *= np.linspace(1, 0, int(0.05 * SR))
        lv = frame_db(seg)
        if not len(lv) or lv.max() < -70:
            return t
        act = lv > lv.max() - 20
        act_db = 10 * math.log10(float(np.mean(10 ** (lv[act] / 10))))
        gain = level_db - act_db
        peak = 20 * math.log10(float(np.max(np.abs(seg))) + 1e-12)
        gain = min(gain, -1.0 - peak)
        at = int(round(t * SR))
        y = seg * db_to_gain(gain)
        self.add(y, at)
        self.mark_audible(self.sound, y, at, -35.0, 15)
        self.log.append({"type": "sound", "source": src["id"], "package": src["package"], "clip": clip["file"],
                         "start_s": round(at / SR, 3), "end_s": round((at + m) / SR, 3),
                         "gain_db": round(gain, 2), "level_dbfs": round(act_db + gain, 2)})
        return (at + m) / SR


def make_one(rng: np.random.Generator, corpus: Corpus, duration: float, force_sim: bool,
             masked_db: float | None = None) -> tuple[np.ndarray, str, dict, Mixture]:
    """Build one mixture; returns samples, label string, manifest entry and the mixture (its label tracks)."""
    mix = Mixture(rng, corpus, duration)
    n = mix.n
    # --- background bed -------------------------------------------------------
    bed = np.zeros(n)
    bed_desc = []
    kinds = []
    if rng.random() < 0.85:
        kinds.append(str(rng.choice(["white", "pink", "brown"])))
    if rng.random() < 0.35 or not kinds:
        kinds.append("hum")
    powers = []
    for k in kinds:
        level = float(rng.uniform(-75, -40))
        if k == "hum":
            hum = draw_hum(rng)
            bed += mains_hum(rng, n, hum) * db_to_gain(level)
            bed_desc.append({"type": "hum", "freq_hz": hum["freq_hz"], "level_dbfs": round(level, 2)})
        else:
            bed += coloured_noise(rng, n, k) * db_to_gain(level)
            bed_desc.append({"type": k, "level_dbfs": round(level, 2)})
        powers.append(10 ** (level / 10))
    mix.bed_db = 10 * math.log10(sum(powers))
    silence_s = float(rng.uniform(0.2, 3.0)) if rng.random() < 0.2 else 0.0
    mix.start = silence_s

    # --- event timeline -----------------------------------------------------------
    talkers = sorted(corpus.talkers)
    n_talk = int(rng.integers(1, min(3, len(talkers)) + 1)) if talkers else 0
    chosen = [talkers[i] for i in rng.choice(len(talkers), size=n_talk, replace=False)] if n_talk else []
    talker_level = {t: float(rng.uniform(-35, -10)) for t in chosen}
    did_sim = False
    t = silence_s + float(rng.uniform(0.0, 1.5))
    while t < duration - 1.0:
        room = duration - t - 0.2
        choices, weights = [], []
        if chosen:
            choices += ["speech"]; weights += [0.45]
        if corpus.music:
            choices += ["music"]; weights += [0.12]
        if corpus.sound:
            choices += ["sound"]; weights += [0.22]
        if chosen and corpus.music:
            choices += ["speech_over_music"]; weights += [0.3 if (force_sim and not did_sim) else 0.1]
        choices += ["pause"]; weights += [0.1]
        w = np.array(weights) / sum(weights)
        kind = choices[int(rng.choice(len(choices), p=w))]
        if force_sim and not did_sim and chosen and corpus.music and t > duration * 0.5:
            kind = "speech_over_music"
        if kind == "speech":
            who = chosen[int(rng.integers(len(chosen)))]
            end = mix.speech_run(who, t, min(room, float(rng.uniform(1.5, 8.0))), talker_level[who])
            if rng.random() < 0.15 and corpus.sound:          # an effect during the speech
                mix.sound_effect(float(rng.uniform(t, max(t, end - 0.3))), 2.0,
                                 max(mix.bed_db + 6, float(rng.uniform(-40, -15))))
        elif kind == "music":
            length = min(room, float(rng.uniform(3.0, 20.0) if rng.random() < 0.3 else rng.uniform(3.0, 9.0)))
            lvl = max(mix.bed_db + 6.0, float(rng.uniform(-45, -15)))
            _, end = mix.music_passage(t, length, lvl)
        elif kind == "sound":
            lvl = min(-6.0, max(mix.bed_db + 6.0, float(rng.uniform(-40, -12))))
            end = mix.sound_effect(t, min(room, float(rng.uniform(0.3, 5.0))), lvl)
            # often a few more effects close by (most effects are short)
            for _ in range(int(rng.integers(0, 4))):
                if end >= duration - 1.0:
                    break
                lvl = min(-6.0, max(mix.bed_db + 6.0, lvl + float(rng.uniform(-6, 6))))
                end = mix.sound_effect(end + float(rng.uniform(0.05, 0.8)), min(duration - end - 0.8, 4.0), lvl)
        elif kind == "speech_over_music":
            who = chosen[int(rng.integers(len(chosen)))]
            length = min(room, float(rng.uniform(4.0, 20.0)))
            if length < 3.0:
                t += 0.5
                continue
            smr = float(rng.uniform(0.0, 10.0))
            lvl = talker_level[who] - smr
            m0, m1 = mix.music_passage(t, length, lvl)
            if m1 <= m0:
                t += 0.5
                continue
            s = m0 + float(rng.uniform(0.3, 1.5))
            while s < m1 - 1.0:
                e = mix.speech_run(who, s, m1 - s - 0.2, talker_level[who])
                s = e + float(rng.uniform(0.3, 1.5))
            for ev in mix.log:
                if ev["type"] == "music" and abs(ev["start_s"] - round(m0, 3)) < 1e-6:
                    ev["speech_to_music_db"] = round(smr, 2)
            did_sim = True
            end = m1
        else:
            end = t + float(rng.uniform(0.5, 2.5))
        gap = float(rng.uniform(-0.3, 2.0)) if kind != "pause" else 0.0
        t = max(t + 0.3, end + gap)

    # --- channel ------------------------------------------------------------------
    channel = {}
    x = mix.events
    if rng.random() < 0.3:
        rt60, drr = float(rng.uniform(0.15, 0.6)), float(rng.uniform(-3.0, 8.0))
        x = signal.oaconvolve(x, reverb_ir(rng, rt60, drr))[:n]
        channel["reverb"] = {"rt60_s": round(rt60, 3), "direct_to_reverberant_db": round(drr, 2)}
    x = x + bed
    if silence_s > 0:
        x[: int(silence_s * SR)] = 0.0
    if rng.random() < 0.15:
        sos = signal.butter(4, [300, 3400], btype="bandpass", fs=SR, output="sos")
        x = signal.sosfilt(sos, x)
        channel["telephone_band_hz"] = [300, 3400]
    peak = float(np.max(np.abs(x))) if n else 0.0
    scale = min(1.0, db_to_gain(-1.0) / peak) if peak > 0 else 1.0
    x = x * scale

    # --- labels ---------------------------------------------------------------------
    lab = np.zeros(mix.frames, dtype=np.int8)
    lab[mix.sound] = 3
    lab[mix.music] = 2
    lab[mix.speech_cov >= 0.5] = 1
    if silence_s > 0:
        lab[: int(silence_s * 100)] = np.where(mix.speech_cov[: int(silence_s * 100)] >= 0.5, 1, 0)
    if masked_db is not None:
        # Speech frames whose speech is more than masked_db under everything else in the frame (the
        # bed, music, effects, before reverb): the energy rule calls them speech (pauses and quiet
        # tails inside a segment), but what is heard there is the rest. Label 4: neither trained
        # on nor scored.
        other = mix.events - mix.speech_track + bed
        if silence_s > 0:
            other[: int(silence_s * SR)] = 0.0
        speech_db, other_db = frame_db(mix.speech_track)[: mix.frames], frame_db(other)[: mix.frames]
        lab[(lab == 1) & (speech_db < other_db - masked_db)] = 4
    labels = "".join(str(int(v)) for v in lab)
    fractions = {CLASSES[k]: round(float(np.mean(lab == k)), 4) for k in CLASSES}
    if masked_db is not None:
        fractions["masked"] = round(float(np.mean(lab == 4)), 4)
    entry = {"background": {"components": bed_desc, "level_dbfs": round(mix.bed_db, 2),
                            "digital_silence_start_s": round(silence_s, 2)},
             "talkers": chosen, "channel": channel, "output_gain_db": round(20 * math.log10(scale), 2),
             "events": mix.log, "class_fractions": fractions,
             "speech_over_music": did_sim}
    return x, labels, entry, mix


def main(argv: list[str]) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=Path("corpus-local"))
    ap.add_argument("--split", choices=("train", "dev", "test"), required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--name", default=None, help="file name prefix (default <split>)")
    ap.add_argument("--masked-speech", type=float, default=None, metavar="DB",
                    help="label 4 (masked speech: not trained on, not scored) the speech frames whose speech "
                         "is more than DB dB under the rest of the frame (default: off, they stay speech)")
    ap.add_argument("--teacher", type=Path, default=None, metavar="DIR",
                    help="the teacher's labels of the corpus clips (tools/corpus/teacher_labels.py, usually CORPUS/teacher): "
                         "also write NAME.speech (the teacher's speech probability of the placed speech clips, one "
                         "byte x 255 per frame, 0 where no speech clip is: the corpus's kinds win) and "
                         "NAME.background (one digit per frame: 0 nothing, 2 music, 3 sound audible, ignoring speech)")
    args = ap.parse_args(argv)
    corpus = Corpus(args.corpus, args.split, args.teacher)
    args.out.mkdir(parents=True, exist_ok=True)
    prefix = args.name or args.split
    manifest = {"created_by": "tools/corpus/make_classifier_set.py", "corpus": str(args.corpus), "split": args.split,
                "seed": args.seed, "duration_s": args.duration, "count": args.count, "sample_rate_hz": SR,
                "frame_ms": 10, "classes": CLASSES, "files": {}}
    totals = np.zeros(4)
    sim = 0
    for i in range(args.count):
        rng = np.random.default_rng([args.seed, i])
        force = (i % 4 == 0)
        x, labels, entry, mix = make_one(rng, corpus, args.duration, force, args.masked_speech)
        name = f"{prefix}-{i + 1:04d}"
        write_pcm16_wav(args.out / f"{name}.wav", x)
        assert len(labels) == len(x) // HOP
        (args.out / f"{name}.labels").write_text(labels)
        if args.teacher is not None:
            soft = mix.speech_soft.copy()
            if mix.start > 0:
                soft[: int(mix.start * 100)] = 0.0     # the digital silence at the start holds nothing
            (args.out / f"{name}.speech").write_bytes(np.round(soft * 255).astype(np.uint8).tobytes())
            background = np.zeros(mix.frames, dtype=np.int8)
            background[mix.sound] = 3
            background[mix.music] = 2
            if mix.start > 0:
                background[: int(mix.start * 100)] = 0
            (args.out / f"{name}.background").write_text("".join(str(int(v)) for v in background))
        entry["seed"] = [args.seed, i]
        manifest["files"][name] = entry
        f = entry["class_fractions"]
        totals += [f[c] for c in CLASSES.values()]
        sim += entry["speech_over_music"]
        print(f"{name}: nothing {f['nothing']:5.1%} speech {f['speech']:5.1%} music {f['music']:5.1%} "
              f"sound {f['sound']:5.1%}  talkers {len(entry['talkers'])}"
              + (" +speech/music" if entry["speech_over_music"] else "")
              + (" reverb" if "reverb" in entry["channel"] else "")
              + (" telephone" if "telephone_band_hz" in entry["channel"] else ""))
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    mean = totals / max(1, args.count)
    print(f"{args.count} files x {args.duration:g} s ({args.split}): nothing {mean[0]:.1%}, speech {mean[1]:.1%}, "
          f"music {mean[2]:.1%}, sound {mean[3]:.1%}; speech over music in {sim} files; "
          f"{len(corpus.talkers)} talkers, {len(corpus.music)} music tracks, "
          f"{sum(len(s['clips']) for s in corpus.sound)} sounds available")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
