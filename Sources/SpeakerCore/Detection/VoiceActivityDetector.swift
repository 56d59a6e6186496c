/// Tunables of the per-stream voice activity detector. Times in seconds, levels in dB.
public struct VoiceActivityConfiguration: Codable, Sendable, Equatable {
    /// Length of the minimum-statistics window of the noise tracker. Longer resists long vowels,
    /// shorter follows rising noise sooner. Default 1.6 s.
    public var noiseWindow: Double = 1.6
    /// Factor between the tracked minimum and the mean noise power (minimum statistics bias). Default 3.
    public var noiseBias: Float = 3
    /// Periodicity is measured on each bin's power ÷ (this × its noise estimate), floored at 1, so
    /// that only what rises above the noise can look periodic. Default 1.
    public var overSubtraction: Float = 1
    /// Hops quieter than this (dBFS) are never speech. Default −65 dBFS.
    public var minimumLevel: Float = -65
    /// Segmental SNR (dB) a voiced frame needs. Default 3 dB.
    public var voicedSNR: Float = 3
    /// Periodicity a voiced frame needs, 0…1. Default 0.3.
    public var voicedPeriodicity: Float = 0.3
    /// Segmental SNR (dB) that keeps an unvoiced frame inside a running utterance. Default 4 dB.
    public var unvoicedSNR: Float = 4
    /// A voiced hop may be at most this much quieter than its 32 ms window: a quieter hop only
    /// follows a transient (a click, a knock). Default 6 dB.
    public var transientDrop: Float = 6
    /// Outside an utterance, a frame whose hop, through a first-difference filter, is within this many
    /// dB of the stream's noise floor through the same filter is *quiet*: the first stage of the
    /// analysis (`FrameCascade`) sends only every `quietRefresh`-th such frame to the spectral stage.
    /// Default 3 dB; 0 turns the quiet test off.
    public var quietMargin: Float = 3
    /// Of a stream's quiet frames (see `quietMargin`; also resting, see `restingInterval`), every
    /// this-many-th is fully analysed, so the noise floor keeps learning; the frames between keep the
    /// last analysis's spectral features with their own hop's energy. Default 3: on the bundled
    /// meetings at 1,024 streams 13,819 → 13,149 instructions per stream-frame against 1, a stream of
    /// steady noise 8,521 → 7,180; every evaluation set within 0.002 VAD F1 and 0.5 % floor accuracy
    /// (docs/benchmarks.md, "The cascade"). 4–6 save more (6: 12,183 per stream-frame) with the
    /// evaluation sets within 0.003 F1, but change the utterances of a real talk resumed after a DTX
    /// pause (ColdStartSpeechTests: 5 loses one its first take had). 1: quiet frames are resting ones.
    public var quietRefresh: Int = 3
    /// A resting stream — outside an utterance, its last analysed frame below `voicedSNR`, its hop at
    /// most 3 dB louder than that frame — is analysed only on every this-many-th frame (streams take
    /// turns, so a tick's work stays even); the frames between keep the last analysis's spectral
    /// features (no speech evidence in them) with their own hop's energy. Any other frame is
    /// analysed. Default 2: about 12 % fewer instructions on the bundled meetings, VAD and floor
    /// accuracy unchanged on the dev and held-out sets; 4 costs floor accuracy. 1 analyses every
    /// resting frame that is not quiet. See `FrameCascade`; `analysis.cascade=false` analyses every frame.
    public var restingInterval: Int = 2
    /// Judge a sound that follows digital silence (a stream's start, an unmute, a DTX pause, a packet
    /// gap) before its frames may be speech evidence: a steady sound (the room's noise coming back) is
    /// taken as the new noise floor instead of being judged against the silence's floor (`ResumeGate`).
    /// Default true; false judges such a sound at once against the floor learnt on the silence.
    public var resumeGate: Bool = true
    /// Speech frames among the last `onsetWindow` hops that start an utterance. Default 3.
    public var onsetFrames: Int = 3
    /// Hops examined for an onset. Default 5 (50 ms).
    public var onsetWindow: Int = 5
    /// How long after the last voiced frame unvoiced frames still continue an utterance. Default 0.15 s.
    public var unvoicedSpan: Double = 0.15
    /// Time without a speech frame that ends an utterance (so pauses shorter than this stay inside
    /// it). Default 0.4 s.
    public var hangover: Double = 0.4
    /// For level streams (RFC 6464 levels, no audio): dB above the stream's level floor that count as
    /// speech when the sender gives no V flag. Default 10 dB.
    public var levelSNR: Float = 10
    /// Spectral flux (dB, rise over 30 ms) below which a sounding frame counts as steady. Default 0.6 dB.
    public var steadyFlux: Float = 0.6
    /// Fraction of steady frames among the sounding frames of the last 320 ms at or above which the
    /// sound is sustained (music, a tone), not speech, 0…1. Default 0.5; 1 turns the test off.
    public var steadyFraction: Float = 0.5
    /// Ask the learned sound classifier (`SoundClassifier`) about every sounding frame (segmental SNR
    /// ≥ 3 dB) and take only frames it finds speech-like as speech evidence: music, and sounds that
    /// are not speech, then never start or continue an utterance, while speech over music or noise
    /// still does. Default true; false leaves the decision to the rules alone.
    public var classifier: Bool = true
    /// The classifier's speech probability, 0…1, at or above which a sounding frame may be speech
    /// evidence. Default 0.3: on the real-audio dev meetings, against 0.5, F1 0.672 → 0.695 and
    /// speech over music found 41 % → 48 %, for 7.6 % → 10.6 % of music-only frames taken for speech;
    /// on the generated dev meetings F1 0.913 → 0.919 and the median floor latency 0.37 → 0.27 s.
    public var speechProbability: Float = 0.3
    /// The classifier runs on every this-many-th sounding frame of a stream; the frames between keep
    /// its last answer. Default 2: half the cost of 1, with the same figures within 0.01 on the
    /// real-audio dev meetings (its context changes over tenths of a second, not 10 ms).
    public var classifierInterval: Int = 2
    /// A stream whose classifier answers, averaged over its sounding frames of about the last second,
    /// give music at least this probability is playing music: none of its frames is speech evidence,
    /// whatever one frame's answer, until the average falls below it. 0…1; default 0.5 (on the
    /// real-audio dev meetings, against 1: music-only frames taken for speech 19.6 % → 11.5 %, a music
    /// microphone holding the floor 28.2 % → 18.4 %, at the cost of speech over music, 68 % → 48 %
    /// recall); 1 turns it off.
    public var musicVeto: Float = 0.5
    /// Ask the learned speech model (`SpeechModel`, issue 30) instead of the sound classifier: it hears
    /// every frame of a stream and says, every `stride` frames, how likely its sound is speech, music
    /// or another sound; `speechProbability` and `musicVeto` then apply to its answers. Default false.
    public var speechModel: Bool = false

