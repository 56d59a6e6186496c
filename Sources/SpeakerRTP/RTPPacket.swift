import SpeakerBase

/// Why an RTP packet was dropped as malformed.
public enum RTPMalformation: String, Sendable, CaseIterable, Hashable {
    /// Shorter than the 12-byte header, or than its CSRC list.
    case tooShort
    /// The version field is not 2.
    case badVersion
    /// The padding count is 0 or longer than the payload.
    case badPadding
    /// A header extension, or one of its elements, runs past its end.
    case badExtensionLength
    /// Nothing after the header.
    case emptyPayload
    /// libopus rejects the payload.
    case invalidOpus
}

/// One RTP packet (RFC 3550), parsed in place: fields and byte ranges of a caller-owned buffer.
///
/// Parsing checks everything the receiver relies on and copies nothing, so it costs a few dozen
/// instructions and allocates nothing. Header extensions (RFC 8285) are checked element by element in
/// both forms — one-byte (profile `0xBEDE`) and two-byte (profile `0x100x`) — and the RFC 6464 audio
/// level is taken from the element whose id the caller gives (from SDP's `a=extmap`). Extensions of
/// other profiles are skipped as opaque.
public struct RTPPacket: Sendable, Hashable {
    /// The marker bit (for audio: the first packet of a talk spurt).
    public var marker: Bool
    /// The payload type, 0…127.
    public var payloadType: UInt8
    /// The sequence number, wrapping at 65536.
    public var sequenceNumber: UInt16
    /// The media timestamp, wrapping at 2³² (48 kHz for Opus, RFC 7587).
    public var timestamp: UInt32
    /// The synchronisation source.
    public var ssrc: UInt32
    /// The header extension's profile (`0xBEDE` one-byte, `0x1000…0x100F` two-byte), if there is an extension.
    public var extensionProfile: UInt16?
    /// The RFC 6464 audio level, if the packet has the element the parser was asked for.
    public var audioLevel: AudioLevel?
    /// Bytes of the payload within the parsed buffer (padding excluded).
    public var payload: Range<Int>

    /// The RTP-over-UDP packets of RTCP (RFC 5761): second byte 192…223. A receiver sharing one port
    /// for both skips these without counting them as malformed.
    public static func isRTCP(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 2 && bytes[0] >> 6 == 2 && (192...223).contains(bytes[1])
    }

    /// The outcome of parsing: a packet, or why it is malformed.
    public enum Parsed: Sendable, Hashable {
        case packet(RTPPacket)
        case malformed(RTPMalformation)
    }

    /// Parses `bytes` as one RTP packet.
    ///
    /// - Parameters:
    ///   - bytes: One UDP payload.
    ///   - audioLevelID: The extension id of `urn:ietf:params:rtp-hdrext:ssrc-audio-level` (1…14 in the
    ///     one-byte form, 1…255 in the two-byte form), or nil not to look for it.
    /// - Returns: The packet, or the first problem found: `.tooShort`, `.badVersion`, `.badExtensionLength`,
    ///   `.badPadding`, `.emptyPayload`.
    /// - Complexity: O(extension bytes). Allocates nothing.
    public static func parse(_ bytes: UnsafeRawBufferPointer, audioLevelID: Int? = nil) -> Parsed {
        let count = bytes.count
        guard count >= 12 else { return .malformed(.tooShort) }
        let first = bytes[0]
        guard first >> 6 == 2 else { return .malformed(.badVersion) }
        let hasPadding = first & 0x20 != 0
        let hasExtension = first & 0x10 != 0
        var offset = 12 + 4 * Int(first & 0x0F)
        guard offset <= count else { return .malformed(.tooShort) }
        var packet = RTPPacket(
            marker: bytes[1] & 0x80 != 0, payloadType: bytes[1] & 0x7F,
            sequenceNumber: UInt16(bytes[2]) << 8 | UInt16(bytes[3]),
            timestamp: bigEndian32(bytes, 4), ssrc: bigEndian32(bytes, 8),
            extensionProfile: nil, audioLevel: nil, payload: 0..<0)
        if hasExtension {
            guard offset + 4 <= count else { return .malformed(.badExtensionLength) }
            let profile = UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
            let words = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let start = offset + 4, end = start + 4 * words
            guard end <= count else { return .malformed(.badExtensionLength) }
            packet.extensionProfile = profile
            let elements = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            guard let level = HeaderExtensionElements.audioLevel(in: elements, profile: profile, id: audioLevelID) else {
                return .malformed(.badExtensionLength)
            }
            packet.audioLevel = level
            offset = end
        }
        var end = count
        if hasPadding {
            let padding = Int(bytes[count - 1])
            guard padding > 0, offset + padding <= count else { return .malformed(.badPadding) }
            end -= padding
        }
        guard end > offset else { return .malformed(.emptyPayload) }
        packet.payload = offset..<end
        return .packet(packet)
    }

