import Foundation
import Synchronization

/// One recorded participant of a room: an id and its samples, starting at t = 0.
public struct ReplayStream: Sendable, Equatable {
    /// The stream id reported in events, e.g. the file's base name.
    public var id: String
    /// Mono samples at `AnalysisFormat.sampleRate` (16 kHz), nominally in [-1, 1].
    public var samples: [Float]

    public init(id: String, samples: [Float]) {
        self.id = id
        self.samples = samples
    }

    /// Ticks (10 ms hops) the stream lasts: its samples split into hops, a final partial hop counted whole.
    public var hopCount: Int { (samples.count + AnalysisFormat.hopSize - 1) / AnalysisFormat.hopSize }
}

/// One recorded participant of a room whose samples are read as the replay plays them, so that a long
/// recording need not be held whole (e.g. a file decoded a block at a time).
public protocol ReplaySource: AnyObject {
    /// The stream id reported in events.
    var id: String { get }
    /// Samples the stream holds in all, at `AnalysisFormat.sampleRate`; known before the first read.
    var sampleCount: Int { get }
    /// Writes the next samples to the front of `buffer`.
    /// - Returns: Samples written: `buffer.count` until the last `sampleCount` samples, fewer at the end.
    /// - Throws: Whatever reading the recording throws (a damaged file).
    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int
    /// Whether `read(into:)` may run on an engine thread at the same time as other sources' reads: true when
    /// the source shares no mutable state with another (a mono file with its own decoder). Then the engine's
    /// workers read it (`ConcurrentHopSource`) and decoding runs in parallel. False unless a source says so.
    var readsIndependently: Bool { get }
}

extension ReplaySource {
    public var readsIndependently: Bool { false }
}

/// Plays recorded streams of one room through an `Engine` as a live call would: a `RoomRunner` whose sources
/// are the recordings.
///
/// All streams start at t = 0. Each `tick()` gives every present stream its next hop (a final partial hop
/// padded with zeros) and runs one engine tick. A stream whose recording has ended is removed from the
/// engine at the start of the tick after its last hop, so its open utterance ends and, if it held the
/// floor, the room's dominant speaker becomes nobody; those events carry the time its audio ended.
/// `finish()` removes the streams still present after the last tick.
///
/// Streams are whole arrays (`ReplayStream`) or `ReplaySource`s read one hop per tick; both play alike. Once a
/// source throws, no source is read again (all play zeros) and the error is kept in `sourceFailure`: check it
/// after each `tick()`, before using that tick's events.
///
/// ```swift
/// let replay = try RoomReplay(streams: streams)
/// while !replay.isAtEnd {
///     replay.tick()
///     replay.consumeEvents { print($0) }
/// }
/// replay.finish()
/// replay.consumeEvents { print($0) }
/// ```
public final class RoomReplay {
    /// A decision of the engine, naming streams by their index in `streamIDs`.
    public typealias Event = RoomRunner.Event

    /// The stream ids, in the order given.
    public let streamIDs: [String]
    /// The engine the streams play through.
    public var engine: Engine { runner.engine }
    /// Ticks of the longest stream: `tick()` may be called this many times.
    public let tickCount: Int
    /// The room the streams play in.
    public let runner: RoomRunner

    /// The first error a source threw and the index of that stream, or nil; from then on every source plays zeros.
    public var sourceFailure: (stream: Int, error: any Error)? { failure.first }
    private let failure = ReplayFailure()

    /// Adds one room with all streams to a new engine.
    /// - Parameters:
    ///   - streams: The participants; ids should be distinct to tell them apart in output.
    ///   - configuration: The engine's configuration.
    ///   - roomName: The engine's name for the room.
    ///   - policies: The floor policies the configuration may name.
    /// - Throws: `ConfigurationError` if the configuration is out of range.
    public convenience init(
        streams: [ReplayStream], configuration: EngineConfiguration = EngineConfiguration(), roomName: String = "replay",
        policies: FloorPolicies = .standard
    ) throws(ConfigurationError) {
        try self.init(
            ids: streams.map(\.id), hopCounts: streams.map(\.hopCount), configuration: configuration, roomName: roomName,
            workers: 1, policies: policies
        ) { _, _ in streams.map(ReplayArrayHops.init) }
    }

