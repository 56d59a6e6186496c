import SpeakerBase
/// Settings of the per-stream jitter buffer.
public struct JitterBufferConfiguration: Sendable, Equatable {
    /// Seconds a talk spurt's first packet waits before it plays: packets up to this late (or this much
    /// out of order) still play in their place. Default 0.06 s.
    public var delay: Double = 0.06
    /// Packets the buffer holds (a power of two); further packets make it skip ahead. Default 64 (1.28 s of 20 ms packets).
    public var capacity: Int = 64
    /// Seconds of packet-loss concealment in a row at most; a longer gap is silence. Default 0.1 s.
    public var maximumConcealment: Double = 0.1
    /// A timestamp jump (within a talk spurt) larger than this, in seconds, re-anchors the stream
    /// instead of being played as a pause. Default 0.2 s.
    public var jumpThreshold: Double = 0.2

    public init() {}
}

/// Counters of one RTP stream.
public struct RTPStreamStatistics: Sendable, Equatable {
    /// Packets accepted into the jitter buffer.
    public var packets = 0
    /// Packets that played (decoded, or their level used).
    public var played = 0
    /// Packets never received whose place was concealed or left silent.
    public var lost = 0
    /// Packets received a second time.
    public var duplicates = 0
    /// Packets that arrived after their place had played.
    public var late = 0
    /// Packets dropped because the buffer was full (the stream skipped ahead).
    public var overflowed = 0
    /// Payloads libopus rejected (decode mode).
    public var invalidPayloads = 0
    /// Sequence restarts (a new sequence, as after a sender restart).
    public var restarts = 0
    /// Timestamp jumps that re-anchored the stream.
    public var jumps = 0
    /// Talk spurts: times playback started after the buffer had run empty.
    public var spurts = 0

    public init() {}
}

/// The reorder and playout logic of one RTP stream, in 16 kHz sample units, without payload handling.
///
/// The playout clock is shared by all streams: tick `k` covers samples `[160k, 160k + 160)`. A packet's
/// place on that clock is its timestamp (converted from the 48 kHz RTP clock) plus the stream's
/// `offset`, which is set when a talk spurt starts — when the first packet arrives, or the first after
/// the buffer ran empty — so that the packet plays `delay` after the current tick. Within a spurt:
/// - packets play in sequence order; a duplicate or a packet whose place has passed is dropped;
/// - sequence numbers are extended over wrap-around (RFC 3550 appendix A.1); a jump of more than
///   3000 ahead or 100 behind is a restart once a second packet confirms it, as RFC 3550 advises;
/// - a missing packet whose place comes while later packets wait is lost: concealed (packet-loss
///   concealment) for up to `maximumConcealment`, silent after that;
/// - a timestamp gap with consecutive sequence numbers is a pause (the sender's DTX): silence; a gap
///   larger than `jumpThreshold`, or a step backwards, re-anchors;
/// - when the buffer is empty at a place, the place is silent (loss and DTX cannot be told apart, and
///   "still speaking" would be the wrong guess), and the next packet starts a new spurt.
///
/// Slots hold packet payloads in preallocated storage: after `init`, nothing allocates.
struct RTPJitterBuffer {
    /// A playout action for one stretch of the shared clock.
    enum Action: Equatable {
        /// Play the packet in slot `slot` at clock sample `start`, dropping its first `skip` samples.
        case play(slot: Int, start: Int, skip: Int)
        /// Conceal `samples` samples (a lost packet).
        case conceal(samples: Int)
        /// Nothing to play for `samples` samples.
        case silence(samples: Int)
    }

    struct Slot {
        var occupied = false
        var sequence = 0
        /// The packet's timestamp in 16 kHz units, extended.
        var time = 0
        /// Samples the packet lasts at 16 kHz, known after it plays (decode) or from its TOC.
        var duration = 0
        var length = 0
        var level: AudioLevel?
    }

    let configuration: JitterBufferConfiguration
    /// Bytes a slot can hold.
    static let slotBytes = 1500
    private(set) var slots: [Slot]
    let storage: UnsafeMutableRawBufferPointer
    private let mask: Int
    private let delaySamples: Int
    private let jumpSamples: Int
    let maximumConcealmentSamples: Int

