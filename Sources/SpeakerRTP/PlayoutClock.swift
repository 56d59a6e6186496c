import SpeakerBase

/// The playout clock of one room's RTP streams: one playout delay for all of them, so that streams
/// captured at the same moment play at the same moment, whatever each one's network delay did.
///
/// Each stream's jitter buffer estimates when each of its packets was captured, on the receiver's clock
/// (`StreamTiming`): from RTCP sender reports where its sender sends them (the sender's wall clock,
/// RFC 3550 §6.4.1), else from the fastest of its packets (taken to have had no queueing delay).
/// A packet plays at its capture time plus the room's `delay`. The buffers report how late after its
/// capture each packet arrived (`note(lateness:at:)`); the delay is the largest lateness of the last few
/// seconds plus a guard, never less than `minimumDelay` nor more than `maximumDelay`. It grows at once when
/// packets come later, and shrinks when the late ones have left the window. Since all streams share it, a
/// change moves every stream together: a delay common to all streams changes nothing for the engine.
///
/// Shared by reference among the receivers of one room; like them, owned by one thread (the room's
/// receiving thread), and it allocates nothing after `init`.
///
/// All times are samples of the 16 kHz analysis clock: tick `k` plays samples `[160k, 160k + 160)`.
public final class PlayoutClock {
    /// The smallest playout delay, in samples (the jitter-buffer setting).
    public let minimumDelay: Int
    /// The largest playout delay, in samples: a packet later than this after its capture re-anchors its stream.
    public let maximumDelay: Int
    /// The playout delay now, in samples: a packet captured at clock sample `c` plays at `c + delay`.
    public private(set) var delay: Int
    /// The receiver's wall clock (Unix seconds) at clock sample 0, for sender reports; nil: sender reports are
    /// not used (every stream is timed by its arrivals).
    public var wallClockAtZero: Double?
    /// Added to the largest recent lateness: arrivals are measured to the sample but packets are taken in
    /// once per tick, and the receiving thread may be a little late. 10 ms.
    public static let guardSamples = 160
    /// The delay moves in steps of 2.5 ms, so that lateness jitter does not move it every second.
    public static let stepSamples = 40
    /// Lateness is kept per second for this many seconds.
    static let windowSeconds = 4

    private var latenessBySecond: [Int]
    private var secondOfBucket: [Int]
    private var updatedAt = Int.min

    /// - Parameters:
    ///   - minimumDelay: Seconds, ≥ 0 (the jitter-buffer delay).
    ///   - maximumDelay: Seconds, ≥ `minimumDelay`.
    public init(minimumDelay: Double, maximumDelay: Double) {
        precondition(minimumDelay >= 0 && maximumDelay >= minimumDelay, "0 ≤ minimum ≤ maximum")
        self.minimumDelay = Int((minimumDelay * Double(AnalysisFormat.sampleRate)).rounded())
        self.maximumDelay = Int((maximumDelay * Double(AnalysisFormat.sampleRate)).rounded())
        delay = self.minimumDelay
        latenessBySecond = Array(repeating: 0, count: Self.windowSeconds)
        secondOfBucket = Array(repeating: Int.min, count: Self.windowSeconds)
    }

    /// A clock with the delays of a jitter-buffer configuration.
    public convenience init(configuration: JitterBufferConfiguration) {
        self.init(minimumDelay: configuration.delay, maximumDelay: max(configuration.delay, configuration.maximumDelay))
    }

    /// Records that a packet arrived `lateness` samples after its estimated capture, at clock sample `sample`.
    /// - Complexity: O(1). Allocates nothing.
    func note(lateness: Int, at sample: Int) {
        let second = sample >= 0 ? sample / AnalysisFormat.sampleRate : -1
        let bucket = (second % Self.windowSeconds + Self.windowSeconds) % Self.windowSeconds
        if secondOfBucket[bucket] != second {
            secondOfBucket[bucket] = second
            latenessBySecond[bucket] = 0
        }
        latenessBySecond[bucket] = max(latenessBySecond[bucket], min(lateness, maximumDelay))
        // A later packet raises the delay before the next tick plays.
        let needed = Self.delay(forLateness: lateness, minimum: minimumDelay, maximum: maximumDelay)
        if needed > delay { delay = needed }
    }

    /// Brings the delay up to date at clock sample `now` (the start of a tick); receivers call it before
    /// they play a tick, the first call of a tick does the work.
    /// - Complexity: O(window seconds). Allocates nothing.
    func update(now: Int) {
        guard now != updatedAt else { return }
        updatedAt = now
        let second = now >= 0 ? now / AnalysisFormat.sampleRate : -1
        var largest = 0
        var index = 0
        while index < Self.windowSeconds {
            if secondOfBucket[index] > second - Self.windowSeconds { largest = max(largest, latenessBySecond[index]) }
            index += 1
        }
        delay = Self.delay(forLateness: largest, minimum: minimumDelay, maximum: maximumDelay)
    }

