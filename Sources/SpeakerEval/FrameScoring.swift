/// Frame counts of a binary detector against a reference: true/false positives and negatives.
public struct DetectionCounts: Sendable, Equatable, Codable {
    public var truePositives = 0
    public var falsePositives = 0
    public var falseNegatives = 0
    public var trueNegatives = 0

    public init() {}

    public init(truePositives: Int, falsePositives: Int, falseNegatives: Int, trueNegatives: Int) {
        self.truePositives = truePositives
        self.falsePositives = falsePositives
        self.falseNegatives = falseNegatives
        self.trueNegatives = trueNegatives
    }

    /// Frames scored.
    public var total: Int { truePositives + falsePositives + falseNegatives + trueNegatives }
    /// TP / (TP + FP); 0 when nothing was detected.
    public var precision: Double { ratio(truePositives, truePositives + falsePositives) }
    /// TP / (TP + FN); 0 when the reference has no positives.
    public var recall: Double { ratio(truePositives, truePositives + falseNegatives) }
    /// Harmonic mean of precision and recall: 2·TP / (2·TP + FP + FN).
    public var f1: Double { ratio(2 * truePositives, 2 * truePositives + falsePositives + falseNegatives) }
    /// P_miss = FN / (TP + FN).
    public var missRate: Double { ratio(falseNegatives, truePositives + falseNegatives) }
    /// P_fa = FP / (FP + TN).
    public var falseAlarmRate: Double { ratio(falsePositives, falsePositives + trueNegatives) }
    /// Mean of recall and specificity: (1 − P_miss + 1 − P_fa) / 2.
    public var balancedAccuracy: Double { (2 - missRate - falseAlarmRate) / 2 }
    /// Detection cost 0.25·P_fa + 0.75·P_miss (lower is better).
    public var detectionCost: Double { 0.25 * falseAlarmRate + 0.75 * missRate }

    public static func + (a: DetectionCounts, b: DetectionCounts) -> DetectionCounts {
        DetectionCounts(
            truePositives: a.truePositives + b.truePositives, falsePositives: a.falsePositives + b.falsePositives,
            falseNegatives: a.falseNegatives + b.falseNegatives, trueNegatives: a.trueNegatives + b.trueNegatives)
    }

    private func ratio(_ a: Int, _ b: Int) -> Double { b == 0 ? 0 : Double(a) / Double(b) }
}

/// Scores activity segments frame by frame (10 ms frames by default).
public enum FrameScoring {
    /// The default frame length, seconds.
    public static let frameDuration = 0.01

    /// Marks the frames covered by segments: frame i covers [i·d, (i+1)·d) and is active when its
    /// centre lies inside a segment.
    /// - Complexity: O(frames + covered frames).
    public static func activity(_ segments: [Segment], frameCount: Int, frameDuration: Double = frameDuration) -> [Bool] {
        var active = [Bool](repeating: false, count: frameCount)
        for segment in segments {
            let first = max(0, Int((segment.start / frameDuration - 0.5).rounded(.up)))
            let last = min(frameCount - 1, Int((segment.end / frameDuration - 0.5).rounded(.up)) - 1)
            if first <= last { for i in first...last { active[i] = true } }
        }
        return active
    }

    /// Frames not scored: those whose centre lies within `collar` seconds of a reference boundary.
    public static func collarMask(
        _ reference: [Segment], frameCount: Int, collar: Double, frameDuration: Double = frameDuration
    ) -> [Bool] {
        var excluded = [Bool](repeating: false, count: frameCount)
        guard collar > 0 else { return excluded }
        for boundary in reference.flatMap({ [$0.start, $0.end] }) {
            let first = max(0, Int(((boundary - collar) / frameDuration - 0.5).rounded(.up)))
            let last = min(frameCount - 1, Int(((boundary + collar) / frameDuration - 0.5).rounded(.down)))
            if first <= last { for i in first...last { excluded[i] = true } }
        }
        return excluded
    }

    /// Scores one stream's system segments against its reference over `duration` seconds.
    /// - Parameters:
    ///   - collar: seconds around each reference boundary left unscored (0 scores every frame).
    ///   - scored: frames to score (e.g. from a UEM file), `frameCount` long; nil scores every frame.
    public static func score(
        reference: [Segment], system: [Segment], duration: Double, collar: Double = 0,
        frameDuration: Double = frameDuration, scored: [Bool]? = nil
    ) -> DetectionCounts {
        let frameCount = Int((duration / frameDuration).rounded())
        let truth = activity(reference, frameCount: frameCount, frameDuration: frameDuration)
        let decided = activity(system, frameCount: frameCount, frameDuration: frameDuration)
        let excluded = collarMask(reference, frameCount: frameCount, collar: collar, frameDuration: frameDuration)
        var counts = DetectionCounts()
        for i in 0..<frameCount where !excluded[i] && (scored.map { i < $0.count && $0[i] } ?? true) {
            switch (truth[i], decided[i]) {
            case (true, true): counts.truePositives += 1
            case (false, true): counts.falsePositives += 1
            case (true, false): counts.falseNegatives += 1
            case (false, false): counts.trueNegatives += 1
            }
        }
        return counts
    }
}
