#!/usr/bin/env bash
# Reproduce every figure of docs/evaluation.md in one go:
#   1. build activespeaker (release);
#   2. make the dev and held-out sets and fetch the pyannote sample, if they are not there yet
#      (tools/corpus/make_datasets.sh, tools/corpus/fetch_pyannote_sample.sh), and the real-audio corpus and its
#      dev and test meetings (tools/corpus/make_corpus.py, tools/corpus/make_real_meetings.py);
#   3. run WebRTC VAD (8 settings), Silero VAD in three forms (raw 0.5 per window; its streaming
#      VADIterator, causal; its offline get_speech_timestamps, with look-ahead) and TEN VAD on every
#      meeting and score them, the engine and the four baseline floor policies with
#      `activespeaker eval` (tools/evaluation/compare_vads.py);
#   4. write the plain eval tables, one SVG timeline per meeting, and the engine's VAD error breakdown;
#   5. score the real-audio meetings by condition (tools/evaluation/condition_tables.py): music alone on a mic,
#      speech under music, other sounds, languages, microphones alone or in one room; the three Silero
#      forms, TEN VAD and WebRTC VAD's default and mode 3 (10 ms) beside ours.
# Output goes to OUT (default out/evaluation, git-ignored): tables.md (the comparison tables),
# conditions.md (the real-audio tables by condition),
# reports.json (every eval report), <set>.txt (eval tables), plots/<set>/*.svg, breakdown-<set>.txt.
#
# Needs: Swift 6, python3 with numpy and scipy, sox, espeak-ng, unzip, xmp, opus-tools, root (the
#   corpus script apt-gets its packages, about 1 GB, once), libc++1 (TEN VAD's prebuilt library), and
#   pip install webrtcvad-wheels onnxruntime ten-vad && pip install --no-deps silero-vad
# It stops before building if one of those Python modules is missing or TEN VAD's library does not load.
# Usage: bash tools/evaluation/run_evaluation.sh [OUT]
set -euo pipefail

# OUT is taken relative to the current folder; the default lives in the repository.
out=$(realpath -m "${1:-$(dirname "$0")/../../out/evaluation}")
cd "$(dirname "$0")/../.."
python3 - <<'PY' || exit 1
import importlib.util, sys
missing = [pip for module, pip in [("numpy", "numpy"), ("scipy", "scipy"), ("webrtcvad", "webrtcvad-wheels"),
                                   ("onnxruntime", "onnxruntime"), ("ten_vad", "ten-vad"),
                                   ("silero_vad", "--no-deps silero-vad")]
           if importlib.util.find_spec(module) is None]
if missing:
    sys.exit("run_evaluation: missing Python packages: " + "; ".join(f"pip install {m}" for m in missing))
try:
    import ten_vad
    ten_vad.TenVad()
except OSError as error:
    sys.exit(f"run_evaluation: TEN VAD's library does not load ({error}): apt-get install -y libc++1")
PY
scratch=${SCRATCH_PATH:-.build}
swift build -c release --product activespeaker --scratch-path "$scratch"
binary="$scratch/release/activespeaker"

if [ ! -d datasets-local/dev ] || [ ! -d datasets-local/dev2 ] || [ ! -d datasets-local/heldout ]; then
    bash tools/corpus/make_datasets.sh --no-pyannote
fi
[ -d datasets-local/pyannote ] || bash tools/corpus/fetch_pyannote_sample.sh datasets-local/pyannote
[ -f corpus-local/sources.json ] || python3 tools/corpus/make_corpus.py --out corpus-local
[ -d datasets-local/real-dev ] || python3 tools/corpus/make_real_meetings.py --corpus corpus-local --split dev \
    --out datasets-local/real-dev --count 12 --seed 1000
[ -d datasets-local/real-test ] || python3 tools/corpus/make_real_meetings.py --corpus corpus-local --split test \
    --out datasets-local/real-test --count 16 --seed 2000

sets=(datasets-local/real-dev datasets-local/real-test Fixtures/meetings datasets-local/dev datasets-local/dev2
      datasets-local/heldout datasets-local/pyannote)
mkdir -p "$out"
python3 tools/evaluation/compare_vads.py --binary "$binary" --work "$out/systems" --json "$out/reports.json" \
    --markdown "$out/tables.md" "${sets[@]}"
for set in "${sets[@]}"; do
    name=$(basename "$set")
    "$binary" eval --policies hysteresis,volfin-cohen,livekit,chime,loudest --per-stream \
        --plots "$out/plots/$name" "$set" > "$out/$name.txt"
done
for set in Fixtures/meetings datasets-local/dev datasets-local/dev2 datasets-local/heldout; do
    python3 tools/evaluation/vad_error_breakdown.py --binary "$binary" "$set" > "$out/breakdown-$(basename "$set").txt"
done
python3 tools/evaluation/condition_tables.py --binary "$binary" --systems "$out/systems" --markdown "$out/conditions.md" \
    datasets-local/real-dev datasets-local/real-test
echo "run_evaluation: wrote $out/tables.md, $out/conditions.md, $out/reports.json, $out/*.txt and $out/plots/"
