import Foundation
import Testing
import TestSupport
@testable import SpeakerCore

/// The per-stream detector on synthetic signals: one room, one stream.
@Suite struct VoiceActivityTests {
    static func background(_ seconds: Double, seed: UInt64 = 1) -> [Float] {
        Synthesis.noise(seconds: seconds, levelDBFS: -55, seed: seed)
    }

    @Test func oneUtteranceIsFoundAndDated() throws {
        var signal = Self.background(6)
        Synthesis.add(Synthesis.voice(seconds: 2, f0: 140, levelDBFS: -26), into: &signal, at: 2)
        let speech = try EngineHarness.run([("a", signal)]).speech("a")
        try #require(speech.count == 2, "\(speech)")
        #expect(speech[0].active && !speech[1].active)
        #expect(abs(speech[0].since - 2.0) < 0.08)
        #expect(speech[0].time - speech[0].since <= 0.06)  // onset confirmed within 3 of 5 hops
        #expect(abs(speech[1].since - 4.0) < 0.1)
        #expect(speech[1].time >= speech[1].since)
    }

    @Test(arguments: [-45.0, -30.0])
    func stationaryNoiseIsNotSpeech(levelDBFS: Double) throws {
        let result = try EngineHarness.run([("a", Synthesis.noise(seconds: 10, levelDBFS: levelDBFS, seed: 9))])
        #expect(result.speech("a").isEmpty)
    }

    @Test func keyboardClicksAreNotSpeech() throws {
        var signal = Self.background(8)
        Synthesis.add(Synthesis.clicks(seconds: 6, interval: 0.12, amplitude: 0.3, seed: 4), into: &signal, at: 1)
        #expect(try EngineHarness.run([("a", signal)]).speech("a").isEmpty)
    }

    @Test func speechInNoiseAt10dBSNRIsFound() throws {
        var signal = Synthesis.noise(seconds: 8, levelDBFS: -36, seed: 21)
        Synthesis.add(Synthesis.voice(seconds: 3, f0: 120, levelDBFS: -26), into: &signal, at: 3)
        let speech = try EngineHarness.run([("a", signal)]).speech("a")
        let starts = speech.filter(\.active)
        try #require(!starts.isEmpty)
        #expect(abs(starts[0].since - 3.0) < 0.15)
        // Speech is covered, and nothing is found long before it.
        #expect(starts.allSatisfy { $0.since > 2.8 })
    }

    @Test func digitalSilenceThenSpeech() throws {
        var signal = [Float](repeating: 0, count: 16_000 * 4)
        Synthesis.add(Synthesis.voice(seconds: 1.5, f0: 200, levelDBFS: -30), into: &signal, at: 1.5)
        let speech = try EngineHarness.run([("a", signal)]).speech("a")
        #expect(speech.filter(\.active).count == 1)
    }
}

/// Skipping the spectral analysis of clearly quiet frames (`vad.quietRefresh` > 1).
@Suite struct QuietSkippingTests {
    @Test func skippingQuietFramesStillFindsTheUtterance() throws {
        var configuration = EngineConfiguration()
        configuration.vad.quietRefresh = 4
        var signal = VoiceActivityTests.background(6)
        Synthesis.add(Synthesis.voice(seconds: 2, f0: 140, levelDBFS: -26), into: &signal, at: 2)
        let speech = try EngineHarness.run([("a", signal)], configuration: configuration).speech("a")
        try #require(speech.count == 2, "\(speech)")
        #expect(abs(speech[0].since - 2.0) < 0.08)
        #expect(abs(speech[1].since - 4.0) < 0.1)
    }

    @Test func quietFramesAreSkipped() throws {
        var configuration = VoiceActivityConfiguration()
        configuration.quietRefresh = 4
        configuration.restingInterval = 1
        let analyzer = SpectralAnalyzer(overSubtraction: 1)
        var state = SpectralState(configuration: configuration)
        let noise = Synthesis.noise(seconds: 3, levelDBFS: -50, seed: 3)
        var skipped = 0
        noise.withUnsafeBufferPointer { samples in
            for frame in 0..<300 {
                _ = analyzer.analyze(
                    hop: UnsafeBufferPointer(rebasing: samples[frame * 160..<(frame + 1) * 160]), state: &state,
                    mayRest: true, configuration: configuration)
                if state.quietSkipped > 0 { skipped += 1 }
            }
        }
        // Once the floor is learnt, most quiet frames skip, but never more than 3 in a row.
        #expect(skipped > 150 && skipped <= 225)
    }
}

