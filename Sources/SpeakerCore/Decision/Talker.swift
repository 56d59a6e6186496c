/// One stream as its room's decision sees it: the evidence the analysis gave for the current frame,
/// and what the decision keeps from frame to frame — the utterance state, the energy envelope and
/// own speech level that leakage suppression compares, the activity the floor policy observes, and
/// the talk statistics.
///
/// The engine writes `hear(…)` during the analysis of a frame (possibly on another worker than the
/// room's, when a large room's analysis is shared) into the stream's `EvidenceHistory`; the room's
/// `RoomDecision`, after all its members were heard, has each talker `present` the frame it judges now —
/// the newest, or an older one while the stream waits for a later stream of the room
/// (`StreamAlignment.delay`) — and reads and advances the rest. A class so that the stream and its
/// room share one object.
///
/// `@exclusivity(unchecked)`: as `StreamChannel`, one thread touches a talker at a time.
final class Talker {
    /// The stream's id, carried by its events.
    let id: StreamID

    // The evidence of the frame judged now (set by `present`).
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
    /// The stream's evidence of its last frames, in its own time.
    @exclusivity(unchecked) var history: EvidenceHistory
    /// Where the stream stands in the room's time, and how long its evidence waits.
    @exclusivity(unchecked) var alignment = StreamAlignment()

    /// - Parameter historyFrames: frames of evidence kept (`RoomAlignment.historyFrames(for:)`); 1 when
    ///   the room's streams are taken as aligned.
    init(id: StreamID, initialSpeechLevel: Float, historyFrames: Int = 1) {
        self.id = id
        speechLevel = initialSpeechLevel
        history = EvidenceHistory(frames: historyFrames)
    }

    /// The analysis's evidence for the stream's newest frame.
    @inline(__always)
    func hear(voiced: Bool, continues: Bool, excess: Float, level: UInt8, shape: SpectralShape = SpectralShape()) {
        history.record(voiced: voiced, continues: continues, excess: excess, level: level, shape: shape)
    }

    /// Makes the frame `alignment.delay` frames before the newest the one judged now (the newest when
    /// the stream waits for nothing). Clears the leak mark of the last frame.
    @inline(__always)
    func present() {
        let frame = history.frame(delay: alignment.delay)
        voiced = frame.voiced
        continues = frame.continues
        excess = frame.excess
        level = frame.level
        leak = false
        envelope.append(frame.excess)
    }

    /// How many frames ahead of the frame judged now the newest of the stream's waiting frames
    /// (`alignment.delay` of them) that shows speech evidence no more than `margin` dB below its own
    /// speech level lies; 0 when none does, or when the stream waits for nothing.
    /// - Complexity: O(`alignment.delay`). Allocates nothing.
    func speechAhead(margin: Float) -> Int {
        let delay = alignment.delay
        var newer = 0
        while newer < delay {
            let frame = history.frame(delay: newer)
            if (frame.voiced || frame.continues) && frame.excess >= speechLevel - margin { return delay - newer }
            newer += 1
        }
        return 0
    }

    /// Whether the frame shows speech evidence before leakage suppression: a voiced frame, or one
    /// that continues a running utterance.
    var hasEvidence: Bool { voiced || (vad.speaking && continues) }

    /// The frame's energy now, relative to the own speech level, dB.
    var currentRelative: Float { envelope.latest - speechLevel }

    /// The loudest frame over the leakage look-back, relative to the own speech level, dB.
    var recentRelative: Float { envelope.lookbackMaximum - speechLevel }
}
