import Foundation

/// One labelled interval: `speaker` is active from `start` for `duration` seconds.
public struct Segment: Equatable, Sendable {
    /// The stream (participant) id; in a floor reference, the floor holder.
    public var speaker: String
    /// Seconds from the start of the recording.
    public var start: Double
    /// Seconds, > 0.
    public var duration: Double

    public init(speaker: String, start: Double, duration: Double) {
        self.speaker = speaker
        self.start = start
        self.duration = duration
    }

    /// `start + duration`, in seconds.
    public var end: Double { start + duration }
}
