#!/usr/bin/env bash
# Installs what is missing, then builds and runs every test (Swift Testing).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
bash tools/install-deps.sh
swift build --build-tests
# The load test (10 rooms x 5 clients) runs the release binary: 50 debug clients cannot keep real time.
swift build -c release --product activespeaker
export ACTIVESPEAKER_LOAD_BINARY="$PWD/.build/release/activespeaker"
# Every test runs: one that needs a tool or binary fails here if it is missing, instead of being skipped.
export ACTIVESPEAKER_ALL_TESTS=1
swift test --skip-build "$@"
