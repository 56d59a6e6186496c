#!/usr/bin/env python3
"""Train the engine's sound classifier (none / speech / music / sound) and write it into the engine.

The classifier is a small multilayer perceptron, 64 -> 32 -> 16 -> 4 with ReLU (2,676 parameters),
over the context vector that `SoundContext` keeps per stream (Sources/SpeakerCore/Classifier/). The
vectors are computed by the engine itself (`activespeaker features`, run with the classifier off so
that they do not depend on the model being replaced; with it on, only the choice of which quiet
frames outside utterances are analysed in full can differ), so training sees what inference sees. It is trained on the sounding frames only (segmental SNR >= 3 dB): the engine asks
the classifier nothing about the others, which can never be speech evidence.

Data: classifier sets made by tools/corpus/make_classifier_set.py from the real-audio corpus
(tools/corpus/make_corpus.py): a folder of NAME.wav with NAME.labels (one digit per 10 ms frame:
0 nothing, 1 speech, 2 music, 3 other sound, 4 masked speech: see --masked). Training uses --train, model selection (the epoch)
uses --dev; --test is only reported. Everything random comes from --seed (numpy default_rng), and
numpy's float64 arithmetic is deterministic, so the same data and seed give the same weights.

Outputs:
  Sources/SpeakerCore/Classifier/SoundClassifierModel.swift   the weights (base64 float32) + metadata
  Tests/SpeakerCoreTests/SoundClassifierVectors.swift          saved inputs and this script's outputs,
                                                               which the Swift inference must match
  OUT/model.json, OUT/metrics.json                             the same, readable

Usage:
  python3 tools/corpus/train_classifier.py --binary .build/release/activespeaker \\
      --train corpus-local/classifier/train --dev corpus-local/classifier/dev \\
      --test corpus-local/classifier/test --corpus corpus-local/sources.json
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

INPUTS = 64
LAYERS = [INPUTS, 32, 16, 4]
CLASSES = ["none", "speech", "music", "sound"]
SOUNDING_SNR = 3.0          # dB; input column 48 holds SNR / 10
MODEL_VERSION = 1
MASKED = 4                  # label of masked speech frames (make_classifier_set.py --masked-speech)
MASKED_AS = "ignore"        # --masked: drop them, or count them as speech
REPO = Path(__file__).resolve().parents[2]
MODEL_SWIFT = REPO / "Sources/SpeakerCore/Classifier/SoundClassifierModel.swift"
VECTORS_SWIFT = REPO / "Tests/SpeakerCoreTests/SoundClassifierVectors.swift"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------
# Data


def features_of(binary: Path, folder: Path, cache: Path, layout: str = "context",
                width: int = INPUTS) -> dict[str, np.ndarray]:
    """Runs `activespeaker features --layout LAYOUT` over the folder's WAV files (once; cached by content
    hash): rows of `width` values per file. tools/corpus/train_speech_model.py reads the frame layout with it."""
    wavs = sorted(folder.glob("*.wav"))
    if not wavs:
        raise SystemExit(f"{Path(sys.argv[0]).name}: no .wav files in {folder}")
    digest = hashlib.sha256()
    digest.update(binary.read_bytes())
    digest.update(layout.encode())
    for wav in wavs:
        digest.update(wav.name.encode())
        digest.update(wav.read_bytes())
    out = cache / f"{folder.name}-{digest.hexdigest()[:16]}"
    if not (out / ".done").exists():
        out.mkdir(parents=True, exist_ok=True)
        log(f"features ({layout}): {len(wavs)} files of {folder}")
        # With the classifier off, so that the inputs do not depend on the model being replaced (through
        # the utterance state, which decides which quiet frames are analysed in full): retraining
        # reproduces the same weights whatever model the binary ships.
        subprocess.run([str(binary), "features", "--layout", layout, "--config", "vad.classifier=false",
                        "--out", str(out), *map(str, wavs)], check=True)
        (out / ".done").write_text("")
    return {wav.stem: np.fromfile(out / f"{wav.stem}.f32", dtype="<f4").reshape(-1, width) for wav in wavs}


def load_set(binary: Path, folder: Path, cache: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(inputs, labels, file index) of the sounding frames of a classifier set."""
    features = features_of(binary, folder, cache)
    xs, ys, files = [], [], []
    for index, (name, x) in enumerate(sorted(features.items())):
        text = (folder / f"{name}.labels").read_text().strip()
        labels = np.frombuffer(text.encode(), dtype=np.uint8) - ord("0")
        n = min(len(labels), len(x))
        x, labels = x[:n], labels[:n]
        sounding = x[:, 48] * 10 >= SOUNDING_SNR
        if MASKED_AS == "ignore":
            sounding &= labels != MASKED
        else:
            labels = np.where(labels == MASKED, 1, labels)
        xs.append(x[sounding])
        ys.append(labels[sounding].astype(np.int64))
        files.append(np.full(int(sounding.sum()), index))
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(files)


