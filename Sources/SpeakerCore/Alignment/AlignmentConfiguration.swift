/// Tunables of stream alignment: streams of one room arrive apart (capture, encoder, network and
/// jitter buffer differ per participant), and the decision compares them only after lining them up.
///
/// Each stream's delay relative to the others is measured from the audio itself: a voice heard by
/// two microphones gives both streams the same syllable rhythm, and the lag that best lines up their
/// energy envelopes is the difference of their delays (`LagEstimator`). The room then holds back the
/// evidence of its earlier streams so that every stream is judged at the time of the latest one
/// (`RoomAlignment`), at most `maxDelay` behind.
public struct AlignmentConfiguration: Codable, Sendable, Equatable {
    /// The largest delay between two streams that is measured and made up for, seconds, 0…1. Also the
    /// most an early stream's decisions wait for the latest one. Default 0.3 s; 0 takes the streams as
    /// aligned (no measuring, no waiting: sample-aligned files from one recorder).
    public var maxDelay: Double = 0.3
    /// Envelope correlation, 0…1, that a lag needs to be trusted: streams that do not hear a common
    /// voice never reach it. Default 0.85: on the tuning sets (dev, dev2, real-dev; co-located
    /// meetings), against 0.75, aligned streams keep their figures (VAD F1 within 0.003 of taking
    /// them as aligned, against up to 0.010) for less of the gain at 200 ms apart (docs/evaluation.md).
    public var correlation: Float = 0.85
    /// How much the correlation at the best lag must exceed the best one at least 50 ms away, 0…1: an
    /// envelope that correlates about as well at many lags (a steady rhythm) says nothing of the lag.
    /// Default 0.05.
    public var distinctness: Float = 0.05
    /// Length of the envelopes compared, seconds, 0.32…2.56 (a multiple of 80 ms). Default 1.28 s.
    public var window: Double = 1.28
    /// Frames between two measurements in a room, 1…100. Each measures one stream against the room's
    /// loudest talker, in turn. Default 2 (20 ms): on the tuning sets against 4, streams 200 ms apart
    /// are lined up sooner (dev: VAD F1 0.883 → 0.893) with aligned streams unchanged.
    public var interval: Int = 2

    /// How much later a leaked copy's envelope follows its source's in streams that are aligned,
    /// seconds, 0…0.1: the sound's way across the room, and a quiet copy rising above its microphone's
    /// noise only at a syllable's loudest part. Taken off every measurement. Default 0.02 s (the
    /// median lag measured on the aligned co-located real-dev meetings: 2 frames).
    public var leakLag: Double = 0.02
    /// A stream that would need to wait this little for a source, seconds, waits for nothing: the
    /// leakage filter's look-back covers a source this little late, and measurements scatter by about
    /// as much. Default 0.015 s.
    public var tolerance: Double = 0.015

    public init() {}

    /// Whether streams are measured and aligned at all.
    public var isEnabled: Bool { maxDelay > 0 }

    func validate() throws(ConfigurationError) {
        try ConfigurationError.check(maxDelay >= 0 && maxDelay <= 1, "alignment.maxDelay", "0…1 s")
        try ConfigurationError.check(correlation > 0 && correlation <= 1, "alignment.correlation", "0…1 (above 0)")
        try ConfigurationError.check(distinctness >= 0 && distinctness <= 1, "alignment.distinctness", "0…1")
        let frames = (window / AnalysisFormat.hopDuration).rounded()
        try ConfigurationError.check(
            window >= 0.32 && window <= 2.56 && Int(frames) % 8 == 0, "alignment.window",
            "0.32…2.56 s, a multiple of 0.08 s")
        try ConfigurationError.check(interval >= 1 && interval <= 100, "alignment.interval", "1…100 frames")
        try ConfigurationError.check(leakLag >= 0 && leakLag <= 0.1, "alignment.leakLag", "0…0.1 s")
        try ConfigurationError.check(tolerance >= 0 && tolerance <= 0.1, "alignment.tolerance", "0…0.1 s")
    }

    /// `maxDelay` in whole frames.
    var maxLagFrames: Int { Int((maxDelay / AnalysisFormat.hopDuration).rounded()) }
    /// `window` in whole frames (a multiple of 8).
    var windowFrames: Int { Int((window / AnalysisFormat.hopDuration).rounded()) }
}
