#!/usr/bin/env python3
"""Train the learned speech model (issue 30): a small causal recurrent network over each frame's own
features, giving P(none), P(speech), P(music), P(sound) for every stream, taught by a teacher.

The model: every STRIDE frames (10 ms each), the last STRIDE frames' chosen columns of
`activespeaker features --layout frame` (band energies and band SNRs from the one FFT the engine
computes, and optionally a few scalar features), standardised, go through one GRU layer (per-stream
state) and a linear layer with softmax. The inputs are computed by the engine itself, so training
sees what inference sees.

Targets (soft, per frame) combine the set's references with the teacher (tools/corpus/teacher_labels.py):
P(speech) is the teacher's speech probability of the clean speech clip placed there (0 where no
speech clip is placed: the references win over the teacher on music and sounds), and the rest goes
to what is audible besides speech (NAME.background: music, sound, or nothing).

Data: classifier sets made by tools/corpus/make_classifier_set.py --teacher (NAME.wav, NAME.labels,
NAME.speech, NAME.background). --train sets train; --dev chooses the epoch; --test is only reported.
Everything random comes from --seed; training runs in float32 numpy on one BLAS thread.

Dev metrics (frames, P(speech) >= 0.5), beside Silero VAD run causally on the same mixtures and the
engine's own decision (`activespeaker detect`, one stream per file) when --binary is given:
  * speech F1 against the reference speech frames (label 1; masked speech counts as speech);
  * music alone -> speech, sound alone -> speech (labels 2 and 3);
  * speech over music found (label 1 frames with music audible).

Usage:
  python3 tools/corpus/train_speech_model.py --binary .build/release/activespeaker \\
      --train corpus-local/classifier/train corpus-local/classifier/train-b \\
      --dev corpus-local/classifier/dev --out /tmp/speech-model
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import base64  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_classifier  # noqa: E402

COLUMNS = 42                     # FrameFeatures.columnCount
CLASSES = ["none", "speech", "music", "sound"]
REPO = Path(__file__).resolve().parents[2]
MODEL_SWIFT = REPO / "Sources/SpeakerCore/Classifier/SpeechModelWeights.swift"
VECTORS_SWIFT = REPO / "Tests/SpeakerCoreTests/SpeechModelVectors.swift"
MODEL_VERSION = 1
GROUPS = {                        # named column groups of the frame layout (FrameFeatures.columns)
    "bands": list(range(0, 16)),
    "snr": list(range(16, 32)),
    "energy": [32, 33],
    "zcr": [34],
    "segsnr": [35],
    "flatness": [36],
    "centroid": [37],
    "flux": [38],
    "periodicity": [39, 40],
    "excess": [41],
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------
# Data


def features_of(binary: Path, folder: Path, cache: Path) -> dict[str, np.ndarray]:
    """`activespeaker features --layout frame` of the folder's WAV files (once; cached by content hash)."""
    return train_classifier.features_of(binary, folder, cache, layout="frame", width=COLUMNS)


def digits(path: Path) -> np.ndarray:
    return np.frombuffer(path.read_text().strip().encode(), dtype=np.uint8) - ord("0")


class Set:
    """One classifier set: per file its frame features, soft targets and reference labels."""

    def __init__(self, binary: Path, folder: Path, cache: Path):
        self.folder = folder
        features = features_of(binary, folder, cache)
        self.names = sorted(features)
        self.x, self.targets, self.labels, self.background = [], [], [], []
        for name in self.names:
            speech_path = folder / f"{name}.speech"
            if not speech_path.exists():
                raise SystemExit(f"train_speech_model: {speech_path} is missing: make the set with --teacher")
            labels = digits(folder / f"{name}.labels")
            background = digits(folder / f"{name}.background")
            speech = np.frombuffer(speech_path.read_bytes(), dtype=np.uint8).astype(np.float32) / 255
            n = min(len(labels), len(features[name]))
            target = np.zeros((n, 4), dtype=np.float32)
            target[:, 1] = speech[:n]
            rest = 1 - speech[:n]
            other = np.select([background[:n] == 2, background[:n] == 3], [2, 3], 0)
            target[np.arange(n), other] += rest
            self.x.append(features[name][:n])
            self.targets.append(target)
            self.labels.append(labels[:n])
            self.background.append(background[:n])


