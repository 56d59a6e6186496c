#if canImport(Glibc)
import Glibc
#endif

/// Settings of `LevelActivityDetector`. Times in seconds, levels in dBov.
public struct LevelActivityConfiguration: Sendable, Equatable {
    /// A level must be at least this loud to count as speech. Default −50 dBov: above the −59 dBov that
    /// GStreamer 1.22 reports for digital silence and the −60…−70 dBov of quiet rooms.
    public var gate: Float = -50
    /// A level must also be this far above the stream's noise floor. Default 10 dB.
    public var margin: Float = 10
    /// Levels at or above this always count (the floor cannot rise past `ceiling − margin`). Default −30 dBov.
    public var ceiling: Float = -30
    /// How fast the noise floor rises while levels stay above it, dB per second (it falls at once). Default 1.
    public var floorRise: Float = 1
    /// Speech starts after `onsetTicks` evidence ticks (10 ms) within `onsetWindow` ticks. Default 3 of 5,
    /// as the engine's VAD.
    public var onsetTicks = 3
    public var onsetWindow = 5
    /// Speech ends this long after the last evidence tick. Default 0.3 s (the engine's VAD hangover).
    public var hangover = 0.3
    /// Floor rules, as the engine's `selection` settings: nobody after `releaseAfter` without speech;
    /// a finished turn (holder silent `turnEndPause`) goes to a stream speaking `turnStart`; a talking
    /// holder loses only to `interruption` of speech with an activity lead of `interruptionMargin`;
    /// from nobody the first speaker needs `firstSpeaker`; a challenger must have had evidence within
    /// `talkingGap`. Defaults 1.0, 0.7, 0.2, 0.8, 0.15, 0.2, 0.1 s; activity time constant 1 s.
    public var releaseAfter = 1.0
    public var turnEndPause = 0.7
    public var turnStart = 0.2
    public var interruption = 0.8
    public var interruptionMargin: Float = 0.15
    public var firstSpeaker = 0.2
    public var talkingGap = 0.1
    public var activityTimeConstant = 1.0

    public init() {}
}

/// Speech and dominant speaker from RFC 6464 levels alone, for a server that does not decode audio.
///
/// Per stream and 10 ms tick it gets the level of the packet covering the tick, or nothing (no packet:
/// DTX, a paused or departed sender — silence, never "still speaking").
///
/// 1. Evidence. A tick is speech evidence when its level is at least `gate` and at least `margin`
///    above the stream's noise floor (or at least `ceiling`). The floor follows the quietest levels:
///    it drops to any lower level at once and rises by `floorRise` dB/s otherwise (never above
///    `ceiling − margin`, so long speech cannot lift it over the speech itself), and ticks without
///    packets do not move it. If the stream has ever set the V flag, the sender runs a VAD and evidence
///    also needs V; senders that never set it (GStreamer 1.22 leaves it 0 even with `vad=on`) are
///    judged by level alone.
/// 2. GStreamer's digital silence. GStreamer reports an all-zero signal as level 59 (−59 dBov), not
///    127. That is below `gate`, so it never counts, and as the floor it leaves speech (−15…−35 dBov)
///    far above `floor + margin`. Because ticks without packets leave the floor alone, a stream that
///    starts (or resumes after DTX) with 59 is not mistaken for speech against a −127 floor. A sender
///    whose silence really is 127 pulls the floor to −127; the gate keeps its background noise out.
/// 3. Utterances, as the engine's VAD: speech starts after `onsetTicks` evidence ticks within
///    `onsetWindow` (dated at the first of them) and ends `hangover` after the last evidence tick.
/// 4. The floor, with the engine's hysteresis rules (see `LevelActivityConfiguration`), on
///    speech-activity scores that are exponential averages of the evidence.
///
/// Levels cannot tell a voice from noise of the same loudness (music, typing next to the microphone);
/// decode mode can. Real-time safe after `addStream`: `submit`, `tick` and `consumeEvents` allocate nothing.
public final class LevelActivityDetector {
    /// A decision, in the same form as the engine's.
    public enum Event: Sendable, Equatable {
        /// Stream `stream` started or stopped speaking at `time`; the change began at `since`.
        case speech(stream: Int, active: Bool, time: Double, since: Double)
        /// The dominant speaker became `stream` (nil: nobody) at `time`.
        case dominant(stream: Int?, time: Double)
    }

    struct StreamState {
        var floor: Float = 0
        var floorKnown = false
        var usesVoiceFlag = false
        var history: UInt32 = 0
        var speaking = false
        var onsetTick = 0
        var lastEvidenceTick = Int.min / 2
        var activity: Float = 0
        var level: Float = -127
    }

    public let configuration: LevelActivityConfiguration
    /// Ticks done.
    public private(set) var ticks = 0
    /// The dominant stream, or nil.
    public private(set) var holder: Int?
    private var streams: [StreamState] = []
    private var inputs: [AudioLevel?] = []
    private var events: [Event] = []
    private let activitySmoothing: Float
    private let floorStep: Float
    private let hangoverTicks, talkingGapTicks, releaseTicks, turnEndTicks, turnStartTicks, interruptionTicks, firstSpeakerTicks: Int

