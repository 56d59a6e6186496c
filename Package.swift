// swift-tools-version:6.0
import PackageDescription

/// ActiveSpeaker: who is speaking, for many concurrent audio streams.
///
/// Dependencies point one way:
/// `activespeaker` (CLI) → SpeakerIO, SpeakerEval, SpeakerCore; SpeakerEval → SpeakerCore → CFFTW.
/// SpeakerIO delivers samples and needs nothing from the engine.
/// Only SpeakerIO imports the I/O C libraries (sndfile, opus, alsa, soxr).
let package = Package(
    name: "ActiveSpeaker",
    products: [
        .library(name: "SpeakerCore", targets: ["SpeakerCore"]),
        .library(name: "SpeakerIO", targets: ["SpeakerIO"]),
        .library(name: "SpeakerEval", targets: ["SpeakerEval"]),
        .executable(name: "activespeaker", targets: ["activespeaker"]),
    ],
    targets: [
        // C libraries from Debian, found with pkg-config.
        .systemLibrary(name: "CFFTW", pkgConfig: "fftw3f", providers: [.apt(["libfftw3-dev"])]),
        .systemLibrary(name: "CSndFile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CSoxr", pkgConfig: "soxr", providers: [.apt(["libsoxr-dev"])]),

        // The analysis engine: frames, SIMD kernels, FFT features, VAD, dominant-speaker selection. No I/O.
        .target(name: "SpeakerCore", dependencies: ["CFFTW"]),
        // Audio sources: files, Opus packets, resampling.
        .target(name: "SpeakerIO", dependencies: ["CSndFile", "COpus", "CALSA", "CSoxr"]),
        // Labelled references (RTTM), metrics.
        .target(name: "SpeakerEval", dependencies: ["SpeakerCore"]),
        // The command-line tool.
        .executableTarget(name: "activespeaker", dependencies: ["SpeakerCore", "SpeakerIO", "SpeakerEval"]),
        // Throughput benchmarks (release builds only): `swift run -c release Benchmarks --help`.
        .executableTarget(name: "Benchmarks", dependencies: ["SpeakerCore", "SpeakerIO"], path: "Benchmarks"),

        // Test-only: counts heap allocations per thread, to prove the hot path allocates nothing.
        .target(name: "CAllocationCounter", path: "Tests/CAllocationCounter"),
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "SpeakerCoreTests", dependencies: ["SpeakerCore", "TestSupport", "CAllocationCounter"]),
        .testTarget(name: "SpeakerIOTests", dependencies: ["SpeakerIO", "TestSupport", "CAllocationCounter"]),
        .testTarget(name: "SpeakerEvalTests", dependencies: ["SpeakerEval", "SpeakerIO", "TestSupport"]),
        .testTarget(name: "activespeakerTests", dependencies: ["SpeakerEval", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
