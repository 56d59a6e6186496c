import Foundation
import SpeakerCore

/// Baseline `chime`: the Amazon Chime SDK's `DefaultActiveSpeakerPolicy` with its defaults
/// (speakerWeight 0.9, cutoffThreshold 0.01, silenceThreshold 0.2, takeoverRate 0.2), fed as the
/// SDK's `DefaultVolumeIndicatorAdapter` and `DefaultActiveSpeakerDetector` feed it.
/// Implemented from those descriptions (amazon-chime-sdk-js), for comparison with our own policy.
///
/// Every update (100 ms here: the media server chooses the rate; the SDK does not fix it), each
/// stream in the order it joined gets its volume: the RFC 6464 level L of the interval (energies of
/// its hops averaged), normalised between −42 and −14 dBov as `(42 − L) / 28`, clipped to 0…1. Then:
/// - x = 1 if the volume is above 0.2 (louder than about −36.4 dBov), else 0;
/// - its score S = 0.9·S + 0.1·x, and every other stream's score drops by 0.2·x (not below 0);
/// - its reported score is S, or 0 when S < 0.01.
/// The active-speaker list holds the streams with a reported score above 0, highest first; the
/// first is the dominant speaker, nobody when the list is empty. Like the SDK's detector, the list is
/// re-sorted only when a stream enters or leaves it, so the order (and the dominant speaker) can lag
/// behind the scores. A silent speaker leaves only after about 44 updates, 0.9⁴⁴ ≈ 0.01
/// (amazon-chime-sdk-js#1132), unless someone else speaks.
///
/// Real-time safe: O(streams) per tick and O(streams²) per update (the takeover step), no
/// allocation once a stream has been seen.
final class ChimePolicy: FloorPolicy {
    private(set) var holder: Int?

    /// Ticks between volume updates: 100 ms.
    static let updateInterval = 10
    static let speakerWeight = 0.9
    static let cutoffThreshold = 0.01
    static let silenceThreshold = 0.2
    static let takeoverRate = 0.2

    /// What the policy keeps of one stream.
    struct Attendee {
        var interval = IntervalLevel()
        /// The policy's score, 0…1.
        var score = 0.0
        /// The score last reported to the detector (0 below the cutoff).
        var reported = 0.0
        /// Whether the detector's active-speaker list holds the stream.
        var listed = false
    }

    private var slots = StreamSlots()
    private var attendees: [Attendee] = []

    init() { attendees.reserveCapacity(StreamSlots.defaultCapacity) }
    /// The detector has not built its list yet, or a listed stream left: re-sort at the next update.
    private var needsSort = true

    /// The normalised volume (0…1) of an RFC 6464 level, as the SDK's volume adapter computes it
    /// with its bounds of −42 and −14 dBov.
    static func normalizedVolume(level: UInt8) -> Double {
        min(max((42 - Double(level)) / 28, 0), 1)
    }

    func update(
        now: Int, members: UnsafeBufferPointer<Int>, observation: (Int) -> SpeakerObservation
    ) -> (changed: Bool, holder: Int?) {
        for member in members.indices {
            let slot = position(of: members[member])
            attendees[slot].interval.add(observation(member).level)
        }
        guard (now + 1) % Self.updateInterval == 0 else { return (false, holder) }

        let previous = holder
        for index in members {
            let slot = position(of: index)
            let volume = Self.normalizedVolume(level: attendees[slot].interval.take())
            let x = volume > Self.silenceThreshold ? 1.0 : 0.0
            let score = attendees[slot].score * Self.speakerWeight + x * (1 - Self.speakerWeight)
            attendees[slot].score = score
            if x > 0 {
                for other in members where other != index {
                    let otherSlot = position(of: other)
                    attendees[otherSlot].score = max(attendees[otherSlot].score - Self.takeoverRate * x, 0)
                }
            }
            let reported = score < Self.cutoffThreshold ? 0 : score
            guard reported != attendees[slot].reported else { continue }
            attendees[slot].reported = reported
            // The detector re-sorts only when a stream enters or leaves the list.
            if needsSort || (reported == 0) == attendees[slot].listed {
                sort(members)
            }
        }
        if needsSort { sort(members) }
        return (holder != previous, holder)
    }

    /// The position of stream `index` in `attendees`, with a fresh state if the stream is new.
    private func position(of index: Int) -> Int {
        let (slot, isNew) = slots.slot(for: index)
        if isNew { attendees.reset(slot, to: Attendee()) }
        return slot
    }

    func remove(_ index: Int) -> Bool {
        if let slot = slots.existingSlot(for: index), attendees[slot].listed { needsSort = true }
        slots.remove(index)
        guard holder == index else { return false }
        holder = nil
        return true
    }

    /// Rebuilds the active-speaker list from the reported scores: the highest is the holder.
    private func sort(_ members: UnsafeBufferPointer<Int>) {
        needsSort = false
        var best: Int? = nil
        var bestScore = 0.0
        for index in members {
            let slot = position(of: index)
            let reported = attendees[slot].reported
            attendees[slot].listed = reported > 0
            if reported > bestScore {
                bestScore = reported
                best = index
            }
        }
        holder = best
    }
}
