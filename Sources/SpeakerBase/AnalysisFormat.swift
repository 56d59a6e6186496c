/// The engine's internal audio format: 16 kHz mono Float32 samples (full scale ±1), analysed in 10 ms hops.
///
/// Every source is converted to this format once, at the edge (see SpeakerIO), so the core never resamples.
public enum AnalysisFormat {
    /// Samples per second.
    public static let sampleRate = 16_000
    /// Samples per hop (10 ms): one frame of analysis and one decision per stream.
    public static let hopSize = 160
    /// Seconds per hop.
    public static let hopDuration = 0.01
    /// Samples in the spectral analysis window (32 ms, the current hop and the 352 samples before it).
    public static let windowSize = 512
    /// Number of bins of the real FFT of one window (0 Hz to 8 kHz inclusive), 31.25 Hz apart.
    public static let binCount = windowSize / 2 + 1
    /// Hertz between two FFT bins.
    public static let binSpacing = Float(sampleRate) / Float(windowSize)
}
