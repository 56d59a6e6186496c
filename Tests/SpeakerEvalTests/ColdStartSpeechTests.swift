import Foundation
import SpeakerCore
import SpeakerFiles
import Testing
import TestSupport
@testable import SpeakerEval

/// Real speech after digital silence: a stream that starts (or resumes) silent and then speaks is found
/// when it speaks: never early (its room noise starting, taken for speech), and not much later than
/// without the silence.
@Suite struct ColdStartSpeechTests {
    /// The speech onsets (`since`) of a single stream.
    static func onsets(_ samples: [Float]) throws -> [Double] {
        let replay = try RoomReplay(streams: [ReplayStream(id: "bob", samples: samples)])
        var onsets: [Double] = []
        while !replay.isAtEnd {
            replay.tick()
            replay.consumeEvents { event in
                if case .speech(_, true, _, let since) = event { onsets.append(since) }
            }
        }
        return onsets
    }

    static func firstOnset(_ samples: [Float]) throws -> Double? { try onsets(samples).first }

    static func bob() throws -> [Float] {
        try #require(try loadStreams(paths: [FixturePaths.file("meetings/m1-clean/bob.flac")]).first?.samples)
    }

    @Test(arguments: [false, true])
    func bobIsFoundWhenHeSpeaksAfterTwoSecondsOfSilence(dithered: Bool) throws {
        let bob = try Self.bob()
        let plain = try #require(try Self.firstOnset(bob))
        let delayed = try #require(try Self.firstOnset(Synthesis.digitalSilence(seconds: 2, dithered: dithered) + bob))
        let late = delayed - (plain + 2)
        // Without the resume gate (issue 13): after dithered silence his room noise starting was taken
        // for speech (2.02 s, 1.2 s early); after zeros he was found 0.33 s late.
        #expect(late >= -0.05, "first speech at \(delayed) s, \(plain + 2) s expected")
        #expect(late <= 0.4, "first speech at \(delayed) s, \(plain + 2) s expected")
    }

    /// A DTX pause (1 s of dithered digital silence) between two takes of the same talk: the second take is found
    /// as the first was (its first onset 0.32 s later than alone, measured), and his room noise resuming
    /// after the pause starts no utterance (it did at 26.02 s before the resume gate, issue 13).
    @Test func speechAfterADTXPauseIsFoundAsBefore() throws {
        let bob = try Self.bob()
        let plain = try Self.onsets(bob)
        let pause = Synthesis.digitalSilence(seconds: 1, dithered: true)
        let twice = try Self.onsets(bob + pause + bob)
        let offset = Double(bob.count) / 16000 + 1
        let resumed = twice.filter { $0 >= offset - 0.5 && $0 < offset + plain[0] - 0.5 }
        #expect(resumed.isEmpty, "an utterance as the room resumes: \(resumed)")
        let second = twice.filter { $0 >= offset + plain[0] - 0.5 }
        try #require(!plain.isEmpty && second.count == plain.count, "once: \(plain); twice: \(twice)")
        for (index, (alone, again)) in zip(plain, second).enumerated() {
            let late = again - offset - alone
            #expect(late >= -0.05 && late <= (index == 0 ? 0.4 : 0.05), "an onset at \(alone) s alone is at \(again - offset) s after the pause")
        }
    }
}
