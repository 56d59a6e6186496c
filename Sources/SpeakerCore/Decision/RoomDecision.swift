import Foundation

/// The per-room decision stage: from its members' frame evidence to events.
///
/// Once per frame, after every member was heard (`Talker.hear`), `decide` runs four steps:
/// 0. **Alignment**: the members' delays behind the room's latest stream are measured and stepped
///    (`RoomAlignment`), and each member presents the frame of its own time that lines up with the
///    others (`Talker.present`): events about it are dated in its own time (`since`), decided now (`time`);
/// 1. **Leakage**: which members' evidence is only a neighbour's voice (`LeakageFilter`, against the
///    few loudest possible sources relative to their own speech levels);
/// 2. **Utterances**: each member's voice activity advances (`VoiceActivityDetector`), its own speech
///    level learns from frames that are its speech and not far below the room's loudest voice, and its
///    activity for the floor is updated (a waiting stream's running turn reaching on to its newest speech:
///    `AlignmentConfiguration.floorLookahead`);
/// 3. **The floor**: the room's policy (`FloorPolicy`) picks the dominant speaker.
/// Events (speech starts and ends, floor changes) are appended in that order, with the frame's time.
///
/// It owns the room's members (their talkers in join order), the policy and its per-frame scratch;
/// the engine owns ids, threads and ticks. Real-time safe: `decide` allocates nothing (the scratch
/// is sized when members change).
///
/// `@exclusivity(unchecked)`: as `StreamChannel`, one thread touches a room at a time.
final class RoomDecision {
    /// What every room of an engine decides with: the configuration and the times and smoothing
    /// factors derived from it, computed once.
    struct Settings {
        let vad: VoiceActivityConfiguration
        let leakage: LeakageConfiguration
        let alignment: AlignmentConfiguration
        let timing: VoiceActivityDetector.Timing
        let speechLevelSmoothing: Float
        let activitySmoothing: Float

        init(_ configuration: EngineConfiguration) {
            vad = configuration.vad
            leakage = configuration.leakage
            alignment = configuration.alignment
            timing = VoiceActivityDetector.Timing(configuration.vad)
            let hop = AnalysisFormat.hopDuration
            speechLevelSmoothing = Float(exp(-hop / configuration.leakage.speechLevelTimeConstant))
            activitySmoothing = Float(exp(-hop / configuration.selection.activityTimeConstant))
        }
    }

    /// dB below its own speech level that a waiting frame may lie and still extend its stream's turn
    /// for the floor: 15 (a voice leaking in from across the room lies 20–30 dB below; on the tuning sets
    /// 10, 15, 20 and 30 gave the same figures within 0.5 points).
    static let lookaheadMargin: Float = 15
    /// Sources compared with each leakage candidate, at most.
    static let leakSourceLimit = 4

    let room: RoomID
    let settings: Settings
    let floor: any FloorPolicy
    /// Measures and applies the members' delays.
    let alignment: RoomAlignment
    /// The members' stream slots (the engine's indices, which the policy knows them by), in join order.
    @exclusivity(unchecked) private(set) var members: [Int] = []
    /// The members' talkers, parallel to `members`.
    @exclusivity(unchecked) private(set) var talkers: [Talker] = []
    /// Scratch, one slot per member: positions in `talkers` of the members with speech evidence this
    /// frame (the first `candidateCount`), and of the possible leak sources (the first `sourceCount`).
    @exclusivity(unchecked) private var candidates: [Int] = []
    @exclusivity(unchecked) private var candidateCount = 0
    @exclusivity(unchecked) private var sources: [Int] = []
    @exclusivity(unchecked) private var sourceCount = 0
    /// Scratch: each source's loudness, parallel to `sources`.
    @exclusivity(unchecked) private var loudness: [Float] = []
    /// The floor holder's position in `talkers`, when someone holds it.
    @exclusivity(unchecked) private var holderPosition: Int?

    init(room: RoomID, policy: any FloorPolicy, settings: Settings) {
        self.room = room
        floor = policy
        self.settings = settings
        alignment = RoomAlignment(configuration: settings.alignment)
    }

    // MARK: Members (between frames)

    /// Adds a member, known as `slot`, last in join order.
    func add(_ talker: Talker, slot: Int) {
        members.append(slot)
        talkers.append(talker)
        sizeScratch()
    }

