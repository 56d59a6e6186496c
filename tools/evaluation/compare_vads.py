#!/usr/bin/env python3
"""Compare ActiveSpeaker with WebRTC VAD, Silero VAD and TEN VAD on labelled meetings, scored by ONE scorer.

For every meeting of every DATASET (the layout `activespeaker eval` reads: a folder of meeting folders,
or one meeting folder; see docs/evaluation.md), each participant's audio file is decoded (sox, 16 kHz
mono) and run through:

* WebRTC VAD (PyPI ``webrtcvad-wheels``), aggressiveness modes 0-3, with 10 ms and 30 ms frames:
  8 settings, named ``webrtc-m<mode>-<ms>ms``; the library default is mode 0, and 30 ms is the
  frame most examples use, so ``webrtc-m0-30ms`` is reported as "WebRTC default";
* Silero VAD (PyPI ``silero-vad``; the ONNX model file shipped inside the wheel, run with onnxruntime
  directly, one thread, no torch): 512-sample windows (32 ms) at 16 kHz with the 64-sample context and
  the recurrent state carried from window to window, as the package's own ``OnnxWrapper`` does. One
  pass of the model per stream gives one probability per window; three systems are read from it:

  ``silero``          the raw model: a window is speech when its probability is >= 0.5; no hysteresis,
                      smoothing, padding or minimum durations (the system of the figures before
                      2026-12-05, kept unchanged so that they stay comparable). Causal: a window's
                      label uses that window and the windows before it.
  ``silero-causal``   the package's streaming ``VADIterator`` with its defaults (threshold 0.5, exit
                      threshold 0.35, min_silence_duration_ms 100, speech_pad_ms 30), fed the windows
                      one by one (``silero_iterator_segments``, a numpy port of
                      ``silero_vad/utils_vad.py``). Each window is labelled with the iterator's state
                      (speaking or not) right after it has consumed that window: a segment runs from
                      the start of the window on which the iterator returned ``{'start': ...}`` to the
                      start of the window on which it returned ``{'end': ...}`` (or to the end of the
                      stream). No later audio decides any window, the same as ``silero``. The sample
                      positions inside the iterator's events are not used: its ``start`` is dated
                      30 ms (``speech_pad_ms``) before the window that raised it, and its ``end`` is
                      dated 30 ms after the first quiet window although it is returned at least four
                      windows (128 ms) later; taking them as the segment edges would relabel audio the
                      user has already been shown.
  ``silero-offline``  the package's documented offline path, ``get_speech_timestamps`` with its
                      defaults (threshold 0.5, neg_threshold = threshold - 0.15, min_speech_duration_ms
                      250, min_silence_duration_ms 100, speech_pad_ms 30, max_speech_duration_s inf)
                      over the same probabilities (``silero_offline_segments``, a numpy port of
                      ``get_speech_timestamps_from_probs``). Not causal: a segment's end, padding and
                      whether a short segment is kept are decided with audio up to 100 ms or more
                      after the frames they label, and the padding reaches 30 ms before a start.

* TEN VAD (PyPI ``ten-vad``; its prebuilt ``libten_vad.so`` needs Debian's ``libc++1``): one handle per
  stream, hop 256 samples (16 ms) at 16 kHz and threshold 0.5, as its README shows; a hop is speech
  when the library's flag for it is 1. Named ``ten-vad``. Causal (one flag per hop as it arrives).

The last partial window or hop of a stream is padded with zeros, as the packages' own loops do.

Each system's speech segments are written as RTTM, one folder per system (``<meeting>.rttm``, speaker
= stream id), and ``activespeaker eval --json --system-rttm DIR ...`` scores them together with the
engine under every floor policy: the same 10 ms frames, collars 0 and 0.25 s, and metric definitions
for every system. The tables (Markdown) go to standard output, or to --markdown FILE, ending with each
system's speed in audio seconds per CPU second (process CPU time, one thread; each Silero form counts
the shared model pass plus its own decision rule).

Usage:
  apt-get install -y libc++1            # for TEN VAD's shared library
  pip install webrtcvad-wheels onnxruntime numpy ten-vad
  pip install --no-deps silero-vad     # only for its model file and, as a reading, utils_vad.py
  python3 tools/evaluation/compare_vads.py --binary .build/release/activespeaker DATASET [DATASET...]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SR = 16_000
AUDIO_EXTENSIONS = {".flac", ".wav", ".ogg", ".opus"}
POLICIES = ["hysteresis", "volfin-cohen", "livekit", "chime", "loudest"]
WEBRTC_SETTINGS = [(mode, ms) for mode in range(4) for ms in (10, 30)]
WEBRTC_DEFAULT = "webrtc-m0-30ms"


# ----------------------------------------------------------------------------------------------
# Datasets


def meetings_of(dataset: Path) -> list[Path]:
    """The meeting folders of a dataset, by the same rule as `activespeaker eval`."""
    def is_meeting(folder: Path) -> bool:
        return (folder / "speech.rttm").exists() or any(
            f.suffix.lower() in AUDIO_EXTENSIONS for f in folder.iterdir() if not f.name.startswith("."))
    if is_meeting(dataset):
        return [dataset]
    return sorted(f for f in dataset.iterdir() if f.is_dir() and not f.name.startswith(".") and is_meeting(f))


def decode(path: Path) -> list[tuple[str, np.ndarray]]:
    """(stream id, 16 kHz mono int16 samples) per channel, named as `activespeaker` names them."""
    channels = int(subprocess.run(["soxi", "-c", str(path)], check=True, capture_output=True, text=True).stdout)
    streams = []
    for channel in range(1, channels + 1):
        raw = subprocess.run(
            ["sox", str(path), "-t", "raw", "-e", "signed-integer", "-b", "16", "-r", str(SR), "-c", "1", "-",
             "remix", str(channel)],
            check=True, capture_output=True).stdout
        stream = path.stem if channels == 1 else f"{path.stem}-ch{channel}"
        streams.append((stream, np.frombuffer(raw, dtype="<i2")))
    return streams


# ----------------------------------------------------------------------------------------------
# Systems: each returns per-window decisions and the window length in seconds.


def webrtc_decisions(samples: np.ndarray, mode: int, frame_ms: int) -> tuple[np.ndarray, float]:
    import webrtcvad
    vad = webrtcvad.Vad(mode)
    n = SR * frame_ms // 1000
    count = (len(samples) + n - 1) // n
    padded = np.zeros(count * n, dtype="<i2")
    padded[:len(samples)] = samples
    data = padded.tobytes()
    decisions = np.fromiter((vad.is_speech(data[2 * i * n:2 * (i + 1) * n], SR) for i in range(count)),
                            dtype=bool, count=count)
    return decisions, frame_ms / 1000


class Silero:
    """Silero VAD from the ONNX file inside the silero-vad wheel, on onnxruntime (one thread)."""

    WINDOW = 512
    CONTEXT = 64
    THRESHOLD = 0.5

    def __init__(self) -> None:
        import onnxruntime
        spec = importlib.util.find_spec("silero_vad")  # locates the package without importing it (torch)
        if spec is None or not spec.submodule_search_locations:
            sys.exit("compare_vads: silero-vad is not installed: pip install --no-deps silero-vad")
        self.model_path = Path(list(spec.submodule_search_locations)[0]) / "data" / "silero_vad.onnx"
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self.session = onnxruntime.InferenceSession(
            str(self.model_path), sess_options=options, providers=["CPUExecutionProvider"])

    def probabilities(self, samples: np.ndarray) -> np.ndarray:
        """The model's speech probability for each 512-sample window, the state carried from the first."""
        x = samples.astype(np.float32) / 32768
        count = (len(x) + self.WINDOW - 1) // self.WINDOW
        padded = np.zeros(count * self.WINDOW, dtype=np.float32)
        padded[:len(x)] = x
        state = np.zeros((2, 1, 128), dtype=np.float32)
        context = np.zeros((1, self.CONTEXT), dtype=np.float32)
        rate = np.array(SR, dtype=np.int64)
        probabilities = np.zeros(count, dtype=np.float32)
        for i in range(count):
            window = np.concatenate([context, padded[None, i * self.WINDOW:(i + 1) * self.WINDOW]], axis=1)
            probability, state = self.session.run(None, {"input": window, "state": state, "sr": rate})
            context = window[:, -self.CONTEXT:]
            probabilities[i] = probability[0, 0]
        return probabilities

    def decisions(self, probabilities: np.ndarray) -> tuple[np.ndarray, float]:
        """``silero``: a window is speech when its probability is >= 0.5."""
        return probabilities >= self.THRESHOLD, self.WINDOW / SR


