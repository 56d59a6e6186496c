internal import CSoxr
import SpeakerBase

/// A streaming mono sample-rate converter over libsoxr (by default `SOXR_HQ`: 20-bit precision, linear
/// phase, pass band flat to 0.01 dB up to 91.3 % of the lower Nyquist frequency, stop band from 100 %;
/// `Quality.lowLatency` for live capture).
///
/// Output stays time-aligned with input: libsoxr drops its own filter delay, so output sample `k` belongs to
/// input time `k / outputRate` seconds. In streaming use the output is only *delivered* later: `latency`
/// output samples are held inside until more input (or `flush`) pushes them out.
///
/// Not thread-safe: one instance per stream, used from one thread at a time.
public final class Resampler {
    /// Input samples per second (> 0).
    public let inputRate: Int
    /// Output samples per second (> 0).
    public let outputRate: Int
    /// The filter quality.
    public let quality: Quality

    /// Filter quality against delivery delay.
    ///
    /// Output is time-aligned in both (sample `k` belongs to input time `k / outputRate`); what differs
    /// is how long libsoxr holds samples back in streaming use. Measured here, 48 kHz → 16 kHz fed in
    /// 10 ms blocks: an impulse comes out two blocks (20 ms) after it went in with `.high`, one block
    /// (10 ms) with `.lowLatency`.
    public enum Quality: Sendable, Equatable {
        /// `SOXR_HQ`: 20-bit precision, linear phase, flat to 0.01 dB up to 91.3 % of Nyquist. For files.
        case high
        /// `SOXR_LQ`: 16-bit precision, linear phase, a wider transition band. Ample for speech
        /// analysis; for live capture, where every 10 ms of delay counts.
        case lowLatency
    }

    private let handle: OpaquePointer

    /// Creates a resampler from `inputRate` to `outputRate`.
    ///
    /// The corresponding C function is `soxr_create`.
    ///
    /// - Parameters:
    ///   - inputRate: Input samples per second, > 0 (any value, e.g. 8000, 11025, 44100, 96000).
    ///   - outputRate: Output samples per second, > 0; 16000 (the engine's rate) by default.
    ///   - quality: `.high` (default) or `.lowLatency` for live capture.
    /// - Throws: `.resamplerFailed(operation: "soxr_create")` if libsoxr refuses the configuration.
    public init(inputRate: Int, outputRate: Int = AnalysisFormat.sampleRate, quality: Quality = .high) throws {
        precondition(inputRate > 0 && outputRate > 0, "sample rates must be positive")
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.quality = quality
        var ioSpec = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var qualitySpec = soxr_quality_spec(UInt(quality == .high ? SOXR_HQ : SOXR_LQ), 0)
        var runtimeSpec = soxr_runtime_spec(1)
        var error: soxr_error_t?
        let handle = soxr_create(
            Double(inputRate), Double(outputRate), 1, &error, &ioSpec, &qualitySpec, &runtimeSpec)
        guard let handle, error == nil else {
            if let handle { soxr_delete(handle) }
            throw SpeakerIOError(
                .processor("resampler \(inputRate)→\(outputRate) Hz"), .resamplerFailed(operation: "soxr_create"),
                library: "libsoxr", libraryMessage: error.map { String(cString: $0) } ?? "no resampler")
        }
        self.handle = handle
    }

    deinit {
        soxr_delete(handle)
    }

    /// Output samples accepted as input but not yet delivered (fractional; 0 before the first input).
    ///
    /// For 48 kHz → 16 kHz this settles near 340 samples (≈ 21 ms). The corresponding C function is `soxr_delay`.
    public var latency: Double { soxr_delay(handle) }

    /// An output size that receives everything `process` can deliver for `inputCount` more input samples,
    /// given the current `latency`.
    public func outputCapacity(forInputCount inputCount: Int) -> Int {
        Int((Double(inputCount) * Double(outputRate) / Double(inputRate) + latency).rounded(.up)) + 2
    }

