@testable import CallWebRTC
import Testing

/// The send path's rewriting and the checks made before webrtcbin sees input.
struct RewriterTests {
    /// An RTP packet with a one-byte header extension (level 30) and a 20 ms CELT payload.
    static func packet(ssrc: UInt32, sequence: UInt16, timestamp: UInt32, payload: [UInt8] = [0xFC, 1, 2, 3]) -> [UInt8] {
        var bytes: [UInt8] = [0x90, 96, UInt8(sequence >> 8), UInt8(truncatingIfNeeded: sequence)]
        bytes += withUnsafeBytes(of: timestamp.bigEndian, Array.init) + withUnsafeBytes(of: ssrc.bigEndian, Array.init)
        bytes += [0xBE, 0xDE, 0, 1, 0x10, 30, 0, 0]
        return bytes + payload
    }

    static func fields(_ bytes: [UInt8]) -> (marker: Bool, pt: UInt8, sequence: UInt16, timestamp: UInt32, ssrc: UInt32) {
        let word = { (i: Int) in UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3]) }
        return (bytes[1] & 0x80 != 0, bytes[1] & 0x7F, UInt16(bytes[2]) << 8 | UInt16(bytes[3]), word(4), word(8))
    }

    @Test("Two sources become one stream: own SSRC and payload type, consecutive sequence numbers, continuing timestamps")
    func twoSources() throws {
        var rewriter = RTPStreamRewriter(ssrc: 7, payloadType: 111, sequenceNumber: 65534, timestamp: 1000)
        var out: [[UInt8]] = []
        func push(ssrc: UInt32, sequence: UInt16, timestamp: UInt32) throws {
            let packet = rewriter.rewrite(Self.packet(ssrc: ssrc, sequence: sequence, timestamp: timestamp))
            out.append(try #require(packet))
        }
        for index in 0..<3 { try push(ssrc: 1, sequence: UInt16(100 + index), timestamp: UInt32(5000 + 960 * index)) }
        // A DTX pause of 200 ms within the source stays.
        try push(ssrc: 1, sequence: 103, timestamp: 5000 + 960 * 2 + 960 * 11)
        // Another source, far away in timestamps, continues right after.
        for index in 0..<2 { try push(ssrc: 2, sequence: UInt16(9 + index), timestamp: UInt32(4_000_000_000 + 960 * index)) }
        let f = out.map(Self.fields)
        #expect(f.map(\.sequence) == [65534, 65535, 0, 1, 2, 3])
        // 2920 + 11 × 960 after the pause; then 960 on, whatever the new source's timestamps.
        #expect(f.map(\.timestamp) == [UInt32(1000), 1960, 2920, 13480, 14440, 15400])
        #expect(f.map(\.marker) == [true, false, false, false, true, false])
        #expect(f.allSatisfy { $0.ssrc == 7 && $0.pt == 111 })
        #expect(out.allSatisfy { $0.count == 12 + 4 && $0[0] == 0x80 && Array($0[12...]) == [0xFC, 1, 2, 3] }, "extension dropped")
    }

    @Test("Not RTP is dropped")
    func notRTP() {
        var rewriter = RTPStreamRewriter(ssrc: 7, payloadType: 111, sequenceNumber: 0, timestamp: 0)
        #expect(rewriter.rewrite([]) == nil)
        #expect(rewriter.rewrite([0x80, 111, 0, 1]) == nil)
        #expect(rewriter.rewrite(Array(Self.packet(ssrc: 1, sequence: 1, timestamp: 1).prefix(12 + 8))) == nil, "no payload")
        #expect(rewriter.rewrite([0x40] + [UInt8](repeating: 0, count: 15)) == nil, "version 1")
    }

    @Test("Opus packet durations from the TOC byte", arguments: [
        ([UInt8(0xFC)], 960), ([0xF8], 960), ([0x08], 960), ([0x00], 480), ([0x18], 2880), ([0x70], 480), ([0x78], 960),
        ([0xFD], 1920), ([0xFB, 5], 4800), ([0xE3, 3], 360),
    ] as [([UInt8], Int)])
    func opusDurations(payload: [UInt8], samples: Int) {
        #expect(payload.withUnsafeBytes { OpusPacketDuration.samples($0) } == samples)
    }
}
