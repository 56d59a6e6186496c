#!/usr/bin/env bash
# Builds one libFuzzer target of the call protocol with AddressSanitizer and runs it:
#   signal  Fuzz/SignalFuzzer.swift, the signalling decoders ClientMessage(json:) and ServerMessage(json:)
#   token   Fuzz/TokenFuzzer.swift, the token verifier AccessToken.verify
#   sdp     Fuzz/SDPFuzzer.swift, a browser's offer (OfferSummary, GStreamer's SDP parser) and candidates
# signal and token are compiled with the CallProtocol sources into one module, linked with libcrypto;
# sdp with CallWebRTC's offer and candidate readers, linked with GStreamer's SDP library.
#
#   tools/network/fuzz_call.sh signal|token|sdp [SECONDS | --runs N]      (default 60 s)
#
# The seeds in Fuzz/corpus-TARGET are read, never written; Fuzz/TARGET.dict is libFuzzer's dictionary
# (JSON syntax and the protocol's names: Foundation's JSON parser is not instrumented, so libFuzzer
# cannot learn them). New inputs go to a scratch corpus under ${FUZZ_DIR:-/tmp/activespeaker-fuzz-call}/TARGET;
# libFuzzer's output goes to TARGET.log there, and the script prints its final status line and
# statistics. A crash leaves crash-* files there, prints the end of the log and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"
usage() { echo "usage: tools/network/fuzz_call.sh signal|token|sdp [SECONDS | --runs N]" >&2; exit 2; }
case "${1:-}" in
  signal) source=Fuzz/SignalFuzzer.swift; module=SignalFuzz ;;
  token) source=Fuzz/TokenFuzzer.swift; module=TokenFuzz ;;
  sdp) source=Fuzz/SDPFuzzer.swift; module=SDPFuzz ;;
  *) usage ;;
esac
target=$1
if [ "${2:-}" = "--runs" ]; then
  [ -n "${3:-}" ] || usage
  limit=(-runs="$3")
else
  limit=(-max_total_time="${2:-60}")
fi
seeds=$PWD/Fuzz/corpus-$target
dict=$PWD/Fuzz/$target.dict
work=${FUZZ_DIR:-/tmp/activespeaker-fuzz-call}/$target
mkdir -p "$work/corpus"
# ld.gold warns about every AddressSanitizer helper symbol ("Cannot export local symbol"); kept in build.log.
if [ "$target" = sdp ]; then
  # CGStreamer's module map names the libraries; the headers come from pkg-config.
  read -ra gst_flags <<<"$(pkg-config --cflags-only-I gstreamer-webrtc-1.0 gstreamer-sdp-1.0 | sed 's/-I/-Xcc -I/g')"
  inputs=(-I Sources/CGStreamer "${gst_flags[@]}" "$source" Sources/CallWebRTC/OfferSummary.swift
    Sources/CallWebRTC/ICECandidateSyntax.swift Sources/CallWebRTC/WebRTCError.swift)
else
  inputs=(-I Sources/CCrypto "$source" Sources/CallProtocol/*.swift -lcrypto)
fi
if ! swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name "$module" \
  "${inputs[@]}" -o "$work/$target-fuzzer" >"$work/build.log" 2>&1; then
  cat "$work/build.log" >&2
  exit 1
fi
grep -v 'Cannot export local symbol' "$work/build.log" || true
commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- Sources Fuzz || echo "+changes")
cd "$work"
# Let libFuzzer report crashes (the Swift runtime's backtracer can stall on a sanitizer-built binary).
export SWIFT_BACKTRACE=enable=no
echo "fuzz_call $target at $commit, $(date -u +%Y-%m-%dT%H:%MZ): ${limit[*]}"
status=0
"./$target-fuzzer" "${limit[@]}" -dict="$dict" -print_final_stats=1 corpus "$seeds" >"$target.log" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  tail -n 60 "$target.log"
  echo "fuzz_call: $target-fuzzer exited with $status; inputs: $(ls -d "$work"/crash-* "$work"/oom-* "$work"/timeout-* 2>/dev/null | tr '\n' ' ')" >&2
  exit "$status"
fi
grep -E '^#[0-9]+[[:space:]]+DONE|^Done |^stat::' "$target.log"
