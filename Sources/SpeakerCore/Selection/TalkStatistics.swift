/// Talk-time statistics of one stream since it joined.
public struct TalkStatistics: Sendable, Equatable, Codable {
    /// Seconds inside utterances (the VAD's speech segments).
    public var speechTime: Double = 0
    /// Number of utterances started.
    public var utterances = 0
    /// Seconds as the room's dominant speaker.
    public var dominantTime: Double = 0
    /// Number of times the stream took the floor.
    public var turns = 0

    public init() {}
}
