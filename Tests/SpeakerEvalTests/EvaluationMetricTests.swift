import Foundation
import FoundationXML
import Testing
import TestSupport
@testable import SpeakerEval

/// The evaluation's metrics on small cases computed by hand: leaked-speech false alarms, collars,
/// scored regions, floor decisions from RTTM, pooling, and the report.
@Suite struct VADScoringTests {
    /// 1 s: alice speaks 0.10–0.40, bob 0.30–0.70 (frames 10…39 and 30…69).
    static let reference = [
        Segment(speaker: "alice", start: 0.10, duration: 0.30), Segment(speaker: "bob", start: 0.30, duration: 0.40),
    ]

    @Test func leakedSpeechFalseAlarmsAreCountedApart() {
        // Alice's system hears her (0.10–0.40) and bob's voice leaking in (0.40–0.60).
        let score = VADScoring.score(
            stream: "alice", reference: Self.reference,
            system: [Segment(speaker: "alice", start: 0.10, duration: 0.50)], duration: 1, collar: 0)
        #expect(score.counts == DetectionCounts(truePositives: 30, falsePositives: 20, falseNegatives: 0, trueNegatives: 50))
        // Frames with bob and not alice: 40…69 = 30; alice's system is on in 40…59 = 20 of them.
        #expect(score.leaked == LeakCounts(frames: 30, falseAlarms: 20))
        #expect(abs(score.leaked.falseAlarmRate! - 20.0 / 30) < 1e-12)
    }

    @Test func leakageNeedsAnotherParticipant() {
        let score = VADScoring.score(
            stream: "alice", reference: [Segment(speaker: "alice", start: 0.1, duration: 0.2)],
            system: [Segment(speaker: "alice", start: 0.5, duration: 0.2)], duration: 1, collar: 0)
        #expect(score.leaked.frames == 0)
        #expect(score.leaked.falseAlarmRate == nil)
        #expect(score.counts.falsePositives == 20)
    }

    @Test func collarOfAQuarterSecondSparesOnlyTheStreamsOwnBoundaries() {
        // Alice's boundaries at 0.10 and 0.40: frames with centres within ±0.25 s are not scored:
        // 0…34 (centres 0.005…0.345) and 15…64 (0.155…0.645) → 0…64 unscored, 65…99 scored (35).
        let score = VADScoring.score(
            stream: "alice", reference: Self.reference,
            system: [Segment(speaker: "alice", start: 0.10, duration: 0.60)], duration: 1, collar: 0.25)
        #expect(score.counts.total == 35)
        // Alice's system is on 10…69: frames 65…69 are false alarms, and they carry bob's voice.
        #expect(score.counts.falsePositives == 5)
        #expect(score.leaked == LeakCounts(frames: 5, falseAlarms: 5))
    }

    @Test func scoredRegionsLimitEveryCount() {
        // Scored: 0.00–0.20 and 0.50–1.00 → frames 0…19 and 50…99.
        let regions = ScoredRegions([(0, 0.2), (0.5, 1.0)])
        let mask = regions.mask(frameCount: 100)
        #expect(mask.filter { $0 }.count == 70)
        let score = VADScoring.score(
            stream: "alice", reference: Self.reference,
            system: [Segment(speaker: "alice", start: 0.10, duration: 0.50)], duration: 1, collar: 0, scored: mask)
        // Alice's own speech in scored frames: 10…19 (all detected). System on 50…59: false alarms,
        // all of them on bob's voice; bob's voice alone in scored frames: 50…69.
        #expect(score.counts == DetectionCounts(truePositives: 10, falsePositives: 10, falseNegatives: 0, trueNegatives: 50))
        #expect(score.leaked == LeakCounts(frames: 20, falseAlarms: 10))
    }
}

@Suite struct FloorScoringExtensionTests {
    @Test func floorSegmentsBecomeChangesOfHolder() {
        let decisions = FloorScoring.decisions(from: [
            Segment(speaker: "b", start: 3, duration: 2), Segment(speaker: "a", start: 0, duration: 3),
            Segment(speaker: "a", start: 6, duration: 1),
        ])
        #expect(decisions.map(\.time) == [0, 3, 5, 6, 7])
        #expect(decisions.map(\.holder) == ["a", "b", nil, "a", nil])
    }

