import SpeakerIO
import SpeakerOpus
import SpeakerBase

/// One incoming RTP/Opus stream (one SSRC): jitter buffer, then either Opus decoding to 16 kHz hops
/// (decode mode) or the packets' RFC 6464 levels (level-only mode), one result per 10 ms tick.
///
/// Ticks are shared by all streams of a receiver: `pull(tick:)` for tick `k` returns the stream's
/// audio for `[10k ms, 10k ms + 10 ms)` of the playout clock (see `RTPJitterBuffer` for how packets
/// are placed on it). The streams of one room share a `PlayoutClock`, which keeps them aligned by
/// capture time: give each receiver of a room the same clock, and each stream's RTCP sender reports
/// to `receive(_:)`. A tick with no packet is `.silence`: the engine then gets no hop for the stream,
/// which it treats as silence — what a sender in DTX means. A lost packet inside a talk spurt is decoded
/// from the next packet's in-band FEC when that one has arrived and carries it
/// (`OpusPacketDecoder.decodeFEC`), else concealed by libopus (`OpusPacketDecoder.concealLoss`) for up to
/// `maximumConcealment`.
///
/// A `ConcurrentHopSource`: in decode mode the engine reads it (jitter buffer and decoding) on the worker
/// thread that analyses its stream, so that decoding spreads over the engine's workers; in level-only mode
/// the runner pulls it. `hasHop(tick:)` moves the room's shared playout clock, on the runner's thread; `read`
/// then only reads the clock, which nothing moves during the engine's tick.
///
/// After `init`, `insert`, `pull` and `read` allocate nothing. Not thread-safe: the thread that runs the ticks
/// owns it, lending it to one engine worker at a time during a tick.
public final class RTPStreamReceiver: ConcurrentHopSource {
    /// How packets are used.
    public enum Mode: String, Sendable, CaseIterable {
        /// Decode the Opus payload; the engine's VAD sees the audio.
        case decode
        /// Use only the RFC 6464 level of each packet; nothing is decoded.
        case levels
    }

    /// A tick's result: `.audio` (decoded or concealed, decode mode), `.level` (the loudest RFC 6464 level of
    /// the packets covering the tick, level-only mode) or `.silence` (nothing received for the tick: DTX, the
    /// sender paused, or the stream has not started). Never `.ended`: a stream ends when its owner says so.
    public typealias Output = HopPull

    /// What `insert` did with a packet.
    public enum Insertion: Sendable, Equatable {
        /// Buffered.
        case accepted
        /// Dropped: a duplicate, or too late for its place.
        case duplicate, late
        /// Dropped: the buffer was full, or the packet larger than a slot.
        case overflow
        /// Held back: a large sequence jump waits for a second packet to confirm a restart.
        case probation
        /// Dropped: the payload is not a valid Opus packet.
        case invalidPayload
    }

    /// The stream's synchronisation source.
    public let ssrc: UInt32
    /// Decode or level-only.
    public let mode: Mode
    /// Counters.
    public var statistics: RTPStreamStatistics { buffer.statistics }
    /// The room's playout clock.
    public var clock: PlayoutClock { buffer.clock }
    /// Whether the stream is placed by its sender's RTCP reports now (else by its packets' arrivals).
    public var usesSenderReports: Bool { buffer.usesSenderReports }

    private var buffer: RTPJitterBuffer
    private let decoder: OpusPacketDecoder?
    private static let fifoCapacity = 1 << 14
    private let fifo: UnsafeMutableBufferPointer<Float>
    private let audible: UnsafeMutableBufferPointer<Bool>
    private let scratch: UnsafeMutableBufferPointer<Float>
    private var lastDuration = 320
    /// The tick packets are being received for: the one after the last pulled.
    private var receivingTick: Int
    private var lastLevel: AudioLevel?
    /// Level-only mode: (start, end, level) spans on the clock, oldest first.
    private var spans: [(start: Int, end: Int, level: AudioLevel?)] = []