    public init() {}

    /// Throws if a value is out of its range.
    func validate() throws(ConfigurationError) {
        try ConfigurationError.check(noiseWindow >= 0.4 && noiseWindow <= 10, "vad.noiseWindow", "0.4…10 s")
        try ConfigurationError.check(noiseBias >= 1 && noiseBias <= 10, "vad.noiseBias", "1…10")
        try ConfigurationError.check(overSubtraction >= 0.1 && overSubtraction <= 10, "vad.overSubtraction", "0.1…10")
        try ConfigurationError.check(minimumLevel >= -127 && minimumLevel <= 0, "vad.minimumLevel", "−127…0 dBFS")
        try ConfigurationError.check(voicedSNR >= 0 && voicedSNR <= 40, "vad.voicedSNR", "0…40 dB")
        try ConfigurationError.check(
            voicedPeriodicity >= 0 && voicedPeriodicity <= 1, "vad.voicedPeriodicity", "0…1")
        try ConfigurationError.check(unvoicedSNR >= 0 && unvoicedSNR <= 40, "vad.unvoicedSNR", "0…40 dB")
        try ConfigurationError.check(onsetWindow >= 1 && onsetWindow <= 32, "vad.onsetWindow", "1…32 hops")
        try ConfigurationError.check(
            onsetFrames >= 1 && onsetFrames <= onsetWindow, "vad.onsetFrames", "1…onsetWindow hops")
        try ConfigurationError.check(hangover >= 0 && hangover <= 5, "vad.hangover", "0…5 s")
        try ConfigurationError.check(levelSNR >= 0 && levelSNR <= 60, "vad.levelSNR", "0…60 dB")
        try ConfigurationError.check(unvoicedSpan >= 0 && unvoicedSpan <= 5, "vad.unvoicedSpan", "0…5 s")
        try ConfigurationError.check(quietMargin >= 0 && quietMargin <= 20, "vad.quietMargin", "0…20 dB")
        try ConfigurationError.check(quietRefresh >= 1 && quietRefresh <= 100, "vad.quietRefresh", "1…100 frames")
        try ConfigurationError.check(
            restingInterval >= 1 && restingInterval <= 4, "vad.restingInterval", "1…4 frames")
        try ConfigurationError.check(transientDrop >= 0 && transientDrop <= 60, "vad.transientDrop", "0…60 dB")
        try ConfigurationError.check(steadyFlux >= 0 && steadyFlux <= 20, "vad.steadyFlux", "0…20 dB")
        try ConfigurationError.check(steadyFraction >= 0 && steadyFraction <= 1, "vad.steadyFraction", "0…1")
        try ConfigurationError.check(
            speechProbability >= 0 && speechProbability <= 1, "vad.speechProbability", "0…1")
        try ConfigurationError.check(musicVeto >= 0 && musicVeto <= 1, "vad.musicVeto", "0…1")
        try ConfigurationError.check(
            classifierInterval >= 1 && classifierInterval <= 10, "vad.classifierInterval", "1…10 frames")
    }
}

