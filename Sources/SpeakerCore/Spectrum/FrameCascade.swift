/// The first stage of a stream's per-frame analysis: from the hop's time-domain energy alone (a SIMD
/// sum of squares and a first-difference energy, tens of instructions), decides whether the spectral
/// stage — the 512-point FFT, the per-bin noise tracker, the band loops and, on sounding frames,
/// periodicity and the sound classifier — must run on this frame, or whether the frame can keep the
/// last analysis's spectral features with its own hop's energy.
///
/// The spectral stage runs on every frame of a stream inside an utterance, and outside one on every
/// frame it cannot rule out:
///
/// | the frame | when the spectral stage runs |
/// |---|---|
/// | inside an utterance (`mayRest` false) | every frame |
/// | *sounding*: the last analysed frame stood `voicedSNR` above the noise | every frame |
/// | *onset*: the hop is more than `onsetRise` dB louder than the last analysed frame's | every frame |
/// | *quiet*: the hop, through a first-difference filter, within `quietMargin` of the noise floor's, and not below `silenceDBFS` | every `quietRefresh`-th frame |
/// | *resting*: any other frame | every `restingInterval`-th frame |
///
/// A carried frame has no speech evidence (the last analysed frame stood below `voicedSNR`, and
/// the hop is not much louder than it), so the voice activity detector decides it alone. The noise
/// floor the test compares with is the spectral stage's own per-bin noise estimate, fed back after
/// each analysis as its power through the same first-difference filter (which stresses the speech
/// band over rumble), so the spectral stage wakes with a noise estimate that kept learning at a
/// slower rate: every analysed frame updates it, told how many hops passed.
///
/// Streams take turns: each starts its cycle at its own phase, so a tick's spectral work stays even.
///
/// Real-time safe; O(1) state (two dozen words plus the last analysed frame's features); per frame
/// O(hop) only on quiet-test frames.
struct FrameCascade {
    /// What the first stage decided for a frame.
    enum Route: Equatable {
        /// Run the spectral stage.
        case analyse
        /// Keep the last analysis's spectral features (see `carried(_:)`).
        case carry
    }

    /// A hop this much louder (dB) than the last analysed frame's always wakes the spectral stage.
    static let onsetRise: Float = 3
    /// Hops quieter than this (dBFS) — digital silence, dither, a muted microphone — are never *quiet*,
    /// only resting: against a floor of digital silence the noise estimate that a noise onset is judged
    /// by must be as well learnt as without the cascade (the cold-start tests: white noise after dithered
    /// silence was taken for speech when silence was analysed on every 6th frame only).
    static let silenceDBFS: Float = -80

    /// Counts frames of a stream outside an utterance; those that are not a multiple of the interval
    /// that applies are carried.
    private(set) var restingCount: Int
    /// Frames carried since the last analysis.
    var skipped = 0
    /// The spectral features of the last analysed frame.
    var lastAnalysed = FrameFeatures()
    /// Power of the noise estimate through a first-difference filter at the last analysis, dBFS.
    var differencedNoiseDBFS: Float = Levels.floorDBFS

    /// - Parameter phase: where this stream starts its cycle (streams given different phases analyse
    ///   their resting frames on different ticks).
    init(phase: Int = 0) {
        restingCount = phase
    }

    /// Whether the cascade can carry frames at all under `c`: otherwise every frame is analysed.
    static func mayCarry(_ c: VoiceActivityConfiguration) -> Bool {
        c.restingInterval > 1 || c.quietRefresh > 1
    }

    /// Decides one frame.
    /// - Parameters:
    ///   - frame: the hop's time-domain features (`energyDBFS` is read).
    ///   - hop: the hop's samples.
    ///   - previous: the sample before the hop (for the first-difference filter).
    ///   - mayRest: the stream is outside an utterance.
    ///   - c: the configuration (`restingInterval`, `quietRefresh`, `quietMargin`, `voicedSNR`).
    /// - Returns: `.analyse` or `.carry`; on `.carry`, `skipped` has been counted.
    mutating func route(
        _ frame: FrameFeatures, hop: UnsafeBufferPointer<Float>, previous: Float, mayRest: Bool,
        configuration c: VoiceActivityConfiguration
    ) -> Route {
        guard mayRest, Self.mayCarry(c) else { return .analyse }
        restingCount += 1
        let last = lastAnalysed
        guard last.segmentalSNR < c.voicedSNR, frame.energyDBFS <= last.energyDBFS + Self.onsetRise else {
            return .analyse
        }
        var interval = c.restingInterval
        if c.quietRefresh > interval, c.quietMargin > 0, frame.energyDBFS >= Self.silenceDBFS {
            let differenced = Levels.dBFS(
                meanSquare: Kernels.differenceEnergy(hop, previous: previous) / Float(hop.count))
            if differenced < differencedNoiseDBFS + c.quietMargin { interval = c.quietRefresh }
        }
        guard restingCount % interval != 0 else { return .analyse }
        skipped += 1
        return .carry
    }

    /// A carried frame's features: the last analysis's spectral features with this hop's own
    /// time-domain measurements.
    func carried(_ frame: FrameFeatures) -> FrameFeatures {
        var carried = lastAnalysed
        carried.energyDBFS = frame.energyDBFS
        carried.meanSquare = frame.meanSquare
        carried.level = frame.level
        carried.zeroCrossingRate = frame.zeroCrossingRate
        carried.windowEnergyDBFS = frame.windowEnergyDBFS
        return carried
    }

    /// Records an analysed frame: its features and the noise floor the quiet test compares with.
    mutating func analysed(_ features: FrameFeatures, differencedNoiseDBFS: Float) {
        lastAnalysed = features
        self.differencedNoiseDBFS = differencedNoiseDBFS
        skipped = 0
    }
}