# Silero's decision rules, ported from silero_vad/utils_vad.py (silero-vad 6.2.3) so that no torch is
# needed. Both walk the same per-window probabilities; positions are in samples, as in the package.
SILERO_WINDOW = Silero.WINDOW
SILERO_THRESHOLD = 0.5
SILERO_MIN_SILENCE_MS = 100
SILERO_SPEECH_PAD_MS = 30
SILERO_MIN_SPEECH_MS = 250


def silero_iterator_segments(probabilities: np.ndarray, length: int) -> list[tuple[float, float]]:
    """``silero-causal``: ``VADIterator`` (defaults) fed window by window; segments in seconds.

    The iterator's rule, per window (``current`` = samples consumed so far, this window included):
    probability >= 0.5 clears a pending end; >= 0.5 while not speaking starts speech (it returns
    ``{'start': current - 30 ms - window}``); < 0.35 (``threshold - 0.15``) while speaking marks a
    pending end at ``current`` if none is pending, and once ``current - pending >= 100 ms`` stops
    speech (it returns ``{'end': pending + 30 ms - window}``). Windows between 0.35 and 0.5 change
    nothing. Here a window is speech when the iterator is speaking right after consuming it, so a
    segment spans [start of the window that returned 'start', start of the window that returned
    'end'); a segment still open at the end of the stream ends there.
    """
    window = SILERO_WINDOW
    min_silence_samples = SR * SILERO_MIN_SILENCE_MS / 1000
    threshold = SILERO_THRESHOLD
    triggered = False
    temp_end = 0
    current_sample = 0
    started = 0
    runs = []
    for i, probability in enumerate(probabilities.tolist()):
        current_sample += window
        if probability >= threshold and temp_end:
            temp_end = 0
        if probability >= threshold and not triggered:
            triggered = True                     # the iterator returns {'start': ...} now
            started = i * window
            continue
        if probability < threshold - 0.15 and triggered:
            if not temp_end:
                temp_end = current_sample
            if current_sample - temp_end < min_silence_samples:
                continue
            temp_end = 0                         # the iterator returns {'end': ...} now
            triggered = False
            runs.append((started / SR, i * window / SR))
    if triggered:
        runs.append((started / SR, length / SR))
    return runs