def stack(frames: np.ndarray, columns: list[int], stride: int) -> np.ndarray:
    """The model's input rows: every `stride` frames, the last `stride` frames' columns, oldest first."""
    steps = len(frames) // stride
    x = frames[: steps * stride, columns]
    return x.reshape(steps, stride * len(columns))


# ----------------------------------------------------------------------------------------------
# The network: x -> GRU(H) -> linear -> softmax


def sigmoid(v: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-v))


def init_params(rng: np.random.Generator, inputs: int, hidden: int) -> dict[str, np.ndarray]:
    s_in, s_h = 1 / np.sqrt(inputs), 1 / np.sqrt(hidden)
    f = np.float32
    return {
        "Wx": rng.uniform(-s_in, s_in, (inputs, 3 * hidden)).astype(f),   # gates r, z, n
        "Wh": rng.uniform(-s_h, s_h, (hidden, 3 * hidden)).astype(f),
        "bx": np.zeros(3 * hidden, dtype=f),
        "bh": np.zeros(3 * hidden, dtype=f),
        "Wo": rng.uniform(-s_h, s_h, (hidden, 4)).astype(f),
        "bo": np.zeros(4, dtype=f),
    }


def gru_forward(p: dict[str, np.ndarray], x: np.ndarray, h0: np.ndarray):
    """x: (T, B, D), h0: (B, H) -> hidden states (T, B, H) and the cache for backward."""
    T, B, _ = x.shape
    H = h0.shape[1]
    gx = x @ p["Wx"] + p["bx"]                       # (T, B, 3H), all steps at once
    hs = np.empty((T, B, H), dtype=x.dtype)
    rs, zs, ns, hn = (np.empty((T, B, H), dtype=x.dtype) for _ in range(4))
    h = h0
    for t in range(T):
        gh = h @ p["Wh"] + p["bh"]
        r = sigmoid(gx[t, :, :H] + gh[:, :H])
        z = sigmoid(gx[t, :, H:2 * H] + gh[:, H:2 * H])
        n = np.tanh(gx[t, :, 2 * H:] + r * gh[:, 2 * H:])
        h = (1 - z) * n + z * h
        hs[t], rs[t], zs[t], ns[t], hn[t] = h, r, z, n, gh[:, 2 * H:]
    return hs, (x, h0, hs, rs, zs, ns, hn)


def gru_backward(p, cache, dhs: np.ndarray):
    """Gradients of the GRU parameters from dL/dh_t (T, B, H)."""
    x, h0, hs, rs, zs, ns, hn = cache
    T, B, H = hs.shape
    dgx = np.empty((T, B, 3 * H), dtype=x.dtype)
    dWh = np.zeros_like(p["Wh"])
    dbh = np.zeros_like(p["bh"])
    dh = np.zeros((B, H), dtype=x.dtype)
    WhT = p["Wh"].T
    for t in reversed(range(T)):
        dh = dh + dhs[t]
        h_prev = hs[t - 1] if t > 0 else h0
        r, z, n = rs[t], zs[t], ns[t]
        dn = dh * (1 - z)
        dz = dh * (h_prev - n)
        dh_prev = dh * z
        dan = dn * (1 - n * n)                         # pre-activation of n
        daz = dz * z * (1 - z)
        dr = dan * hn[t]
        dar = dr * r * (1 - r)
        dgh = np.concatenate([dar, daz, dan * r], axis=1)
        dgx[t] = np.concatenate([dar, daz, dan], axis=1)
        dWh += h_prev.T @ dgh
        dbh += dgh.sum(axis=0)
        dh = dh_prev + dgh @ WhT
    D = x.shape[2]
    dWx = x.reshape(T * B, D).T @ dgx.reshape(T * B, 3 * H)
    dbx = dgx.sum(axis=(0, 1))
    return {"Wx": dWx, "bx": dbx, "Wh": dWh, "bh": dbh}


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def loss_and_grads(p, x, h0, target, weight):
    """Soft cross-entropy over a chunk: x (T, B, D), target (T, B, 4), weight (T, B)."""
    hs, cache = gru_forward(p, x, h0)
    logits = hs @ p["Wo"] + p["bo"]
    prob = softmax(logits)
    total = weight.sum() + 1e-9
    loss = -(weight[..., None] * target * np.log(prob + 1e-9)).sum() / total
    dlogits = (prob * target.sum(axis=-1, keepdims=True) - target) * (weight[..., None] / total)
    T, B, H = hs.shape
    grads = {"Wo": hs.reshape(T * B, H).T @ dlogits.reshape(T * B, 4), "bo": dlogits.sum(axis=(0, 1))}
    dhs = dlogits @ p["Wo"].T
    grads.update(gru_backward(p, cache, dhs.astype(hs.dtype)))
    return float(loss), grads, hs[-1]


