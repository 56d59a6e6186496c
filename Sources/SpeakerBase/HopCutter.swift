/// Cuts blocks of any size (a device period, a resampler's output) into 10 ms hops, in order.
///
/// `append` a block, then take every whole hop with `pull` (or `next`) before appending the next one: the
/// cutter holds at most `capacity` samples. As a `HopSource` it gives `.audio` while a whole hop is held and
/// `.silence` otherwise, so a runner ticked once per `hopsAvailable` plays every sample exactly once.
///
/// ```swift
/// let cutter = HopCutter(capacity: resampler.outputCapacity(forInputCount: 960))
/// cutter.append(block)
/// while cutter.hopsAvailable > 0 { runner.tick() }   // the runner pulls the cutter
/// ```
///
/// After `init` nothing allocates. Not thread-safe: one thread feeds and pulls it.
public final class HopCutter: HopSource {
    /// The most samples one `append` may add beyond a part hop left over.
    public let capacity: Int
    private let pending: UnsafeMutableBufferPointer<Float>
    private var start = 0
    private var count = 0

    /// - Parameter capacity: The largest block `append` takes (a partial hop may be left from before).
    public init(capacity: Int) {
        precondition(capacity > 0, "a block holds samples")
        self.capacity = capacity
        pending = .allocate(capacity: capacity + AnalysisFormat.hopSize)
        pending.initialize(repeating: 0)
    }

    deinit { pending.deallocate() }

    /// Whole hops held, ready to take.
    public var hopsAvailable: Int { count / AnalysisFormat.hopSize }

    /// Samples held beyond the whole hops (less than a hop once the hops are taken).
    public var remainder: Int { count % AnalysisFormat.hopSize }

    /// Adds a block after the samples held.
    /// - Precondition: the whole hops held were taken, and `block.count <= capacity`.
    /// - Complexity: O(block + part hop held). Allocates nothing.
    public func append(_ block: UnsafeBufferPointer<Float>) {
        // Move the part hop left over to the front, then the block after it.
        let base = pending.baseAddress!
        if start > 0 {
            base.update(from: base + start, count: count)
            start = 0
        }
        precondition(count + block.count <= pending.count, "the cutter holds whole hops not taken, or the block is over its capacity")
        if let source = block.baseAddress { (base + count).update(from: source, count: block.count) }
        count += block.count
    }

    /// Takes the next whole hop into `hop`, if one is held.
    /// - Returns: false when less than a hop is held.
    /// - Complexity: O(hop). Allocates nothing.
    public func next(into hop: UnsafeMutableBufferPointer<Float>) -> Bool {
        precondition(hop.count == AnalysisFormat.hopSize, "a hop is AnalysisFormat.hopSize samples")
        guard count >= AnalysisFormat.hopSize else { return false }
        hop.baseAddress!.update(from: pending.baseAddress! + start, count: AnalysisFormat.hopSize)
        start += AnalysisFormat.hopSize
        count -= AnalysisFormat.hopSize
        return true
    }

    /// The next whole hop (`.audio`), or `.silence` when less than a hop is held. The tick is not used:
    /// the cutter's clock is the samples appended.
    public func pull(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> HopPull {
        next(into: hop) ? .audio : .silence
    }
}
