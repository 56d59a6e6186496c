#!/usr/bin/env python3
"""Generate deterministic, labelled multi-microphone meetings for ActiveSpeaker.

Each meeting is a folder holding one 16 kHz mono 16-bit FLAC file per participant
microphone (``<stream>.flac``) plus references:

* ``speech.rttm``  every speech segment of a participant's OWN voice on their own mic;
* ``floor.rttm``   who holds the floor (the dominant speaker), see Fixtures/README.md;
* ``meeting.json`` seed, participants, sources, leakage, noise, and the full script.

Speech comes from real recordings (a LibriVox male reader from pocketsphinx-testdata,
the Asterisk prompts' female voice) and from several espeak-ng voices. Each microphone
also picks up every other participant (delayed, reverberant, -30..-12 dB), stationary
noise, and, depending on the meeting, mains hum, keyboard clicks, coughs and hold music.
All of those are non-speech: they never appear in the references.

Everything random is drawn from ``numpy.random.default_rng(meeting_seed)``, and the
external tools used (espeak-ng, sox) are deterministic, so a given seed and set of
options always gives the same meeting.

Requirements: Python 3.10+, ``pip install numpy scipy``; Debian packages sox,
espeak-ng, asterisk-core-sounds-en (with -en-wav) and pocketsphinx-testdata.

Example::

    python3 tools/corpus/make_meetings.py --out /tmp/meetings --count 5 --seed 7 --duration 60
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
import wave
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import signal
from scipy.io import wavfile

GENERATOR_VERSION = 1

SR = 16_000                 # output sample rate, Hz
HOP = SR // 100             # one alignment frame = 10 ms = 160 samples
FRAMES_PER_S = 100

# Speech alignment on clean source clips (see speech_activity).
ACTIVITY_THRESHOLD_DB = -35.0    # a frame is speech if its level is above clip peak - 35 dB
ACTIVITY_MIN_RUN_FRAMES = 3      # active runs shorter than 30 ms are clicks/noise blips
ACTIVITY_BRIDGE_FRAMES = 15      # gaps shorter than 150 ms are bridged

# Script timing, seconds.
TURN_GAP_RANGE = (-0.3, 1.2)     # next turn onset minus previous turn's last speech offset
WITHIN_TURN_PAUSE_RANGE = (0.2, 0.6)
MAX_WITHIN_TURN_PAUSE = 0.7      # definition of a turn; clips with longer inner pauses are rejected
LONG_SILENCE_RANGE = (2.0, 5.0)
MAX_TURN_S = 4.0                 # no further utterance is added to a turn longer than this
SAME_SPEAKER_GAP_RANGE = (0.8, 1.6)  # when only one participant is available
BACKCHANNEL_MAX_S = 0.8
MIN_TURN_UTTERANCE_S = 1.0       # turn utterances never look like backchannels
FLOOR_SILENCE_S = 1.0            # silence longer than this hands the floor to nobody

# Levels.
SPEECH_LEVEL_RANGE_DBFS = (-26.0, -16.0)   # each participant's own speech, RMS over active frames
UTTERANCE_VARIATION_DB = 6.0               # +- between utterances
UTTERANCE_PEAK_CAP_DBFS = -2.0             # one utterance never peaks above this
STREAM_PEAK_LIMIT_DBFS = -1.0              # a finished stream is scaled down above this

LIBRIVOX_DIR = Path("/usr/share/pocketsphinx/test/data/librivox")
ASTERISK_DIR = Path("/usr/share/asterisk/sounds/en")
ASTERISK_TRANSCRIPTS = Path("/usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz")

FEMALE_NAMES = ["alice", "carol", "erin", "grace", "judy", "mia"]
MALE_NAMES = ["bob", "dave", "frank", "hank", "ivan", "oscar"]

ESPEAK_SENTENCES = [
    "Okay, let's get started with the quarterly review.",
    "I think the numbers look better than last month.",
    "Can everyone see my screen?",
    "We still need to decide who owns the migration.",
    "The release is scheduled for the second week of March.",
    "Honestly, I'm not sure that estimate is realistic.",
    "Let me share the document, one moment.",
    "The customer reported two crashes on the older devices.",
    "If we move the deadline, marketing has to know by Friday.",
    "I agree with that, but the budget is tight.",
    "Could you repeat the last part, please?",
    "We tested it on three networks and the latency was fine.",
    "My connection dropped for a second, sorry about that.",
    "The design review went well, with a few small comments.",
    "Who is taking notes today?",
    "Let's park that topic and come back to it later.",
    "The server costs went up by about twelve percent.",
    "I can take that action item.",
    "Before we finish, are there any other questions?",
    "The new hire starts on Monday, so please say hello.",
    "We should write a test for that edge case.",
    "That sounds good to me.",
    "I'll send the summary by email after the call.",
    "The audio on my side is a bit choppy.",
    "Let's vote on it next week when everyone is back.",
    "The prototype uses less power than the old board.",
    "I was thinking, maybe we split the team in two.",
    "Thanks everyone, that was a productive meeting.",
    "The invoice was paid, but the receipt never arrived.",
    "We can ship the fix tonight if the tests pass.",
    "Does anyone object to moving the stand up to ten?",
    "I spoke with the vendor yesterday, and they agreed.",
    "The chart on page four is the important one.",
    "Wait, which version are we talking about?",
    "Right, so the plan is to freeze the branch on Thursday.",
    "I need another day to finish the report.",
]
ESPEAK_BACKCHANNELS = ["yeah", "okay", "right", "uh-huh", "mm-hmm", "sure"]
ASTERISK_BACKCHANNELS = ["digits/oh", "auth-thankyou", "letters/k"]


@dataclass(frozen=True)
class Voice:
    """One distinct voice a participant can have."""
    id: str
    kind: str            # "librivox", "asterisk" or "espeak"
    sex: str             # "male" or "female"
    espeak_voice: str = ""
    espeak_speed: int = 0
    espeak_pitch: int = 0

    def describe(self) -> dict:
        """JSON description of the voice."""
        d = {"id": self.id, "kind": self.kind, "sex": self.sex}
        if self.kind == "espeak":
            d.update(espeak_voice=self.espeak_voice, speed_wpm=self.espeak_speed,
                     pitch=self.espeak_pitch)
        return d


VOICES = [
    Voice("librivox-male", "librivox", "male"),
    Voice("asterisk-female", "asterisk", "female"),
    Voice("espeak-m3", "espeak", "male", "en+m3", 150, 45),
    Voice("espeak-f2", "espeak", "female", "en+f2", 160, 55),
    Voice("espeak-m1", "espeak", "male", "en+m1", 140, 35),
    Voice("espeak-f4", "espeak", "female", "en-us+f4", 155, 60),
    Voice("espeak-m7", "espeak", "male", "en-gb-scotland+m7", 165, 40),
    Voice("espeak-f3", "espeak", "female", "en-us+f3", 145, 70),
]

PROFILES = {
    # Anything goes, within the ranges of the task description.
    "random": dict(snr=(5.0, 30.0), noise_types=("white", "pink", "brown"), leak=(-30.0, -12.0),
                   hum_p=0.3, keyboard_p=0.3, cough_p=0.25, music_p=0.2,
                   require=(), leak_force_max=False,
                   interrupt_p=0.15, long_silence_p=0.1, backchannel_p=0.4),
    # Mild stationary noise, fixed -25 dB leakage, no events.
    "clean": dict(snr=(25.0, 30.0), noise_types=("white", "pink"), leak=(-25.0, -25.0),
                  hum_p=0.0, keyboard_p=0.0, cough_p=0.0, music_p=0.0,
                  require=(), leak_force_max=False,
                  interrupt_p=0.1, long_silence_p=0.1, backchannel_p=0.4),
    # Low SNR, strong leakage, hum, keyboard and coughs (each on at least one mic).
    "noisy": dict(snr=(5.0, 15.0), noise_types=("white", "pink", "brown"), leak=(-24.0, -12.0),
                  hum_p=0.5, keyboard_p=0.5, cough_p=0.5, music_p=0.0,
                  require=("hum", "keyboard", "cough"), leak_force_max=True,
                  interrupt_p=0.2, long_silence_p=0.1, backchannel_p=0.5),
    # Hold music on one mic while its participant is silent, brown noise everywhere.
    "music": dict(snr=(15.0, 25.0), noise_types=("brown",), leak=(-30.0, -18.0),
                  hum_p=0.0, keyboard_p=0.0, cough_p=0.0, music_p=1.0,
                  require=(), leak_force_max=False,
                  interrupt_p=0.1, long_silence_p=0.1, backchannel_p=0.4),
}


class GeneratorError(Exception):
    """An environment problem (missing tool or source file) with a readable message."""


def log(message: str) -> None:
    """Print one progress line on stderr."""
    print(f"[make_meetings] {message}", file=sys.stderr, flush=True)


def db_to_gain(db: float) -> float:
    """Amplitude factor for a level change in dB."""
    return 10.0 ** (db / 20.0)


def gain_to_db(gain: float) -> float:
    """Level change in dB for an amplitude factor (-inf safe)."""
    return 20.0 * math.log10(max(gain, 1e-12))


def run(cmd: list[str]) -> None:
    """Run an external tool; raise GeneratorError with its stderr on failure."""
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    except FileNotFoundError as exc:
        raise GeneratorError(f"{cmd[0]} not found: apt-get install {cmd[0]}") from exc
    if done.returncode != 0:
        raise GeneratorError(f"{' '.join(cmd)} failed ({done.returncode}): "
                             f"{done.stderr.decode(errors='replace').strip()}")


def tool_version(cmd: list[str]) -> str:
    """First line of a tool's version output, for the metadata."""
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    first = out.stdout.decode(errors="replace").strip().splitlines()[0]
    return first.split("  Data at")[0].strip()


