#!/usr/bin/env bash
# Quick start: install what is missing, build in release mode, and run `activespeaker detect` on a
# bundled three-person meeting. Prints the JSON Lines events, then a talk-time summary.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
bash tools/install-deps.sh
swift build -c release --product activespeaker 2>&1 | tail -n 1 >&2
.build/release/activespeaker detect --summary Fixtures/meetings/m1-clean/*.flac
