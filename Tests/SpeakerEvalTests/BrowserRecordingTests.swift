import SpeakerCore
import SpeakerEval
import SpeakerFiles
import Testing
import TestSupport

/// Issue 28's browser case offline (`Fixtures/recorded/browsers-apart`): m1-clean as the server recorded it
/// from three Chromium publishers whose streams arrived 310, 160 and 0 ms apart (alice, bob, carol),
/// through Chromium's noise suppression and gain control. Lined up again they are named in the meeting's
/// order; as they arrived, carol's microphone carries alice's first words 310 ms before alice's own stream
/// does. The suppression reshapes each leak frame by frame (envelope correlations of 0.20–0.56 at the true
/// lags): with the envelope alone (correlation 0.85, the engine before spectral shapes) no lag is found and
/// carol is named first; the spectral shapes confirm the lags of bob's voice in both other streams, and
/// chained delays make carol wait for alice before alice ever spoke.
@Suite struct BrowserRecordingTests {
    static let names = ["alice", "bob", "carol"]
    /// How much later than carol's each stream arrived, in samples (310 and 160 ms).
    static let late = [4960, 2560, 0]

    /// The speakers `detect` names on `streams` (started together), nobody and repeats dropped.
    static func sequence(_ streams: [[Float]], configuration: EngineConfiguration = EngineConfiguration()) throws -> [String] {
        let replay = try RoomReplay(
            streams: zip(names, streams).map { ReplayStream(id: $0, samples: $1) }, configuration: configuration)
        while !replay.isAtEnd { replay.tick() }
        replay.finish()
        var named: [String] = []
        replay.consumeEvents { event in
            if case .dominant(let stream?, _) = event, named.last != names[stream] { named.append(names[stream]) }
        }
        return named
    }

    static func recordings(_ folder: String = "browsers-apart") throws -> [[Float]] {
        try loadStreams(paths: names.map { FixturePaths.file("recorded/\(folder)/\($0).opus") }).map(\.samples)
    }

    @Test func linedUpAgainTheStreamsAreNamedInTheMeetingsOrder() throws {
        let linedUp = try zip(Self.recordings(), Self.late).map { Array($0.dropFirst($1)) }
        #expect(try Self.sequence(linedUp) == ["bob", "alice", "carol", "alice", "carol"])
    }

    @Test func asTheyArrivedTheyAreNamedAsLinedUp() throws {
        let recordings = try Self.recordings()
        let linedUp = try Self.sequence(zip(recordings, Self.late).map { Array($0.dropFirst($1)) })
        #expect(try Self.sequence(recordings) == linedUp)
    }

    @Test func theEnvelopeAloneNamesALeakFirst() throws {
        // The engine before spectral shapes confirmed lags: carol's leak of alice's first words is named.
        var envelopeOnly = EngineConfiguration()
        envelopeOnly.alignment = .envelopeOnly
        #expect(try Self.sequence(Self.recordings(), configuration: envelopeOnly) == ["bob", "carol", "alice", "carol"])
    }

    /// A second run (`recorded/browsers-apart-2`, streams 280, 110 and 0 ms apart), in which alice's
    /// microphone carried too little of bob's voice for any lag to be confirmed during bob's turn: alice's
    /// place in time is unknown until she speaks, and carol's copy of her first words, 280 ms ahead of her
    /// own stream, is named before any measurement could line them up. Only waiting for a stream whose
    /// place is unknown, or deciding provisionally and correcting, would cover it.
    @Test func aStreamWhosePlaceIsUnknownUntilItSpeaks() throws {
        let recordings = try Self.recordings("browsers-apart-2")
        let linedUp = try Self.sequence(zip(recordings, [4480, 1760, 0]).map { Array($0.dropFirst($1)) })
        #expect(linedUp == ["bob", "alice", "carol", "alice", "carol"])
        let asTheyArrived = try Self.sequence(recordings)
        withKnownIssue("alice's place in time is unknown until she speaks: carol's copy of her first words is named") {
            #expect(asTheyArrived == linedUp)
        }
    }
}
