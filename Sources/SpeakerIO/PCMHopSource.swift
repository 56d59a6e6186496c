import Synchronization

/// Raw PCM that arrives in chunks over a reliable stream — LiveKit's track egress sends a track as
/// `pcm_s16le` at its source rate over a WebSocket — as a hop source.
///
/// `append` (the receiving thread) converts each chunk to the analysis format (16 kHz mono: channels
/// averaged, resampled with libsoxr) and queues it; `pull` (the runner's thread) plays it a fixed
/// `playoutDelay` behind its arrival, so that chunks arriving unevenly play evenly:
/// - it starts once `playoutDelay` of audio is queued;
/// - when the queue runs dry (the sender paused or stalled) the tick is silence and playing starts again once
///   `playoutDelay` is queued again (`underruns` counts these);
/// - when more than `playoutDelay + 0.5 s` is queued (a burst after a stall) the oldest is dropped down to
///   `playoutDelay` (`droppedSamples`), so the stream never falls further behind the others;
/// - after `finish()` the queued audio plays out, then the stream ends.
///
/// One thread appends (and finishes), one thread pulls: the queue is a single-producer single-consumer ring
/// whose two positions are atomics, so neither side locks or waits for the other. `pull` allocates nothing.
public final class PCMHopSource: HopSource, @unchecked Sendable {
    /// Samples per second of the incoming PCM.
    public let sampleRate: Int
    /// Interleaved channels of the incoming PCM, 1…8.
    public let channels: Int
    /// Seconds of audio held before playing, 0.02…2.
    public let playoutDelay: Double

    private let resampler: Resampler?
    /// 16 kHz samples; `capacity` a power of two.
    private let ring: UnsafeMutableBufferPointer<Float>
    private let mask: Int
    /// Samples written and read since the start (never wrap in practice: 2^63 samples).
    private let written = Atomic<Int>(0)
    private let read = Atomic<Int>(0)
    private let finished = Atomic<Bool>(false)
    /// A byte or a sample frame that a chunk cut in two (the producer's).
    private var leftover: [UInt8] = []
    /// The consumer's: whether it is playing (else filling up to the delay).
    private var playing = false
    private let delaySamples: Int
    private let highWater: Int

    /// Times the queue ran dry while playing.
    public private(set) var underruns = 0
    /// 16 kHz samples dropped to keep the delay.
    public private(set) var droppedSamples = 0
    /// Bytes taken by `append`.
    public private(set) var bytesReceived = 0

    /// - Throws: `SpeakerIOError` when libsoxr refuses the rate.
    /// - Precondition: 1 ≤ channels ≤ 8, 8000 ≤ sampleRate ≤ 192000, 0.02 ≤ playoutDelay ≤ 2.
    public init(sampleRate: Int, channels: Int = 1, playoutDelay: Double = 0.1) throws {
        precondition((1...8).contains(channels) && (8000...192_000).contains(sampleRate), "channels 1-8, rate 8-192 kHz")
        precondition((0.02...2).contains(playoutDelay), "a delay of 0.02-2 s")
        self.sampleRate = sampleRate
        self.channels = channels
        self.playoutDelay = playoutDelay
        resampler = sampleRate == AnalysisFormat.sampleRate ? nil : try Resampler(inputRate: sampleRate, quality: .lowLatency)
        delaySamples = Int(playoutDelay * Double(AnalysisFormat.sampleRate))
        highWater = delaySamples + AnalysisFormat.sampleRate / 2
        var capacity = 1
        while capacity < 2 * (highWater + AnalysisFormat.sampleRate) { capacity *= 2 }
        ring = .allocate(capacity: capacity)
        ring.initialize(repeating: 0)
        mask = capacity - 1
    }

    deinit {
        ring.deallocate()
    }

    /// Queues a chunk of interleaved little-endian 16-bit samples. A chunk may end inside a sample or a
    /// frame: the rest waits for the next. What does not fit (the puller stopped pulling) is dropped.
    /// Called on one thread at a time (the receiving thread).
    public func append(_ bytes: [UInt8]) {
        bytesReceived += bytes.count
        let data = leftover.isEmpty ? bytes : leftover + bytes
        let frameBytes = 2 * channels
        let frames = data.count / frameBytes
        leftover = Array(data[(frames * frameBytes)...])
        guard frames > 0 else { return }
        var mono = [Float](repeating: 0, count: frames)
        data.withUnsafeBytes { raw in
            for frame in 0..<frames {
                var sum: Float = 0
                for channel in 0..<channels {
                    let offset = (frame * channels + channel) * 2
                    sum += Float(Int16(bitPattern: UInt16(raw[offset]) | UInt16(raw[offset + 1]) << 8))
                }
                mono[frame] = sum / (32768 * Float(channels))
            }
        }
        let samples = resampler.map { $0.process(mono) } ?? mono
        let writePosition = written.load(ordering: .relaxed)
        let space = ring.count - (writePosition - read.load(ordering: .acquiring))
        let count = min(samples.count, space)
        for index in 0..<count { ring[(writePosition + index) & mask] = samples[index] }
        written.store(writePosition + count, ordering: .releasing)
    }

    /// The sender is done: the queued audio plays out, then the stream ends.
    public func finish() {
        finished.store(true, ordering: .releasing)
    }

    /// Samples queued now (16 kHz).
    public var queuedSamples: Int { written.load(ordering: .acquiring) - read.load(ordering: .relaxed) }

    public func pull(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> HopPull {
        let readPosition = read.load(ordering: .relaxed)
        var queued = written.load(ordering: .acquiring) - readPosition
        let done = finished.load(ordering: .acquiring)
        if done && queued < AnalysisFormat.hopSize { return .ended }
        if !playing {
            guard queued >= delaySamples || done else { return .silence }
            playing = true
        }
        var start = readPosition
        if queued > highWater {
            let excess = queued - delaySamples
            droppedSamples += excess
            start += excess
            queued -= excess
        }
        guard queued >= AnalysisFormat.hopSize else {
            underruns += 1
            playing = false
            read.store(start, ordering: .releasing)
            return .silence
        }
        for index in 0..<AnalysisFormat.hopSize { hop[index] = ring[(start + index) & mask] }
        read.store(start + AnalysisFormat.hopSize, ordering: .releasing)
        return .audio
    }
}
