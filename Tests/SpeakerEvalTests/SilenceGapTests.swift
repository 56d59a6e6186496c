import SpeakerEval
import SpeakerFiles
import Testing
import TestSupport

/// Short runs of digital silence inside a voice — packets lost in a burst that concealment could not
/// cover, which a jitter buffer plays as zeros — on a real talker (m1-clean's bob, a LibriVox reader).
@Suite struct SilenceGapTests {
    /// The stream's utterances as (since of the start, since of the stop).
    static func utterances(of samples: [Float]) throws -> [(start: Double, stop: Double)] {
        let replay = try RoomReplay(streams: [ReplayStream(id: "bob", samples: samples)])
        while !replay.isAtEnd { replay.tick() }
        replay.finish()
        var utterances: [(start: Double, stop: Double)] = []
        var start: Double?
        replay.consumeEvents { event in
            guard case .speech(_, let active, _, let since) = event else { return }
            if active {
                start = since
            } else if let begun = start {
                utterances.append((begun, since))
                start = nil
            }
        }
        return utterances
    }

    /// Six 80 ms gaps, one a second, in bob's first turn (1.22–7.94 s, one utterance on the file as it
    /// is): the turn stays one utterance. Before the sound classifier's context left such gaps out, the
    /// first gap ended it and the voice after it read as music (speech probability near 0) until the
    /// next gap came: nothing of the turn after 2.32 s was speech.
    @Test func aVoiceStaysSpeechAcrossShortGapsOfSilence() throws {
        let original = try loadStreams(paths: [FixturePaths.file("meetings/m1-clean/bob.flac")])[0].samples
        var gapped = original
        for second in [2.32, 3.32, 4.32, 5.32, 6.32, 7.32] {
            let start = Int(second * 16000)
            for index in start..<start + 1280 { gapped[index] = 0 }
        }
        let before = try Self.utterances(of: original)
        let after = try Self.utterances(of: gapped)
        let turn = try #require(before.first)
        #expect(abs(turn.start - 1.22) < 0.05 && abs(turn.stop - 7.94) < 0.05, "the file's first utterance: \(turn)")
        let first = try #require(after.first)
        #expect(abs(first.start - turn.start) <= 0.02 && abs(first.stop - turn.stop) <= 0.05, "with gaps: \(after.prefix(3))")
        // The rest of the file is judged as before, within a frame or two.
        #expect(after.count == before.count)
        for (a, b) in zip(after, before) { #expect(abs(a.start - b.start) <= 0.03 && abs(a.stop - b.stop) <= 0.05) }
    }
}
