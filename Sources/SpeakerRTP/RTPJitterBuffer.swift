import SpeakerBase
/// Settings of the per-stream jitter buffer.
public struct JitterBufferConfiguration: Sendable, Equatable {
    /// Seconds a packet plays after its capture at least (after the fastest of its stream's recent
    /// packets arrived, where the sender sends no RTCP sender reports): packets up to this late (or this
    /// much out of order) play in their place. The room's playout clock raises it while packets come later
    /// (`PlayoutClock`). Default 0.06 s.
    public var delay: Double = 0.06
    /// The most the room's playout clock raises the delay to, in seconds. Default 0.5 s.
    public var maximumDelay: Double = 0.5
    /// Packets the buffer holds (a power of two); further packets make it skip ahead. Default 64 (1.28 s of 20 ms packets).
    public var capacity: Int = 64
    /// Seconds of packet-loss concealment in a row at most; a longer gap is silence. Default 0.1 s.
    public var maximumConcealment: Double = 0.1
    /// A timestamp jump larger than this, in seconds (a packet arriving this much earlier than its stream's
    /// timing allows, or this much later than the maximum delay), re-anchors the stream's media clock
    /// instead of being played as a pause or dropped as late. Default 0.2 s.
    public var jumpThreshold: Double = 0.2

    public init() {}
}

/// Counters of one RTP stream.
public struct RTPStreamStatistics: Sendable, Equatable {
    /// Packets accepted into the jitter buffer.
    public var packets = 0
    /// Packets that played (decoded, or their level used).
    public var played = 0
    /// Packets never received (or received after their place had played) whose place came:
    /// `concealed + recovered + silenced`.
    public var lost = 0
    /// Lost packets concealed by the decoder (packet-loss concealment from the audio before them).
    public var concealed = 0
    /// Lost packets decoded from the in-band FEC data of the packet after them (Opus LBRR).
    public var recovered = 0
    /// Lost packets left silent: the gap was longer than `maximumConcealment`, so nothing was left to
    /// conceal from.
    public var silenced = 0
    /// Packets received a second time.
    public var duplicates = 0
    /// Packets that arrived after their place had played, or whose place passed when the stream was
    /// moved earlier to stay aligned with the room.
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
    /// Times the stream's playout moved (by more than 1.25 ms) to stay aligned with the room's playout clock.
    public var realignments = 0
    /// RTCP sender reports received for the stream.
    public var senderReports = 0

    public init() {}
}

/// The reorder and playout logic of one RTP stream, in 16 kHz sample units, without payload handling.
///
/// The playout clock is shared by the streams of a room (`PlayoutClock`): tick `k` covers samples
/// `[160k, 160k + 160)`. A packet's place on that clock is its capture time (its timestamp, converted from
/// the 48 kHz RTP clock, plus the stream's capture offset from `StreamTiming`) plus the room's delay. So
/// streams captured together play together, and a stream follows the room when its network delay or the
/// room's delay changes: when its place moves by more than 1.25 ms, the stream moves with it (a short
/// silence when it moves later; the samples whose place has passed are dropped when it moves earlier).
///
/// Within a spurt:
/// - packets play in sequence order; a duplicate or a packet whose place has passed is dropped;
/// - sequence numbers are extended over wrap-around (RFC 3550 appendix A.1); a jump of more than
///   3000 ahead or 100 behind is a restart once a second packet confirms it, as RFC 3550 advises;
/// - a missing packet whose place comes while later packets wait is lost: decoded from the in-band FEC
///   of the packet after it when that one is here and carries FEC (`.recover`), else concealed
///   (packet-loss concealment) for up to `maximumConcealment`, silent after that;
/// - a timestamp gap with consecutive sequence numbers is a pause (the sender's DTX): silence;
/// - a packet whose timestamp puts it more than `jumpThreshold` earlier than its stream's timing allows,
///   or later than the maximum delay and that threshold, re-anchors the media clock (a sender that
///   jumped its timestamps): it and the packets after it are shifted back onto the stream's timeline;
/// - when the buffer is empty at a place (a loss burst longer than the delay, or a pause: they cannot be
///   told apart yet), the place is concealed for up to `maximumConcealment` as for a loss (libopus fades
///   it out; a pause's last packet is quiet, and so is its concealment; without audio, as for RFC 6464
///   levels, it is silent: repeating a level would guess "still speaking"), then silent, and the next packet
///   starts a new spurt; packets skipped by then are lost: concealed as far as the concealment reached,
///   silenced after.
///
/// Slots hold packet payloads in preallocated storage: after `init`, nothing allocates.
struct RTPJitterBuffer {
    /// A playout action for one stretch of the shared clock.
    enum Action: Equatable {
        /// Play the packet in slot `slot` at clock sample `start`, dropping its first `skip` samples.
        case play(slot: Int, start: Int, skip: Int)
        /// Decode a lost packet of `samples` samples from the in-band FEC of the packet in `slot` (which stays).
        case recover(slot: Int, samples: Int)
        /// Conceal `samples` samples (a lost packet).
        case conceal(samples: Int)
        /// Nothing to play for `samples` samples (0: a packet was dropped, ask again).
        case silence(samples: Int)
    }

