/// Tunables of dominant-speaker selection. Times in seconds.
public struct SelectionConfiguration: Codable, Sendable, Equatable {
    /// The name of every room's dominant-speaker policy, one of the engine's `FloorPolicies`. Default
    /// `hysteresis`, ours; SpeakerEval's baselines (`volfin-cohen`, `livekit`, `chime`, `loudest`) are for
    /// comparison.
    public var policy: String = SelectionConfiguration.hysteresis
    /// The name of our policy.
    public static let hysteresis = "hysteresis"
    /// With no speech in the room for this long, the dominant speaker becomes nobody. Default 1.0 s.
    public var releaseAfter: Double = 1.0
    /// A holder silent this long has finished its turn; shorter pauses are inside a turn. Default 0.6 s.
    public var turnEndPause: Double = 0.6
    /// Speech a challenger needs to take the floor from a holder who has finished. Default 0.15 s.
    public var turnStart: Double = 0.15
    /// Speech a challenger needs to take the floor from a holder who is still talking: bursts shorter
    /// than this (backchannels such as "yeah") never take it. Default 0.8 s.
    public var interruption: Double = 0.8
    /// Lead in speech activity over the last second a challenger needs over a talking holder, 0…1. Default 0.15.
    public var interruptionMargin: Float = 0.15
    /// Speech the first speaker after a silence needs to take the floor from nobody. Default 0.2 s.
    public var firstSpeaker: Double = 0.2
    /// A challenger whose last speech frame is older than this is not talking now (it is between
    /// words or inside its VAD hangover) and cannot take the floor. Default 0.1 s.
    public var talkingGap: Double = 0.1
    /// Time constant of the speech-activity scores, seconds. Default 1.0 s.
    public var activityTimeConstant: Double = 1.0

    public init() {}

    func validate() throws(ConfigurationError) {
        try ConfigurationError.check(releaseAfter >= 0.1 && releaseAfter <= 30, "selection.releaseAfter", "0.1…30 s")
        try ConfigurationError.check(turnEndPause >= 0 && turnEndPause <= 10, "selection.turnEndPause", "0…10 s")
        try ConfigurationError.check(turnStart >= 0 && turnStart <= 10, "selection.turnStart", "0…10 s")
        try ConfigurationError.check(interruption >= 0 && interruption <= 10, "selection.interruption", "0…10 s")
        try ConfigurationError.check(
            interruptionMargin >= 0 && interruptionMargin <= 1, "selection.interruptionMargin", "0…1")
        try ConfigurationError.check(firstSpeaker >= 0 && firstSpeaker <= 10, "selection.firstSpeaker", "0…10 s")
        try ConfigurationError.check(talkingGap >= 0 && talkingGap <= 5, "selection.talkingGap", "0…5 s")
        try ConfigurationError.check(
            activityTimeConstant >= 0.05 && activityTimeConstant <= 30, "selection.activityTimeConstant", "0.05…30 s")
    }
}

/// What a dominant-speaker policy sees of one stream at the current frame.
public struct SpeakerObservation: Sendable, Equatable {
    /// RFC 6464 level of the frame's hop: 0 (0 dBov) … 127 (silence).
    public var level: UInt8 = 127
    /// The stream is inside an utterance (VAD state, after leakage suppression).
    public var speaking = false
    /// Frame index of the running utterance's onset.
    public var onsetFrame = 0
    /// Frame index of the last frame with speech evidence.
    public var lastSpeechFrame = Int.min / 2
    /// Exponential average of per-frame speech evidence (0/1) over `activityTimeConstant`.
    public var activity: Float = 0

    public init(level: UInt8 = 127, speaking: Bool = false, onsetFrame: Int = 0, lastSpeechFrame: Int = Int.min / 2, activity: Float = 0) {
        self.level = level
        self.speaking = speaking
        self.onsetFrame = onsetFrame
        self.lastSpeechFrame = lastSpeechFrame
        self.activity = activity
    }
}