    @Test func scoredRegionsLimitTheFloor() {
        // Reference: a 0–4 s, nobody 4–6 s, b 6–10 s; the system names b 0.8 s late.
        // Scored: 5–10 s only. Held time scored 6.5–10 (the collar around 6 s), wrong 6.5–6.8;
        // nobody time scored 5.0–5.5; the change at 4 s is outside, the change at 6 s inside;
        // the switches at 0 and 4 s are not counted.
        let reference = [Segment(speaker: "a", start: 0, duration: 4), Segment(speaker: "b", start: 6, duration: 4)]
        let mask = ScoredRegions([(5, 10)]).mask(frameCount: 1000)
        let score = FloorScoring.score(
            reference: reference, decisions: [(0, "a"), (4, nil), (6.8, "b")], duration: 10, scored: mask)
        #expect(abs(score.duration - 5) < 1e-9)
        #expect(abs(score.heldSeconds - 3.5) < 0.011)
        #expect(abs(score.accuracy - 3.2 / 3.5) < 0.003)
        #expect(abs(score.nobodySeconds - 0.5) < 0.011)
        #expect(score.nobodyAccuracy == 1)
        #expect(score.latencies.count == 1)
        #expect(abs(score.latencies[0]! - 0.8) < 0.011)
        #expect(score.switches == 1)
        #expect(abs(score.switchesPerMinute - 12) < 1e-6)
    }

    @Test func withoutRegionsTheScoreIsUnchanged() {
        let reference = [Segment(speaker: "a", start: 0, duration: 4), Segment(speaker: "b", start: 6, duration: 4)]
        let decisions: [(time: Double, holder: String?)] = [(0, "a"), (4, nil), (6.8, "b")]
        let all = ScoredRegions([(0, 10)]).mask(frameCount: 1000)
        let plain = FloorScoring.score(reference: reference, decisions: decisions, duration: 10)
        let masked = FloorScoring.score(reference: reference, decisions: decisions, duration: 10, scored: all)
        #expect(plain == masked)
    }
}

@Suite struct MeetingScoreTests {
    static let reference = MeetingReference(
        speech: [
            Segment(speaker: "alice", start: 0.5, duration: 1.0), Segment(speaker: "bob", start: 2.0, duration: 1.0),
        ],
        floor: [Segment(speaker: "alice", start: 0.5, duration: 1.5), Segment(speaker: "bob", start: 2.0, duration: 1.0)])

    @Test func aPerfectSystemScoresPerfectly() throws {
        let output = SystemOutput(speech: Self.reference.speech, floorSegments: Self.reference.floor)
        let score = MeetingScore(
            meeting: "m", system: "oracle", streams: ["alice", "bob"], reference: Self.reference, output: output,
            duration: 4)
        #expect(score.vad.count == 2)
        #expect(score.vad[0].counts.f1 == 1 && score.vad[0].counts.falseAlarmRate == 0)
        #expect(score.vad[0].counts.total == 800)  // 2 streams × 400 frames
        #expect(score.vad[0].leaked == LeakCounts(frames: 200, falseAlarms: 0))
        let floor = try #require(score.floor)
        #expect(floor.accuracy == 1 && floor.nobodyAccuracy == 1 && floor.latencies == [0, 0])
    }

    @Test func aSystemWithoutFloorOrAMeetingWithoutReferenceScoresNoFloor() {
        let output = SystemOutput(speech: Self.reference.speech, floor: nil)
        #expect(MeetingScore(meeting: "m", system: "s", streams: ["alice", "bob"], reference: Self.reference, output: output, duration: 4).floor == nil)
        let noFloor = MeetingReference(speech: Self.reference.speech, floor: nil)
        let full = SystemOutput(speech: Self.reference.speech, floorSegments: Self.reference.floor)
        #expect(MeetingScore(meeting: "m", system: "s", streams: ["alice", "bob"], reference: noFloor, output: full, duration: 4).floor == nil)
    }

    @Test func poolingAddsFramesAndFloorTime() throws {
        let perfect = MeetingScore(
            meeting: "m1", system: "s", streams: ["alice", "bob"], reference: Self.reference,
            output: SystemOutput(speech: Self.reference.speech, floorSegments: Self.reference.floor), duration: 4)
        // Deaf system: no speech, nobody ever.
        let deaf = MeetingScore(
            meeting: "m2", system: "s", streams: ["alice", "bob"], reference: Self.reference,
            output: SystemOutput(speech: [], floor: []), duration: 4)
        let pooled = PooledScore(system: "s", scores: [perfect, deaf])
        #expect(pooled.meetings == 2 && pooled.streams == 4 && pooled.duration == 8)
        #expect(pooled.vad[0].counts.recall == 0.5)
        #expect(pooled.vad[0].counts.precision == 1)
        let floor = try #require(pooled.floor)
        #expect(abs(floor.accuracy - 0.5) < 1e-9)
        #expect(floor.missedChanges == 2 && floor.latencies.count == 4)
    }

