#!/usr/bin/env python3
"""Meetings of REAL talkers, music and sounds from the corpus, in the `activespeaker eval` format.

    python3 tools/corpus/make_real_meetings.py --corpus corpus-local --split dev|test --out DIR \
        --count N --seed S [--duration 45] [--name real]

Each meeting folder holds what tools/corpus/make_meetings.py writes (Fixtures/README.md): one 16 kHz
mono 16-bit FLAC per participant (``<stream>.flac``), ``speech.rttm`` (own voice on own mic),
``floor.rttm`` (same floor definition, computed by make_meetings.floor_reference),
``meeting.json`` (seed, participants, sources, leakage, script, conditions), plus
``conditions.json``::

    {"layout": "alone" | "co-located",
     "streams": {"alice": {"language": "de", "talker": "...", "music": [[s, e], ...],
                           "speech_under_music": [[s, e], ...], "sounds": [[s, e], ...],
                           "sounds_leaked": [[s, e], ...]}}}

How a meeting is made (meeting i uses seed S+i, ``numpy.random.default_rng``):

* 2-4 participants, each a different talker of the split (every language of the split can
  appear). Sentence talkers (Asterisk, LibriVox, pyannote's sample, ...) speak their clips;
  word-list talkers (KTuberling, KLettres) speak "utterances" of 2-5 of their words joined by
  0.15-0.45 s pauses (each word first brought to the same active level); single words with a
  speech span < 0.8 s serve as backchannels.
* The script (turns, pauses, overlaps, interruptions, backchannels) comes from
  make_meetings.ScriptPlanner; speech references use the clean-clip energy rule of
  make_meetings.speech_activity, except pyannote's clips whose segments come from its RTTM.
* Layout: even seeds "alone", odd seeds "co-located" (a run is half and half). "alone":
  every mic hears only its participant (no leakage). "co-located": every
  talker leaks into every other mic at -30...-12 dB re their own level, 1-15 ms late, through
  a synthetic room response (make_meetings.draw_leakage / render_meeting).
* Conditions, drawn per meeting (at least one of them): real music ALONE on one mic while its
  owner is silent (a radio / hold music, 5-20 s, at the owner's speech level +-3 dB; the
  owner is kept silent by the planner's hold window); real music UNDER one participant's
  speech (6-20 s, 0-10 dB speech-to-music ratio); 1-5 real sound effects on some mics
  (-40...-15 dBFS; in the co-located layout they leak into the other mics like a voice).
  Music and sounds are never speech in the references. Music plays into its own mic only
  (a phone line / a radio next to that mic).
* Noise bed per mic: white, pink or brown at 10-35 dB SNR re that participant's speech level,
  sometimes 50/60 Hz hum.

Requires numpy, scipy, sox, and the corpus of tools/corpus/make_corpus.py.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
from scipy import signal

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_meetings as mm  # noqa: E402
from make_meetings import (FRAMES_PER_S, HOP, SR, Clip, Participant, ScriptPlanner,  # noqa: E402
                           Voice, db_to_gain, gain_to_db, make_clip)
from make_classifier_set import Corpus  # noqa: E402

GENERATOR_VERSION = 1
FEMALE = ["alice", "carol", "erin", "grace"]
MALE = ["bob", "dave", "frank", "hank"]
NEUTRAL = ["kim", "lee", "max", "robin", "sam", "alex", "charlie", "jo"]

PROFILE = dict(snr=(10.0, 35.0), noise_types=("white", "pink", "brown"), leak=(-30.0, -12.0),
               hum_p=0.25, keyboard_p=0.0, cough_p=0.0, music_p=0.0, require=(), leak_force_max=False,
               interrupt_p=0.15, long_silence_p=0.1, backchannel_p=0.4)


def log(msg: str) -> None:
    """Progress on stderr."""
    print(f"[make_real_meetings] {msg}", file=sys.stderr, flush=True)


class RttmClip(Clip):
    """A clip whose speech segments come from an RTTM: truncation cuts the segments."""

    def truncated(self, end_frame: int) -> "Clip":
        audio = self.audio[: end_frame * HOP].copy()
        fade = int(0.03 * SR)
        audio[-fade:] *= np.linspace(1.0, 0.0, fade)
        segs = [(a, min(b, end_frame)) for a, b in self.segments if a < end_frame - 2]
        return RttmClip(self.source, self.text + " [interrupted]", audio, segs, self.peak_db)


def rttm_clip(source: str, x: np.ndarray, segs_s: list[list[float]]) -> Clip | None:
    """Trim to the RTTM speech +-100 ms, fade, normalise to 0 dBFS over speech."""
    segs = [(int(round(a * FRAMES_PER_S)), int(round(b * FRAMES_PER_S))) for a, b in segs_s]
    segs = [(a, b) for a, b in segs if b > a]
    if not segs:
        return None
    start = max(0, segs[0][0] - 10)
    end = min(len(x) // HOP, segs[-1][1] + 10)
    y = x[start * HOP:end * HOP].copy()
    fade = int(0.02 * SR)
    y[:fade] *= np.linspace(0, 1, fade)
    y[-fade:] *= np.linspace(1, 0, fade)
    segs = [(a - start, min(b, end) - start) for a, b in segs]
    active = np.concatenate([y[a * HOP:b * HOP] for a, b in segs])
    scale = 1.0 / math.sqrt(float(np.mean(active ** 2)) + 1e-20)
    peak_db = float(mm.frame_levels_db(y).max())
    return RttmClip(source, "", y * scale, segs, peak_db + gain_to_db(scale))


class RealBank:
    """Clips per talker: utterances for turns and short words for backchannels."""

    def __init__(self, corpus: Corpus):
        self.corpus = corpus
        self.utts: dict[str, list[Clip]] = {}
        self.bcs: dict[str, list[Clip]] = {}

    def prepare(self, rng: np.random.Generator, talker: str) -> None:
        """Build a talker's utterance and backchannel clips (once per run and talker)."""
        if talker in self.utts:
            return
        utts, bcs, words = [], [], []
        for src in self.corpus.talkers[talker]:
            for c in src["clips"]:
                x = self.corpus.audio(c)
                if c.get("segments_from") == "rttm":
                    clip = rttm_clip(f"{src['id']}:{c['file']}", x, c["segments"])
                else:
                    clip = make_clip(f"{src['id']}:{c['file']}", "", x)
                if clip is None:
                    continue
                if clip.span_s >= mm.MIN_TURN_UTTERANCE_S and clip.max_inner_gap_s() < mm.MAX_WITHIN_TURN_PAUSE - 0.1:
                    utts.append(clip)
                elif clip.span_s < mm.BACKCHANNEL_MAX_S:
                    bcs.append(clip)
                    words.append(clip)
        if len(utts) < 20 and words:
            # word lists: compose utterances of 2-5 words
            local = np.random.default_rng(abs(hash_str(talker)) % (2 ** 32))
            for _ in range(60):
                k = int(local.integers(2, 6))
                picks = [words[int(i)] for i in local.integers(0, len(words), size=k)]
                parts = []
                for j, w in enumerate(picks):
                    seg = w.audio[w.onset * HOP:w.offset * HOP] * db_to_gain(float(local.uniform(-2, 2)))
                    parts.append(seg)
                    if j + 1 < k:
                        parts.append(np.zeros(int(local.uniform(0.15, 0.45) * SR)))
                pad = np.zeros(int(0.15 * SR))
                x = np.concatenate([pad, *parts, pad])
                x *= 0.1 / (np.max(np.abs(x)) + 1e-12)
                name = "+".join(p.source.rsplit("/", 1)[-1] for p in picks)
                clip = make_clip(f"{talker}:words:{name}", "", x)
                if clip and clip.span_s >= mm.MIN_TURN_UTTERANCE_S and \
                        clip.max_inner_gap_s() < mm.MAX_WITHIN_TURN_PAUSE - 0.1:
                    utts.append(clip)
        self.utts[talker] = utts
        self.bcs[talker] = bcs[:40]

    def get(self, voice: Voice, request: tuple) -> Clip | None:
        """Planner hook: ("utt", talker, i) or ("bc", talker, i)."""
        kind, talker, i = request
        return (self.utts if kind == "utt" else self.bcs)[talker][i]


