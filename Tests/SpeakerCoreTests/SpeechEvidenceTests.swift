import Testing
import TestSupport
@testable import SpeakerCore

/// The evidence stage on its own: analysed frames in, a verdict per frame out.
@Suite struct SpeechEvidenceTests {
    /// Runs `signal` through the analyzer and the stage (rules alone unless `classifier`); the verdicts.
    static func verdicts(
        _ signal: [Float], configuration: VoiceActivityConfiguration = VoiceActivityConfiguration(),
        classifier: SoundClassifier? = nil
    ) -> [SpeechEvidence.Verdict] {
        let analyzer = SpectralAnalyzer(overSubtraction: configuration.overSubtraction)
        var state = SpectralState(configuration: configuration)
        var evidence = SpeechEvidence()
        return signal.withUnsafeBufferPointer { samples in
            (0..<signal.count / 160).map { frame in
                let hop = UnsafeBufferPointer(rebasing: samples[frame * 160..<(frame + 1) * 160])
                let previous = frame == 0 ? 0 : samples[frame * 160 - 1]
                let features = analyzer.analyze(hop: hop, state: &state, mayRest: false, configuration: configuration)
                return evidence.judge(
                    features, hop: hop, previousSample: previous, speaking: false, noise: &state.noise,
                    classifier: classifier, configuration: configuration)
            }
        }
    }

    @Test func aVoiceOverNoiseIsVoicedAndTheNoiseIsNot() {
        var signal = Synthesis.noise(seconds: 3, levelDBFS: -60, seed: 41)
        Synthesis.add(Synthesis.voice(seconds: 1, f0: 140, levelDBFS: -25, seed: 42), into: &signal, at: 1.5)
        let verdicts = Self.verdicts(signal)
        #expect(!verdicts[20..<140].contains { $0.voiced }, "the noise alone")
        #expect(verdicts[155..<245].filter(\.voiced).count > 45, "the voice")
    }

    /// A held note (20 harmonics of 220 Hz): periodic and loud, so the rules alone would call it voiced;
    /// the tone detector finds it steady within its 320 ms window, and from then on it is no evidence.
    @Test func aHeldNoteIsNoEvidenceOnceItIsKnownSteady() {
        var signal = Synthesis.noise(seconds: 3, levelDBFS: -60, seed: 43)
        for harmonic in 1...20 {
            let note = Synthesis.sine(seconds: 2, frequency: 220 * Double(harmonic), amplitude: 0.05 / Double(harmonic))
            Synthesis.add(note, into: &signal, at: 0.5)
        }
        let verdicts = Self.verdicts(signal)
        let voiced = verdicts.indices.filter { verdicts[$0].voiced }
        #expect(!voiced.isEmpty && voiced.allSatisfy { $0 < 50 + 32 }, "voiced frames: \(voiced)")
        var off = VoiceActivityConfiguration()
        off.steadyFraction = 1
        #expect(Self.verdicts(signal, configuration: off)[100..<240].filter(\.voiced).count > 100, "without the tone detector")
    }

    /// The room's noise coming back after digital silence: held by the resume gate, then the floor.
    @Test func noiseAfterDigitalSilenceIsHeldThenLearnt() {
        let signal = Synthesis.digitalSilence(seconds: 1, dithered: false)
            + Synthesis.colouredNoise(.brown, seconds: 2, levelDBFS: -35, seed: 44)
        #expect(!Self.verdicts(signal).contains { $0.voiced })
        var off = VoiceActivityConfiguration()
        off.resumeGate = false
        #expect(Self.verdicts(signal, configuration: off).contains { $0.voiced }, "without the gate the defect shows")
    }

    /// With the classifier, steady music is no evidence, though its notes are periodic.
    @Test func theClassifierPlugsIntoTheStage() {
        var voiced = Synthesis.noise(seconds: 3, levelDBFS: -60, seed: 45)
        Synthesis.add(Synthesis.voice(seconds: 2, f0: 120, levelDBFS: -25, seed: 46), into: &voiced, at: 0.5)
        let rules = Self.verdicts(voiced).filter(\.voiced).count
        let classified = Self.verdicts(voiced, classifier: SoundClassifier.shipped).filter(\.voiced).count
        // The classifier only ever removes evidence the rules gave.
        #expect(classified <= rules)
        #expect(rules > 100)
    }
}