    @Test func theReportCarriesEveryMetric() throws {
        let output = SystemOutput(speech: [Segment(speaker: "alice", start: 0.5, duration: 2.0)], floor: [(0.6, "alice")])
        let score = MeetingScore(
            meeting: "m", system: "s", streams: ["alice", "bob"], reference: Self.reference, output: output, duration: 4)
        let report = EvaluationReport(dataset: "d", systems: ["s"], scores: [[score]])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        #expect(json["collars"] as? [Double] == [0, 0.25])
        let pooled = try #require((json["pooled"] as? [[String: Any]])?.first)
        let vad = try #require((pooled["vad"] as? [[String: Any]])?.first)
        for key in ["precision", "recall", "f1", "missRate", "falseAlarmRate", "balancedAccuracy", "detectionCost", "leakedFalseAlarmRate"] {
            #expect(vad[key] is Double, "\(key)")
        }
        // Alice's system is on 0.5–2.5 s: bob speaks alone 2.0–3.0, so 50 of his 100 frames are leaks.
        #expect(vad["leakedFalseAlarms"] as? Int == 50)
        let floor = try #require(pooled["floor"] as? [String: Any])
        for key in ["accuracy", "nobodyAccuracy", "medianLatency", "p90Latency", "falseSwitchesPerMinute", "switchesPerMinute"] {
            #expect(floor[key] is Double, "\(key)")
        }
        #expect(floor["missed"] as? Int == 1)
    }
}

@Suite struct DatasetTests {
    @Test func findsTheFixtureMeetings() throws {
        let meetings = try Dataset.meetings(at: FixturePaths.file("meetings"))
        #expect(meetings.map(\.name) == ["m1-clean", "m2-noisy", "m3-music"])
        #expect(meetings[0].audioFiles.map { ($0 as NSString).lastPathComponent } == ["alice.flac", "bob.flac", "carol.flac"])
        #expect(meetings.allSatisfy { $0.floorReference != nil })
        // A meeting folder is a dataset of one.
        #expect(try Dataset.meetings(at: FixturePaths.file("meetings/m3-music")).map(\.name) == ["m3-music"])
    }

    @Test func badDatasetsSayWhatIsWrong() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("dataset-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        func kind(_ path: String) -> EvaluationError.Kind? {
            do {
                _ = try Dataset.meetings(at: path)
                return nil
            } catch {
                return error.kind
            }
        }
        #expect(kind(root.path) == .noMeetings)
        #expect(kind(root.appendingPathComponent("missing").path) == .noSuchPath)
        let meeting = root.appendingPathComponent("m")
        try FileManager.default.createDirectory(at: meeting, withIntermediateDirectories: true)
        try Data().write(to: meeting.appendingPathComponent("alice.wav"))
        #expect(kind(root.path) == .missingSpeechReference)
        try Data("SPEAKER m 1 0.0 1.0 <NA> <NA> bob <NA> <NA>\n".utf8).write(to: meeting.appendingPathComponent("speech.rttm"))
        let found = try Dataset.meetings(at: root.path)
        #expect(found.count == 1 && found[0].floorReference == nil)
        #expect(throws: EvaluationError.self) { try MeetingReference.load(found[0], streams: ["alice"]) }
        do {
            _ = try MeetingReference.load(found[0], streams: ["alice"])
        } catch {
            #expect(error.kind == .unknownStream("bob"))
            #expect(error.description.hasSuffix("speech.rttm: names stream 'bob', which has no audio file in the meeting"))
        }
    }

    @Test func uemLinesBecomeRegionsPerFile() throws {
        let regions = try UEM.parse(";; scored\nm1 1 0.00 10.50\nm1 1 20 30\n\nm2 1 5.0 6.0\n", path: "x.uem")
        #expect(regions["m1"] == ScoredRegions([(0, 10.5), (20, 30)]))
        #expect(regions["m2"] == ScoredRegions([(5, 6)]))
        #expect(throws: EvaluationError.self) { try UEM.parse("m1 1 5 4\n", path: "x.uem") }
        do {
            _ = try UEM.parse("m1 1 0 1\nm1 1 zero 4\n", path: "x.uem")
        } catch {
            #expect(error.description.hasPrefix("x.uem: malformed: line 2:"))
        }
    }
}

@Suite struct TimelinePlotTests {
    @Test func plotIsWellFormedSVGWithEveryLane() throws {
        let reference = MeetingScoreTests.reference
        let plot = TimelinePlot(
            meeting: "m <1>", duration: 4, streams: ["alice", "bob"], reference: reference,
            systems: [
                .init(name: "ours", output: SystemOutput(speech: reference.speech, floorSegments: reference.floor)),
                .init(name: "other", output: SystemOutput(speech: [Segment(speaker: "bob", start: 0, duration: 4)], floor: [(1, "bob")])),
            ],
            regions: ScoredRegions([(0, 3)]), captions: ["ours: perfect & proud"])
        let svg = plot.svg()
        let parser = XMLParser(data: Data(svg.utf8))
        #expect(parser.parse(), "well-formed XML: \(parser.parserError.map { "\($0)" } ?? "")")
        #expect(svg.contains("m &lt;1&gt;"))
        #expect(svg.contains("perfect &amp; proud"))
        for label in [">alice<", ">bob<", ">reference<", ">ours<", ">other<", "floor (dominant speaker)", "not scored"] {
            #expect(svg.contains(label), "\(label)")
        }
        // Bob's false alarm while alice speaks alone is a leaked voice (dark red).
        #expect(svg.contains("#8b0000"))
    }
}