/// The per-frame speech evidence and the utterance state machine of one stream.
///
/// A frame is *voiced* when it is loud enough, stands `voicedSNR` above the noise floor, is
/// periodic, and is not just the tail of a transient; an utterance starts when `onsetFrames` of the last `onsetWindow` frames are voiced
/// (its start is dated to the first of them), continues through unvoiced frames that stand
/// `unvoicedSNR` above the floor, and ends `hangover` after the last speech frame (its end is dated
/// to that frame). Decisions are causal: a frame's decision uses audio up to the end of that frame.
struct VoiceActivityDetector {
    /// A change of the utterance state, with the time the change is dated to.
    enum Change: Equatable {
        case none
        case started(onsetFrame: Int)
        case ended(lastSpeechFrame: Int)
    }

    private(set) var speaking = false
    /// Bit i set when the frame i hops ago was voiced.
    private var voicedHistory: UInt32 = 0
    /// Index of the last frame counted as speech.
    private(set) var lastSpeechFrame = Int.min / 2
    /// Index of the last voiced frame of the running utterance.
    private var lastVoicedFrame = Int.min / 2
    /// Index of the first frame of the running utterance.
    private(set) var onsetFrame = 0

    /// Frame-level evidence: is this frame voiced speech?
    static func isVoiced(_ f: FrameFeatures, _ c: VoiceActivityConfiguration) -> Bool {
        f.energyDBFS >= c.minimumLevel && f.segmentalSNR >= c.voicedSNR && f.periodicity >= c.voicedPeriodicity
            && f.energyDBFS >= f.windowEnergyDBFS - c.transientDrop
    }

    /// Frame-level evidence inside an utterance: voiced, or loud enough above the floor.
    static func continuesSpeech(_ f: FrameFeatures, _ c: VoiceActivityConfiguration) -> Bool {
        f.energyDBFS >= c.minimumLevel && f.segmentalSNR >= c.unvoicedSNR
    }

    /// The configuration's times in frames, computed once (not per frame).
    struct Timing {
        let unvoicedSpan: Int
        let hangover: Int

        init(_ c: VoiceActivityConfiguration) {
            unvoicedSpan = Int((c.unvoicedSpan / AnalysisFormat.hopDuration).rounded())
            hangover = Int((c.hangover / AnalysisFormat.hopDuration).rounded())
        }
    }

    /// Advances by one frame.
    /// - Parameters:
    ///   - frame: the frame's index (hops since the engine started).
    ///   - voiced: the frame's voiced evidence (after leakage suppression).
    ///   - continues: the frame's continuation evidence (after leakage suppression).
    ///   - timing: `Timing(c)`, made once.
    mutating func advance(
        frame: Int, voiced: Bool, continues: Bool, configuration c: VoiceActivityConfiguration, timing: Timing
    ) -> Change {
        voicedHistory = (voicedHistory << 1) | (voiced ? 1 : 0)
        let windowMask: UInt32 = c.onsetWindow >= 32 ? .max : (1 << UInt32(c.onsetWindow)) - 1
        let recent = voicedHistory & windowMask
        if speaking {
            if voiced { lastVoicedFrame = frame }
            // Unvoiced frames (fricatives, plosives) continue an utterance only near voiced speech:
            // a run of loud aperiodic frames — typing, rustling — cannot hold it open on its own.
            if voiced || (continues && frame - lastVoicedFrame <= timing.unvoicedSpan) { lastSpeechFrame = frame }
            if frame - lastSpeechFrame >= timing.hangover {
                speaking = false
                return .ended(lastSpeechFrame: lastSpeechFrame)
            }
            return .none
        }
        guard voiced, recent.nonzeroBitCount >= c.onsetFrames else { return .none }
        speaking = true
        lastSpeechFrame = frame
        lastVoicedFrame = frame
        // Date the onset to the oldest voiced frame in the onset window.
        let oldest = UInt32.bitWidth - 1 - recent.leadingZeroBitCount
        onsetFrame = frame - oldest
        return .started(onsetFrame: onsetFrame)
    }

    /// Ends a running utterance now (the stream is leaving).
    mutating func stop() -> Change {
        guard speaking else { return .none }
        speaking = false
        return .ended(lastSpeechFrame: lastSpeechFrame)
    }
}
