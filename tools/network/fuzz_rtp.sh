#!/usr/bin/env bash
# Builds the libFuzzer target for the RTP parser, header extensions and jitter buffer
# (Fuzz/RTPFuzzer.swift) with AddressSanitizer, and runs it.
#
#   tools/network/fuzz_rtp.sh [SECONDS] [JOBS]      (default 60 s, 1 job)
#
# The seeds in Fuzz/corpus are read, never written; new inputs go to a scratch corpus under
# ${FUZZ_DIR:-/tmp/activespeaker-fuzz}. A crash leaves crash-* files there and exits non-zero.
# Prints the executions and the coverage libFuzzer reports.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"
seconds=${1:-60}
jobs=${2:-1}
work=${FUZZ_DIR:-/tmp/activespeaker-fuzz}
mkdir -p "$work/corpus"
# SpeakerBase (AudioLevel, the analysis format) is its own module, as in the package.
swiftc -sanitize=address -parse-as-library -O -module-name SpeakerBase -emit-library -static \
  -emit-module -emit-module-path "$work/SpeakerBase.swiftmodule" Sources/SpeakerBase/*.swift -o "$work/libSpeakerBase.a"
swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name RTPFuzz -I "$work" -L "$work" -lSpeakerBase \
  Fuzz/RTPFuzzer.swift Sources/SpeakerIO/RTP/RTPPacket.swift Sources/SpeakerIO/RTP/RTPJitterBuffer.swift \
  Sources/SpeakerIO/RTP/PlayoutClock.swift \
  -o "$work/rtp-fuzzer"
cd "$work"
# Let libFuzzer report crashes (the Swift runtime's backtracer can stall on a sanitizer-built binary).
export SWIFT_BACKTRACE=enable=no
if [ "$jobs" -gt 1 ]; then
  ./rtp-fuzzer -max_total_time="$seconds" -print_final_stats=1 -jobs="$jobs" -workers="$jobs" \
    corpus "$OLDPWD/Fuzz/corpus"
  tail -n 12 fuzz-*.log
else
  ./rtp-fuzzer -max_total_time="$seconds" -print_final_stats=1 corpus "$OLDPWD/Fuzz/corpus"
fi
