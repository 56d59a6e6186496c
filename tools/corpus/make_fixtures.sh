#!/usr/bin/env bash
# Regenerate everything in Fixtures/ from fixed seeds, check it, and check its size.
#
# Needs: pip install numpy scipy; apt-get install sox espeak-ng opus-tools
#        asterisk-core-sounds-en-wav pocketsphinx-testdata
# Output is identical run to run on the same package versions (see Fixtures/README.md).
set -euo pipefail
cd "$(dirname "$0")/../.."

for tool in python3 sox espeak-ng opusenc; do
    command -v "$tool" >/dev/null || { echo "make_fixtures: $tool not found" >&2; exit 2; }
done
python3 -c 'import numpy, scipy' 2>/dev/null \
    || { echo "make_fixtures: needs numpy and scipy: pip install numpy scipy" >&2; exit 2; }

meetings=Fixtures/meetings
python3 tools/corpus/make_meetings.py --out "$meetings" --name m1-clean --seed 18 --duration 25 --participants 3 --profile clean
python3 tools/corpus/make_meetings.py --out "$meetings" --name m2-noisy --seed 9 --duration 25 --participants 4 --profile noisy
python3 tools/corpus/make_meetings.py --out "$meetings" --name m3-music --seed 14 --duration 20 --participants 2 --profile music

python3 tools/corpus/make_format_fixtures.py --out Fixtures/formats

python3 tools/evaluation/check_meetings.py "$meetings"/m1-clean "$meetings"/m2-noisy "$meetings"/m3-music

limit=5000000
size=$(du -sb Fixtures | cut -f1)
echo "Fixtures/ holds $size bytes (limit $limit)"
if [ "$size" -gt "$limit" ]; then
    echo "make_fixtures: Fixtures/ is larger than $limit bytes" >&2
    exit 1
fi
