import Foundation

/// The active-speaker engine: per-stream analysis and voice activity, per-room dominant speaker.
///
/// One engine serves many rooms and streams; streams and rooms can be added and removed between
/// ticks. Time advances in ticks of one hop (10 ms): before each `tick()`, give every stream that
/// has audio its hop with `submit(_:to:)`; a stream without a hop in a tick is treated as silent
/// (as a sender in DTX sends nothing during silence). Decisions are causal: the events of a tick use
/// only audio up to the end of that tick's hop, and carry that time.
///
/// ```swift
/// let engine = try Engine()
/// let room = engine.addRoom(name: "standup")
/// let alice = engine.addStream(name: "alice", room: room)
/// engine.submit(hop, to: alice)     // 160 samples, 16 kHz
/// engine.tick()
/// engine.consumeEvents { print($0) }
/// ```
///
/// Real-time safety: after the first tick of a new stream, `submit`, `tick` and `consumeEvents`
/// allocate nothing, take no lock, throw nothing and print nothing (a test counts allocations).
public final class Engine {
    /// The configuration, validated.
    public let configuration: EngineConfiguration
    /// Ticks processed so far.
    public private(set) var ticks = 0
    /// Seconds of stream time processed: the end of the last hop.
    public var time: Double { Double(ticks) * AnalysisFormat.hopDuration }

    private let analyzer: SpectralAnalyzer
    private var channels: [StreamChannel?] = []
    private var rooms: [RoomState?] = []
    private var events: [EngineEvent] = []
    private let levelSmoothing: Float
    private let speechLevelSmoothing: Float
    private let activitySmoothing: Float

    /// Makes an engine.
    /// - Throws: `ConfigurationError` if a value is out of range.
    public init(configuration: EngineConfiguration = EngineConfiguration()) throws(ConfigurationError) {
        try configuration.validate()
        self.configuration = configuration
        analyzer = SpectralAnalyzer(overSubtraction: configuration.vad.overSubtraction)
        let hop = AnalysisFormat.hopDuration
        levelSmoothing = Float(exp(-hop / configuration.levelTimeConstant))
        speechLevelSmoothing = Float(exp(-hop / configuration.leakage.speechLevelTimeConstant))
        activitySmoothing = Float(exp(-hop / configuration.selection.activityTimeConstant))
        events.reserveCapacity(64)
    }

    // MARK: Rooms and streams

    /// Adds an empty room.
    public func addRoom(name: String) -> RoomID {
        rooms.append(RoomState(name: name, policy: configuration.selection.policy.make(configuration.selection)))
        return RoomID(rawValue: rooms.count - 1)
    }

    /// Adds a stream to a room. It starts silent, with nothing learnt of its noise.
    /// - Precondition: the room exists.
    public func addStream(name: String, room: RoomID) -> StreamID {
        let state = roomState(room)
        channels.append(StreamChannel(name: name, room: room.rawValue, configuration: configuration))
        let index = channels.count - 1
        state.members.append(index)
        state.candidates.reserveCapacity(state.members.count)
        state.sources.reserveCapacity(state.members.count)
        events.reserveCapacity(2 * channels.count + 2 * rooms.count + 16)
        return StreamID(rawValue: index)
    }

    /// Removes a stream: a running utterance ends now, and if it held its room's floor the room
    /// has nobody until the next tick decides. The events this emits carry `time`, the end of the
    /// last tick.
    /// - Returns: the stream's final talk statistics.
    @discardableResult
    public func removeStream(_ stream: StreamID) -> TalkStatistics {
        let channel = channel(stream)
        if case .ended(let last) = channel.vad.stop() {
            events.append(.speech(stream: stream, active: false, time: time, since: endTime(ofFrame: last)))
        }
        let room = rooms[channel.room]!
        room.members.removeAll { $0 == stream.rawValue }
        if room.floor.remove(stream.rawValue) {
            events.append(.dominant(room: RoomID(rawValue: channel.room), stream: nil, time: time))
        }
        channels[stream.rawValue] = nil
        return channel.statistics
    }

    /// Removes a room and all its streams.
    public func removeRoom(_ room: RoomID) {
        for member in roomState(room).members { removeStream(StreamID(rawValue: member)) }
        rooms[room.rawValue] = nil
    }

    /// The name the stream was added with.
    public func name(of stream: StreamID) -> String { channel(stream).name }

