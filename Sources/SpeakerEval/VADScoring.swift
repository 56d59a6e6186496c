/// Frames where another participant speaks and this one does not (by the reference), and how many
/// of them a system marked as this participant's speech: false alarms on leaked voices.
public struct LeakCounts: Sendable, Equatable, Codable {
    /// Scored frames with someone else's speech and none of this stream's own.
    public var frames = 0
    /// Those of them the system marked as speech.
    public var falseAlarms = 0

    public init() {}

    public init(frames: Int, falseAlarms: Int) {
        self.frames = frames
        self.falseAlarms = falseAlarms
    }

    /// falseAlarms / frames, 0…1; nil when no frame has leaked speech (e.g. a single stream).
    public var falseAlarmRate: Double? { frames > 0 ? Double(falseAlarms) / Double(frames) : nil }

    /// The counts of two streams or meetings together (pooling).
    public static func + (a: LeakCounts, b: LeakCounts) -> LeakCounts {
        LeakCounts(frames: a.frames + b.frames, falseAlarms: a.falseAlarms + b.falseAlarms)
    }
}

/// Voice-activity figures of one stream (or several pooled) at one collar.
public struct VADScore: Sendable, Equatable, Codable {
    /// Frame counts against the stream's own speech.
    public var counts = DetectionCounts()
    /// False alarms on other participants' speech.
    public var leaked = LeakCounts()

    public init() {}

    public init(counts: DetectionCounts, leaked: LeakCounts) {
        self.counts = counts
        self.leaked = leaked
    }

    /// The figures of two streams or meetings together (pooling).
    public static func + (a: VADScore, b: VADScore) -> VADScore {
        VADScore(counts: a.counts + b.counts, leaked: a.leaked + b.leaked)
    }
}

/// Scores a stream's voice activity against that participant's own speech, in 10 ms frames.
///
/// Reference speech of the other participants is non-speech for this stream: a system that marks a
/// neighbour's voice leaking into this microphone makes false alarms, counted overall
/// (`counts.falsePositives`) and separately (`leaked`).
public enum VADScoring {
    /// The collars scored: none, and ±0.25 s around each of the stream's own reference boundaries.
    public static let collars: [Double] = [0, 0.25]

    /// - Parameters:
    ///   - stream: the stream id (the speaker field of its segments).
    ///   - reference: every participant's reference speech; those of `stream` are its own.
    ///   - system: the system's speech segments for `stream`.
    ///   - duration: seconds scored from t = 0.
    ///   - collar: seconds around each of the stream's own reference boundaries left unscored.
    ///   - scored: frames to score (from a UEM file), or nil for all.
    /// - Complexity: O(frames + segments).
    public static func score(
        stream: String, reference: [Segment], system: [Segment], duration: Double, collar: Double,
        scored: [Bool]? = nil
    ) -> VADScore {
        let own = reference.filter { $0.speaker == stream }
        let others = reference.filter { $0.speaker != stream }
        let counts = FrameScoring.score(
            reference: own, system: system, duration: duration, collar: collar, scored: scored)
        let frameCount = Int((duration / FrameScoring.frameDuration).rounded())
        let ownActive = FrameScoring.activity(own, frameCount: frameCount)
        let otherActive = FrameScoring.activity(others, frameCount: frameCount)
        let decided = FrameScoring.activity(system, frameCount: frameCount)
        let excluded = FrameScoring.collarMask(own, frameCount: frameCount, collar: collar)
        var leaked = LeakCounts()
        for i in 0..<frameCount where otherActive[i] && !ownActive[i] && !excluded[i] {
            if let scored, i >= scored.count || !scored[i] { continue }
            leaked.frames += 1
            if decided[i] { leaked.falseAlarms += 1 }
        }
        return VADScore(counts: counts, leaked: leaked)
    }
}