    /// Removes the member known as `slot` at `time`: a running utterance ends then, and if it held
    /// the floor the room has nobody. Appends those events.
    func remove(slot: Int, time: Double, events: inout [EngineEvent]) {
        guard let position = position(of: slot) else { return }
        let talker = talkers[position]
        if case .ended(let last) = talker.vad.stop() {
            events.append(.speech(stream: talker.id, active: false, time: time, since: talker.endTime(ofFrame: last)))
        }
        members.remove(at: position)
        talkers.remove(at: position)
        alignment.forget(talker, in: talkers)
        sizeScratch()
        if floor.remove(slot) {
            events.append(.dominant(room: room, stream: nil, time: time))
        }
        holderPosition = floor.holder.flatMap(position(of:))
    }

    /// The position in `talkers` of the member known as `slot`. An index loop: no allocation in
    /// unoptimised builds either.
    private func position(of slot: Int) -> Int? {
        var position = 0
        while position < members.count {
            if members[position] == slot { return position }
            position += 1
        }
        return nil
    }

    private func sizeScratch() {
        candidates = [Int](repeating: 0, count: members.count)
        sources = [Int](repeating: 0, count: members.count)
        loudness = [Float](repeating: 0, count: members.count)
        candidateCount = 0
        sourceCount = 0
    }

    /// The floor holder's talker, or nil for nobody.
    var holder: Talker? { holderPosition.map { talkers[$0] } }

    // MARK: The frame

    /// Decides frame `frame` from what the members were heard saying in it; appends its events.
    func decide(frame: Int, events: inout [EngineEvent]) {
        let time = Self.endTime(ofFrame: frame)
        alignment.update(talkers, frame: frame)
        var position = 0
        while position < talkers.count {
            talkers[position].present()
            position += 1
        }
        markLeaks()
        advanceUtterances(frame: frame, time: time, events: &events)
        // The floor.
        let (changed, holder) = members.withUnsafeBufferPointer { members in
            floor.update(now: frame, members: members, observation: { self.talkers[$0].activity })
        }
        if changed {
            holderPosition = holder.flatMap(position(of:))
            events.append(.dominant(room: room, stream: holderPosition.map { talkers[$0].id }, time: time))
            if let holderPosition { talkers[holderPosition].statistics.turns += 1 }
        }
        if let holderPosition { talkers[holderPosition].statistics.dominantTime += AnalysisFormat.hopDuration }
    }

    /// Step 1: marks the members whose speech evidence is only a neighbour's voice.
    private func markLeaks() {
        candidateCount = 0
        var position = 0
        while position < talkers.count {
            if talkers[position].hasEvidence {
                candidates[candidateCount] = position
                candidateCount += 1
            }
            // Any member may be a source: it may be between voiced frames, or missed by its own VAD,
            // while its voice still leaks (limiting sources to recent evidence cost 1.2 points of F1
            // and 10 of nobody accuracy on the held-out meetings).
            sources[position] = position
            position += 1
        }
        // Only the loudest few sources (relative to their own speech levels) can be louder than a
        // candidate by the leakage margin; keeping the top few makes a room of hundreds cost O(members).
        sourceCount = talkers.count
        if candidateCount > 0 && sourceCount > Self.leakSourceLimit {
            keepLoudestSources()
        }
        guard candidateCount > 0 && sourceCount > 1 else { return }
        candidates.withUnsafeBufferPointer { allCandidates in
            sources.withUnsafeBufferPointer { allSources in
                LeakageFilter.mark(
                    candidates: UnsafeBufferPointer(rebasing: allCandidates[..<candidateCount]),
                    sources: UnsafeBufferPointer(start: allSources.baseAddress, count: sourceCount),
                    currentLevel: { self.talkers[$0].currentRelative },
                    recentLevel: { self.talkers[$0].recentRelative },
                    envelope: { self.talkers[$0].envelope },
                    configuration: settings.leakage,
                    isLeak: { self.talkers[$0].leak = true })
            }
        }
    }