/// Our dominant-speaker policy: speech activity from the VAD (after leakage suppression), with hysteresis.
///
/// - From nobody: the first stream to speak for `firstSpeaker` takes the floor.
/// - From a holder who has been silent for `turnEndPause` (the turn is over): a stream speaking for
///   `turnStart` takes it. A pause shorter than `turnEndPause` keeps the floor with the holder.
/// - From a holder who is still talking: only a stream that has spoken for `interruption` and leads
///   the holder's activity over the last second by `interruptionMargin` takes it, so backchannels,
///   coughs and clicks (which the VAD mostly rejects anyway) never do.
/// - With nobody speaking for `releaseAfter`, the floor goes to nobody.
/// A challenger must be talking now (speech within `talkingGap`), and its run counts actual speech,
/// not the VAD's hangover. Among several challengers, the one that has spoken longest wins.
final class HysteresisPolicy: FloorPolicy {
    private(set) var holder: Int?
    private let c: SelectionConfiguration
    /// The configuration's times in frames, computed once.
    private let releaseFrames, turnEndFrames, turnStartFrames, interruptionFrames, firstSpeakerFrames, talkingFrames: Int

    init(configuration: SelectionConfiguration) {
        c = configuration
        func frames(_ seconds: Double) -> Int { Int((seconds / AnalysisFormat.hopDuration).rounded()) }
        releaseFrames = frames(c.releaseAfter)
        turnEndFrames = frames(c.turnEndPause)
        turnStartFrames = frames(c.turnStart)
        interruptionFrames = frames(c.interruption)
        firstSpeakerFrames = frames(c.firstSpeaker)
        talkingFrames = frames(c.talkingGap)
    }

    /// Decides the holder at frame `now`; returns the new holder when it changed.
    /// - Parameters:
    ///   - members: the room's stream indices.
    ///   - activity: activity per position in `members`.
    func update(
        now: Int, members: UnsafeBufferPointer<Int>, observation activity: (Int) -> SpeakerObservation
    ) -> (changed: Bool, holder: Int?) {
        var lastSpeechInRoom = Int.min / 2
        var best: Int? = nil
        var bestRun = -1
        var bestActivity: Float = 0
        // The holder is always a member (a leaving stream is removed from the policy first).
        var held = SpeakerObservation()
        let currentlyTalking = talkingFrames
        for member in members.indices {
            let index = members[member]
            let a = activity(member)
            lastSpeechInRoom = max(lastSpeechInRoom, a.lastSpeechFrame)
            if index == holder { held = a }
            // A challenger must be talking now, not just inside its VAD hangover; its run is the
            // span of actual speech so far.
            guard a.speaking, index != holder, now - a.lastSpeechFrame <= currentlyTalking else { continue }
            let run = a.lastSpeechFrame - a.onsetFrame + 1
            if run > bestRun {
                bestRun = run
                best = index
                bestActivity = a.activity
            }
        }

        if holder != nil {
            if now - lastSpeechInRoom >= releaseFrames {
                holder = nil
                return (true, nil)
            }
            guard let challenger = best else { return (false, holder) }
            let holderSilence = now - held.lastSpeechFrame
            let takes: Bool
            if holderSilence >= turnEndFrames {
                takes = bestRun >= turnStartFrames
            } else {
                takes = bestRun >= interruptionFrames && bestActivity >= held.activity + c.interruptionMargin
            }
            if takes {
                holder = challenger
                return (true, challenger)
            }
            return (false, holder)
        }
        if let challenger = best, bestRun >= firstSpeakerFrames {
            holder = challenger
            return (true, challenger)
        }
        return (false, nil)
    }

    /// Forgets a stream that leaves the room; returns true when it held the floor.
    func remove(_ index: Int) -> Bool {
        guard holder == index else { return false }
        holder = nil
        return true
    }
}