    /// Extended sequence number of the highest packet received, nil before the first.
    private var highestSequence: Int?
    /// Extended timestamp (16 kHz) of the reference for extending 32-bit timestamps.
    private var timeReference: (raw: UInt32, extended: Int) = (0, 0)
    /// Sequence number of the next packet to play.
    private var nextSequence = 0
    /// A restart candidate: the extended-looking sequence of a packet far off the current sequence.
    private var probation: UInt16?
    /// True while no spurt is playing: the next packet sets `offset`.
    private(set) var idle = true
    /// Added to a packet's time to give its place on the clock.
    private var offset = 0
    /// Clock sample up to which playout has been decided.
    private(set) var decidedUntil = 0
    /// Samples concealed in a row.
    private(set) var concealedInARow = 0
    /// Set when a restart or overflow makes the decoder's history useless.
    var needsReset = false
    var statistics = RTPStreamStatistics()

    /// - Parameters:
    ///   - configuration: The settings.
    ///   - start: The clock sample where the stream joins (the start of the current tick).
    init(configuration: JitterBufferConfiguration, start: Int) {
        precondition(configuration.capacity > 1 && configuration.capacity & (configuration.capacity - 1) == 0,
                     "capacity is a power of two")
        precondition(configuration.delay >= 0 && configuration.maximumConcealment >= 0 && configuration.jumpThreshold > 0,
                     "non-negative durations")
        self.configuration = configuration
        slots = Array(repeating: Slot(), count: configuration.capacity)
        storage = .allocate(byteCount: configuration.capacity * Self.slotBytes, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        mask = configuration.capacity - 1
        delaySamples = Int((configuration.delay * Double(AnalysisFormat.sampleRate)).rounded())
        jumpSamples = Int((configuration.jumpThreshold * Double(AnalysisFormat.sampleRate)).rounded())
        maximumConcealmentSamples = Int((configuration.maximumConcealment * Double(AnalysisFormat.sampleRate)).rounded())
        decidedUntil = start
    }

    /// Frees the slot storage; the buffer is not used afterwards.
    func deallocate() { storage.deallocate() }

    /// The payload bytes of an occupied slot.
    func payload(_ slot: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: storage[slot * Self.slotBytes..<slot * Self.slotBytes + slots[slot].length])
    }

    func slot(_ index: Int) -> Slot { slots[index] }

    /// Sets the duration of the packet in `slot` (known once decoded).
    mutating func setDuration(_ samples: Int, slot: Int) { slots[slot].duration = samples }

    /// What `insert` did with a packet.
    enum Insertion: Equatable { case accepted, duplicate, late, overflow, probation }

    /// Takes a packet in. `duration` is its length in 16 kHz samples if known (from the Opus TOC), else 0.
    /// - Complexity: O(1), or O(capacity) on a restart or overflow. Allocates nothing.
    mutating func insert(
        _ packet: RTPPacket, payload: UnsafeRawBufferPointer, duration: Int
    ) -> Insertion {
        guard payload.count <= Self.slotBytes else {
            statistics.overflowed += 1
            return .overflow
        }
        let sequence: Int
        if let highest = highestSequence {
            let delta = Int(Int16(bitPattern: packet.sequenceNumber &- UInt16(truncatingIfNeeded: highest)))
            if delta > 3000 || delta < -100 {
                // Far off: a restart if the packet after it follows on.
                if let candidate = probation, packet.sequenceNumber == candidate &+ 1 {
                    restart(at: packet)
                    statistics.restarts += 1
                    sequence = highestSequence!
                } else {
                    probation = packet.sequenceNumber
                    return .probation
                }
            } else {
                sequence = highest + delta
            }
        } else {
            restart(at: packet)
            sequence = highestSequence!
        }
        probation = nil
        if sequence < nextSequence {
            statistics.late += 1
            return .late
        }
        if sequence >= nextSequence + configuration.capacity {
            // The buffer cannot hold it: skip ahead so that it fits, dropping what is skipped.
            let newNext = sequence - configuration.capacity + 1
            while nextSequence < newNext {
                let index = nextSequence & mask
                if slots[index].occupied && slots[index].sequence == nextSequence {
                    slots[index].occupied = false
                    statistics.overflowed += 1
                }
                nextSequence += 1
            }
            idle = true
            needsReset = true
        }
        let index = sequence & mask
        if slots[index].occupied && slots[index].sequence == sequence {
            statistics.duplicates += 1
            return .duplicate
        }
        highestSequence = max(highestSequence!, sequence)
        slots[index] = Slot(
            occupied: true, sequence: sequence, time: extendTime(packet.timestamp), duration: duration,
            length: payload.count, level: packet.audioLevel)
        storage.baseAddress!.advanced(by: index * Self.slotBytes).copyMemory(from: payload.baseAddress!, byteCount: payload.count)
        statistics.packets += 1
        return .accepted
    }