def run_model(p, x: np.ndarray) -> np.ndarray:
    """Probabilities for one whole sequence x (T, D)."""
    H = p["Wh"].shape[0]
    hs, _ = gru_forward(p, x[:, None, :], np.zeros((1, H), dtype=np.float32))
    return softmax(hs[:, 0] @ p["Wo"] + p["bo"])


def gradient_check() -> None:
    """Compares the analytic gradients with finite differences (float64) on a tiny random problem."""
    rng = np.random.default_rng(0)
    p = {k: v.astype(np.float64) for k, v in init_params(rng, 5, 4).items()}
    x = rng.normal(size=(7, 3, 5))
    h0 = rng.normal(size=(3, 4)) * 0.1
    target = softmax(rng.normal(size=(7, 3, 4)))
    weight = rng.uniform(0.5, 1.5, size=(7, 3))
    _, grads, _ = loss_and_grads(p, x, h0, target, weight)
    worst = 0.0
    for key, value in p.items():
        for index in np.ndindex(value.shape):
            saved = value[index]
            value[index] = saved + 1e-6
            up = loss_and_grads(p, x, h0, target, weight)[0]
            value[index] = saved - 1e-6
            down = loss_and_grads(p, x, h0, target, weight)[0]
            value[index] = saved
            numeric = (up - down) / 2e-6
            worst = max(worst, abs(numeric - grads[key][index]) / max(1e-6, abs(numeric) + abs(grads[key][index])))
    log(f"gradient check: worst relative difference {worst:.2e}")
    if worst > 1e-5:
        raise SystemExit("gradient check failed")


# ----------------------------------------------------------------------------------------------
# Training


SOUNDING_SNR = 3.0   # dB: frames below this segmental SNR are never speech evidence in the engine


def batches(sets: list[Set], columns, stride, mean, std, quiet_weight: float = 1.0):
    """Per file: standardised inputs (steps, D), targets (steps, 4) and step weights (steps): a step
    with no sounding frame weighs `quiet_weight` (the engine asks the model nothing about it)."""
    out = []
    for s in sets:
        for x, target, labels in zip(s.x, s.targets, s.labels):
            xi = (stack(x, columns, stride) - mean) / std
            steps = len(xi)
            t = target[: steps * stride].reshape(steps, stride, 4).mean(axis=1)
            sounding = (x[: steps * stride, 35].reshape(steps, stride) >= SOUNDING_SNR).any(axis=1)
            w = np.where(sounding, 1.0, quiet_weight)
            out.append((xi.astype(np.float32), t.astype(np.float32), w.astype(np.float32)))
    return out


def class_weights(data) -> np.ndarray:
    """Per class, 1 / sqrt(its share of the soft targets): rare classes count more, not all."""
    totals = sum(t.sum(axis=0) for _, t, _ in data)
    w = 1 / np.sqrt(np.maximum(totals / totals.sum(), 1e-6))
    return (w / (w * totals / totals.sum()).sum()).astype(np.float32)


