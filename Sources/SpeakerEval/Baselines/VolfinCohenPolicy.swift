import Foundation
import SpeakerCore

/// Baseline `volfin-cohen`: the three-time-scale dominant-speaker method of I. Volfin and I. Cohen,
/// "Dominant speaker identification for multipoint videoconferencing" (Computer Speech & Language
/// 27(4), 2013), in the form Jitsi's `DominantSpeakerIdentification` (jitsi-utils) and mediasoup's
/// `ActiveSpeakerObserver` use it: on RFC 6464 audio levels instead of frequency sub-bands.
/// Implemented from those descriptions, for comparison with our own policy.
///
/// Per stream, for every 20 ms packet (two hops, energies averaged, as an Opus sender would report):
/// 1. volume = 127 − level (0 silent … 127 loudest), kept for the last 50 packets (1 s);
/// 2. a noise floor: the lowest non-zero volume seen, raised slowly to √(floor · m), where m is the
///    lowest volume of the last 750 packets (15 s), whenever that many have passed above it;
/// 3. immediate score of a packet = ⌊volume / 10⌋ (0…12), or 0 when volume < floor + 10;
///    medium score of a block of 5 packets = count of immediates > 7 (0…5);
///    long score of the last 10 blocks (1 s) = count of blocks whose medium > 4 (0…10).
///
/// Every 300 ms a decision compares each stream with the holder on three speech-activity scores,
/// one per time scale: for the newest immediate (n = 13, λ = 0.78), the newest medium (n = 5,
/// λ = 24) and the long score (n = 10, λ = 47),
///
///     score(v) = ln C(n, v) + v·ln p + (n − v)·ln(1 − p) − ln λ + λ·v,  p = 0.5, at least 10⁻¹⁰,
///
/// the log of a binomial likelihood of v active sub-units out of n against an exponential prior.
/// A challenger takes the floor when ln(score_challenger / score_holder) exceeds 3, 2 and 0 on the
/// immediate, medium and long scales; among several, the one with the largest medium ratio wins.
/// With no holder, the first stream of the room is nominated and the others compete with it (the
/// original nominates an arbitrary one); a room with one stream has it as holder. The method never
/// names nobody (the later "silence" option of jitsi-utils is not modelled).
///
/// Real-time safe: per stream a fixed 64-byte ring of volumes; per tick O(streams), per decision
/// O(50 · streams) integer work and table lookups; no allocation once a stream has been seen.
final class VolfinCohenPolicy: FloorPolicy {
    private(set) var holder: Int?

    /// Hops per packet: levels arrive every 20 ms.
    static let hopsPerPacket = 2
    /// Ticks between decisions: 300 ms.
    static let decisionInterval = 30
    /// Packets remembered: 10 blocks of 5.
    static let historyLength = 50
    /// Packets after which the noise floor may rise: 15 s of 20 ms packets.
    static let floorWindow = 750

    /// What the policy keeps of one stream.
    struct Speaker {
        /// Ring of the last 50 packet volumes (a SIMD vector used as a fixed inline buffer).
        var volumes = SIMD64<UInt8>()
        /// Index in `volumes` of the newest packet.
        var newest = 0
        /// The noise floor as a volume; 0 while not yet known.
        var floor = 0
        /// The lowest volume since the floor was last set, and how many packets that covers.
        var candidateFloor = 0
        var candidatePackets = 0
        /// The energy of the packet being gathered.
        var packet = IntervalLevel()
    }

    private var slots = StreamSlots()
    private var speakers: [Speaker] = []
    private let immediateScores: [Double]
    private let mediumScores: [Double]
    private let longScores: [Double]

    init() {
        speakers.reserveCapacity(StreamSlots.defaultCapacity)
        immediateScores = (0...13).map { Self.activityScore(active: $0, of: 13, lambda: 0.78) }
        mediumScores = (0...5).map { Self.activityScore(active: $0, of: 5, lambda: 24) }
        longScores = (0...10).map { Self.activityScore(active: $0, of: 10, lambda: 47) }
    }

