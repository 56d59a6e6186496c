import SpeakerEval
import Testing
import TestSupport

/// `RoomReplay`, the driver behind `detect`: hops, padding, and when streams leave.
@Suite struct RoomReplayTests {
    @Test(arguments: [(0, 0), (1, 1), (160, 1), (161, 2), (320, 2), (16_000, 100)])
    func hopCountRoundsUp(_ samples: Int, _ hops: Int) {
        #expect(ReplayStream(id: "a", samples: Array(repeating: 0, count: samples)).hopCount == hops)
    }

    @Test func streamsLeaveAtTheTickAfterTheirLastHop() throws {
        let noise = Synthesis.noise(seconds: 0.05, levelDBFS: -40, seed: 1)  // 800 samples
        let replay = try RoomReplay(streams: [
            ReplayStream(id: "short", samples: Array(noise.prefix(165))),  // 2 hops, the second partial
            ReplayStream(id: "long", samples: Array(noise.prefix(480))),  // 3 hops
        ])
        #expect(replay.tickCount == 3)
        #expect(replay.duration == 0.03)
        var present: [[Int]] = []
        while !replay.isAtEnd {
            replay.tick()
            present.append(replay.presentStreams)
        }
        #expect(present == [[0, 1], [0, 1], [1]])
        #expect(replay.level(of: 0) == nil)
        #expect(replay.level(of: 1) != nil)
        replay.finish()
        #expect(replay.presentStreams.isEmpty)
        // Statistics outlive the stream, frozen at its removal: it was present for two hops.
        #expect(replay.statistics(of: 0).speechTime <= 0.02)
    }

    @Test func aPartialLastHopIsPaddedWithSilence() throws {
        let noise = Synthesis.noise(seconds: 0.02, levelDBFS: -30, seed: 2)
        let partial = Array(noise.prefix(165))
        let padded = partial + Array(repeating: 0, count: 155)
        let levels = try [partial, padded].map { samples -> Float? in
            let replay = try RoomReplay(streams: [ReplayStream(id: "a", samples: samples)])
            replay.tick()
            replay.tick()
            return replay.level(of: 0)
        }
        #expect(levels[0] != nil)
        #expect(levels[0] == levels[1])
    }

    @Test func eventsNameStreamsByIndex() throws {
        let speech = try TestAudio.speech("hello there", voice: "en-us")
        let silence = [Float](repeating: 0, count: speech.count)
        let replay = try RoomReplay(streams: [
            ReplayStream(id: "quiet", samples: silence), ReplayStream(id: "talker", samples: speech),
        ])
        var events: [RoomReplay.Event] = []
        while !replay.isAtEnd {
            replay.tick()
            replay.consumeEvents { events.append($0) }
        }
        replay.finish()
        replay.consumeEvents { events.append($0) }
        let speakers = Set(events.compactMap { event -> Int? in
            if case .speech(let stream, _, _, _) = event { stream } else { nil }
        })
        #expect(speakers == [1])
        #expect(events.contains { if case .dominant(1?, _) = $0 { true } else { false } })
    }

    @Test func segmentRecorderPairsStartsWithEnds() {
        var recorder = SpeechSegmentRecorder()
        recorder.record(stream: "b", active: true, since: 0.5)
        recorder.record(stream: "a", active: true, since: 0.2)
        recorder.record(stream: "a", active: true, since: 0.3)  // already open: ignored
        recorder.record(stream: "b", active: false, since: 1.0)
        recorder.record(stream: "a", active: false, since: 2.0)
        recorder.record(stream: "c", active: false, since: 3.0)  // no start: ignored
        recorder.record(stream: "c", active: true, since: 4.0)
        #expect(recorder.segments.map(\.speaker) == ["b", "a"], "in order of ending")
        #expect(recorder.sortedSegments == [
            Segment(speaker: "a", start: 0.2, duration: 1.8), Segment(speaker: "b", start: 0.5, duration: 0.5),
        ])
        #expect(recorder.openStreams == ["c"])
    }
}