    private mutating func restart(at packet: RTPPacket) {
        for index in slots.indices { slots[index].occupied = false }
        let base = (highestSequence.map { $0 + 65536 } ?? 0) & ~0xFFFF
        highestSequence = base + Int(packet.sequenceNumber)
        nextSequence = highestSequence!
        timeReference = (packet.timestamp, Int(packet.timestamp) / 3)
        idle = true
        needsReset = true
    }

    /// Extends a 48 kHz 32-bit timestamp over wrap-around and converts it to 16 kHz.
    private mutating func extendTime(_ timestamp: UInt32) -> Int {
        let delta = Int(Int32(bitPattern: timestamp &- timeReference.raw))
        let extended = timeReference.extended * 3 + delta
        // Move the reference forward so that wrap-around stays within Int32 range of it.
        timeReference = (timestamp, extended / 3)
        return extended / 3
    }

    /// Decides the next stretch of playout for a consumer whose output reaches clock sample
    /// `decidedUntil`. Call while `decidedUntil < end`. After `.silence` the buffer has already moved
    /// `decidedUntil`; after `.play` and `.conceal` the consumer calls `advance(to:)` with the end of what
    /// it produced (which may pass `end`: the rest belongs to the next tick).
    ///
    /// - Parameters:
    ///   - now: The clock sample where the current tick starts (a new spurt plays `delay` after it).
    ///   - end: The end of the current tick.
    ///   - lastDuration: The consumer's last packet duration, for concealing a lost packet.
    mutating func next(now: Int, end: Int, lastDuration: Int) -> Action {
        precondition(decidedUntil < end, "already decided up to \(end)")
        if idle {
            // Start a spurt if a packet waits, else stay silent to the end of the tick.
            guard let index = earliestWaiting() else {
                let samples = end - decidedUntil
                decidedUntil = end
                return .silence(samples: samples)
            }
            nextSequence = slots[index].sequence
            offset = now + delaySamples - slots[index].time
            idle = false
            concealedInARow = 0
            statistics.spurts += 1
        }
        let index = nextSequence & mask
        if slots[index].occupied && slots[index].sequence == nextSequence {
            var start = slots[index].time + offset
            if start > decidedUntil + jumpSamples || start < decidedUntil - max(slots[index].duration, 320) {
                // A timestamp jump: play the packet now, continuing from here.
                offset += decidedUntil - start
                start = decidedUntil
                statistics.jumps += 1
            }
            if start > decidedUntil {
                // A pause (DTX) before this packet.
                let until = min(start, end)
                let samples = until - decidedUntil
                decidedUntil = until
                return .silence(samples: samples)
            }
            slots[index].occupied = false
            nextSequence += 1
            statistics.played += 1
            concealedInARow = 0
            return .play(slot: index, start: start, skip: decidedUntil - start)
        }
        if hasWaitingPacket() {
            // Lost: later packets are here, this one is not, and its place has come.
            nextSequence += 1
            statistics.lost += 1
            let samples = lastDuration > 0 ? lastDuration : 320
            if concealedInARow + samples <= maximumConcealmentSamples {
                concealedInARow += samples
                return .conceal(samples: samples)
            }
            // Too long to conceal: the lost packet's place is silent.
            decidedUntil += samples
            return .silence(samples: samples)
        }
        // Empty: silence to the end of the tick; the next packet starts a new spurt.
        idle = true
        let samples = end - decidedUntil
        decidedUntil = end
        return .silence(samples: samples)
    }

    /// Records that the consumer has produced audio up to clock sample `sample` (after `.play` or `.conceal`).
    mutating func advance(to sample: Int) { decidedUntil = max(decidedUntil, sample) }

    private func hasWaitingPacket() -> Bool {
        var sequence = nextSequence
        while sequence <= highestSequence! {
            let slot = slots[sequence & mask]
            if slot.occupied && slot.sequence == sequence { return true }
            sequence += 1
        }
        return false
    }

    private func earliestWaiting() -> Int? {
        guard let highest = highestSequence else { return nil }
        var sequence = max(nextSequence, highest - configuration.capacity + 1)
        while sequence <= highest {
            let index = sequence & mask
            if slots[index].occupied && slots[index].sequence == sequence { return index }
            sequence += 1
        }
        return nil
    }
}
