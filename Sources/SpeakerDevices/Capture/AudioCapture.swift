internal import CALSA
import Foundation
import Synchronization
import SpeakerBase
import SpeakerIO

/// Records from one ALSA device on its own thread and delivers 10 ms hops of chosen channels,
/// resampled to the engine's rate.
///
/// The capture thread waits for the device (`snd_pcm_wait`, 100 ms at a time), reads one period
/// (`snd_pcm_readi`), converts it to floats, resamples each selected channel with `Resampler` when the
/// device does not run at `outputRate` (low-latency quality: it holds back one period instead of two),
/// cuts the result into hops and puts each hop block (all selected
/// channels) into a lock-free queue. The consumer takes blocks with `nextHop(into:timeout:)`. Per period
/// the capture thread takes no lock, prints nothing and, once libsoxr has grown its buffers (within the
/// first half second when resampling), allocates nothing.
///
/// What real devices do:
/// - An overrun (the consumer of the device was late, `-EPIPE`) or a suspend (`-ESTRPIPE`) is recovered
///   with `snd_pcm_recover` and counted in `overruns`; the audio lost in it is simply missing.
/// - A device that goes away (`-ENODEV`), fails (`-EIO`, …), cannot be recovered 20 times in a row, or
///   delivers nothing for `stallTimeout` seconds ends the capture: `failure` says why, and
///   `nextHop` returns `.finished` once the queued hops are taken. Nothing hangs.
/// - A full queue (the consumer is `queueHops` hops late) makes the capture thread wait for room; a
///   real device overruns meanwhile (recovered and counted), and a device that is not paced by a
///   clock (a `type file` PCM reading a file) simply delivers at the consumer's pace, losing nothing.
///   A hop that cannot be queued before a stop is counted in `droppedHops`.
///
/// ```swift
/// let capture = try AudioCapture(device: "default", channels: [1])
/// capture.start()
/// var hop = [Float](repeating: 0, count: capture.hopBlockSize)
/// while case .hop = hop.withUnsafeMutableBufferPointer({ capture.nextHop(into: $0, timeout: 1) }) { … }
/// capture.stop()
/// ```
public final class AudioCapture: @unchecked Sendable {
    // @unchecked Sendable: the state the capture thread uses is the worker's (see `CaptureWorker`); the
    // consumer touches only the queue (single-consumer side), the atomics and `failure` (behind a
    // Mutex). `start` and `stop` are called by the owner, not concurrently.

    /// What `nextHop` found.
    public enum HopStatus: Sendable, Equatable {
        /// A hop block was written to the buffer.
        case hop
        /// No hop arrived within the timeout; the capture goes on.
        case timedOut
        /// The capture has ended (stopped, or failed: see `failure`) and every hop has been taken.
        case finished
    }

    /// The device's negotiated format.
    public var format: CaptureFormat { worker.format }
    /// The device channels delivered, from 1, in order: block row `k` is channel `channels[k]`.
    public var channels: [Int] { worker.channels }
    /// Samples per second of the delivered hops.
    public let outputRate: Int
    /// Samples per channel in one hop.
    public var hopSize: Int { worker.hopSize }
    /// Floats in one hop block: `channels.count × hopSize`, channel after channel.
    public var hopBlockSize: Int { channels.count * hopSize }
    /// Seconds without audio after which the device counts as failed.
    public var stallTimeout: Double { worker.stallTimeout }

    /// Overruns recovered so far.
    public var overruns: Int { worker.overrunCount.load(ordering: .relaxed) }
    /// Hops dropped because the consumer had not taken them when the capture stopped.
    public var droppedHops: Int { worker.droppedCount.load(ordering: .relaxed) }
    /// Device frames read so far.
    public var framesRead: Int { worker.framesReadCount.load(ordering: .relaxed) }
    /// Why the capture ended on its own, or nil while it runs or after a requested stop.
    public var failure: SpeakerIOError? { worker.failureBox.withLock { $0 } }
    /// Seconds from the end of a hop's audio until the hop is queued, beyond the period itself: the
    /// resampler's delay at `outputRate` (0 without resampling). Add `format.periodDuration` for the
    /// whole capture delay.
    public var resamplerDelay: Double { worker.resamplerLatency / Double(outputRate) }