    struct Slot {
        var occupied = false
        var sequence = 0
        /// The packet's timestamp in 16 kHz units, extended (and shifted back over re-anchoring jumps).
        var time = 0
        /// Samples the packet lasts at 16 kHz, known after it plays (decode) or from its TOC.
        var duration = 0
        var length = 0
        var level: AudioLevel?
        /// The payload carries in-band FEC for the packet before it.
        var fec = false
    }

    let configuration: JitterBufferConfiguration
    /// The room's playout clock.
    let clock: PlayoutClock
    /// Bytes a slot can hold.
    static let slotBytes = 1500
    /// A stream moves to follow the room's clock when its place is off by more than this: 1.25 ms, half the
    /// clock's step, so that every step of the room's delay moves every stream.
    static let toleranceSamples = 20
    private(set) var slots: [Slot]
    let storage: UnsafeMutableRawBufferPointer
    private let mask: Int
    private let jumpSamples: Int
    let maximumConcealmentSamples: Int
    /// Whether a place with the buffer empty is concealed (decoded audio; PLC fades) or silent (levels:
    /// repeating a level would guess "still speaking").
    let concealsWhenEmpty: Bool

    /// Extended sequence number of the highest packet received, nil before the first.
    private var highestSequence: Int?
    /// Extended timestamp (16 kHz) of the reference for extending 32-bit timestamps.
    private var timeReference: (raw: UInt32, extended: Int) = (0, 0)
    /// Subtracted from the extended time of packets from `shiftFrom` on (re-anchoring jumps), and of those before.
    private var timeShift = 0, previousTimeShift = 0, shiftFrom = Int.min
    /// When the stream's packets were captured.
    private(set) var timing = StreamTiming()
    /// The last sender report: its RTP timestamp and the clock sample of its wall-clock time.
    private var lastReport: (timestamp: UInt32, sample: Int)?
    /// Set when the timeline was re-based (the first packet, a restart): the last report is placed on it anew.
    private var needsReport = true
    /// Sequence number of the next packet to play.
    private var nextSequence = 0
    /// A restart candidate: the extended-looking sequence of a packet far off the current sequence.
    private var probation: UInt16?
    /// True while no spurt is playing.
    private(set) var idle = true
    /// True once a spurt has played: `nextSequence` then follows the last packet played.
    private var played = false
    /// Added to a packet's time to give its place on the clock.
    private(set) var offset = 0
    /// Clock sample up to which playout has been decided.
    private(set) var decidedUntil = 0
    /// Samples concealed in a row.
    private(set) var concealedInARow = 0
    /// Packet places concealed while the buffer was empty since the last packet played.
    private var concealedWhileEmpty = 0
    /// Set when a restart or overflow makes the decoder's history useless.
    var needsReset = false
    var statistics = RTPStreamStatistics()