    public init(configuration: LevelActivityConfiguration = LevelActivityConfiguration()) {
        precondition(
            configuration.onsetTicks >= 1 && configuration.onsetWindow >= configuration.onsetTicks
                && configuration.onsetWindow <= 32, "1 ≤ onsetTicks ≤ onsetWindow ≤ 32")
        self.configuration = configuration
        activitySmoothing = Float(exp(-0.01 / configuration.activityTimeConstant))
        floorStep = configuration.floorRise * 0.01
        func ticks(_ seconds: Double) -> Int { Int((seconds / 0.01).rounded()) }
        hangoverTicks = ticks(configuration.hangover)
        talkingGapTicks = ticks(configuration.talkingGap)
        releaseTicks = ticks(configuration.releaseAfter)
        turnEndTicks = ticks(configuration.turnEndPause)
        turnStartTicks = ticks(configuration.turnStart)
        interruptionTicks = ticks(configuration.interruption)
        firstSpeakerTicks = ticks(configuration.firstSpeaker)
        events.reserveCapacity(64)
    }

    /// Adds a stream; returns its index.
    public func addStream() -> Int {
        streams.append(StreamState())
        inputs.append(nil)
        events.reserveCapacity(2 * streams.count + 16)
        return streams.count - 1
    }

    /// Seconds processed: the end of the last tick.
    public var time: Double { Double(ticks) * 0.01 }

    /// True while the stream is inside an utterance.
    public func isSpeaking(_ stream: Int) -> Bool { streams[stream].speaking }

    /// The last level of the stream in dBov (−127 when nothing was received).
    public func level(of stream: Int) -> Float { streams[stream].level }

    /// Gives a stream its level for the next tick; a stream without one is silent.
    public func submit(_ level: AudioLevel, to stream: Int) { inputs[stream] = level }

    /// Decides this tick for every stream and the floor.
    public func tick() {
        let now = ticks
        let c = configuration
        let time = Double(now + 1) * 0.01
        let windowMask: UInt32 = c.onsetWindow == 32 ? .max : (1 << UInt32(c.onsetWindow)) - 1
        var index = 0
        while index < streams.count {
            var s = streams[index]
            var evidence = false
            if let input = inputs[index] {
                let dBov = input.dBov
                s.level = dBov
                if input.voice { s.usesVoiceFlag = true }
                if !s.floorKnown || dBov < s.floor {
                    s.floor = dBov
                    s.floorKnown = true
                } else {
                    s.floor = min(s.floor + floorStep, c.ceiling - c.margin)
                }
                let loudEnough = dBov >= c.gate && (dBov >= s.floor + c.margin || dBov >= c.ceiling)
                evidence = loudEnough && (!s.usesVoiceFlag || input.voice)
            } else {
                s.level = -127
            }
            inputs[index] = nil
            s.history = (s.history << 1 | (evidence ? 1 : 0)) & windowMask
            if evidence { s.lastEvidenceTick = now }
            if !s.speaking && evidence && s.history.nonzeroBitCount >= c.onsetTicks {
                s.speaking = true
                // The onset is the oldest evidence tick in the window.
                s.onsetTick = now - (31 - s.history.leadingZeroBitCount)
                events.append(.speech(stream: index, active: true, time: time, since: Double(s.onsetTick) * 0.01))
            } else if s.speaking && now - s.lastEvidenceTick >= hangoverTicks {
                s.speaking = false
                events.append(.speech(stream: index, active: false, time: time, since: Double(s.lastEvidenceTick + 1) * 0.01))
            }
            s.activity = activitySmoothing * s.activity + (1 - activitySmoothing) * (evidence && s.speaking ? 1 : 0)
            streams[index] = s
            index += 1
        }
        decideFloor(now: now, time: time)
        ticks += 1
    }

    /// The hysteresis rules of the engine's default policy, on level evidence.
    private func decideFloor(now: Int, time: Double) {
        var lastSpeechInRoom = Int.min / 2
        var best: Int?
        var bestRun = -1
        var index = 0
        while index < streams.count {
            let s = streams[index]
            lastSpeechInRoom = max(lastSpeechInRoom, s.lastEvidenceTick)
            if s.speaking, index != holder, now - s.lastEvidenceTick <= talkingGapTicks {
                let run = s.lastEvidenceTick - s.onsetTick + 1
                if run > bestRun {
                    bestRun = run
                    best = index
                }
            }
            index += 1
        }
        if let current = holder {
            if now - lastSpeechInRoom >= releaseTicks {
                holder = nil
                events.append(.dominant(stream: nil, time: time))
                return
            }
            guard let challenger = best else { return }
            let held = streams[current]
            let takes =
                now - held.lastEvidenceTick >= turnEndTicks
                ? bestRun >= turnStartTicks
                : bestRun >= interruptionTicks
                    && streams[challenger].activity >= held.activity + configuration.interruptionMargin
            if takes {
                holder = challenger
                events.append(.dominant(stream: challenger, time: time))
            }
        } else if let challenger = best, bestRun >= firstSpeakerTicks {
            holder = challenger
            events.append(.dominant(stream: challenger, time: time))
        }
    }

    /// Ends every utterance and releases the floor (the run is over), as events at `time`.
    public func finish() {
        let time = self.time
        var index = 0
        while index < streams.count {
            if streams[index].speaking {
                streams[index].speaking = false
                events.append(
                    .speech(stream: index, active: false, time: time, since: Double(streams[index].lastEvidenceTick + 1) * 0.01))
            }
            index += 1
        }
        if holder != nil {
            holder = nil
            events.append(.dominant(stream: nil, time: time))
        }
    }

    /// Hands every event since the last call to `body`, oldest first, and forgets them.
    public func consumeEvents(_ body: (Event) throws -> Void) rethrows {
        defer { events.removeAll(keepingCapacity: true) }
        // An index loop: iterating the array allocates an iterator context in debug builds.
        var index = 0
        while index < events.count {
            try body(events[index])
            index += 1
        }
    }
}
