import SpeakerIO
import Testing

@Suite("Level-only activity detection (RFC 6464)")
struct LevelActivityDetectorTests {
    /// Runs the detector over per-tick levels (nil: no packet) of each stream; returns the events.
    static func run(_ streams: [[AudioLevel?]]) -> (events: [LevelActivityDetector.Event], detector: LevelActivityDetector) {
        let detector = LevelActivityDetector()
        for _ in streams { _ = detector.addStream() }
        var events: [LevelActivityDetector.Event] = []
        for tick in 0..<(streams.map(\.count).max() ?? 0) {
            for (index, levels) in streams.enumerated() where tick < levels.count {
                if let level = levels[tick] { detector.submit(level, to: index) }
            }
            detector.tick()
            detector.consumeEvents { events.append(rounded($0)) }
        }
        return (events, detector)
    }

    /// The event with its times rounded to the millisecond (they are sums of 10 ms steps).
    static func rounded(_ event: LevelActivityDetector.Event) -> LevelActivityDetector.Event {
        func r(_ x: Double) -> Double { (x * 1000).rounded() / 1000 }
        switch event {
        case .speech(let stream, let active, let time, let since): return .speech(stream: stream, active: active, time: r(time), since: r(since))
        case .dominant(let stream, let time): return .dominant(stream: stream, time: r(time))
        }
    }

    static func constant(_ level: UInt8, ticks: Int, voice: Bool = false) -> [AudioLevel?] {
        Array(repeating: AudioLevel(level: level, voice: voice), count: ticks)
    }

    static let nothing: [AudioLevel?] = Array(repeating: nil, count: 50)

    @Test func gstreamerDigitalSilenceAt59IsNotSpeech() {
        #expect(Self.run([Self.constant(59, ticks: 1000)]).events.isEmpty)
        // Also not after ticks without packets (the jitter delay at the start, or DTX).
        #expect(Self.run([Self.nothing + Self.constant(59, ticks: 300) + Self.nothing + Self.constant(59, ticks: 300)]).events.isEmpty)
    }

    @Test func speechBetweenSilenceAt59StartsAndEnds() {
        let levels = Self.constant(59, ticks: 100) + Self.constant(25, ticks: 200) + Self.constant(59, ticks: 150)
        #expect(Self.run([levels]).events == [
            .speech(stream: 0, active: true, time: 1.03, since: 1.0),
            .dominant(stream: 0, time: 1.2),
            .speech(stream: 0, active: false, time: 3.3, since: 3.0),
            .dominant(stream: nil, time: 4.0),
        ])
    }

    @Test func longSpeechStaysOneUtterance() {
        // 20 s of speech whose quieter syllables are 12 dB below its louder ones: the floor may rise,
        // but not past ceiling − margin, so the quiet syllables keep counting.
        var levels = Self.constant(59, ticks: 100)
        for tick in 0..<2000 { levels.append(AudioLevel(level: tick % 25 < 15 ? 22 : 34, voice: false)) }
        let speech = Self.run([levels + Self.constant(59, ticks: 100)]).events.filter {
            if case .speech = $0 { true } else { false }
        }
        #expect(speech.count == 2)
    }

    @Test func noPacketsIsSilenceNotStillSpeaking() {
        // DTX: speech, then the sender stops sending.
        let levels = Self.constant(30, ticks: 100) + Array(repeating: nil, count: 200)
        let (events, detector) = Self.run([levels])
        #expect(events.contains(.speech(stream: 0, active: false, time: 1.3, since: 1.0)))
        #expect(!detector.isSpeaking(0))
        #expect(detector.level(of: 0) == -127)
    }

    @Test func steadyNoiseAboveTheGateIsLearntAsTheFloor() {
        // A fan at −45 dBov for 10 s: loud enough for the gate, but it is the floor from the first tick.
        #expect(Self.run([Self.constant(45, ticks: 1000)]).events.isEmpty)
    }

    @Test func trueSilenceAt127DoesNotLetQuietNoiseIn() {
        // A browser sends 127 for silence, then −60 dBov background: 67 dB above the floor, below the gate.
        let levels = Self.constant(127, ticks: 100) + Self.constant(60, ticks: 300)
        #expect(Self.run([levels]).events.isEmpty)
    }

    @Test func theVoiceFlagIsTrustedOnceASenderUsesIt() {
        // V set once, then loud packets without V are not speech (the sender's VAD says no).
        let levels = Self.constant(127, ticks: 1, voice: true) + Self.constant(20, ticks: 300, voice: false)
        #expect(Self.run([levels]).events.isEmpty)
        let voiced = Self.constant(127, ticks: 1, voice: true) + Self.constant(20, ticks: 300, voice: true)
        #expect(Self.run([voiced]).events.contains(.speech(stream: 0, active: true, time: 0.04, since: 0.01)))
    }

    @Test func turnTakingFollowsTheEngineRules() {
        // Alice 0–3 s, Bob 3.2–6 s, and Bob's backchannel inside Alice's turn at 1 s for 0.3 s.
        var alice = Self.constant(59, ticks: 700), bob = Self.constant(59, ticks: 700)
        for tick in 0..<300 { alice[tick] = AudioLevel(level: 25, voice: false) }
        for tick in 100..<130 { bob[tick] = AudioLevel(level: 28, voice: false) }
        for tick in 320..<600 { bob[tick] = AudioLevel(level: 25, voice: false) }
        let dominant = Self.run([alice, bob]).events.compactMap { event -> Int?? in
            if case .dominant(let stream, _) = event { return .some(stream) }
            return nil
        }
        #expect(dominant == [0, 1, nil])
    }
}