    /// Reduces `sources` to the `leakSourceLimit` loudest relative to their own speech levels over the
    /// leakage look-back. In place, no allocation.
    private func keepLoudestSources() {
        // Each source's loudness once, then a partial selection sort over both buffers: the first
        // `leakSourceLimit` places get the loudest. Plain index loops and element swaps: generic
        // helpers (`swapAt`, `removeLast(_:)`) allocate in unoptimised builds.
        let count = sourceCount
        sources.withUnsafeMutableBufferPointer { allSources in
            loudness.withUnsafeMutableBufferPointer { allLoudness in
                let sources = UnsafeMutableBufferPointer(rebasing: allSources[..<count])
                let loudness = UnsafeMutableBufferPointer(rebasing: allLoudness[..<count])
                var position = 0
                while position < count {
                    loudness[position] = talkers[sources[position]].recentRelative
                    position += 1
                }
                var place = 0
                while place < Self.leakSourceLimit {
                    var best = place
                    var other = place + 1
                    while other < sources.count {
                        if loudness[other] > loudness[best] { best = other }
                        other += 1
                    }
                    let kept = sources[best], keptLoudness = loudness[best]
                    sources[best] = sources[place]
                    loudness[best] = loudness[place]
                    sources[place] = kept
                    loudness[place] = keptLoudness
                    place += 1
                }
            }
        }
        sourceCount = Self.leakSourceLimit
    }

    /// Step 2: each member's utterance state, own speech level and activity.
    private func advanceUtterances(frame: Int, time: Double, events: inout [EngineEvent]) {
        // The loudest voice in the room this frame, relative to its stream's own level: a stream far
        // below it may be hearing that voice, so it must not learn its own level from this frame.
        var loudestRelative = Levels.floorDBFS
        var position = 0
        while position < candidateCount {
            let talker = talkers[candidates[position]]
            if !talker.leak { loudestRelative = max(loudestRelative, talker.currentRelative) }
            position += 1
        }
        let vad = settings.vad
        position = 0
        while position < talkers.count {
            let talker = talkers[position]
            position += 1
            let voiced = talker.voiced && !talker.leak
            let continues = talker.continues && !talker.leak
            switch talker.vad.advance(frame: frame, voiced: voiced, continues: continues, configuration: vad, timing: settings.timing) {
            case .started(let onset):
                events.append(.speech(stream: talker.id, active: true, time: time, since: talker.startTime(ofFrame: onset)))
                talker.statistics.utterances += 1
            case .ended(let last):
                events.append(.speech(stream: talker.id, active: false, time: time, since: talker.endTime(ofFrame: last)))
            case .none:
                break
            }
            let speechFrame = talker.vad.speaking && (voiced || continues)
            if speechFrame {
                // A waiting stream's turn runs on to its newest speech (`AlignmentConfiguration.floorLookahead`).
                let ahead = settings.alignment.floorLookahead ? talker.speechAhead(margin: Self.lookaheadMargin) : 0
                talker.activity.lastSpeechFrame = frame + ahead
            }
            if speechFrame && talker.currentRelative >= loudestRelative - settings.leakage.margin {
                let level = talker.excess
                let smoothing = settings.speechLevelSmoothing
                let rate = level > talker.speechLevel ? 4 * (1 - smoothing) : 1 - smoothing
                talker.speechLevel += rate * (level - talker.speechLevel)
            }
            talker.activity.level = talker.level
            talker.activity.speaking = talker.vad.speaking
            talker.activity.onsetFrame = talker.vad.onsetFrame
            talker.activity.activity = settings.activitySmoothing * talker.activity.activity
                + (1 - settings.activitySmoothing) * (speechFrame ? 1 : 0)
            if talker.vad.speaking { talker.statistics.speechTime += AnalysisFormat.hopDuration }
        }
    }

    // MARK: Time

    static func startTime(ofFrame frame: Int) -> Double { Double(frame) * AnalysisFormat.hopDuration }
    static func endTime(ofFrame frame: Int) -> Double { Double(frame + 1) * AnalysisFormat.hopDuration }
}

extension Talker {
    /// The start of frame `frame` of the room's time (a tick) in the stream's own time: `alignment.delay`
    /// frames earlier, never before 0.
    func startTime(ofFrame frame: Int) -> Double { RoomDecision.startTime(ofFrame: max(0, frame - alignment.delay)) }
    /// The end of frame `frame` of the room's time in the stream's own time.
    func endTime(ofFrame frame: Int) -> Double { RoomDecision.endTime(ofFrame: max(0, frame - alignment.delay)) }
}
