import SpeakerCore

/// How late one stream arrives, as in a real call where capture, encoder, network and jitter buffer
/// differ per participant: a fixed delay and a drift (two clocks running at slightly different rates).
///
/// The delay at time `t` of the original recording is `delay + drift · t` seconds. Only the differences
/// between a room's streams matter, so `SkewPlan` makes every delay at most 0 at the start: a stream
/// that arrives earlier than the latest one has its first moments cut (it was already running when the
/// latest stream began), and no stream begins with digital silence that the original did not have.
public struct StreamSkew: Sendable, Equatable {
    /// Seconds the stream arrives late at its start (negative: early, its first `-delay` seconds cut).
    public var delay: Double
    /// Seconds of extra delay per second of recording (20 ms per minute is 1/3000).
    public var drift: Double

    public init(delay: Double, drift: Double = 0) {
        self.delay = delay
        self.drift = drift
    }

    /// The delay at original time `t`, seconds.
    public func delay(at t: Double) -> Double { delay + drift * t }

    /// Where original time `t` lies in the skewed stream (negative: cut).
    public func skewed(_ t: Double) -> Double { t + delay(at: t) }

    /// The recording as it arrives: read at the drifting rate (linear interpolation between samples),
    /// starting `delay` late (digital silence before it) or `-delay` into it.
    /// - Parameter samples: at `AnalysisFormat.sampleRate`.
    public func apply(to samples: [Float]) -> [Float] {
        let rate = Double(AnalysisFormat.sampleRate)
        guard !samples.isEmpty else { return samples }
        let lastTime = Double(samples.count) / rate
        let count = max(0, Int((skewed(lastTime) * rate).rounded()))
        var output = [Float](repeating: 0, count: count)
        // Output sample n is at time u = n / rate; it shows original time t with t + delay + drift·t = u.
        let scale = 1 / (1 + drift)
        for n in 0..<count {
            let t = (Double(n) / rate - delay) * scale
            guard t >= 0 else { continue }
            let position = t * rate
            let index = Int(position)
            guard index < samples.count else { break }
            let fraction = Float(position - Double(index))
            let next = index + 1 < samples.count ? samples[index + 1] : samples[index]
            output[n] = samples[index] + fraction * (next - samples[index])
        }
        return output
    }
}

/// Per-stream skews for a meeting, drawn from a seed: reproducible anywhere (`eval --skew`).
public struct SkewPlan: Sendable, Equatable {
    /// The skew of each stream, by stream id.
    public var skews: [String: StreamSkew]

    public init(skews: [String: StreamSkew]) { self.skews = skews }

    /// Draws each stream's delay uniformly in 0…`maxDelay` and its drift uniformly in ±`maxDrift`, then
    /// takes the latest start off every delay (a common delay changes nothing; only the differences
    /// between streams matter), so that the latest stream starts as recorded and the others are cut.
    /// - Parameters:
    ///   - streams: stream ids, in the meeting's order.
    ///   - maxDelay: seconds, ≥ 0.
    ///   - maxDrift: seconds per second, ≥ 0.
    ///   - duration: the meeting's length, seconds.
    ///   - seed: with the meeting's name, picks the draw.
    public static func draw(
        streams: [String], maxDelay: Double, maxDrift: Double, duration: Double, meeting: String, seed: UInt64
    ) -> SkewPlan {
        var generator = SplitMix64(seed: seed ^ fnv1a(meeting))
        var skews = streams.map { _ in
            StreamSkew(
                delay: generator.unit() * maxDelay, drift: maxDrift > 0 ? (2 * generator.unit() - 1) * maxDrift : 0)
        }
        let latest = skews.map(\.delay).max() ?? 0
        skews = skews.map { StreamSkew(delay: $0.delay - latest, drift: $0.drift) }
        return SkewPlan(skews: Dictionary(uniqueKeysWithValues: zip(streams, skews)))
    }

    /// The references as they arrive: each stream's speech shifted with its stream; each floor holding
    /// shifted with its holder's stream, a holding cut short where the next (shifted) one starts. What
    /// moves before 0 is cut.
    public func apply(to reference: MeetingReference) -> MeetingReference {
        let speech = reference.speech.compactMap(shift)
        let floor = reference.floor.map { segments in
            var shifted = segments.compactMap(shift).sorted { $0.start < $1.start }
            for index in shifted.indices.dropLast() where shifted[index].end > shifted[index + 1].start {
                shifted[index].duration = shifted[index + 1].start - shifted[index].start
            }
            return shifted.filter { $0.duration > 0 }
        }
        return MeetingReference(speech: speech, floor: floor)
    }

    private func shift(_ segment: Segment) -> Segment? {
        guard let skew = skews[segment.speaker] else { return segment }
        let start = max(0, skew.skewed(segment.start)), end = skew.skewed(segment.end)
        return end > start ? Segment(speaker: segment.speaker, start: start, duration: end - start) : nil
    }

    /// FNV-1a of a name: a stable hash (Swift's `Hasher` changes per process).
    static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }
}

/// SplitMix64: a small generator whose output is the same on every platform and Swift version.
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