    /// Adds one room with all streams, read as they play, to a new engine.
    /// - Parameters:
    ///   - sources: The participants; ids should be distinct to tell them apart in output.
    ///   - configuration: The engine's configuration.
    ///   - roomName: The engine's name for the room.
    ///   - workers: threads that share each tick (`Engine(configuration:workers:)`); more than one pays
    ///     only for rooms of many streams. Decisions are the same whatever the count.
    ///   - policies: The floor policies the configuration may name.
    /// - Throws: `ConfigurationError` if the configuration is out of range.
    public convenience init(
        sources: [any ReplaySource], configuration: EngineConfiguration = EngineConfiguration(),
        roomName: String = "replay", workers: Int = 1, policies: FloorPolicies = .standard
    ) throws(ConfigurationError) {
        let hop = AnalysisFormat.hopSize
        let hopCounts = sources.map { ($0.sampleCount + hop - 1) / hop }
        try self.init(
            ids: sources.map(\.id), hopCounts: hopCounts, configuration: configuration, roomName: roomName,
            workers: workers, policies: policies
        ) { failure, hopCounts in
            sources.indices.map { ReplaySourceHops(sources[$0], stream: $0, hopCount: hopCounts[$0], failure: failure) }
        }
    }

    private init(
        ids: [String], hopCounts: [Int], configuration: EngineConfiguration, roomName: String, workers: Int,
        policies: FloorPolicies, hops: (ReplayFailure, [Int]) -> [any HopSource]
    ) throws(ConfigurationError) {
        streamIDs = ids
        runner = try RoomRunner(configuration: configuration, roomName: roomName, workers: workers, policies: policies)
        for (id, source) in zip(ids, hops(failure, hopCounts)) { runner.add(source, name: id) }
        tickCount = hopCounts.max() ?? 0
    }

    /// Ticks done so far.
    public var ticks: Int { runner.ticks }
    /// Seconds of audio processed: the end of the last hop.
    public var time: Double { runner.time }
    /// Seconds of the longest stream, rounded up to whole hops.
    public var duration: Double { Double(tickCount) * AnalysisFormat.hopDuration }
    /// True when every hop has been played (`finish()` may still have streams to remove).
    public var isAtEnd: Bool { ticks >= tickCount }

    /// Indices of the streams still in the engine, in order.
    public var presentStreams: [Int] { runner.presentSources }

    /// The engine's handle of a present stream, or nil once it was removed.
    public func handle(of stream: Int) -> StreamID? { runner.handle(of: stream) }

    /// The smoothed level of a present stream in dBov (0 full scale, −127 silence), or nil if removed.
    public func level(of stream: Int) -> Float? { runner.level(of: stream) }

    /// Talk statistics of a stream: live while it is present, as they were just before its removal after.
    public func statistics(of stream: Int) -> TalkStatistics { runner.statistics(of: stream) }

    /// Plays the next hop of every stream: removes the streams that ended, submits, ticks.
    /// - Precondition: `!isAtEnd`.
    public func tick() {
        precondition(!isAtEnd, "the replay is at its end")
        runner.tick()
    }

    /// Removes every stream still present, ending their utterances. Call after the last tick.
    public func finish() { runner.finish() }

    /// Hands every event since the last call to `body`, oldest first, and forgets them.
    public func consumeEvents(_ body: (Event) throws -> Void) rethrows { try runner.consumeEvents(body) }
}

/// The first error any source of a replay threw (shared by its sources: after it, all play zeros). Sources
/// may be read on several engine threads at once, so the error is kept under a lock and announced by an
/// atomic flag, which every read checks.
private final class ReplayFailure: @unchecked Sendable {
    private let failed = Atomic<Bool>(false)
    private let lock = NSLock()
    private var recorded: (stream: Int, error: any Error)?

