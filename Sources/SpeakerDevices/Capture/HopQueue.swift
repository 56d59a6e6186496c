import Dispatch
import Synchronization

/// A fixed-size queue of hop blocks from one producer thread to one consumer thread, without locks
/// and without allocation after `init`.
///
/// A block is `blockSize` floats (all channels of one hop, channel after channel). The producer
/// (`push`) owns `tail`, the consumer (`pop`) owns `head`; each publishes its index with a release
/// store and reads the other's with an acquire load, so a block is completely written before the
/// consumer can see it. Semaphores wake a waiting consumer (a block arrived) or producer (a block was
/// taken); wake-ups without a change are harmless, as both sides check the indices again.
final class HopQueue: @unchecked Sendable {
    // @unchecked Sendable: the storage is written only by the producer between `tail` loads and
    // stores, and read only by the consumer between `head` loads and stores (single producer, single
    // consumer, as documented); the atomics order the accesses.

    /// Floats per block.
    let blockSize: Int
    /// Blocks the queue holds.
    let capacity: Int

    private let storage: UnsafeMutablePointer<Float>
    private let head = Atomic<Int>(0)
    private let tail = Atomic<Int>(0)
    private let signal = DispatchSemaphore(value: 0)
    private let space = DispatchSemaphore(value: 0)

    init(blockSize: Int, capacity: Int) {
        precondition(blockSize > 0 && capacity > 1, "a queue needs room")
        self.blockSize = blockSize
        self.capacity = capacity
        storage = .allocate(capacity: blockSize * capacity)
        storage.initialize(repeating: 0, count: blockSize * capacity)
    }

    deinit {
        storage.deallocate()
    }

    /// Blocks waiting to be popped.
    var count: Int { tail.load(ordering: .acquiring) - head.load(ordering: .acquiring) }

    /// Appends a block; returns false (and drops it) when the queue is full. Producer only; real-time safe.
    func push(_ block: UnsafeBufferPointer<Float>) -> Bool {
        precondition(block.count == blockSize, "a block is \(blockSize) floats")
        let tail = self.tail.load(ordering: .relaxed)
        guard tail - head.load(ordering: .acquiring) < capacity else { return false }
        (storage + (tail % capacity) * blockSize).update(from: block.baseAddress!, count: blockSize)
        self.tail.store(tail + 1, ordering: .releasing)
        signal.signal()
        return true
    }

    /// Wakes a consumer waiting in `wait` without a block (to tell it the producer stopped).
    func wake() { signal.signal() }

    /// Takes the oldest block into `block`; returns false if the queue is empty. Consumer only.
    func pop(into block: UnsafeMutableBufferPointer<Float>) -> Bool {
        precondition(block.count == blockSize, "a block is \(blockSize) floats")
        let head = self.head.load(ordering: .relaxed)
        guard tail.load(ordering: .acquiring) > head else { return false }
        block.baseAddress!.update(from: storage + (head % capacity) * blockSize, count: blockSize)
        self.head.store(head + 1, ordering: .releasing)
        space.signal()
        return true
    }

    /// Waits until a block may have been popped, at most `timeout` seconds. Producer only.
    func waitForSpace(timeout: Double) {
        _ = space.wait(timeout: .now() + timeout)
    }

    /// Waits until a block may be there, at most `timeout` seconds. Consumer only.
    func wait(timeout: Double) {
        _ = signal.wait(timeout: .now() + timeout)
    }
}
