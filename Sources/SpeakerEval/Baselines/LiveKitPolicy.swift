import Foundation
import SpeakerCore

/// Baseline `livekit`: the active-speaker rule of the LiveKit server (`pkg/sfu/audio/audiolevel.go`
/// and the room's speaker updates, with the default `audio` configuration: active_level 35,
/// min_percentile 40, update_interval 400 ms, smooth_intervals 2). Implemented from that
/// description, for comparison with our own policy.
///
/// Per stream, over windows of 400 ms of 20 ms packets (two hops, energies averaged):
/// - a packet is active when its RFC 6464 level is ≤ 35 (−35 dBov or louder); the window keeps the
///   loudest active level and the active time;
/// - at the end of a window with at least 40 % of it active, the loudest level is adjusted by the
///   active fraction, `L − 20·log10(active / 400 ms)` (a window active throughout is not adjusted,
///   a partly active one counts as quieter), converted to linear amplitude `10^(−L/20)`, and
///   smoothed: `s += (linear − s)·α` with α = 2 / (N + 1), N = 2; a window less active sets s = 0.
///
/// Every 400 ms the room lists the streams whose smoothed level is at least that of −35 dBov
/// (`10^(−35/20)`), loudest first; the first is the dominant speaker, and with none listed nobody is.
/// Ties go to the stream that joined first.
///
/// Real-time safe: O(1) per stream per tick, O(streams) per decision, no allocation once a stream
/// has been seen.
final class LiveKitPolicy: FloorPolicy {
    private(set) var holder: Int?

    /// Hops per packet: levels arrive every 20 ms.
    static let hopsPerPacket = 2
    /// Window and decision interval, milliseconds.
    static let windowMilliseconds = 400
    /// A packet is active at this RFC 6464 level or louder (lower).
    static let activeLevel: UInt8 = 35
    /// Active share of a window needed to count, percent.
    static let minimumPercent = 40
    /// The exponential smoothing factor, 2 / (smooth_intervals + 1).
    static let smoothing = 2.0 / 3.0
    /// Linear amplitude of the active level: the threshold of the smoothed level.
    static let activeThreshold = pow(10, -Double(activeLevel) / 20)

    /// What the policy keeps of one stream.
    struct Stream {
        var packet = IntervalLevel()
        var observedMilliseconds = 0
        var activeMilliseconds = 0
        var loudest: UInt8 = 127
        var smoothed = 0.0
    }

    private var slots = StreamSlots()
    private var streams: [Stream] = []

    init() { streams.reserveCapacity(StreamSlots.defaultCapacity) }

    func update(
        now: Int, members: UnsafeBufferPointer<Int>, observation: (Int) -> SpeakerObservation
    ) -> (changed: Bool, holder: Int?) {
        let packetEnds = (now + 1) % Self.hopsPerPacket == 0
        let packetMilliseconds = Self.hopsPerPacket * 10
        for member in members.indices {
            let slot = position(of: members[member])
            streams[slot].packet.add(observation(member).level)
            if packetEnds { Self.observe(streams[slot].packet.take(), milliseconds: packetMilliseconds, &streams[slot]) }
        }
        guard (now + 1) % (Self.windowMilliseconds / 10) == 0 else { return (false, holder) }

        var loudest: Int? = nil
        var loudestLevel = Self.activeThreshold
        for index in members {
            let level = streams[position(of: index)].smoothed
            if level >= loudestLevel && (loudest == nil || level > loudestLevel) {
                loudest = index
                loudestLevel = level
            }
        }
        let changed = loudest != holder
        holder = loudest
        return (changed, holder)
    }

    /// The position of stream `index` in `streams`, with a fresh state if the stream is new.
    private func position(of index: Int) -> Int {
        let (slot, isNew) = slots.slot(for: index)
        if isNew { streams.reset(slot, to: Stream()) }
        return slot
    }

    func remove(_ index: Int) -> Bool {
        slots.remove(index)
        guard holder == index else { return false }
        holder = nil
        return true
    }

    /// Observes one packet of a stream; at the end of a 400 ms window, updates its smoothed level.
    private static func observe(_ level: UInt8, milliseconds: Int, _ stream: inout Stream) {
        stream.observedMilliseconds += milliseconds
        if level <= activeLevel {
            stream.activeMilliseconds += milliseconds
            stream.loudest = min(stream.loudest, level)
        }
        guard stream.observedMilliseconds >= windowMilliseconds else { return }
        if stream.activeMilliseconds >= minimumPercent * windowMilliseconds / 100 {
            // 0 dB when active throughout; a partly active window counts as quieter.
            let activityWeight = 20 * log10(Double(stream.activeMilliseconds) / Double(windowMilliseconds))
            let adjusted = Double(stream.loudest) - activityWeight
            let linear = pow(10, -adjusted / 20)
            stream.smoothed += (linear - stream.smoothed) * smoothing
        } else {
            stream.smoothed = 0
        }
        stream.loudest = 127
        stream.activeMilliseconds = 0
        stream.observedMilliseconds = 0
    }
}
