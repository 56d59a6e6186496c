import SpeakerCore
import Testing
import TestSupport

/// A stream that starts, or starts again, after digital silence: before its microphone opens, while
/// muted, in a DTX pause or a packet gap. The room's noise starting then must not be taken for speech.
///
/// Known issue (issue 13, open): against a floor of digital silence, pink and brown noise pass the
/// rules' loudness and periodicity tests in the first ~80 ms, which the rules decide alone, and start an
/// utterance (for example 2.00–2.48 s for brown noise at −35 dBFS after 2 s of silence). Three fixes
/// were tried and reverted (docs/evaluation.md, "Cold start"): each lost clean speech whose pauses are
/// digital silence (espeak, synthetic tracks). White noise, and pink noise at −60 dBFS, pass today.
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
        try withKnownIssue("issue 13: the room's noise after digital silence is taken for speech") {
            for (index, level) in Self.levels.enumerated() {
                let onset = try Self.falseOnset(colour, level: level, dithered: false, seed: UInt64(20 + index))
                #expect(onset == nil, "\(colour) noise at \(level) dBFS: speech from \(onset ?? 0) s")
            }
        }
    }
}
