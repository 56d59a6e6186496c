/// What a hop source gives for one tick.
public enum HopPull: Sendable, Equatable {
    /// The hop buffer holds `AnalysisFormat.hopSize` samples of audio.
    case audio
    /// No audio, only an RFC 6464 level (and the sender's voice flag) for the tick: a level-only stream.
    case level(AudioLevel)
    /// Nothing for this tick (a pause, DTX, not started yet): the engine treats it as silence.
    case silence
    /// The source has ended: it gives nothing more, from this tick on.
    case ended
}

/// One stream's audio, one 10 ms hop per tick, pulled by whoever runs the ticks (`RoomRunner`, the
/// server's media loop).
///
/// Implemented by the RTP jitter buffer (`RTPStreamReceiver`), by `HopCutter` (blocks of any size, such as
/// a resampled microphone), and by the evaluation's recordings.
///
/// A reference type: whoever feeds the source (packets, blocks) and whoever pulls it share it.
public protocol HopSource: AnyObject {
    /// The source's output for tick `tick`.
    ///
    /// - Parameters:
    ///   - tick: The tick index of the runner's clock; called once per tick, in order.
    ///   - hop: `AnalysisFormat.hopSize` samples, written when the result is `.audio`.
    /// - Returns: `.audio`, `.level`, `.silence`, or `.ended` (then never called again).
    /// - Complexity: O(hop). Real-time safe in every implementation of the library: allocates nothing,
    ///   takes no lock.
    func pull(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> HopPull
}
