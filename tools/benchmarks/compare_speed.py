#!/usr/bin/env python3
"""Speed of ActiveSpeaker's analysis beside WebRTC VAD and Silero VAD, on one core, in one run.

Runs over the same audio (the fixture meeting tracks, Fixtures/meetings/*/*.flac, 16 kHz mono):
  * WebRTC VAD (PyPI webrtcvad-wheels): 10 ms and 30 ms frames, modes 2 and 0, 16-bit PCM;
  * Silero VAD: the ONNX model shipped inside the silero-vad wheel, run with onnxruntime directly
    (no torch), one thread, 512-sample windows with the 64-sample context and the state carried,
    as silero-vad's own OnnxWrapper does;
  * ours: scenario 1 of the Benchmarks executable (full analysis: features + VAD + selection) for one
    stream and for 1,024 streams in rooms of 5.
and prints audio-seconds per CPU-second (x real time per core) of each, with our figures divided by theirs.

CPU time is process CPU time (time.process_time here, CLOCK_PROCESS_CPUTIME_ID in the benchmark), so
a noisy neighbour costs wall time but hardly CPU time. Python's call overhead is part of the
WebRTC VAD figures (one is_speech call per frame, frames sliced before timing), as it is for anyone
using it from Python.

Usage:
  python3 tools/benchmarks/compare_speed.py [--quick] [--runs N] [--json out.json] [--markdown out.md]
                                 [--benchmark PATH | --scratch-path DIR]
Needs: pip install webrtcvad-wheels silero-vad onnxruntime numpy; sox; the Swift toolchain (or
--benchmark pointing at a release build of the Benchmarks executable).
"""

import argparse
import glob
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RATE = 16000


def load_tracks(fixtures):
    """Every meeting track as 16 kHz mono int16 (decoded by sox)."""
    paths = sorted(glob.glob(os.path.join(fixtures, "*", "*.flac")))
    if not paths:
        sys.exit(f"compare_speed: no .flac files under {fixtures}")
    tracks = []
    for path in paths:
        raw = subprocess.run(
            ["sox", path, "-t", "raw", "-r", str(RATE), "-c", "1", "-e", "signed-integer", "-b", "16", "-"],
            check=True, capture_output=True).stdout
        tracks.append(np.frombuffer(raw, dtype="<i2").copy())
    return paths, tracks


def measure(work, seconds_of_audio, runs, minimum_seconds):
    """Runs `work(passes)` `runs` times, with passes chosen so a run takes >= minimum_seconds of CPU.

    Returns the x-real-time figures (audio-seconds per CPU-second) of the runs and the passes per run."""
    start = time.process_time()
    work(1)  # warm-up and calibration
    once = max(time.process_time() - start, 1e-6)
    passes = max(1, int(minimum_seconds / once + 0.999))
    factors = []
    for _ in range(runs):
        start = time.process_time()
        work(passes)
        cpu = time.process_time() - start
        factors.append(seconds_of_audio * passes / cpu)
    return factors, passes


def webrtc_rows(tracks, runs, minimum_seconds):
    import webrtcvad

    rows = []
    for frame_ms in (10, 30):
        size = RATE * frame_ms // 1000
        frames = [
            track[at:at + size].tobytes()
            for track in tracks for at in range(0, len(track) - size + 1, size)
        ]
        covered = len(frames) * size / RATE
        for mode in (2, 0):
            vad = webrtcvad.Vad(mode)
            speech = [0]

            def work(passes, vad=vad, frames=frames, speech=speech):
                count = 0
                is_speech = vad.is_speech
                for _ in range(passes):
                    for frame in frames:
                        count += is_speech(frame, RATE)
                speech[0] = count / (passes * len(frames))

            factors, passes = measure(work, covered, runs, minimum_seconds)
            rows.append({
                "system": "WebRTC VAD", "setting": f"mode {mode}, {frame_ms} ms frames",
                "frameMilliseconds": frame_ms, "mode": mode, "factors": factors, "passes": passes,
                "speechFraction": speech[0],
            })
    return rows


def silero_model_path():
    """The ONNX model inside the installed silero-vad wheel, found without importing the package (torch)."""
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("compare_speed: silero-vad is not installed (pip install silero-vad onnxruntime)")
    path = os.path.join(list(spec.submodule_search_locations)[0], "data", "silero_vad.onnx")
    if not os.path.exists(path):
        sys.exit(f"compare_speed: {path} not found in the silero-vad wheel")
    return path


def silero_rows(tracks, runs, minimum_seconds):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    path = silero_model_path()
    session = onnxruntime.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
    window, context_size = 512, 64
    # Float32 in [-1, 1), cut into 512-sample windows per track (the tail shorter than a window is dropped).
    prepared = []
    for track in tracks:
        samples = track.astype(np.float32) / 32768.0
        count = len(samples) // window
        prepared.append(samples[:count * window].reshape(count, window))
    covered = sum(len(windows) for windows in prepared) * window / RATE
    sample_rate = np.array(RATE, dtype=np.int64)
    speech = [0.0]

    def work(passes):
        above = total = 0
        run = session.run
        for _ in range(passes):
            for windows in prepared:
                state = np.zeros((2, 1, 128), dtype=np.float32)
                context = np.zeros((1, context_size), dtype=np.float32)
                for chunk in windows:
                    x = np.concatenate([context, chunk[np.newaxis, :]], axis=1)
                    probability, state = run(None, {"input": x, "state": state, "sr": sample_rate})
                    context = x[:, -context_size:]
                    above += probability[0, 0] > 0.5
                    total += 1
        speech[0] = above / total

    factors, passes = measure(work, covered, runs, minimum_seconds)
    return [{
        "system": "Silero VAD", "setting": f"onnxruntime {onnxruntime.__version__}, 1 thread, 512 samples",
        "model": os.path.basename(path), "factors": factors, "passes": passes, "speechFraction": speech[0],
    }]


