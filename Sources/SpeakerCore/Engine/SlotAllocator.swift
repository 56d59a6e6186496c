/// Slots of an array whose elements come and go (the engine's streams and rooms): a freed slot is
/// given to the next element, last freed first, with its generation counted up, so that an id made
/// of slot and generation never names a later element.
struct SlotAllocator {
    /// The next generation of each slot ever handed out.
    private var generations: [UInt32] = []
    private var occupied: [Bool] = []
    private var freeSlots: [Int] = []

    /// Slots handed out at some time: the length the backing array needs.
    var capacity: Int { generations.count }
    /// Slots in use.
    var inUse: Int { generations.count - freeSlots.count }

    /// A slot for a new element, and the element's generation. A slot equal to `capacity` before the
    /// call is new: the backing array must grow by one.
    mutating func take() -> (slot: Int, generation: UInt32) {
        if let slot = freeSlots.popLast() {
            occupied[slot] = true
            return (slot, generations[slot])
        }
        generations.append(0)
        occupied.append(true)
        return (generations.count - 1, 0)
    }

    /// Gives a slot back. Its next element gets the next generation (wrapping after 2^32 uses).
    /// - Precondition: the slot is in use.
    mutating func free(_ slot: Int) {
        precondition(slot >= 0 && slot < generations.count && occupied[slot], "slot \(slot) is not in use")
        occupied[slot] = false
        generations[slot] &+= 1
        freeSlots.append(slot)
    }
}