# ----------------------------------------------------------------------------------------------
# The network (float64 for training; exported as float32)


def init_params(rng: np.random.Generator) -> list[np.ndarray]:
    params = []
    for fan_in, fan_out in zip(LAYERS[:-1], LAYERS[1:]):
        params.append(rng.normal(0, np.sqrt(2 / fan_in), (fan_in, fan_out)))
        params.append(np.zeros(fan_out))
    return params


def forward(params: list[np.ndarray], x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    activations = [x]
    h = x
    for layer in range(len(LAYERS) - 1):
        w, b = params[2 * layer], params[2 * layer + 1]
        z = h @ w + b
        h = np.maximum(z, 0) if layer < len(LAYERS) - 2 else z
        activations.append(h)
    return h, activations


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def loss_and_grads(params, x, y, weights, l2):
    logits, acts = forward(params, x)
    p = softmax(logits)
    n = len(y)
    w = weights[y]
    loss = -(w * np.log(p[np.arange(n), y] + 1e-12)).sum() / w.sum()
    grad = p.copy()
    grad[np.arange(n), y] -= 1
    grad *= (w / w.sum())[:, None]
    grads = [None] * len(params)
    for layer in reversed(range(len(LAYERS) - 1)):
        h_in = acts[layer]
        grads[2 * layer] = h_in.T @ grad + l2 * params[2 * layer]
        grads[2 * layer + 1] = grad.sum(axis=0)
        if layer > 0:
            grad = (grad @ params[2 * layer].T) * (acts[layer] > 0)
    loss += 0.5 * l2 * sum((params[2 * i] ** 2).sum() for i in range(len(LAYERS) - 1))
    return loss, grads


def train(x, y, x_dev, y_dev, seed: int, epochs: int, batch: int, rate: float, l2: float, keep_last: bool = False):
    rng = np.random.default_rng(seed)
    counts = np.bincount(y, minlength=4).astype(float)
    # Balance the classes (square root of the inverse frequency: rare classes count more, not all).
    weights = np.where(counts > 0, 1 / np.sqrt(np.maximum(counts, 1)), 0)
    weights *= len(counts) / weights.sum()
    params = init_params(rng)
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    step = 0
    best = (np.inf, None, -1)
    for epoch in range(epochs):
        order = rng.permutation(len(y))
        for start in range(0, len(order), batch):
            idx = order[start:start + batch]
            _, grads = loss_and_grads(params, x[idx], y[idx], weights, l2)
            step += 1
            lr = rate * min(1.0, step / 200) * (0.5 ** (epoch / 15))
            for i, g in enumerate(grads):
                m[i] = 0.9 * m[i] + 0.1 * g
                v[i] = 0.999 * v[i] + 0.001 * g * g
                mh = m[i] / (1 - 0.9 ** step)
                vh = v[i] / (1 - 0.999 ** step)
                params[i] = params[i] - lr * mh / (np.sqrt(vh) + 1e-8)
        dev_loss, _ = loss_and_grads(params, x_dev, y_dev, weights, 0)
        train_loss, _ = loss_and_grads(params, x[::7], y[::7], weights, 0)
        log(f"epoch {epoch + 1:2d}: train loss {train_loss:.4f}, dev loss {dev_loss:.4f}")
        if dev_loss < best[0] or keep_last:
            best = (dev_loss, [p.copy() for p in params], epoch + 1)
    log(f"best dev loss {best[0]:.4f} at epoch {best[2]}")
    return best[1], best[2]


# ----------------------------------------------------------------------------------------------
# Export


def folded(params, mean, std) -> list[np.ndarray]:
    """The network with the input standardisation folded into the first layer, as float32."""
    w1, b1 = params[0], params[1]
    out = [w1 / std[:, None], b1 - (mean / std) @ w1] + params[2:]
    return [p.astype(np.float32) for p in out]


def forward32(params32: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    """The exported network in float32, as the engine runs it: probabilities."""
    h = x.astype(np.float32)
    for layer in range(len(LAYERS) - 1):
        h = h @ params32[2 * layer] + params32[2 * layer + 1]
        if layer < len(LAYERS) - 2:
            h = np.maximum(h, np.float32(0))
    z = h - h.max(axis=1, keepdims=True)
    e = np.exp(z)
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def metrics(p: np.ndarray, y: np.ndarray, threshold: float = 0.5) -> dict:
    predicted = p.argmax(axis=1)
    confusion = np.zeros((4, 4), dtype=int)
    np.add.at(confusion, (y, predicted), 1)
    speech = p[:, 1] >= threshold
    result = {
        "frames": int(len(y)),
        "accuracy": round(float((predicted == y).mean()), 4),
        "confusion (rows true none/speech/music/sound, columns predicted)": confusion.tolist(),
    }
    for c, name in enumerate(CLASSES):
        if (y == c).any():
            result[f"{name} recall"] = round(float((predicted[y == c] == c).mean()), 4)
    if (y == 1).any():
        result[f"speech recall at p>={threshold}"] = round(float(speech[y == 1].mean()), 4)
    if (y == 2).any():
        result[f"music frames as speech at p>={threshold}"] = round(float(speech[y == 2].mean()), 4)
    if (y == 1).any() and (y == 2).any():
        vetoed = p[:, 2] >= threshold
        result[f"speech frames with music p>={threshold}"] = round(float(vetoed[y == 1].mean()), 4)
        result[f"music frames with music p<{threshold}"] = round(float(1 - vetoed[y == 2].mean()), 4)
    if (y != 1).any():
        result[f"non-speech frames as speech at p>={threshold}"] = round(float(speech[y != 1].mean()), 4)
    return result


def swift_floats(values: np.ndarray, per_line: int = 8) -> str:
    items = [f"{float(v):.9g}" for v in np.asarray(values, dtype=np.float32).ravel()]
    for i, item in enumerate(items):
        if "." not in item and "e" not in item and "inf" not in item and "nan" not in item:
            items[i] = item + ".0"
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return ",\n        ".join(lines)


def write_swift(params32, corpus_hash: str, summary: str, x_vectors: np.ndarray, p_vectors: np.ndarray) -> None:
    blob = b"".join(p.astype("<f4").tobytes() for p in params32)
    encoded = base64.b64encode(blob).decode()
    chunks = [encoded[i:i + 100] for i in range(0, len(encoded), 100)]
    body = "\n".join(f'        "{c}"' + (" +" if i < len(chunks) - 1 else "") for i, c in enumerate(chunks))
    MODEL_SWIFT.write_text(f"""// Generated by tools/corpus/train_classifier.py: do not edit; retrain instead.

extension SoundClassifierModel {{
    /// The model the engine ships: trained on the real-audio corpus (tools/corpus/make_corpus.py).
    static let shipped = SoundClassifierModel(
        version: {MODEL_VERSION},
        layers: {LAYERS},
        corpus: "{corpus_hash}",
        metrics: \"\"\"
            {summary.replace(chr(10), chr(10) + '            ')}
            \"\"\",
        // float32 little-endian: W1 ({LAYERS[0]}x{LAYERS[1]}, input-major), b1, W2, b2, W3, b3;
        // the input standardisation is folded into W1 and b1.
        weights: {len(blob) // 4},
        base64:
{body})
}}
""")
    VECTORS_SWIFT.write_text(f"""// Generated by tools/corpus/train_classifier.py: do not edit; retrain instead.
// Inputs (engine-computed context vectors of the dev set) and the probabilities the training
// script's float32 forward pass gives for them with the shipped model.

enum SoundClassifierVectors {{
    static let inputs: [Float] = [
        {swift_floats(x_vectors)},
    ]
    static let probabilities: [Float] = [
        {swift_floats(p_vectors)},
    ]
}}
""")


def parse_columns(text: str) -> list[int]:
    columns: list[int] = []
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        columns += list(range(int(low), int(high or low) + 1))
    return columns


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", type=Path, default=REPO / ".build/release/activespeaker")
    ap.add_argument("--train", type=Path, required=True, nargs="+", help="classifier set folder(s) to train on")
    ap.add_argument("--dev", type=Path, required=True)
    ap.add_argument("--test", type=Path)
    ap.add_argument("--corpus", type=Path, help="the corpus manifest (sources.json), hashed into the model")
    ap.add_argument("--cache", type=Path, default=REPO / "out/classifier-features")
    ap.add_argument("--out", type=Path, default=REPO / "out/classifier")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--rate", type=float, default=2e-3)
    ap.add_argument("--l2", type=float, default=1e-4)
    ap.add_argument("--drop", default="", help="input columns the model ignores, e.g. 0-15,53 (their weights are 0)")
    ap.add_argument("--hidden", default="32,16", help="hidden layer sizes (the engine runs 32,16)")
    ap.add_argument("--final", action="store_true",
                    help="train on --train and --dev together for exactly --epochs epochs (chosen before on "
                         "--dev) and ship the last epoch; --dev figures are then training figures")
    ap.add_argument("--no-write", action="store_true", help="train and report only; leave the engine's model")
    ap.add_argument("--masked", choices=("ignore", "speech"), default="ignore",
                    help="frames labelled 4 (speech masked by the rest of the mix): left out of training and "
                         "scoring (default), or counted as speech as the energy rule has them")
    args = ap.parse_args()
    global MASKED_AS
    MASKED_AS = args.masked

    started = time.time()
    parts = [load_set(args.binary, folder, args.cache) for folder in args.train]
    x_dev, y_dev, _ = load_set(args.binary, args.dev, args.cache)
    if args.final:
        parts.append((x_dev, y_dev, None))
    x = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    log(f"train: {len(y)} sounding frames {np.bincount(y, minlength=4).tolist()}; "
        f"dev: {len(y_dev)} {np.bincount(y_dev, minlength=4).tolist()}")
    global LAYERS
    LAYERS = [INPUTS] + [int(v) for v in args.hidden.split(",")] + [4]
    dropped = parse_columns(args.drop)
    mean = x.mean(axis=0)
    std = np.maximum(x.std(axis=0), 1e-3)
    # A dropped column reads as its mean: 0 after standardisation, and its weights are zeroed below.
    mean[dropped] = 0
    std[dropped] = np.inf
    params, epoch = train((x - mean) / std, y, (x_dev - mean) / std, y_dev,
                          args.seed, args.epochs, args.batch, args.rate, args.l2, keep_last=args.final)
    params[0][dropped, :] = 0
    params32 = folded(params, mean, std)
    report = {"drop": args.drop, "hidden": args.hidden, "final": args.final, "rate": args.rate, "l2": args.l2,
              "train sets": [str(f) for f in args.train] + ([str(args.dev)] if args.final else []), "seed": args.seed, "epoch": epoch, "train": metrics(forward32(params32, x), y),
              "dev": metrics(forward32(params32, x_dev), y_dev)}
    if args.test:
        x_test, y_test, _ = load_set(args.binary, args.test, args.cache)
        report["test"] = metrics(forward32(params32, x_test), y_test)
    print(json.dumps(report, indent=1))

    digest = hashlib.sha256()
    if args.corpus:
        digest.update(args.corpus.read_bytes())
    for folder in [*args.train, args.dev]:
        for path in sorted(folder.glob("*.labels")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    corpus_hash = "sha256:" + digest.hexdigest()
    shown = "test" if "test" in report else "dev"
    dev = report[shown]
    summary = (f"{shown} sounding frames {dev['frames']}: accuracy {dev['accuracy']}, "
               f"speech recall {dev.get('speech recall at p>=0.5')}, "
               f"music as speech {dev.get('music frames as speech at p>=0.5')}, "
               f"non-speech as speech {dev.get('non-speech frames as speech at p>=0.5')}\n"
               f"seed {args.seed}, epoch {epoch}, train frames {len(y)}"
               + (" (trained on the train and dev sets together)" if args.final else ""))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "metrics.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / "model.json").write_text(json.dumps(
        {"version": MODEL_VERSION, "layers": LAYERS, "corpus": corpus_hash,
         "params": [p.tolist() for p in params32]}) + "\n")
    if not args.no_write:
        rng = np.random.default_rng(args.seed)
        pick = np.sort(rng.choice(len(y_dev), size=24, replace=False))
        write_swift(params32, corpus_hash, summary, x_dev[pick], forward32(params32, x_dev[pick]))
        log(f"wrote {MODEL_SWIFT.relative_to(REPO)} and {VECTORS_SWIFT.relative_to(REPO)}")
    log(f"train_classifier: done in {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
