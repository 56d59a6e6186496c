import Foundation
import SpeakerCore
import SpeakerIO
import SpeakerRTP
import Synchronization

/// Reads a microphone on its own thread and publishes it: Opus over RTP to the server, or, while
/// muted, nothing (the RTP clock skips ahead) while a local engine listens for speech, so the app can
/// say "you are muted".
final class MicrophonePublisher: @unchecked Sendable {
    // @unchecked Sendable: `sender`, `runner`, `cutter`, `resampler` and the buffers are used only by the
    // publishing thread between `start` and the end of `stop`; other threads touch only the atomics.

    let source: any MicrophoneSource
    private let sender: RTPAudioSender
    private let destination: SocketAddress?
    private let mutedFlag: Atomic<Bool>
    private let stopFlag = Atomic<Bool>(false)
    /// The local speech detector: one room, one stream, fed 10 ms hops of the resampled microphone by `cutter`.
    private let runner: RoomRunner
    private let cutter: HopCutter
    private let stream: StreamID
    private let resampler: Resampler
    private let onSpeakingWhileMuted: @Sendable () -> Void
    private let onFailure: @Sendable (MeetingError) -> Void
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - destination: The server's RTP address; nil to listen only (speaking-while-muted still works).
    init(
        source: any MicrophoneSource, sender: RTPAudioSender, destination: SocketAddress?, muted: Bool,
        onSpeakingWhileMuted: @escaping @Sendable () -> Void, onFailure: @escaping @Sendable (MeetingError) -> Void
    ) throws {
        self.source = source
        self.sender = sender
        self.destination = destination
        mutedFlag = Atomic(muted)
        runner = RoomRunner(engine: try Engine(), roomName: "local")
        resampler = try Resampler(inputRate: 48000, outputRate: AnalysisFormat.sampleRate, quality: .lowLatency)
        cutter = HopCutter(capacity: resampler.outputCapacity(forInputCount: RTPAudioSender.frameSize) + AnalysisFormat.hopSize)
        stream = runner.handle(of: runner.add(cutter, name: "local"))!
        self.onSpeakingWhileMuted = onSpeakingWhileMuted
        self.onFailure = onFailure
    }

    var muted: Bool {
        get { mutedFlag.load(ordering: .relaxed) }
        set { mutedFlag.store(newValue, ordering: .relaxed) }
    }

    /// Opens the microphone and starts publishing.
    /// - Throws: `SpeakerIOError` if the device cannot be opened.
    func start() throws {
        try source.start()
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "activespeaker-mic"
        self.thread = thread
        thread.start()
    }

    /// Stops the microphone and waits for the thread. Idempotent. Not from the publisher's own thread
    /// (its callbacks): it would wait for itself.
    func stop() {
        precondition(thread.map { $0 !== Thread.current } ?? true, "MicrophonePublisher.stop() on its own thread would wait for itself")
        guard thread != nil, !stopFlag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        source.stop()
        finished.wait()
    }

    private func run() {
        let frame = UnsafeMutableBufferPointer<Float>.allocate(capacity: RTPAudioSender.frameSize)
        let analysis = UnsafeMutableBufferPointer<Float>.allocate(capacity: cutter.capacity)
        defer {
            frame.deallocate()
            analysis.deallocate()
        }
        var wasMuted = true
        var lastWarning = -1_000
        while !stopFlag.load(ordering: .relaxed) {
            let read: MicrophoneRead
            do {
                read = try source.read(into: frame)
            } catch {
                onFailure(MeetingError(code: .audioDeviceFailed, "\(error)"))
                return
            }
            guard read == .frame else { return }

            // The local engine hears the microphone at 16 kHz in 10 ms hops.
            let produced = resampler.process(UnsafeBufferPointer(frame), into: analysis)
            cutter.append(UnsafeBufferPointer(rebasing: analysis[..<produced]))
            while cutter.hopsAvailable > 0 { runner.tick() }
            runner.consumeEvents { _ in }
            let speaking = runner.engine.isSpeaking(stream)
            let ticks = runner.ticks

            if muted {
                sender.skip()
                wasMuted = true
                if speaking, ticks - lastWarning >= 300 {
                    lastWarning = ticks
                    onSpeakingWhileMuted()
                }
                continue
            }
            if wasMuted {
                sender.resume()
                wasMuted = false
            }
            guard let destination else { continue }
            do {
                _ = try sender.send(frame: UnsafeBufferPointer(frame), to: destination, voice: speaking)
            } catch {
                onFailure(MeetingError(code: .audioDeviceFailed, "\(error)"))
                return
            }
        }
    }
}
