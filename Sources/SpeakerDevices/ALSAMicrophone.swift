import Synchronization
import SpeakerIO

/// A microphone on an ALSA capture device: one device channel as 20 ms frames at 48 kHz, through
/// `AudioCapture` (its own capture thread, resampling when the device does not run at 48 kHz).
///
/// The device is opened in `init` (so a wrong name fails early) at 48 kHz if it offers that, else at the
/// rate `CaptureDevice` negotiates. `start()` starts recording; `stop()` ends it and closes the device;
/// a later `start()` opens it again. Audio between `stop` and `start` is not recorded.
///
/// The device paces the frames. A file-backed device (alsa-lib's `type file` PCM over `null`, see
/// `AudioCapture(configurationFile:)`) is not paced by a clock: it delivers as fast as `read` is
/// called, and after the end of its file repeats stale data. For real-time file playback use
/// `FileMicrophone`.
public final class ALSAMicrophone: MicrophoneSource, @unchecked Sendable {
    // @unchecked Sendable: the configuration is immutable; the current capture is behind a Mutex and
    // `AudioCapture` itself is Sendable (its consumer side is used only by the one thread calling `read`).

    public let sampleRate = 48000
    public let frameSize = 960
    /// The ALSA PCM name (`default`, `hw:0`, `plughw:1,0`, a name from `configurationFile`).
    public let device: String
    /// The device channel delivered, from 1.
    public let channel: Int
    /// The alsa-lib configuration file loaded over the system's to open the device, if any.
    public let configurationFile: String?
    /// The device's rate (48000, or what it negotiated; frames are resampled to 48 kHz).
    public let deviceRate: Int

    private struct State {
        var capture: AudioCapture?
        var running = false
    }
    private let state: Mutex<State>

    /// Opens the device (recording begins with `start()`).
    ///
    /// - Parameters:
    ///   - device: Any ALSA PCM name.
    ///   - channel: The device channel to deliver, from 1 (1 by default).
    ///   - configurationFile: An alsa-lib configuration file defining extra PCMs, or nil. See `AudioCapture`.
    /// - Throws: `SpeakerIOError` with subject `.device(device)` (`.noSuchDevice`, `.deviceBusy`,
    ///   `.noSuchChannel`, …) or `.file(configurationFile)`.
    public init(device: String = "default", channel: Int = 1, configurationFile: String? = nil) throws {
        precondition(channel >= 1, "channels count from 1")
        self.device = device
        self.channel = channel
        self.configurationFile = configurationFile
        let capture: AudioCapture
        do {
            capture = try Self.open(device, channel: channel, sampleRate: 48000, configurationFile: configurationFile)
        } catch let error as SpeakerIOError {
            guard case .unsupportedDeviceFormat = error.kind else { throw error }
            capture = try Self.open(device, channel: channel, sampleRate: nil, configurationFile: configurationFile)
        }
        deviceRate = capture.format.sampleRate
        state = Mutex(State(capture: capture))
    }

    deinit {
        stop()
    }

    private static func open(_ device: String, channel: Int, sampleRate: Int?, configurationFile: String?) throws -> AudioCapture {
        try AudioCapture(
            device: device, channels: [channel], sampleRate: sampleRate, outputRate: 48000, hopSize: 960,
            queueHops: 100, configurationFile: configurationFile)
    }

    /// Starts recording; reopens the device after a `stop()`. Does nothing while running. Called by the
    /// owner, not concurrently with itself or `stop()`.
    /// - Throws: `SpeakerIOError` if the device cannot be opened again.
    public func start() throws {
        let (running, opened) = state.withLock { ($0.running, $0.capture) }
        if running { return }
        let capture = try opened ?? Self.open(device, channel: channel, sampleRate: deviceRate, configurationFile: configurationFile)
        capture.start()
        state.withLock {
            $0.capture = capture
            $0.running = true
        }
    }

    /// Stops recording and closes the device; a blocked `read` returns `.stopped`. Idempotent.
    public func stop() {
        let capture = state.withLock { state -> AudioCapture? in
            guard state.running else { return nil }
            state.running = false
            let capture = state.capture
            state.capture = nil
            return capture
        }
        capture?.stop()
    }

    /// Waits for the next 20 ms frame from the device.
    /// - Returns: `.frame`, or `.stopped` when not running.
    /// - Throws: `SpeakerIOError` naming the device if the capture failed (disconnected, stalled, read error).
    /// - Complexity: Allocates nothing while frames flow.
    public func read(into frame: UnsafeMutableBufferPointer<Float>) throws -> MicrophoneRead {
        precondition(frame.count == frameSize, "a frame is \(frameSize) samples")
        while true {
            guard let capture = state.withLock({ $0.running ? $0.capture : nil }) else { return .stopped }
            switch capture.nextHop(into: frame, timeout: 0.1) {
            case .hop:
                return .frame
            case .timedOut:
                continue
            case .finished:
                if let failure = capture.failure {
                    state.withLock {
                        if $0.capture === capture {
                            $0.running = false
                            $0.capture = nil
                        }
                    }
                    throw failure
                }
                return .stopped
            }
        }
    }
}
