#if canImport(Glibc)
import Glibc
#endif

/// An RTCP sender report (RFC 3550 §6.4.1): which RTP timestamp of a stream its sender's wall clock
/// read at one instant. With it a receiver maps every RTP timestamp of the stream to the sender's wall
/// clock (`wallClock(ofTimestamp:clockRate:)`), so streams of different senders can be aligned by the
/// time they were captured rather than the time they arrived.
public struct RTCPSenderReport: Sendable, Hashable {
    /// The sender's synchronisation source: the stream the report is about.
    public var ssrc: UInt32
    /// The sender's wall clock as a 64-bit NTP timestamp: seconds since 1900 in the high 32 bits,
    /// the fraction of a second in the low 32.
    public var ntpTimestamp: UInt64
    /// The RTP timestamp (the stream's media clock) at the same instant.
    public var rtpTimestamp: UInt32
    /// Packets the sender has sent so far.
    public var packetCount: UInt32
    /// Payload bytes the sender has sent so far.
    public var octetCount: UInt32

    public init(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32) {
        self.ssrc = ssrc
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
    }

    /// Seconds between the NTP era (1900-01-01) and the Unix epoch (1970-01-01).
    public static let ntpToUnixSeconds: UInt64 = 2_208_988_800

    /// The report's wall-clock time in Unix seconds.
    public var unixTime: Double {
        Double((ntpTimestamp >> 32) &- Self.ntpToUnixSeconds) + Double(ntpTimestamp & 0xFFFF_FFFF) / 4_294_967_296
    }

    /// The NTP timestamp of a Unix time in seconds (≥ 0).
    public static func ntpTimestamp(unixTime: Double) -> UInt64 {
        let seconds = unixTime.rounded(.down)
        let fraction = UInt64(((unixTime - seconds) * 4_294_967_296).rounded(.down)) & 0xFFFF_FFFF
        return (UInt64(seconds) + ntpToUnixSeconds) << 32 | fraction
    }

    /// The wall clock now, in Unix seconds (`CLOCK_REALTIME`).
    public static func unixTimeNow() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// The sender's wall-clock time (Unix seconds) of an RTP timestamp of the stream, by the report's
    /// pair: `unixTime + (timestamp − rtpTimestamp) / clockRate`, the difference taken modulo 2³² as a
    /// signed 32-bit number (timestamps within ±12 h of the report's at 48 kHz).
    public func wallClock(ofTimestamp timestamp: UInt32, clockRate: Int) -> Double {
        unixTime + Double(Int32(bitPattern: timestamp &- rtpTimestamp)) / Double(clockRate)
    }

    /// The RTCP packet type of a sender report.
    public static let packetType: UInt8 = 200
    /// The RTCP packet type of source descriptions.
    static let sourceDescriptionType: UInt8 = 202

    /// The first sender report in a compound RTCP packet (RFC 3550 §6.1), or nil if it holds none or is
    /// malformed: every packet's version must be 2 and its length must fit the datagram; a sender report
    /// must be at least 28 bytes.
    /// - Parameter bytes: One UDP payload (`RTPPacket.isRTCP(bytes)` is true for it).
    /// - Complexity: O(packets in the compound). Allocates nothing.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> RTCPSenderReport? {
        var offset = 0
        while offset + 4 <= bytes.count {
            guard bytes[offset] >> 6 == 2 else { return nil }
            let length = 4 * (Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]) + 1)
            guard offset + length <= bytes.count else { return nil }
            if bytes[offset + 1] == packetType {
                guard length >= 28 else { return nil }
                return RTCPSenderReport(
                    ssrc: RTPPacket.bigEndian32(bytes, offset + 4),
                    ntpTimestamp: UInt64(RTPPacket.bigEndian32(bytes, offset + 8)) << 32
                        | UInt64(RTPPacket.bigEndian32(bytes, offset + 12)),
                    rtpTimestamp: RTPPacket.bigEndian32(bytes, offset + 16),
                    packetCount: RTPPacket.bigEndian32(bytes, offset + 20),
                    octetCount: RTPPacket.bigEndian32(bytes, offset + 24))
            }
            offset += length
        }
        return nil
    }

    /// Bytes `write` produces: a 28-byte sender report without report blocks, then a source description
    /// with the CNAME `cname` (RFC 3550 §6.5: every compound packet carries one), padded to 32 bits.
    public static func compoundLength(cnameBytes: Int) -> Int {
        precondition((1...255).contains(cnameBytes), "a CNAME is 1…255 bytes")
        // SDES: 4 header + 4 SSRC + 2 item header + text + at least one null byte, to a multiple of 4.
        return 28 + (8 + 2 + cnameBytes + 4) / 4 * 4
    }

    /// Writes the report as a compound RTCP packet: the sender report (no report blocks: the sender
    /// receives nothing), then an SDES packet with the CNAME.
    ///
    /// - Parameters:
    ///   - cname: The canonical name, 1…255 bytes of UTF-8.
    ///   - buffer: At least `compoundLength(cnameBytes:)` bytes (a caller bug otherwise).
    /// - Returns: The compound's length.
    /// - Complexity: O(CNAME). Allocates nothing.
    @discardableResult
    public func write(cname: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let length = Self.compoundLength(cnameBytes: cname.count)
        precondition(buffer.count >= length, "buffer too small for the RTCP compound")
        buffer[0] = 0x80
        buffer[1] = Self.packetType
        buffer[2] = 0
        buffer[3] = 6  // 28 bytes: 7 words, minus one
        RTPPacket.storeBigEndian32(ssrc, buffer, 4)
        RTPPacket.storeBigEndian32(UInt32(truncatingIfNeeded: ntpTimestamp >> 32), buffer, 8)
        RTPPacket.storeBigEndian32(UInt32(truncatingIfNeeded: ntpTimestamp), buffer, 12)
        RTPPacket.storeBigEndian32(rtpTimestamp, buffer, 16)
        RTPPacket.storeBigEndian32(packetCount, buffer, 20)
        RTPPacket.storeBigEndian32(octetCount, buffer, 24)
        let sdes = 28, sdesLength = length - 28
        buffer[sdes] = 0x81  // one chunk
        buffer[sdes + 1] = Self.sourceDescriptionType
        buffer[sdes + 2] = UInt8(truncatingIfNeeded: (sdesLength / 4 - 1) >> 8)
        buffer[sdes + 3] = UInt8(truncatingIfNeeded: sdesLength / 4 - 1)
        RTPPacket.storeBigEndian32(ssrc, buffer, sdes + 4)
        buffer[sdes + 8] = 1  // CNAME
        buffer[sdes + 9] = UInt8(cname.count)
        UnsafeMutableRawBufferPointer(rebasing: buffer[(sdes + 10)..<(sdes + 10 + cname.count)]).copyMemory(from: cname)
        // The item list ends with a null byte; the chunk is padded with nulls to 32 bits.
        var index = sdes + 10 + cname.count
        while index < length {
            buffer[index] = 0
            index += 1
        }
        return length
    }
}
