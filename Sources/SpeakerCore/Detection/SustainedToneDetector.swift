/// Recognises sustained tonal sound — hold music, a ringing tone, a whistle — by its steadiness.
///
/// Speech is periodic only in voiced stretches of a few tens of milliseconds, broken by consonants
/// and pauses several times a second, and its spectrum keeps changing; so over 320 ms its mean
/// periodicity stays below about 0.85 and its mean spectral flux above about 0.8 dB. A synthesised
/// or instrumental note is periodic throughout (mean ≈ 0.9–1) and changes slowly (flux ≈ 0.6 dB).
/// Measured on the generated meetings with hold music (see tools/make_meetings.py).
///
/// Real-time safe; O(1) per frame (running sums over a ring).
struct SustainedToneDetector {
    static let length = 32
    private var periodicity = [Float](repeating: 0, count: length)
    private var flux = [Float](repeating: 0, count: length)
    private var periodicitySum: Float = 0
    private var fluxSum: Float = 0
    private var next = 0
    private var filled = 0

    /// Adds a frame; returns true when the last 320 ms sound like a sustained tone.
    mutating func update(periodicity p: Float, flux f: Float, configuration c: VoiceActivityConfiguration) -> Bool {
        periodicitySum += p - periodicity[next]
        fluxSum += f - flux[next]
        periodicity[next] = p
        flux[next] = f
        next = (next + 1) % Self.length
        filled = min(filled + 1, Self.length)
        guard filled == Self.length else { return false }
        let n = Float(Self.length)
        return periodicitySum / n >= c.tonePeriodicity || (c.toneFlux > 0 && fluxSum / n < c.toneFlux && periodicitySum / n >= c.voicedPeriodicity)
    }
}