    /// The delay that lets a packet `lateness` samples late play in its place.
    static func delay(forLateness lateness: Int, minimum: Int, maximum: Int) -> Int {
        let needed = lateness + guardSamples
        let stepped = (needed + stepSamples - 1) / stepSamples * stepSamples
        return min(maximum, max(minimum, stepped))
    }

    /// The clock sample of a Unix time on the receiver's wall clock, nil without `wallClockAtZero`.
    func sample(ofUnixTime time: Double) -> Int? {
        wallClockAtZero.map { Int(((time - $0) * Double(AnalysisFormat.sampleRate)).rounded()) }
    }
}

/// When a stream's packets were captured, on the room's playout clock: the offset that turns a
/// packet's media time (its RTP timestamp in 16 kHz samples, extended) into its capture time.
///
/// Two estimates:
/// - From arrivals: the lower envelope of `arrival − media time`. The fastest packet is taken to have
///   crossed the network without queueing, so jitter does not move the estimate. It follows a faster
///   packet at once, and rises by at most `driftPerPacket` (≈ 0.15 ms a second of packets: clock drift of
///   150 ppm) when packets come later: a stream whose network delay grows stays aligned with the others,
///   and the room's delay grows to let its packets play in their place (`PlayoutClock`).
/// - From RTCP sender reports: the sender's wall clock of the media time (RFC 3550 §6.4.1), converted to
///   the receiver's clock. This aligns streams whose network paths differ, as long as the senders' clocks
///   agree with the receiver's (NTP): it is used while the delay it implies for the envelope is between
///   −20 ms and the maximum delay, else the arrival estimate is.
///
/// A value inside one jitter buffer; allocates nothing.
struct StreamTiming {
    /// The arrival estimate is kept in 1/64 samples; it may rise this much per packet (3/64 sample: 2.3
    /// samples a second of 20 ms packets).
    static let driftPerPacket = 3
    static let fraction = 64
    /// How far before its sender-report time a packet may arrive (clocks that disagree a little): 20 ms.
    static let earliestSamples = -320

    /// The envelope in 1/64 samples; nil before the first packet.
    private var envelope: Int?
    /// Media time (16 kHz, on the buffer's extended scale) → receiver clock, from the last sender report.
    private(set) var reportOffset: Int?
    /// True while the sender-report estimate is the one used.
    private(set) var usesSenderReports = false

    /// `arrival − media time` of the fastest packets (the envelope), nil before the first packet.
    var arrivalOffset: Int? { envelope.map { $0 >= 0 ? $0 / Self.fraction : -((-$0 + Self.fraction - 1) / Self.fraction) } }

    /// Forgets the arrivals (after a restart); the sender report stays.
    mutating func reset() { envelope = nil }

    /// Takes in a packet of media time `time` that arrived at clock sample `arrival`.
    /// - Complexity: O(1). Allocates nothing.
    mutating func noteArrival(time: Int, arrival: Int) {
        let transit = (arrival - time) * Self.fraction
        envelope = min(transit, (envelope ?? transit) + Self.driftPerPacket)
    }

    /// Takes in a sender report: media time `time` (16 kHz, extended as the buffer's) was captured at
    /// clock sample `sample`.
    ///
    /// A sender reads its wall clock a little after the audio of the reported timestamp was captured (after
    /// encoding it, or later on a busy host), never before: so the reports' lower envelope is kept, rising by
    /// at most `reportDriftSamples` a report (clock drift), as for arrivals. A report `resetting` the
    /// stream's timeline (a restart) replaces it.
    mutating func noteSenderReport(time: Int, sample: Int, resetting: Bool = false) {
        let offset = sample - time
        reportOffset = resetting ? offset : min(offset, (reportOffset ?? offset) + Self.reportDriftSamples)
    }

    /// Forgets the sender-report estimate (the sender's timestamps jumped).
    mutating func forgetReport() {
        reportOffset = nil
        usesSenderReports = false
    }

    /// How much the report estimate may rise per report: 2 samples (0.125 ms; reports come about once a second).
    static let reportDriftSamples = 2

    /// The capture offset to use now: the sender-report one if it is plausible, else the arrival one.
    mutating func captureOffset(maximumDelay: Int) -> Int? {
        guard let arrivalOffset else { return nil }
        if let reportOffset {
            let networkDelay = arrivalOffset - reportOffset
            usesSenderReports = networkDelay >= Self.earliestSamples && networkDelay <= maximumDelay
        } else {
            usesSenderReports = false
        }
        return usesSenderReports ? reportOffset! : arrivalOffset
    }
}
