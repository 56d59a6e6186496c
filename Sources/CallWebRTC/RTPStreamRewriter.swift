/// Turns Opus RTP packets from any number of sources into one continuous stream for one browser:
/// its own SSRC and payload type, consecutive sequence numbers, and timestamps that continue across a
/// change of source. A value owned by one peer (behind its lock).
///
/// Within one source the source's timestamp steps are kept (a DTX pause stays a pause); when the source
/// changes (another SSRC, or its timestamp moves backwards or more than `maximumJump` ahead) the new
/// source's first packet continues right after the last packet sent, with the marker bit set.
/// Header extensions, CSRCs and padding are dropped: the browser gets a plain 12-byte header.
struct RTPStreamRewriter {
    let ssrc: UInt32
    let payloadType: UInt8
    /// The largest forward step of a source's timestamp still taken as the same stream: 10 s at 48 kHz.
    static let maximumJump: UInt32 = 480_000

    private(set) var sequenceNumber: UInt16
    private var nextTimestamp: UInt32
    private var source: (ssrc: UInt32, timestamp: UInt32)?
    private var offset: UInt32 = 0

    init(ssrc: UInt32, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        nextTimestamp = timestamp
    }

    /// The rewritten packet, or nil if `packet` is not an RTP packet with a payload.
    /// - Complexity: O(packet bytes).
    mutating func rewrite(_ packet: [UInt8]) -> [UInt8]? {
        packet.withUnsafeBytes { bytes -> [UInt8]? in
            guard bytes.count >= 12, bytes[0] >> 6 == 2 else { return nil }
            var start = 12 + 4 * Int(bytes[0] & 0x0F)
            if bytes[0] & 0x10 != 0 {
                guard start + 4 <= bytes.count else { return nil }
                start += 4 + 4 * (Int(bytes[start + 2]) << 8 | Int(bytes[start + 3]))
            }
            var end = bytes.count
            if bytes[0] & 0x20 != 0 { end -= Int(bytes[bytes.count - 1]) }
            guard start < end else { return nil }
            let payload = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            let sourceSSRC = UInt32(bytes[8]) << 24 | UInt32(bytes[9]) << 16 | UInt32(bytes[10]) << 8 | UInt32(bytes[11])
            let sourceTimestamp = UInt32(bytes[4]) << 24 | UInt32(bytes[5]) << 16 | UInt32(bytes[6]) << 8 | UInt32(bytes[7])

            var marker = bytes[1] & 0x80 != 0
            let sameSource: Bool
            if let source, source.ssrc == sourceSSRC {
                let step = sourceTimestamp &- source.timestamp
                sameSource = step <= Self.maximumJump
            } else {
                sameSource = false
            }
            if !sameSource {
                offset = nextTimestamp &- sourceTimestamp
                marker = true
            }
            source = (sourceSSRC, sourceTimestamp)
            let timestamp = sourceTimestamp &+ offset
            let duration = UInt32(OpusPacketDuration.samples(payload) ?? 960)
            if sameSource, timestamp &- nextTimestamp > Self.maximumJump {
                // A late packet of the same source: keep its place, do not move the stream backwards.
            } else {
                nextTimestamp = timestamp &+ duration
            }

            var out = [UInt8](repeating: 0, count: 12 + payload.count)
            out[0] = 0x80
            out[1] = (marker ? 0x80 : 0) | payloadType
            out[2] = UInt8(sequenceNumber >> 8)
            out[3] = UInt8(truncatingIfNeeded: sequenceNumber)
            for (index, value) in [timestamp, ssrc].enumerated() {
                out[4 + 4 * index] = UInt8(value >> 24)
                out[5 + 4 * index] = UInt8(truncatingIfNeeded: value >> 16)
                out[6 + 4 * index] = UInt8(truncatingIfNeeded: value >> 8)
                out[7 + 4 * index] = UInt8(truncatingIfNeeded: value)
            }
            out.withUnsafeMutableBytes { UnsafeMutableRawBufferPointer(rebasing: $0[12...]).copyMemory(from: payload) }
            sequenceNumber &+= 1
            return out
        }
    }
}
