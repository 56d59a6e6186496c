/// One room of an `Engine` fed by hop sources: each `tick()` pulls every source once, submits its audio or
/// level, and runs one engine tick. Events name the sources by their index, in the order they were added.
///
/// The one loop behind `detect` and `eval` (`RoomReplay`), `listen` (RTP jitter buffers), `live` (capture
/// devices) and the client SDK's local speech detector (a `HopCutter` on the resampled microphone).
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

    /// The engine the room runs in.
    public let engine: Engine
    /// The room.
    public let room: RoomID
    /// The stream names, by source index (removed sources keep theirs).
    public private(set) var names: [String] = []

    private var sources: [(any HopSource)?] = []
    /// Indices of the present sources, ascending: what `tick()` walks, so that sources removed long ago
    /// (a long `listen` with SSRCs coming and going) cost it nothing.
    private var present: [Int] = []
    /// Per source: the source itself when the engine reads it (`Engine.attach`), nil when it is pulled.
    private var attached: [(any ConcurrentHopSource)?] = []
    private var handles: [StreamID?] = []
    private var lastStatistics: [TalkStatistics?] = []
    /// The one map from the engine's streams to the sources. Entries stay after a removal: the removal's
    /// events still name the source.
    private var sourceOfStream: [StreamID: Int] = [:]
    private let hop: UnsafeMutableBufferPointer<Float>
    /// Debug builds: stops on a call while another thread is inside the runner.
    let confinement = ConfinementCheck("RoomRunner")

    /// Runs a new room in `engine`.
    /// - Parameters:
    ///   - engine: The engine; other rooms may share it, but only this runner ticks it.
    ///   - roomName: The engine's name for the room.
    public init(engine: Engine, roomName: String) {
        self.engine = engine
        room = engine.addRoom(name: roomName)
        hop = .allocate(capacity: AnalysisFormat.hopSize)
        hop.initialize(repeating: 0)
    }

    /// Runs a room in a new engine.
    /// - Parameters:
    ///   - configuration: The engine's configuration.
    ///   - roomName: The engine's name for the room.
    ///   - workers: Threads that share each tick (`Engine(configuration:workers:)`).
    /// - Throws: `ConfigurationError` if the configuration is out of range.
    public convenience init(
        configuration: EngineConfiguration = EngineConfiguration(), roomName: String, workers: Int = 1
    ) throws(ConfigurationError) {
        self.init(engine: try Engine(configuration: configuration, workers: workers), roomName: roomName)
    }

    deinit { hop.deallocate() }

    /// Ticks done so far (the engine's).
    public var ticks: Int { engine.ticks }
    /// Seconds of audio processed: the end of the last tick.
    public var time: Double { engine.time }
    /// Sources added so far, present or not.
    public var count: Int { sources.count }

    /// Adds a source as a new stream of the room; it is pulled from the next tick on.
    /// - Parameters:
    ///   - source: The stream's hops.
    ///   - name: The engine's name for the stream.
    ///   - levels: True for a level-only stream (`Engine.addLevelStream`): the source pulls `.level`, not audio.
    /// - Returns: The source's index, which events use.
    @discardableResult
    public func add(_ source: any HopSource, name: String, levels: Bool = false) -> Int {
        confinement.enter("add")
        defer { confinement.leave() }
        let handle = levels ? engine.addLevelStream(name: name, room: room) : engine.addStream(name: name, room: room)
        let index = sources.count
        sources.append(source)
        if !levels, let concurrent = source as? any ConcurrentHopSource, concurrent.readsConcurrently {
            engine.attach(concurrent, to: handle)
            attached.append(concurrent)
        } else {
            attached.append(nil)
        }
        handles.append(handle)
        names.append(name)
        lastStatistics.append(nil)
        sourceOfStream[handle] = index
        present.append(index)
        return index
    }

    /// Removes a present source from the engine: its open utterance ends and, if it held the floor, the room
    /// has nobody until the next tick decides. Nothing happens if it is gone already.
    public func remove(_ index: Int) {
        confinement.enter("remove")
        defer { confinement.leave() }
        guard let handle = handles[index] else { return }
        lastStatistics[index] = engine.removeStream(handle)
        handles[index] = nil
        sources[index] = nil
        attached[index] = nil
        present.remove(at: Self.position(of: index, in: present))
    }

    /// Whether source `index` is still in the engine.
    public func isPresent(_ index: Int) -> Bool { handles[index] != nil }

    /// Indices of the sources still in the engine, in order.
    public var presentSources: [Int] { present }

    /// The engine's handle of a present source's stream, or nil once it was removed.
    public func handle(of index: Int) -> StreamID? { handles[index] }

    /// The smoothed level of a present source's stream in dBov (0 full scale, −127 silence), or nil if removed.
    public func level(of index: Int) -> Float? {
        guard let handle = handles[index] else { return nil }
        return engine.level(of: handle)
    }

    /// Talk statistics of a source's stream: live while it is present, as they were at its removal after.
    public func statistics(of index: Int) -> TalkStatistics {
        if let handle = handles[index] { return engine.statistics(of: handle) }
        return lastStatistics[index]!
    }

    /// Pulls every present source for the next tick, in order, submits what it gives (a source that ended is
    /// removed), and runs one engine tick, which reads the attached sources.
    /// - Complexity: O(present sources) plus the engine's tick. Allocates nothing.
    public func tick() {
        confinement.enter("tick")
        defer { confinement.leave() }
        let tick = engine.ticks
        var position = 0
        while position < present.count {
            let index = present[position]
            // A source that ends is removed from `present` here, and the next one moves into its position.
            position += 1
            if let concurrent = attached[index] {
                if !concurrent.hasHop(tick: tick) {
                    remove(index)
                    position -= 1
                }
            } else if let handle = handles[index], let source = sources[index] {
                switch source.pull(tick: tick, into: hop) {
                case .audio:
                    engine.submit(UnsafeBufferPointer(hop), to: handle)
                case .level(let level):
                    engine.submitLevel(level, to: handle)
                case .silence:
                    break
                case .ended:
                    remove(index)
                    position -= 1
                }
            }
        }
        engine.tick()
    }

    /// Removes every source still present, ending their utterances. Call after the last tick.
    public func finish() {
        confinement.enter("finish")
        defer { confinement.leave() }
        while let first = present.first { remove(first) }
    }

    /// Where `index` is in the ascending `indices` (binary search).
    private static func position(of index: Int, in indices: [Int]) -> Int {
        var low = 0, high = indices.count
        while low < high {
            let middle = (low + high) / 2
            if indices[middle] < index { low = middle + 1 } else { high = middle }
        }
        precondition(low < indices.count && indices[low] == index, "source \(index) is not present")
        return low
    }

    /// Hands every event since the last call to `body`, oldest first, and forgets them.
    /// - Precondition: the engine runs no other room (its events would name no source here).
    public func consumeEvents(_ body: (Event) throws -> Void) rethrows {
        confinement.enter("consumeEvents")
        defer { confinement.leave() }
        try engine.consumeEvents { event in
            switch event {
            case .speech(let stream, let active, let time, let since):
                try body(.speech(stream: sourceOfStream[stream]!, active: active, time: time, since: since))
            case .dominant(_, let stream, let time):
                try body(.dominant(stream: stream.map { sourceOfStream[$0]! }, time: time))
            }
        }
    }
}
