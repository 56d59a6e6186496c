import Foundation
import SpeakerCore
import SpeakerIO
import Testing
import TestSupport
@testable import SpeakerEval

/// Real speech after digital silence: a stream that starts (or resumes) silent and then speaks is found
/// when it speaks, as without the silence: not early (the room noise starting, taken for speech), and not
/// late (the fresh noise estimate swallowing the first syllable).
@Suite struct ColdStartSpeechTests {
    /// The first speech onset (`since`) of a single stream.
    static func firstOnset(_ samples: [Float]) throws -> Double? {
        let replay = try RoomReplay(streams: [ReplayStream(id: "bob", samples: samples)])
        var onset: Double?
        while !replay.isAtEnd, onset == nil {
            replay.tick()
            replay.consumeEvents { event in
                if case .speech(_, true, _, let since) = event, onset == nil { onset = since }
            }
        }
        return onset
    }

    @Test(arguments: [false, true])
    func bobIsFoundWhenHeSpeaksAfterTwoSecondsOfSilence(dithered: Bool) throws {
        let decoded = try loadStreams(paths: [FixturePaths.file("meetings/m1-clean/bob.flac")])
        let bob = try #require(decoded.first?.samples)
        let plain = try #require(try Self.firstOnset(bob))
        let delayed = try #require(try Self.firstOnset(Synthesis.digitalSilence(seconds: 2, dithered: dithered) + bob))
        // Before: 0.33 s late with dither (3.55 s for 3.22 s).
        #expect(abs(delayed - (plain + 2)) <= 0.05, "first speech at \(delayed) s, \(plain + 2) s expected")
    }
}
