import Foundation
import Testing
@testable import SpeakerIO

/// Raw PCM arriving in chunks, played a fixed delay behind.
@Suite struct PCMHopSourceTests {
    /// `values` as s16le bytes.
    static func bytes(_ values: [Int16]) -> [UInt8] {
        values.flatMap { value -> [UInt8] in
            let bits = UInt16(bitPattern: value)
            return [UInt8(bits & 0xFF), UInt8(bits >> 8)]
        }
    }

    static func pull(_ source: PCMHopSource, tick: Int = 0) -> (HopPull, [Float]) {
        var hop = [Float](repeating: 0, count: AnalysisFormat.hopSize)
        let result = hop.withUnsafeMutableBufferPointer { source.pull(tick: tick, into: $0) }
        return (result, hop)
    }

    @Test func playsAfterTheDelayInOrderAcrossCutSamplesAndAveragesChannels() throws {
        // 16 kHz stereo: no resampling; left and right average.
        let source = try PCMHopSource(sampleRate: 16000, channels: 2, playoutDelay: 0.02)
        var interleaved: [Int16] = []
        for index in 0..<480 { interleaved += [Int16(index * 10), Int16(index * 10 + 4)] }
        let all = Self.bytes(interleaved)
        // Chunks that cut samples and frames in two.
        source.append(Array(all[0..<3]))
        source.append(Array(all[3..<641]))
        #expect(Self.pull(source).0 == .silence, "160 samples queued, 320 needed to start")
        source.append(Array(all[641...]))
        let (first, hop) = Self.pull(source)
        #expect(first == .audio)
        for index in 0..<160 { #expect(abs(hop[index] - Float(index * 10 + 2) / 32768) < 1e-6) }
        #expect(Self.pull(source).0 == .audio && Self.pull(source).0 == .audio)
        // 480 queued, 3 hops played: the fourth is an underrun.
        #expect(Self.pull(source).0 == .silence)
        #expect(source.underruns == 1)
    }

    @Test func aBurstIsCutBackToTheDelayAndTheEndPlaysOut() throws {
        let source = try PCMHopSource(sampleRate: 16000, channels: 1, playoutDelay: 0.1)
        // 1 s at once: more than 0.1 + 0.5 s queued, cut back to 0.1 s.
        source.append(Self.bytes([Int16](repeating: 1000, count: 16000)))
        #expect(Self.pull(source).0 == .audio)
        #expect(source.droppedSamples == 16000 - 1600)
        source.finish()
        var played = 1
        while Self.pull(source).0 == .audio { played += 1 }
        #expect(played == 10, "0.1 s of hops")
        #expect(Self.pull(source).0 == .ended)
    }

    @Test func fortyEightKilohertzIsResampledToTheAnalysisRate() throws {
        let source = try PCMHopSource(sampleRate: 48000, channels: 1, playoutDelay: 0.05)
        // 0.5 s of a 440 Hz tone at 48 kHz, in 20 ms chunks.
        let tone: [Int16] = (0..<24000).map { index in
            let phase = 2 * Double.pi * 440 * Double(index) / 48000
            return Int16(8000 * sin(phase))
        }
        for start in stride(from: 0, to: tone.count, by: 960) { source.append(Self.bytes(Array(tone[start..<start + 960]))) }
        var hops = 0
        var energy: Float = 0
        while case (.audio, let hop) = Self.pull(source), hops < 100 {
            hops += 1
            energy += hop.reduce(0) { $0 + $1 * $1 }
        }
        // The resampler holds a few ms back; about 0.5 s comes out at 16 kHz.
        #expect(hops >= 45 && hops <= 50, "\(hops)")
        let rms = (energy / Float(hops * AnalysisFormat.hopSize)).squareRoot()
        let expected: Float = 8000 / 32768 / Float(2).squareRoot()
        #expect(abs(rms - expected) < 0.02, "\(rms)")
    }
}