def train(train_data, dev_data, inputs, args, evaluate) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(args.seed)
    p = init_params(rng, inputs, args.hidden)
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(v) for k, v in p.items()}
    weights = class_weights(train_data)
    log(f"class weights {dict(zip(CLASSES, np.round(weights, 3)))}")
    step = 0
    best = (-np.inf, None, 0)
    steps = min(len(x) for x, _, _ in train_data)
    for epoch in range(args.epochs):
        started = time.time()
        order = rng.permutation(len(train_data))
        total, count = 0.0, 0
        for first in range(0, len(order), args.batch):
            chosen = [train_data[i] for i in order[first:first + args.batch]]
            B = len(chosen)
            x = np.stack([c[0][:steps] for c in chosen], axis=1)           # (T, B, D)
            target = np.stack([c[1][:steps] for c in chosen], axis=1)
            weight = (target * weights).sum(axis=-1) * np.stack([c[2][:steps] for c in chosen], axis=1)
            if args.gain_db > 0:      # a random level per file: the same sound louder or quieter
                gain = rng.uniform(-args.gain_db, args.gain_db, size=(1, B, 1)).astype(np.float32)
                x = x + gain * args.gain_columns
            h = np.zeros((B, args.hidden), dtype=np.float32)
            for start in range(0, steps, args.chunk):
                sl = slice(start, start + args.chunk)
                loss, grads, h = loss_and_grads(p, x[sl], h, target[sl], weight[sl])
                total += loss
                count += 1
                norm = np.sqrt(sum(float((g * g).sum()) for g in grads.values()))
                scale = min(1.0, args.clip / (norm + 1e-9))
                step += 1
                lr = args.rate * min(1.0, step / 100) * (0.5 ** (epoch / args.halving))
                for k, g in grads.items():
                    g = g * scale
                    if k.startswith("W"):
                        g = g + args.l2 * p[k]
                    m[k] = 0.9 * m[k] + 0.1 * g
                    v[k] = 0.999 * v[k] + 0.001 * g * g
                    p[k] -= (lr * (m[k] / (1 - 0.9 ** step)) / (np.sqrt(v[k] / (1 - 0.999 ** step)) + 1e-8)).astype(np.float32)
        score, line = evaluate(p, dev_data)
        log(f"epoch {epoch + 1:2d}: train loss {total / max(1, count):.4f}, {time.time() - started:.0f} s; dev {line}")
        if score > best[0]:
            best = (score, {k: val.copy() for k, val in p.items()}, epoch + 1)
    log(f"best dev score {best[0]:.4f} at epoch {best[2]}")
    return best[1]


# ----------------------------------------------------------------------------------------------
# Scoring


def frame_metrics(decisions: list[np.ndarray], s: Set) -> dict[str, float]:
    """Speech decisions per 10 ms frame against a set's references."""
    tp = fp = fn = 0
    music = music_speech = sound = sound_speech = over = over_found = 0
    for d, labels, background in zip(decisions, s.labels, s.background):
        n = min(len(d), len(labels))
        d, labels, background = d[:n], labels[:n], background[:n]
        speech = (labels == 1) | (labels == 4)
        tp += int(np.sum(d & speech))
        fp += int(np.sum(d & ~speech))
        fn += int(np.sum(~d & speech))
        music += int(np.sum(labels == 2))
        music_speech += int(np.sum(d & (labels == 2)))
        sound += int(np.sum(labels == 3))
        sound_speech += int(np.sum(d & (labels == 3)))
        over += int(np.sum(speech & (background == 2)))
        over_found += int(np.sum(d & speech & (background == 2)))
    return {"f1": 2 * tp / max(1, 2 * tp + fp + fn), "music_as_speech": music_speech / max(1, music),
            "sound_as_speech": sound_speech / max(1, sound), "speech_over_music_found": over_found / max(1, over)}