    /// The name the room was added with.
    public func name(of room: RoomID) -> String { roomState(room).name }

    /// The streams of a room, in the order they were added.
    public func streams(in room: RoomID) -> [StreamID] { roomState(room).members.map(StreamID.init) }

    // MARK: Audio in, decisions out

    /// Gives a stream its hop for the next tick: `AnalysisFormat.hopSize` samples at 16 kHz, ±1.
    /// A second submit before the tick replaces the first. Real-time safe.
    public func submit(_ hop: UnsafeBufferPointer<Float>, to stream: StreamID) {
        precondition(hop.count == AnalysisFormat.hopSize, "a hop is \(AnalysisFormat.hopSize) samples")
        let channel = channel(stream)
        channel.pending.withUnsafeMutableBufferPointer { pending in
            _ = pending.initialize(fromContentsOf: hop)
        }
        channel.hasPending = true
    }

    /// Analyses the submitted hops of all streams and updates every room's decisions.
    /// - Complexity: per stream one 512-point and one 256-point FFT; per room O(speakers²) for leakage.
    public func tick() {
        let frame = ticks
        // Index loops: iterating the arrays themselves allocates an iterator context in debug builds.
        var index = 0
        while index < channels.count {
            if let channel = channels[index] { analyze(channel) }
            index += 1
        }
        index = 0
        while index < rooms.count {
            if let room = rooms[index] { decide(room, roomIndex: index, frame: frame) }
            index += 1
        }
        ticks += 1
    }

    /// Hands every event since the last call to `body`, oldest first, and forgets them. Real-time safe.
    public func consumeEvents(_ body: (EngineEvent) throws -> Void) rethrows {
        defer { events.removeAll(keepingCapacity: true) }
        var index = 0
        while index < events.count {
            try body(events[index])
            index += 1
        }
    }

    // MARK: State queries

    /// The room's dominant speaker, or nil for nobody.
    public func dominantSpeaker(in room: RoomID) -> StreamID? {
        roomState(room).floor.holder.map(StreamID.init)
    }

    /// True while the stream is inside an utterance.
    public func isSpeaking(_ stream: StreamID) -> Bool { channel(stream).vad.speaking }

    /// The stream's smoothed level in dBov (0 full scale, −127 silence).
    public func level(of stream: StreamID) -> Float { channel(stream).level }

    /// The features of the stream's last frame.
    public func features(of stream: StreamID) -> FrameFeatures { channel(stream).features }

    /// Talk-time statistics of the stream.
    public func statistics(of stream: StreamID) -> TalkStatistics { channel(stream).statistics }

    /// The room's speaking streams, loudest first, with their levels (what SDKs call active speakers).
    /// Allocates the result: not for the per-frame path.
    public func activeSpeakers(in room: RoomID) -> [ActiveSpeaker] {
        roomState(room).members
            .compactMap { index -> ActiveSpeaker? in
                let channel = channels[index]!
                return channel.vad.speaking ? ActiveSpeaker(stream: StreamID(rawValue: index), level: channel.level) : nil
            }
            .sorted { $0.level > $1.level }
    }

    // MARK: Per-frame work

    private func analyze(_ channel: StreamChannel) {
        if !channel.hasPending {
            channel.pending.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        }
        channel.hasPending = false
        let features = channel.pending.withUnsafeBufferPointer { hop in
            analyzer.analyze(hop: hop, state: &channel.spectral)
        }
        channel.features = features
        let tonal = channel.tone.update(features, configuration: configuration.vad)
        channel.voiced = !tonal && VoiceActivityDetector.isVoiced(features, configuration.vad)
        channel.continues = !tonal && VoiceActivityDetector.continuesSpeech(features, configuration.vad)
        channel.leak = false
        channel.envelope.append(features.speechBandExcessDB)
        let meanSquare = Float.pow10(features.energyDBFS / 10)
        channel.smoothedMeanSquare = levelSmoothing * channel.smoothedMeanSquare + (1 - levelSmoothing) * meanSquare
    }

