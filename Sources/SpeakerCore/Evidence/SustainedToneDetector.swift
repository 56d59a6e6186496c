/// Recognises sustained sound — hold music, a ringing tone, a whistle, a machine starting — by its
/// steadiness.
///
/// Speech keeps changing: syllables start and stop several times a second and formants glide, so
/// most of its sounding frames rise by more than `steadyFlux` in some bands over 30 ms. A held note,
/// a decaying chord or a tone changes little over 30 ms. (Over 30 ms rather than 10 ms: a 10 ms
/// difference is dominated by the frame-to-frame wobble of noise and beating partials, which made
/// synthetic hold music look as changeful as speech.) Only *sounding* frames (standing `voicedSNR` above the
/// noise floor) of the last 320 ms count, so the silence between two notes does not hide the second
/// note's steadiness; at least `minimumSounding` of them are needed before anything is called steady.
///
/// Real-time safe; O(1) per frame (running counts over a ring).
struct SustainedToneDetector {
    /// Frames in the ring (the bits of a `UInt32`).
    static let length = 32
    static let minimumSounding = 10
    /// Bit `i`: frame `i` of the ring was sounding (steady); inline, no heap allocation.
    private var sounding: UInt32 = 0
    private var steady: UInt32 = 0
    private var soundingCount = 0
    private var steadyCount = 0
    private var next = 0

    /// Adds a frame; returns true when the sounding frames of the last 320 ms are mostly steady.
    mutating func update(_ f: FrameFeatures, configuration c: VoiceActivityConfiguration) -> Bool {
        let bit: UInt32 = 1 << UInt32(next)
        if sounding & bit != 0 { soundingCount -= 1 }
        if steady & bit != 0 { steadyCount -= 1 }
        let isSounding = f.segmentalSNR >= c.voicedSNR
        let isSteady = isSounding && f.flux < c.steadyFlux
        sounding = isSounding ? sounding | bit : sounding & ~bit
        steady = isSteady ? steady | bit : steady & ~bit
        if isSounding { soundingCount += 1 }
        if isSteady { steadyCount += 1 }
        next = (next + 1) % Self.length
        guard c.steadyFraction < 1, soundingCount >= Self.minimumSounding else { return false }
        return Float(steadyCount) >= c.steadyFraction * Float(soundingCount)
    }
}
