import Foundation
import SpeakerCore
import SpeakerIO
import Synchronization

/// Reads a microphone on its own thread and publishes it: Opus over RTP to the server, or, while
/// muted, nothing (the RTP clock skips ahead) while a local engine listens for speech, so the app can
/// say "you are muted".
final class MicrophonePublisher: @unchecked Sendable {
    // @unchecked Sendable: `sender`, `engine`, `resampler` and the buffers are used only by the
    // publishing thread between `start` and the end of `stop`; other threads touch only the atomics.

    let source: any MicrophoneSource
    private let sender: RTPAudioSender
    private let destination: SocketAddress?
    private let mutedFlag: Atomic<Bool>
    private let stopFlag = Atomic<Bool>(false)
    private let engine: Engine
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
        engine = try Engine()
        stream = engine.addStream(name: "local", room: engine.addRoom(name: "local"))
        resampler = try Resampler(inputRate: 48000, outputRate: AnalysisFormat.sampleRate, quality: .lowLatency)
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
        let analysis = UnsafeMutableBufferPointer<Float>.allocate(capacity: resampler.outputCapacity(forInputCount: RTPAudioSender.frameSize) + AnalysisFormat.hopSize)
        let pending = UnsafeMutableBufferPointer<Float>.allocate(capacity: 4 * AnalysisFormat.hopSize + analysis.count)
        defer {
            frame.deallocate()
            analysis.deallocate()
            pending.deallocate()
        }
        var pendingCount = 0
        var wasMuted = true
        var lastWarning = -1_000
        var ticks = 0
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
            for index in 0..<produced {
                pending[pendingCount] = analysis[index]
                pendingCount += 1
            }
            var offset = 0
            while pendingCount - offset >= AnalysisFormat.hopSize {
                engine.submit(UnsafeBufferPointer(rebasing: pending[offset..<(offset + AnalysisFormat.hopSize)]), to: stream)
                engine.tick()
                ticks += 1
                offset += AnalysisFormat.hopSize
            }
            if offset > 0 {
                for index in 0..<(pendingCount - offset) { pending[index] = pending[offset + index] }
                pendingCount -= offset
            }
            engine.consumeEvents { _ in }
            let speaking = engine.isSpeaking(stream)

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
