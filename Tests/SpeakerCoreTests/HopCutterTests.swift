import Testing
import TestSupport
@testable import SpeakerCore

/// `HopCutter`: blocks of any size give the same hops, in order, every sample once.
@Suite struct HopCutterTests {
    /// Cuts `signal` appended in blocks of `blockSize`, taking every whole hop after each block.
    static func hops(of signal: [Float], blockSize: Int) -> [[Float]] {
        let cutter = HopCutter(capacity: blockSize)
        var hops: [[Float]] = []
        var hop = [Float](repeating: 0, count: AnalysisFormat.hopSize)
        signal.withUnsafeBufferPointer { signal in
            var start = 0
            while start < signal.count {
                let end = min(start + blockSize, signal.count)
                cutter.append(UnsafeBufferPointer(rebasing: signal[start..<end]))
                start = end
                while cutter.hopsAvailable > 0 {
                    let pulled = hop.withUnsafeMutableBufferPointer { cutter.pull(tick: hops.count, into: $0) }
                    #expect(pulled == .audio)
                    hops.append(hop)
                }
                #expect(cutter.remainder == start % AnalysisFormat.hopSize)
                #expect(hop.withUnsafeMutableBufferPointer { cutter.pull(tick: hops.count, into: $0) } == .silence)
            }
        }
        return hops
    }

    @Test func everyBlockSizeGivesTheSameHops() {
        // 20,000 samples: 125 whole hops; block sizes 1…961 cover hop multiples, primes, and a 48 kHz
        // 20 ms frame resampled to 16 kHz (320) and one past it.
        let signal = Synthesis.noise(seconds: 1.25, levelDBFS: -20, seed: 3)
        let expected = stride(from: 0, to: signal.count - AnalysisFormat.hopSize + 1, by: AnalysisFormat.hopSize).map {
            Array(signal[$0..<$0 + AnalysisFormat.hopSize])
        }
        #expect(expected.count == 125)
        for blockSize in 1...961 {
            let hops = Self.hops(of: signal, blockSize: blockSize)
            #expect(hops == expected, "block size \(blockSize)")
            if hops != expected { break }
        }
    }

    @Test func nextTakesOnlyWholeHops() {
        let cutter = HopCutter(capacity: 100)
        var hop = [Float](repeating: -1, count: AnalysisFormat.hopSize)
        let block = (0..<100).map(Float.init)
        block.withUnsafeBufferPointer { cutter.append($0) }
        #expect(!hop.withUnsafeMutableBufferPointer { cutter.next(into: $0) })
        #expect(hop[0] == -1, "nothing written without a whole hop")
        block.withUnsafeBufferPointer { cutter.append($0) }
        #expect(cutter.hopsAvailable == 1)
        #expect(hop.withUnsafeMutableBufferPointer { cutter.next(into: $0) })
        #expect(Array(hop[..<100]) == block)
        #expect(Array(hop[100...]) == Array(block[..<60]))
        #expect(cutter.remainder == 40)
    }
}