    /// - Parameters:
    ///   - configuration: The settings.
    ///   - start: The clock sample where the stream joins (the start of the current tick).
    ///   - clock: The room's playout clock.
    ///   - concealsWhenEmpty: Whether a place with the buffer empty is concealed (else silent).
    init(configuration: JitterBufferConfiguration, start: Int, clock: PlayoutClock, concealsWhenEmpty: Bool = true) {
        precondition(configuration.capacity > 1 && configuration.capacity & (configuration.capacity - 1) == 0,
                     "capacity is a power of two")
        precondition(configuration.delay >= 0 && configuration.maximumConcealment >= 0 && configuration.jumpThreshold > 0,
                     "non-negative durations")
        self.configuration = configuration
        self.clock = clock
        self.concealsWhenEmpty = concealsWhenEmpty
        slots = Array(repeating: Slot(), count: configuration.capacity)
        storage = .allocate(byteCount: configuration.capacity * Self.slotBytes, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0)
        mask = configuration.capacity - 1
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

    /// Takes a packet in.
    /// - Parameters:
    ///   - duration: Its length in 16 kHz samples if known (from the Opus TOC), else 0.
    ///   - arrival: The clock sample it arrived at.
    ///   - fec: Whether its payload carries in-band FEC for the packet before it.
    /// - Complexity: O(1), or O(capacity) on a restart or overflow. Allocates nothing.
    mutating func insert(
        _ packet: RTPPacket, payload: UnsafeRawBufferPointer, duration: Int, arrival: Int, fec: Bool = false
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
            played = false
            needsReset = true
        }
        let index = sequence & mask
        if slots[index].occupied && slots[index].sequence == sequence {
            statistics.duplicates += 1
            return .duplicate
        }
        let isNewest = sequence > highestSequence! || statistics.packets == 0
        highestSequence = max(highestSequence!, sequence)
        let time = extendTime(packet.timestamp) - (sequence >= shiftFrom ? timeShift : previousTimeShift)
        slots[index] = Slot(
            occupied: true, sequence: sequence, time: time, duration: duration,
            length: payload.count, level: packet.audioLevel, fec: fec)
        storage.baseAddress!.advanced(by: index * Self.slotBytes).copyMemory(from: payload.baseAddress!, byteCount: payload.count)
        statistics.packets += 1
        noteArrival(slot: index, arrival: arrival, isNewest: isNewest)
        return .accepted
    }

    /// Feeds the stream's timing with a packet's arrival, re-anchoring the media clock over a timestamp jump,
    /// and tells the room's clock how late after its capture it came.
    private mutating func noteArrival(slot index: Int, arrival: Int, isNewest: Bool) {
        if isNewest, let expected = timing.arrivalOffset {
            let transit = arrival - slots[index].time
            if transit < expected - jumpSamples || transit > expected + clock.maximumDelay + jumpSamples {
                // The sender's timestamps jumped: shift this packet and the later ones back onto the timeline.
                previousTimeShift = timeShift
                timeShift += expected - transit
                shiftFrom = slots[index].sequence
                slots[index].time -= expected - transit
                statistics.jumps += 1
                // The last report maps the old timestamps: wait for the next.
                lastReport = nil
                timing.forgetReport()
            }
        }
        timing.noteArrival(time: slots[index].time, arrival: arrival)
        if needsReport {
            // The first packet (or the first after a restart) gives the timeline the report is placed on.
            needsReport = false
            applyReport(resetting: true)
        }
        if let capture = timing.captureOffset(maximumDelay: clock.maximumDelay) {
            clock.note(lateness: arrival - slots[index].time - capture, at: arrival)
        }
    }

    /// Takes in an RTCP sender report of the stream: RTP timestamp `timestamp` was captured at clock sample `sample`.
    mutating func noteSenderReport(timestamp: UInt32, sample: Int) {
        statistics.senderReports += 1
        lastReport = (timestamp, sample)
        applyReport(resetting: false)
    }

    /// Whether the stream's packets are placed by the sender's reports (else by their arrivals).
    var usesSenderReports: Bool { timing.usesSenderReports }

    /// Feeds the last sender report to the timing, on the current timeline (`resetting`: the timeline was
    /// just re-based, so the report replaces the estimate).
    private mutating func applyReport(resetting: Bool) {
        guard let report = lastReport, highestSequence != nil else { return }
        let delta = Int(Int32(bitPattern: report.timestamp &- timeReference.raw))
        timing.noteSenderReport(time: (timeReference.extended * 3 + delta) / 3 - timeShift, sample: report.sample, resetting: resetting)
    }

