import Foundation
import SpeakerFiles
import SpeakerIO
import SpeakerOpus
import Testing
import TestSupport

@Suite("Opus packets")
struct OpusCodecTests {
    /// Encodes `signal` in 20 ms packets (the tail that does not fill a packet is dropped).
    static func encode(_ signal: [Float], encoder: OpusPacketEncoder) throws -> [[UInt8]] {
        try stride(from: 0, to: signal.count - encoder.frameSize + 1, by: encoder.frameSize).map { start in
            try signal[start..<start + encoder.frameSize].withUnsafeBufferPointer { try encoder.encode($0) }
        }
    }

    /// Decodes each packet, or conceals it when its index is in `lost`.
    static func decode(_ packets: [[UInt8]], decoder: OpusPacketDecoder, lost: Set<Int> = []) throws -> [Float] {
        var output: [Float] = []
        var buffer = [Float](repeating: 0, count: decoder.maximumPacketSamples)
        for (index, packet) in packets.enumerated() {
            let written = try buffer.withUnsafeMutableBufferPointer { pcm in
                if lost.contains(index) {
                    return try decoder.concealLoss(samples: decoder.lastPacketDuration, into: pcm)
                }
                return try packet.withUnsafeBytes { try decoder.decode(packet: $0, into: pcm) }
            }
            output += buffer[..<written]
        }
        return output
    }

    @Test("a 440 Hz tone survives encoding at 48 or 16 kHz and decoding at 16 kHz", arguments: [48000, 16000])
    func toneRoundTrip(encoderRate: Int) throws {
        let encoder = try OpusPacketEncoder(sampleRate: encoderRate, bitrate: 32000)
        let decoder = try OpusPacketDecoder(sampleRate: 16000)
        let seconds = 1
        let packets = try Self.encode(
            Signals.tone(frequency: 440, sampleRate: encoderRate, count: encoderRate * seconds), encoder: encoder)
        #expect(packets.count == 50)
        #expect(packets.allSatisfy { !$0.isEmpty && $0.count <= OpusPacketEncoder.maximumPacketBytes })
        let decoded = try Self.decode(packets, decoder: decoder)
        #expect(decoded.count == 16000 * seconds, "320 samples per 20 ms packet at 16 kHz")

        // The decoded tone lags the input by the encoder's look-ahead (6.5 ms = 104 samples at 16 kHz).
        let delay = encoder.lookahead * 16000 / encoderRate
        #expect(delay == 104)
        let reference = Signals.tone(frequency: 440, sampleRate: 16000, count: 16000 * seconds + delay, startingAt: delay)
        let steady = 3200..<15000
        var noise = 0.0
        var signal = 0.0
        for index in steady {
            signal += Double(reference[index] * reference[index])
            noise += Double((decoded[index] - reference[index]) * (decoded[index] - reference[index]))
        }
        let snr = 10 * log10(signal / noise)
        #expect(snr > 10, "SNR \(snr) dB")
        #expect(Signals.correlation(Array(reference[steady]), Array(decoded[steady])) > 0.95)
    }

    @Test("speech survives a round trip at 24 kbit/s")
    func speechRoundTrip() throws {
        let speech = try #require(try loadStreams(paths: [FormatFixtures.path("speech-s16.wav")]).first).samples
        let encoder = try OpusPacketEncoder(sampleRate: 16000, bitrate: 24000)
        let decoder = try OpusPacketDecoder(sampleRate: 16000)
        let decoded = try Self.decode(try Self.encode(speech, encoder: encoder), decoder: decoder)
        let (lag, correlation) = Signals.bestLag(speech, decoded, maximumLag: 200)
        // The codec's phase response can move the correlation peak by a sample.
        #expect(abs(lag - encoder.lookahead) <= 2, "decoded speech lags by the encoder look-ahead: \(lag)")
        #expect(correlation > 0.9, "correlation \(correlation)")
    }

    @Test("a dropped packet in a tone is concealed with the right length and a non-silent continuation")
    func packetLossConcealment() throws {
        let encoder = try OpusPacketEncoder(sampleRate: 16000)
        let packets = try Self.encode(Signals.tone(frequency: 440, sampleRate: 16000, count: 16000), encoder: encoder)
        let lost = 25
        let intact = try Self.decode(packets, decoder: try OpusPacketDecoder())
        let decoder = try OpusPacketDecoder()
        let concealed = try Self.decode(packets, decoder: decoder, lost: [lost])
        #expect(concealed.count == intact.count)
        #expect(decoder.lastPacketDuration == 320)

        let gap = lost * 320..<(lost + 1) * 320
        let gapLevel = Signals.rms(concealed, gap)
        let toneLevel = Signals.rms(intact, gap)
        #expect(gapLevel > 0.3 * toneLevel, "concealment continues the tone: \(gapLevel) vs \(toneLevel)")
        // Decoding recovers after the gap.
        let after = (lost + 3) * 320..<(lost + 6) * 320
        #expect(Signals.correlation(Array(intact[after]), Array(concealed[after])) > 0.9)
    }

