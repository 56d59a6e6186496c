#!/usr/bin/env bash
# Counts instructions of benchmark scenario 1 with callgrind and lists where they go.
#
#   bash tools/benchmarks/profile_benchmark.sh [STREAMS] [TOP] [BENCHMARK OPTIONS...]
#
# Builds the Benchmarks executable in release mode with debug info (-g) into its own scratch
# directory, runs scenario 1 for STREAMS streams (default 64; one --quick run) under
# valgrind --tool=callgrind collecting only inside the measured loop (EngineLoad.measure), then
# prints the TOP (default 30) functions by exclusive instructions (Swift names demangled), the
# instructions per stream-frame, and the share of each library. Options after TOP go to the benchmark,
# e.g. `--config vad.restingInterval=1`. Instruction counts are exact and
# repeatable, unlike times on a shared machine. Needs valgrind (apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/opt/swift/usr/bin:$PATH"
streams="${1:-64}"
top="${2:-30}"
shift $(( $# < 2 ? $# : 2 ))
scratch="${PROFILE_SCRATCH:-/tmp/activespeaker-profile-build}"
out="${PROFILE_OUT:-/tmp/activespeaker-callgrind.out}"

if ! swift build -c release --scratch-path "$scratch" --product Benchmarks -Xswiftc -g >"$out.build.log" 2>&1; then
    cat "$out.build.log" >&2
    exit 1
fi
binary="$(swift build -c release --scratch-path "$scratch" --product Benchmarks --show-bin-path)/Benchmarks"
json="$(mktemp)"
trap 'rm -f "$json"' EXIT

valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*EngineLoadV7measure*' \
    --callgrind-out-file="$out" \
    "$binary" --scenario 1 --streams "$streams" --runs 1 --quick --json "$json" "$@" >/dev/null 2>"$out.log"

callgrind_annotate --auto=no --threshold=100 "$out" 2>/dev/null | swift-demangle --simplified > "$out.txt"
# Ticks collected: the call count of Engine.tick() (or of Engine.work(worker:), which the optimiser may
# leave as tick's only trace: one call per tick with one worker and one phase) where it calls the bulk of the work. (Counted rather
# than taken from the run's parameters: callgrind also collects the warm-up ticks here.)
ticks="$(callgrind_annotate --auto=no --tree=caller "$out" 2>/dev/null | swift-demangle --simplified | python3 -c '
import re, sys
best = (0, 0)
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+) \(.*< .*Engine\.(?:tick\(\)|work\(worker:\)) \(([\d,]+)x\)", line)
    if m:
        best = max(best, (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", ""))))
print(best[1])')"
if [ "$ticks" = "0" ]; then echo "could not count Engine.tick() or Engine.work(worker:) calls in $out" >&2; exit 1; fi

callgrind_annotate --auto=no --inclusive=yes --threshold=100 "$out" 2>/dev/null | swift-demangle --simplified > "$out.inclusive.txt"

python3 - "$out.txt" "$streams" "$ticks" "$top" "$out.inclusive.txt" <<'EOF'
import re, sys
path, streams, ticks, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rows, total = [], None
for line in open(path):
    m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$", line)
    if not m:
        continue
    count = int(m.group(1).replace(",", ""))
    if m.group(2).startswith("PROGRAM TOTALS"):
        total = count
    else:
        rows.append((count, m.group(2)))
frames = streams * ticks

def split(name):
    """'file:function [object]' -> (file:function, object base name); callgrind leaves out the object
    of lines attributed to inlined code of the benchmark binary itself."""
    if name.endswith("]") and " [" in name:
        location, _, library = name.rpartition(" [")
        return location, library.rstrip("]").rsplit("/", 1)[-1]
    return name, "Benchmarks"

print(f"callgrind: scenario 1, {streams} streams x {ticks:,} ticks (warm-up included) = {frames:,} stream-frames, "
      f"{total:,} instructions = {total / frames:,.0f} per stream-frame")
print()
print(f"{'instructions':>14}  {'%':>5}  {'per frame':>9}  function")
for count, name in sorted(rows, reverse=True)[:top]:
    location, library = split(name)
    print(f"{count:>14,}  {100 * count / total:5.1f}  {count / frames:9,.0f}  {location[:110]}  ({library})")
groups = {}
for count, name in rows:
    library = split(name)[1]
    groups[library] = groups.get(library, 0) + count
# Stages, inclusive of what they call (a function inlined into its caller is counted there).
stages = [
    ("Engine.tick (all per-tick work)", r"Engine\.swift:Engine\.(tick\(\)|work\(worker:\)) \["),
    ("  per-stream analysis (Engine.analyze)", r"Engine\.swift:Engine\.analyze\("),
    ("    features (SpectralAnalyzer.analyze: cascade, energies, spectrum)", r"SpectralAnalyzer\.swift:SpectralAnalyzer\.analyze\(hop:"),
    ("      spectral stage (SpectralAnalyzer.analyzeSpectrum)", r"SpectralAnalyzer\.analyzeSpectrum\("),
    ("      512-point real FFT (fftwf_execute_dft_r2c)", r":fftwf_execute_dft_r2c \["),
    ("      256-point inverse FFT (fftwf_execute_dft_c2r)", r":fftwf_execute_dft_c2r \["),
    ("      periodicity (SpectralAnalyzer.periodicity)", r"SpectralAnalyzer\.periodicity\(noise:\) \["),
    ("      noise tracker (NoiseTracker.update)", r"NoiseTracker\.update\(power:frames:\) \["),
    ("    evidence (SpeechEvidence.judge)", r"SpeechEvidence\.judge\("),
    ("      sound context (SoundContext.update)", r"SoundContext\.update\("),
    ("      sound classifier (SoundClassifier.classify)", r"SoundClassifier\.classify\("),
    ("  rooms: leakage, utterances, floor (RoomDecision.decide)", r"RoomDecision\.decide\(frame:"),
    ("Engine.submit (copying hops in)", r"Engine\.swift:Engine\.submit\("),
    ("Swift exclusivity checks (swift_beginAccess)", r":swift_beginAccess \["),
    ("Swift exclusivity checks (swift_endAccess)", r":swift_endAccess \["),
    ("reference counting (swift_retain + swift_release)", r":swift_(retain|release) \["),
]
inclusive = []
for line in open(sys.argv[5]):
    m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$", line)
    if m:
        inclusive.append((int(m.group(1).replace(",", "")), m.group(2)))
print()
print("stages (inclusive):")
for label, pattern in stages:
    found = [count for count, name in inclusive if re.search(pattern, name)]
    if found:
        count = sum(found) if "retain|release" in pattern else max(found)
        print(f"  {100 * count / total:5.1f} %  {count / frames:7,.0f} per frame  {label}")
print()
print("by object:")
for library, count in sorted(groups.items(), key=lambda item: -item[1]):
    print(f"  {100 * count / total:5.1f} %  {library}")
EOF
echo
echo "full listing: $out.txt; callgrind data: $out (callgrind_annotate, kcachegrind)"