# ---------------------------------------------------------------------------
# Audio I/O and alignment
# ---------------------------------------------------------------------------

def read_float_wav(path: Path) -> np.ndarray:
    """Read a mono WAV (any PCM or float encoding) as float64 in [-1, 1]."""
    rate, data = wavfile.read(path)
    if rate != SR:
        raise GeneratorError(f"{path}: expected {SR} Hz, got {rate}")
    if data.ndim != 1:
        data = data[:, 0]
    if data.dtype == np.int16:
        return data.astype(np.float64) / 32768.0
    if data.dtype == np.int32:
        return data.astype(np.float64) / 2147483648.0
    return data.astype(np.float64)


def to_16k_float(src: Path, dst: Path) -> np.ndarray:
    """Convert any sox-readable mono file to 16 kHz float WAV (no dither) and read it."""
    run(["sox", "-D", str(src), "-e", "floating-point", "-b", "32", str(dst),
         "remix", "1", "rate", "-v", str(SR)])
    return read_float_wav(dst)


def write_pcm16_wav(path: Path, x: np.ndarray) -> None:
    """Write float samples as 16-bit PCM mono WAV (rounded, saturated)."""
    pcm = np.clip(np.round(x * 32768.0), -32768, 32767).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SR)
        w.writeframes(pcm.tobytes())


def frame_levels_db(x: np.ndarray) -> np.ndarray:
    """RMS level in dBFS of each whole 10 ms frame of x."""
    n = len(x) // HOP
    frames = x[: n * HOP].reshape(n, HOP)
    return 10.0 * np.log10(np.mean(frames ** 2, axis=1) + 1e-20)


def runs_of(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) index pairs of the True runs of a boolean array."""
    padded = np.concatenate([[False], mask, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]


def speech_activity(x: np.ndarray, peak_db: float | None = None) -> tuple[list[tuple[int, int]], float]:
    """Energy-based speech alignment of a CLEAN source clip.

    Step by step: (1) cut x into 10 ms frames and take each frame's RMS level in dBFS;
    (2) a frame is active if its level exceeds ``peak_db - 35 dB``, where ``peak_db`` is
    the loudest frame of the clip (or the given value, used for truncated clips so they
    keep the threshold of the full clip); (3) drop active runs shorter than 30 ms
    (clicks, isolated noise frames); (4) bridge gaps shorter than 150 ms, so a pause of
    150 ms or more inside an utterance is a gap.

    Returns the segments as [start, end) frame indices and the peak used.
    """
    levels = frame_levels_db(x)
    if peak_db is None:
        peak_db = float(levels.max()) if len(levels) else -200.0
    runs = [r for r in runs_of(levels > peak_db + ACTIVITY_THRESHOLD_DB)
            if r[1] - r[0] >= ACTIVITY_MIN_RUN_FRAMES]
    merged: list[tuple[int, int]] = []
    for start, end in runs:
        if merged and start - merged[-1][1] < ACTIVITY_BRIDGE_FRAMES:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged, peak_db


def merge_segments(segs: list[tuple[int, int]], bridge: int = 0) -> list[tuple[int, int]]:
    """Sort and merge [start, end) segments that overlap, touch, or are < ``bridge`` apart."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(segs):
        if out and (start <= out[-1][1] or start - out[-1][1] < bridge):
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


# ---------------------------------------------------------------------------
# Source clips
# ---------------------------------------------------------------------------

@dataclass
class Clip:
    """A clean speech clip at 16 kHz, scaled to 0 dBFS RMS over its active frames.

    ``audio`` always has a whole number of 10 ms frames; ``segments`` are its speech
    segments in frames. ``peak_db`` is the alignment reference of the original clip.
    """
    source: str
    text: str
    audio: np.ndarray
    segments: list[tuple[int, int]]
    peak_db: float

    @property
    def onset(self) -> int:
        """First speech frame."""
        return self.segments[0][0]

    @property
    def offset(self) -> int:
        """Frame just after the last speech frame."""
        return self.segments[-1][1]

    @property
    def span_s(self) -> float:
        """Seconds from first speech onset to last speech offset."""
        return (self.offset - self.onset) / FRAMES_PER_S

    def max_inner_gap_s(self) -> float:
        """Longest pause between two speech segments of the clip, in seconds."""
        gaps = [b[0] - a[1] for a, b in zip(self.segments, self.segments[1:])]
        return max(gaps, default=0) / FRAMES_PER_S

    def truncated(self, end_frame: int) -> "Clip":
        """The clip cut at ``end_frame`` (an interrupted utterance), 30 ms fade-out."""
        audio = self.audio[: end_frame * HOP].copy()
        fade = int(0.03 * SR)
        audio[-fade:] *= np.linspace(1.0, 0.0, fade)
        segments, _ = speech_activity(audio, self.peak_db)
        return Clip(self.source, self.text + " [interrupted]", audio, segments, self.peak_db)


