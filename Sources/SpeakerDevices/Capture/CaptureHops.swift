import SpeakerBase

/// An `AudioCapture`'s channels as hop sources: `next(timeout:)` takes the next hop block (one 10 ms hop of
/// every selected channel), then each channel's source (`channel(_:)`) gives its hop of that block when pulled.
///
/// ```swift
/// let hops = CaptureHops(capture)
/// for row in capture.channels.indices { runner.add(hops.channel(row), name: "ch\(row + 1)") }
/// while hops.next(timeout: 0.1) == .hop { runner.tick() }
/// ```
///
/// After `init`, `next` and the sources' `pull` allocate nothing. Not thread-safe: the thread that takes the
/// blocks pulls the sources.
public final class CaptureHops {
    /// The capture the blocks come from.
    public let capture: AudioCapture
    private let block: UnsafeMutableBufferPointer<Float>

    /// - Precondition: the capture's hops are `AnalysisFormat.hopSize` samples (its default).
    public init(_ capture: AudioCapture) {
        precondition(capture.hopSize == AnalysisFormat.hopSize, "the capture's hops are AnalysisFormat.hopSize samples")
        self.capture = capture
        block = .allocate(capacity: capture.hopBlockSize)
        block.initialize(repeating: 0)
    }

    deinit { block.deallocate() }

    /// Takes the next hop block (`AudioCapture.nextHop`); the channels' sources give it until the next call.
    /// - Parameter timeout: Seconds to wait for a block.
    /// - Returns: `.hop`, `.timedOut` (capture still running), or `.finished`.
    public func next(timeout: Double) -> AudioCapture.HopStatus {
        capture.nextHop(into: block, timeout: timeout)
    }

    /// The hop source of selected channel `row` (an index into `capture.channels`).
    public func channel(_ row: Int) -> any HopSource {
        precondition(capture.channels.indices.contains(row), "row \(row) is not a selected channel")
        return Channel(hops: self, row: row)
    }

    /// One row of the block.
    private final class Channel: HopSource {
        let hops: CaptureHops
        let row: Int

        init(hops: CaptureHops, row: Int) {
            self.hops = hops
            self.row = row
        }

        /// The channel's hop of the last block taken: always `.audio` (a capture ends through `next`).
        func pull(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> HopPull {
            let start = row * AnalysisFormat.hopSize
            _ = hop.update(fromContentsOf: UnsafeBufferPointer(rebasing: hops.block[start..<start + AnalysisFormat.hopSize]))
            return .audio
        }
    }
}