def benchmark_executable(args):
    if args.benchmark:
        return args.benchmark
    swift = shutil.which("swift") or "/opt/swift/usr/bin/swift"
    command = [swift, "build", "-c", "release", "--product", "Benchmarks"]
    if args.scratch_path:
        command += ["--scratch-path", args.scratch_path]
    print("building:", " ".join(command), flush=True)
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    binary_dir = subprocess.run(command + ["--show-bin-path"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout.strip()
    return os.path.join(binary_dir, "Benchmarks")


def our_rows(args, runs):
    executable = benchmark_executable(args)
    with tempfile.TemporaryDirectory() as directory:
        output = os.path.join(directory, "ours.json")
        command = [executable, "--scenario", "1", "--streams", "1,1024", "--runs", str(runs), "--json", output]
        if args.quick:
            command.append("--quick")
        print("running:", " ".join(command), flush=True)
        completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if completed.returncode != 0:
            sys.exit(f"compare_speed: the benchmark failed:\n{completed.stdout}\n{completed.stderr}")
        with open(output) as file:
            report = json.load(file)
    scenario = report["scenarios"][0]
    rows = []
    for row in scenario["rows"]:
        metric = row["metrics"]["realTimePerCoreCPU"]
        streams = row["parameters"]["streams"]
        rows.append({
            "system": "ActiveSpeaker", "setting": f"{streams:,} streams, rooms of 5" if streams > 1 else "1 stream",
            "streams": streams, "median": metric["median"], "min": metric["min"], "max": metric["max"],
            "nanosecondsPerStreamFrame": row["metrics"]["nanosecondsPerStreamFrame"]["median"],
        })
    return rows, report["machine"], scenario.get("checksum")


def number(value):
    return f"{value:,.0f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter runs")
    parser.add_argument("--runs", type=int, help="measured runs per system (default 5, 3 with --quick)")
    parser.add_argument("--fixtures", default=os.path.join(ROOT, "Fixtures", "meetings"))
    parser.add_argument("--benchmark", help="a release build of the Benchmarks executable")
    parser.add_argument("--scratch-path", help="passed to swift build when building the benchmark")
    parser.add_argument("--json", help="write all figures here")
    parser.add_argument("--markdown", help="write the comparison table here (Markdown)")
    args = parser.parse_args()
    runs = args.runs or (3 if args.quick else 5)
    minimum_seconds = 0.3 if args.quick else 1.0

    paths, tracks = load_tracks(args.fixtures)
    audio_seconds = sum(len(track) for track in tracks) / RATE
    print(f"audio: {len(paths)} fixture tracks, {audio_seconds:.0f} s, 16 kHz; runs: {runs}", flush=True)

    others = webrtc_rows(tracks, runs, minimum_seconds)
    others += silero_rows(tracks, runs, minimum_seconds)
    for row in others:
        row["median"] = statistics.median(row["factors"])
        row["min"], row["max"] = min(row["factors"]), max(row["factors"])
    ours, machine, checksum = our_rows(args, runs)

    header = ["system", "setting", "x real time/core (CPU)", "speech %"] + [
        f"ours@{row['streams']} / this" for row in ours]
    table = []
    for row in ours + others:
        spread = f"{number(row['median'])} [{number(row['min'])}-{number(row['max'])}]"
        speech = f"{100 * row['speechFraction']:.0f}" if "speechFraction" in row else ""
        ratios = ["" if row["system"] == "ActiveSpeaker" else f"{our['median'] / row['median']:.2f}x" for our in ours]
        table.append([row["system"], row["setting"], spread, speech] + ratios)

    widths = [max(len(str(line[i])) for line in [header] + table) for i in range(len(header))]
    print()
    print(f"machine: {machine['cpu']}, {machine['logicalCores']} logical cores; {machine['date']}; "
          f"build {machine['build']}; Python {platform.python_version()}")
    print("  ".join(header[i].ljust(widths[i]) if i < 2 else header[i].rjust(widths[i]) for i in range(len(header))))
    print("  ".join("-" * width for width in widths))
    for line in table:
        print("  ".join(line[i].ljust(widths[i]) if i < 2 else line[i].rjust(widths[i]) for i in range(len(line))))
    print(f"median [min-max] of {runs} runs; one core; ours: checksum {checksum}")

    if args.markdown:
        with open(args.markdown, "w") as file:
            file.write("| " + " | ".join(header) + " |\n")
            file.write("|" + "|".join(["---"] * 2 + ["---:"] * (len(header) - 2)) + "|\n")
            for line in table:
                file.write("| " + " | ".join(line) + " |\n")
    if args.json:
        with open(args.json, "w") as file:
            json.dump({"machine": machine, "python": platform.python_version(), "runs": runs,
                       "audioSeconds": audio_seconds, "ours": ours, "others": others}, file, indent=2)


if __name__ == "__main__":
    main()
