import SpeakerIO
import SpeakerOpus

/// Publishes 20 ms frames of 48 kHz mono audio as Opus over RTP (RFC 7587), with the RFC 6464 audio
/// level in an RFC 8285 one-byte header extension, from one UDP socket.
///
/// Per frame `send` encodes (libopus, `OPUS_APPLICATION_VOIP`, 32 kbit/s by default), measures the
/// frame's level, writes the RTP header in front of the Opus packet in one preallocated buffer, and
/// sends it without blocking. The sequence number advances by 1 per packet and the timestamp by 960
/// (20 ms at the 48 kHz RTP clock) per frame. The marker bit is set on the first packet of each talk
/// spurt: the first packet, and the first after `resume()` or `skip(frames:)`.
///
/// Every packet carries Opus in-band FEC for the one before it (sized for 10 % loss by default), so a
/// receiver can decode a lost packet from the next. After the first packet and then every
/// `senderReportInterval` packets (1 s by default) it also sends an RTCP sender report (RFC 3550 §6.4.1,
/// with an SDES CNAME) to the same address: the RTP timestamp of the audio's end and the wall clock
/// then, which lets a receiver align this stream with others by capture time.
///
/// A muted publisher calls `skip(frames:)` for each frame it does not send, so its timestamp clock
/// keeps running: the next packet continues with a timestamp gap and consecutive sequence numbers,
/// as a WebRTC client does after a mute.
///
/// The socket is the publisher's RTP port: give its `port` in `join`, and receive the packets the
/// server forwards from it (`receive(into:from:)` or `socket`). Not thread-safe: one thread sends;
/// the socket may be read from another.
public final class RTPAudioSender {
    /// The socket packets go out of (and forwarded packets come in to).
    public let socket: UDPSocket
    /// The socket's bound port.
    public var port: Int { socket.port }
    /// The synchronisation source (assigned by the room server).
    public let ssrc: UInt32
    /// The RTP payload type, 0…127 (111 by default).
    public let payloadType: UInt8
    /// The one-byte extension id of the audio level, 1…14 (1 by default).
    public let audioLevelID: Int
    /// The sequence number of the next packet.
    public private(set) var sequenceNumber: UInt16
    /// The RTP timestamp of the next frame.
    public private(set) var timestamp: UInt32
    /// Packets the socket took.
    public private(set) var packetsSent = 0
    /// Packets the socket refused (send buffer full, unreachable network, other address family).
    public private(set) var packetsNotSent = 0
    /// The level sent with the last packet.
    public private(set) var lastAudioLevel: AudioLevel?
    /// The Opus bit rate in bits per second.
    public var bitrate: Int { encoder.bitrate }
    /// Packets between RTCP sender reports; 0: none.
    public let senderReportInterval: Int
    /// RTCP sender reports the socket took.
    public private(set) var senderReportsSent = 0

    /// Samples per frame: 960 (20 ms at 48 kHz).
    public static let frameSize = 960

    private let encoder: OpusPacketEncoder
    private let packet: UnsafeMutableRawBufferPointer
    private var markNext = true
    private var octetsSent: UInt32 = 0
    /// The compound RTCP packet (sender report and SDES) and the CNAME it carries.
    private let report: UnsafeMutableRawBufferPointer
    private let cname: [UInt8]

    /// Creates a sender on a bound socket.
    ///
    /// - Parameters:
    ///   - socket: A bound socket (e.g. `UDPSocket(address: "0.0.0.0:0")`), made before `join` so its port
    ///     can be announced.
    ///   - ssrc: The synchronisation source.
    ///   - payloadType: 0…127; 111 by default.
    ///   - audioLevelID: 1…14; 1 by default.
    ///   - bitrate: Opus bits per second; 32000 by default (24000…32000 suits speech).
    ///   - firstSequenceNumber: The first packet's sequence number; random by default (RFC 3550).
    ///   - firstTimestamp: The first frame's timestamp; random by default.
    ///   - expectedLossPercent: The loss in-band FEC is sized for, 0…100 (0: no FEC); 10 by default.
    ///   - senderReportInterval: Packets between RTCP sender reports (0: none); 50 (1 s) by default.
    /// - Throws: `SpeakerIOError` (`.codecFailed`) if libopus refuses the bit rate.
    public init(
        socket: UDPSocket, ssrc: UInt32, payloadType: UInt8 = 111, audioLevelID: Int = 1, bitrate: Int = 32000,
        firstSequenceNumber: UInt16 = .random(in: .min ... .max), firstTimestamp: UInt32 = .random(in: .min ... .max),
        expectedLossPercent: Int = 10, senderReportInterval: Int = 50
    ) throws {
        precondition(senderReportInterval >= 0, "an interval ≥ 0")
        precondition(payloadType < 128, "the payload type is 7 bits")
        precondition((1...14).contains(audioLevelID), "a one-byte extension id is 1…14")
        self.socket = socket
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.audioLevelID = audioLevelID
        sequenceNumber = firstSequenceNumber
        timestamp = firstTimestamp
        encoder = try OpusPacketEncoder(sampleRate: 48000, bitrate: bitrate)
        try encoder.setInbandFEC(expectedLossPercent: expectedLossPercent)
        self.senderReportInterval = senderReportInterval
        let hex = String(ssrc, radix: 16)
        cname = Array(("activespeaker-" + String(repeating: "0", count: 8 - hex.count) + hex).utf8)
        report = .allocate(byteCount: RTCPSenderReport.compoundLength(cnameBytes: cname.count), alignment: 16)
        report.initializeMemory(as: UInt8.self, repeating: 0)
        packet = .allocate(
            byteCount: RTPPacket.headerLength(withAudioLevel: true) + OpusPacketEncoder.maximumPacketBytes, alignment: 16)
        packet.initializeMemory(as: UInt8.self, repeating: 0)
    }

