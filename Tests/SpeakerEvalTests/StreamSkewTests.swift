import Testing
@testable import SpeakerEval
import SpeakerCore

/// Streams made to arrive apart for `eval --skew`: audio and references moved together.
@Suite struct StreamSkewTests {
    @Test func aWholeSampleDelayShiftsTheSamplesExactly() {
        let samples = (0..<1000).map { Float($0) / 1000 }
        let late = StreamSkew(delay: 0.01).apply(to: samples)  // 160 samples at 16 kHz
        #expect(late.count == 1160)
        #expect(late[..<160].allSatisfy { $0 == 0 })
        #expect(Array(late[160...]) == samples)
        // An early stream: its first 160 samples were sent before the latest stream began.
        let early = StreamSkew(delay: -0.01).apply(to: samples)
        #expect(early == Array(samples[160...]))
    }

    @Test func driftStretchesTheStreamByItsRate() {
        // +20 ms per minute over 60 s: the stream ends 20 ms later, a sound at 30 s is 10 ms late.
        let samples = [Float](repeating: 0.5, count: 60 * 16_000)
        let skew = StreamSkew(delay: 0, drift: 0.02 / 60)
        #expect(skew.apply(to: samples).count == 60 * 16_000 + 320)
        #expect(abs(skew.skewed(30) - 30.01) < 1e-9)
        var click = [Float](repeating: 0, count: 40 * 16_000)
        click[30 * 16_000] = 1
        let moved = skew.apply(to: click)
        let peak = moved.indices.max { moved[$0] < moved[$1] }!
        #expect(abs(peak - (30 * 16_000 + 160)) <= 1)
    }

    @Test func referencesMoveWithTheirStreams() {
        let plan = SkewPlan(skews: ["a": StreamSkew(delay: -0.2), "b": StreamSkew(delay: 0)])
        let reference = MeetingReference(
            speech: [
                Segment(speaker: "a", start: 0.1, duration: 0.05), Segment(speaker: "a", start: 1, duration: 2),
                Segment(speaker: "b", start: 3, duration: 1),
            ],
            floor: [Segment(speaker: "b", start: 0.5, duration: 1.0), Segment(speaker: "a", start: 1.6, duration: 2)])
        let moved = plan.apply(to: reference)
        // a's first segment was cut with the start of its stream; the second moves 0.2 s earlier.
        #expect(moved.speech.count == 2)
        #expect(abs(moved.speech[0].start - 0.8) < 1e-9 && abs(moved.speech[0].duration - 2) < 1e-9)
        #expect(moved.speech[1] == Segment(speaker: "b", start: 3, duration: 1))
        // a's holding moves to 1.4…3.4 and cuts b's (not moved) short there.
        let floor = moved.floor!
        #expect(floor.count == 2)
        #expect(floor[0].speaker == "b" && abs(floor[0].start - 0.5) < 1e-9)
        #expect(abs(floor[0].end - 1.4) < 1e-9 && abs(floor[1].start - 1.4) < 1e-9 && abs(floor[1].end - 3.4) < 1e-9)
    }

    @Test func theDrawIsReproducibleBoundedAndNeverNegative() {
        let streams = ["alice", "bob", "carol", "dave"]
        let first = SkewPlan.draw(
            streams: streams, maxDelay: 0.2, maxDrift: 0.02 / 60, duration: 45, meeting: "m1", seed: 7)
        let again = SkewPlan.draw(
            streams: streams, maxDelay: 0.2, maxDrift: 0.02 / 60, duration: 45, meeting: "m1", seed: 7)
        let other = SkewPlan.draw(
            streams: streams, maxDelay: 0.2, maxDrift: 0.02 / 60, duration: 45, meeting: "m2", seed: 7)
        #expect(first == again)
        #expect(first != other)
        for skew in first.skews.values {
            // The latest stream starts at 0; the others up to 0.2 s earlier (cut).
            #expect(skew.delay <= 0 && skew.delay >= -0.2)
            #expect(abs(skew.drift) <= 0.02 / 60)
        }
        #expect(first.skews.values.contains { $0.delay == 0 })
        // Without drift the delays differ between streams.
        let fixed = SkewPlan.draw(streams: streams, maxDelay: 0.3, maxDrift: 0, duration: 45, meeting: "m1", seed: 1)
        #expect(fixed.skews.values.allSatisfy { $0.drift == 0 && $0.delay <= 0 && $0.delay >= -0.3 })
        #expect(Set(fixed.skews.values.map(\.delay)).count == streams.count)
    }
}