    /// Everything the capture thread touches. The thread holds it strongly and never this object, so
    /// a capture released while it records stops the thread from `deinit` without the thread reading a
    /// half-destroyed object.
    let worker: CaptureWorker
    private var thread: Thread?

    /// Opens the device and prepares every buffer; recording begins with `start()`.
    ///
    /// - Parameters:
    ///   - device: Any ALSA PCM name (`default`, `hw:1,0`, `plughw:1`, a name from an asoundrc).
    ///   - channels: Device channels to deliver, from 1; nil delivers every channel the device is opened with.
    ///   - channelCount: Channels to open the device with; see `CaptureDevice`. Nil picks the device's own.
    ///   - sampleRate: A device rate to insist on; nil negotiates (16 kHz if offered, else 48 kHz or nearest).
    ///   - outputRate: Rate of the delivered hops (the engine's 16000 by default).
    ///   - hopSize: Samples per hop at `outputRate` (160 = 10 ms by default).
    ///   - queueHops: Hop blocks the queue holds before dropping (200 = 2 s by default).
    ///   - stallTimeout: Seconds without audio that count as a failure (2 by default).
    ///   - configurationFile: An alsa-lib configuration file loaded over the system's to open the device
    ///     (PCMs defined there can be named), or nil. See `ALSAConfigurationFile`.
    /// - Throws: `SpeakerIOError` naming the device (or the configuration file) if it cannot be opened or configured, or a channel is
    ///   out of range.
    public init(
        device: String, channels: [Int]? = nil, channelCount: Int? = nil, sampleRate: Int? = nil,
        outputRate: Int = AnalysisFormat.sampleRate, hopSize: Int = AnalysisFormat.hopSize, queueHops: Int = 200, stallTimeout: Double = 2,
        configurationFile: String? = nil
    ) throws {
        precondition(channels.map { !$0.isEmpty && $0.allSatisfy { $0 >= 1 } } ?? true, "channels count from 1")
        precondition(outputRate > 0 && hopSize > 0 && stallTimeout > 0, "positive rates and durations")
        let opened = try CaptureDevice(
            name: device, channelCount: channelCount, minimumChannels: channels?.max() ?? 1, sampleRate: sampleRate,
            configurationFile: configurationFile)
        let selected = channels ?? Array(1...opened.format.channelCount)
        if let missing = selected.first(where: { $0 > opened.format.channelCount }) {
            throw SpeakerIOError(.device(device), .noSuchChannel(channel: missing, channelCount: opened.format.channelCount))
        }
        self.outputRate = outputRate
        worker = try CaptureWorker(
            device: opened, channels: selected, outputRate: outputRate, hopSize: hopSize, queueHops: queueHops,
            stallTimeout: stallTimeout)
    }

    deinit { stop() }

    /// Starts the capture thread. Call once.
    public func start() {
        precondition(thread == nil, "start() is called once")
        let thread = Thread { [worker] in worker.run() }
        thread.name = "capture \(format.device)"
        thread.qualityOfService = .userInteractive
        self.thread = thread
        thread.start()
    }

    /// Stops the capture thread and waits for it (at most about 100 ms, one wait of the device).
    /// Hops already queued can still be taken. Idempotent.
    public func stop() {
        guard thread != nil else { return }
        worker.stop()
    }

