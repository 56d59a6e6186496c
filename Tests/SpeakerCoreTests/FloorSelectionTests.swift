import Foundation
import Testing
import TestSupport
@testable import SpeakerCore

/// Dominant-speaker selection on scripted rooms of synthetic voices.
@Suite struct FloorSelectionTests {
    /// A microphone: background noise plus the owner's voice in the given intervals.
    static func microphone(_ seconds: Double, seed: UInt64, f0: Double, talks: [(Double, Double)], level: Double = -26) -> [Float] {
        var signal = Synthesis.noise(seconds: seconds, levelDBFS: -58, seed: seed)
        for (index, (start, end)) in talks.enumerated() {
            Synthesis.add(Synthesis.voice(seconds: end - start, f0: f0, levelDBFS: level, seed: seed * 100 + UInt64(index)), into: &signal, at: start)
        }
        return signal
    }

    @Test func followsATurnSwitchQuickly() throws {
        let a = Self.microphone(9, seed: 1, f0: 120, talks: [(0.5, 4.0)])
        let b = Self.microphone(9, seed: 2, f0: 210, talks: [(4.4, 8.0)])
        let result = try EngineHarness.run([("a", a), ("b", b)])
        let toB = try #require(result.dominant.first { $0.holder == "b" })
        #expect(result.holder(at: 3.5) == "a")
        #expect(toB.time - 4.4 <= 0.5)  // stated delay: ≤ 0.5 s after the new speaker starts
        #expect(toB.time > 4.4)
    }

    @Test func backchannelDuringTheTurnDoesNotSwitch() throws {
        let a = Self.microphone(9, seed: 3, f0: 120, talks: [(0.5, 8.0)])
        let b = Self.microphone(9, seed: 4, f0: 210, talks: [(3.0, 3.5), (5.0, 5.6)])
        let result = try EngineHarness.run([("a", a), ("b", b)])
        #expect(result.dominant.map(\.holder).prefix(1) == ["a"])
        #expect(!result.dominant.contains { $0.holder == "b" })
        #expect(!result.speech("b").isEmpty)  // b's speech itself is detected
    }

    @Test func backchannelInAPauseDoesNotSwitch() throws {
        // A pause 0.1 s shorter than `turnEndPause` (still inside the turn), nearly filled by b's "yeah".
        let pause = SelectionConfiguration().turnEndPause - 0.1
        let a = Self.microphone(9, seed: 5, f0: 120, talks: [(0.5, 3.0), (3.0 + pause, 8.0)])
        let b = Self.microphone(9, seed: 6, f0: 210, talks: [(3.05, 3.0 + pause - 0.1)])
        let result = try EngineHarness.run([("a", a), ("b", b)])
        #expect(!result.dominant.contains { $0.holder == "b" })
    }

    @Test func aPauseInsideATurnKeepsTheFloor() throws {
        let a = Self.microphone(8, seed: 7, f0: 130, talks: [(0.5, 3.0), (3.6, 6.5)])
        let b = Self.microphone(8, seed: 8, f0: 200, talks: [])
        let result = try EngineHarness.run([("a", a), ("b", b)])
        #expect(result.dominant.filter { $0.time < 6.5 }.map(\.holder) == ["a"])
    }

    @Test func silenceMeansNobody() throws {
        let a = Self.microphone(6, seed: 9, f0: 130, talks: [(0.5, 2.0)])
        let b = Self.microphone(6, seed: 10, f0: 200, talks: [])
        let result = try EngineHarness.run([("a", a), ("b", b)])
        let release = try #require(result.dominant.first { $0.holder == nil })
        #expect(release.time > 2.9 && release.time < 3.4)  // 1.0 s after the last speech
        #expect(result.holder(at: 5.5) == nil)
    }

    @Test func interruptionTakesTheFloor() throws {
        let a = Self.microphone(9, seed: 11, f0: 120, talks: [(0.5, 4.5)])
        let b = Self.microphone(9, seed: 12, f0: 210, talks: [(3.0, 8.5)])
        let result = try EngineHarness.run([("a", a), ("b", b)])
        let toB = try #require(result.dominant.first { $0.holder == "b" })
        #expect(toB.time <= 5.3)
    }

    /// Two microphones where b's has the higher gain: b's own voice reaches it at −16 dBFS, and a's
    /// voice leaks into it at −26 dBFS, louder than a's voice on a's own microphone (−30 dBFS).
    /// b talks first, then a.
    static func loudNeighbourRoom() -> (a: [Float], b: [Float]) {
        let seconds = 10.0
        var micA = Synthesis.noise(seconds: seconds, levelDBFS: -62, seed: 13)
        var micB = Synthesis.noise(seconds: seconds, levelDBFS: -52, seed: 14)
        let voiceA = Synthesis.voice(seconds: 5, f0: 115, levelDBFS: -30, seed: 15)
        let voiceB = Synthesis.voice(seconds: 2.5, f0: 220, levelDBFS: -16, seed: 16)
        Synthesis.add(voiceB, into: &micB, at: 0.5)
        Synthesis.add(voiceB, into: &micA, at: 0.503, gain: 0.063)  // −24 dB leak into a
        Synthesis.add(voiceA, into: &micA, at: 4.0)
        Synthesis.add(voiceA, into: &micB, at: 4.005, gain: 1.585)  // +4 dB: louder than at a
        return (micA, micB)
    }

    @Test func leakedVoiceDoesNotStealTheFloor() throws {
        let room = Self.loudNeighbourRoom()
        let result = try EngineHarness.run([("a", room.a), ("b", room.b)])
        #expect(result.holder(at: 2.5) == "b")
        #expect(result.holder(at: 6.0) == "a")
        #expect(result.holder(at: 8.5) == "a")
        // Neither microphone is said to speak while only the other's voice reaches it.
        #expect(!result.speech("b").contains { $0.active && $0.since > 3.5 }, "\(result.speech("b"))")
        #expect(!result.speech("a").contains { $0.active && $0.since < 3.5 })
    }

    @Test func withoutLeakageSuppressionTheLeakIsSpeech() throws {
        // The same room with suppression off: shows the test above can fail.
        var configuration = EngineConfiguration()
        configuration.leakage.enabled = false
        let room = Self.loudNeighbourRoom()
        let result = try EngineHarness.run([("a", room.a), ("b", room.b)], configuration: configuration)
        #expect(result.speech("b").contains { $0.active && $0.since > 3.5 })
    }
}
