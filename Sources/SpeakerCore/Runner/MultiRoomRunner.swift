/// The rooms of one `Engine`, fed by hop sources and named by the caller's own ids: each `tick()` pulls
/// every present source once, submits its audio or level, runs one engine tick, and lets the caller hear
/// the hops the engine analysed. Events name rooms and streams by those ids.
///
/// The one frame loop of the library: `RoomRunner` (one room: `detect`, `eval`, `live`, the SDK's local
/// detector) is a view of it, and the RTP rooms of `listen` and the server (`RTPRoomRunner`) run on it. No
/// caller keeps a map from the engine's ids to its own.
///
/// A `ConcurrentHopSource` that `readsConcurrently` (a mono file, an RTP stream that decodes) is not pulled:
/// the engine reads it on the thread that analyses its stream (`Engine.attach(_:to:)`), so that with several
/// workers decoding runs on them all; the runner only asks it, before each tick, whether it has ended.
///
/// Sources may be added and removed between ticks. A source that pulls `.ended` is removed at that tick,
/// before the engine runs it: its open utterance ends and, if it held the floor, the room's dominant speaker
/// becomes nobody, with the time of the end of its last hop.
///
/// ```swift
/// let runner = try MultiRoomRunner<String, String>(workers: 2)
/// runner.addRoom("standup")
/// runner.add(receiver, as: "alice", in: "standup")
/// while running {
///     runner.tick(hearing: { stream, hop in mixer.add(hop, of: stream) })   // the hops the engine heard
///     runner.consumeEvents { event in … }                           // .dominant(room: "standup", stream: "alice", …)
/// }
/// ```
///
/// After the rooms and sources are added, `tick()` allocates nothing (the engine's own tick aside, which is
/// real-time safe too) and `consumeEvents` allocates nothing but what `body` does. Not thread-safe: the
/// thread that ticks owns it (debug builds stop on a call while another thread is inside: `ConfinementCheck`).
public final class MultiRoomRunner<Room: Hashable, Stream: Hashable> {
    /// A decision of the engine, in the caller's ids.
    public enum Event {
        /// Voice activity of `stream` in `room` changed at `time`; the change began at `since`
        /// (a start: the beginning of the first speech hop; an end: the end of the last speech hop).
        case speech(room: Room, stream: Stream, active: Bool, time: Double, since: Double)
        /// The dominant speaker of `room` became `stream`, or nobody for nil, at `time`.
        case dominant(room: Room, stream: Stream?, time: Double)
    }

    /// How a present stream is fed: what the per-tick path reads. Not generic, so that a tick in a client's
    /// module (which does not specialise this class) copies no value through witness tables and looks up no
    /// generic metadata.
    private struct Feed {
        let handle: StreamID
        /// Nil when the engine reads the source (`attached`).
        let pulled: (any HopSource)?
        let attached: (any ConcurrentHopSource)?
        let levels: Bool
    }

    /// The engine the rooms run in; only this runner ticks it.
    public let engine: Engine
    private var roomIDs: [Room: RoomID] = [:]
    /// The caller's id of each room, for events.
    private var roomKeys: [RoomID: Room] = [:]
    /// The present streams, in the order they were added: what `tick()` walks, and (same positions) their ids.
    private var feeds: [Feed] = []
    private var keys: [(stream: Stream, room: Room)] = []
    private var positionOfKey: [Stream: Int] = [:]
    /// The caller's ids of each stream, for events. A removed stream's or room's stay until the events
    /// are next consumed (`retiredStreams`, `retiredRooms`), so that the events of its removal name it.
    private var streamKeys: [StreamID: (stream: Stream, room: Room)] = [:]
    private var retiredStreams: [StreamID] = []
    private var retiredRooms: [RoomID] = []
    private let hop: UnsafeMutableBufferPointer<Float>
    /// Debug builds: stops on a call while another thread is inside the runner.
    let confinement = ConfinementCheck("MultiRoomRunner")

    /// Runs rooms in `engine`, which nothing else ticks.
    public init(engine: Engine) {
        self.engine = engine
        hop = .allocate(capacity: AnalysisFormat.hopSize)
        hop.initialize(repeating: 0)
    }

    /// Runs rooms in a new engine.
    /// - Parameters:
    ///   - configuration: The engine's configuration.
    ///   - workers: Threads that share each tick (`Engine(configuration:workers:policies:)`).
    ///   - policies: The floor policies the configuration may name.
    /// - Throws: `ConfigurationError` if the configuration is out of range.
    public convenience init(
        configuration: EngineConfiguration = EngineConfiguration(), workers: Int = 1, policies: FloorPolicies = .standard
    ) throws(ConfigurationError) {
        self.init(engine: try Engine(configuration: configuration, workers: workers, policies: policies))
    }