def hash_str(text: str) -> int:
    """Stable string hash (Python's hash() is salted)."""
    import hashlib
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def music_excerpt(rng: np.random.Generator, corpus: Corpus, seconds: float) -> tuple[np.ndarray, dict]:
    """A unit-RMS stretch of a random music track of the split, 50 ms fades."""
    for _ in range(20):
        src = corpus.music[int(rng.integers(len(corpus.music)))]
        x = corpus.audio(src["clips"][0])
        m = int(seconds * SR)
        if len(x) < m + SR:
            continue
        off = int(rng.integers(0, len(x) - m))
        y = x[off:off + m].copy()
        rms = math.sqrt(float(np.mean(y ** 2)))
        if rms < 1e-3:
            continue
        fade = int(0.05 * SR)
        y[:fade] *= np.linspace(0, 1, fade)
        y[-fade:] *= np.linspace(1, 0, fade)
        return y / rms, {"source": src["id"], "package": src["package"], "genre": src["genre"],
                         "clip": src["clips"][0]["file"], "clip_offset_s": round(off / SR, 3)}
    raise SystemExit("no usable music in this split")


def sound_excerpt(rng: np.random.Generator, corpus: Corpus) -> tuple[np.ndarray, dict]:
    """A random sound effect of the split (<= 4 s), normalised to 0 dB active level."""
    for _ in range(20):
        src = corpus.sound[int(rng.integers(len(corpus.sound)))]
        clip = src["clips"][int(rng.integers(len(src["clips"])))]
        x = corpus.audio(clip)[: 4 * SR].copy()
        if len(x) < HOP * 5:
            continue
        lv = mm.frame_levels_db(x)
        if lv.max() < -70:
            continue
        act = lv > lv.max() - 20
        level = 10 * math.log10(float(np.mean(10 ** (lv[act] / 10))))
        if len(x) == 4 * SR:
            x[-int(0.05 * SR):] *= np.linspace(1, 0, int(0.05 * SR))
        return x * db_to_gain(-level), {"source": src["id"], "package": src["package"], "clip": clip["file"]}
    raise SystemExit("no usable sound in this split")


