import SpeakerCore

/// Baseline `loudest`: the simplest rule a mixer can apply, the loudest stream with a 300 ms hold
/// (in the manner of classic MCU "voice-activated switching"). For comparison with our own policy.
///
/// Each hop, the candidate is the stream with the loudest RFC 6464 level (the lowest number);
/// streams at 127 (digital silence) never are, and when all are silent the candidate is nobody.
/// Ties go to the stream that joined first. The candidate takes the floor once it has been the
/// candidate for 300 ms in a row, so a louder burst shorter than that never switches it; nobody
/// takes it after 300 ms of digital silence everywhere. There is no noise gate: in a pause the
/// stream with the loudest background noise is the loudest stream.
///
/// Real-time safe: O(streams) per tick, no state per stream, no allocation.
final class LoudestPolicy: FloorPolicy {
    private(set) var holder: Int?

    /// Hops a candidate must stay the loudest before it takes the floor: 300 ms.
    static let holdTicks = 30

    /// The candidate (nil: nobody) while it is not the holder, and for how many hops in a row it
    /// has been the candidate.
    private var challenger: Int?
    private var challengerTicks = 0

    func update(
        now: Int, members: UnsafeBufferPointer<Int>, observation: (Int) -> SpeakerObservation
    ) -> (changed: Bool, holder: Int?) {
        var loudest: Int? = nil
        var loudestLevel: UInt8 = 127
        for member in members.indices {
            let level = observation(member).level
            if level < loudestLevel {
                loudestLevel = level
                loudest = members[member]
            }
        }
        guard loudest != holder else {
            challengerTicks = 0
            return (false, holder)
        }
        if loudest == challenger && challengerTicks > 0 {
            challengerTicks += 1
        } else {
            challenger = loudest
            challengerTicks = 1
        }
        guard challengerTicks >= Self.holdTicks else { return (false, holder) }
        holder = challenger
        challengerTicks = 0
        return (true, holder)
    }

    func remove(_ index: Int) -> Bool {
        if challenger == index { challengerTicks = 0 }
        guard holder == index else { return false }
        holder = nil
        return true
    }
}