    deinit { hop.deallocate() }

    /// Ticks done so far (the engine's).
    public var ticks: Int { engine.ticks }
    /// Seconds of audio processed: the end of the last tick.
    public var time: Double { engine.time }
    /// The present streams, in the order they were added.
    public var streams: [Stream] { keys.map(\.stream) }

    // MARK: Rooms and streams

    /// Adds an empty room.
    /// - Parameters:
    ///   - name: The engine's name for it; by default the id's description.
    ///   - policy: The name of its dominant-speaker policy, one of the engine's; nil takes the configuration's.
    /// - Precondition: no room has this id.
    public func addRoom(_ room: Room, name: String? = nil, policy: String? = nil) {
        confinement.enter("addRoom")
        defer { confinement.leave() }
        precondition(roomIDs[room] == nil, "room \(room) is present already")
        let id = engine.addRoom(name: name ?? "\(room)", policy: policy)
        roomIDs[room] = id
        roomKeys[id] = room
    }

    /// Removes a room: its streams first (their utterances end, the floor goes to nobody: events), then
    /// the room. Nothing happens for a room that is not present.
    public func removeRoom(_ room: Room) {
        confinement.enter("removeRoom")
        defer { confinement.leave() }
        guard let id = roomIDs[room] else { return }
        var position = keys.count - 1
        while position >= 0 {
            if keys[position].room == room { remove(keys[position].stream) }
            position -= 1
        }
        engine.removeRoom(id)
        roomIDs[room] = nil
        retiredRooms.append(id)
    }

    /// Whether `room` is present.
    public func hasRoom(_ room: Room) -> Bool { roomIDs[room] != nil }

    /// The engine's id of a present room.
    public func engineRoom(_ room: Room) -> RoomID? { roomIDs[room] }

    /// Adds a source as a new stream of a room; it is pulled (or read) from the next tick on.
    /// - Parameters:
    ///   - source: The stream's hops.
    ///   - stream: The caller's id of the stream, unique among the present streams of every room.
    ///   - name: The engine's name for it; by default the id's description.
    ///   - room: A present room.
    ///   - levels: True for a level-only stream (`Engine.addLevelStream`): the source pulls `.level`, not audio.
    public func add(_ source: any HopSource, as stream: Stream, name: String? = nil, in room: Room, levels: Bool = false) {
        confinement.enter("add")
        defer { confinement.leave() }
        guard let roomID = roomIDs[room] else { preconditionFailure("room \(room) is not present") }
        precondition(positionOfKey[stream] == nil, "stream \(stream) is present already")
        let streamName = name ?? "\(stream)"
        let handle = levels ? engine.addLevelStream(name: streamName, room: roomID) : engine.addStream(name: streamName, room: roomID)
        var attached: (any ConcurrentHopSource)?
        if !levels, let concurrent = source as? any ConcurrentHopSource, concurrent.readsConcurrently {
            engine.attach(concurrent, to: handle)
            attached = concurrent
        }
        positionOfKey[stream] = feeds.count
        feeds.append(Feed(handle: handle, pulled: attached == nil ? source : nil, attached: attached, levels: levels))
        keys.append((stream, room))
        streamKeys[handle] = (stream, room)
    }

    /// Removes a present stream from the engine: its open utterance ends and, if it held the floor, its room
    /// has nobody until the next tick decides. Nothing happens for a stream that is not present.
    /// - Returns: Its final talk statistics; nil if it was not present.
    @discardableResult
    public func remove(_ stream: Stream) -> TalkStatistics? {
        confinement.enter("remove")
        defer { confinement.leave() }
        guard let position = positionOfKey.removeValue(forKey: stream) else { return nil }
        let handle = feeds[position].handle
        let statistics = engine.removeStream(handle)
        retiredStreams.append(handle)
        feeds.remove(at: position)
        keys.remove(at: position)
        var later = position
        while later < keys.count {
            positionOfKey[keys[later].stream] = later
            later += 1
        }
        return statistics
    }

    /// The room of a present stream.
    public func room(of stream: Stream) -> Room? { positionOfKey[stream].map { keys[$0].room } }

    /// Whether `stream` is present.
    public func contains(_ stream: Stream) -> Bool { positionOfKey[stream] != nil }

    /// The engine's handle of a present stream.
    public func handle(of stream: Stream) -> StreamID? { positionOfKey[stream].map { feeds[$0].handle } }

    /// The smoothed level of a present stream in dBov (0 full scale, −127 silence), or nil if not present.
    public func level(of stream: Stream) -> Float? { handle(of: stream).map(engine.level(of:)) }

