import SpeakerCore

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
}

/// Plays recorded streams of one room through an `Engine` as a live call would.
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
    public enum Event: Sendable, Equatable {
        /// Voice activity of stream `stream` changed at `time`; the change began at `since`
        /// (a start: the beginning of the first speech hop; an end: the end of the last speech hop).
        case speech(stream: Int, active: Bool, time: Double, since: Double)
        /// The dominant speaker became stream `stream`, or nobody for nil, at `time`.
        case dominant(stream: Int?, time: Double)
    }

    /// The stream ids, in the order given.
    public let streamIDs: [String]
    /// The engine the streams play through.
    public let engine: Engine
    /// Ticks of the longest stream: `tick()` may be called this many times.
    public let tickCount: Int

    /// Where the samples come from: whole arrays or sources read as they play.
    private enum Recordings {
        case arrays([ReplayStream])
        case sources([any ReplaySource])
    }

    private let recordings: Recordings
    private let hopCounts: [Int]
    /// The first error a source threw and the index of that stream, or nil; from then on every source plays zeros.
    public private(set) var sourceFailure: (stream: Int, error: any Error)?
    private let room: RoomID
    private var handles: [StreamID?]
    private var indexOfHandle: [StreamID: Int] = [:]
    private var lastStatistics: [TalkStatistics?]
    private var paddedHop = [Float](repeating: 0, count: AnalysisFormat.hopSize)

    /// Adds one room with all streams to a new engine.
    /// - Parameters:
    ///   - streams: The participants; ids should be distinct to tell them apart in output.
    ///   - configuration: The engine's configuration.
    ///   - roomName: The engine's name for the room.
    /// - Throws: `ConfigurationError` if the configuration is out of range.
    public convenience init(
        streams: [ReplayStream], configuration: EngineConfiguration = EngineConfiguration(), roomName: String = "replay"
    ) throws(ConfigurationError) {
        try self.init(
            recordings: .arrays(streams), ids: streams.map(\.id), hopCounts: streams.map(\.hopCount),
            configuration: configuration, roomName: roomName, workers: 1)
    }

    /// Adds one room with all streams, read as they play, to a new engine.
    /// - Parameters:
    ///   - sources: The participants; ids should be distinct to tell them apart in output.
    ///   - configuration: The engine's configuration.
    ///   - roomName: The engine's name for the room.
    ///   - workers: threads that share each tick (`Engine(configuration:workers:)`); more than one pays
    ///     only for rooms of many streams. Decisions are the same whatever the count.
    /// - Throws: `ConfigurationError` if the configuration is out of range.
    public convenience init(
        sources: [any ReplaySource], configuration: EngineConfiguration = EngineConfiguration(),
        roomName: String = "replay", workers: Int = 1
    ) throws(ConfigurationError) {
        let hop = AnalysisFormat.hopSize
        try self.init(
            recordings: .sources(sources), ids: sources.map(\.id),
            hopCounts: sources.map { ($0.sampleCount + hop - 1) / hop }, configuration: configuration,
            roomName: roomName, workers: workers)
    }

    private init(
        recordings: Recordings, ids: [String], hopCounts: [Int], configuration: EngineConfiguration, roomName: String,
        workers: Int
    ) throws(ConfigurationError) {
        self.recordings = recordings
        streamIDs = ids
        self.hopCounts = hopCounts
        engine = try Engine(configuration: configuration, workers: workers)
        room = engine.addRoom(name: roomName)
        handles = []
        for (index, id) in ids.enumerated() {
            let handle = engine.addStream(name: id, room: room)
            handles.append(handle)
            indexOfHandle[handle] = index
        }
        lastStatistics = Array(repeating: nil, count: ids.count)
        tickCount = hopCounts.max() ?? 0
    }

    /// Ticks done so far.
    public var ticks: Int { engine.ticks }
    /// Seconds of audio processed: the end of the last hop.
    public var time: Double { engine.time }
    /// Seconds of the longest stream, rounded up to whole hops.
    public var duration: Double { Double(tickCount) * AnalysisFormat.hopDuration }
    /// True when every hop has been played (`finish()` may still have streams to remove).
    public var isAtEnd: Bool { ticks >= tickCount }

    /// Indices of the streams still in the engine, in order.
    public var presentStreams: [Int] { handles.indices.filter { handles[$0] != nil } }

    /// The engine's handle of a present stream, or nil once it was removed.
    public func handle(of stream: Int) -> StreamID? { handles[stream] }

    /// The smoothed level of a present stream in dBov (0 full scale, −127 silence), or nil if removed.
    public func level(of stream: Int) -> Float? { handles[stream].map(engine.level(of:)) }

    /// Talk statistics of a stream: live while it is present, as they were just before its removal after.
    public func statistics(of stream: Int) -> TalkStatistics {
        if let handle = handles[stream] { return engine.statistics(of: handle) }
        return lastStatistics[stream]!
    }

    /// Plays the next hop of every stream: removes the streams that ended, submits, ticks.
    /// - Precondition: `!isAtEnd`.
    public func tick() {
        precondition(!isAtEnd, "the replay is at its end")
        let hop = AnalysisFormat.hopSize
        let tick = ticks
        for index in handles.indices where handles[index] != nil && hopCounts[index] <= tick {
            remove(index)
        }
        for index in handles.indices {
            guard let handle = handles[index] else { continue }
            let streams: [ReplayStream]
            switch recordings {
            case .arrays(let arrays): streams = arrays
            case .sources(let sources):
                submitHop(of: sources[index], stream: index, to: handle)
                continue
            }
            let start = tick * hop
            streams[index].samples.withUnsafeBufferPointer { samples in
                if start + hop <= samples.count {
                    engine.submit(UnsafeBufferPointer(rebasing: samples[start..<start + hop]), to: handle)
                } else {
                    let tail = UnsafeBufferPointer(rebasing: samples[start...])
                    paddedHop.withUnsafeMutableBufferPointer { padded in
                        _ = padded.initialize(fromContentsOf: tail)
                        padded[tail.count...].update(repeating: 0)
                        engine.submit(UnsafeBufferPointer(padded), to: handle)
                    }
                }
            }
        }
        engine.tick()
    }

    /// Reads the next hop of a source (zeros after its end, or after any source failed) and submits it.
    private func submitHop(of source: any ReplaySource, stream: Int, to handle: StreamID) {
        paddedHop.withUnsafeMutableBufferPointer { padded in
            var count = 0
            if sourceFailure == nil {
                do {
                    count = try source.read(into: padded)
                } catch {
                    sourceFailure = (stream, error)
                }
            }
            padded[count...].update(repeating: 0)
            engine.submit(UnsafeBufferPointer(padded), to: handle)
        }
    }

    /// Removes every stream still present, ending their utterances. Call after the last tick.
    public func finish() {
        for index in handles.indices where handles[index] != nil { remove(index) }
    }

    /// Hands every event since the last call to `body`, oldest first, and forgets them.
    public func consumeEvents(_ body: (Event) throws -> Void) rethrows {
        try engine.consumeEvents { event in
            switch event {
            case .speech(let stream, let active, let time, let since):
                try body(.speech(stream: indexOfHandle[stream]!, active: active, time: time, since: since))
            case .dominant(_, let stream, let time):
                try body(.dominant(stream: stream.map { indexOfHandle[$0]! }, time: time))
            }
        }
    }

    private func remove(_ index: Int) {
        let handle = handles[index]!
        lastStatistics[index] = engine.statistics(of: handle)
        engine.removeStream(handle)
        handles[index] = nil
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
