/// The recent past of one stream, summarised for the sound classifier: what its last half second
/// sounded like, band by band, and how it moved.
///
/// Speech and music differ less in any one frame than in how frames follow each other: speech
/// rises and falls with its syllables about four times a second, pauses, and glides in pitch;
/// music holds notes, plays on without pauses and keeps a steadier spectrum. The context keeps,
/// per band of `FrameFeatures.bandEnergyDB`, exponentially weighted statistics over about 0.5 s
/// (mean, spread, and the energy of a 2–8 Hz band-pass of the band's level: its syllable-rate
/// modulation), plus weighted means of the frame-level features (SNR, periodicity, flux,
/// flatness, pitch glide, how often the sound starts and stops).
///
/// `input` is the classifier's input vector, `SoundContext.inputCount` values. Its layout is part of
/// the trained model (see `tools/corpus/train_classifier.py`, which reads it as `activespeaker features`
/// writes it):
///
/// | index | value |
/// | --- | --- |
/// | 0–15 | spectral shape: each band's mean level (τ 0.5 s) minus the mean over bands 1–14, dB |
/// | 16–31 | each band's level spread: the weighted standard deviation (τ 0.5 s), dB |
/// | 32–47 | each band's 2–8 Hz modulation: RMS of a 4 Hz band-pass of its level (τ 0.5 s), dB |
/// | 48 | segmental SNR of this frame ÷ 10 |
/// | 49, 50 | segmental SNR ÷ 10, weighted mean over τ 0.1 s and τ 0.5 s |
/// | 51, 52 | fraction of sounding frames (SNR ≥ the sounding threshold), τ 0.5 s and τ 2 s |
/// | 53 | rate of sounding on/off changes, τ 0.5 s |
/// | 54, 55 | periodicity of this frame; its mean, τ 0.5 s |
/// | 56 | fraction of frames both sounding and periodic (≥ 0.5), τ 0.5 s |
/// | 57 | pitch glide: mean of min(1, |log2 of the pitch ratio|) between consecutive periodic frames, τ 0.5 s |
/// | 58 | fraction of consecutive periodic pairs, τ 0.5 s (57 ÷ 58 is the mean glide per pair) |
/// | 59, 60, 61 | spectral flux of this frame ÷ 5; its mean and standard deviation, τ 0.5 s, ÷ 5 |
/// | 62, 63 | flatness of this frame; its mean, τ 0.5 s |
///
/// Real-time safe: `update` and `input` are O(1) SIMD work over 16 bands, allocate nothing and cannot fail.
public struct SoundContext: Sendable {
    /// Values in `input`.
    public static let inputCount = 64
    /// Segmental SNR (dB) at or above which a frame is sounding.
    static let soundingSNR: Float = 3
    /// Periodicity at or above which a frame counts as periodic for the glide statistics.
    static let periodicThreshold: Float = 0.5

    /// Weights of the exponential averages per 10 ms frame: exp(−0.01 s / τ).
    static let fast: Float = 0.904_837_4  // τ 0.1 s
    static let slow: Float = 0.980_198_7  // τ 0.5 s
    static let long: Float = 0.995_012_5  // τ 2 s

    /// RBJ band-pass biquad at 4 Hz for a 100 Hz frame rate, Q 0.7 (≈ 2–8 Hz), 0 dB at the peak:
    /// y = b0·(x − x₂) − a1·y₁ − a2·y₂.
    static let bandPassB0: Float = 0.150_840_9
    static let bandPassA1: Float = -1.644_962_4
    static let bandPassA2: Float = 0.698_318_2

    private var mean = SIMD16<Float>(repeating: Levels.floorDBFS)
    private var variance = SIMD16<Float>()
    private var x1 = SIMD16<Float>(), x2 = SIMD16<Float>()
    private var y1 = SIMD16<Float>(), y2 = SIMD16<Float>()
    private var modulation = SIMD16<Float>()
    /// Weighted means of the scalar statistics, in the order of `input[49...]`.
    private var snrFast: Float = 0, snrSlow: Float = 0
    private var soundingSlow: Float = 0, soundingLong: Float = 0, toggles: Float = 0
    private var periodicityMean: Float = 0, periodicFraction: Float = 0
    private var glide: Float = 0, glidePairs: Float = 0
    private var fluxMean: Float = 0, fluxVariance: Float = 0
    private var flatnessMean: Float = 1
    private var wasSounding = false
    /// log2 of the last frame's pitch (0 when that frame was not periodic; `lastPeriodic` says which).
    private var lastLogPitch: Float = 0
    private var lastPeriodic = false
    private var started = false