    private mutating func restart(at packet: RTPPacket) {
        for index in slots.indices { slots[index].occupied = false }
        let base = (highestSequence.map { $0 + 65536 } ?? 0) & ~0xFFFF
        highestSequence = base + Int(packet.sequenceNumber)
        nextSequence = highestSequence!
        timeReference = (packet.timestamp, Int(packet.timestamp) / 3)
        timeShift = 0
        previousTimeShift = 0
        shiftFrom = Int.min
        timing.reset()
        needsReport = true
        idle = true
        played = false
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

    /// The offset that puts a packet at its capture time plus the room's delay.
    private mutating func targetOffset() -> Int {
        (timing.captureOffset(maximumDelay: clock.maximumDelay) ?? 0) + clock.delay
    }

    /// Decides the next stretch of playout for a consumer whose output reaches clock sample
    /// `decidedUntil`. Call while `decidedUntil < end`. After `.silence` the buffer has already moved
    /// `decidedUntil`; after `.play`, `.recover` and `.conceal` the consumer calls `advance(to:)` with the end
    /// of what it produced (which may pass `end`: the rest belongs to the next tick).
    ///
    /// - Parameters:
    ///   - end: The end of the current tick.
    ///   - lastDuration: The consumer's last packet duration, for concealing a lost packet.
    mutating func next(end: Int, lastDuration: Int) -> Action {
        precondition(decidedUntil < end, "already decided up to \(end)")
        if idle {
            // Start a spurt if a packet waits, else stay silent to the end of the tick.
            guard let index = earliestWaiting() else {
                let samples = end - decidedUntil
                decidedUntil = end
                return .silence(samples: samples)
            }
            if played {
                // Packets between the last played and this one never came in time: the first were concealed
                // while the buffer was empty, the rest silent.
                let missing = min(slots[index].sequence - nextSequence, configuration.capacity)
                let concealed = min(missing, concealedWhileEmpty)
                statistics.lost += missing
                statistics.concealed += concealed
                statistics.silenced += missing - concealed
            }
            concealedWhileEmpty = 0
            nextSequence = slots[index].sequence
            offset = targetOffset()
            idle = false
            played = true
            concealedInARow = 0
            statistics.spurts += 1
        }
        let index = nextSequence & mask
        if slots[index].occupied && slots[index].sequence == nextSequence {
            let target = targetOffset()
            if abs(target - offset) > Self.toleranceSamples {
                offset = target
                statistics.realignments += 1
            }
            let start = slots[index].time + offset
            if start + max(slots[index].duration, 1) <= decidedUntil {
                // Its place has passed (the stream moved earlier): drop it.
                slots[index].occupied = false
                nextSequence += 1
                statistics.late += 1
                return .silence(samples: 0)
            }
            if start > decidedUntil {
                // A pause (DTX), or the stream moved later, before this packet.
                let until = min(start, end)
                let samples = until - decidedUntil
                decidedUntil = until
                return .silence(samples: samples)
            }
            slots[index].occupied = false
            nextSequence += 1
            statistics.played += 1
            concealedInARow = 0
            concealedWhileEmpty = 0
            return .play(slot: index, start: start, skip: decidedUntil - start)
        }
        if hasWaitingPacket() {
            // Lost: later packets are here, this one is not, and its place has come.
            nextSequence += 1
            statistics.lost += 1
            let samples = lastDuration > 0 ? lastDuration : 320
            let following = nextSequence & mask
            if slots[following].occupied && slots[following].sequence == nextSequence && slots[following].fec {
                statistics.recovered += 1
                concealedInARow = 0
                return .recover(slot: following, samples: samples)
            }
            if concealedInARow + samples <= maximumConcealmentSamples {
                concealedInARow += samples
                statistics.concealed += 1
                return .conceal(samples: samples)
            }
            // Too long to conceal: the lost packet's place is silent.
            statistics.silenced += 1
            decidedUntil += samples
            return .silence(samples: samples)
        }
        // Empty: a loss or a pause (DTX), which cannot be told apart yet. Conceal as for a loss for up to
        // `maximumConcealment` (concealment of a pause's quiet last packet is quiet); the next packet says
        // which it was (a sequence gap: lost packets).
        let concealment = lastDuration > 0 ? lastDuration : 320
        if concealsWhenEmpty && concealedInARow + concealment <= maximumConcealmentSamples {
            concealedInARow += concealment
            concealedWhileEmpty += 1
            return .conceal(samples: concealment)
        }
        // Then silence to the end of the tick; the next packet starts a new spurt.
        idle = true
        let samples = end - decidedUntil
        decidedUntil = end
        return .silence(samples: samples)
    }

    /// Records that the consumer has produced audio up to clock sample `sample` (after `.play`, `.recover` or `.conceal`).
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
