import Foundation
import SpeakerCore
import SpeakerFiles
import Testing
import TestSupport
@testable import SpeakerEval

/// The engine on the bundled labelled meetings: voice activity and floor against their references.
@Suite struct FixtureAccuracyTests {
    static let meetings = ["m1-clean", "m2-noisy", "m3-music"]

    struct Outcome {
        var vad = DetectionCounts()
        var floor = FloorScore()
    }

    /// Replays one fixture meeting through the engine as `detect` does and scores it.
    static func run(_ meeting: String) throws -> Outcome {
        let folder = FixturePaths.fixtures.appendingPathComponent("meetings/\(meeting)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".flac") }.sorted()
        let decoded = try loadStreams(paths: files.map { folder.appendingPathComponent($0).path })
        let replay = try RoomReplay(streams: decoded.map { ReplayStream(id: $0.id, samples: $0.samples) })
        var recorder = SpeechSegmentRecorder()
        var decisions: [(time: Double, holder: String?)] = []
        func drain() {
            replay.consumeEvents { event in
                switch event {
                case .speech(let stream, let active, _, let since):
                    recorder.record(stream: replay.streamIDs[stream], active: active, since: since)
                case .dominant(let stream, let time):
                    decisions.append((time, stream.map { replay.streamIDs[$0] }))
                }
            }
        }
        while !replay.isAtEnd {
            replay.tick()
            drain()
        }
        replay.finish()
        drain()

        let reference = try RTTM.parse(String(contentsOf: folder.appendingPathComponent("speech.rttm"), encoding: .utf8))
        let floor = try RTTM.parse(String(contentsOf: folder.appendingPathComponent("floor.rttm"), encoding: .utf8))
        var outcome = Outcome()
        for stream in decoded {
            outcome.vad = outcome.vad + FrameScoring.score(
                reference: reference.filter { $0.speaker == stream.id },
                system: recorder.segments.filter { $0.speaker == stream.id },
                duration: replay.duration)
        }
        outcome.floor = FloorScoring.score(reference: floor, decisions: decisions, duration: replay.duration)
        return outcome
    }

    @Test(arguments: meetings)
    func eachMeetingMeetsItsMinimum(meeting: String) throws {
        let outcome = try Self.run(meeting)
        #expect(outcome.vad.f1 >= 0.85, "VAD F1 \(outcome.vad.f1)")
        #expect(outcome.floor.accuracy >= 0.85, "floor accuracy \(outcome.floor.accuracy)")
        // One change may be missed: in m2-noisy bob interrupts carol and is interrupted by alice
        // 0.84 s later; the engine goes from carol straight to alice.
        #expect(outcome.floor.missedChanges <= 1)
    }

    @Test func pooledFiguresMeetTheirMinimum() throws {
        var vad = DetectionCounts()
        var floor = FloorScore()
        for meeting in Self.meetings {
            let outcome = try Self.run(meeting)
            vad = vad + outcome.vad
            floor = floor + outcome.floor
        }
        // Measured at 57c3051: F1 0.944 (P 0.952, R 0.936), floor accuracy 0.966, nobody accuracy
        // 0.966, switch latency median 0.23 s and p90 0.84 s, no false switch, 1 of 18 changes missed.
        #expect(vad.f1 >= 0.93, "pooled VAD F1 \(vad.f1)")
        #expect(vad.precision >= 0.93 && vad.recall >= 0.92)
        #expect(floor.accuracy >= 0.95, "pooled floor accuracy \(floor.accuracy)")
        #expect(floor.nobodyAccuracy >= 0.9)
        #expect(try #require(floor.medianLatency) <= 0.3)
        #expect(floor.falseSwitchesPerMinute <= 0.5)
        #expect(floor.missedChanges <= 1)
    }
}