    /// Takes the next hop block into `block` (`hopBlockSize` floats, channel after channel).
    ///
    /// - Parameters:
    ///   - block: Receives the hop; untouched unless `.hop` is returned.
    ///   - timeout: Seconds to wait for a hop.
    /// - Returns: `.hop`, `.timedOut` (capture still running), or `.finished`.
    public func nextHop(into block: UnsafeMutableBufferPointer<Float>, timeout: Double) -> HopStatus {
        let queue = worker.queue
        if queue.pop(into: block) { return .hop }
        if worker.ended.load(ordering: .acquiring) { return queue.pop(into: block) ? .hop : .finished }
        queue.wait(timeout: timeout)
        if queue.pop(into: block) { return .hop }
        return worker.ended.load(ordering: .acquiring) && queue.count == 0 ? .finished : .timedOut
    }
}

/// The state and loop of an `AudioCapture`'s thread: the device, converter state, scratch buffers and
/// the hop queue. After `run()` begins, the device, resamplers and buffers belong to the capture
/// thread alone.
final class CaptureWorker: @unchecked Sendable {
    let format: CaptureFormat
    let channels: [Int]
    let hopSize: Int
    let stallTimeout: Double
    let queue: HopQueue
    let ended = Atomic<Bool>(false)
    let overrunCount = Atomic<Int>(0)
    let droppedCount = Atomic<Int>(0)
    let framesReadCount = Atomic<Int>(0)
    let failureBox = Mutex<SpeakerIOError?>(nil)
    /// The resampler's present delay in output samples (0 without resampling).
    var resamplerLatency: Double { resamplers.first?.latency ?? 0 }

    private let device: CaptureDevice
    private var resamplers: [Resampler]
    private let raw: UnsafeMutableRawBufferPointer
    private let deinterleaved: UnsafeMutableBufferPointer<Float>
    private let resampled: UnsafeMutableBufferPointer<Float>
    private let resampledCapacity: Int
    private let hopBlock: UnsafeMutableBufferPointer<Float>
    private var hopFill = 0
    private let stopRequested = Atomic<Bool>(false)
    private let threadDone = DispatchSemaphore(value: 0)

    init(
        device opened: CaptureDevice, channels selected: [Int], outputRate: Int, hopSize: Int, queueHops: Int,
        stallTimeout: Double
    ) throws {
        device = opened
        channels = selected
        format = opened.format
        self.hopSize = hopSize
        self.stallTimeout = stallTimeout
        resamplers =
            format.sampleRate == outputRate
            ? [] : try selected.map { _ in
                try Resampler(inputRate: opened.format.sampleRate, outputRate: outputRate, quality: .lowLatency)
            }
        let period = format.periodFrames
        raw = .allocate(byteCount: period * format.channelCount * opened.sampleFormat.bytes, alignment: 16)
        raw.initializeMemory(as: UInt8.self, repeating: 0)
        deinterleaved = .allocate(capacity: period * selected.count)
        deinterleaved.initialize(repeating: 0)
        // The resampler may deliver up to its delay in one call on top of the period's worth.
        resampledCapacity = (period * outputRate + format.sampleRate - 1) / format.sampleRate + 2048
        resampled = .allocate(capacity: resampledCapacity * selected.count)
        resampled.initialize(repeating: 0)
        hopBlock = .allocate(capacity: selected.count * hopSize)
        hopBlock.initialize(repeating: 0)
        queue = HopQueue(blockSize: selected.count * hopSize, capacity: queueHops)
    }

    deinit {
        raw.deallocate()
        deinterleaved.deallocate()
        resampled.deallocate()
        hopBlock.deallocate()
    }

    /// The capture thread's body: records until stopped or failed, then marks the end.
    func run() {
        captureLoop()
        ended.store(true, ordering: .releasing)
        queue.wake()
        threadDone.signal()
    }

    /// Asks `run()` to end and waits for it. Idempotent; call only once `run()` has been started.
    func stop() {
        guard !stopRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        threadDone.wait()
    }

