/// What the engine measures in one 10 ms frame of one stream.
///
/// Energy, level and zero-crossing rate describe the newest hop (160 samples); the spectral
/// features describe the 32 ms window that ends with it (Hann-windowed, 512-point real FFT).
public struct FrameFeatures: Sendable, Equatable {
    /// Energy of the hop in dBFS (a full-scale sine is −3 dBFS; an all-zero hop −127).
    public var energyDBFS: Float = Levels.floorDBFS
    /// Mean of `x²` over the hop (full scale ±1): the energy before taking the logarithm.
    public var meanSquare: Float = 0
    /// Energy of the whole 32 ms window (unweighted) in dBFS. A hop far quieter than its window
    /// follows a transient such as a click, whose echo in the window is not the hop's own sound.
    public var windowEnergyDBFS: Float = Levels.floorDBFS
    /// RFC 6464 level of the hop: 0 (0 dBov) … 127 (silence).
    public var level: UInt8 = 127
    /// Sign changes per sample in the hop, 0…1.
    public var zeroCrossingRate: Float = 0
    /// Energy per band (see `SpectralBands`) in dBFS: the band's share of the window's mean square.
    public var bandEnergyDB = SIMD16<Float>(repeating: Levels.floorDBFS)
    /// Energy per band above the stream's tracked noise floor, in dB (≥ 0 up to estimation noise).
    public var bandSNR = SIMD16<Float>()
    /// Energy above the noise floor in the speech bands (156 Hz – 5.25 kHz), in dBFS: what the
    /// stream carries beyond its steady noise. Leakage is judged on this level, so that a loud
    /// low-frequency rumble on one microphone does not hide a neighbour's voice leaking into it.
    public var speechBandExcessDB: Float = Levels.floorDBFS
    /// Mean over the speech bands (125 Hz – 5.25 kHz) of the band SNR clamped to 0…30 dB.
    public var segmentalSNR: Float = 0
    /// Spectral flatness over 156 Hz – 5.25 kHz, 0 (a pure tone) … 1 (white noise), from band
    /// energies per hertz: geometric mean ÷ arithmetic mean.
    public var flatness: Float = 1
    /// Power-weighted mean frequency of the window, in Hz.
    public var centroidHz: Float = 0
    /// Mean rise of band energy over the last 30 ms (since the spectrum analysed three frames before
    /// this one), in dB; only rises count. Onsets and formant movements are large; a held note, a
    /// decaying chord or a hum stay small.
    public var flux: Float = 0
    /// Periodicity of the part of the spectrum above the noise floor, 0…1: the highest normalised
    /// autocorrelation at lags 2.5–12 ms (pitch 83–400 Hz) of the noise-whitened 0.16–4 kHz
    /// spectrum. Voiced speech is mostly 0.4–1; stationary noise, hum and fans stay below 0.3.
    public var periodicity: Float = 0
    /// The pitch of the best lag, in Hz, meaningful when `periodicity` is high.
    public var pitchHz: Float = 0

    public init() {}

    /// Names of the values `appendColumns` writes, in order: what `activespeaker features --layout
    /// frame` writes per frame, for training (tools/corpus/train_speech_model.py).
    public static let columns: [String] =
        (0..<16).map { "band\($0)_dbfs" } + (0..<16).map { "band\($0)_snr_db" } + [
            "energy_dbfs", "window_energy_dbfs", "zero_crossing_rate", "segmental_snr_db", "flatness",
            "centroid_khz", "flux_db", "periodicity", "pitch_khz", "speech_band_excess_dbfs",
        ]
    /// Values per row of `appendColumns`.
    public static let columnCount = 42

    /// The value of column `index` of `columns`, as `appendColumns` writes it.
    /// - Precondition: `0 <= index < columnCount`.
    @inline(__always)
    public func column(_ index: Int) -> Float {
        switch index {
        case 0..<16: bandEnergyDB[index]
        case 16..<32: bandSNR[index - 16]
        case 32: energyDBFS
        case 33: windowEnergyDBFS
        case 34: zeroCrossingRate
        case 35: segmentalSNR
        case 36: flatness
        case 37: centroidHz / 1000
        case 38: flux
        case 39: periodicity
        case 40: pitchHz / 1000
        case 41: speechBandExcessDB
        default: preconditionFailure("FrameFeatures has no column \(index)")
        }
    }

    /// Appends the features as one row of `columns`. Allocates when `row` must grow: not for the
    /// per-frame path of a call.
    public func appendColumns(to row: inout [Float]) {
        for index in 0..<Self.columnCount { row.append(column(index)) }
    }
}

/// The 16 analysis bands: edges in FFT bins of 31.25 Hz, roughly uniform on the mel scale.
public enum SpectralBands {
    /// Lower edge (inclusive) of each band, and the upper edge of the last, in bins.
    /// Bands: 62–156, 156–250, 250–375, 375–500, 500–656, 656–812, 812–1000, 1000–1250, 1250–1500,
    /// 1500–1875, 1875–2250, 2250–2750, 2750–3375, 3375–4000, 4000–5250, 5250–8000 Hz.
    public static let edges: [Int] = [2, 5, 8, 12, 16, 21, 26, 32, 40, 48, 60, 72, 88, 108, 128, 168, 257]
    /// Bands that carry speech evidence (156 Hz – 5.25 kHz): band 0 holds mains hum, band 15 hiss.
    public static let speechBands = 1..<15
    static let count = 16
    /// 1 ÷ the number of bins in each band.
    static let inverseWidthList: [Float] = (0..<count).map { 1 / Float(edges[$0 + 1] - edges[$0]) }
}
