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

/// A hop source that can also be read on the engine's worker threads, so that decoding (a file's, say)
/// spreads over the threads that analyse the streams instead of running on the runner's thread alone.
///
/// `RoomRunner` asks `hasHop(tick:)` on its own thread before each tick (false ends the stream, as `.ended`
/// from `pull` does), and the engine thread that analyses the stream calls `read(tick:into:)` during the
/// tick. Only sources whose `readsConcurrently` is true are read this way; the others are pulled.
public protocol ConcurrentHopSource: HopSource {
    /// Whether this source may be read on a worker thread while other sources are read on others: true
    /// when it shares no mutable state with them (a multichannel file's channels share one decoder: false).
    var readsConcurrently: Bool { get }

    /// Whether tick `tick` has a hop; false once the source has ended (then it is neither asked nor read
    /// again). Called on the runner's thread, once per tick, in order.
    func hasHop(tick: Int) -> Bool

    /// Writes the hop of tick `tick`, `AnalysisFormat.hopSize` samples, after `hasHop(tick:)` said true.
    /// Called on one of the engine's threads during its tick, once per tick, never at the same time as
    /// another call to this source, but possibly at the same time as calls to other sources.
    /// - Returns: Whether the hop holds audio; false for a silent tick (DTX, a pause), written as zeros.
    func read(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> Bool
}