    private func captureLoop() {
        let pcm = device.handle
        let period = format.periodFrames
        var idle = 0.0
        var failuresInARow = 0
        if let failure = prepare(pcm) {
            fail(failure)
            return
        }
        while !stopRequested.load(ordering: .acquiring) {
            let ready = snd_pcm_wait(pcm, 100)
            if ready == 0 {
                idle += 0.1
                if idle >= stallTimeout {
                    fail(SpeakerIOError(.device(format.device), .deviceStalled(seconds: stallTimeout)))
                    return
                }
                continue
            }
            let frames = ready < 0 ? Int(ready) : snd_pcm_readi(pcm, raw.baseAddress, snd_pcm_uframes_t(period))
            if frames == -Int(EAGAIN) { continue }
            if frames < 0 {
                let code = Int32(frames)
                guard code == -EPIPE || code == -ESTRPIPE || code == -EINTR else {
                    fail(ALSAStatus.error(code, "snd_pcm_readi", device: format.device))
                    return
                }
                if code == -EPIPE { overrunCount.add(1, ordering: .relaxed) }
                failuresInARow += 1
                let recovered = snd_pcm_recover(pcm, code, 1)
                if recovered < 0 || failuresInARow > 20 {
                    fail(ALSAStatus.error(recovered < 0 ? recovered : code, "snd_pcm_recover", device: format.device))
                    return
                }
                _ = snd_pcm_start(pcm)
                continue
            }
            idle = 0
            failuresInARow = 0
            framesReadCount.add(frames, ordering: .relaxed)
            deliver(frames: frames)
        }
    }

    private func prepare(_ pcm: OpaquePointer) -> SpeakerIOError? {
        let prepared = snd_pcm_prepare(pcm)
        if prepared < 0 { return ALSAStatus.error(prepared, "snd_pcm_prepare", device: format.device) }
        let started = snd_pcm_start(pcm)
        if started < 0 { return ALSAStatus.error(started, "snd_pcm_start", device: format.device) }
        return nil
    }

    private func fail(_ error: SpeakerIOError) {
        failureBox.withLock { $0 = error }
    }

    /// Converts, resamples and cuts `frames` device frames (in the read buffer) into hops.
    /// Capture thread only (internal so a test can prove it allocates nothing).
    func deliver(frames: Int) {
        let selectedCount = channels.count
        let deviceChannels = format.channelCount
        let sampleFormat = device.sampleFormat
        let source = UnsafeRawPointer(raw.baseAddress!)
        // 1. Deinterleave the selected channels into rows of `frames` floats.
        var row = 0
        while row < selectedCount {
            let channel = channels[row] - 1
            let destination = deinterleaved.baseAddress! + row * frames
            var frame = 0
            while frame < frames {
                destination[frame] = sampleFormat.sample(source, frame * deviceChannels + channel)
                frame += 1
            }
            row += 1
        }
        // 2. Resample each row (every resampler sees the same input, so all give the same count).
        var produced = frames
        var rows = UnsafeMutablePointer(deinterleaved.baseAddress!)
        var stride = frames
        if !resamplers.isEmpty {
            row = 0
            while row < selectedCount {
                let input = UnsafeBufferPointer(start: deinterleaved.baseAddress! + row * frames, count: frames)
                let output = UnsafeMutableBufferPointer(start: resampled.baseAddress! + row * resampledCapacity, count: resampledCapacity)
                produced = resamplers[row].process(input, into: output)
                row += 1
            }
            rows = resampled.baseAddress!
            stride = resampledCapacity
        }
        // 3. Cut into hops.
        var offset = 0
        while offset < produced {
            let take = min(hopSize - hopFill, produced - offset)
            row = 0
            while row < selectedCount {
                (hopBlock.baseAddress! + row * hopSize + hopFill).update(from: rows + row * stride + offset, count: take)
                row += 1
            }
            hopFill += take
            offset += take
            if hopFill == hopSize {
                hopFill = 0
                while !queue.push(UnsafeBufferPointer(hopBlock)) {
                    if stopRequested.load(ordering: .acquiring) {
                        droppedCount.add(1, ordering: .relaxed)
                        break
                    }
                    queue.waitForSpace(timeout: 0.1)
                }
            }
        }
    }
}
