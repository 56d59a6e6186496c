// swift-tools-version:6.0
import PackageDescription

/// ActiveSpeaker: who is speaking, for many concurrent audio streams.
///
/// Dependencies point one way:
/// `activespeaker` (CLI) → the audio edge, SpeakerEval, SpeakerCore; SpeakerEval → SpeakerCore → CFFTW, CPrefetch (a header).
/// The audio edge is one module per thing it talks to, each needing nothing from the engine: SpeakerFiles (sndfile),
/// SpeakerDevices (alsa), SpeakerRTP (sockets) → SpeakerOpus (opus); all → SpeakerIO (soxr; the shared error type,
/// microphone protocol and scheduling). Each C library is imported by one module, with `internal import`.
/// The call layer sits on top: CallServer, CallClient → CallTransport (libwebsockets, TLS by OpenSSL), CallProtocol
/// (tokens via OpenSSL's libcrypto), SpeakerCore and the audio edge (the server: SpeakerRTP and SpeakerOpus only, so it
/// links neither ALSA nor libsndfile). See docs/call.md.
/// Redis (a hiredis wrapper for the room server's multi-node mode, `serve --redis`) → CRedis; CallServer → Redis;
/// nothing else imports CRedis.
/// CallWebRTC (one browser's WebRTC peer connection on GStreamer's webrtcbin, docs/webrtc.md) → CGStreamer;
/// nothing else imports CGStreamer, and CallWebRTC depends on no other call module. CallServer → CallWebRTC: browsers
/// join rooms over WebRTC (`offer`), their packets relayed into the media loop.
let package = Package(
    name: "ActiveSpeaker",
    products: [
        .library(name: "SpeakerCore", targets: ["SpeakerCore"]),
        .library(name: "SpeakerIO", targets: ["SpeakerIO"]),
        .library(name: "SpeakerOpus", targets: ["SpeakerOpus"]),
        .library(name: "SpeakerRTP", targets: ["SpeakerRTP"]),
        .library(name: "SpeakerFiles", targets: ["SpeakerFiles"]),
        .library(name: "SpeakerDevices", targets: ["SpeakerDevices"]),
        .library(name: "SpeakerEval", targets: ["SpeakerEval"]),
        .library(name: "CallClient", targets: ["CallClient"]),
        // No product reaches GStreamer: a dependent package's build plans every product of its dependencies,
        // used or not, and GStreamer's pkg-config flags carry `-pthread`, which SwiftPM then warns about in
        // every build of an app that uses only the SDK. So the room server (CallServer, which reaches
        // GStreamer through CallWebRTC) is not a library product, and the CLI is this package's executable
        // without an explicit product (`swift build --product activespeaker` and `swift run activespeaker`
        // work here as before).
    ],
    targets: [
        // C libraries from Debian, found with pkg-config.
        .systemLibrary(name: "CFFTW", pkgConfig: "fftw3f", providers: [.apt(["libfftw3-dev"])]),
        // The compiler's cache prefetch hint (a header only, no library).
        .systemLibrary(name: "CPrefetch"),
        .systemLibrary(name: "CSndFile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CSoxr", pkgConfig: "soxr", providers: [.apt(["libsoxr-dev"])]),
        .systemLibrary(name: "CWebSockets", pkgConfig: "libwebsockets", providers: [.apt(["libwebsockets-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // Without pkg-config: hiredis.pc adds -D_FILE_OFFSET_BITS=64, which SwiftPM prohibits and warns about in
        // every build (and every dependent package's); the shim includes <hiredis/hiredis.h>, whose own
        // includes are relative, and the module map links hiredis.
        .systemLibrary(name: "CRedis", providers: [.apt(["libhiredis-dev"])]),
        .systemLibrary(
            name: "CGStreamer", pkgConfig: "gstreamer-webrtc-1.0",
            providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev", "libgstreamer-plugins-bad1.0-dev"])]),

        // The analysis engine: frames, SIMD kernels, FFT features, VAD, dominant-speaker selection. No I/O.
        // The analysis format (16 kHz, 10 ms hops), signal levels (dBFS, RFC 6464) and the mean-square kernel,
        // shared by the engine and the audio edge.
        .target(name: "SpeakerBase"),
        .target(name: "SpeakerCore", dependencies: ["SpeakerBase", "CFFTW", "CPrefetch"]),
        // The audio edge, one module per thing it talks to. SpeakerIO is what they share: the one error type,
        // the microphone protocol and its clocks, media-thread scheduling, resampling (libsoxr).
        .target(name: "SpeakerIO", dependencies: ["SpeakerBase", "CSoxr"]),
        // Opus packets in and out (libopus), and Ogg Opus recordings written page by page.
        .target(name: "SpeakerOpus", dependencies: ["SpeakerIO", "COpus"]),
        // UDP sockets, RTP/RTCP packets, jitter buffers, playout clocks, RTP senders.
        .target(name: "SpeakerRTP", dependencies: ["SpeakerIO", "SpeakerOpus"]),
        // The media plane: rooms of RTP streams on the engine, paced by a 10 ms clock (`listen`, the server).
        .target(name: "SpeakerMedia", dependencies: ["SpeakerCore", "SpeakerRTP"]),
        // Audio files (libsndfile): reading whole or streamed, writing, file-backed microphones.
        .target(name: "SpeakerFiles", dependencies: ["SpeakerIO", "CSndFile"]),
        // Sound devices (ALSA): capture, device lists and hot-plug, microphones, playback and its mixer.
        .target(name: "SpeakerDevices", dependencies: ["SpeakerIO", "CALSA"]),
        // Labelled references and metrics, RTTM (which call recordings write too), the baseline floor policies.
        .target(name: "SpeakerEval", dependencies: ["SpeakerCore"]),
        // JSON and dotted key=value overrides of the engine's settings, for the CLI and the benchmark.
        .target(name: "ConfigurationOverrides", dependencies: ["SpeakerCore"]),
        // The call layer (docs/call.md): tokens and signalling messages; HTTP/WebSocket transport;
        // the room server; the client SDK.
        .target(name: "CallProtocol", dependencies: ["CCrypto"]),
        .target(name: "CallTransport", dependencies: ["CWebSockets"]),
        .target(
            name: "CallServer",
            dependencies: [
                "CallProtocol", "CallTransport", "CallWebRTC", "Redis", "SpeakerCore", "SpeakerEval", "SpeakerIO", "SpeakerOpus",
                "SpeakerRTP", "SpeakerMedia",
            ]),
        .target(
            name: "CallClient",
            dependencies: ["CallProtocol", "CallTransport", "SpeakerCore", "SpeakerIO", "SpeakerRTP", "SpeakerFiles", "SpeakerDevices"]),
        // Better speaker events for the SFUs people already run (docs/sidecar.md): Janus's publishers forwarded
        // to the room server, kept in step with Janus through its API and event handler.
        .target(name: "SFUSidecar", dependencies: ["CallServer", "CallProtocol", "CallTransport"]),
        // One browser's WebRTC peer connection (ICE, DTLS-SRTP) on GStreamer's webrtcbin: Opus RTP in and out.
        .target(name: "CallWebRTC", dependencies: ["CGStreamer"]),
        // A small synchronous Redis client over hiredis: commands, pipelines, a subscriber thread.
        .target(name: "Redis", dependencies: ["CRedis"]),
        // The command-line tool.
        .executableTarget(
            name: "activespeaker",
            dependencies: [
                "SpeakerCore", "SpeakerIO", "SpeakerRTP", "SpeakerMedia", "SpeakerFiles", "SpeakerDevices", "SpeakerEval",
                "ConfigurationOverrides", "CallProtocol", "CallServer", "CallClient", "Redis", "SFUSidecar",
            ]),
        // Throughput benchmarks (release builds only): `swift run -c release Benchmarks --help`.
        .executableTarget(
            name: "Benchmarks", dependencies: ["SpeakerCore", "SpeakerEval", "SpeakerOpus", "SpeakerFiles", "ConfigurationOverrides"],
            path: "Benchmarks"),

        // Test-only: counts heap allocations per thread, to prove the hot path allocates nothing.
        .target(name: "CAllocationCounter", path: "Tests/CAllocationCounter"),
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "SpeakerCoreTests", dependencies: ["SpeakerCore", "TestSupport", "CAllocationCounter"]),
        .testTarget(name: "ConfigurationOverridesTests", dependencies: ["ConfigurationOverrides", "SpeakerCore"]),
        .testTarget(
            name: "SpeakerIOTests",
            dependencies: ["SpeakerIO", "SpeakerOpus", "SpeakerRTP", "SpeakerFiles", "SpeakerDevices", "TestSupport", "CAllocationCounter"]),
        .testTarget(name: "SpeakerEvalTests", dependencies: ["SpeakerEval", "SpeakerCore", "SpeakerFiles", "TestSupport", "CAllocationCounter"]),
        .testTarget(name: "activespeakerTests", dependencies: ["SpeakerEval", "SpeakerIO", "SpeakerRTP", "SpeakerMedia", "SpeakerFiles", "TestSupport"]),
        .testTarget(name: "CallProtocolTests", dependencies: ["CallProtocol", "TestSupport"]),
        .testTarget(name: "CallTransportTests", dependencies: ["CallTransport", "TestSupport"]),
        .testTarget(name: "RedisTests", dependencies: ["Redis", "TestSupport"]),
        .testTarget(name: "CallWebRTCTests", dependencies: ["CallWebRTC", "CallTransport", "SpeakerOpus", "SpeakerRTP", "TestSupport"]),
        .testTarget(
            name: "CallTests",
            dependencies: [
                "CallServer", "CallClient", "CallProtocol", "CallTransport", "CallWebRTC", "Redis", "SpeakerCore", "SpeakerIO", "SpeakerOpus",
                "SpeakerRTP", "SpeakerMedia", "SpeakerFiles", "SpeakerDevices", "SpeakerEval", "TestSupport", "CAllocationCounter",
                "SFUSidecar",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
