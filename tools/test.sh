#!/usr/bin/env bash
# Installs what is missing, then builds and runs every test (Swift Testing).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
bash tools/install-deps.sh
swift build --build-tests
swift test --skip-build "$@"
