/// Tunables of leakage suppression: one voice heard by several microphones of a room.
public struct LeakageConfiguration: Codable, Sendable, Equatable {
    /// Turn leakage suppression on or off. Default on.
    public var enabled = true
    /// How much louder, relative to each stream's own speech level, the source must be than the
    /// stream it leaks into. Default 6 dB.
    public var margin: Float = 6
    /// Correlation of the two streams' recent energy envelopes above which they carry the same
    /// sound, 0…1. Default 0.6.
    public var correlation: Float = 0.6
    /// Own speech level assumed for a stream that has not spoken yet, dBFS. Default −30.
    public var initialSpeechLevel: Float = -30
    /// Time constant of each stream's own speech level, seconds of speech. Default 2 s.
    public var speechLevelTimeConstant: Double = 2

    public init() {}

    func validate() throws(ConfigurationError) {
        try ConfigurationError.check(margin >= 0 && margin <= 60, "leakage.margin", "0…60 dB")
        try ConfigurationError.check(correlation >= 0 && correlation <= 1, "leakage.correlation", "0…1")
        try ConfigurationError.check(
            initialSpeechLevel >= -127 && initialSpeechLevel <= 0, "leakage.initialSpeechLevel", "−127…0 dBFS")
        try ConfigurationError.check(
            speechLevelTimeConstant >= 0.1 && speechLevelTimeConstant <= 60, "leakage.speechLevelTimeConstant",
            "0.1…60 s")
    }
}

/// The recent energy envelope of one stream, for telling a leaked voice from an own voice.
///
/// A voice that leaks into a neighbour's microphone arrives there a few milliseconds later, quieter and
/// with the same syllable rhythm, so the two streams' frame energies (in dB) rise and fall together.
/// Two different voices talking at once do not. `LeakageFilter` compares envelopes over the last 320 ms.
struct EnergyEnvelope {
    static let length = 32
    /// Frame energies in dBFS, a ring of `length`.
    private var ring = [Float](repeating: Levels.floorDBFS, count: length)
    private var next = 0

    mutating func append(_ energyDBFS: Float) {
        ring[next] = energyDBFS
        next = (next + 1) % Self.length
    }

    /// Pearson correlation of two envelopes over the ring, −1…1 (0 when either is flat).
    static func correlation(_ a: EnergyEnvelope, _ b: EnergyEnvelope) -> Float {
        // Both rings advance together (one append per tick), so equal indices are equal times.
        a.ring.withUnsafeBufferPointer { x in
            b.ring.withUnsafeBufferPointer { y in
                let n = Float(length)
                let meanX = Kernels.sum(x) / n, meanY = Kernels.sum(y) / n
                var sxy: Float = 0, sxx: Float = 0, syy: Float = 0
                for i in 0..<length {
                    let dx = x[i] - meanX, dy = y[i] - meanY
                    sxy += dx * dy
                    sxx += dx * dx
                    syy += dy * dy
                }
                guard sxx > 1e-6, syy > 1e-6 else { return 0 }
                return sxy / (sxx * syy).squareRoot()
            }
        }
    }
}

/// Decides, per room and frame, which streams' speech evidence is only a neighbour's voice.
///
/// Stream `i` is leakage in this frame when some other stream `j` of the room also shows speech
/// evidence, `j` is at least `margin` dB louder relative to its own speech level than `i` is to its
/// own, and their envelopes correlate above `correlation`. Comparing each stream with its own
/// speech level (not raw loudness) lets a quiet own voice win over a loud neighbour's leak.
enum LeakageFilter {
    /// - Parameters:
    ///   - candidates: indices of the room's streams with speech evidence this frame.
    ///   - relativeLevel: frame energy minus own speech level, per stream index, dB.
    ///   - envelope: energy envelope per stream index.
    ///   - isLeak: set to true for each candidate judged to be leakage.
    /// - Complexity: O(c²) envelope comparisons for c candidates (c is rarely above 3).
    static func mark(
        candidates: UnsafeBufferPointer<Int>,
        relativeLevel: (Int) -> Float,
        envelope: (Int) -> EnergyEnvelope,
        configuration: LeakageConfiguration,
        isLeak: (Int) -> Void
    ) {
        guard configuration.enabled, candidates.count > 1 else { return }
        for i in candidates {
            let levelI = relativeLevel(i)
            for j in candidates where j != i {
                guard relativeLevel(j) - levelI >= configuration.margin else { continue }
                if EnergyEnvelope.correlation(envelope(i), envelope(j)) >= configuration.correlation {
                    isLeak(i)
                    break
                }
            }
        }
    }
}
