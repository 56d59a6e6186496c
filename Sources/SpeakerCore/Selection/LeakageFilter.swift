/// Tunables of leakage suppression: one voice heard by several microphones of a room.
public struct LeakageConfiguration: Codable, Sendable, Equatable {
    /// Turn leakage suppression on or off. Default on.
    public var enabled = true
    /// How much louder, relative to each stream's own speech level, the source must be than the
    /// stream it leaks into, when their envelopes also correlate. Default 6 dB.
    public var margin: Float = 6
    /// Correlation of the two streams' recent energy envelopes above which they carry the same
    /// sound, 0…1. Default 0.2 (reverberation smears the leaked copy's envelope).
    public var correlation: Float = 0.2
    /// A level difference (as for `margin`) beyond which the quieter stream is leakage whatever the
    /// correlation: no one talks that far below their own voice while another talks. Default 18 dB.
    public var strongMargin: Float = 18
    /// Own speech level assumed for a stream that has not spoken yet, dBFS. Default −30.
    public var initialSpeechLevel: Float = -30
    /// Time constant with which each stream's own speech level falls, seconds of speech; it rises
    /// four times faster, so it follows the stream's louder speech frames (about its 80th percentile).
    /// Default 2 s.
    public var speechLevelTimeConstant: Double = 2

    public init() {}

    func validate() throws(ConfigurationError) {
        try ConfigurationError.check(margin >= 0 && margin <= 60, "leakage.margin", "0…60 dB")
        try ConfigurationError.check(correlation >= -1 && correlation <= 1, "leakage.correlation", "−1…1")
        try ConfigurationError.check(
            strongMargin >= margin && strongMargin <= 80, "leakage.strongMargin", "margin…80 dB")
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
/// Two different voices talking at once do not. `LeakageFilter` compares envelopes over the last 200 ms.
/// The envelope holds each frame's speech-band energy above the noise floor, so steady noise flattens out.
///
/// The ring lives inline in the stream's state (80 bytes, no heap array), so appending to it costs
/// no uniqueness check or reference counting. The two levels the leakage filter asks for — this
/// frame's and the loudest over its look-back — are kept up to date on append, once per frame, rather
/// than searched for each pair of streams compared.
struct EnergyEnvelope {
    static let length = 20
    /// Speech-band excess energies in dBFS, a ring of `length` floats (16 + 4, contiguous).
    private var ring = (SIMD16<Float>(repeating: Levels.floorDBFS), SIMD4<Float>(repeating: Levels.floorDBFS))
    private var next = 0
    /// The newest value, dBFS.
    private(set) var latest = Levels.floorDBFS
    /// The loudest value over the last `LeakageFilter.lookback` frames, dBFS.
    private(set) var lookbackMaximum = Levels.floorDBFS

    mutating func append(_ energyDBFS: Float) {
        let newest = next
        let window = LeakageFilter.lookback
        latest = energyDBFS
        let previousMaximum = lookbackMaximum
        lookbackMaximum = withUnsafeMutableBytes(of: &ring) { bytes in
            let values = bytes.assumingMemoryBound(to: Float.self)
            // The value leaving the look-back window (the ring is longer than the window, so it is
            // still there). Unless it was the maximum and the new value is lower, the maximum follows
            // from the old one in O(1); otherwise the window is scanned.
            let leaving = values[(newest + Self.length - window) % Self.length]
            values[newest] = energyDBFS
            if energyDBFS >= previousMaximum || leaving < previousMaximum { return max(previousMaximum, energyDBFS) }
            var maximum = energyDBFS
            var k = 1, index = newest
            while k < window {
                index = index == 0 ? Self.length - 1 : index - 1
                maximum = max(maximum, values[index])
                k += 1
            }
            return maximum
        }
        next = next == Self.length - 1 ? 0 : next + 1
    }

    /// Pearson correlation of two envelopes over their last `length` frames, −1…1 (0 when either is flat).
    ///
    /// Both rings advance together (one append per tick), but each from the tick its stream was added, so the
    /// same slot of two rings holds the same time only when the two streams were added a multiple of `length`
    /// ticks apart: the frames are paired by time, each ring read from its own oldest slot. (Paired by slot, as
    /// until 2026-12-07, two live streams that joined 1–19 ticks apart were compared 1–19 frames apart, and a
    /// leaked voice passed as speech; files, whose streams all start at tick 0, never showed it.)
    static func correlation(_ a: EnergyEnvelope, _ b: EnergyEnvelope) -> Float {
        withUnsafeBytes(of: a.ring) { xBytes in
            withUnsafeBytes(of: b.ring) { yBytes in
                let x = xBytes.assumingMemoryBound(to: Float.self), y = yBytes.assumingMemoryBound(to: Float.self)
                // The oldest slot of each ring is its next; `shift` maps a's slot of a time to b's.
                let shift = (b.next - a.next + length) % length
                let n = Float(length)
                var sumX: Float = 0, sumY: Float = 0
                for i in 0..<length {
                    sumX += x[i]
                    sumY += y[i]
                }
                let meanX = sumX / n, meanY = sumY / n
                var sxy: Float = 0, sxx: Float = 0, syy: Float = 0
                for i in 0..<length {
                    let j = i + shift < length ? i + shift : i + shift - length
                    let dx = x[i] - meanX, dy = y[j] - meanY
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
/// Stream `i` (with speech evidence this frame) is leakage when some other stream `j` of the room
/// was, over the last `lookback` frames, at least `margin` dB louder at
/// its loudest relative to its own speech level than `i` is now relative to its own, and their energy envelopes
/// correlate above `correlation` — or at least `strongMargin` dB louder, correlated or not. Looking back over a few frames covers the reverberant tail of a
/// leaked syllable, which outlasts the syllable at its source. Comparing each stream with its own
/// speech level (not raw loudness) lets a quiet own voice win over a loud neighbour's leak.
enum LeakageFilter {
    /// Frames over which the source's loudest level is taken (150 ms).
    static let lookback = 15

    /// - Parameters:
    ///   - candidates: indices of the room's streams with speech evidence this frame.
    ///   - sources: indices of the room's streams that may be a source.
    ///   - currentLevel: a stream's frame energy now minus its own speech level, dB.
    ///   - recentLevel: a stream's loudest frame energy over the last `lookback` frames minus its own
    ///     speech level, dB.
    ///   - envelope: energy envelope per stream index.
    ///   - isLeak: called for each candidate judged to be leakage.
    /// - Complexity: O(c·s) envelope comparisons for c candidates and s sources (both rarely above 3).
    static func mark(
        candidates: UnsafeBufferPointer<Int>,
        sources: UnsafeBufferPointer<Int>,
        currentLevel: (Int) -> Float,
        recentLevel: (Int) -> Float,
        envelope: (Int) -> EnergyEnvelope,
        configuration: LeakageConfiguration,
        isLeak: (Int) -> Void
    ) {
        guard configuration.enabled, sources.count > 0 else { return }
        var c = 0
        while c < candidates.count {
            let i = candidates[c]
            c += 1
            let levelI = currentLevel(i)
            var s = 0
            while s < sources.count {
                let j = sources[s]
                s += 1
                guard j != i else { continue }
                let difference = recentLevel(j) - levelI
                guard difference >= configuration.margin else { continue }
                if difference >= configuration.strongMargin
                    || EnergyEnvelope.correlation(envelope(i), envelope(j)) >= configuration.correlation
                {
                    isLeak(i)
                    break
                }
            }
        }
    }
}
