import SpeakerCore

/// What a system decided about one meeting.
public struct SystemOutput: Sendable {
    /// Speech segments of every stream; speaker = stream id.
    public var speech: [Segment]
    /// Changes of floor holder in time order (`nil` holder: nobody; nobody before the first), or nil
    /// when the system does not name a floor holder.
    public var floor: [(time: Double, holder: String?)]?

    /// An output from speech segments and changes of floor holder.
    public init(speech: [Segment], floor: [(time: Double, holder: String?)]?) {
        self.speech = speech
        self.floor = floor
    }

    /// A system's output read from RTTM: speech segments, and optionally floor segments (one per
    /// holding, speaker = holder), turned into changes of holder.
    public init(speech: [Segment], floorSegments: [Segment]?) {
        self.speech = speech
        floor = floorSegments.map(FloorScoring.decisions(from:))
    }
}

extension FloorScoring {
    /// The changes of holder described by floor segments (speaker = holder; time outside is nobody):
    /// the holder at each segment start, and nobody at each end not followed at once by another segment.
    public static func decisions(from segments: [Segment]) -> [(time: Double, holder: String?)] {
        let sorted = segments.sorted { $0.start < $1.start }
        var decisions: [(time: Double, holder: String?)] = []
        for (index, segment) in sorted.enumerated() {
            decisions.append((segment.start, segment.speaker))
            let next = index + 1 < sorted.count ? sorted[index + 1].start : .infinity
            if next > segment.end + 1e-9 { decisions.append((segment.end, nil)) }
        }
        return decisions
    }
}

/// Runs the causal engine over recorded streams, as `activespeaker detect` does.
public enum EngineRun {
    /// Replays `streams` (one room, all starting at t = 0) through a new engine and collects its
    /// decisions. Decisions made by removing the streams after the last hop (the end of the recording,
    /// not a decision) are left out.
    /// - Parameters:
    ///   - progress: called after every second of audio with the fraction done, 0…1.
    /// - Throws: `ConfigurationError` if the configuration is out of range.
    public static func run(
        _ streams: [ReplayStream], configuration: EngineConfiguration, progress: (Double) -> Void = { _ in }
    ) throws(ConfigurationError) -> SystemOutput {
        let replay = try RoomReplay(streams: streams, configuration: configuration, policies: .withBaselines)
        let ids = streams.map(\.id)
        var recorder = SpeechSegmentRecorder()
        var decisions: [(time: Double, holder: String?)] = []
        func drain(keepingDecisions: Bool) {
            replay.consumeEvents { event in
                switch event {
                case .speech(let stream, let active, _, let since):
                    recorder.record(stream: ids[stream], active: active, since: since)
                case .dominant(let stream, let time):
                    if keepingDecisions { decisions.append((time, stream.map { ids[$0] })) }
                }
            }
        }
        while !replay.isAtEnd {
            replay.tick()
            drain(keepingDecisions: true)
            if replay.ticks % 100 == 0 { progress(Double(replay.ticks) / Double(max(1, replay.tickCount))) }
        }
        replay.finish()
        drain(keepingDecisions: false)
        progress(1)
        return SystemOutput(speech: recorder.sortedSegments, floor: decisions)
    }
}

/// How one system did on one meeting.
public struct MeetingScore: Sendable {
    /// The meeting's name.
    public var meeting: String
    /// The system's name (a policy, or an external system).
    public var system: String
    /// Seconds scored: the meeting's length, or its scored regions.
    public var duration: Double
    /// Per stream, one `VADScore` per collar of `VADScoring.collars`.
    public var streams: [(stream: String, vad: [VADScore])]
    /// The streams pooled, one per collar.
    public var vad: [VADScore]
    /// The floor, or nil when the meeting has no floor reference or the system names no holder.
    public var floor: FloorScore?

    /// Scores a system's output for one meeting.
    /// - Parameters:
    ///   - streams: the meeting's stream ids, in order.
    ///   - duration: seconds of the meeting (its longest stream).
    ///   - regions: scored regions (from a UEM file), or nil to score everything.
    public init(
        meeting: String, system: String, streams: [String], reference: MeetingReference, output: SystemOutput,
        duration: Double, regions: ScoredRegions? = nil
    ) {
        self.meeting = meeting
        self.system = system
        let frameCount = Int((duration / FrameScoring.frameDuration).rounded())
        let mask = regions?.mask(frameCount: frameCount)
        self.duration = mask.map { Double($0.filter { $0 }.count) * FrameScoring.frameDuration } ?? duration
        let perStream = streams.map { stream in
            let system = output.speech.filter { $0.speaker == stream }
            return (stream: stream, vad: VADScoring.collars.map { collar in
                VADScoring.score(
                    stream: stream, reference: reference.speech, system: system, duration: duration, collar: collar,
                    scored: mask)
            })
        }
        self.streams = perStream
        vad = VADScoring.collars.indices.map { collar in perStream.reduce(VADScore()) { $0 + $1.vad[collar] } }
        if let floorReference = reference.floor, let decisions = output.floor {
            floor = FloorScoring.score(reference: floorReference, decisions: decisions, duration: duration, scored: mask)
        } else {
            floor = nil
        }
    }
}

/// One system's figures pooled over the meetings of a dataset.
public struct PooledScore: Sendable {
    /// The system's name.
    public var system: String
    /// Meetings pooled.
    public var meetings: Int
    /// Seconds scored in total.
    public var duration: Double
    /// Streams pooled.
    public var streams: Int
    /// One per collar of `VADScoring.collars`.
    public var vad: [VADScore]
    /// The floor over the meetings that score it, or nil if none does.
    public var floor: FloorScore?
    /// Meetings whose floor was scored.
    public var floorMeetings: Int

    /// Pools the scores of one system.
    /// - Precondition: every score is of `system`.
    public init(system: String, scores: [MeetingScore]) {
        precondition(scores.allSatisfy { $0.system == system }, "scores of another system")
        self.system = system
        meetings = scores.count
        duration = scores.reduce(0) { $0 + $1.duration }
        streams = scores.reduce(0) { $0 + $1.streams.count }
        vad = VADScoring.collars.indices.map { collar in scores.reduce(VADScore()) { $0 + $1.vad[collar] } }
        let floors = scores.compactMap(\.floor)
        floor = floors.isEmpty ? nil : floors.dropFirst().reduce(floors[0], +)
        floorMeetings = floors.count
    }
}
