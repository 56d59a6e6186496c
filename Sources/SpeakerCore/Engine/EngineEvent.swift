/// A stream of the engine. Stable while the stream exists; not reused after removal.
public struct StreamID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Position in the order streams were added, from 0.
    public let rawValue: Int
    public static func < (a: StreamID, b: StreamID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "stream#\(rawValue)" }
}

/// A room of the engine: a set of streams among which one dominant speaker is chosen.
public struct RoomID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int
    public var description: String { "room#\(rawValue)" }
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