    private func decide(_ room: RoomState, roomIndex: Int, frame: Int) {
        let time = endTime(ofFrame: frame)
        // 1. Which streams show speech evidence, and which of those only carry a neighbour's voice.
        room.candidates.removeAll(keepingCapacity: true)
        room.sources.removeAll(keepingCapacity: true)
        var position = 0
        while position < room.members.count {
            let index = room.members[position]
            let channel = channels[index]!
            let evidence = channel.voiced || (channel.vad.speaking && channel.continues)
            if evidence { room.candidates.append(index) }
            room.sources.append(index)
            position += 1
        }
        if !room.candidates.isEmpty && room.sources.count > 1 {
            room.candidates.withUnsafeBufferPointer { candidates in
                room.sources.withUnsafeBufferPointer { sources in
                    LeakageFilter.mark(
                        candidates: candidates,
                        sources: sources,
                        relativeLevel: { index, frames in
                            let channel = self.channels[index]!
                            return channel.envelope.recentMaximum(frames: frames) - channel.speechLevel
                        },
                        envelope: { self.channels[$0]!.envelope },
                        configuration: configuration.leakage,
                        isLeak: { self.channels[$0]!.leak = true })
                }
            }
        }
        // The loudest voice in the room this frame, relative to its stream's own level: a stream far
        // below it may be hearing that voice, so it must not learn its own level from this frame.
        var loudestRelative = Levels.floorDBFS
        position = 0
        while position < room.candidates.count {
            let channel = channels[room.candidates[position]]!
            if !channel.leak { loudestRelative = max(loudestRelative, channel.features.speechBandExcessDB - channel.speechLevel) }
            position += 1
        }
        // 2. Each stream's utterance state.
        position = 0
        while position < room.members.count {
            let index = room.members[position]
            position += 1
            let channel = channels[index]!
            let voiced = channel.voiced && !channel.leak
            let continues = channel.continues && !channel.leak
            let stream = StreamID(rawValue: index)
            switch channel.vad.advance(frame: frame, voiced: voiced, continues: continues, configuration: configuration.vad) {
            case .started(let onset):
                events.append(.speech(stream: stream, active: true, time: time, since: startTime(ofFrame: onset)))
                channel.statistics.utterances += 1
            case .ended(let last):
                events.append(.speech(stream: stream, active: false, time: time, since: endTime(ofFrame: last)))
            case .none:
                break
            }
            let speechFrame = channel.vad.speaking && (voiced || continues)
            if speechFrame {
                channel.activity.lastSpeechFrame = frame
            }
            let relative = channel.features.speechBandExcessDB - channel.speechLevel
            if speechFrame && relative >= loudestRelative - configuration.leakage.margin {
                let level = channel.features.speechBandExcessDB
                let rate = level > channel.speechLevel ? 4 * (1 - speechLevelSmoothing) : 1 - speechLevelSmoothing
                channel.speechLevel += rate * (level - channel.speechLevel)
            }
            channel.activity.level = channel.features.level
            channel.activity.speaking = channel.vad.speaking
            channel.activity.onsetFrame = channel.vad.onsetFrame
            channel.activity.activity = activitySmoothing * channel.activity.activity
                + (1 - activitySmoothing) * (speechFrame ? 1 : 0)
            if channel.vad.speaking { channel.statistics.speechTime += AnalysisFormat.hopDuration }
        }
        // 3. The floor.
        let (changed, holder) = room.members.withUnsafeBufferPointer { members in
            room.floor.update(now: frame, members: members, observation: { self.channels[$0]!.activity })
        }
        if changed {
            events.append(.dominant(room: RoomID(rawValue: roomIndex), stream: holder.map(StreamID.init), time: time))
            if let holder { channels[holder]!.statistics.turns += 1 }
        }
        if let holder { channels[holder]!.statistics.dominantTime += AnalysisFormat.hopDuration }
    }

    // MARK: Helpers

    private func startTime(ofFrame frame: Int) -> Double { Double(frame) * AnalysisFormat.hopDuration }
    private func endTime(ofFrame frame: Int) -> Double { Double(frame + 1) * AnalysisFormat.hopDuration }

    private func channel(_ stream: StreamID) -> StreamChannel {
        guard stream.rawValue >= 0, stream.rawValue < channels.count, let channel = channels[stream.rawValue] else {
            preconditionFailure("\(stream) does not exist")
        }
        return channel
    }

    private func roomState(_ room: RoomID) -> RoomState {
        guard room.rawValue >= 0, room.rawValue < rooms.count, let state = rooms[room.rawValue] else {
            preconditionFailure("\(room) does not exist")
        }
        return state
    }
}

extension Float {
    /// 10^x.
    @inlinable static func pow10(_ x: Float) -> Float { exp2f(x * 3.321_928_1) }
}