    /// Binds a socket to `localAddress` (`HOST:PORT`, port 0 for any) and creates a sender on it.
    /// - Throws: `SpeakerIOError` for the address (see `UDPSocket`) or the encoder.
    public convenience init(
        localAddress: String, ssrc: UInt32, payloadType: UInt8 = 111, audioLevelID: Int = 1, bitrate: Int = 32000,
        firstSequenceNumber: UInt16 = .random(in: .min ... .max), firstTimestamp: UInt32 = .random(in: .min ... .max),
        expectedLossPercent: Int = 10, senderReportInterval: Int = 50
    ) throws {
        try self.init(
            socket: UDPSocket(address: localAddress), ssrc: ssrc, payloadType: payloadType, audioLevelID: audioLevelID,
            bitrate: bitrate, firstSequenceNumber: firstSequenceNumber, firstTimestamp: firstTimestamp,
            expectedLossPercent: expectedLossPercent, senderReportInterval: senderReportInterval)
    }

    deinit {
        packet.deallocate()
        report.deallocate()
    }

    /// Encodes, packetises and sends one frame.
    ///
    /// - Parameters:
    ///   - frame: 960 samples (20 ms at 48 kHz), nominally in [-1, 1] (a caller bug otherwise).
    ///   - address: The receiver (the room server's `media.rtpPort`).
    ///   - voice: The RFC 6464 V flag (the sender's own voice-activity decision); false by default.
    /// - Returns: True if the socket took the packet. The sequence number and timestamp advance either way
    ///   (a refused packet is a lost packet to the receiver).
    /// - Throws: `SpeakerIOError` (`.codecFailed`) if libopus fails.
    /// - Complexity: One Opus encode and one system call. Allocates nothing.
    @discardableResult
    public func send(frame: UnsafeBufferPointer<Float>, to address: SocketAddress, voice: Bool = false) throws -> Bool {
        precondition(frame.count == Self.frameSize, "a frame is \(Self.frameSize) samples (20 ms at 48 kHz)")
        // A report's wall clock is read as the frame is handed over: its end is captured now.
        let packets = packetsSent + packetsNotSent + 1
        let reportDue = senderReportInterval > 0 && packets % senderReportInterval == 1 % senderReportInterval
        let handedOver = reportDue ? RTCPSenderReport.unixTimeNow() : 0
        let level = AudioLevel(meanSquare: AudioLevel.meanSquare(frame), voice: voice)
        let header = RTPPacket.writeHeader(
            marker: markNext, payloadType: payloadType, sequenceNumber: sequenceNumber, timestamp: timestamp,
            ssrc: ssrc, audioLevel: level, audioLevelID: audioLevelID, into: packet)
        let payload = try encoder.encode(frame, into: UnsafeMutableRawBufferPointer(rebasing: packet[header...]))
        let sent = socket.send(UnsafeRawBufferPointer(rebasing: packet[..<(header + payload)]), to: address)
        if sent { packetsSent += 1 } else { packetsNotSent += 1 }
        lastAudioLevel = level
        markNext = false
        sequenceNumber &+= 1
        timestamp &+= UInt32(Self.frameSize)
        octetsSent &+= UInt32(truncatingIfNeeded: payload)
        if reportDue { sendReport(capturedAt: handedOver, to: address) }
        return sent
    }

    /// Sends a sender report: the frame just sent ended at `time` (Unix seconds, when it was handed over), so
    /// the next frame's timestamp is that time's.
    private func sendReport(capturedAt time: Double, to address: SocketAddress) {
        let sr = RTCPSenderReport(
            ssrc: ssrc, ntpTimestamp: RTCPSenderReport.ntpTimestamp(unixTime: time),
            rtpTimestamp: timestamp, packetCount: UInt32(truncatingIfNeeded: packetsSent), octetCount: octetsSent)
        let length = cname.withUnsafeBytes { sr.write(cname: $0, into: report) }
        if socket.send(UnsafeRawBufferPointer(rebasing: report[..<length]), to: address) { senderReportsSent += 1 }
    }

    /// Advances the timestamp clock over `frames` frames that are not sent (muted); the next packet
    /// starts a talk spurt (marker set).
    /// - Parameter frames: ≥ 0.
    public func skip(frames: Int = 1) {
        precondition(frames >= 0, "frames ≥ 0")
        timestamp &+= UInt32(truncatingIfNeeded: frames &* Self.frameSize)
        if frames > 0 { markNext = true }
    }

    /// Marks the next packet as the start of a talk spurt (after unmuting, or a pause the caller
    /// accounted for with `skip`).
    public func resume() {
        markNext = true
    }

    /// Receives one datagram (a packet the server forwarded) without waiting; see `UDPSocket`.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, from address: inout SocketAddress) -> Int? {
        socket.receive(into: buffer, from: &address)
    }
}