    @Test("concealment lengths: any multiple of 2.5 ms, silence before the first packet")
    func concealmentLengths() throws {
        let decoder = try OpusPacketDecoder(sampleRate: 16000)
        #expect(decoder.concealmentGranule == 40)
        var buffer = [Float](repeating: 1, count: 2000)
        for samples in [40, 320, 480, 1920] {
            let written = try buffer.withUnsafeMutableBufferPointer { try decoder.concealLoss(samples: samples, into: $0) }
            #expect(written == samples)
            #expect(buffer[..<samples].allSatisfy { $0 == 0 }, "nothing decoded yet: silence")
        }
    }

    @Test("malformed packets throw .invalidPacket")
    func malformedPackets() throws {
        let decoder = try OpusPacketDecoder()
        var buffer = [Float](repeating: 0, count: decoder.maximumPacketSamples)
        let packets: [[UInt8]] = [
            [],  // empty: a lost packet is concealLoss, not decode
            [0x03],  // code 3 without its frame-count byte
            [0x03, 0x00],  // code 3 with zero frames
            [0x01, 0xAA, 0xBB, 0xCC],  // code 1: two equal frames cannot share 3 bytes
            [0x02, 0xFF, 0x00],  // code 2: first frame longer than the packet
        ]
        for packet in packets {
            let error = try #require(throws: SpeakerIOError.self, "\(packet)") {
                try packet.withUnsafeBytes { bytes in
                    try buffer.withUnsafeMutableBufferPointer { try decoder.decode(packet: bytes, into: $0) }
                }
            }
            #expect(error.kind == .invalidPacket)
            #expect(error.description.hasPrefix("Opus decoder (16000 Hz): invalid Opus packet"))
        }
    }

    @Test("random bytes never crash: each packet decodes or throws .invalidPacket")
    func randomPackets() throws {
        var random = SeededGenerator(seed: 2024)
        let decoder = try OpusPacketDecoder()
        var buffer = [Float](repeating: 0, count: decoder.maximumPacketSamples)
        var rejected = 0
        for _ in 0..<2000 {
            let packet = (0..<(1 + Int(random.next() % 300))).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            do {
                let written = try packet.withUnsafeBytes { bytes in
                    try buffer.withUnsafeMutableBufferPointer { try decoder.decode(packet: bytes, into: $0) }
                }
                #expect((0...decoder.maximumPacketSamples).contains(written))
                #expect(buffer[..<written].allSatisfy { $0.isFinite })
            } catch let error as SpeakerIOError {
                #expect(error.kind == .invalidPacket, "\(error)")
                rejected += 1
            }
        }
        #expect(rejected > 100, "many random packets are malformed: \(rejected) of 2000")
    }

    @Test("an output buffer shorter than the packet throws libopus' buffer-too-small")
    func bufferTooSmall() throws {
        let encoder = try OpusPacketEncoder(sampleRate: 16000)
        let packet = try Self.encode(Signals.tone(frequency: 440, sampleRate: 16000, count: 320), encoder: encoder)[0]
        let decoder = try OpusPacketDecoder()
        var buffer = [Float](repeating: 0, count: 100)
        let error = try #require(throws: SpeakerIOError.self) {
            try packet.withUnsafeBytes { bytes in
                try buffer.withUnsafeMutableBufferPointer { try decoder.decode(packet: bytes, into: $0) }
            }
        }
        #expect(error.kind == .codecFailed(operation: "opus_decode_float"))
        #expect(error.code == -2)
        #expect(error.description == "Opus decoder (16000 Hz): opus_decode_float failed (libopus: buffer too small)")
    }

    @Test("bit rate: lower rates give smaller packets; nonsense is refused")
    func bitrate() throws {
        let speech = Signals.speechLike(sampleRate: 48000, seconds: 1)
        let encoder = try OpusPacketEncoder(sampleRate: 48000, bitrate: 64000)
        let large = try Self.encode(speech, encoder: encoder).reduce(0) { $0 + $1.count }
        try encoder.setBitrate(12000)
        #expect(encoder.bitrate == 12000)
        let small = try Self.encode(speech, encoder: encoder).reduce(0) { $0 + $1.count }
        #expect(small < large / 2, "\(small) bytes at 12 kbit/s vs \(large) at 64 kbit/s")

        let error = try #require(throws: SpeakerIOError.self) { try encoder.setBitrate(0) }
        #expect(error.kind == .codecFailed(operation: "opus_encoder_ctl(OPUS_SET_BITRATE)"))
        #expect(encoder.bitrate == 12000)
    }

    @Test("reset forgets the stream: decoding after reset matches a fresh decoder")
    func reset() throws {
        let encoder = try OpusPacketEncoder(sampleRate: 16000)
        let packets = try Self.encode(Signals.speechLike(sampleRate: 16000, seconds: 0.5), encoder: encoder)
        let decoder = try OpusPacketDecoder()
        _ = try Self.decode(packets, decoder: decoder)
        decoder.reset()
        #expect(decoder.lastPacketDuration == 0)
        let afterReset = try Self.decode(packets, decoder: decoder)
        let fresh = try Self.decode(packets, decoder: try OpusPacketDecoder())
        #expect(afterReset == fresh)
    }
}
