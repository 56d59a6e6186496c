import Foundation
import SpeakerRTP
import Testing
import TestSupport

@Suite("Writing RTP packets")
struct RTPPacketWritingTests {
    /// Writes a packet into a fresh array.
    static func write(
        marker: Bool, payloadType: UInt8, sequence: UInt16, timestamp: UInt32, ssrc: UInt32,
        level: AudioLevel?, id: Int, payload: [UInt8]
    ) -> [UInt8] {
        var buffer = [UInt8](repeating: 0xAA, count: 1500)
        let count = payload.withUnsafeBytes { payloadBytes in
            buffer.withUnsafeMutableBytes {
                RTPPacket.write(
                    marker: marker, payloadType: payloadType, sequenceNumber: sequence, timestamp: timestamp,
                    ssrc: ssrc, audioLevel: level, audioLevelID: id, payload: payloadBytes, into: $0)
            }
        }
        return Array(buffer[..<count])
    }

    @Test("random headers round-trip through the parser", arguments: [false, true])
    func roundTrips(withLevel: Bool) throws {
        var random = SeededGenerator(seed: withLevel ? 11 : 10)
        for _ in 0..<2000 {
            let marker = random.next() & 1 == 1
            let payloadType = UInt8(truncatingIfNeeded: random.next() & 0x7F)
            let sequence = UInt16(truncatingIfNeeded: random.next())
            let timestamp = UInt32(truncatingIfNeeded: random.next())
            let ssrc = UInt32(truncatingIfNeeded: random.next())
            let id = Int(random.next() % 14) + 1
            let level = withLevel
                ? AudioLevel(level: UInt8(random.next() % 128), voice: random.next() & 1 == 1) : nil
            let payload = (0..<Int(random.next() % 300) + 1).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let bytes = Self.write(
                marker: marker, payloadType: payloadType, sequence: sequence, timestamp: timestamp, ssrc: ssrc,
                level: level, id: id, payload: payload)
            #expect(bytes.count == RTPPacket.headerLength(withAudioLevel: withLevel) + payload.count)
            guard case .packet(let packet) = RTPBuilder.parse(bytes, audioLevelID: id) else {
                Issue.record("not parsed")
                return
            }
            #expect(packet.marker == marker && packet.payloadType == payloadType)
            #expect(packet.sequenceNumber == sequence && packet.timestamp == timestamp && packet.ssrc == ssrc)
            #expect(packet.extensionProfile == (withLevel ? 0xBEDE : nil))
            #expect(packet.audioLevel == level)
            #expect(Array(bytes[packet.payload]) == payload)
            // The test's own builder writes the same bytes.
            let built = RTPBuilder.packet(
                sequence: sequence, timestamp: timestamp, ssrc: ssrc, payloadType: payloadType, marker: marker,
                extension: level.map { RTPBuilder.oneByteExtension([(id, [($0.voice ? 0x80 : 0) | $0.level])]) },
                payload: payload)
            #expect(bytes == built)
        }
    }

    @Test func matchesAHandWrittenPacket() {
        let bytes = Self.write(
            marker: true, payloadType: 111, sequence: 0x1234, timestamp: 0xDEAD_BEEF, ssrc: 0x0102_0304,
            level: AudioLevel(level: 42, voice: true), id: 1, payload: [0xF8, 0xFF, 0xFE])
        let expected: [UInt8] = [
            0x90, 0xEF, 0x12, 0x34,  // V=2, X=1; M=1, PT=111; sequence
            0xDE, 0xAD, 0xBE, 0xEF,  // timestamp
            0x01, 0x02, 0x03, 0x04,  // SSRC
            0xBE, 0xDE, 0x00, 0x01,  // one-byte extension, one word
            0x10, 0xAA, 0x00, 0x00,  // id 1, length 1; V=1, level 42; padding
            0xF8, 0xFF, 0xFE,  // payload
        ]
        #expect(bytes == expected)
        let plain = Self.write(
            marker: false, payloadType: 96, sequence: 1, timestamp: 960, ssrc: 0x1234_ABCD, level: nil, id: 1,
            payload: [0xF8, 0xFF, 0xFE])
        #expect(plain == [0x80, 0x60, 0x00, 0x01, 0x00, 0x00, 0x03, 0xC0, 0x12, 0x34, 0xAB, 0xCD, 0xF8, 0xFF, 0xFE])
    }

    @Test func audioLevelsFollowRFC6464() {
        #expect(AudioLevel(meanSquare: 0, voice: false) == AudioLevel(level: 127, voice: false))
        #expect(AudioLevel(meanSquare: 1, voice: true) == AudioLevel(level: 0, voice: true))
        #expect(AudioLevel(meanSquare: 4, voice: false).level == 0, "louder than full scale clamps to 0")
        #expect(AudioLevel(meanSquare: 1e-3, voice: false).level == 30)
        #expect(AudioLevel(meanSquare: 1e-20, voice: false).level == 127)
        // A sine of amplitude 0.5: mean square 0.125, −9.03 dBov → 9.
        let tone = Signals.tone(frequency: 1000, sampleRate: 48000, count: 960)
        let meanSquare = tone.withUnsafeBufferPointer { AudioLevel.meanSquare($0) }
        let reference = tone.reduce(0) { $0 + Double($1) * Double($1) } / Double(tone.count)
        #expect(abs(Double(meanSquare) - reference) < 1e-6)
        #expect(AudioLevel(meanSquare: meanSquare, voice: false).level == 9)
        let odd = Array(tone[..<37])
        let oddReference = odd.reduce(0) { $0 + Double($1) * Double($1) } / 37
        #expect(abs(Double(odd.withUnsafeBufferPointer { AudioLevel.meanSquare($0) }) - oddReference) < 1e-6)
    }
}
