import Foundation
import SpeakerRTP
import Testing
import TestSupport

/// Builds RTP packets byte by byte, as a sender would.
enum RTPBuilder {
    /// A one-byte-form (0xBEDE) extension block with the given (id, data) elements, padded to 32 bits.
    static func oneByteExtension(_ elements: [(Int, [UInt8])], padding: Int = 0) -> (profile: UInt16, block: [UInt8]) {
        var block: [UInt8] = []
        for (id, data) in elements {
            block.append(UInt8(id << 4 | (data.count - 1)))
            block += data
            block += [UInt8](repeating: 0, count: padding)
        }
        while block.count % 4 != 0 { block.append(0) }
        return (0xBEDE, block)
    }

    /// A two-byte-form (0x1000) extension block.
    static func twoByteExtension(_ elements: [(Int, [UInt8])]) -> (profile: UInt16, block: [UInt8]) {
        var block: [UInt8] = []
        for (id, data) in elements { block += [UInt8(id), UInt8(data.count)] + data }
        while block.count % 4 != 0 { block.append(0) }
        return (0x1000, block)
    }

    /// An RTP packet.
    static func packet(
        sequence: UInt16 = 1, timestamp: UInt32 = 960, ssrc: UInt32 = 0x1234_ABCD, payloadType: UInt8 = 96,
        marker: Bool = false, csrcs: [UInt32] = [], extension: (profile: UInt16, block: [UInt8])? = nil,
        payload: [UInt8] = [0xF8, 0xFF, 0xFE], padding: Int = 0
    ) -> [UInt8] {
        var bytes: [UInt8] = [
            0x80 | (padding > 0 ? 0x20 : 0) | (`extension` != nil ? 0x10 : 0) | UInt8(csrcs.count),
            (marker ? 0x80 : 0) | payloadType,
        ]
        func append32(_ value: UInt32) { bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
        bytes += [UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
        append32(timestamp)
        append32(ssrc)
        for csrc in csrcs { append32(csrc) }
        if let `extension` {
            bytes += [UInt8(`extension`.profile >> 8), UInt8(`extension`.profile & 0xFF)]
            let words = `extension`.block.count / 4
            bytes += [UInt8(words >> 8), UInt8(words & 0xFF)]
            bytes += `extension`.block
        }
        bytes += payload
        if padding > 0 { bytes += [UInt8](repeating: 0, count: padding - 1) + [UInt8(padding)] }
        return bytes
    }

    static func parse(_ bytes: [UInt8], audioLevelID: Int? = nil) -> RTPPacket.Parsed {
        bytes.withUnsafeBytes { RTPPacket.parse($0, audioLevelID: audioLevelID) }
    }
}

@Suite("RTP packets and header extensions")
struct RTPPacketTests {
    @Test func parsesTheFixedHeader() throws {
        let bytes = RTPBuilder.packet(sequence: 0xFFFE, timestamp: 0xDEAD_BEEF, ssrc: 0x0102_0304, payloadType: 111, marker: true)
        guard case .packet(let packet) = RTPBuilder.parse(bytes) else { Issue.record("not parsed"); return }
        #expect(packet.sequenceNumber == 0xFFFE)
        #expect(packet.timestamp == 0xDEAD_BEEF)
        #expect(packet.ssrc == 0x0102_0304)
        #expect(packet.payloadType == 111)
        #expect(packet.marker)
        #expect(packet.payload == 12..<15)
        #expect(packet.extensionProfile == nil)
        #expect(packet.audioLevel == nil)
    }

    @Test func skipsCSRCsAndPadding() throws {
        let bytes = RTPBuilder.packet(csrcs: [1, 2, 3], payload: [1, 2, 3, 4, 5], padding: 3)
        guard case .packet(let packet) = RTPBuilder.parse(bytes) else { Issue.record("not parsed"); return }
        #expect(packet.payload == 24..<29)
        #expect(Array(bytes[packet.payload]) == [1, 2, 3, 4, 5])
    }

    @Test("RFC 6464 level in the one-byte form, among other elements", arguments: [(1, 0x80 | 42), (14, 0x05), (7, 127)])
    func oneByteAudioLevel(id: Int, byte: Int) throws {
        let ext = RTPBuilder.oneByteExtension([(3, [9, 9, 9]), (id, [UInt8(byte)]), (2, [7, 7])], padding: 1)
        guard case .packet(let packet) = RTPBuilder.parse(RTPBuilder.packet(extension: ext), audioLevelID: id) else {
            Issue.record("not parsed")
            return
        }
        #expect(packet.extensionProfile == 0xBEDE)
        #expect(packet.audioLevel == AudioLevel(level: UInt8(byte & 0x7F), voice: byte & 0x80 != 0))
    }

    @Test func twoByteAudioLevelWithEmptyElementsAndPadding() throws {
        let ext = RTPBuilder.twoByteExtension([(200, []), (0, []), (33, [0x80 | 10]), (5, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17])])
        guard case .packet(let packet) = RTPBuilder.parse(RTPBuilder.packet(extension: ext), audioLevelID: 33) else {
            Issue.record("not parsed")
            return
        }
        #expect(packet.extensionProfile == 0x1000)
        #expect(packet.audioLevel == AudioLevel(level: 10, voice: true))
    }

    @Test func theLevelIsOnlyReadFromTheConfiguredID() throws {
        let ext = RTPBuilder.oneByteExtension([(1, [0x80 | 30])])
        guard case .packet(let packet) = RTPBuilder.parse(RTPBuilder.packet(extension: ext), audioLevelID: 2) else {
            Issue.record("not parsed")
            return
        }
        #expect(packet.audioLevel == nil)
    }

    @Test func id15EndsTheOneByteWalk() throws {
        // After id 15 the rest is ignored, even a length that would run past the block.
        let block: [UInt8] = [0x10, 0x21, 0xFF, 0x00]
        guard case .packet(let packet) = RTPBuilder.parse(RTPBuilder.packet(extension: (0xBEDE, block)), audioLevelID: 1) else {
            Issue.record("not parsed")
            return
        }
        #expect(packet.audioLevel == AudioLevel(level: 0x21, voice: false))
    }

    @Test func aOneByteIDOfZeroIsPaddingWhateverItsLength() throws {
        // Found by the fuzzer: 0x02 (id 0, length bits 2) must not be read as an element of id 0.
        let block: [UInt8] = [0x02, 0x10, 0x85, 0x00]
        var ids: [Int] = []
        let valid = block.withUnsafeBytes { bytes in
            HeaderExtensionElements.forEach(in: bytes, profile: 0xBEDE) { ids.append($0.id) }
        }
        #expect(valid && ids == [1])
        guard case .packet(let packet) = RTPBuilder.parse(RTPBuilder.packet(extension: (0xBEDE, block)), audioLevelID: 1) else {
            Issue.record("not parsed")
            return
        }
        #expect(packet.audioLevel == AudioLevel(level: 5, voice: true))
    }

    @Test func otherProfilesAreOpaque() throws {
        let ext: (UInt16, [UInt8]) = (0xABCD, [0xFF, 0xFF, 0xFF, 0xFF])
        guard case .packet(let packet) = RTPBuilder.parse(RTPBuilder.packet(extension: ext), audioLevelID: 1) else {
            Issue.record("not parsed")
            return
        }
        #expect(packet.extensionProfile == 0xABCD)
        #expect(packet.audioLevel == nil)
    }

    /// Each malformed shape, and the reason it must be counted under.
    static let malformed: [(String, [UInt8], RTPMalformation)] = {
        let good = RTPBuilder.packet()
        var badVersion = good
        badVersion[0] = 0x40
        var csrcPastEnd = RTPBuilder.packet(payload: [1])
        csrcPastEnd[0] |= 0x0F
        var extensionPastEnd = RTPBuilder.packet(extension: RTPBuilder.oneByteExtension([(1, [5])]))
        extensionPastEnd[15] = 9  // claims 9 words
        let elementPastBlock = RTPBuilder.packet(extension: (0xBEDE, [0x1F, 0, 0, 0]))  // 16 data bytes in a 4-byte block
        let twoBytePastBlock = RTPBuilder.packet(extension: (0x1000, [0x01, 0x09, 0, 0]))
        let twoByteCutHeader = RTPBuilder.packet(extension: (0x1000, [0, 0, 0, 0x07]))
        var zeroPadding = RTPBuilder.packet(payload: [1, 2, 3, 0])
        zeroPadding[0] |= 0x20
        var paddingPastPayload = RTPBuilder.packet(payload: [1, 2, 200])
        paddingPastPayload[0] |= 0x20
        var headerOnlyExtension = Array(RTPBuilder.packet()[..<12])
        headerOnlyExtension[0] |= 0x10
        return [
            ("empty", [], .tooShort),
            ("11 bytes", Array(good[..<11]), .tooShort),
            ("version 1", badVersion, .badVersion),
            ("15 CSRCs in a short packet", csrcPastEnd, .tooShort),
            ("extension header cut", headerOnlyExtension + [0xBE], .badExtensionLength),
            ("extension longer than the packet", extensionPastEnd, .badExtensionLength),
            ("one-byte element past its block", elementPastBlock, .badExtensionLength),
            ("two-byte element past its block", twoBytePastBlock, .badExtensionLength),
            ("two-byte element header cut", twoByteCutHeader, .badExtensionLength),
            ("padding count 0", zeroPadding, .badPadding),
            ("padding past the payload", paddingPastPayload, .badPadding),
            ("header only", Array(good[..<12]), .emptyPayload),
        ]
    }()

    @Test("malformed packets are classified", arguments: malformed.indices)
    func malformedPackets(index: Int) {
        let (_, bytes, reason) = Self.malformed[index]
        #expect(RTPBuilder.parse(bytes, audioLevelID: 1) == .malformed(reason), "\(Self.malformed[index].0)")
    }

    @Test func rtcpIsRecognised() {
        let report: [UInt8] = [0x81, 201, 0, 7] + [UInt8](repeating: 0, count: 28)
        #expect(report.withUnsafeBytes(RTPPacket.isRTCP))
        #expect(!RTPBuilder.packet(payloadType: 96).withUnsafeBytes(RTPPacket.isRTCP))
    }

    /// A deterministic stand-in for the fuzzer in unit tests: random and mutated packets never crash, and
    /// a packet that parses has its payload inside the buffer.
    @Test func randomAndMutatedBytesNeverCrash() {
        var random = SeededGenerator(seed: 6464)
        let seeds = [
            RTPBuilder.packet(extension: RTPBuilder.oneByteExtension([(1, [0x80 | 40]), (2, [1, 2, 3])])),
            RTPBuilder.packet(extension: RTPBuilder.twoByteExtension([(1, [40]), (9, [])])),
            RTPBuilder.packet(csrcs: [7], payload: [1, 2, 3, 4], padding: 2),
        ]
        var parsed = 0
        for round in 0..<20_000 {
            var bytes: [UInt8]
            if round % 4 == 0 {
                bytes = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            } else {
                bytes = seeds[round % seeds.count]
                for _ in 0..<Int.random(in: 1...4, using: &random) where !bytes.isEmpty {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
                if Bool.random(using: &random) { bytes.removeLast(Int.random(in: 0...min(8, bytes.count), using: &random)) }
            }
            if case .packet(let packet) = RTPBuilder.parse(bytes, audioLevelID: 1) {
                parsed += 1
                #expect(packet.payload.lowerBound >= 12 && packet.payload.upperBound <= bytes.count && !packet.payload.isEmpty)
            }
        }
        #expect(parsed > 1000, "the mutations keep many packets valid")
    }
}