def make_clip(source: str, text: str, x: np.ndarray) -> Clip | None:
    """Trim a clean recording to its speech +-100 ms, fade the edges, align, normalise.

    Returns None if the recording holds no speech.
    """
    segments, peak_db = speech_activity(x)
    if not segments:
        return None
    start = max(0, (segments[0][0] - 10) * HOP)
    end = min(len(x) // HOP * HOP, (segments[-1][1] + 10) * HOP)
    y = x[start:end].copy()
    y = y[: len(y) // HOP * HOP]
    fade = int(0.02 * SR)
    y[:fade] *= np.linspace(0.0, 1.0, fade)
    y[-fade:] *= np.linspace(1.0, 0.0, fade)
    segments, _ = speech_activity(y, peak_db)
    if not segments:
        return None
    active = np.concatenate([y[a * HOP:b * HOP] for a, b in segments])
    rms = math.sqrt(float(np.mean(active ** 2)))
    scale = 1.0 / rms
    return Clip(source, text, y * scale, segments, peak_db + gain_to_db(scale))


def librivox_transcripts() -> dict[str, str]:
    """Utterance id -> transcription of the pocketsphinx LibriVox test data."""
    path = LIBRIVOX_DIR / "transcription"
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"<s>\s*(.*?)\s*</s>\s*\((.+)\)", line.strip())
        if m:
            out[m.group(2)] = m.group(1)
    return out


def asterisk_transcripts() -> dict[str, str]:
    """Prompt name -> text, from the Debian asterisk-core-sounds-en documentation."""
    if not ASTERISK_TRANSCRIPTS.exists():
        return {}
    out = {}
    with gzip.open(ASTERISK_TRANSCRIPTS, "rt", errors="replace") as f:
        for line in f:
            m = re.match(r"^([\w/\-]+):\s*(.+)$", line.strip())
            if m:
                out[m.group(1)] = m.group(2)
    return out


class SourceBank:
    """Loads, converts, aligns and caches speech clips; hands them out per voice.

    Conversions (sox resampling, espeak-ng synthesis) happen in a private temporary
    folder, and each clip is made at most once per process.
    """

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.cache: dict[tuple, Clip | None] = {}
        for path in (LIBRIVOX_DIR, ASTERISK_DIR):
            if not path.is_dir():
                raise GeneratorError(f"{path} missing: apt-get install "
                                     "pocketsphinx-testdata asterisk-core-sounds-en asterisk-core-sounds-en-wav")
        self.librivox_text = librivox_transcripts()
        self.asterisk_text = asterisk_transcripts()
        self.asterisk_names = self._asterisk_utterance_names()

    @staticmethod
    def _asterisk_utterance_names() -> list[str]:
        """Top-level prompts of 1.0-4.5 s (all speech; tones and beeps are shorter).

        The choice does not depend on the transcript file, which lives under
        /usr/share/doc and may be missing; transcripts only label the clips.
        """
        names = []
        for path in sorted(ASTERISK_DIR.glob("*.wav")):
            with wave.open(str(path)) as w:
                seconds = w.getnframes() / w.getframerate()
            if 1.0 <= seconds <= 4.5 and not re.search(r"beep|tone", path.stem):
                names.append(path.stem)
        return names

    def _tmp(self, stem: str, suffix: str = ".wav") -> Path:
        """A path in the work folder for an intermediate file."""
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", stem)
        return self.workdir / (safe + suffix)

    def librivox(self, utt_id: str) -> Clip | None:
        """One LibriVox utterance (16 kHz already)."""
        key = ("librivox", utt_id)
        if key not in self.cache:
            x = read_float_wav(LIBRIVOX_DIR / f"{utt_id}.wav")
            self.cache[key] = make_clip(f"librivox:{utt_id}", self.librivox_text.get(utt_id, ""), x)
        return self.cache[key]

    def asterisk(self, name: str) -> Clip | None:
        """One Asterisk prompt, upsampled 8 -> 16 kHz with ``sox rate -v``."""
        key = ("asterisk", name)
        if key not in self.cache:
            x = to_16k_float(ASTERISK_DIR / f"{name}.wav", self._tmp("ast-" + name))
            self.cache[key] = make_clip(f"asterisk:{name}", self.asterisk_text.get(name, ""), x)
        return self.cache[key]

    def espeak(self, voice: Voice, text: str, speed: int) -> Clip | None:
        """espeak-ng speaking ``text``, resampled 22050 -> 16000 Hz with sox."""
        key = ("espeak", voice.espeak_voice, voice.espeak_pitch, speed, text)
        if key not in self.cache:
            raw = self._tmp(f"esp-{len(self.cache)}-raw")
            run(["espeak-ng", "-v", voice.espeak_voice, "-s", str(speed), "-p",
                 str(voice.espeak_pitch), "-w", str(raw), text])
            x = to_16k_float(raw, self._tmp(f"esp-{len(self.cache)}"))
            src = f"espeak-ng:{voice.espeak_voice}:s{speed}:p{voice.espeak_pitch}"
            self.cache[key] = make_clip(src, text, x)
        return self.cache[key]

    def utterance_plan(self, rng: np.random.Generator, voice: Voice, sentences: list[str]) -> list[tuple]:
        """A shuffled list of clip requests for a voice; clips are made lazily."""
        if voice.kind == "librivox":
            ids = sorted(self.librivox_text)
            return [("librivox", ids[i]) for i in rng.permutation(len(ids))]
        if voice.kind == "asterisk":
            return [("asterisk", self.asterisk_names[i])
                    for i in rng.permutation(len(self.asterisk_names))[:60]]
        return [("espeak", s, int(voice.espeak_speed + rng.integers(-10, 11))) for s in sentences]

    def backchannel_plan(self, voice: Voice) -> list[tuple]:
        """Clip requests for a voice's backchannels (none for the LibriVox reader)."""
        if voice.kind == "asterisk":
            return [("asterisk", name) for name in ASTERISK_BACKCHANNELS]
        if voice.kind == "espeak":
            return [("espeak", word, voice.espeak_speed) for word in ESPEAK_BACKCHANNELS]
        return []

    def get(self, voice: Voice, request: tuple) -> Clip | None:
        """The clip for a request made by utterance_plan/backchannel_plan."""
        if request[0] == "librivox":
            return self.librivox(request[1])
        if request[0] == "asterisk":
            return self.asterisk(request[1])
        return self.espeak(voice, request[1], request[2])


# ---------------------------------------------------------------------------
# Meeting configuration
# ---------------------------------------------------------------------------

@dataclass
class Participant:
    """One participant: a stream id, a voice and what their microphone picks up."""
    stream: str
    voice: Voice
    level_dbfs: float
    noise_type: str
    snr_db: float
    hum: dict | None = None
    keyboard: bool = False
    cough: bool = False
    hold: tuple[float, float] | None = None     # hold-music window, seconds
    utterances: list[tuple] = field(default_factory=list)
    backchannels: list[tuple] = field(default_factory=list)
    next_utterance: int = 0
    talk_s: float = 0.0


@dataclass
class Leak:
    """How talker ``src`` is picked up by microphone ``mic``."""
    mic: str
    src: str
    gain_db: float
    delay_ms: float
    rt60_s: float
    drr_db: float


def draw_participants(rng: np.random.Generator, count: int, profile: dict,
                      duration: float) -> list[Participant]:
    """Draw voices, names, levels and per-mic noise for ``count`` participants."""
    weights = np.array([2.0 if v.kind != "espeak" else 1.0 for v in VOICES])
    chosen = rng.choice(len(VOICES), size=count, replace=False, p=weights / weights.sum())
    names = {"female": list(FEMALE_NAMES), "male": list(MALE_NAMES)}
    people = []
    for index in sorted(int(i) for i in chosen):
        voice = VOICES[index]
        people.append(Participant(
            stream=names[voice.sex].pop(0), voice=voice,
            level_dbfs=float(rng.uniform(*SPEECH_LEVEL_RANGE_DBFS)),
            noise_type=str(rng.choice(profile["noise_types"])),
            snr_db=float(rng.uniform(*profile["snr"]))))
    order = rng.permutation(len(people))
    people = [people[i] for i in order]
    for p in people:
        if rng.random() < profile["hum_p"]:
            p.hum = draw_hum(rng)
        p.keyboard = bool(rng.random() < profile["keyboard_p"])
        p.cough = bool(rng.random() < profile["cough_p"])
    for kind in profile["require"]:
        if kind == "hum" and not any(p.hum for p in people):
            people[int(rng.integers(len(people)))].hum = draw_hum(rng)
        if kind == "keyboard" and not any(p.keyboard for p in people):
            people[int(rng.integers(len(people)))].keyboard = True
        if kind == "cough" and not any(p.cough for p in people):
            people[int(rng.integers(len(people)))].cough = True
    if rng.random() < profile["music_p"]:
        holder = people[int(rng.integers(len(people)))]
        start = duration * float(rng.uniform(0.2, 0.35))
        holder.hold = (round(start, 2), round(start + duration * float(rng.uniform(0.35, 0.5)), 2))
    return people


def draw_hum(rng: np.random.Generator) -> dict:
    """Mains hum parameters: 50 or 60 Hz, harmonic amplitudes, level re speech."""
    amps = [1.0] + [float(rng.uniform(0.1, 0.8) / k ** 0.5) for k in range(2, 8)]
    return {"freq_hz": int(rng.choice([50, 60])), "harmonic_amplitudes": [round(a, 3) for a in amps],
            "level_db_re_speech": round(float(rng.uniform(-35.0, -18.0)), 2)}


def draw_leakage(rng: np.random.Generator, people: list[Participant], profile: dict) -> list[Leak]:
    """Leakage of every talker into every other microphone."""
    leaks = []
    for mic in people:
        for src in people:
            if mic is src:
                continue
            leaks.append(Leak(mic.stream, src.stream,
                              gain_db=float(rng.uniform(*profile["leak"])),
                              delay_ms=float(rng.uniform(1.0, 15.0)),
                              rt60_s=float(rng.uniform(0.2, 0.5)),
                              drr_db=float(rng.uniform(-3.0, 6.0))))
    if profile["leak_force_max"] and leaks:
        leaks[int(rng.integers(len(leaks)))].gain_db = profile["leak"][1]
    return leaks


# ---------------------------------------------------------------------------
# Script: turns, utterances, backchannels
# ---------------------------------------------------------------------------

@dataclass
class Placement:
    """A clip placed on a participant's own track; ``start`` in frames."""
    stream: str
    clip: Clip
    start: int
    gain_db: float
    kind: str            # "turn" or "backchannel"
    turn: int

    @property
    def speech(self) -> list[tuple[int, int]]:
        """Speech segments in meeting frames."""
        return [(a + self.start, b + self.start) for a, b in self.clip.segments]

    @property
    def onset(self) -> int:
        """Meeting frame of the first speech frame."""
        return self.start + self.clip.onset

    @property
    def offset(self) -> int:
        """Meeting frame just after the last speech frame."""
        return self.start + self.clip.offset


@dataclass
class Turn:
    """A stretch where one participant holds the floor."""
    speaker: str
    utterances: list[Placement]
    interrupts: bool

    @property
    def onset(self) -> int:
        """The turn's first speech onset (frames): where it takes the floor."""
        return self.utterances[0].onset

    @property
    def offset(self) -> int:
        """The end of the turn's last speech (frames)."""
        return max(u.offset for u in self.utterances)


def frames(seconds: float) -> int:
    """Seconds -> whole 10 ms frames."""
    return int(round(seconds * FRAMES_PER_S))


class ScriptPlanner:
    """Builds the meeting script: who speaks which clip when, with what gain."""

    def __init__(self, rng: np.random.Generator, bank: SourceBank, people: list[Participant],
                 duration: float, profile: dict):
        self.rng = rng
        self.bank = bank
        self.people = {p.stream: p for p in people}
        self.order = [p.stream for p in people]
        self.end = frames(duration)
        self.profile = profile
        self.turns: list[Turn] = []
        self.backchannels: list[Placement] = []
        self.busy: dict[str, list[tuple[int, int]]] = {p.stream: [] for p in people}

    # -- availability -------------------------------------------------------
    def free(self, stream: str, a: int, b: int, margin: int = 20) -> bool:
        """True if ``stream`` is silent and not on hold during [a, b) +- margin frames."""
        p = self.people[stream]
        if p.hold and a - margin < frames(p.hold[1]) and b + margin > frames(p.hold[0]):
            return False
        return all(b + margin <= s or a - margin >= e for s, e in self.busy[stream])

    def next_clip(self, stream: str, onset: int, latest_offset: int) -> Clip | None:
        """The participant's next unused clip whose speech, starting at ``onset``, fits.

        It must end by ``latest_offset`` and keep the participant off hold.
        """
        p = self.people[stream]
        n = len(p.utterances)
        for k in range(n):
            request = p.utterances[(p.next_utterance + k) % n]
            clip = self.bank.get(p.voice, request)
            if clip is None or clip.span_s < MIN_TURN_UTTERANCE_S \
                    or clip.max_inner_gap_s() >= MAX_WITHIN_TURN_PAUSE - 0.1:
                continue
            start = onset - clip.onset
            if start < 0 or start + len(clip.audio) // HOP > self.end:
                continue
            if onset + (clip.offset - clip.onset) > latest_offset:
                continue
            if not self.free(stream, onset, onset + clip.offset - clip.onset, margin=5):
                continue
            p.next_utterance = (p.next_utterance + k + 1) % n
            return clip
        return None

    def utterance_gain(self, stream: str, clip: Clip) -> float:
        """Participant level +- 6 dB, capped so the utterance peaks below -2 dBFS."""
        p = self.people[stream]
        gain = p.level_dbfs + float(self.rng.uniform(-UTTERANCE_VARIATION_DB, UTTERANCE_VARIATION_DB))
        peak = gain_to_db(float(np.max(np.abs(clip.audio))))
        return round(min(gain, UTTERANCE_PEAK_CAP_DBFS - peak), 2)

    def place(self, stream: str, clip: Clip, onset: int, kind: str, turn: int) -> Placement:
        """Put a clip so its first speech frame is at ``onset``; mark the speaker busy."""
        pl = Placement(stream, clip, onset - clip.onset, self.utterance_gain(stream, clip), kind, turn)
        self.busy[stream].extend(pl.speech)
        return pl

    # -- choosing -----------------------------------------------------------
    def choose_speaker(self, onset: int, exclude: str | None) -> str | None:
        """A participant free at ``onset``, favouring those who spoke least."""
        free = [s for s in self.order if self.free(s, onset, onset + 100, margin=10)]
        others = [s for s in free if s != exclude]
        pool = others or free
        if not pool:
            return None
        weights = np.array([1.0 / (1.0 + self.people[s].talk_s / 3.0) for s in pool])
        return pool[int(self.rng.choice(len(pool), p=weights / weights.sum()))]

    # -- building -----------------------------------------------------------
    def build_turn(self, speaker: str, onset: int, interrupts: bool) -> Turn | None:
        """One to three utterances by ``speaker`` with 0.2-0.6 s pauses between them."""
        count = int(self.rng.choice([1, 2, 3], p=[0.6, 0.3, 0.1]))
        placed: list[Placement] = []
        t = onset
        for _ in range(count):
            if placed and (placed[-1].offset - placed[0].onset) / FRAMES_PER_S > MAX_TURN_S:
                break
            clip = self.next_clip(speaker, t, self.end - frames(0.3))
            if clip is None:
                break
            placed.append(self.place(speaker, clip, t, "turn", len(self.turns)))
            t = placed[-1].offset + frames(float(self.rng.uniform(*WITHIN_TURN_PAUSE_RANGE)))
        if not placed:
            return None
        turn = Turn(speaker, placed, interrupts)
        self.people[speaker].talk_s += sum(u.clip.span_s for u in placed)
        return turn

    def add_backchannels(self, turn: Turn) -> None:
        """Listeners' short backchannels during the holder's speech or pauses."""
        for k, utt in enumerate(turn.utterances):
            if utt.clip.span_s < 1.5 or self.rng.random() >= self.profile["backchannel_p"]:
                continue
            listeners = [s for s in self.order if s != turn.speaker and self.people[s].backchannels]
            if not listeners:
                return
            stream = listeners[int(self.rng.integers(len(listeners)))]
            p = self.people[stream]
            request = p.backchannels[int(self.rng.integers(len(p.backchannels)))]
            clip = self.bank.get(p.voice, request)
            if clip is None or clip.span_s >= BACKCHANNEL_MAX_S:
                continue
            last = k == len(turn.utterances) - 1
            if not last and self.rng.random() < 0.3:
                onset = utt.offset + frames(float(self.rng.uniform(0.0, 0.1)))   # in the pause
            else:
                lo, hi = utt.onset + frames(0.5), utt.offset - frames(0.3)
                if hi <= lo:
                    continue
                onset = int(self.rng.integers(lo, hi))
            length = clip.offset - clip.onset
            if onset - clip.onset < 0 or onset - clip.onset + len(clip.audio) // HOP > self.end:
                continue
            if not self.free(stream, onset, onset + length, margin=20):
                continue
            self.backchannels.append(self.place(stream, clip, onset, "backchannel", len(self.turns) - 1))

    def try_interrupt(self, turn: Turn) -> Turn | None:
        """Maybe let someone interrupt the turn's last utterance; returns the new turn.

        The interrupter starts 0.7 s or more into the holder's last utterance, at least
        0.8 s before its planned end; the holder stops 0.3-0.8 s after the interrupter's
        onset (the utterance is cut with a 30 ms fade). Nothing changes if no other
        participant has a clip that fits there.
        """
        last = turn.utterances[-1]
        if self.rng.random() >= self.profile["interrupt_p"] or last.clip.span_s < 1.6:
            return None
        lo, hi = last.onset + frames(0.7), last.offset - frames(0.8)
        if hi <= lo:
            return None
        at = int(self.rng.integers(lo, hi))
        cut = at + frames(float(self.rng.uniform(0.3, 0.8)))
        speaker = self.choose_speaker(at, turn.speaker)
        if speaker is None or speaker == turn.speaker:
            return None
        short = last.clip.truncated(cut - last.start)
        if not short.segments:
            return None
        interrupter = self.build_turn(speaker, at, interrupts=True)
        if interrupter is None:
            return None
        self.busy[turn.speaker] = [s for s in self.busy[turn.speaker] if s not in last.speech]
        last.clip = short
        self.busy[turn.speaker].extend(last.speech)
        return interrupter

    def plan(self) -> None:
        """Fill the meeting with turns until no further turn fits."""
        onset = frames(float(self.rng.uniform(0.3, 1.5)))
        previous: Turn | None = None
        while onset < self.end - frames(1.0):
            speaker = self.choose_speaker(onset, previous.speaker if previous else None)
            if speaker is None:
                onset += frames(0.5)
                continue
            if previous and speaker == previous.speaker:
                # Only this participant is available: a new turn needs a pause >= 0.7 s.
                onset = max(onset, previous.offset + frames(float(self.rng.uniform(*SAME_SPEAKER_GAP_RANGE))))
            turn = self.build_turn(speaker, onset, interrupts=False)
            if turn is None:
                onset += frames(0.5)        # nothing of this speaker fits here; try later
                continue
            while turn is not None:         # a turn, then possibly a chain of interruptions
                self.turns.append(turn)
                self.add_backchannels(turn)
                previous = turn
                turn = self.try_interrupt(turn)
            if self.rng.random() < self.profile["long_silence_p"]:
                gap = float(self.rng.uniform(*LONG_SILENCE_RANGE))
            else:
                gap = float(self.rng.uniform(*TURN_GAP_RANGE))
            onset = previous.offset + frames(gap)

    @property
    def placements(self) -> list[Placement]:
        """Every placed clip, turns and backchannels."""
        return [u for t in self.turns for u in t.utterances] + self.backchannels


# ---------------------------------------------------------------------------
# Non-speech sounds
# ---------------------------------------------------------------------------

def coloured_noise(rng: np.random.Generator, n: int, colour: str) -> np.ndarray:
    """Unit-RMS stationary noise: white, pink (1/f power) or brown (1/f^2 power)."""
    white = rng.standard_normal(n)
    if colour == "white":
        return white / np.sqrt(np.mean(white ** 2))
    spectrum = np.fft.rfft(white)
    f = np.fft.rfftfreq(n, 1.0 / SR)
    exponent = 0.5 if colour == "pink" else 1.0           # amplitude ~ f^-exponent
    shape = 1.0 / np.maximum(f, 20.0) ** exponent           # flat below 20 Hz
    shape[0] = 0.0
    y = np.fft.irfft(spectrum * shape, n)
    return y / np.sqrt(np.mean(y ** 2))


def mains_hum(rng: np.random.Generator, n: int, hum: dict) -> np.ndarray:
    """Unit-RMS hum: harmonics of 50/60 Hz, random phases, slow +-1 dB wobble."""
    t = np.arange(n) / SR
    y = np.zeros(n)
    for k, amp in enumerate(hum["harmonic_amplitudes"], start=1):
        y += amp * np.sin(2 * np.pi * k * hum["freq_hz"] * t + rng.uniform(0, 2 * np.pi))
    wobble = db_to_gain(1.0) ** np.sin(2 * np.pi * rng.uniform(0.05, 0.3) * t)
    y *= wobble
    return y / np.sqrt(np.mean(y ** 2))


def key_click(rng: np.random.Generator) -> np.ndarray:
    """One keystroke: 10-30 ms of band-passed noise, instant attack, fast decay; unit RMS."""
    n = int(rng.uniform(0.010, 0.030) * SR)
    lo, hi = rng.uniform(800, 2500), rng.uniform(4500, 7500)
    sos = signal.butter(2, [lo, hi], btype="bandpass", fs=SR, output="sos")
    t = np.arange(n) / SR
    y = signal.sosfilt(sos, rng.standard_normal(n)) * np.exp(-t / (n / SR / 4.0))
    y[: int(0.0005 * SR)] *= np.linspace(0.3, 1.0, int(0.0005 * SR))
    return y / np.sqrt(np.mean(y ** 2))


def typing_burst(rng: np.random.Generator, seconds: float) -> tuple[np.ndarray, int]:
    """Irregular keystrokes (80-280 ms apart) for ``seconds``; returns audio, keystroke count."""
    y = np.zeros(int(seconds * SR) + int(0.05 * SR))
    t, count = 0.0, 0
    while t < seconds:
        click = key_click(rng) * db_to_gain(rng.uniform(-4, 0))
        i = int(t * SR)
        y[i:i + len(click)] += click
        count += 1
        t += rng.uniform(0.08, 0.28)
    return y, count


def cough(rng: np.random.Generator) -> np.ndarray:
    """A cough: 1-3 bursts of 150-400 ms band-passed noise at irregular spacing.

    Each burst has a sharp 3-8 ms attack and an exponential decay; no periodic
    (voiced) component. Normalised so the loudest burst has unit RMS.
    """
    parts = []
    for _ in range(int(rng.choice([1, 2, 3], p=[0.5, 0.35, 0.15]))):
        n = int(rng.uniform(0.15, 0.40) * SR)
        t = np.arange(n) / SR
        lo, hi = rng.uniform(200, 500), rng.uniform(2000, 4500)
        sos = signal.butter(2, [lo, hi], btype="bandpass", fs=SR, output="sos")
        attack = rng.uniform(0.003, 0.008)
        env = (1.0 - np.exp(-t / attack)) * np.exp(-t / rng.uniform(0.05, 0.15))
        burst = signal.sosfilt(sos, rng.standard_normal(n)) * env
        parts.append(burst / np.sqrt(np.mean(burst ** 2)) * db_to_gain(-rng.uniform(0, 6)))
        parts.append(np.zeros(int(rng.uniform(0.12, 0.45) * SR)))
    return np.concatenate(parts[:-1])


def hold_music(rng: np.random.Generator, n: int) -> np.ndarray:
    """Unit-RMS synthetic hold music: a I-vi-IV-V chord loop, bass and a melody.

    Notes are additive tones (six harmonics, 1/h^1.5 amplitudes) with a 10 ms attack
    and an exponential decay.
    """
    key = 48 + int(rng.integers(0, 12))                      # MIDI note of the tonic
    beat = rng.uniform(0.4, 0.6)                             # seconds per beat
    y = np.zeros(n + 4 * SR)                                 # room for the last notes' tails
    scale = [0, 2, 4, 7, 9, 12, 14, 16]                      # major pentatonic-ish

    def note(midi: float, start: float, length: float, amp: float) -> None:
        """Add one note (MIDI pitch, start and length in seconds) into y."""
        f0 = 440.0 * 2 ** ((midi - 69) / 12)
        m = int(length * SR)
        i = int(start * SR)
        if i >= n:
            return
        t = np.arange(m) / SR
        tone = sum(np.sin(2 * np.pi * h * f0 * t) / h ** 1.5 for h in range(1, 7) if h * f0 < SR / 2)
        env = np.minimum(t / 0.01, 1.0) * np.exp(-t / (length * 0.6))
        y[i:i + m] += amp * tone * env

    t, bar = 0.0, 0
    progression = [(0, "maj"), (9, "min"), (5, "maj"), (7, "maj")]
    while t < n / SR:
        root, quality = progression[bar % 4]
        third = 4 if quality == "maj" else 3
        for offset in (0, third, 7):
            note(key + root + offset, t, 4 * beat, 0.25)
        note(key + root - 12, t, 2 * beat, 0.4)
        note(key + root - 12, t + 2 * beat, 2 * beat, 0.35)
        for b in range(4):
            if rng.random() < 0.8:
                note(key + 12 + scale[int(rng.integers(len(scale)))], t + b * beat, beat, 0.3)
        t += 4 * beat
        bar += 1
    y = y[:n]
    return y / np.sqrt(np.mean(y ** 2))


def reverb_ir(rng: np.random.Generator, rt60: float, drr_db: float) -> np.ndarray:
    """Unit-energy room impulse response: a direct impulse plus a decaying noise tail.

    The tail is Gaussian noise times exp(-6.908 t / RT60) (amplitude falls 60 dB in
    RT60 seconds), starting 2-5 ms after the direct path; its energy is ``drr_db``
    below the direct path's. The whole response is then scaled to unit energy, so
    convolving keeps a signal's RMS roughly unchanged.
    """
    n = int(rt60 * SR)
    t = np.arange(n) / SR
    tail = rng.standard_normal(n) * np.exp(-6.908 * t / rt60)
    tail[: int(rng.uniform(0.002, 0.005) * SR)] = 0.0
    tail *= db_to_gain(-drr_db) / np.sqrt(np.sum(tail ** 2))
    tail[0] += 1.0
    return tail / np.sqrt(np.sum(tail ** 2))


def free_intervals(busy: list[tuple[int, int]], end: int, margin: int) -> list[tuple[int, int]]:
    """Gaps (in samples) of [0.2 s, end - 0.2 s) not within ``margin`` of a busy interval."""
    spans = merge_segments([(max(0, a - margin), b + margin) for a, b in busy])
    out, t = [], int(0.2 * SR)
    for a, b in spans:
        if a > t:
            out.append((t, a))
        t = max(t, b)
    if end - int(0.2 * SR) > t:
        out.append((t, end - int(0.2 * SR)))
    return out


def pick_free_start(rng: np.random.Generator, busy: list[tuple[int, int]], end: int,
                    length: int, margin: int) -> int | None:
    """Random start (samples) for ``length`` samples of sound away from ``busy``."""
    gaps = [(a, b) for a, b in free_intervals(busy, end, margin) if b - a >= length]
    if not gaps:
        return None
    room = np.array([b - a - length + 1 for a, b in gaps], dtype=float)
    a, b = gaps[int(rng.choice(len(gaps), p=room / room.sum()))]
    return int(rng.integers(a, b - length + 1))


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------

@dataclass
class Rendered:
    """The finished meeting: per-stream audio, references and metadata parts."""
    audio: dict[str, np.ndarray]
    speech: dict[str, list[tuple[int, int]]]
    floor: list[tuple[int, int, str]]
    stream_info: dict[str, dict]


def active_power(x: np.ndarray, segments: list[tuple[int, int]]) -> float:
    """Mean power of x over the given frame segments."""
    if not segments:
        return 0.0
    return float(np.mean(np.concatenate([x[a * HOP:b * HOP] for a, b in segments]) ** 2))


def render_meeting(rng: np.random.Generator, people: list[Participant], leaks: list[Leak],
                   planner: ScriptPlanner, duration: float) -> Rendered:
    """Mix every microphone: own voice, personal sounds, leakage, noise, hum, music."""
    n = frames(duration) * HOP
    speech = {p.stream: np.zeros(n) for p in people}
    for pl in planner.placements:
        a = pl.start * HOP
        seg = pl.clip.audio * db_to_gain(pl.gain_db)
        speech[pl.stream][a:a + len(seg)] += seg[: n - a]

    refs = {p.stream: merge_segments(
        [s for pl in planner.placements if pl.stream == p.stream for s in pl.speech],
        bridge=ACTIVITY_BRIDGE_FRAMES) for p in people}
    refs = {k: [(a, min(b, frames(duration))) for a, b in v if a < frames(duration)]
            for k, v in refs.items()}

    info: dict[str, dict] = {}
    personal: dict[str, np.ndarray] = {}
    for p in people:
        power = active_power(speech[p.stream], refs[p.stream])
        level = 10 * math.log10(power) if power > 0 else p.level_dbfs
        busy = [(a * HOP, b * HOP) for a, b in refs[p.stream]]
        if p.hold:
            busy.append((int(p.hold[0] * SR), int(p.hold[1] * SR)))
        events = personal_events(rng, p, busy, n, level)
        personal[p.stream] = speech[p.stream] + events.pop("audio")
        info[p.stream] = {"speech_level_dbfs": round(level, 2), **events}

    mics = {}
    for p in people:
        x = personal[p.stream].copy()
        for leak in leaks:
            if leak.mic != p.stream:
                continue
            ir = reverb_ir(rng, leak.rt60_s, leak.drr_db)
            wet = signal.oaconvolve(personal[leak.src], ir)[:n] * db_to_gain(leak.gain_db)
            d = int(round(leak.delay_ms * SR / 1000))
            x[d:] += wet[: n - d]
        level = info[p.stream]["speech_level_dbfs"]
        x += coloured_noise(rng, n, p.noise_type) * db_to_gain(level - p.snr_db)
        if p.hum:
            x += mains_hum(rng, n, p.hum) * db_to_gain(level + p.hum["level_db_re_speech"])
        if p.hold:
            x = apply_hold_music(rng, x, p.hold, info[p.stream])
        peak = float(np.max(np.abs(x)))
        scale = min(1.0, db_to_gain(STREAM_PEAK_LIMIT_DBFS) / peak) if peak > 0 else 1.0
        info[p.stream]["stream_gain_db"] = round(gain_to_db(scale), 2)
        info[p.stream]["speech_level_dbfs"] = round(level + gain_to_db(scale), 2)
        info[p.stream]["peak_dbfs"] = round(gain_to_db(peak * scale), 2)
        mics[p.stream] = x * scale

    return Rendered(mics, refs, floor_reference(planner, refs, frames(duration)), info)


def personal_events(rng: np.random.Generator, p: Participant, busy: list[tuple[int, int]],
                    n: int, level: float) -> dict:
    """Keyboard typing and coughs by participant ``p`` while they are silent.

    Returns {"audio": the sounds, "keyboard": [...], "coughs": [...]} with event times.
    Personal sounds are heard on the own mic and leak to the others like the voice.
    """
    audio = np.zeros(n)
    typing, coughs = [], []
    busy = list(busy)
    if p.keyboard:
        for _ in range(max(1, int(round(n / SR / 10.0)))):
            seconds = float(rng.uniform(1.0, 4.0))
            burst, strokes = typing_burst(rng, seconds)
            start = pick_free_start(rng, busy, n, len(burst), int(0.4 * SR))
            if start is None:
                burst, strokes = typing_burst(rng, 0.8)
                start = pick_free_start(rng, busy, n, len(burst), int(0.4 * SR))
                if start is None:
                    continue
            gain_db = level + float(rng.uniform(-15.0, -3.0))
            audio[start:start + len(burst)] += burst * db_to_gain(gain_db)
            busy.append((start, start + len(burst)))
            typing.append({"start_s": round(start / SR, 3), "end_s": round((start + len(burst)) / SR, 3),
                           "keystrokes": strokes, "click_level_dbfs": round(gain_db, 2)})
    if p.cough:
        for _ in range(int(rng.integers(1, 3))):
            sound = cough(rng)
            start = pick_free_start(rng, busy, n, len(sound), int(0.3 * SR))
            if start is None:
                continue
            gain_db = level + float(rng.uniform(-6.0, 3.0))
            audio[start:start + len(sound)] += sound * db_to_gain(gain_db)
            busy.append((start, start + len(sound)))
            coughs.append({"start_s": round(start / SR, 3), "end_s": round((start + len(sound)) / SR, 3),
                           "burst_level_dbfs": round(gain_db, 2)})
    return {"audio": audio, "keyboard": typing, "coughs": coughs}


def apply_hold_music(rng: np.random.Generator, x: np.ndarray, window: tuple[float, float],
                     info: dict) -> np.ndarray:
    """Replace the mic signal by hold music inside ``window`` (50 ms cross-fades)."""
    a, b = int(window[0] * SR), min(len(x), int(window[1] * SR))
    level = float(rng.uniform(-24.0, -18.0))
    music = hold_music(rng, b - a) * db_to_gain(level)
    fade = int(0.05 * SR)
    mix = np.ones(b - a)
    mix[:fade] = np.linspace(0.0, 1.0, fade)
    mix[-fade:] = np.linspace(1.0, 0.0, fade)
    y = x.copy()
    y[a:b] = x[a:b] * (1.0 - mix) + music * mix
    info["hold_music"] = {"start_s": window[0], "end_s": round(b / SR, 3), "level_dbfs": round(level, 2)}
    return y


def floor_reference(planner: ScriptPlanner, refs: dict[str, list[tuple[int, int]]],
                    end: int) -> list[tuple[int, int, str]]:
    """Floor intervals (frames) from turn onsets and all speech; see Fixtures/README.md.

    1. Turn i's speaker holds [onset_i, onset_{i+1}) (the last turn: to the end).
    2. Every silence of the union of all speech (backchannels included) longer than
       1.0 s, from g0 to g1, makes [g0 + 1.0 s, first turn onset >= g1) nobody's
       (after the last speech: to the end).
    3. Adjacent intervals of the same speaker merge.
    """
    turns = sorted(planner.turns, key=lambda t: t.onset)
    onsets = [t.onset for t in turns]
    raw = [(t.onset, onsets[i + 1] if i + 1 < len(turns) else end, t.speaker)
           for i, t in enumerate(turns)]
    speech = merge_segments([s for segs in refs.values() for s in segs])
    limit = frames(FLOOR_SILENCE_S)
    nobody = []
    for (_, g0), (g1, _) in zip(speech, speech[1:]):
        if g1 - g0 > limit:
            resume = next((o for o in onsets if o >= g1), end)
            nobody.append((g0 + limit, resume))
    if speech and end - speech[-1][1] > limit:
        nobody.append((speech[-1][1] + limit, end))
    out: list[tuple[int, int, str]] = []
    for a, b, who in raw:
        pieces = [(a, b)]
        for z0, z1 in nobody:
            pieces = [q for s, e in pieces for q in ((s, min(e, z0)), (max(s, z1), e)) if q[1] > q[0]]
        for s, e in pieces:
            if out and out[-1][2] == who and out[-1][1] == s:
                out[-1] = (out[-1][0], e, who)
            else:
                out.append((s, e, who))
    return out


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------

def rttm_line(meeting: str, start: int, end: int, who: str) -> str:
    """One NIST RTTM SPEAKER line for [start, end) frames."""
    return (f"SPEAKER {meeting} 1 {start / FRAMES_PER_S:.3f} {(end - start) / FRAMES_PER_S:.3f} "
            f"<NA> <NA> {who} <NA> <NA>")


def script_json(planner: ScriptPlanner) -> dict:
    """The meeting script (turns and backchannels) as JSON-ready data."""
    def utt(pl: Placement) -> dict:
        """One placed clip as JSON."""
        return {"stream": pl.stream, "source": pl.clip.source, "text": pl.clip.text,
                "clip_start_s": round(pl.start / FRAMES_PER_S, 3),
                "speech_onset_s": round(pl.onset / FRAMES_PER_S, 3),
                "speech_offset_s": round(pl.offset / FRAMES_PER_S, 3),
                "gain_db": pl.gain_db}
    turns = []
    for i, t in enumerate(planner.turns):
        gap = (t.onset - planner.turns[i - 1].offset) / FRAMES_PER_S if i else None
        turns.append({"speaker": t.speaker, "onset_s": round(t.onset / FRAMES_PER_S, 3),
                      "interrupts_previous": t.interrupts,
                      "gap_after_previous_turn_s": None if gap is None else round(gap, 3),
                      "utterances": [utt(u) for u in t.utterances]})
    return {"turns": turns,
            "backchannels": [dict(utt(b), during_turn=b.turn) for b in planner.backchannels]}


def write_meeting_files(tmp: Path, name: str, seed: int, profile_name: str, duration: float,
                        people: list[Participant], leaks: list[Leak], planner: ScriptPlanner,
                        result: Rendered, versions: dict) -> None:
    """Write the FLACs, RTTMs and meeting.json of one meeting into folder ``tmp``."""
    for p in people:
        wav = tmp / f"{p.stream}.wav"
        write_pcm16_wav(wav, result.audio[p.stream])
        run(["sox", str(wav), "--comment", "", str(tmp / f"{p.stream}.flac")])
        wav.unlink()

    lines = sorted(((a, s, b) for s, segs in result.speech.items() for a, b in segs))
    (tmp / "speech.rttm").write_text("".join(rttm_line(name, a, b, s) + "\n" for a, s, b in lines))
    (tmp / "floor.rttm").write_text("".join(rttm_line(name, a, b, w) + "\n" for a, b, w in result.floor))

    participants = []
    for p in people:
        extra = result.stream_info[p.stream]
        sources = sorted({pl.clip.source.split(" ")[0] for pl in planner.placements if pl.stream == p.stream})
        participants.append({
            "stream": p.stream, "file": f"{p.stream}.flac", "voice": p.voice.describe(),
            "speech_level_target_dbfs": round(p.level_dbfs, 2),
            "speech_level_dbfs": extra["speech_level_dbfs"],
            "stream_gain_db": extra["stream_gain_db"], "peak_dbfs": extra["peak_dbfs"],
            "speech_s": round(sum(b - a for a, b in result.speech[p.stream]) / FRAMES_PER_S, 2),
            "noise": {"type": p.noise_type, "snr_db": round(p.snr_db, 2)},
            "hum": p.hum, "keyboard": extra["keyboard"], "coughs": extra["coughs"],
            "hold_music": extra.get("hold_music"), "sources": sources})
    meta = {
        "meeting": name, "generator": "tools/corpus/make_meetings.py", "generator_version": GENERATOR_VERSION,
        "seed": seed, "profile": profile_name, "sample_rate_hz": SR, "duration_s": duration,
        "tools": versions,
        "alignment": {"frame_ms": 10, "threshold_db_re_clip_peak": ACTIVITY_THRESHOLD_DB,
                      "min_run_ms": ACTIVITY_MIN_RUN_FRAMES * 10,
                      "bridge_gaps_shorter_than_ms": ACTIVITY_BRIDGE_FRAMES * 10},
        "floor_silence_s": FLOOR_SILENCE_S,
        "participants": participants,
        "leakage": [{"mic": l.mic, "talker": l.src, "gain_db": round(l.gain_db, 2),
                     "delay_ms": round(l.delay_ms, 2), "rt60_s": round(l.rt60_s, 3),
                     "direct_to_reverberant_db": round(l.drr_db, 2)} for l in leaks],
        "script": script_json(planner),
    }
    (tmp / "meeting.json").write_text(json.dumps(meta, indent=1) + "\n")


def write_meeting(out_dir: Path, name: str, seed: int, profile_name: str, duration: float,
                  people: list[Participant], leaks: list[Leak], planner: ScriptPlanner,
                  result: Rendered, versions: dict, finish=None) -> Path:
    """Write FLACs, RTTMs and meeting.json into out_dir/name, atomically per meeting.

    ``finish(folder)``, if given, adds to or rewrites the meeting's files before they move into place
    (tools/corpus/make_real_meetings.py adds its conditions).
    """
    final = out_dir / name
    tmp = out_dir / f".{name}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        write_meeting_files(tmp, name, seed, profile_name, duration, people, leaks, planner,
                            result, versions)
        if finish is not None:
            finish(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    return final


def summarise(name: str, people: list[Participant], leaks: list[Leak], planner: ScriptPlanner,
              result: Rendered, duration: float) -> None:
    """Progress lines: speech fraction per stream, turns, floor changes, leakage range."""
    parts = ", ".join(
        f"{p.stream}={p.voice.id} speech {sum(b - a for a, b in result.speech[p.stream]) / FRAMES_PER_S / duration:.0%}"
        f" snr {p.snr_db:.0f} dB {p.noise_type}" + (" hum" if p.hum else "")
        + (" keys" if result.stream_info[p.stream]["keyboard"] else "")
        + (" cough" if result.stream_info[p.stream]["coughs"] else "")
        + (" HOLD" if p.hold else "") for p in people)
    log(f"{name}: {parts}")
    holders = [w for _, _, w in result.floor]
    gains = [l.gain_db for l in leaks]
    log(f"{name}: {len(planner.turns)} turns ({sum(t.interrupts for t in planner.turns)} interruptions), "
        f"{len(planner.backchannels)} backchannels, {len(result.floor)} floor intervals, "
        f"{sum(1 for a, b in zip(result.floor, result.floor[1:]) if a[1] == b[0])} direct handovers; "
        f"leakage {min(gains, default=0):.1f}..{max(gains, default=0):.1f} dB; floor {' '.join(holders)}")


def generate_one(bank: SourceBank, out_dir: Path, name: str, seed: int, profile_name: str,
                 duration: float, participants: tuple[int, int], versions: dict) -> Path:
    """Draw, plan, render and write one meeting from its own seed."""
    rng = np.random.default_rng(seed)
    profile = PROFILES[profile_name]
    count = int(rng.integers(participants[0], participants[1] + 1))
    people = draw_participants(rng, count, profile, duration)
    leaks = draw_leakage(rng, people, profile)
    sentences = list(ESPEAK_SENTENCES)
    rng.shuffle(sentences)
    espeakers = [p for p in people if p.voice.kind == "espeak"]
    for p in people:
        share = sentences[espeakers.index(p)::len(espeakers)] if p in espeakers else []
        p.utterances = bank.utterance_plan(rng, p.voice, share)
        p.backchannels = bank.backchannel_plan(p.voice)
    planner = ScriptPlanner(rng, bank, people, duration, profile)
    planner.plan()
    check_script(planner)
    result = render_meeting(rng, people, leaks, planner, duration)
    summarise(name, people, leaks, planner, result, duration)
    return write_meeting(out_dir, name, seed, profile_name, duration, people, leaks, planner,
                         result, versions)


def check_script(planner: ScriptPlanner) -> None:
    """Assert the script honours the definitions the references rely on."""
    for turn in planner.turns:
        segs = merge_segments([s for u in turn.utterances for s in u.speech])
        for (_, e), (s, _) in zip(segs, segs[1:]):
            assert (s - e) / FRAMES_PER_S < MAX_WITHIN_TURN_PAUSE, f"pause {s - e} in turn of {turn.speaker}"
    for bc in planner.backchannels:
        assert bc.clip.span_s < BACKCHANNEL_MAX_S, bc.clip.source
    onsets = [t.onset for t in planner.turns]
    assert onsets == sorted(onsets) and len(set(onsets)) == len(onsets), "turn onsets must increase"


def parse_range(text: str) -> tuple[int, int]:
    """'2-5' -> (2, 5); '3' -> (3, 3)."""
    m = re.fullmatch(r"(\d+)(?:-(\d+))?", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected MIN-MAX, got {text!r}")
    lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
    if not 2 <= lo <= hi <= 8:
        raise argparse.ArgumentTypeError("participants must satisfy 2 <= MIN <= MAX <= 8")
    return lo, hi


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Command-line options."""
    ap = argparse.ArgumentParser(
        description="Generate deterministic labelled multi-microphone meetings "
                    "(<stream>.flac, speech.rttm, floor.rttm, meeting.json per meeting).",
        epilog="Meeting i (0-based) uses seed SEED+i, so '--seed S+i --count 1' with the same "
               "options regenerates it. Needs: pip install numpy scipy; apt-get install sox "
               "espeak-ng asterisk-core-sounds-en-wav pocketsphinx-testdata.")
    ap.add_argument("--out", required=True, type=Path, help="output folder (created if missing)")
    ap.add_argument("--count", type=int, default=1, help="number of meetings (default 1)")
    ap.add_argument("--seed", type=int, required=True, help="base seed")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds per meeting (default 60, min 8)")
    ap.add_argument("--participants", type=parse_range, default=(2, 5), metavar="MIN-MAX",
                    help="participants per meeting (default 2-5)")
    ap.add_argument("--profile", choices=sorted(PROFILES), default="random",
                    help="noise/leakage/event ranges (default random)")
    ap.add_argument("--name", default="meeting",
                    help="folder name; with --count > 1 a -NNN suffix is added (default 'meeting')")
    args = ap.parse_args(argv)
    if args.count < 1:
        ap.error("--count must be at least 1")
    if args.duration < 8.0:
        ap.error("--duration must be at least 8 seconds")
    return args


def main(argv: list[str]) -> int:
    """Entry point: generate ``--count`` meetings into ``--out``."""
    args = parse_args(argv)
    try:
        versions = {"espeak-ng": tool_version(["espeak-ng", "--version"]),
                    "sox": tool_version(["sox", "--version"])}
    except FileNotFoundError as exc:
        log(f"error: {exc.filename} not found: apt-get install sox espeak-ng")
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="make_meetings-") as work:
            bank = SourceBank(Path(work))
            for i in range(args.count):
                name = args.name if args.count == 1 else f"{args.name}-{i + 1:03d}"
                log(f"{name}: seed {args.seed + i}, profile {args.profile}, {args.duration:g} s")
                path = generate_one(bank, args.out, name, args.seed + i, args.profile, args.duration,
                                    args.participants, versions)
                log(f"{name}: wrote {path}")
    except GeneratorError as exc:
        log(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
