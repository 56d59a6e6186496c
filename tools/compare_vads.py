#!/usr/bin/env python3
"""Compare ActiveSpeaker with WebRTC VAD and Silero VAD on labelled meetings, scored by ONE scorer.

For every meeting of every DATASET (the layout `activespeaker eval` reads: a folder of meeting folders,
or one meeting folder; see docs/evaluation.md), each participant's audio file is decoded (sox, 16 kHz
mono) and run through:

* WebRTC VAD (PyPI ``webrtcvad-wheels``), aggressiveness modes 0-3, with 10 ms and 30 ms frames:
  8 settings, named ``webrtc-m<mode>-<ms>ms``; the library default is mode 0, and 30 ms is the
  frame most examples use, so ``webrtc-m0-30ms`` is reported as "WebRTC default";
* Silero VAD (PyPI ``silero-vad``, the ONNX model file shipped inside the wheel, run with onnxruntime
  directly, no torch): 512-sample windows at 16 kHz with the 64-sample context and the recurrent state
  carried from window to window, as the package's own ONNX wrapper does; a window is speech when its
  probability is >= 0.5 (no smoothing, padding or minimum durations). Named ``silero``.

Each system's speech segments are written as RTTM, one folder per system (``<meeting>.rttm``, speaker
= stream id), and ``activespeaker eval --json --system-rttm DIR ...`` scores them together with the
engine under every floor policy: the same 10 ms frames, collars 0 and 0.25 s, and metric definitions
for every system. The tables (Markdown) go to standard output, or to --markdown FILE.

Usage:
  pip install webrtcvad-wheels onnxruntime numpy
  pip install --no-deps silero-vad     # only for its model file; nothing of it is imported
  python3 tools/compare_vads.py --binary .build/release/activespeaker DATASET [DATASET...]
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

    def decisions(self, samples: np.ndarray) -> tuple[np.ndarray, float]:
        x = samples.astype(np.float32) / 32768
        count = (len(x) + self.WINDOW - 1) // self.WINDOW
        padded = np.zeros(count * self.WINDOW, dtype=np.float32)
        padded[:len(x)] = x
        state = np.zeros((2, 1, 128), dtype=np.float32)
        context = np.zeros((1, self.CONTEXT), dtype=np.float32)
        rate = np.array(SR, dtype=np.int64)
        decisions = np.zeros(count, dtype=bool)
        for i in range(count):
            window = np.concatenate([context, padded[None, i * self.WINDOW:(i + 1) * self.WINDOW]], axis=1)
            probability, state = self.session.run(None, {"input": window, "state": state, "sr": rate})
            context = window[:, -self.CONTEXT:]
            decisions[i] = probability[0, 0] >= self.THRESHOLD
        return decisions, self.WINDOW / SR


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


def run_systems(dataset: Path, work: Path, silero: Silero, cpu: dict[str, float], audio_seconds: list[float]) -> list[str]:
    """Writes every system's RTTM for the dataset's meetings under `work`; returns the system folders."""
    systems = [f"webrtc-m{mode}-{ms}ms" for mode, ms in WEBRTC_SETTINGS] + ["silero"]
    for meeting in meetings_of(dataset):
        outputs: dict[str, dict[str, list[tuple[float, float]]]] = {name: {} for name in systems}
        for audio in sorted(f for f in meeting.iterdir() if f.suffix.lower() in AUDIO_EXTENSIONS and not f.name.startswith(".")):
            for stream, samples in decode(audio):
                audio_seconds[0] += len(samples) / SR
                for mode, ms in WEBRTC_SETTINGS:
                    name = f"webrtc-m{mode}-{ms}ms"
                    started = time.process_time()
                    outputs[name][stream] = segments(*webrtc_decisions(samples, mode, ms))
                    cpu[name] = cpu.get(name, 0) + time.process_time() - started
                started = time.process_time()
                outputs["silero"][stream] = segments(*silero.decisions(samples))
                cpu["silero"] = cpu.get("silero", 0) + time.process_time() - started
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
            (f"WebRTC VAD best ({best[7:]})", best), ("Silero VAD (0.5)", "silero")]


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
    rows = vad_rows(report)
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
    ap = argparse.ArgumentParser(description="Compare ActiveSpeaker, WebRTC VAD and Silero VAD, scored by activespeaker eval.")
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
    scratch = tempfile.TemporaryDirectory(prefix="compare_vads-") if args.work is None else None
    work = Path(scratch.name) if scratch else args.work

    out = []
    reports = {}
    cpu: dict[str, float] = {}
    audio_seconds = [0.0]
    for dataset in args.datasets:
        label = dataset.name if dataset.name not in ("", ".") else str(dataset)
        print(f"compare_vads: {dataset}: running WebRTC VAD and Silero VAD", file=sys.stderr)
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