    /// Whether a present stream is inside an utterance (false if not present).
    public func isSpeaking(_ stream: Stream) -> Bool { handle(of: stream).map(engine.isSpeaking) ?? false }

    /// Live talk statistics of a present stream.
    public func statistics(of stream: Stream) -> TalkStatistics? { handle(of: stream).map(engine.statistics(of:)) }

    // MARK: Ticks

    /// Pulls every present source for the next tick, in order, submits what it gives (a source that ended is
    /// removed), and runs one engine tick, which reads the attached sources.
    /// - Complexity: O(present sources) plus the engine's tick. Allocates nothing.
    public func tick() {
        // No default-argument closures here: a debug build allocates a context for one on every call.
        step(hears: false, hearing: { _, _ in }, ended: { _, _ in })
    }

    /// `tick()`, calling `ended` for each stream whose source ended this tick, with its final talk
    /// statistics, as it is removed.
    public func tick(ended: (Stream, TalkStatistics) -> Void) {
        step(hears: false, hearing: { _, _ in }, ended: ended)
    }

    /// `tick()`, then hands `hearing` each audio stream's hop that held audio this tick, as the engine
    /// analysed it (decoded on whichever thread read it).
    /// - Parameter hearing: Called on this thread after the engine's tick, in the order the streams were added;
    ///   the hop is valid during the call only.
    /// - Complexity: O(present sources) plus the engine's tick. Allocates nothing.
    public func tick(hearing: (Stream, UnsafeBufferPointer<Float>) -> Void) {
        step(hears: true, hearing: hearing, ended: { _, _ in })
    }

    private func step(
        hears: Bool, hearing: (Stream, UnsafeBufferPointer<Float>) -> Void, ended endedStream: (Stream, TalkStatistics) -> Void
    ) {
        confinement.enter("tick")
        defer { confinement.leave() }
        let tick = engine.ticks
        var position = 0
        while position < feeds.count {
            let feed = feeds[position]
            var ended = false
            if let attached = feed.attached {
                ended = !attached.hasHop(tick: tick)
            } else if let source = feed.pulled {
                switch source.pull(tick: tick, into: hop) {
                case .audio:
                    engine.submit(UnsafeBufferPointer(hop), to: feed.handle)
                case .level(let level):
                    engine.submitLevel(level, to: feed.handle)
                case .silence:
                    break
                case .ended:
                    ended = true
                }
            }
            if ended {
                // The next stream moves into this position.
                let key = keys[position].stream
                let statistics = remove(key)!
                endedStream(key, statistics)
            } else {
                position += 1
            }
        }
        engine.tick()
        guard hears else { return }
        position = 0
        while position < feeds.count {
            let feed = feeds[position]
            if !feed.levels { engine.withHeardHop(of: feed.handle) { hearing(keys[position].stream, $0) } }
            position += 1
        }
    }

    /// Removes every stream still present, ending their utterances. Call after the last tick.
    public func finish() {
        confinement.enter("finish")
        defer { confinement.leave() }
        while let first = keys.first { remove(first.stream) }
    }

    /// Hands every event since the last call to `body`, oldest first, and forgets them.
    public func consumeEvents(_ body: (Event) throws -> Void) rethrows {
        confinement.enter("consumeEvents")
        defer {
            confinement.leave()
            forgetRetired()
        }
        try engine.consumeEvents { event in
            switch event {
            case .speech(let stream, let active, let time, let since):
                guard let keys = streamKeys[stream] else { return }
                try body(.speech(room: keys.room, stream: keys.stream, active: active, time: time, since: since))
            case .dominant(let room, let stream, let time):
                guard let roomKey = roomKeys[room] else { return }
                try body(.dominant(room: roomKey, stream: stream.map { streamKeys[$0]!.stream }, time: time))
            }
        }
    }
}

extension MultiRoomRunner {
    /// Forgets the ids of the streams and rooms removed before the events were consumed.
    private func forgetRetired() {
        guard !retiredStreams.isEmpty || !retiredRooms.isEmpty else { return }
        var index = 0
        while index < retiredStreams.count {
            streamKeys[retiredStreams[index]] = nil
            index += 1
        }
        index = 0
        while index < retiredRooms.count {
            roomKeys[retiredRooms[index]] = nil
            index += 1
        }
        retiredStreams.removeAll(keepingCapacity: true)
        retiredRooms.removeAll(keepingCapacity: true)
    }
}

extension MultiRoomRunner.Event: Sendable where Room: Sendable, Stream: Sendable {}
extension MultiRoomRunner.Event: Equatable {}
