#!/usr/bin/env python3
"""Label every clip of the real-audio corpus with a teacher: Silero VAD's speech probability per 10 ms.

    python3 tools/corpus/teacher_labels.py --corpus corpus-local [--jobs 2]

The teacher is a training tool only (issue 30): the engine never calls it. For each clip of
``corpus-local/sources.json`` (speech, music and sounds, every split) it writes

* ``corpus-local/teacher/<clip path>.u8``: one byte per 10 ms frame (floor(samples / 160) of them),
  Silero's speech probability x 255, rounded;
* ``corpus-local/teacher/manifest.json``: the model file's SHA-256, the package versions, and per kind
  and split how much the teacher calls speech (on music and sounds: how often it is wrong, since
  the corpus says what each clip is).

How the labels are used (tools/corpus/make_classifier_set.py ``--teacher``): the corpus's kinds are the
references and win: a frame with no speech clip under it is never speech, whatever the teacher says
of the music or sound there. Inside a placed speech clip the teacher, run on the clean clip, says
where the talker speaks: it replaces the energy rule of tools/corpus/make_corpus.py, which also counts the
pauses and breaths inside a segment.

Silero is run as its own streaming iterator does: 512-sample windows at 16 kHz, each with the 64
samples before it, the recurrent state carried from window to window, no look-ahead. A 10 ms frame
takes the probability of the window that holds its centre.

Needs: pip install onnxruntime numpy && pip install --no-deps silero-vad (the ONNX model file only).
Same files and package versions give the same bytes (onnxruntime on one thread).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
import time
import wave
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

SR = 16000
HOP = 160
WINDOW = 512
CONTEXT = 64


def log(message: str) -> None:
    print(f"[teacher_labels] {message}", file=sys.stderr, flush=True)


def model_path() -> Path:
    """The ONNX model inside the installed silero-vad wheel, found without importing the package (torch)."""
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("teacher_labels: silero-vad is not installed: pip install --no-deps silero-vad")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "silero_vad.onnx"
    if not path.exists():
        sys.exit(f"teacher_labels: {path} is missing from the silero-vad wheel")
    return path


_session = None


def session():
    """One onnxruntime session per worker process, on one thread."""
    global _session
    if _session is None:
        import onnxruntime
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        _session = onnxruntime.InferenceSession(str(model_path()), sess_options=options,
                                                providers=["CPUExecutionProvider"])
    return _session


def read_wav(path: Path) -> np.ndarray:
    with wave.open(str(path), "rb") as w:
        if w.getframerate() != SR or w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise SystemExit(f"teacher_labels: {path} is not 16 kHz mono 16-bit")
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768


def window_probabilities(x: np.ndarray) -> np.ndarray:
    """Silero's probability for each 512-sample window (the last one zero-padded)."""
    count = (len(x) + WINDOW - 1) // WINDOW
    padded = np.zeros(count * WINDOW, dtype=np.float32)
    padded[:len(x)] = x
    state = np.zeros((2, 1, 128), dtype=np.float32)
    context = np.zeros((1, CONTEXT), dtype=np.float32)
    rate = np.array(SR, dtype=np.int64)
    out = np.zeros(count, dtype=np.float32)
    run = session().run
    for i in range(count):
        window = np.concatenate([context, padded[None, i * WINDOW:(i + 1) * WINDOW]], axis=1)
        probability, state = run(None, {"input": window, "state": state, "sr": rate})
        context = window[:, -CONTEXT:]
        out[i] = probability[0, 0]
    return out


def frame_probabilities(x: np.ndarray) -> np.ndarray:
    """One probability per 10 ms frame: that of the window holding the frame's centre."""
    frames = len(x) // HOP
    if frames == 0:
        return np.zeros(0, dtype=np.float32)
    windows = window_probabilities(x)
    centres = np.arange(frames) * HOP + HOP // 2
    return windows[np.minimum(centres // WINDOW, len(windows) - 1)]


def label_clip(job: tuple[str, str]) -> tuple[str, float, int, float]:
    """Labels one clip; returns its path, the frames called speech (p >= 0.5), the frames, and CPU seconds."""
    source, target = job
    started = time.process_time()
    p = frame_probabilities(read_wav(Path(source)))
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    Path(target).write_bytes(np.round(p * 255).astype(np.uint8).tobytes())
    return target, float(np.sum(p >= 0.5)), len(p), time.process_time() - started


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=Path("corpus-local"))
    ap.add_argument("--out", type=Path, default=None, help="default: CORPUS/teacher")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    out = args.out or args.corpus / "teacher"
    doc = json.loads((args.corpus / "sources.json").read_text())
    model = model_path()
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    manifest_path = out / "manifest.json"
    if manifest_path.exists():
        previous = json.loads(manifest_path.read_text())
        if previous.get("model_sha256") != digest:
            log(f"the teacher model changed: relabelling everything in {out}")
            for stale in out.rglob("*.u8"):
                stale.unlink()
    jobs, kinds = [], {}
    for source in doc["sources"]:
        for clip in source["clips"]:
            target = out / (clip["file"][:-len(".wav")] + ".u8")
            kinds[str(target)] = (source["kind"], source["split"])
            if not target.exists():
                jobs.append((str(args.corpus / clip["file"]), str(target)))
    log(f"{len(kinds)} clips, {len(jobs)} to label, {args.jobs} processes")
    cpu = 0.0
    done = 0
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for _, _, frames, seconds in pool.map(label_clip, jobs, chunksize=8):
            cpu += seconds
            done += 1
            if done % 500 == 0 or done == len(jobs):
                log(f"{done}/{len(jobs)} clips ({cpu:.0f} CPU s)")
    # What the teacher says of each kind, from the files (so a rerun that labels nothing reports too).
    summary: dict[str, dict[str, float]] = {}
    for target, (kind, split) in sorted(kinds.items()):
        p = np.frombuffer(Path(target).read_bytes(), dtype=np.uint8)
        entry = summary.setdefault(f"{kind}/{split}", {"frames": 0, "speech_frames": 0})
        entry["frames"] += len(p)
        entry["speech_frames"] += int(np.sum(p >= 128))
    for key, entry in summary.items():
        entry["speech_share"] = round(entry["speech_frames"] / max(1, entry["frames"]), 4)
        log(f"{key:14s} {entry['frames'] / 100 / 60:7.1f} min, teacher says speech {entry['speech_share']:6.1%}")
    import onnxruntime
    from importlib.metadata import version
    manifest = {"created_by": "tools/corpus/teacher_labels.py", "teacher": "Silero VAD (streaming, 512-sample windows)",
                "silero_vad": version("silero-vad"), "onnxruntime": onnxruntime.__version__,
                "model_sha256": digest, "frame_ms": 10, "encoding": "uint8 probability x 255 per frame",
                "summary": summary}
    out.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