def describe(m: dict[str, float]) -> str:
    return (f"F1 {m['f1']:.3f}, music->speech {m['music_as_speech']:.1%}, sound->speech {m['sound_as_speech']:.1%}, "
            f"speech over music found {m['speech_over_music_found']:.1%}")


def model_decisions(p, data, stride, weights=None) -> tuple[list[np.ndarray], float]:
    """Speech decisions per frame (P(speech) >= 0.5) and the weighted soft cross-entropy per step."""
    out, loss, total = [], 0.0, 0.0
    for x, target, _ in data:
        prob = run_model(p, x)
        out.append(np.repeat(prob[:, 1] >= 0.5, stride))
        w = (target * weights).sum(axis=-1) if weights is not None else np.ones(len(target))
        loss -= float((w[:, None] * target * np.log(prob + 1e-9)).sum())
        total += float(w.sum())
    return out, loss / max(total, 1e-9)


def silero_decisions(s: Set) -> list[np.ndarray]:
    """Silero VAD, causal, on each mixture (the teacher run as a system)."""
    sys.path.insert(0, str(REPO / "tools" / "corpus"))
    from teacher_labels import frame_probabilities, read_wav
    return [frame_probabilities(read_wav(s.folder / f"{name}.wav")) >= 0.5 for name in s.names]


def engine_decisions(binary: Path, s: Set, work: Path) -> list[np.ndarray]:
    """The engine's speech decision per frame (`activespeaker detect`, each file alone)."""
    out = []
    for name in s.names:
        target = work / f"{name}.rttm"
        if not target.exists():
            subprocess.run([str(binary), "detect", "--rttm", str(target), str(s.folder / f"{name}.wav")],
                           check=True, stdout=subprocess.DEVNULL)
        d = np.zeros(len(s.labels[s.names.index(name)]), dtype=bool)
        for line in target.read_text().splitlines():
            fields = line.split()
            if len(fields) > 4 and fields[0] == "SPEAKER":
                start, duration = float(fields[3]), float(fields[4])
                d[int(round(start * 100)):int(round((start + duration) * 100))] = True
        out.append(d)
    return out


# ----------------------------------------------------------------------------------------------
# Export