    /// Share of sounding frames over about the last half second (weighted, τ 0.5 s), 0…1.
    var recentSounding: Float { soundingSlow }

    /// The last frame's own values, kept for `input`.
    private var lastSNR: Float = 0, lastPeriodicity: Float = 0, lastFlux: Float = 0, lastFlatness: Float = 1

    /// The classifier's input for the last frame given to `update`, computed on demand (the engine
    /// asks only on sounding frames).
    public var input: Input {
        var result = Input()
        // Spectral shape: the mean levels relative to their average over the speech bands 1…14.
        let speechMean = (mean.sum() - mean[0] - mean[15]) * (1 / Float(14))
        result.shape = mean - speechMean
        result.spread = variance.squareRoot()
        result.modulation = modulation.squareRoot()
        result.scalars = SIMD16<Float>(
            lastSNR * 0.1, snrFast * 0.1, snrSlow * 0.1, soundingSlow,
            soundingLong, toggles, lastPeriodicity, periodicityMean,
            periodicFraction, glide, glidePairs, lastFlux,
            fluxMean, fluxVariance.squareRoot(), lastFlatness, flatnessMean)
        return result
    }

    public init() {}

    /// The classifier's input vector: four groups of 16 values.
    public struct Input: Sendable, Equatable {
        public var shape = SIMD16<Float>()
        public var spread = SIMD16<Float>()
        public var modulation = SIMD16<Float>()
        public var scalars = SIMD16<Float>()

        public init() {}

        /// Value `index` (0 ..< `SoundContext.inputCount`).
        public subscript(index: Int) -> Float {
            switch index >> 4 {
            case 0: shape[index & 15]
            case 1: spread[index & 15]
            case 2: modulation[index & 15]
            default: scalars[index & 15]
            }
        }
    }

    /// Adds one frame.
    /// - Parameter f: the frame's features (band energies, SNR, periodicity, flux, flatness, pitch).
    public mutating func update(_ f: FrameFeatures) {
        let bands = f.bandEnergyDB.lanewiseMax(SIMD16(repeating: -120))
        if !started {
            // Start from the first frame rather than from silence, so the first half second does not
            // read as one large rise.
            mean = bands
            x1 = bands
            x2 = bands
            started = true
        }
        let slow = SIMD16<Float>(repeating: Self.slow)
        let deviation = bands - mean
        mean += (1 - slow) * deviation
        variance = slow * variance + (1 - slow) * deviation * deviation
        let y = Self.bandPassB0 * (bands - x2) - Self.bandPassA1 * y1 - Self.bandPassA2 * y2
        x2 = x1
        x1 = bands
        y2 = y1
        y1 = y
        modulation = slow * modulation + (1 - slow) * y * y

        let snr = f.segmentalSNR
        let sounding = snr >= Self.soundingSNR
        let periodic = sounding && f.periodicity >= Self.periodicThreshold
        let a = Self.slow, b = 1 - Self.slow
        snrFast = Self.fast * snrFast + (1 - Self.fast) * snr
        snrSlow = a * snrSlow + b * snr
        soundingSlow = a * soundingSlow + (sounding ? b : 0)
        soundingLong = Self.long * soundingLong + (sounding ? 1 - Self.long : 0)
        toggles = a * toggles + (sounding != wasSounding ? b : 0)
        wasSounding = sounding
        periodicityMean = a * periodicityMean + b * f.periodicity
        periodicFraction = a * periodicFraction + (periodic ? b : 0)
        let logPitch = periodic ? FastMath.log2(max(f.pitchHz, 1)) : 0
        let pair = periodic && lastPeriodic
        glide = a * glide + (pair ? b * min(abs(logPitch - lastLogPitch), 1) : 0)
        glidePairs = a * glidePairs + (pair ? b : 0)
        lastPeriodic = periodic
        lastLogPitch = logPitch
        let flux = f.flux * 0.2
        let fluxDeviation = flux - fluxMean
        fluxMean += b * fluxDeviation
        fluxVariance = a * fluxVariance + b * fluxDeviation * fluxDeviation
        flatnessMean = a * flatnessMean + b * f.flatness
        lastSNR = snr
        lastPeriodicity = f.periodicity
        lastFlux = flux
        lastFlatness = f.flatness
    }
}
