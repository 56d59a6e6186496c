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
    /// What every room decides with (`configuration`'s times and smoothing factors, computed once).
    private let decisionSettings: RoomDecision.Settings
    /// Ticks processed so far.
    public private(set) var ticks = 0
    /// Seconds of stream time processed: the end of the last hop.
    public var time: Double { Double(ticks) * AnalysisFormat.hopDuration }
    /// Threads that share the work of a tick (the calling thread is one of them).
    public let workers: Int
    /// Streams that exist now.
    public var streamCount: Int { streamSlots.inUse }
    /// Slots the stream arrays hold: the most streams that existed at once.
    public var streamCapacity: Int { streamSlots.capacity }
    /// Rooms that exist now.
    public var roomCount: Int { roomSlots.inUse }

    // Unchecked exclusivity: read on every frame by the workers, changed only between ticks (see
    // `StreamChannel`).
    @exclusivity(unchecked) private var channels: [StreamChannel?] = []
    @exclusivity(unchecked) private var rooms: [RoomState?] = []
    /// Slots of removed streams and rooms, reused by the next ones (last freed, first reused), so a
    /// server that sees millions of joins over weeks keeps arrays as long as its busiest moment.
    private var streamSlots = SlotAllocator()
    private var roomSlots = SlotAllocator()
    /// Debug builds: stops on a call while another thread is inside the engine.
    let confinement = ConfinementCheck("Engine")
    /// What the workers do when started: a whole tick of their shards, or one of its two phases.
    private enum Phase { case whole, analysis, decision }
    /// Written by `tick()` before it starts the workers, read by them after (the start semaphore orders it).
    @exclusivity(unchecked) private var phase = Phase.whole
    /// When a room is too large for one worker (one meeting of many streams: `detect` on many files),
    /// the tick runs in two phases: every worker analyses a slice of all streams, then decides its own
    /// rooms. `analysisOrder` holds the streams in shard order and `analysisSlices` the worker's part;
    /// empty when the rooms are dealt evenly enough for one phase (no second handshake).
    @exclusivity(unchecked) private var analysisOrder: [Int] = []
    @exclusivity(unchecked) private var analysisSlices: [Range<Int>] = []
    /// Rooms or streams came or went since the layout was last planned.
    private var layoutChanged = false
    /// The last tick ran in two phases (workers sharing the analysis of a large room).
    var isSharingAnalysis: Bool { !analysisSlices.isEmpty }
    /// One shard per worker: the rooms it owns, its FFT scratch and its events.
    private let shards: [Shard]
    private var threads: [WorkerThread] = []
    private let workersDone = PhaseCompletion()
    private let levelSmoothing: Float
    /// The sound classifier, when `configuration.vad.classifier` is on and the learned speech model
    /// (which each stream's `SpeechEvidence` then runs, `configuration.vad.speechModel`) is not.
    private let classifier: SoundClassifier?
    /// The floor policies its rooms may use.
    public let policies: FloorPolicies

    /// Makes an engine.
    /// - Parameters:
    ///   - configuration: the tunables.
    ///   - workers: threads that share each tick, ≥ 1. Rooms are dealt to workers as they are added;
    ///     each worker owns its rooms' streams outright, so a tick takes no lock: the calling thread
    ///     starts the others, works its own shard, and waits for them.
    ///   - policies: the floor policies rooms may use, `configuration.selection.policy` among them: ours alone
    ///     by default; SpeakerEval's `.withBaselines` adds the other systems'.
    /// - Throws: `ConfigurationError` if a value is out of range, or the policy is not one of `policies`.
    public init(
        configuration: EngineConfiguration = EngineConfiguration(), workers: Int = 1, policies: FloorPolicies = .standard
    ) throws(ConfigurationError) {
        try configuration.validate()
        try ConfigurationError.check(workers >= 1 && workers <= 256, "workers", "1…256")
        try ConfigurationError.check(
            policies.contains(configuration.selection.policy), "selection.policy", "{" + policies.names.joined(separator: ", ") + "}")
        self.configuration = configuration
        self.policies = policies
        decisionSettings = RoomDecision.Settings(configuration)
        self.workers = workers
        shards = (0..<workers).map { _ in Shard(overSubtraction: configuration.vad.overSubtraction) }
        let hop = AnalysisFormat.hopDuration
        levelSmoothing = Float(exp(-hop / configuration.levelTimeConstant))
        classifier = configuration.vad.classifier && !configuration.vad.speechModel ? SoundClassifier.shipped : nil
        for index in 1..<max(1, workers) {
            threads.append(WorkerThread(name: "activespeaker-\(index)", done: workersDone) { [unowned self] in
                self.work(worker: index)
            })
        }
    }

    deinit {
        workersDone.expect(threads.count)
        for thread in threads { thread.stop() }
        workersDone.wait(expected: threads.count)
    }

    // MARK: Rooms and streams

    /// Adds an empty room, owned by the worker with the fewest rooms.
    /// - Parameter policy: the name of the room's dominant-speaker policy; nil takes `configuration.selection.policy`.
    /// - Precondition: `policy` is one of the engine's `policies`.
    public func addRoom(name: String, policy: String? = nil) -> RoomID {
        confinement.enter("addRoom")
        defer { confinement.leave() }
        let (index, generation) = roomSlots.take()
        let id = RoomID(rawValue: index, generation: generation)
        let shard = shards.min { $0.rooms.count < $1.rooms.count }!
        let kind = policy ?? configuration.selection.policy
        let decision = RoomDecision(room: id, policy: policies.make(kind, configuration.selection), settings: decisionSettings)
        let state = RoomState(name: name, id: id, decision: decision, shard: shard)
        if index == rooms.count { rooms.append(state) } else { rooms[index] = state }
        layoutChanged = true
        shard.rooms.append(index)
        return id
    }

    /// Adds a stream to a room. It starts silent, with nothing learnt of its noise.
    /// - Precondition: the room exists.
    public func addStream(name: String, room: RoomID) -> StreamID {
        confinement.enter("addStream")
        defer { confinement.leave() }
        let state = roomState(room)
        let (index, generation) = streamSlots.take()
        let id = StreamID(rawValue: index, generation: generation)
        let channel = StreamChannel(name: name, id: id, room: room.rawValue, configuration: configuration)
        if index == channels.count { channels.append(channel) } else { channels[index] = channel }
        layoutChanged = true
        state.decision.add(channel.talker, slot: index)
        state.shard.events.reserveCapacity(2 * state.shard.rooms.reduce(0) { $0 + rooms[$1]!.members.count } + 16)
        return id
    }

    /// Adds a stream that carries RFC 6464 audio levels instead of audio, for a server that does not
    /// decode: give it a level each tick with `submitLevel(_:voiceActivity:to:)`. Its voice activity
    /// comes from its level against its own tracked noise floor (or from the sender's V flag, when
    /// given), not from spectral analysis; it takes part in leakage suppression and floor selection
    /// like an audio stream.
    /// - Precondition: the room exists.
    public func addLevelStream(name: String, room: RoomID) -> StreamID {
        let id = addStream(name: name, room: room)
        channels[id.rawValue]!.carriesLevels = true
        return id
    }

    /// Removes a stream: a running utterance ends now, and if it held its room's floor the room
    /// has nobody until the next tick decides. The events this emits carry `time`, the end of the
    /// last tick.
    /// - Returns: the stream's final talk statistics.
    @discardableResult
    public func removeStream(_ stream: StreamID) -> TalkStatistics {
        confinement.enter("removeStream")
        defer { confinement.leave() }
        let channel = channel(stream)
        let room = rooms[channel.room]!
        room.decision.remove(slot: stream.rawValue, time: time, events: &room.shard.events)
        layoutChanged = true
        channels[stream.rawValue] = nil
        streamSlots.free(stream.rawValue)
        return channel.talker.statistics
    }

    /// Removes a room and all its streams.
    public func removeRoom(_ room: RoomID) {
        confinement.enter("removeRoom")
        defer { confinement.leave() }
        let state = roomState(room)
        for member in state.members { removeStream(channels[member]!.id) }
        layoutChanged = true
        state.shard.rooms.removeAll { $0 == room.rawValue }
        rooms[room.rawValue] = nil
        roomSlots.free(room.rawValue)
    }

    /// The name the stream was added with.
    public func name(of stream: StreamID) -> String { channel(stream).name }

    /// The name the room was added with.
    public func name(of room: RoomID) -> String { roomState(room).name }

    /// The streams of a room, in the order they were added.
    public func streams(in room: RoomID) -> [StreamID] { roomState(room).members.map { channels[$0]!.id } }

    // MARK: Audio in, decisions out

    /// Gives a stream its hop for the next tick: `AnalysisFormat.hopSize` samples at 16 kHz, ±1.
    /// A second submit before the tick replaces the first. Real-time safe.
    public func submit(_ hop: UnsafeBufferPointer<Float>, to stream: StreamID) {
        confinement.enter("submit")
        defer { confinement.leave() }
        precondition(hop.count == AnalysisFormat.hopSize, "a hop is \(AnalysisFormat.hopSize) samples")
        let channel = channel(stream)
        precondition(channel.source == nil, "\(stream) reads its hops from a source (attach(_:to:))")
        channel.pending.withUnsafeMutableBufferPointer { pending in
            _ = pending.initialize(fromContentsOf: hop)
        }
        channel.hasPending = true
    }

    /// Lets the engine read an audio stream's hops from `source` during each tick, on the thread that
    /// analyses the stream, instead of taking them from `submit`: with several workers, reading (decoding a
    /// file, say) then runs on them all. Each tick calls `source.read(tick:into:)` with the tick's index
    /// (`ticks`); whoever runs the ticks removes the stream once `source.hasHop(tick:)` is false. nil
    /// detaches the source: the stream takes submitted hops again.
    /// - Precondition: an audio stream, and `source.readsConcurrently`.
    public func attach(_ source: (any ConcurrentHopSource)?, to stream: StreamID) {
        confinement.enter("attach")
        defer { confinement.leave() }
        let channel = channel(stream)
        precondition(!channel.carriesLevels, "\(stream) carries levels, not audio")
        precondition(source?.readsConcurrently ?? true, "the source of \(stream) cannot be read on a worker thread")
        channel.source = source
    }

    /// Calls `body` with the hop the last tick analysed for an audio stream, if it held audio (submitted, or
    /// read from its source with audio in it); not for a silent tick or a level stream. Between ticks only:
    /// the next `submit` or tick replaces it. Real-time safe.
    /// - Parameter body: Gets `AnalysisFormat.hopSize` samples, valid during the call.
    public func withHeardHop(of stream: StreamID, _ body: (UnsafeBufferPointer<Float>) throws -> Void) rethrows {
        confinement.enter("withHeardHop")
        defer { confinement.leave() }
        let channel = channel(stream)
        guard channel.heard, !channel.carriesLevels, !channel.hasPending else { return }
        try channel.pending.withUnsafeBufferPointer { try body($0) }
    }

    /// Gives a level stream its level for the next tick. A level stream without a level in a tick is
    /// silent (127), as a sender in DTX sends nothing. Real-time safe.
    /// - Parameters:
    ///   - level: RFC 6464 level, 0 (0 dBov) … 127 (silence).
    ///   - voiceActivity: the RFC 6464 V flag, when the sender sets it; nil when it does not.
    /// - Precondition: the stream was added with `addLevelStream(name:room:)`.
    public func submitLevel(_ level: UInt8, voiceActivity: Bool? = nil, to stream: StreamID) {
        confinement.enter("submitLevel")
        defer { confinement.leave() }
        let channel = channel(stream)
        precondition(channel.carriesLevels, "\(stream) carries audio, not levels")
        channel.pendingLevel = min(level, 127)
        channel.pendingVoiceActivity = voiceActivity
        channel.hasPending = true
    }

    /// Gives a level stream its tick as a hop source pulled it (`HopPull.level`): the RFC 6464 level, and the
    /// V flag as the sender's voice decision once the sender has shown that its flag decides, by setting it
    /// on one packet and clearing it on another. Until then the level against the stream's noise floor
    /// decides: senders that never set the flag (GStreamer 1.22) leave it 0 always, which must not read as
    /// "no voice", and browsers (Chrome) set it on every packet, which must not read as "voice" (a talker's
    /// room noise would hold the floor). Real-time safe.
    /// - Precondition: the stream was added with `addLevelStream(name:room:)`.
    public func submitLevel(_ level: AudioLevel, to stream: StreamID) {
        confinement.enter("submitLevel")
        defer { confinement.leave() }
        let channel = channel(stream)
        if level.voice { channel.voiceFlagSet = true } else { channel.voiceFlagCleared = true }
        let decides = channel.voiceFlagSet && channel.voiceFlagCleared
        submitLevel(level.level, voiceActivity: decides ? level.voice : nil, to: stream)
    }

    /// Analyses the submitted hops of all streams and updates every room's decisions.
    /// - Complexity: per stream one 512-point and one 256-point FFT; per room O(speakers²) for leakage;
    ///   shared among `workers` threads by rooms, or, when one room holds more streams than a worker's
    ///   share, the analysis by streams and then the decisions by rooms.
    public func tick() {
        confinement.enter("tick")
        defer { confinement.leave() }
        if layoutChanged { planLayout() }
        if analysisSlices.isEmpty {
            runWorkers(.whole)
        } else {
            runWorkers(.analysis)
            runWorkers(.decision)
        }
        ticks += 1
    }

    /// Starts the workers that have a part in `phase`, does worker 0's part on this thread, and waits for
    /// the others. A worker without rooms has no part in the decision phase (one room shared by the
    /// workers for its analysis is decided by one): it is left asleep, a handshake saved.
    private func runWorkers(_ phase: Phase) {
        self.phase = phase
        var index = 0, started = 0
        while index < threads.count {
            if phase != .decision || !shards[index + 1].rooms.isEmpty { started += 1 }
            index += 1
        }
        workersDone.expect(started)
        index = 0
        while index < threads.count {
            if phase != .decision || !shards[index + 1].rooms.isEmpty { threads[index].run() }
            index += 1
        }
        work(worker: 0)
        workersDone.wait(expected: started)
    }

    /// One worker's part of the current phase.
    private func work(worker: Int) {
        let shard = shards[worker]
        switch phase {
        case .whole: process(shard)
        case .analysis:
            let slice = analysisSlices[worker]
            var position = slice.lowerBound
            while position < slice.upperBound {
                unowned(unsafe) let channel = channels[analysisOrder[position]]!
                if position + 1 < slice.upperBound {
                    unowned(unsafe) let next = channels[analysisOrder[position + 1]]!
                    next.prefetch()
                }
                analyzeStream(channel, with: shard.analyzer)
                position += 1
            }
        case .decision:
            var position = 0
            while position < shard.rooms.count {
                rooms[shard.rooms[position]]!.decision.decide(frame: ticks, events: &shard.events)
                position += 1
            }
        }
    }

    /// Chooses one phase or two for the ticks to come: two when the worker with the most streams has
    /// over a quarter more than an even share (and 16 more), which only a room too large for one
    /// worker causes, rooms being dealt to the worker with the fewest.
    private func planLayout() {
        layoutChanged = false
        analysisOrder.removeAll(keepingCapacity: true)
        analysisSlices.removeAll(keepingCapacity: true)
        guard shards.count > 1 else { return }
        var largest = 0
        for shard in shards {
            let before = analysisOrder.count
            for room in shard.rooms { analysisOrder.append(contentsOf: rooms[room]!.members) }
            largest = max(largest, analysisOrder.count - before)
        }
        let even = (analysisOrder.count + shards.count - 1) / shards.count
        guard largest > even + max(16, even / 4) else {
            analysisOrder.removeAll(keepingCapacity: true)
            return
        }
        for worker in 0..<shards.count {
            let start = min(analysisOrder.count, worker * even)
            analysisSlices.append(start..<min(analysisOrder.count, start + even))
        }
    }

    /// Hands every event since the last call to `body`, oldest first, and forgets them. Events of the
    /// same time keep the order they were made in within a room (speech events, then the floor).
    /// Real-time safe.
    public func consumeEvents(_ body: (EngineEvent) throws -> Void) rethrows {
        confinement.enter("consumeEvents")
        defer { confinement.leave() }
        defer {
            var index = 0
            while index < shards.count {
                shards[index].events.removeAll(keepingCapacity: true)
                index += 1
            }
        }
        if shards.count == 1 {
            // Read in place: a copy of the array held until the deferred `removeAll` (as a debug build
            // holds it) would make that call allocate a new buffer.
            let shard = shards[0]
            var index = 0
            while index < shard.events.count {
                try body(shard.events[index])
                index += 1
            }
            return
        }
        // Merge the shards' buffers, each already in time order, by time (ties: lower shard first).
        var index = 0
        while index < shards.count {
            shards[index].cursor = 0
            index += 1
        }
        while true {
            var next: Shard? = nil
            var position = 0
            while position < shards.count {
                let shard = shards[position]
                position += 1
                guard shard.cursor < shard.events.count else { continue }
                if next == nil || shard.events[shard.cursor].time < next!.events[next!.cursor].time { next = shard }
            }
            guard let chosen = next else { return }
            try body(chosen.events[chosen.cursor])
            chosen.cursor += 1
        }
    }

    // MARK: State queries

    /// The room's dominant speaker, or nil for nobody.
    public func dominantSpeaker(in room: RoomID) -> StreamID? {
        roomState(room).decision.holder?.id
    }

    /// True while the stream is inside an utterance.
    public func isSpeaking(_ stream: StreamID) -> Bool { channel(stream).talker.vad.speaking }

    /// The stream's smoothed level in dBov (0 full scale, −127 silence).
    public func level(of stream: StreamID) -> Float { channel(stream).level }

    /// The features of the stream's last frame.
    public func features(of stream: StreamID) -> FrameFeatures { channel(stream).features }

    /// The sound classifier's input for the stream's last frame (see `SoundContext`).
    public func soundContext(of stream: StreamID) -> SoundContext.Input { channel(stream).evidence.context.input }

    /// The sound classifier's last answer for the stream (it is asked on sounding frames only, and
    /// only when `configuration.vad.classifier` is on; before that: certainly none).
    public func soundClasses(of stream: StreamID) -> SoundClasses { channel(stream).evidence.classes }

    /// Talk-time statistics of the stream.
    public func statistics(of stream: StreamID) -> TalkStatistics { channel(stream).talker.statistics }

    /// The room's speaking streams, loudest first, with their levels (what SDKs call active speakers).
    /// Allocates the result: not for the per-frame path.
    public func activeSpeakers(in room: RoomID) -> [ActiveSpeaker] {
        roomState(room).members
            .compactMap { index -> ActiveSpeaker? in
                let channel = channels[index]!
                return channel.talker.vad.speaking ? ActiveSpeaker(stream: channel.id, level: channel.level) : nil
            }
            .sorted { $0.level > $1.level }
    }

    // MARK: Per-frame work

    /// One worker's share of a tick: each of its rooms' streams analysed, then the room decided.
    private func process(_ shard: Shard) {
        let frame = ticks
        // Index loops: iterating the arrays themselves allocates an iterator context in debug builds.
        var position = 0
        while position < shard.rooms.count {
            let room = rooms[shard.rooms[position]]!
            position += 1
            // Read once per room (members change only between ticks), not through the room per member.
            let members = room.members
            var member = 0
            while member < members.count {
                unowned(unsafe) let channel = channels[members[member]]!
                // The next stream's state comes from memory while this one is analysed (at 1,024 streams
                // it is rarely in cache): the next member, or the next room's first.
                // (Plain branches: `rooms[…]?.members.first` allocated once per tick in a debug build.)
                var next: Int?
                if member + 1 < members.count {
                    next = members[member + 1]
                } else if position < shard.rooms.count, let nextRoom = rooms[shard.rooms[position]], !nextRoom.members.isEmpty {
                    next = nextRoom.members[0]
                }
                if let next {
                    unowned(unsafe) let stream = channels[next]!
                    stream.prefetch()
                }
                analyzeStream(channel, with: shard.analyzer)
                member += 1
            }
            room.decision.decide(frame: frame, events: &shard.events)
        }
    }

    /// One stream's frame: its level (a level stream) or its audio analysed.
    @inline(__always)
    private func analyzeStream(_ channel: StreamChannel, with analyzer: SpectralAnalyzer) {
        if channel.carriesLevels { analyzeLevel(channel) } else { analyze(channel, with: analyzer) }
    }

    private func analyze(_ channel: StreamChannel, with analyzer: SpectralAnalyzer) {
        channel.talker.history.prefetchNextSlot()
        if let source = channel.source {
            let tick = ticks
            channel.heard = channel.pending.withUnsafeMutableBufferPointer { source.read(tick: tick, into: $0) }
        } else if !channel.hasPending {
            channel.pending.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
            channel.heard = false
        } else {
            channel.heard = true
        }
        channel.hasPending = false
        let features = channel.pending.withUnsafeBufferPointer { hop in
            analyzer.analyze(
                hop: hop, state: &channel.spectral, mayRest: configuration.analysis.cascade && !channel.talker.vad.speaking,
                configuration: configuration.vad)
        }
        channel.features = features
        // The hop is the newest in the history; the sample before it ends the previous hop.
        let previousSample = channel.spectral.history[AnalysisFormat.windowSize - AnalysisFormat.hopSize - 1]
        let verdict = channel.pending.withUnsafeBufferPointer { hop in
            channel.evidence.judge(
                features, hop: hop, previousSample: previousSample, speaking: channel.talker.vad.speaking,
                noise: &channel.spectral.noise, classifier: classifier, configuration: configuration.vad)
        }
        assert(channel.prefetchTargetsHold, "a stream's buffers moved: StreamChannel.prefetch would miss them")
        channel.talker.hear(
            voiced: verdict.voiced, continues: verdict.continues, excess: features.speechBandExcessDB, level: features.level,
            shape: SpectralShape(bandEnergyDB: features.bandEnergyDB))
        channel.smoothedMeanSquare = levelSmoothing * channel.smoothedMeanSquare + (1 - levelSmoothing) * features.meanSquare
    }

    /// A level stream's frame: its level against its tracked floor (or its V flag) is its evidence.
    private func analyzeLevel(_ channel: StreamChannel) {
        let received = channel.hasPending
        let level = received ? channel.pendingLevel : 127
        let voiceActivity = received ? channel.pendingVoiceActivity : nil
        channel.hasPending = false
        var features = FrameFeatures()
        features.level = level
        features.energyDBFS = level >= 127 ? Levels.floorDBFS : -Float(level)
        features.meanSquare = Self.meanSquareOfLevel[Int(level)]
        // A tick without a level (before the first packet, or DTX), or with level 127 (silence, as some
        // senders report it), says nothing about the noise floor.
        let floor = received && level < 127 ? channel.levelFloor.update(features.energyDBFS) : channel.levelFloor.floor
        features.segmentalSNR = max(features.energyDBFS - floor, 0)
        features.speechBandExcessDB = features.energyDBFS
        channel.features = features
        let c = configuration.vad
        let loudEnough = level < 127 && features.energyDBFS >= c.minimumLevel
        let evidence = loudEnough && (voiceActivity ?? (features.segmentalSNR >= c.levelSNR))
        channel.talker.hear(voiced: evidence, continues: evidence, excess: features.speechBandExcessDB, level: features.level)
        channel.smoothedMeanSquare = levelSmoothing * channel.smoothedMeanSquare + (1 - levelSmoothing) * features.meanSquare
    }

    // MARK: Helpers

    /// The mean square of each RFC 6464 level, 10^(−level/10); 0 for 127 (silence).
    private static let meanSquareOfLevel: [Float] = (0...127).map { $0 == 127 ? 0 : Float.pow10(-Float($0) / 10) }

    private func channel(_ stream: StreamID) -> StreamChannel {
        confinement.check("a stream query")
        guard stream.rawValue >= 0, stream.rawValue < channels.count, let channel = channels[stream.rawValue],
            channel.id == stream
        else {
            preconditionFailure("\(stream) does not exist")
        }
        return channel
    }

    private func roomState(_ room: RoomID) -> RoomState {
        confinement.check("a room query")
        guard room.rawValue >= 0, room.rawValue < rooms.count, let state = rooms[room.rawValue], state.id == room else {
            preconditionFailure("\(room) does not exist")
        }
        return state
    }
}

extension Float {
    /// 10^x.
    @inlinable static func pow10(_ x: Float) -> Float { exp2f(x * 3.321_928_1) }
}
