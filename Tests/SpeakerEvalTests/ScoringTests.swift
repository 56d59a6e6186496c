import Testing
@testable import SpeakerEval

/// Metrics on small cases computed by hand.
@Suite struct FrameScoringTests {
    @Test func countsFramesByTheirCentres() {
        // Reference 0.10–0.30 s (frames 10…29), system 0.20–0.40 s (frames 20…39), 0.5 s = 50 frames.
        let counts = FrameScoring.score(
            reference: [Segment(speaker: "a", start: 0.10, duration: 0.20)],
            system: [Segment(speaker: "a", start: 0.20, duration: 0.20)], duration: 0.5)
        #expect(counts == DetectionCounts(truePositives: 10, falsePositives: 10, falseNegatives: 10, trueNegatives: 20))
        #expect(counts.precision == 0.5)
        #expect(counts.recall == 0.5)
        #expect(counts.f1 == 0.5)
        #expect(abs(counts.falseAlarmRate - 10.0 / 30) < 1e-12)
        #expect(abs(counts.balancedAccuracy - (0.5 + 20.0 / 30) / 2) < 1e-12)
        #expect(abs(counts.detectionCost - (0.25 * 10.0 / 30 + 0.75 * 0.5)) < 1e-12)
    }

    @Test func collarLeavesFramesAroundReferenceBoundariesUnscored() {
        // Boundaries at 0.10 and 0.30 with a 0.05 s collar: frames 5…14 and 25…34 are not scored.
        let counts = FrameScoring.score(
            reference: [Segment(speaker: "a", start: 0.10, duration: 0.20)],
            system: [Segment(speaker: "a", start: 0.12, duration: 0.20)], duration: 0.5, collar: 0.05)
        #expect(counts.total == 30)
        #expect(counts.falsePositives == 0 && counts.falseNegatives == 0)
        #expect(counts.truePositives == 10)
    }

    @Test func emptySystemHasZeroPrecisionAndFullMiss() {
        let counts = FrameScoring.score(reference: [Segment(speaker: "a", start: 0, duration: 1)], system: [], duration: 1)
        #expect(counts.precision == 0 && counts.recall == 0 && counts.missRate == 1)
    }
}

@Suite struct FloorScoringTests {
    /// Reference: a 0–4 s, nobody 4–6 s, b 6–10 s.
    static let reference = [Segment(speaker: "a", start: 0, duration: 4), Segment(speaker: "b", start: 6, duration: 4)]

    @Test func perfectSystem() {
        let score = FloorScoring.score(
            reference: Self.reference, decisions: [(0, "a"), (4, nil), (6, "b")], duration: 10)
        #expect(score.accuracy == 1 && score.nobodyAccuracy == 1)
        #expect(score.latencies == [0, 0])
        #expect(score.switches == 3 && score.falseSwitches == 0)
    }

    @Test func lateSwitchCostsAccuracyAndShowsItsLatency() {
        // b named 0.8 s late; nobody kept until then.
        let score = FloorScoring.score(
            reference: Self.reference, decisions: [(0, "a"), (4, nil), (6.8, "b")], duration: 10)
        #expect(score.latencies.count == 2)
        #expect(abs(score.latencies[1]! - 0.8) < 0.011)
        // Held time scored: 0.5–3.5 and 6.5–10 (±0.5 s collars at 0, 4 and 6) = 6.5 s; 6.5–6.8 wrong.
        #expect(abs(score.heldSeconds - 6.5) < 0.011)
        #expect(abs(score.accuracy - 6.2 / 6.5) < 0.002)
        #expect(score.medianLatency == 0.0 && abs(score.p90Latency! - 0.8) < 0.011)
    }

    @Test func switchToSomeoneWhoNeverHoldsItIsFalse() {
        let score = FloorScoring.score(
            reference: Self.reference, decisions: [(0, "a"), (2, "c"), (2.3, "a"), (4, nil), (6, "b")], duration: 10)
        #expect(score.falseSwitches == 1)
        #expect(score.switches == 5)
        #expect(abs(score.switchesPerMinute - 30) < 1e-9)
    }

    @Test func unfollowedChangeIsMissed() {
        let score = FloorScoring.score(reference: Self.reference, decisions: [(0, "a")], duration: 10)
        #expect(score.missedChanges == 1)
        #expect(score.nobodyAccuracy == 0)
    }
}
