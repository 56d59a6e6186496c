#!/usr/bin/env bash
# Fetch the labelled two-speaker sample shipped inside the pyannote.audio wheel (PyPI, MIT licence)
# and turn it into two evaluation meetings (see tools/corpus/make_pyannote_meetings.py):
#   OUT/sample        the 30 s recording, one mixed channel, speech = union of both speakers
#   OUT/sample-music  the same with hold music mixed in at 10 dB SNR
# plus OUT/LICENSE.pyannote-audio (the wheel's licence) and OUT/PROVENANCE.
#
# Needs: pip (with access to PyPI), unzip, python3 with numpy and scipy.
# Usage: bash tools/corpus/fetch_pyannote_sample.sh [OUT]      (OUT defaults to datasets-local/pyannote)
set -euo pipefail

# OUT is taken relative to the current folder; the default lives in the repository.
out=$(realpath -m "${1:-$(dirname "$0")/../../datasets-local/pyannote}")
cd "$(dirname "$0")/../.."
version=4.0.7
wav_sha256=c319b4abca767b124e41432d364fd7df006cb26bb79d09326c487d606a134e6e
rttm_sha256=d78fe62c69d8e6dcbb42c26adfce83faccb374c5a1e6d987fe37f85f1c173c87

for tool in pip unzip python3 sha256sum; do
    command -v "$tool" >/dev/null || { echo "fetch_pyannote_sample: $tool not found" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The wheel only; none of its dependencies are needed (nothing is imported).
pip download --quiet --no-deps "pyannote.audio==$version" -d "$work"
wheel=$(ls "$work"/pyannote_audio-"$version"-*.whl)
unzip -q -o "$wheel" 'pyannote/audio/sample/sample.wav' 'pyannote/audio/sample/sample.rttm' \
    "pyannote_audio-$version.dist-info/licenses/LICENSE" -d "$work/x"
sample="$work/x/pyannote/audio/sample"
echo "$wav_sha256  $sample/sample.wav" | sha256sum --check --quiet
echo "$rttm_sha256  $sample/sample.rttm" | sha256sum --check --quiet

# Build in a scratch folder and move into place whole.
scratch="$out.partial"
rm -rf "$scratch"
mkdir -p "$scratch"
python3 tools/corpus/make_pyannote_meetings.py --wav "$sample/sample.wav" --rttm "$sample/sample.rttm" --out "$scratch"
cp "$work/x/pyannote_audio-$version.dist-info/licenses/LICENSE" "$scratch/LICENSE.pyannote-audio"
cat > "$scratch/PROVENANCE" <<TEXT
pyannote.audio $version wheel from PyPI ($(basename "$wheel"), sha256 $(sha256sum "$wheel" | cut -d' ' -f1)):
  pyannote/audio/sample/sample.wav   sha256 $wav_sha256
  pyannote/audio/sample/sample.rttm  sha256 $rttm_sha256
Licence: MIT (LICENSE.pyannote-audio, copied from the wheel). Made by tools/corpus/fetch_pyannote_sample.sh.
TEXT
rm -rf "$out"
mv "$scratch" "$out"
echo "fetch_pyannote_sample: wrote $out/sample and $out/sample-music"