    /// Creates the receiver of a stream that joins at tick `startTick`.
    /// - Parameters:
    ///   - clock: The playout clock of the stream's room, shared with the room's other receivers; nil gives the
    ///     stream a clock of its own, made from `configuration`.
    /// - Throws: `SpeakerIOError` if libopus cannot make a decoder (decode mode).
    public init(
        ssrc: UInt32, mode: Mode, configuration: JitterBufferConfiguration = JitterBufferConfiguration(), startTick: Int,
        clock: PlayoutClock? = nil
    ) throws {
        self.ssrc = ssrc
        self.mode = mode
        receivingTick = startTick
        buffer = RTPJitterBuffer(
            configuration: configuration, start: startTick * AnalysisFormat.hopSize,
            clock: clock ?? PlayoutClock(configuration: configuration), concealsWhenEmpty: mode == .decode)
        decoder = mode == .decode ? try OpusPacketDecoder(sampleRate: AnalysisFormat.sampleRate) : nil
        fifo = .allocate(capacity: Self.fifoCapacity)
        fifo.initialize(repeating: 0)
        audible = .allocate(capacity: Self.fifoCapacity)
        audible.initialize(repeating: false)
        scratch = .allocate(capacity: AnalysisFormat.sampleRate * 120 / 1000)
        scratch.initialize(repeating: 0)
        spans.reserveCapacity(256)
    }

    deinit {
        buffer.deallocate()
        fifo.deallocate()
        audible.deallocate()
        scratch.deallocate()
    }

    /// Takes in a parsed packet of this stream.
    /// - Parameters:
    ///   - packet: The packet, parsed from `datagram`.
    ///   - datagram: The bytes it was parsed from.
    ///   - arrival: When it arrived, in samples of the playout clock (16 kHz, sample 0 = the start of tick 0);
    ///     nil: at the start of the tick after the last pulled.
    /// - Returns: What happened to it.
    /// - Complexity: O(1); allocates nothing.
    @discardableResult
    public func insert(_ packet: RTPPacket, datagram: UnsafeRawBufferPointer, arrival: Int? = nil) -> Insertion {
        let payload = UnsafeRawBufferPointer(rebasing: datagram[packet.payload])
        // The TOC byte(s) give the duration; a payload libopus cannot even size is malformed.
        guard let samples = OpusPacketDecoder.samples(in: payload), samples <= 1920 else {
            buffer.statistics.invalidPayloads += 1
            return .invalidPayload
        }
        let fec = mode == .decode && OpusPacketDecoder.hasInbandFEC(payload)
        switch buffer.insert(
            packet, payload: payload, duration: samples, arrival: arrival ?? receivingTick * AnalysisFormat.hopSize, fec: fec)
        {
        case .accepted: return .accepted
        case .duplicate: return .duplicate
        case .late: return .late
        case .overflow: return .overflow
        case .probation: return .probation
        }
    }

    /// Takes in an RTCP sender report of this stream: from then on its packets are placed by their capture
    /// time on the sender's wall clock, while that agrees with their arrivals (see `StreamTiming`).
    /// - Returns: False if the report cannot be used: another SSRC, or the clock has no `wallClockAtZero`.
    /// - Complexity: O(1); allocates nothing.
    @discardableResult
    public func receive(_ report: RTCPSenderReport) -> Bool {
        guard report.ssrc == ssrc, let sample = buffer.clock.sample(ofUnixTime: report.unixTime) else { return false }
        buffer.noteSenderReport(timestamp: report.rtpTimestamp, sample: sample)
        return true
    }

