/// A stream of the engine. Stable while the stream exists. A removed stream's slot is given to a
/// later stream, but with another `generation`: an id never names a stream it was not made for.
public struct StreamID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The stream's slot in the engine, from 0: at most the largest number of streams that existed at once.
    public let rawValue: Int
    /// Streams that had this slot before this one.
    public let generation: UInt32
    init(rawValue: Int, generation: UInt32) {
        self.rawValue = rawValue
        self.generation = generation
    }
    public static func < (a: StreamID, b: StreamID) -> Bool { (a.rawValue, a.generation) < (b.rawValue, b.generation) }
    public var description: String { generation == 0 ? "stream#\(rawValue)" : "stream#\(rawValue).\(generation)" }
}

/// A room of the engine: a set of streams among which one dominant speaker is chosen. Like streams,
/// rooms reuse the slots of removed rooms under a new `generation`.
public struct RoomID: Hashable, Sendable, CustomStringConvertible {
    /// The room's slot in the engine, from 0.
    public let rawValue: Int
    /// Rooms that had this slot before this one.
    public let generation: UInt32
    init(rawValue: Int, generation: UInt32) {
        self.rawValue = rawValue
        self.generation = generation
    }
    public var description: String { generation == 0 ? "room#\(rawValue)" : "room#\(rawValue).\(generation)" }
}

/// A decision of the engine. `time` is the stream time, in seconds since the engine started, at which
/// the decision was made: the end of the hop whose audio completed the evidence.
public enum EngineEvent: Sendable, Equatable {
    /// A stream's voice activity changed. `since` dates the change: for a start, the beginning of the
    /// first speech hop of the onset (`since ≤ time`); for an end, the end of the last speech hop.
    case speech(stream: StreamID, active: Bool, time: Double, since: Double)
    /// A room's dominant speaker changed; `nil` is nobody.
    case dominant(room: RoomID, stream: StreamID?, time: Double)

    /// The decision time, seconds.
    public var time: Double {
        switch self {
        case .speech(_, _, let time, _), .dominant(_, _, let time): time
        }
    }
}

/// A stream that is speaking, with its level, as ranked by `Engine.activeSpeakers(in:)`.
public struct ActiveSpeaker: Sendable, Equatable {
    public let stream: StreamID
    /// Smoothed level in dBov (0 is full scale, −127 silence).
    public let level: Float
}
