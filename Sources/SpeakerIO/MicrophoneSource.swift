#if canImport(Glibc)
import Glibc
#endif

/// A microphone for a publisher: 20 ms frames of mono `Float` PCM at 48 kHz (960 samples), the
/// input of a 48 kHz Opus encoder.
///
/// One thread calls `read(into:)` in a loop; `start()` and `stop()` may come from another thread.
/// `read` blocks until the next frame is there (a file source waits until the frame is due in real
/// time; a device source until the device delivered it).
public protocol MicrophoneSource: AnyObject, Sendable {
    /// Samples per second of the frames: 48000.
    var sampleRate: Int { get }
    /// Samples per frame: 960 (20 ms).
    var frameSize: Int { get }
    /// Starts (or restarts after `stop`) delivering frames.
    /// - Throws: `SpeakerIOError` if the device cannot be opened.
    func start() throws
    /// Stops delivering: a blocked `read` returns `.stopped` within about 100 ms. Idempotent.
    func stop()
    /// Waits for the next frame and writes it to `frame` (`frameSize` samples, a caller bug otherwise).
    /// - Returns: `.frame`, `.stopped` (not started, or stopped), or `.finished` (the source has ended).
    /// - Throws: `SpeakerIOError` if the device failed (disconnected, stalled, read error).
    func read(into frame: UnsafeMutableBufferPointer<Float>) throws -> MicrophoneRead
}

/// What `MicrophoneSource.read(into:)` found.
public enum MicrophoneRead: Sendable, Hashable {
    /// A frame was written.
    case frame
    /// The source is not running (never started, or stopped); `start()` resumes it.
    case stopped
    /// The source has nothing more (the end of a file that does not loop).
    case finished
}

/// The time a paced source schedules against: monotonic nanoseconds and a sleep until an instant.
///
/// Sleeping until an absolute instant (not for a duration) is what keeps a paced source from
/// drifting: a late wake-up shortens the next wait instead of delaying every later frame.
public protocol PacingClock: Sendable {
    /// Nanoseconds on a monotonic scale (any origin).
    func now() -> UInt64
    /// Blocks the calling thread until `now() >= instant`; returns at once for an instant in the past.
    func sleep(until instant: UInt64)
}

/// The system's monotonic clock (`CLOCK_MONOTONIC`).
public struct MonotonicClock: PacingClock {
    public init() {}

    /// The corresponding C function is `clock_gettime(CLOCK_MONOTONIC)`.
    public func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The corresponding C function is `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` (restarted
    /// after a signal).
    public func sleep(until instant: UInt64) {
        var time = timespec(tv_sec: Int(instant / 1_000_000_000), tv_nsec: Int(instant % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &time, nil) == EINTR {}
    }
}
