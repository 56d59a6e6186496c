/// Tunables of stream alignment: streams of one room arrive apart (capture, encoder, network and
/// jitter buffer differ per participant), and the decision compares them only after lining them up.
///
/// Each stream's delay relative to the others is measured from the audio itself: a voice heard by
/// two microphones gives both streams the same syllable rhythm, and the lag that best lines up their
/// energy envelopes is the difference of their delays (`LagEstimator`), once the streams' spectral
/// shapes confirm it. The room then holds back the evidence of its earlier streams so that every
/// stream is judged at the time of the latest one (`RoomAlignment`), at most `maxDelay` behind.
public struct AlignmentConfiguration: Codable, Sendable, Equatable {
    /// The largest delay between two streams that is measured and made up for, seconds, 0…1. Also the
    /// most an early stream's decisions wait for the latest one. Default 0.3 s; 0 takes the streams as
    /// aligned (no measuring, no waiting: sample-aligned files from one recorder).
    public var maxDelay: Double = 0.3
    /// Envelope correlation, 0…1, that makes a lag a candidate, which the streams' spectral shapes must
    /// then confirm (`shape`). Default 0.3: a leak through a browser's noise suppression and gain control
    /// correlates at 0.2–0.56 at its true lag (the recorded fixture, `Fixtures/recorded/browsers-apart`),
    /// so the envelope only proposes and the shape decides. With `shape` above 1 (no shape check), the
    /// envelope alone decides, and a value near 0.85 is needed (the default before shapes were used).
    public var correlation: Float = 0.3
    /// How much the correlation at the best lag must exceed the best one at least 50 ms away, 0…1: an
    /// envelope that correlates about as well at many lags (a steady rhythm) says nothing of the lag.
    /// Default 0.05.
    public var distinctness: Float = 0.05
    /// Length of the envelopes compared, seconds, 0.32…2.56 (a multiple of 80 ms). Default 0.48 s: a
    /// short window follows one talker's voice where a long one mixes the voices around a turn change
    /// (1.28 s before shapes confirmed lags: a short window's chance matches between microphones that
    /// hear nothing in common delayed turns; the shape check rejects them).
    public var window: Double = 0.48
    /// Frames between two measurements in a room, 1…100. Each measures one stream against the room's
    /// loudest talker, in turn. Default 2 (20 ms): on the tuning sets against 4, streams 200 ms apart
    /// are lined up sooner (dev: VAD F1 0.883 → 0.893) with aligned streams unchanged.
    public var interval: Int = 2

    /// Spectral-shape correlation, −1…1, that confirms a candidate lag (`LagEstimator.shapeCorrelation`:
    /// the two streams' band energies less each frame's mean, over the frames where both sound): a voice
    /// heard by two microphones has the same shapes in both at its lag, whatever gain a noise suppressor
    /// gave each frame; two voices, or a chance match of envelopes, do not. Above 1: no shape check (the
    /// envelope correlation alone decides). Default 0.3.
    public var shape: Float = 0.3
    /// How much the shape correlation at the lag must exceed its best at least 50 ms away, 0…2. Default
    /// 0.2. Shape, distinctness and `correlation` were chosen together on the tuning sets (real-dev, a
    /// 60-meeting real-dev3, dev, dev2; streams 0, 200 and 300 ms apart) and the browser fixture
    /// (docs/evaluation.md, "Spectral shapes").
    public var shapeDistinctness: Float = 0.2
    /// Whether delays are chained: streams linked by measured lags are placed on one time line, each
    /// waiting for the latest (a stream that carries a voice early waits for every stream that carries
    /// it later, whether or not the two have heard each other). False: each pair's lag sets a wait for
    /// that pair alone (the engine before 2026-12-05). Default true.
    public var chained = true

    /// How much later a leaked copy's envelope follows its source's in streams that are aligned,
    /// seconds, 0…0.1: the sound's way across the room, and a quiet copy rising above its microphone's
    /// noise only at a syllable's loudest part. Taken off every measurement. Default 0.02 s (the
    /// median lag measured on the aligned co-located real-dev meetings: 2 frames).
    public var leakLag: Double = 0.02
    /// A stream that would need to wait this little for a source, seconds, waits for nothing: the
    /// leakage filter's look-back covers a source this little late, and measurements scatter by about
    /// as much. Default 0.025 s (0.015 s before lags were placed by spectral shapes, which put a leak in
    /// aligned streams ~5 ms late where the envelope put it 10–20 ms late, so that `leakLag` asked a wait
    /// of ~2 frames of streams that need none; equal on the tuning sets).
    public var tolerance: Double = 0.025
    /// Whether the floor reads ahead of a waiting stream: while a stream's evidence waits for a later
    /// stream, a turn it has begun (its judged frame is speech, in a running utterance) is taken to run on
    /// to the newest of its waiting frames that shows speech evidence no more than
    /// `RoomDecision.lookaheadMargin` (15 dB) below its own speech level, so that its owner takes the floor
    /// as soon after the turn's start as if the stream had not waited. Nothing else reads those frames:
    /// the start of an utterance and every leak are still judged at the room's time. Default true (on the
    /// tuning sets at 200 and 300 ms apart: median switch latency 0.02–0.08 s lower, floor accuracy within
    /// −0.3…+2.4 points; aligned streams wait for nothing, so nothing changes for them).
    public var floorLookahead = true

    public init() {}

    /// The alignment before spectral shapes confirmed lags (the engine until 2026-12-05): envelope
    /// correlation 0.85 alone, 1.28 s windows, each pair's wait on its own, 15 ms of tolerance, no floor
    /// look-ahead. For comparisons (`--config alignment.shape=2 --config alignment.correlation=0.85 --config
    /// alignment.window=1.28 --config alignment.chained=false --config alignment.tolerance=0.015 --config
    /// alignment.floorLookahead=false`).
    public static var envelopeOnly: AlignmentConfiguration {
        var configuration = AlignmentConfiguration()
        configuration.shape = 2
        configuration.correlation = 0.85
        configuration.window = 1.28
        configuration.chained = false
        configuration.tolerance = 0.015
        configuration.floorLookahead = false
        return configuration
    }

    /// Whether streams are measured and aligned at all.
    public var isEnabled: Bool { maxDelay > 0 }

    func validate() throws(ConfigurationError) {
        try ConfigurationError.check(maxDelay >= 0 && maxDelay <= 1, "alignment.maxDelay", "0…1 s")
        try ConfigurationError.check(correlation > 0 && correlation <= 1, "alignment.correlation", "0…1 (above 0)")
        try ConfigurationError.check(distinctness >= 0 && distinctness <= 1, "alignment.distinctness", "0…1")
        try ConfigurationError.check(shape >= -1 && shape.isFinite, "alignment.shape", "−1…1, or above 1 for no shape check")
        try ConfigurationError.check(
            shapeDistinctness >= 0 && shapeDistinctness <= 2, "alignment.shapeDistinctness", "0…2")
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