/// Analysing resting streams on every `vad.restingInterval`-th frame only.
@Suite struct RestingIntervalTests {
    /// Each frame of `signal`: did it skip the spectral analysis, and its hop's energy (dBFS).
    static func frames(_ signal: [Float], interval: Int, mayRest: Bool) -> [(skipped: Bool, energyDBFS: Float)] {
        var configuration = VoiceActivityConfiguration()
        configuration.restingInterval = interval
        configuration.quietRefresh = 1  // the resting rule alone
        let analyzer = SpectralAnalyzer(overSubtraction: 1)
        var state = SpectralState(configuration: configuration)
        return signal.withUnsafeBufferPointer { samples in
            (0..<signal.count / 160).map { frame in
                let before = state.quietSkipped
                let features = analyzer.analyze(
                    hop: UnsafeBufferPointer(rebasing: samples[frame * 160..<(frame + 1) * 160]), state: &state,
                    mayRest: mayRest, configuration: configuration)
                return (state.quietSkipped > before, features.energyDBFS)
            }
        }
    }

    @Test func restingNoiseIsAnalysedEveryOtherFrame() {
        let noise = Synthesis.noise(seconds: 3, levelDBFS: -50, seed: 3)
        let skipped = Self.frames(noise, interval: 2, mayRest: true)[100...].filter(\.skipped).count
        // Every other frame, except the few whose analysed predecessor happened to stand 3 dB above the floor.
        #expect(skipped <= 100 && skipped >= 90, "\(skipped) of 200")
        #expect(!Self.frames(noise, interval: 2, mayRest: false).contains { $0.skipped })
        #expect(!Self.frames(noise, interval: 1, mayRest: true).contains { $0.skipped })
    }

    @Test func loudFramesAreAllAnalysed() {
        var signal = VoiceActivityTests.background(3)
        Synthesis.add(Synthesis.voice(seconds: 1, f0: 140, levelDBFS: -26), into: &signal, at: 2)
        let frames = Self.frames(signal, interval: 4, mayRest: true)
        // Noise (−55 dBFS) is mostly skipped; the syllables (20 dB and more above it) never are, though
        // the silent consonants between them may be.
        #expect(frames[20..<200].filter(\.skipped).count > 120)
        let loud = frames[200...].filter { $0.energyDBFS > -35 }
        #expect(loud.count > 50)
        #expect(!loud.contains { $0.skipped })
    }

    @Test func streamsTakeTurns() {
        let noise = Synthesis.noise(seconds: 1, levelDBFS: -50, seed: 5)
        var configuration = VoiceActivityConfiguration()
        configuration.restingInterval = 2
        configuration.quietRefresh = 1  // the resting rule alone
        let analyzer = SpectralAnalyzer(overSubtraction: 1)
        var even = SpectralState(configuration: configuration, phase: 0)
        var odd = SpectralState(configuration: configuration, phase: 1)
        var bothSkipped = 0, skippedFrames = 0
        noise.withUnsafeBufferPointer { samples in
            for frame in 0..<100 {
                let hop = UnsafeBufferPointer(rebasing: samples[frame * 160..<(frame + 1) * 160])
                let (a, b) = (even.quietSkipped, odd.quietSkipped)
                _ = analyzer.analyze(hop: hop, state: &even, mayRest: true, configuration: configuration)
                _ = analyzer.analyze(hop: hop, state: &odd, mayRest: true, configuration: configuration)
                let evenSkipped = even.quietSkipped > a, oddSkipped = odd.quietSkipped > b
                if evenSkipped && oddSkipped { bothSkipped += 1 }
                if evenSkipped || oddSkipped { skippedFrames += 1 }
            }
        }
        #expect(skippedFrames > 40)
        #expect(bothSkipped == 0)
    }

    @Test(arguments: [1, 2, 4])
    func utteranceIsFoundAndDatedAtEveryInterval(interval: Int) throws {
        var configuration = EngineConfiguration()
        configuration.vad.restingInterval = interval
        configuration.vad.quietRefresh = 1
        var signal = VoiceActivityTests.background(6)
        Synthesis.add(Synthesis.voice(seconds: 2, f0: 140, levelDBFS: -26), into: &signal, at: 2)
        let speech = try EngineHarness.run([("a", signal)], configuration: configuration).speech("a")
        try #require(speech.count == 2, "\(speech)")
        #expect(abs(speech[0].since - 2.0) < 0.08)
        #expect(speech[0].time - speech[0].since <= 0.07)
        #expect(abs(speech[1].since - 4.0) < 0.1)
    }
}