    /// Resamples the next block of a stream into a caller-owned buffer.
    ///
    /// All of `input` is always taken. Output that does not fit in `output` stays inside and comes out on later
    /// calls, so nothing is lost; give `outputCapacity(forInputCount:)` samples to keep latency minimal.
    /// The corresponding C function is `soxr_process`.
    ///
    /// - Parameters:
    ///   - input: Samples at `inputRate`, any count (0 is fine).
    ///   - output: Receives samples at `outputRate`.
    /// - Returns: Samples written to the front of `output`.
    /// - Complexity: O(`input.count` + output written). Real-time safe after the first calls: no allocation
    ///   in this wrapper, no lock, no throw.
    public func process(_ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Float>) -> Int {
        var written = 0
        // An empty non-NULL input: soxr treats a NULL input as end of stream.
        let error = withUnsafePointer(to: Float(0)) { placeholder in
            soxr_process(
                handle, input.baseAddress ?? placeholder, input.count, nil,
                output.baseAddress, output.count, &written)
        }
        precondition(error == nil, "soxr_process: \(String(cString: error!))")
        return written
    }

    /// Resamples the next block of a stream, returning new output (allocates the result).
    public func process(_ input: [Float]) -> [Float] {
        var output = [Float](repeating: 0, count: outputCapacity(forInputCount: input.count))
        let written = input.withUnsafeBufferPointer { inputBuffer in
            output.withUnsafeMutableBufferPointer { process(inputBuffer, into: $0) }
        }
        output.removeLast(output.count - written)
        return output
    }

    /// Ends the stream and delivers the held samples; call until it returns 0. Then `reset()` before reuse.
    ///
    /// The corresponding C function is `soxr_process` with a NULL input.
    ///
    /// - Returns: Samples written to the front of `output`.
    public func flush(into output: UnsafeMutableBufferPointer<Float>) -> Int {
        var written = 0
        let error = soxr_process(handle, nil, 0, nil, output.baseAddress, output.count, &written)
        precondition(error == nil, "soxr_process: \(String(cString: error!))")
        return written
    }

    /// Ends the stream and returns all held samples. Then `reset()` before reuse.
    public func flush() -> [Float] {
        var tail: [Float] = []
        var chunk = [Float](repeating: 0, count: Int(latency.rounded(.up)) + 64)
        while true {
            let written = chunk.withUnsafeMutableBufferPointer { flush(into: $0) }
            if written == 0 { return tail }
            tail += chunk[..<written]
        }
    }

    /// Forgets all state so a new stream can start, with the same rates. The corresponding C function is `soxr_clear`.
    public func reset() {
        let error = soxr_clear(handle)
        precondition(error == nil, "soxr_clear: \(String(cString: error!))")
    }
}

@available(*, unavailable, message: "Resampler wraps one soxr_t, which libsoxr does not share between threads")
extension Resampler: Sendable {}

extension Resampler {
    /// Resamples a whole signal at once, time-aligned: output sample `i` belongs to input time `i / outputRate`.
    ///
    /// The result has exactly `round(samples.count × outputRate / inputRate)` samples: the stream is flushed so
    /// the last `latency` samples are not lost, and any rounding excess is cut.
    ///
    /// - Parameters:
    ///   - samples: Mono input at `inputRate`.
    ///   - inputRate: Samples per second of `samples`, > 0.
    ///   - outputRate: Wanted samples per second, > 0. Equal rates return `samples` unchanged.
    /// - Throws: `.resamplerFailed` if libsoxr refuses the rates.
    /// - Complexity: O(n) time; about twice the output in memory.
    public static func resample(_ samples: [Float], from inputRate: Int, to outputRate: Int) throws -> [Float] {
        if inputRate == outputRate { return samples }
        let resampler = try Resampler(inputRate: inputRate, outputRate: outputRate)
        let expectedCount = Int(
            (Double(samples.count) * Double(outputRate) / Double(inputRate)).rounded(.toNearestOrEven))
        var output: [Float] = []
        output.reserveCapacity(expectedCount + 64)
        let blockSize = 1 << 16
        var block = [Float](repeating: 0, count: resampler.outputCapacity(forInputCount: blockSize) + 4096)
        samples.withUnsafeBufferPointer { all in
            var start = 0
            while start < all.count {
                let end = min(start + blockSize, all.count)
                let written = block.withUnsafeMutableBufferPointer {
                    resampler.process(UnsafeBufferPointer(rebasing: all[start..<end]), into: $0)
                }
                output += block[..<written]
                start = end
            }
        }
        output += resampler.flush()
        if output.count > expectedCount {
            output.removeLast(output.count - expectedCount)
        } else if output.count < expectedCount {
            output += repeatElement(0, count: expectedCount - output.count)
        }
        return output
    }
}
