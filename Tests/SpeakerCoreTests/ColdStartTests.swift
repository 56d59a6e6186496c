import SpeakerCore
import Testing
import TestSupport

/// A stream that starts, or starts again, after digital silence: before its microphone opens, while
/// muted, in a DTX pause or a packet gap. The room's noise starting then must not be taken for speech.
///
/// Against a floor learnt on digital silence, pink and brown noise pass the rules' loudness and
/// periodicity tests in their first ~80 ms; the engine's `ResumeGate` holds a sound that follows silence
/// until it has shown whether it is steady (issue 13; docs/evaluation.md, "Cold start").
@Suite struct ColdStartTests {
    static let levels: [Double] = [-60, -45, -35]

    /// The first speech onset in noise of `colour` at `level` after 2 s of digital silence, if any.
    static func falseOnset(_ colour: Synthesis.NoiseColour, level: Double, dithered: Bool, seed: UInt64) throws -> Double? {
        let noise = Synthesis.colouredNoise(colour, seconds: 4, levelDBFS: level, seed: seed)
        let result = try EngineHarness.run([("room", Synthesis.digitalSilence(seconds: 2, dithered: dithered) + noise)])
        return result.speech("room").first?.since
    }

    @Test(arguments: [false, true])
    func whiteNoiseAfterDigitalSilenceIsNotSpeech(dithered: Bool) throws {
        for (index, level) in Self.levels.enumerated() {
            let onset = try Self.falseOnset(.white, level: level, dithered: dithered, seed: UInt64(20 + index))
            #expect(onset == nil, "white noise at \(level) dBFS: speech from \(onset ?? 0) s")
        }
    }

    @Test(arguments: [Synthesis.NoiseColour.pink, .brown])
    func lowPassedNoiseAfterDigitalSilenceIsNotSpeech(colour: Synthesis.NoiseColour) throws {
        for dithered in [false, true] {
            for (index, level) in Self.levels.enumerated() {
                let onset = try Self.falseOnset(colour, level: level, dithered: dithered, seed: UInt64(20 + index))
                #expect(onset == nil, "\(colour) noise at \(level) dBFS (dithered: \(dithered)): speech from \(onset ?? 0) s")
            }
        }
    }

    /// Without the gate the defect is there: the test above can fail.
    @Test func withoutTheResumeGateBrownNoiseIsTakenForSpeech() throws {
        var configuration = EngineConfiguration()
        configuration.vad.resumeGate = false
        let noise = Synthesis.colouredNoise(.brown, seconds: 4, levelDBFS: -35, seed: 22)
        let result = try EngineHarness.run(
            [("room", Synthesis.digitalSilence(seconds: 2, dithered: false) + noise)], configuration: configuration)
        #expect(result.speech("room").first != nil)
    }
}
