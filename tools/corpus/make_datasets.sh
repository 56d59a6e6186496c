#!/usr/bin/env bash
# Regenerate the local evaluation sets (not committed; datasets-local/ is git-ignored):
#   datasets-local/dev      8 meetings x 45 s, seeds 200-207: tune on these
#   datasets-local/dev2     16 meetings x 45 s, seeds 300-315: tune on these too (more backchannels, music, leaks)
#   datasets-local/heldout  8 meetings x 45 s, seeds 900-907: never tune on these, only report
# Each meeting is a folder as `activespeaker eval` reads it (see docs/evaluation.md).
# Then, unless --no-pyannote is given, fetch the pyannote.audio sample (tools/corpus/fetch_pyannote_sample.sh).
#
# Needs: pip install numpy scipy; apt-get install sox espeak-ng asterisk-core-sounds-en asterisk-core-sounds-en-wav
#        pocketsphinx-testdata. Same package versions give the same meetings (see Fixtures/README.md).
# Usage: bash tools/corpus/make_datasets.sh [--no-pyannote] [OUT]     (OUT defaults to datasets-local/ in the repository)
set -euo pipefail

pyannote=1
if [ "${1:-}" = "--no-pyannote" ]; then
    pyannote=0
    shift
fi
# OUT is taken relative to the current folder; the default lives in the repository.
out=$(realpath -m "${1:-$(dirname "$0")/../../datasets-local}")
cd "$(dirname "$0")/../.."

for tool in python3 sox espeak-ng; do
    command -v "$tool" >/dev/null || { echo "make_datasets: $tool not found" >&2; exit 2; }
done
python3 -c 'import numpy, scipy' 2>/dev/null \
    || { echo "make_datasets: needs numpy and scipy: pip install numpy scipy" >&2; exit 2; }

# Build each set in a scratch folder and move it into place whole, so a failed run leaves the
# previous set as it was.
make_set() {
    local name=$1 seed=$2 count=$3
    local scratch="$out/.$name.partial"
    rm -rf "$scratch"
    mkdir -p "$scratch"
    python3 tools/corpus/make_meetings.py --out "$scratch" --name "$name" --count "$count" --seed "$seed" --duration 45
    python3 tools/evaluation/check_meetings.py "$scratch"/*/
    rm -rf "${out:?}/$name"
    mv "$scratch" "$out/$name"
}

mkdir -p "$out"
make_set dev 200 8
make_set dev2 300 16
make_set heldout 900 8

if [ "$pyannote" = 1 ]; then
    bash tools/corpus/fetch_pyannote_sample.sh "$out/pyannote"
fi
echo "make_datasets: wrote $out/dev, $out/dev2, $out/heldout$([ "$pyannote" = 1 ] && echo ", $out/pyannote")"