    @inline(__always)
    static func bigEndian32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }
}

/// The elements of an RFC 8285 header extension block.
public enum HeaderExtensionElements {
    /// One element: its id and its data within the block.
    public struct Element: Sendable, Hashable {
        public var id: Int
        public var data: Range<Int>
    }

    /// Walks the elements of a block, calling `body` for each; returns false if an element runs past
    /// the block (the packet is malformed).
    ///
    /// One-byte form (profile `0xBEDE`): a byte `ID(4 bits) | L(4 bits)` then L+1 bytes; a byte with
    /// id 0 is one byte of padding; id 15 ends the walk (RFC 8285 §4.2). Two-byte form (profile `0x100x`, the low 4 bits are
    /// application bits): an id byte, a length byte, then that many bytes (0 allowed); a zero id byte is
    /// padding. Other profiles are not RFC 8285: the block is opaque and valid.
    /// - Complexity: O(block bytes).
    public static func forEach(
        in block: UnsafeRawBufferPointer, profile: UInt16, _ body: (Element) -> Void
    ) -> Bool {
        var walker = Walker(block: block, profile: profile)
        while let element = walker.next() { body(element) }
        return !walker.malformed
    }

    /// Steps through the elements of a block without a closure (so the packet path allocates nothing).
    struct Walker {
        let block: UnsafeRawBufferPointer
        let profile: UInt16
        var index = 0
        /// Set when an element runs past the block; `next()` then returns nil.
        private(set) var malformed = false

        init(block: UnsafeRawBufferPointer, profile: UInt16) {
            self.block = block
            self.profile = profile
            if profile != 0xBEDE && profile & 0xFFF0 != 0x1000 { index = block.count }
        }

        /// The next element, or nil at the end (or at a malformed element).
        mutating func next() -> Element? {
            let count = block.count
            while index < count {
                let header = block[index]
                // Padding: a zero byte; in the one-byte form any byte with id 0 (RFC 8285 reserves id 0
                // for padding; like libwebrtc, its length bits are ignored).
                if header == 0 || (profile == 0xBEDE && header >> 4 == 0) {
                    index += 1
                    continue
                }
                let id: Int, start: Int, length: Int
                if profile == 0xBEDE {
                    id = Int(header >> 4)
                    if id == 15 {
                        index = count
                        return nil
                    }
                    start = index + 1
                    length = Int(header & 0x0F) + 1
                } else {
                    guard index + 2 <= count else { return fail() }
                    id = Int(header)
                    start = index + 2
                    length = Int(block[index + 1])
                }
                guard start + length <= count else { return fail() }
                index = start + length
                return Element(id: id, data: start..<start + length)
            }
            return nil
        }

        private mutating func fail() -> Element? {
            malformed = true
            index = block.count
            return nil
        }
    }

    /// Checks a block and reads the RFC 6464 audio level from element `id`.
    /// - Returns: nil if the block is malformed; else the level, nil inside when absent.
    ///   The level is the first data byte (V in the top bit, the level in the low 7); RFC 6464 gives it
    ///   one byte, longer elements (some senders pad) are read the same way.
    static func audioLevel(in block: UnsafeRawBufferPointer, profile: UInt16, id: Int?) -> AudioLevel?? {
        var found: AudioLevel?
        var walker = Walker(block: block, profile: profile)
        while let element = walker.next() {
            if element.id == id, !element.data.isEmpty, found == nil {
                let byte = block[element.data.lowerBound]
                found = AudioLevel(level: byte & 0x7F, voice: byte & 0x80 != 0)
            }
        }
        return walker.malformed ? nil : .some(found)
    }
}