    /// The speech activity score of `active` active sub-units out of `count`:
    /// ln C(n, v) + v·ln p + (n − v)·ln(1 − p) − ln λ + λ·v with p = 0.5, at least 10⁻¹⁰ (it is
    /// divided by and its logarithm taken).
    static func activityScore(active v: Int, of n: Int, lambda: Double) -> Double {
        var binomial = 1.0
        for i in 0..<v { binomial = binomial * Double(n - i) / Double(i + 1) }
        let p = 0.5
        let score = log(binomial) + Double(v) * log(p) + Double(n - v) * log(1 - p) - log(lambda) + lambda * Double(v)
        return max(score, 1e-10)
    }

    func update(
        now: Int, members: UnsafeBufferPointer<Int>, observation: (Int) -> SpeakerObservation
    ) -> (changed: Bool, holder: Int?) {
        let packetEnds = (now + 1) % Self.hopsPerPacket == 0
        for member in members.indices {
            let slot = position(of: members[member])
            speakers[slot].packet.add(observation(member).level)
            if packetEnds { Self.push(127 - Int(speakers[slot].packet.take()), into: &speakers[slot]) }
        }
        guard (now + 1) % Self.decisionInterval == 0, !members.isEmpty else { return (false, holder) }

        let previous = holder
        if members.count == 1 {
            holder = members[0]
        } else {
            // With no holder, nominate the first member and let the others compete with it.
            let nominated = holder ?? members[0]
            let held = scores(of: speakers[position(of: nominated)])
            var winner = nominated
            var bestMedium = 2.0
            for index in members where index != nominated {
                let challenger = scores(of: speakers[position(of: index)])
                let immediate = log(challenger.immediate / held.immediate)
                let medium = log(challenger.medium / held.medium)
                let long = log(challenger.long / held.long)
                if immediate > 3 && medium > 2 && long > 0 && medium > bestMedium {
                    bestMedium = medium
                    winner = index
                }
            }
            holder = winner
        }
        return (holder != previous, holder)
    }

    /// The position of stream `index` in `speakers`, with a fresh state if the stream is new.
    private func position(of index: Int) -> Int {
        let (slot, isNew) = slots.slot(for: index)
        if isNew { speakers.reset(slot, to: Speaker()) }
        return slot
    }

    func remove(_ index: Int) -> Bool {
        slots.remove(index)
        guard holder == index else { return false }
        holder = nil
        return true
    }

    /// Records one packet's volume (0…127) and tracks the noise floor.
    private static func push(_ volume: Int, into speaker: inout Speaker) {
        speaker.newest = (speaker.newest + 1) % historyLength
        speaker.volumes[speaker.newest] = UInt8(volume)
        // Silent packets (volume 0) say nothing about the noise floor.
        guard volume > 0 else { return }
        if speaker.floor == 0 || volume < speaker.floor {
            speaker.floor = volume
            speaker.candidateFloor = 0
            speaker.candidatePackets = 0
            return
        }
        // Above the floor: it may be out of date. Track the lowest volume over the next 750 packets
        // and then move the floor to the geometric mean of the two (a slow rise).
        if speaker.candidateFloor == 0 || volume < speaker.candidateFloor { speaker.candidateFloor = volume }
        speaker.candidatePackets += 1
        if speaker.candidatePackets >= floorWindow {
            speaker.floor = min(127, Int((Double(speaker.floor) * Double(speaker.candidateFloor)).squareRoot()))
            speaker.candidateFloor = 0
            speaker.candidatePackets = 0
        }
    }

    /// The three speech-activity scores of a stream now.
    private func scores(of speaker: Speaker) -> (immediate: Double, medium: Double, long: Double) {
        let gate = speaker.floor + 10
        /// The immediate score of the packet `age` packets before the newest.
        func immediate(_ age: Int) -> Int {
            let volume = Int(speaker.volumes[(speaker.newest - age + Self.historyLength) % Self.historyLength])
            return volume < gate ? 0 : volume / 10
        }
        var newestMedium = 0
        var long = 0
        for block in 0..<(Self.historyLength / 5) {
            var medium = 0
            for age in (5 * block)..<(5 * block + 5) where immediate(age) > 7 { medium += 1 }
            if block == 0 { newestMedium = medium }
            if medium > 4 { long += 1 }
        }
        return (immediateScores[immediate(0)], mediumScores[newestMedium], longScores[long])
    }
}