def folded(p, mean, std) -> list[np.ndarray]:
    """The parameters in the layout of Sources/SpeakerCore/Classifier/SpeechModel.swift, standardisation
    folded into the input weights, as float32."""
    H = p["Wh"].shape[0]
    wx = p["Wx"].astype(np.float64) / std.astype(np.float64)[:, None]            # (D, 3H)
    bx = p["bx"].astype(np.float64) - (mean.astype(np.float64) / std) @ p["Wx"].astype(np.float64)
    bh = p["bh"].astype(np.float64)
    gate_bias = np.concatenate([bx[:2 * H] + bh[:2 * H], bx[2 * H:]])

    def blocks(w: np.ndarray) -> np.ndarray:          # (inputs, 3H) -> 16-unit blocks, input by input
        inputs = w.shape[0]
        return w.T.reshape(3 * H // 16, 16, inputs).transpose(0, 2, 1).ravel()

    parts = [blocks(wx), gate_bias, bh[2 * H:], blocks(p["Wh"].astype(np.float64)),
             p["Wo"].astype(np.float64).ravel(), p["bo"].astype(np.float64)]
    return [part.astype(np.float32) for part in parts]


def reference_outputs(p, mean, std, columns, stride, frames: np.ndarray) -> np.ndarray:
    """The trained model in float64, unfolded, on raw frame rows: probabilities per step."""
    p64 = {k: v.astype(np.float64) for k, v in p.items()}
    x = (stack(frames.astype(np.float64), columns, stride) - mean.astype(np.float64)) / std.astype(np.float64)
    return run_model(p64, x)


def swift_floats(values: np.ndarray, indent: str) -> str:
    """Base64 of the float32 values as one multi-line string literal (the decoder skips the line breaks:
    a long chain of `+` between literals makes the compiler crash)."""
    text = base64.b64encode(values.astype("<f4").tobytes()).decode()
    lines = "\n".join(indent + text[i:i + 100] for i in range(0, len(text), 100))
    return '"""\n' + lines + "\n" + indent + '"""'



def export(p, mean, std, columns, stride, corpus_hash: str, metrics: str, vectors: list[np.ndarray]) -> None:
    H = p["Wh"].shape[0]
    parameters = np.concatenate(folded(p, mean, std))
    TRIPLE = chr(34) * 3
    metric_lines = "\n".join("            " + line for line in metrics.splitlines())
    MODEL_SWIFT.write_text(f"""// Generated by tools/corpus/train_speech_model.py: do not edit; retrain instead.

extension SpeechModelWeights {{
    /// The model the engine ships: trained on the real-audio corpus (tools/corpus/make_corpus.py) with the
    /// teacher's labels (tools/corpus/teacher_labels.py).
    static let shipped = SpeechModelWeights(
        version: {MODEL_VERSION},
        columns: {list(map(int, columns))},
        stride: {stride},
        hidden: {H},
        corpus: "{corpus_hash}",
        metrics: {TRIPLE}
{metric_lines}
            {TRIPLE},
        // float32 little-endian, {len(parameters)} values, in the layout SpeechModel documents.
        base64:
        {swift_floats(parameters, "        ")})
}}
""")
    cases = []
    for rows in vectors:
        expected = reference_outputs(p, mean, std, columns, stride, rows)
        cases.append(f"""        (
            frames: {len(rows)},
            rows:
            {swift_floats(rows.ravel(), "            ")},
            expected:
            {swift_floats(expected.ravel(), "            ")}
        ),""")
    VECTORS_SWIFT.write_text(f"""// Generated by tools/corpus/train_speech_model.py: do not edit; retrain instead.

/// Frames of the dev set (rows of `FrameFeatures.columns`, as `activespeaker features --layout frame`
/// wrote them) and the probabilities per step that the training script's float64 model gives for
/// them: the Swift inference must agree within 1e-4.
enum SpeechModelVectors {{
    static let cases: [(frames: Int, rows: String, expected: String)] = [
{chr(10).join(cases)}
    ]
}}
""")
    log(f"wrote {MODEL_SWIFT.relative_to(REPO)} ({len(parameters)} parameters) and {VECTORS_SWIFT.relative_to(REPO)}")


def corpus_digest(corpus: Path, sets: list[Path]) -> str:
    """SHA-256 over the corpus's sources, the teacher's manifest and the training sets' manifests."""
    digest = hashlib.sha256()
    for path in [corpus / "sources.json", corpus / "teacher" / "manifest.json"] + [s / "manifest.json" for s in sets]:
        digest.update(path.read_bytes())
    return "sha256:" + digest.hexdigest()


# ----------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", type=Path, default=REPO / ".build/release/activespeaker")
    ap.add_argument("--train", type=Path, nargs="+", required=False)
    ap.add_argument("--dev", type=Path, required=False)
    ap.add_argument("--test", type=Path, default=None)
    ap.add_argument("--cache", type=Path, default=Path("/tmp/speech-model-features"))
    ap.add_argument("--out", type=Path, default=Path("/tmp/speech-model"))
    ap.add_argument("--inputs", default="bands,snr", help="column groups: " + ",".join(GROUPS))
    ap.add_argument("--stride", type=int, default=2, help="frames per model step")
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--chunk", type=int, default=100, help="steps per truncated back-propagation")
    ap.add_argument("--rate", type=float, default=3e-3)
    ap.add_argument("--halving", type=float, default=4, help="epochs per halving of the rate")
    ap.add_argument("--l2", type=float, default=1e-5)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--gain-db", type=float, default=10, help="random level change per training file, +- dB")
    ap.add_argument("--quiet-weight", type=float, default=0.3,
                    help="loss weight of steps with no sounding frame (segmental SNR < 3 dB)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--baselines", action="store_true", help="also score Silero VAD and the engine on --dev")
    ap.add_argument("--gradient-check", action="store_true", help="check the back-propagation and exit")
    ap.add_argument("--export", action="store_true",
                    help=f"write the model into the engine ({MODEL_SWIFT.relative_to(REPO)}) and the test vectors")
    ap.add_argument("--load", type=Path, default=None, metavar="MODEL.npz",
                    help="skip training: score (and --export) a model an earlier run saved in OUT/model.npz")
    ap.add_argument("--corpus", type=Path, default=Path("corpus-local"), help="for the corpus hash of --export")
    args = ap.parse_args(argv)
    if args.gradient_check:
        gradient_check()
        return 0
    if not args.train or not args.dev:
        ap.error("--train and --dev are required")
    columns = [c for group in args.inputs.split(",") for c in GROUPS[group]]
    level_columns = set(GROUPS["bands"] + GROUPS["energy"] + GROUPS["excess"])
    args.gain_columns = np.tile(np.array([1.0 if c in level_columns else 0.0 for c in columns], dtype=np.float32), args.stride)
    started = time.time()
    train_sets = [Set(args.binary, folder, args.cache) for folder in args.train]
    dev = Set(args.binary, args.dev, args.cache)
    log(f"data: {sum(len(s.names) for s in train_sets)} training files, {len(dev.names)} dev files "
        f"({time.time() - started:.0f} s)")
    raw = np.concatenate([stack(x, columns, args.stride) for s in train_sets for x in s.x])
    mean = raw.mean(axis=0).astype(np.float32)
    std = (raw.std(axis=0) + 1e-3).astype(np.float32)
    args.gain_columns = args.gain_columns / std
    del raw
    train_data = batches(train_sets, columns, args.stride, mean, std, args.quiet_weight)
    dev_data = batches([dev], columns, args.stride, mean, std)
    if args.baselines:
        log(f"dev, Silero VAD (causal):  {describe(frame_metrics(silero_decisions(dev), dev))}")
        work = args.out / "engine-dev"
        work.mkdir(parents=True, exist_ok=True)
        log(f"dev, engine (detect):      {describe(frame_metrics(engine_decisions(args.binary, dev, work), dev))}")

    weights = class_weights(train_data)

    def evaluate(p, data):
        decisions, loss = model_decisions(p, data, args.stride, weights)
        # Model choice: the dev loss (smoother than the thresholded figures on 40 files).
        return -loss, f"loss {loss:.4f}, " + describe(frame_metrics(decisions, dev))

    if args.load:
        saved = np.load(args.load)
        if list(saved["columns"]) != columns or int(saved["stride"]) != args.stride:
            raise SystemExit(f"train_speech_model: {args.load} was trained with other --inputs or --stride")
        mean, std = saved["mean"], saved["std"]
        train_data = batches(train_sets, columns, args.stride, mean, std, args.quiet_weight)
        dev_data = batches([dev], columns, args.stride, mean, std)
        p = {k: saved[k] for k in ("Wx", "Wh", "bx", "bh", "Wo", "bo")}
    else:
        p = train(train_data, dev_data, len(columns) * args.stride, args, evaluate)
    args.out.mkdir(parents=True, exist_ok=True)
    np.savez(args.out / "model.npz", mean=mean, std=std, columns=np.array(columns), stride=args.stride, **p)
    metrics = [f"dev ({len(dev.names)} files): {evaluate(p, dev_data)[1]}"]
    if args.test:
        test = Set(args.binary, args.test, args.cache)
        test_data = batches([test], columns, args.stride, mean, std)
        metrics.append(f"test ({len(test.names)} files): "
                       + describe(frame_metrics(model_decisions(p, test_data, args.stride)[0], test)))
    metrics.append(f"seed {args.seed}, inputs {args.inputs}, stride {args.stride}, hidden {args.hidden}, "
                   f"{args.epochs} epochs, trained on {' '.join(str(t) for t in args.train)}")
    for line in metrics:
        log(line)
    if args.export:
        vectors = [dev.x[0][:240], dev.x[1][1000:1240]]
        export(p, mean, std, columns, args.stride, corpus_digest(args.corpus, args.train), "\n".join(metrics), vectors)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
