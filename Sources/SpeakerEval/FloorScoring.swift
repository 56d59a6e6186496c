/// How well a system followed the floor (the dominant speaker) of one meeting.
public struct FloorScore: Sendable, Equatable, Codable {
    /// Scored seconds where the reference names exactly one holder, and how many of them the system named.
    public var heldSeconds = 0.0
    public var heldCorrectSeconds = 0.0
    /// Scored seconds where the reference says nobody, and how many of them the system said nobody.
    public var nobodySeconds = 0.0
    public var nobodyCorrectSeconds = 0.0
    /// Per reference change to a new holder: seconds until the system first named that holder, or nil
    /// when it did not within `FloorScoring.missedAfter`.
    public var latencies: [Double?] = []
    /// System changes of holder (to someone or to nobody).
    public var switches = 0
    /// System changes to someone who holds the reference floor nowhere within ±`FloorScoring.collar`.
    public var falseSwitches = 0
    /// Seconds scored in total (the meeting's length).
    public var duration = 0.0

    public init() {}

    /// Fraction of held time with the right holder named, 0…1.
    public var accuracy: Double { heldSeconds > 0 ? heldCorrectSeconds / heldSeconds : 0 }
    /// Fraction of nobody time with nobody named, 0…1.
    public var nobodyAccuracy: Double { nobodySeconds > 0 ? nobodyCorrectSeconds / nobodySeconds : 0 }
    /// Latencies of the changes the system followed, sorted.
    public var followedLatencies: [Double] { latencies.compactMap { $0 }.sorted() }
    /// Reference changes not followed within `FloorScoring.missedAfter`.
    public var missedChanges: Int { latencies.filter { $0 == nil }.count }
    /// Median latency of followed changes, seconds (nil without any).
    public var medianLatency: Double? { FloorScore.quantile(followedLatencies, 0.5) }
    /// 90th percentile latency of followed changes, seconds (nil without any).
    public var p90Latency: Double? { FloorScore.quantile(followedLatencies, 0.9) }
    /// Switches per minute of audio.
    public var switchesPerMinute: Double { duration > 0 ? Double(switches) * 60 / duration : 0 }
    /// False switches per minute of audio.
    public var falseSwitchesPerMinute: Double { duration > 0 ? Double(falseSwitches) * 60 / duration : 0 }

    /// Adds another meeting's figures (pooling).
    public static func + (a: FloorScore, b: FloorScore) -> FloorScore {
        var sum = a
        sum.heldSeconds += b.heldSeconds
        sum.heldCorrectSeconds += b.heldCorrectSeconds
        sum.nobodySeconds += b.nobodySeconds
        sum.nobodyCorrectSeconds += b.nobodyCorrectSeconds
        sum.latencies += b.latencies
        sum.switches += b.switches
        sum.falseSwitches += b.falseSwitches
        sum.duration += b.duration
        return sum
    }

    /// The nearest-rank quantile q (0…1) of sorted values.
    static func quantile(_ sorted: [Double], _ q: Double) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let rank = Int((q * Double(sorted.count)).rounded(.up))
        return sorted[min(sorted.count - 1, max(0, rank - 1))]
    }
}

/// Scores a system's dominant-speaker decisions against a floor reference.
///
/// The reference is a list of floor intervals (speaker = holder); time outside them is nobody.
/// - Accuracy: over time with exactly one reference holder, leaving ±`collar` around each reference
///   change unscored; nobody accuracy likewise over reference nobody time.
/// - Latency: from each reference change to a holder until the system first names that holder;
///   missed if not within `missedAfter`.
/// - False switch: a system change to a holder who holds the reference floor nowhere within ±`collar`
///   of the change.
/// Time is scored in 10 ms frames by their centres.
public enum FloorScoring {
    public static let collar = 0.5
    public static let missedAfter = 5.0

    /// - Parameters:
    ///   - reference: floor intervals; overlapping intervals are not expected (the later one wins).
    ///   - decisions: the system's changes of holder, in time order, `nil` for nobody; nobody before the first.
    ///   - duration: seconds of the meeting.
    ///   - scored: frames to score (e.g. from a UEM file); nil scores the whole meeting. Outside them no
    ///     time is scored, no reference change is timed and no switch is counted, and `duration` of the
    ///     score is the scored time.
    public static func score(
        reference: [Segment], decisions: [(time: Double, holder: String?)], duration: Double, scored: [Bool]? = nil
    ) -> FloorScore {
        let step = FrameScoring.frameDuration
        let frameCount = Int((duration / step).rounded())
        var truth = [String?](repeating: nil, count: frameCount)
        for segment in reference.sorted(by: { $0.start < $1.start }) {
            let first = max(0, Int((segment.start / step - 0.5).rounded(.up)))
            let last = min(frameCount - 1, Int((segment.end / step - 0.5).rounded(.up)) - 1)
            if first <= last { for i in first...last { truth[i] = segment.speaker } }
        }
        var system = [String?](repeating: nil, count: frameCount)
        var next = 0
        var holder: String? = nil
        for i in 0..<frameCount {
            let centre = (Double(i) + 0.5) * step
            while next < decisions.count && decisions[next].time <= centre {
                holder = decisions[next].holder
                next += 1
            }
            system[i] = holder
        }
        // Reference changes, as frame indices where the holder differs from the frame before.
        let changes = (0..<frameCount).filter { $0 > 0 ? truth[$0] != truth[$0 - 1] : truth[0] != nil }
        func isScored(_ frame: Int) -> Bool { scored.map { frame < $0.count && $0[frame] } ?? true }
        var excluded = (0..<frameCount).map { !isScored($0) }
        let collarFrames = Int((collar / step).rounded())
        for change in changes {
            for i in max(0, change - collarFrames)..<min(frameCount, change + collarFrames) { excluded[i] = true }
        }

        var score = FloorScore()
        score.duration = scored == nil ? duration : Double((0..<frameCount).filter(isScored).count) * step
        for i in 0..<frameCount where !excluded[i] {
            if let expected = truth[i] {
                score.heldSeconds += step
                if system[i] == expected { score.heldCorrectSeconds += step }
            } else {
                score.nobodySeconds += step
                if system[i] == nil { score.nobodyCorrectSeconds += step }
            }
        }
        for change in changes where isScored(change) {
            guard let newHolder = truth[change] else { continue }
            let limit = min(frameCount, change + Int((missedAfter / step).rounded()) + 1)
            let followed = (change..<limit).first { system[$0] == newHolder }
            score.latencies.append(followed.map { Double($0 - change) * step })
        }
        var previous: String? = nil
        for decision in decisions where decision.holder != previous {
            previous = decision.holder
            if scored != nil {
                let frame = Int((decision.time / step).rounded(.down))
                guard frame < frameCount, isScored(max(0, frame)) else { continue }
            }
            score.switches += 1
            guard let named = decision.holder else { continue }
            let first = max(0, Int(((decision.time - collar) / step).rounded(.down)))
            let last = min(frameCount - 1, Int(((decision.time + collar) / step).rounded(.up)))
            let holdsNearby = first <= last && (first...last).contains { truth[$0] == named }
            if !holdsNearby { score.falseSwitches += 1 }
        }
        return score
    }
}
