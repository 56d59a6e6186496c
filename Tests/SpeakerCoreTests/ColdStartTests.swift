import SpeakerCore
import Testing
import TestSupport

/// A stream that starts, or starts again, after digital silence: before its microphone opens, while
/// muted, in a DTX pause or a packet gap. The room's noise starting then must not be taken for speech
/// (it was: brown and pink noise after 2 s of silence started an utterance at once, and took the floor).
@Suite struct ColdStartTests {
    static let levels: [Double] = [-60, -45, -35]

    @Test(arguments: Synthesis.NoiseColour.allCases, [false, true])
    func noiseAfterDigitalSilenceIsNotSpeech(colour: Synthesis.NoiseColour, dithered: Bool) throws {
        for (index, level) in Self.levels.enumerated() {
            let noise = Synthesis.colouredNoise(colour, seconds: 4, levelDBFS: level, seed: UInt64(20 + index))
            let stream = Synthesis.digitalSilence(seconds: 2, dithered: dithered) + noise
            let result = try EngineHarness.run([("room", stream)])
            #expect(result.speech("room").isEmpty, "\(colour) noise at \(level) dBFS: \(result.speech("room"))")
            #expect(result.dominant.allSatisfy { $0.holder == nil })
        }
    }

    /// A gap in the middle (a DTX pause, lost packets, a mute) and the noise coming back.
    @Test(arguments: Synthesis.NoiseColour.allCases)
    func noiseResumingAfterAGapIsNotSpeech(colour: Synthesis.NoiseColour) throws {
        let room = Synthesis.colouredNoise(colour, seconds: 6, levelDBFS: -45, seed: 31)
        let stream = Array(room[..<32000]) + Synthesis.digitalSilence(seconds: 1, dithered: false) + Array(room[32000...])
        let result = try EngineHarness.run([("room", stream)])
        #expect(result.speech("room").isEmpty, "\(colour): \(result.speech("room"))")
    }
}
