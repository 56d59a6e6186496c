/// One room of an `Engine` fed by hop sources, its streams named by their index in the order they were
/// added: a `MultiRoomRunner` of one room, whose `tick()` it runs.
///
/// Behind `detect` and `eval` (`RoomReplay`), `live` (capture devices) and the client SDK's local speech
/// detector (a `HopCutter` on the resampled microphone).
///
/// A `ConcurrentHopSource` that `readsConcurrently` (a mono file) is not pulled: the engine reads it on the
/// thread that analyses its stream (`Engine.attach(_:to:)`), so that with several workers decoding runs on
/// them all; the runner only asks it, before each tick, whether it has ended.
///
/// Sources may be added and removed between ticks. A source that pulls `.ended` is removed at that tick,
/// before the engine runs it: its open utterance ends and, if it held the floor, the room's dominant speaker
/// becomes nobody, with the time of the end of its last hop. `finish()` removes the sources still present.
///
/// ```swift
/// let runner = try RoomRunner(roomName: "listen")
/// let alice = runner.add(receiver, name: "alice")
/// while running {
///     runner.tick()
///     runner.consumeEvents { event in … }   // .speech(stream: alice, …)
/// }
/// runner.finish()
/// runner.consumeEvents { event in … }
/// ```
///
/// After the sources are added, `tick()` allocates nothing (the engine's own tick aside, which is
/// real-time safe too) and `consumeEvents` allocates nothing but what `body` does. Not thread-safe: the
/// engine's thread owns it (debug builds stop on a call while another thread is inside: `ConfinementCheck`).
public final class RoomRunner {
    /// A decision of the engine, naming streams by their source's index (the order `add` returned).
    public enum Event: Sendable, Equatable {
        /// Voice activity of stream `stream` changed at `time`; the change began at `since`
        /// (a start: the beginning of the first speech hop; an end: the end of the last speech hop).
        case speech(stream: Int, active: Bool, time: Double, since: Double)
        /// The dominant speaker became stream `stream`, or nobody for nil, at `time`.
        case dominant(stream: Int?, time: Double)
    }

    /// The runner of the one room.
    private let rooms: MultiRoomRunner<Int, Int>
    /// The engine the room runs in.
    public var engine: Engine { rooms.engine }
    /// The room.
    public let room: RoomID
    /// The stream names, by source index (removed sources keep theirs).
    public private(set) var names: [String] = []
    /// Per source: its talk statistics as they were at its removal.
    private var lastStatistics: [TalkStatistics?] = []
    /// Debug builds: stops on a call while another thread is inside the runner.
    var confinement: ConfinementCheck { rooms.confinement }

    /// Runs a new room in `engine`.
    /// - Parameters:
    ///   - engine: The engine; only this runner ticks it.
    ///   - roomName: The engine's name for the room.
    public init(engine: Engine, roomName: String) {
        rooms = MultiRoomRunner(engine: engine)
        rooms.addRoom(0, name: roomName)
        room = rooms.engineRoom(0)!
    }

    /// Runs a room in a new engine.
    /// - Parameters:
    ///   - configuration: The engine's configuration.
    ///   - roomName: The engine's name for the room.
    ///   - workers: Threads that share each tick (`Engine(configuration:workers:policies:)`).
    ///   - policies: The floor policies the configuration may name.
    /// - Throws: `ConfigurationError` if the configuration is out of range.
    public convenience init(
        configuration: EngineConfiguration = EngineConfiguration(), roomName: String, workers: Int = 1,
        policies: FloorPolicies = .standard
    ) throws(ConfigurationError) {
        self.init(engine: try Engine(configuration: configuration, workers: workers, policies: policies), roomName: roomName)
    }

    /// Ticks done so far (the engine's).
    public var ticks: Int { rooms.ticks }
    /// Seconds of audio processed: the end of the last tick.
    public var time: Double { rooms.time }
    /// Sources added so far, present or not.
    public var count: Int { names.count }

    /// Adds a source as a new stream of the room; it is pulled from the next tick on.
    /// - Parameters:
    ///   - source: The stream's hops.
    ///   - name: The engine's name for the stream.
    ///   - levels: True for a level-only stream (`Engine.addLevelStream`): the source pulls `.level`, not audio.
    /// - Returns: The source's index, which events use.
    @discardableResult
    public func add(_ source: any HopSource, name: String, levels: Bool = false) -> Int {
        let index = names.count
        rooms.add(source, as: index, name: name, in: 0, levels: levels)
        names.append(name)
        lastStatistics.append(nil)
        return index
    }

    /// Removes a present source from the engine: its open utterance ends and, if it held the floor, the room
    /// has nobody until the next tick decides. Nothing happens if it is gone already.
    public func remove(_ index: Int) {
        if let statistics = rooms.remove(index) { lastStatistics[index] = statistics }
    }

    /// Whether source `index` is still in the engine.
    public func isPresent(_ index: Int) -> Bool { rooms.contains(index) }

    /// Indices of the sources still in the engine, in order.
    public var presentSources: [Int] { rooms.streams }

    /// The engine's handle of a present source's stream, or nil once it was removed.
    public func handle(of index: Int) -> StreamID? { rooms.handle(of: index) }

    /// The smoothed level of a present source's stream in dBov (0 full scale, −127 silence), or nil if removed.
    public func level(of index: Int) -> Float? { rooms.level(of: index) }

    /// Talk statistics of a source's stream: live while it is present, as they were at its removal after.
    public func statistics(of index: Int) -> TalkStatistics {
        rooms.statistics(of: index) ?? lastStatistics[index]!
    }

    /// Pulls every present source for the next tick, in order, submits what it gives (a source that ended is
    /// removed), and runs one engine tick, which reads the attached sources.
    /// - Complexity: O(present sources) plus the engine's tick. Allocates nothing.
    public func tick() {
        rooms.tick(ended: { index, statistics in lastStatistics[index] = statistics })
    }

    /// Removes every source still present, ending their utterances. Call after the last tick.
    public func finish() {
        for index in rooms.streams { remove(index) }
    }

    /// Hands every event since the last call to `body`, oldest first, and forgets them.
    public func consumeEvents(_ body: (Event) throws -> Void) rethrows {
        try rooms.consumeEvents { event in
            switch event {
            case .speech(_, let stream, let active, let time, let since):
                try body(.speech(stream: stream, active: active, time: time, since: since))
            case .dominant(_, let stream, let time):
                try body(.dominant(stream: stream, time: time))
            }
        }
    }
}