    /// The stream's output for tick `tick`.
    ///
    /// - Parameters:
    ///   - tick: The tick index; call once per tick, in order.
    ///   - hop: Receives 160 samples in decode mode when the result is `.audio`.
    /// - Returns: `.audio` (decode mode), `.level` (level-only mode) or `.silence`.
    /// - Complexity: O(samples decoded). Allocates nothing.
    public func pull(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> Output {
        _ = hasHop(tick: tick)
        return decide(tick: tick, into: hop)
    }

    /// Decode mode: the engine may read the stream on a worker thread. Its decoder and buffer are its own;
    /// the room's clock is only read there.
    public var readsConcurrently: Bool { mode == .decode }

    /// Moves the room's playout clock to tick `tick` (on the runner's thread). Always true: a stream ends
    /// when its owner removes it.
    public func hasHop(tick: Int) -> Bool {
        let now = tick * AnalysisFormat.hopSize
        precondition(buffer.decidedUntil >= now, "a tick is played once, in order")
        receivingTick = tick + 1
        buffer.clock.update(now: now)
        return true
    }

    /// Plays tick `tick` after `hasHop(tick:)`: decodes, recovers or conceals what it covers.
    /// - Returns: Whether the hop holds audio (false: silence, written as zeros).
    public func read(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> Bool {
        decide(tick: tick, into: hop) == .audio
    }

    /// Plays tick `tick` from the buffer: the pull after the clock has moved.
    private func decide(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> Output {
        let now = tick * AnalysisFormat.hopSize, end = now + AnalysisFormat.hopSize
        while buffer.decidedUntil < end {
            let position = buffer.decidedUntil
            switch buffer.next(end: end, lastDuration: lastDuration) {
            case .play(let slot, let start, let skip):
                play(slot: slot, start: start, skip: skip)
            case .recover(let slot, let samples):
                recover(from: slot, samples: samples, at: position)
            case .conceal(let samples):
                conceal(samples: samples, at: position)
            case .silence(let samples):
                if mode == .decode { write(nil, count: samples, at: position) }
            }
        }
        return mode == .decode ? takeHop(now: now, into: hop) : takeLevel(now: now, end: end)
    }

    private func play(slot: Int, start: Int, skip: Int) {
        let info = buffer.slot(slot)
        switch mode {
        case .decode:
            let decoder = decoder!
            if buffer.needsReset {
                decoder.reset()
                buffer.needsReset = false
            }
            let decoded: Int
            do {
                decoded = try decoder.decode(packet: buffer.payload(slot), into: scratch)
            } catch {
                buffer.statistics.invalidPayloads += 1
                conceal(samples: info.duration, at: start + skip)
                return
            }
            lastDuration = decoded
            if decoded > skip {
                write(UnsafeBufferPointer(rebasing: scratch[skip..<decoded]), count: decoded - skip, at: start + skip)
            }
            buffer.advance(to: start + decoded)
        case .levels:
            let duration = info.duration
            lastDuration = duration
            lastLevel = info.level
            if spans.count < 256 { spans.append((start + skip, start + duration, info.level)) }
            buffer.advance(to: start + duration)
        }
    }

    /// Decodes a lost packet from the FEC data of the packet in `slot` (decode mode; levels mode conceals).
    private func recover(from slot: Int, samples: Int, at position: Int) {
        guard mode == .decode, let decoder else { return conceal(samples: samples, at: position) }
        let count = min(samples, scratch.count)
        let recovered = (try? decoder.decodeFEC(from: buffer.payload(slot), samples: count, into: scratch)) ?? 0
        if recovered > 0 { write(UnsafeBufferPointer(rebasing: scratch[..<recovered]), count: recovered, at: position) }
        buffer.advance(to: position + max(recovered, samples))
    }

    private func conceal(samples: Int, at position: Int) {
        switch mode {
        case .decode:
            let count = min(samples, scratch.count)
            let concealed = (try? decoder!.concealLoss(samples: count, into: scratch)) ?? 0
            if concealed > 0 { write(UnsafeBufferPointer(rebasing: scratch[..<concealed]), count: concealed, at: position) }
            buffer.advance(to: position + max(concealed, samples))
        case .levels:
            // Without audio, concealment repeats the last packet's level.
            if spans.count < 256 { spans.append((position, position + samples, lastLevel)) }
            buffer.advance(to: position + samples)
        }
    }

    /// Writes samples (or silence for nil) to the FIFO at clock position `position`.
    private func write(_ samples: UnsafeBufferPointer<Float>?, count: Int, at position: Int) {
        let mask = Self.fifoCapacity - 1
        var index = 0
        while index < count {
            let slot = (position + index) & mask
            fifo[slot] = samples?[index] ?? 0
            audible[slot] = samples != nil
            index += 1
        }
    }

    private func takeHop(now: Int, into hop: UnsafeMutableBufferPointer<Float>) -> Output {
        precondition(hop.count == AnalysisFormat.hopSize, "a hop is AnalysisFormat.hopSize samples")
        let mask = Self.fifoCapacity - 1
        var any = false
        var index = 0
        while index < AnalysisFormat.hopSize {
            let slot = (now + index) & mask
            hop[index] = fifo[slot]
            any = any || audible[slot]
            audible[slot] = false
            index += 1
        }
        return any ? .audio : .silence
    }

    private func takeLevel(now: Int, end: Int) -> Output {
        var loudest: AudioLevel?
        var index = 0
        while index < spans.count {
            let span = spans[index]
            if span.start < end && span.end > now, let level = span.level, level.level < (loudest?.level ?? 128) {
                loudest = level
            }
            index += 1
        }
        // Keep the spans that reach past this tick, in order, without a closure.
        var kept = 0
        index = 0
        while index < spans.count {
            if spans[index].end > end {
                spans[kept] = spans[index]
                kept += 1
            }
            index += 1
        }
        spans.removeLast(spans.count - kept)
        if let loudest { return .level(loudest) }
        return .silence
    }
}