def segments_within(segs: list[tuple[int, int]], a: float, b: float) -> list[list[float]]:
    """Intersection (seconds) of frame segments with [a, b) seconds."""
    out = []
    for s, e in segs:
        lo, hi = max(s / FRAMES_PER_S, a), min(e / FRAMES_PER_S, b)
        if hi > lo:
            out.append([round(lo, 2), round(hi, 2)])
    return out


def generate_one(corpus: Corpus, bank: RealBank, out_dir: Path, name: str, seed: int,
                 duration: float, versions: dict) -> Path:
    """Draw, plan, render and write one meeting."""
    rng = np.random.default_rng(seed)
    layout = "alone" if seed % 2 == 0 else "co-located"     # even seeds alone: half and half
    talkers = sorted(corpus.talkers)
    count = int(rng.integers(2, min(4, len(talkers)) + 1))
    # favour talkers of different languages
    order = list(rng.permutation(len(talkers)))
    chosen: list[str] = []
    langs: set[str] = set()
    for i in order:
        t = talkers[i]
        if corpus.talkers[t][0]["language"] not in langs or len(langs) >= len({corpus.talkers[x][0]["language"] for x in talkers}):
            chosen.append(t)
            langs.add(corpus.talkers[t][0]["language"])
        if len(chosen) == count:
            break
    for i in order:
        if len(chosen) == count:
            break
        if talkers[i] not in chosen:
            chosen.append(talkers[i])

    names = {"female": list(FEMALE), "male": list(MALE), "unknown": list(NEUTRAL)}
    people: list[Participant] = []
    for t in chosen:
        src0 = corpus.talkers[t][0]
        sex = src0.get("sex", "unknown")
        bank.prepare(rng, t)
        voice = Voice(t, "real", sex)
        p = Participant(stream=names[sex].pop(0), voice=voice,
                        level_dbfs=float(rng.uniform(*mm.SPEECH_LEVEL_RANGE_DBFS)),
                        noise_type=str(rng.choice(PROFILE["noise_types"])),
                        snr_db=float(rng.uniform(*PROFILE["snr"])))
        if rng.random() < PROFILE["hum_p"]:
            p.hum = mm.draw_hum(rng)
        n_u = len(bank.utts[t])
        p.utterances = [("utt", t, int(i)) for i in rng.permutation(n_u)]
        p.backchannels = [("bc", t, i) for i in range(len(bank.bcs[t]))]
        people.append(p)

    # conditions
    music_alone = rng.random() < 0.5 and bool(corpus.music)
    music_under = rng.random() < 0.5 and bool(corpus.music)
    sounds_on = rng.random() < 0.7 and bool(corpus.sound)
    if not (music_alone or music_under or sounds_on):
        which = int(rng.integers(3))
        music_alone, music_under, sounds_on = which == 0, which == 1, which == 2
    alone_p = under_p = None
    if music_alone:
        alone_p = people[int(rng.integers(len(people)))]
        length = float(rng.uniform(5.0, min(20.0, duration * 0.4)))
        start = float(rng.uniform(duration * 0.15, duration - length - 2.0))
        alone_p.hold = (round(start, 2), round(start + length, 2))
    if music_under:
        cands = [p for p in people if p is not alone_p] or people
        under_p = cands[int(rng.integers(len(cands)))]

    leaks = mm.draw_leakage(rng, people, PROFILE) if layout == "co-located" else []
    planner = ScriptPlanner(rng, bank, people, duration, PROFILE)
    planner.plan()
    mm.check_script(planner)
    hold_window = alone_p.hold if alone_p is not None else None
    if alone_p is not None:
        alone_p.hold = None        # render_meeting would put synthetic hold music there
    result = mm.render_meeting(rng, people, leaks, planner, duration)

    n = mm.frames(duration) * HOP
    conditions = {"layout": layout, "streams": {}}
    for p in people:
        conditions["streams"][p.stream] = {
            "talker": p.voice.id, "language": corpus.talkers[p.voice.id][0]["language"],
            "music": [], "speech_under_music": [], "sounds": [], "sounds_leaked": []}
    events: list[dict] = []
    mics = {k: v.copy() for k, v in result.audio.items()}
    level = {p.stream: result.stream_info[p.stream]["speech_level_dbfs"] for p in people}

    def add_music(p: Participant, a: float, b: float, lvl: float, kind: str, extra: dict) -> None:
        y, meta = music_excerpt(rng, corpus, b - a)
        i = int(round(a * SR))
        y = y[: n - i] * db_to_gain(lvl)
        mics[p.stream][i:i + len(y)] += y
        conditions["streams"][p.stream]["music"].append([round(a, 2), round(b, 2)])
        ev = {"type": kind, "stream": p.stream, "start_s": round(a, 3), "end_s": round(b, 3),
              "level_dbfs": round(lvl, 2), **meta, **extra}
        events.append(ev)
        result.stream_info[p.stream].setdefault("music", []).append(ev)
        if result.stream_info[p.stream].get("hold_music") is None:
            result.stream_info[p.stream]["hold_music"] = {"start_s": round(a, 3), "end_s": round(b, 3),
                                                          "level_dbfs": round(lvl, 2)}

    if alone_p is not None:
        a, b = hold_window
        add_music(alone_p, a, b, level[alone_p.stream] + float(rng.uniform(-3, 3)), "music_alone", {})
    if under_p is not None:
        segs = result.speech[under_p.stream]
        length = float(rng.uniform(6.0, min(20.0, duration * 0.5)))
        if segs:       # centre the window on some of the participant's speech
            s0 = segs[int(rng.integers(len(segs)))][0] / FRAMES_PER_S
            a = min(max(0.2, s0 - float(rng.uniform(0.5, 3.0))), duration - length - 0.2)
        else:
            a = float(rng.uniform(0.2, duration - length - 0.2))
        smr = float(rng.uniform(0.0, 10.0))
        add_music(under_p, a, a + length, level[under_p.stream] - smr, "music_under_speech",
                  {"speech_to_music_db": round(smr, 2)})
        conditions["streams"][under_p.stream]["speech_under_music"] = segments_within(segs, a, a + length)

    if sounds_on:
        leak_of = {(l.mic, l.src): l for l in leaks}
        for _ in range(int(rng.integers(1, 6))):
            p = people[int(rng.integers(len(people)))]
            y, meta = sound_excerpt(rng, corpus)
            a = float(rng.uniform(0.3, duration - len(y) / SR - 0.2))
            lvl = float(rng.uniform(-40.0, -15.0))
            y = y * db_to_gain(lvl)
            peak = float(np.max(np.abs(y)))
            if peak > db_to_gain(-3.0):
                y *= db_to_gain(-3.0) / peak
            i = int(round(a * SR))
            mics[p.stream][i:i + len(y)] += y[: n - i]
            b = a + len(y) / SR
            conditions["streams"][p.stream]["sounds"].append([round(a, 2), round(b, 2)])
            ev = {"type": "sound", "stream": p.stream, "start_s": round(a, 3), "end_s": round(b, 3),
                  "level_dbfs": round(lvl, 2), **meta, "leaks_into": []}
            for q in people:
                l = leak_of.get((q.stream, p.stream))
                if q is p or l is None:
                    continue
                wet = signal.oaconvolve(y, mm.reverb_ir(rng, l.rt60_s, l.drr_db)) * db_to_gain(l.gain_db)
                j = i + int(round(l.delay_ms * SR / 1000))
                if j < n:
                    wet = wet[: n - j]
                    mics[q.stream][j:j + len(wet)] += wet
                    conditions["streams"][q.stream]["sounds_leaked"].append(
                        [round(j / SR, 2), round(min(n, j + len(wet)) / SR, 2)])
                    ev["leaks_into"].append(q.stream)
            events.append(ev)
            result.stream_info[p.stream].setdefault("sounds", []).append(ev)

    for p in people:       # peak limit again after the additions
        x = mics[p.stream]
        peak = float(np.max(np.abs(x)))
        scale = min(1.0, db_to_gain(mm.STREAM_PEAK_LIMIT_DBFS) / peak) if peak > 0 else 1.0
        info = result.stream_info[p.stream]
        info["stream_gain_db"] = round(info["stream_gain_db"] + gain_to_db(scale), 2)
        info["speech_level_dbfs"] = round(info["speech_level_dbfs"] + gain_to_db(scale), 2)
        info["peak_dbfs"] = round(gain_to_db(peak * scale), 2)
        result.audio[p.stream] = x * scale
    for st in conditions["streams"].values():
        for k in ("music", "speech_under_music", "sounds", "sounds_leaked"):
            st[k].sort()

    def add_conditions(folder: Path) -> None:
        meta = json.loads((folder / "meeting.json").read_text())
        meta["generator"] = "tools/corpus/make_real_meetings.py"
        meta["generator_version"] = GENERATOR_VERSION
        meta["layout"] = layout
        meta["corpus_split"] = corpus.split
        for part in meta["participants"]:
            info = result.stream_info[part["stream"]]
            src = corpus.talkers[part["voice"]["id"]]
            part["talker"] = part["voice"]["id"]
            part["language"] = src[0]["language"]
            part["corpus_sources"] = sorted({s["id"] for s in src})
            part["music"] = info.get("music", [])
            part["sounds"] = info.get("sounds", [])
        meta["events"] = events
        meta["conditions"] = conditions
        (folder / "meeting.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
        (folder / "conditions.json").write_text(json.dumps(conditions, indent=1, ensure_ascii=False) + "\n")

    final = mm.write_meeting(out_dir, name, seed, layout, duration, people, leaks, planner, result, versions,
                             finish=add_conditions)
    parts = ", ".join(f"{p.stream}={p.voice.id}({conditions['streams'][p.stream]['language']}) "
                      f"speech {sum(b - a for a, b in result.speech[p.stream]) / FRAMES_PER_S / duration:.0%}"
                      + (" MUSIC-ALONE" if p is alone_p else "") + (" MUSIC-UNDER" if p is under_p else "")
                      + (f" sounds {len(conditions['streams'][p.stream]['sounds'])}"
                         if conditions['streams'][p.stream]['sounds'] else "")
                      for p in people)
    log(f"{name}: {layout}, {len(planner.turns)} turns, {len(planner.backchannels)} backchannels; {parts}")
    return final


def main(argv: list[str]) -> int:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=Path("corpus-local"))
    ap.add_argument("--split", choices=("train", "dev", "test"), required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--duration", type=float, default=45.0)
    ap.add_argument("--name", default=None, help="folder prefix (default real-<split>); -NNN is added")
    args = ap.parse_args(argv)
    if args.duration < 15:
        ap.error("--duration must be at least 15 s")
    corpus = Corpus(args.corpus, args.split)
    corpus.split = args.split
    if len(corpus.talkers) < 2:
        ap.error(f"split {args.split} has fewer than 2 talkers")
    versions = {"sox": mm.tool_version(["sox", "--version"]), "corpus": str(args.corpus)}
    args.out.mkdir(parents=True, exist_ok=True)
    bank = RealBank(corpus)
    prefix = args.name or f"real-{args.split}"
    for i in range(args.count):
        generate_one(corpus, bank, args.out, f"{prefix}-{i + 1:03d}", args.seed + i, args.duration, versions)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