def silero_offline_segments(probabilities: np.ndarray, length: int) -> list[tuple[float, float]]:
    """``silero-offline``: ``get_speech_timestamps`` with its defaults over the window probabilities.

    A port of ``get_speech_timestamps_from_probs`` (threshold 0.5, neg_threshold 0.5 - 0.15,
    min_speech_duration_ms 250, min_silence_duration_ms 100, speech_pad_ms 30): speech starts at the
    first window >= 0.5; it ends at the first window below the exit threshold that is followed by at
    least 100 ms with no window >= 0.5 and closed by another window below it; segments of 250 ms or
    less are dropped (one still open at the end of the stream runs to the end, if longer than 250 ms);
    then each segment is padded by 30 ms each side, or, where two segments are closer than 60 ms, the
    gap between them is split in half. With max_speech_duration_s = inf (the default) the package's
    max-length cut never runs, so it and its bookkeeping (possible_ends, prev_end, next_start) are left
    out. Segments in seconds.
    """
    window = SILERO_WINDOW
    threshold = SILERO_THRESHOLD
    neg_threshold = max(threshold - 0.15, 0.01)
    min_speech_samples = SR * SILERO_MIN_SPEECH_MS / 1000
    speech_pad_samples = SR * SILERO_SPEECH_PAD_MS / 1000
    min_silence_samples = SR * SILERO_MIN_SILENCE_MS / 1000
    triggered = False
    speeches: list[dict] = []
    current: dict = {}
    temp_end = 0
    for i, probability in enumerate(probabilities.tolist()):
        sample = window * i
        if probability >= threshold and temp_end:
            temp_end = 0
        if probability >= threshold and not triggered:
            triggered = True
            current["start"] = sample
            continue
        if probability < neg_threshold and triggered:
            if not temp_end:
                temp_end = sample
            if sample - temp_end < min_silence_samples:
                continue
            current["end"] = temp_end
            if current["end"] - current["start"] > min_speech_samples:
                speeches.append(current)
            current = {}
            temp_end = 0
            triggered = False
    if current and length - current["start"] > min_speech_samples:
        current["end"] = length
        speeches.append(current)
    for i, speech in enumerate(speeches):
        if i == 0:
            speech["start"] = int(max(0, speech["start"] - speech_pad_samples))
        if i != len(speeches) - 1:
            silence = speeches[i + 1]["start"] - speech["end"]
            if silence < 2 * speech_pad_samples:
                speech["end"] += int(silence // 2)
                speeches[i + 1]["start"] = int(max(0, speeches[i + 1]["start"] - silence // 2))
            else:
                speech["end"] = int(min(length, speech["end"] + speech_pad_samples))
                speeches[i + 1]["start"] = int(max(0, speeches[i + 1]["start"] - speech_pad_samples))
        else:
            speech["end"] = int(min(length, speech["end"] + speech_pad_samples))
    return [(speech["start"] / SR, speech["end"] / SR) for speech in speeches]


TEN_HOP = 256
TEN_THRESHOLD = 0.5


def ten_vad_module():
    """The ``ten_vad`` module, loaded once, with a clear exit where it or its C++ runtime is missing."""
    try:
        import ten_vad
        ten_vad.TenVad(TEN_HOP, TEN_THRESHOLD)
    except ImportError:
        sys.exit("compare_vads: ten-vad is not installed: pip install ten-vad")
    except OSError as error:
        sys.exit(f"compare_vads: TEN VAD's library does not load ({error}): apt-get install -y libc++1")
    return ten_vad


def ten_vad_decisions(samples: np.ndarray) -> tuple[np.ndarray, float]:
    """``ten-vad``: the library's speech flag per 256-sample hop (threshold 0.5), one handle per stream."""
    import ten_vad
    vad = ten_vad.TenVad(TEN_HOP, TEN_THRESHOLD)
    count = (len(samples) + TEN_HOP - 1) // TEN_HOP
    padded = np.zeros(count * TEN_HOP, dtype=np.int16)
    padded[:len(samples)] = samples
    decisions = np.zeros(count, dtype=bool)
    for i in range(count):
        _, flag = vad.process(padded[i * TEN_HOP:(i + 1) * TEN_HOP])
        decisions[i] = flag == 1
    return decisions, TEN_HOP / SR


def segments(decisions: np.ndarray, window: float) -> list[tuple[float, float]]:
    """Runs of speech windows as (start, end) seconds."""
    runs = []
    start = None
    for i, speech in enumerate(list(decisions) + [False]):
        if speech and start is None:
            start = i
        elif not speech and start is not None:
            runs.append((start * window, i * window))
            start = None
    return runs


def write_rttm(path: Path, meeting: str, per_stream: dict[str, list[tuple[float, float]]]) -> None:
    lines = []
    for stream, runs in per_stream.items():
        for start, end in runs:
            lines.append((start, f"SPEAKER {meeting} 1 {start:.3f} {end - start:.3f} <NA> <NA> {stream} <NA> <NA>\n"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line for _, line in sorted(lines)))


# ----------------------------------------------------------------------------------------------
# Running and scoring


SILERO_SYSTEMS = ["silero", "silero-causal", "silero-offline"]
OTHER_SYSTEMS = SILERO_SYSTEMS + ["ten-vad"]


def run_systems(dataset: Path, work: Path, silero: Silero, cpu: dict[str, float], audio_seconds: list[float]) -> list[str]:
    """Writes every system's RTTM for the dataset's meetings under `work`; returns the system folders."""
    systems = [f"webrtc-m{mode}-{ms}ms" for mode, ms in WEBRTC_SETTINGS] + OTHER_SYSTEMS

    def timed(name: str, run, *arguments, shared: float = 0.0):
        started = time.process_time()
        result = run(*arguments)
        cpu[name] = cpu.get(name, 0) + shared + time.process_time() - started
        return result

    for meeting in meetings_of(dataset):
        outputs: dict[str, dict[str, list[tuple[float, float]]]] = {name: {} for name in systems}
        for audio in sorted(f for f in meeting.iterdir() if f.suffix.lower() in AUDIO_EXTENSIONS and not f.name.startswith(".")):
            for stream, samples in decode(audio):
                audio_seconds[0] += len(samples) / SR
                for mode, ms in WEBRTC_SETTINGS:
                    name = f"webrtc-m{mode}-{ms}ms"
                    outputs[name][stream] = timed(name, lambda: segments(*webrtc_decisions(samples, mode, ms)))
                started = time.process_time()
                probabilities = silero.probabilities(samples)
                model = time.process_time() - started
                outputs["silero"][stream] = timed("silero", lambda: segments(*silero.decisions(probabilities)), shared=model)
                outputs["silero-causal"][stream] = timed(
                    "silero-causal", silero_iterator_segments, probabilities, len(samples), shared=model)
                outputs["silero-offline"][stream] = timed(
                    "silero-offline", silero_offline_segments, probabilities, len(samples), shared=model)
                outputs["ten-vad"][stream] = timed("ten-vad", lambda: segments(*ten_vad_decisions(samples)))
        for name in systems:
            write_rttm(work / name / f"{meeting.name}.rttm", meeting.name, outputs[name])
    return [str(work / name) for name in systems]


def evaluate(binary: str, dataset: Path, system_folders: list[str], uem: str | None) -> dict:
    command = [binary, "eval", "--json", "--policies", ",".join(POLICIES)]
    for folder in system_folders:
        command += ["--system-rttm", folder]
    if uem:
        command += ["--uem", uem]
    command.append(str(dataset))
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"compare_vads: {' '.join(command)} failed: {result.stderr.strip()}")
    return json.loads(result.stdout)


# ----------------------------------------------------------------------------------------------
# Tables


def pooled(report: dict, system: str) -> dict:
    return next(p for p in report["pooled"] if p["system"] == system)


def fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def vad_rows(report: dict) -> list[tuple[str, str]]:
    """(label, system) rows of the VAD table: ours, WebRTC default and best (by pooled F1 at collar 0), Silero."""
    webrtc = [s for s in report["systems"] if s.startswith("webrtc-")]
    best = max(webrtc, key=lambda s: pooled(report, s)["vad"][0]["f1"])
    return [("ActiveSpeaker (ours)", "hysteresis"), (f"WebRTC VAD default ({WEBRTC_DEFAULT[7:]})", WEBRTC_DEFAULT),
            (f"WebRTC VAD best ({best[7:]})", best), ("Silero VAD (0.5)", "silero")] + [
        (label, system) for label, system in NEWER_ROWS if system in report["systems"]]


# Rows added on 2026-12-05 (issue 30): after the four above, so that the older tables keep their shape.
NEWER_ROWS = [("Silero VADIterator (causal)", "silero-causal"), ("Silero timestamps (offline)", "silero-offline"),
              ("TEN VAD (0.5)", "ten-vad")]


def vad_table(report: dict) -> str:
    lines = ["| system | F1 | precision | recall | miss | FA | BA | DCF | F1 ±0.25 s | BA ±0.25 s | DCF ±0.25 s | leaked-speech FA |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, system in vad_rows(report):
        zero, collar = pooled(report, system)["vad"]
        lines.append(f"| {label} | {fmt(zero['f1'])} | {fmt(zero['precision'])} | {fmt(zero['recall'])} | "
                     f"{fmt(zero['missRate'])} | {fmt(zero['falseAlarmRate'])} | {fmt(zero['balancedAccuracy'])} | "
                     f"{fmt(zero['detectionCost'])} | {fmt(collar['f1'])} | {fmt(collar['balancedAccuracy'])} | "
                     f"{fmt(collar['detectionCost'])} | {pct(zero['leakedFalseAlarmRate'])} |")
    return "\n".join(lines)


def per_meeting_table(report: dict) -> str:
    rows = vad_rows(report)[:4]
    names = ["ours", "WebRTC def.", "WebRTC best", "Silero"]
    header = ("| meeting | " + " | ".join(f"F1 {n}" for n in names) + " | " + " | ".join(f"BA {n}" for n in names)
              + " | " + " | ".join(f"FA {n}" for n in names) + " | leak FA ours | leak FA Silero |")
    lines = [header, "|---|" + "---:|" * (3 * len(names) + 2)]
    for meeting in report["meetings"]:
        by_system = {s["system"]: s for s in meeting["systems"]}
        f1 = [fmt(by_system[s]["vad"][0]["f1"]) for _, s in rows]
        ba = [fmt(by_system[s]["vad"][0]["balancedAccuracy"]) for _, s in rows]
        fa = [pct(by_system[s]["vad"][0]["falseAlarmRate"]) for _, s in rows]
        leaks = [pct(by_system[s]["vad"][0]["leakedFalseAlarmRate"]) for s in ("hysteresis", "silero")]
        lines.append(f"| {meeting['meeting']} | " + " | ".join(f1 + ba + fa + leaks) + " |")
    return "\n".join(lines)


def newer_per_meeting_table(report: dict) -> str | None:
    """F1 and FA per meeting of the Silero forms and TEN VAD (collar 0), beside raw Silero and ours."""
    systems = ["hysteresis", "silero"] + [s for _, s in NEWER_ROWS if s in report["systems"]]
    if len(systems) == 2:
        return None
    names = {"hysteresis": "ours", "silero": "Silero", "silero-causal": "Silero causal",
             "silero-offline": "Silero offline", "ten-vad": "TEN VAD"}
    header = ("| meeting | " + " | ".join(f"F1 {names[s]}" for s in systems) + " | "
              + " | ".join(f"FA {names[s]}" for s in systems) + " |")
    lines = [header, "|---|" + "---:|" * (2 * len(systems))]
    for meeting in report["meetings"]:
        by_system = {s["system"]: s for s in meeting["systems"]}
        f1 = [fmt(by_system[s]["vad"][0]["f1"]) for s in systems]
        fa = [pct(by_system[s]["vad"][0]["falseAlarmRate"]) for s in systems]
        lines.append(f"| {meeting['meeting']} | " + " | ".join(f1 + fa) + " |")
    return "\n".join(lines)


def webrtc_table(report: dict) -> str:
    """Every WebRTC setting pooled; with at most 4 meetings, also F1 and FA per meeting."""
    meetings = report["meetings"] if len(report["meetings"]) <= 4 else []
    header = "| WebRTC setting | F1 | BA | FA | leaked-speech FA |" + "".join(
        f" F1 {m['meeting']} | FA {m['meeting']} |" for m in meetings)
    lines = [header, "|---|---:|---:|---:|---:|" + "---:|---:|" * len(meetings)]
    for system in (s for s in report["systems"] if s.startswith("webrtc-")):
        zero = pooled(report, system)["vad"][0]
        row = (f"| {system[7:]} | {fmt(zero['f1'])} | {fmt(zero['balancedAccuracy'])} | "
               f"{pct(zero['falseAlarmRate'])} | {pct(zero['leakedFalseAlarmRate'])} |")
        for meeting in meetings:
            vad = next(s for s in meeting["systems"] if s["system"] == system)["vad"][0]
            row += f" {fmt(vad['f1'])} | {pct(vad['falseAlarmRate'])} |"
        lines.append(row)
    return "\n".join(lines)


def floor_table(report: dict) -> str | None:
    rows = [p for p in report["pooled"] if p["system"] in POLICIES and p["floor"]]
    if not rows:
        return None
    lines = ["| policy | accuracy | nobody accuracy | latency median | latency p90 | missed | false switches/min | switches/min |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for p in rows:
        f = p["floor"]
        name = "hysteresis (ours)" if p["system"] == "hysteresis" else p["system"]
        lines.append(f"| {name} | {pct(f['accuracy'])} | {pct(f['nobodyAccuracy'])} | {fmt(f['medianLatency'], 2)} s | "
                     f"{fmt(f['p90Latency'], 2)} s | {f['missed']}/{f['changes']} | {f['falseSwitchesPerMinute']:.2f} | "
                     f"{f['switchesPerMinute']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="Compare ActiveSpeaker, WebRTC VAD, Silero VAD and TEN VAD, scored by activespeaker eval.")
    ap.add_argument("datasets", nargs="+", type=Path, help="dataset folders (or single meeting folders)")
    ap.add_argument("--binary", default=".build/release/activespeaker", help="the activespeaker executable")
    ap.add_argument("--work", type=Path, help="folder for the systems' RTTM files (default: a temporary one)")
    ap.add_argument("--markdown", type=Path, help="write the tables here instead of standard output")
    ap.add_argument("--json", type=Path, help="also write every dataset's full eval report here (one JSON object)")
    ap.add_argument("--uem", help="pass a UEM file to activespeaker eval")
    args = ap.parse_args(argv)

    if not Path(args.binary).exists():
        sys.exit(f"compare_vads: {args.binary}: not found; build it with: swift build -c release")
    for dataset in args.datasets:
        if not dataset.is_dir() or not meetings_of(dataset):
            sys.exit(f"compare_vads: {dataset}: no meetings found")
    silero = Silero()
    ten_vad_module()
    scratch = tempfile.TemporaryDirectory(prefix="compare_vads-") if args.work is None else None
    work = Path(scratch.name) if scratch else args.work

    out = []
    reports = {}
    cpu: dict[str, float] = {}
    audio_seconds = [0.0]
    for dataset in args.datasets:
        label = dataset.name if dataset.name not in ("", ".") else str(dataset)
        print(f"compare_vads: {dataset}: running WebRTC VAD, Silero VAD and TEN VAD", file=sys.stderr)
        folders = run_systems(dataset, work / label, silero, cpu, audio_seconds)
        print(f"compare_vads: {dataset}: scoring with {args.binary} eval", file=sys.stderr)
        report = evaluate(args.binary, dataset, folders, args.uem)
        reports[str(dataset)] = report
        meetings = len(report["meetings"])
        streams = pooled(report, "hysteresis")["streams"]
        seconds = sum(m["duration"] for m in report["meetings"])
        out.append(f"### {dataset} ({meetings} {'meeting' if meetings == 1 else 'meetings'}, {streams} streams, {seconds:.0f} s)\n")
        out.append("Voice activity, pooled over streams (10 ms frames; collar 0 unless marked):\n")
        out.append(vad_table(report) + "\n")
        if meetings > 1:
            out.append("Per meeting, collar 0 (FA: share of the stream's non-speech frames marked as speech):\n")
            out.append(per_meeting_table(report) + "\n")
            newer = newer_per_meeting_table(report)
            if newer:
                out.append("Per meeting, collar 0, the Silero forms and TEN VAD:\n")
                out.append(newer + "\n")
        out.append("<details><summary>Every WebRTC VAD setting</summary>\n")
        out.append(webrtc_table(report) + "\n")
        out.append("</details>\n")
        floor = floor_table(report)
        if floor:
            out.append("Dominant speaker, pooled:\n")
            out.append(floor + "\n")
        else:
            out.append("Dominant speaker: not scored (no floor.rttm).\n")
    speed = ", ".join(f"{name} {audio_seconds[0] / seconds:,.0f}x" for name, seconds in sorted(cpu.items()) if seconds > 0)
    out.append(f"Speed of the Python VADs in this run (audio seconds per CPU second, one thread): {speed}.\n")

    text = "\n".join(out)
    if args.markdown:
        args.markdown.write_text(text)
    else:
        sys.stdout.write(text)
    if args.json:
        args.json.write_text(json.dumps(reports, indent=1, sort_keys=True) + "\n")
    if scratch:
        scratch.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
