/// One stream as its room's decision sees it: the evidence the analysis gave for the current frame,
/// and what the decision keeps from frame to frame — the utterance state, the energy envelope and
/// own speech level that leakage suppression compares, the activity the floor policy observes, and
/// the talk statistics.
///
/// The engine writes `hear(…)` during the analysis of a frame (possibly on another worker than the
/// room's, when a large room's analysis is shared); the room's `RoomDecision` reads and advances the
/// rest after all its members were heard. A class so that the stream and its room share one object.
///
/// `@exclusivity(unchecked)`: as `StreamChannel`, one thread touches a talker at a time.
final class Talker {
    /// The stream's id, carried by its events.
    let id: StreamID

    // The current frame's evidence (set by `hear`).
    /// Speech evidence that can start an utterance.
    @exclusivity(unchecked) private(set) var voiced = false
    /// Evidence that can continue a running utterance.
    @exclusivity(unchecked) private(set) var continues = false
    /// The frame's speech-band energy above the noise floor, dBFS (levels only: the level in dBFS).
    @exclusivity(unchecked) private(set) var excess = Levels.floorDBFS
    /// The frame's RFC 6464 level.
    @exclusivity(unchecked) private(set) var level: UInt8 = 127

    // What the decision keeps.
    /// True when this frame's evidence was judged a neighbour's voice.
    @exclusivity(unchecked) var leak = false
    @exclusivity(unchecked) var vad = VoiceActivityDetector()
    @exclusivity(unchecked) private(set) var envelope = EnergyEnvelope()
    /// Own speech level, dBFS, learnt from frames counted as this stream's speech.
    @exclusivity(unchecked) var speechLevel: Float
    /// What the floor policy observes.
    @exclusivity(unchecked) var activity = SpeakerObservation()
    @exclusivity(unchecked) var statistics = TalkStatistics()

    init(id: StreamID, initialSpeechLevel: Float) {
        self.id = id
        speechLevel = initialSpeechLevel
    }

    /// The analysis's evidence for the current frame. Clears the leak mark of the last frame.
    @inline(__always)
    func hear(voiced: Bool, continues: Bool, excess: Float, level: UInt8) {
        self.voiced = voiced
        self.continues = continues
        self.excess = excess
        self.level = level
        leak = false
        envelope.append(excess)
    }

    /// Whether the frame shows speech evidence before leakage suppression: a voiced frame, or one
    /// that continues a running utterance.
    var hasEvidence: Bool { voiced || (vad.speaking && continues) }

    /// The frame's energy now, relative to the own speech level, dB.
    var currentRelative: Float { envelope.latest - speechLevel }

    /// The loudest frame over the leakage look-back, relative to the own speech level, dB.
    var recentRelative: Float { envelope.lookbackMaximum - speechLevel }
}
