#!/usr/bin/env bash
# Rebuild the shipped sound classifier from packages, exactly as it was made:
#   1. the real-audio corpus (tools/corpus/make_corpus.py; installs Debian packages, ~1 GB, 1.5 GB of WAV);
#   2. the classifier sets: train (600 + 1,200 mixtures of 30 s, seeds 101 and 102), dev (40, seed 201)
#      and test (40, seed 301) (tools/corpus/make_classifier_set.py);
#   3. activespeaker (release), whose `features` command computes the training inputs;
#   4. tools/corpus/train_classifier.py with the settings chosen on the dev set (input group 0-15 dropped,
#      32-16 hidden units, rate 3e-4, L2 1e-3, 6 epochs: the best dev epoch), trained with --final on
#      train and dev together, reported on test. It rewrites
#      Sources/SpeakerCore/Classifier/SoundClassifierModel.swift and
#      Tests/SpeakerCoreTests/SoundClassifierVectors.swift; rebuild and run the tests after.
# Same package versions and seeds give the same weights (numpy, float64, fixed seed).
#
# Needs: root (apt-get), python3 with numpy and scipy, sox, xmp, opus-tools; about 20 minutes.
# Usage: bash tools/corpus/make_classifier.sh [--no-train]
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"

python3 tools/corpus/make_corpus.py --out corpus-local --max-music-seconds 90
make_set() {
    local split=$1 folder=$2 count=$3 seed=$4
    [ -f "corpus-local/classifier/$folder/manifest.json" ] && return
    python3 tools/corpus/make_classifier_set.py --corpus corpus-local --split "$split" \
        --out "corpus-local/classifier/$folder" --count "$count" --seed "$seed" --duration 30
}
make_set train train 600 101
make_set train train-b 1200 102
make_set dev dev 40 201
make_set test test 40 301
[ "${1:-}" = "--no-train" ] && exit 0

swift build -c release --product activespeaker
python3 tools/corpus/train_classifier.py --final \
    --train corpus-local/classifier/train corpus-local/classifier/train-b \
    --dev corpus-local/classifier/dev --test corpus-local/classifier/test \
    --corpus corpus-local/sources.json --drop 0-15 --hidden 32,16 --rate 3e-4 --l2 1e-3 --epochs 6
