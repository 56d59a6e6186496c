import Foundation
import SpeakerCore

/// Dense slots for the streams of a room, found by the engine's stream index: a baseline policy keeps
/// its per-stream state in arrays indexed by slot.
///
/// A dictionary maps a stream index to its slot; the slot of a stream that left is reused by the next
/// one to join. Room for `capacity` streams is reserved up front, so storage grows only when a stream
/// joins a room that already has that many: looking up a known stream (a hash lookup) never allocates.
/// (The policies' state arrays are concrete, not generic, so that unspecialised debug builds do not
/// allocate when they are changed in place.)
struct StreamSlots {
    private var slotOfStream: [Int: Int]
    private var freeSlots: [Int]
    /// Slots handed out so far, in use or free: the length the state arrays need.
    private(set) var count = 0

    /// - Parameter capacity: streams to reserve room for.
    init(capacity: Int = StreamSlots.defaultCapacity) {
        slotOfStream = Dictionary(minimumCapacity: capacity)
        freeSlots = []
        freeSlots.reserveCapacity(capacity)
    }

    /// Streams a policy reserves room for.
    static let defaultCapacity = 32

    /// The slot of `stream`, and whether the stream is new (its state must then be reset).
    /// A new slot is `count − 1` after the call when no freed slot was reused.
    /// - Complexity: O(1); allocates only when a new stream exceeds the reserved capacity.
    mutating func slot(for stream: Int) -> (slot: Int, isNew: Bool) {
        if let slot = slotOfStream[stream] { return (slot, false) }
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
        } else {
            slot = count
            count += 1
        }
        slotOfStream[stream] = slot
        return (slot, true)
    }

    /// The slot of `stream`, or nil if it has none.
    func existingSlot(for stream: Int) -> Int? { slotOfStream[stream] }

    /// Forgets `stream`; its slot is reused by the next new stream.
    mutating func remove(_ stream: Int) {
        guard let slot = slotOfStream.removeValue(forKey: stream) else { return }
        freeSlots.append(slot)
    }
}

extension Array {
    /// Makes `slot` hold `initial`: appends it for a slot one past the end, else overwrites.
    /// - Precondition: `slot <= count`.
    mutating func reset(_ slot: Int, to initial: Element) {
        if slot == count {
            append(initial)
        } else {
            self[slot] = initial
        }
    }
}

/// The energy of one stream over several hops, reported as one RFC 6464 level: what a sender
/// packing several 10 ms hops into one RTP packet (or a server summarising an interval) reports.
struct IntervalLevel {
    private var meanSquareSum: Float = 0
    private var hops = 0

    /// Adds one hop given by its RFC 6464 level (127, digital silence, adds no energy).
    mutating func add(_ level: UInt8) {
        meanSquareSum += IntervalLevel.meanSquare(of: level)
        hops += 1
    }

    /// The level of the hops added since the last call (127 if none), and starts a new interval.
    mutating func take() -> UInt8 {
        defer {
            meanSquareSum = 0
            hops = 0
        }
        guard hops > 0 else { return 127 }
        return Levels.rfc6464Level(meanSquare: meanSquareSum / Float(hops))
    }

    /// The mean square (full scale 1.0) of a hop at RFC 6464 `level`: 10^(−level/10), 0 for 127.
    static func meanSquare(of level: UInt8) -> Float {
        level >= 127 ? 0 : exp2f(-Float(level) * 0.332_192_8)  // log2(10)/10 = 0.3321928
    }
}
