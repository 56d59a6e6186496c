import Synchronization
import SpeakerIO

/// A microphone that plays an audio file in real time: 20 ms frames at 48 kHz mono, each delivered
/// when it is due.
///
/// The file (anything `AudioFile` reads: WAV, FLAC, Ogg Opus, …) is decoded once in `init`, its
/// channels averaged and resampled to 48 kHz (`loadStreams`, libsoxr high quality). It is then played
/// as one *pass*: the file followed by `silenceAfter` seconds of zeros, cut into 960-sample frames (the
/// last frame zero-filled). With `loop` the passes repeat seamlessly (a frame may straddle the end of
/// one pass and the start of the next); without, `read` returns `.finished` after one pass.
///
/// Pacing, as a real microphone delivers a frame once its 20 ms have been captured: frame `k` after
/// `start(at: t0)` is due at `t0 + (k + 1) × 20 ms`, and `read` sleeps (on its caller's thread) until
/// then. Due times are absolute, so a late caller catches up (frames already due return at once) and
/// the schedule never drifts. `stop()` then `start()` resumes where the file was, on a new schedule
/// from the new start instant; the time in between is not played.
///
/// ```swift
/// let microphone = try FileMicrophone(path: "alice.wav", loop: true)
/// microphone.start()
/// var frame = [Float](repeating: 0, count: microphone.frameSize)
/// while try frame.withUnsafeMutableBufferPointer({ try microphone.read(into: $0) }) == .frame { … }
/// ```
public final class FileMicrophone: MicrophoneSource, @unchecked Sendable {
    // @unchecked Sendable: `samples`, `passLength`, `loop`, `clock` are immutable; `position` and
    // `delivered`/`seenGeneration` belong to the one thread that calls `read`; what `start`/`stop`
    // change from other threads is in `schedule`, behind a Mutex.

    public let sampleRate = 48000
    public let frameSize = 960
    /// The file's audio at 48 kHz mono.
    public let samples: [Float]
    /// Whether passes repeat.
    public let loop: Bool
    /// Samples of silence after the file in each pass.
    public let silenceSamples: Int
    /// Samples in one pass: the file and its silence.
    public var passLength: Int { samples.count + silenceSamples }
    /// Frames in one pass (the last one zero-filled when the pass is not a whole number of frames).
    public var framesPerPass: Int { (passLength + frameSize - 1) / frameSize }
    /// Nanoseconds per frame (20 ms).
    public static let frameNanoseconds: UInt64 = 20_000_000

    private let clock: any PacingClock
    private struct Schedule {
        var running = false
        var anchor: UInt64 = 0
        var generation = 0
        var firstStart: UInt64?
    }
    private let schedule = Mutex(Schedule())
    /// Reader state: the next sample of the (virtual, endless when looping) signal to deliver.
    private var position = 0
    private var delivered: UInt64 = 0
    private var seenGeneration = 0

    /// Decodes `path` for real-time playback.
    ///
    /// - Parameters:
    ///   - path: An audio file; any rate and channel count (channels are averaged).
    ///   - loop: Repeat the pass (file and silence) forever.
    ///   - silenceAfter: Seconds of silence after the file in each pass, ≥ 0.
    ///   - clock: The clock to pace against; the system's monotonic clock by default.
    /// - Throws: `SpeakerIOError` naming the file if it cannot be read (see `AudioFile`).
    public convenience init(
        path: String, loop: Bool = false, silenceAfter: Double = 0, clock: any PacingClock = MonotonicClock()
    ) throws {
        let stream = try loadStreams(paths: [path], sampleRate: 48000, downmix: true)[0]
        self.init(samples: stream.samples, loop: loop, silenceAfter: silenceAfter, clock: clock)
    }

    /// Plays `samples` (mono, 48 kHz) as if they were a file.
    /// - Parameters: As `init(path:…)`; `samples` may be empty (then only the silence plays).
    public init(samples: [Float], loop: Bool = false, silenceAfter: Double = 0, clock: any PacingClock = MonotonicClock()) {
        precondition(silenceAfter >= 0, "silenceAfter is in seconds, ≥ 0")
        self.samples = samples
        self.loop = loop
        silenceSamples = Int((silenceAfter * 48000).rounded())
        self.clock = clock
        precondition(!(loop && samples.count + silenceSamples == 0), "an empty pass cannot loop")
    }

    /// Starts delivering now (`clock.now()`), or, the first time, at the instant given to
    /// `startFirst(at:)`.
    public func start() {
        let first = schedule.withLock { state in
            defer { state.firstStart = nil }
            return state.firstStart
        }
        start(at: first ?? clock.now())
    }

    /// Makes the next `start()` begin at `instant` (`clock` nanoseconds) instead of at once: several
    /// file microphones, in several processes, can so play their files in step (a meeting's tracks
    /// replayed through a room server). Frames before `instant` are not delivered: `read` waits.
    public func startFirst(at instant: UInt64) {
        schedule.withLock { $0.firstStart = instant }
    }

    /// Starts delivering on a schedule from `instant` (`clock` nanoseconds): frame `k` is due at
    /// `instant + (k + 1) × 20 ms`. Restarting replaces the schedule.
    public func start(at instant: UInt64) {
        schedule.withLock {
            $0.running = true
            $0.anchor = instant
            $0.generation &+= 1
        }
    }

    /// Stops delivering; the position in the file is kept for the next `start`.
    public func stop() {
        schedule.withLock { $0.running = false }
    }

    /// Sleeps until the next frame is due, then writes it.
    /// - Returns: `.frame`, `.stopped`, or `.finished` after the last frame of a pass that does not loop.
    /// - Complexity: O(frameSize). Allocates nothing.
    public func read(into frame: UnsafeMutableBufferPointer<Float>) -> MicrophoneRead {
        precondition(frame.count == frameSize, "a frame is \(frameSize) samples")
        while true {
            guard let due = nextDueInstant() else { return .stopped }
            if !loop && position >= passLength { return .finished }
            if clock.now() < due { clock.sleep(until: due) }
            let (running, generation) = schedule.withLock { ($0.running, $0.generation) }
            guard running else { return .stopped }
            // Restarted while sleeping: wait for the first frame of the new schedule instead.
            if generation != seenGeneration { continue }
            fill(frame)
            delivered += 1
            return .frame
        }
    }

    /// The due instant of the next frame, or nil when stopped; adopts a new schedule after `start`.
    private func nextDueInstant() -> UInt64? {
        let current = schedule.withLock { $0 }
        guard current.running else { return nil }
        if current.generation != seenGeneration {
            seenGeneration = current.generation
            delivered = 0
        }
        return current.anchor + (delivered + 1) * Self.frameNanoseconds
    }

    /// Copies the next `frameSize` samples of the pass (wrapping when looping, zeros past the end).
    private func fill(_ frame: UnsafeMutableBufferPointer<Float>) {
        let pass = passLength
        var written = 0
        while written < frameSize {
            if !loop && position >= pass {
                frame.baseAddress!.advanced(by: written).update(repeating: 0, count: frameSize - written)
                position += frameSize - written
                return
            }
            let offset = loop ? position % pass : position
            let take: Int
            if offset < samples.count {
                take = min(frameSize - written, samples.count - offset)
                samples.withUnsafeBufferPointer {
                    frame.baseAddress!.advanced(by: written).update(from: $0.baseAddress! + offset, count: take)
                }
            } else {
                take = min(frameSize - written, pass - offset)
                frame.baseAddress!.advanced(by: written).update(repeating: 0, count: take)
            }
            written += take
            position += take
        }
        if loop { position %= pass }
    }
}
