import SpeakerBase
#if canImport(Glibc)
import Glibc
#endif

extension RTPPacket {
    /// Header bytes `writeHeader` produces: 12, or 20 with the audio-level extension (a 4-byte
    /// extension header and one 32-bit word holding the element and two bytes of padding).
    public static func headerLength(withAudioLevel: Bool) -> Int { withAudioLevel ? 20 : 12 }

    /// Writes an RTP header (RFC 3550: version 2, no padding, no CSRCs) to the front of `buffer`,
    /// optionally with an RFC 8285 one-byte extension block holding one RFC 6464 audio-level element.
    ///
    /// The extension is `BE DE 00 01`, then `ID<<4 | 0` (one data byte), `V<<7 | level`, `00 00`, as
    /// libwebrtc writes it.
    ///
    /// - Parameters:
    ///   - marker: The marker bit (the first packet of a talk spurt).
    ///   - payloadType: 0…127.
    ///   - sequenceNumber: The packet's sequence number.
    ///   - timestamp: The media timestamp (48 kHz for Opus).
    ///   - ssrc: The synchronisation source.
    ///   - audioLevel: The level to send (0…127, `voice` as the V flag), or nil for no extension.
    ///   - audioLevelID: The element id, 1…14 (`a=extmap` of `ssrc-audio-level`; 1 in this project).
    ///   - buffer: Receives the header; at least `headerLength(withAudioLevel:)` bytes (a caller bug otherwise).
    /// - Returns: The header length, where the payload starts.
    /// - Complexity: O(1). Allocates nothing.
    @discardableResult
    public static func writeHeader(
        marker: Bool, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32,
        audioLevel: AudioLevel? = nil, audioLevelID: Int = 1, into buffer: UnsafeMutableRawBufferPointer
    ) -> Int {
        precondition(payloadType < 128, "the payload type is 7 bits")
        let length = headerLength(withAudioLevel: audioLevel != nil)
        precondition(buffer.count >= length, "buffer too small for the RTP header")
        buffer[0] = 0x80 | (audioLevel != nil ? 0x10 : 0)
        buffer[1] = (marker ? 0x80 : 0) | payloadType
        buffer[2] = UInt8(truncatingIfNeeded: sequenceNumber >> 8)
        buffer[3] = UInt8(truncatingIfNeeded: sequenceNumber)
        storeBigEndian32(timestamp, buffer, 4)
        storeBigEndian32(ssrc, buffer, 8)
        if let audioLevel {
            precondition((1...14).contains(audioLevelID), "a one-byte extension id is 1…14")
            precondition(audioLevel.level < 128, "the audio level is 0…127")
            buffer[12] = 0xBE
            buffer[13] = 0xDE
            buffer[14] = 0
            buffer[15] = 1
            buffer[16] = UInt8(audioLevelID << 4)
            buffer[17] = (audioLevel.voice ? 0x80 : 0) | audioLevel.level
            buffer[18] = 0
            buffer[19] = 0
        }
        return length
    }

    /// Writes a whole RTP packet (header as `writeHeader`, then `payload`) to the front of `buffer`.
    ///
    /// - Parameters: As `writeHeader`, and `payload`: the media bytes (not empty).
    ///   `buffer` must hold `headerLength(withAudioLevel:) + payload.count` bytes (a caller bug otherwise).
    /// - Returns: The packet's length.
    /// - Complexity: O(payload). Allocates nothing.
    public static func write(
        marker: Bool, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32,
        audioLevel: AudioLevel? = nil, audioLevelID: Int = 1,
        payload: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer
    ) -> Int {
        precondition(!payload.isEmpty, "an RTP packet has a payload")
        let header = headerLength(withAudioLevel: audioLevel != nil)
        precondition(buffer.count >= header + payload.count, "buffer too small for the RTP packet")
        writeHeader(
            marker: marker, payloadType: payloadType, sequenceNumber: sequenceNumber, timestamp: timestamp,
            ssrc: ssrc, audioLevel: audioLevel, audioLevelID: audioLevelID, into: buffer)
        UnsafeMutableRawBufferPointer(rebasing: buffer[header..<header + payload.count]).copyMemory(from: payload)
        return header + payload.count
    }

    @inline(__always)
    static func storeBigEndian32(_ value: UInt32, _ buffer: UnsafeMutableRawBufferPointer, _ offset: Int) {
        buffer[offset] = UInt8(truncatingIfNeeded: value >> 24)
        buffer[offset + 1] = UInt8(truncatingIfNeeded: value >> 16)
        buffer[offset + 2] = UInt8(truncatingIfNeeded: value >> 8)
        buffer[offset + 3] = UInt8(truncatingIfNeeded: value)
    }
}

extension AudioLevel {
    /// The RFC 6464 level of a frame, computed as libwebrtc does (`Levels.rfc6464Level`):
    /// `round(−10·log10(meanSquare))` clamped to 0…127, full scale 1.0; an all-zero frame is 127.
    ///
    /// - Parameters:
    ///   - meanSquare: Mean of `x²` over the frame, `x` in ±1 full scale.
    ///   - voice: The V flag to send.
    public init(meanSquare: Float, voice: Bool) {
        self.init(level: Levels.rfc6464Level(meanSquare: meanSquare), voice: voice)
    }

    /// The mean square of `samples` (0 for none), by the engine's SIMD kernel.
    /// - Complexity: O(n). Allocates nothing; real-time safe.
    public static func meanSquare(_ samples: UnsafeBufferPointer<Float>) -> Float {
        samples.isEmpty ? 0 : Kernels.sumOfSquares(samples) / Float(samples.count)
    }
}