    /// Whether a source has thrown.
    var hasFailed: Bool { failed.load(ordering: .acquiring) }

    /// The first error recorded, with its stream.
    var first: (stream: Int, error: any Error)? { lock.withLock { recorded } }

    /// Records `error` of `stream` unless an earlier one is recorded.
    func record(stream: Int, error: any Error) {
        lock.withLock {
            if recorded == nil { recorded = (stream, error) }
        }
        failed.store(true, ordering: .releasing)
    }
}

/// A whole recording as a hop source: hop `n` is samples `[160n, 160n + 160)`, the last one padded with zeros,
/// then `.ended`. Read-only, so the engine's workers read it.
private final class ReplayArrayHops: ConcurrentHopSource {
    private let samples: [Float]

    init(_ stream: ReplayStream) { samples = stream.samples }

    var readsConcurrently: Bool { true }

    func hasHop(tick: Int) -> Bool { tick * AnalysisFormat.hopSize < samples.count }

    func read(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> Bool {
        let start = tick * AnalysisFormat.hopSize
        samples.withUnsafeBufferPointer { samples in
            let end = min(start + AnalysisFormat.hopSize, samples.count)
            _ = hop.update(fromContentsOf: UnsafeBufferPointer(rebasing: samples[start..<end]))
            hop[(end - start)...].update(repeating: 0)
        }
        return true
    }

    func pull(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> HopPull {
        guard hasHop(tick: tick) else { return .ended }
        _ = read(tick: tick, into: hop)
        return .audio
    }
}

/// A `ReplaySource` as a hop source: one read per tick, zeros after its end (or once any source failed),
/// `.ended` after its last hop. Read by the engine's workers when the source `readsIndependently`.
private final class ReplaySourceHops: ConcurrentHopSource {
    private let source: any ReplaySource
    private let stream: Int
    private let hopCount: Int
    private let failure: ReplayFailure

    init(_ source: any ReplaySource, stream: Int, hopCount: Int, failure: ReplayFailure) {
        self.source = source
        self.stream = stream
        self.hopCount = hopCount
        self.failure = failure
    }

    var readsConcurrently: Bool { source.readsIndependently }

    func hasHop(tick: Int) -> Bool { tick < hopCount }

    func read(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> Bool {
        var count = 0
        if !failure.hasFailed {
            do {
                count = try source.read(into: hop)
            } catch {
                failure.record(stream: stream, error: error)
            }
        }
        hop[count...].update(repeating: 0)
        return true
    }

    func pull(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> HopPull {
        guard hasHop(tick: tick) else { return .ended }
        _ = read(tick: tick, into: hop)
        return .audio
    }
}

/// Collects speech segments from speech events: one `Segment` per utterance, from the `since` of its start
/// event to the `since` of its end event.
public struct SpeechSegmentRecorder: Sendable {
    private var openSince: [String: Double] = [:]
    /// Finished segments, in the order their utterances ended.
    public private(set) var segments: [Segment] = []

    public init() {}

    /// Records a speech event of `stream`. A start while an utterance is open, or an end without one, is ignored.
    public mutating func record(stream: String, active: Bool, since: Double) {
        if active {
            if openSince[stream] == nil { openSince[stream] = since }
        } else if let start = openSince.removeValue(forKey: stream) {
            segments.append(Segment(speaker: stream, start: start, duration: since - start))
        }
    }

    /// Streams with an utterance that has started and not ended.
    public var openStreams: [String] { openSince.keys.sorted() }

    /// The segments ordered by start, then end, then speaker: the usual order of an RTTM file.
    public var sortedSegments: [Segment] {
        segments.sorted { ($0.start, $0.end, $0.speaker) < ($1.start, $1.end, $1.speaker) }
    }
}
