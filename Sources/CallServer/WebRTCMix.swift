import SpeakerCore
import SpeakerIO
import SpeakerOpus
import SpeakerRTP

/// What a browser hears: the room's other publishers, mixed on the server and sent as one Opus RTP
/// stream.
///
/// The server answers a browser with one audio track (webrtcbin's one send transceiver, no
/// renegotiation), so forwarding packets lets it hear one source at a time (`ForwardedSourceSelector`).
/// The media loop decodes every publisher's 10 ms hop (16 kHz) for the engine anyway; a mix costs, per
/// listening browser, one sum of the others' hops every 10 ms and one Opus encoding every 20 ms.
///
/// A stage owned by the media loop's thread: `add` takes one tick's mix, and every second tick hands
/// one RTP packet (20 ms of Opus, payload type 111, 48 kHz timestamps as RFC 7587 has them) to `send`.
/// The relay's `RTPStreamRewriter` then gives it the peer's SSRC and payload type.
struct WebRTCMix {
    /// The mix's own source id (any; the relay rewrites it).
    let ssrc: UInt32
    /// 16 kHz, 32 kbit/s, speech.
    private let encoder: OpusPacketEncoder
    /// The 20 ms being filled (320 samples).
    private var frame: [Float]
    private var filled = 0
    private var packet: [UInt8]
    private var payload: [UInt8]
    private var sequenceNumber: UInt16 = 0
    private var timestamp: UInt32 = 0
    /// Packets made so far.
    private(set) var packetsMade = 0

    /// - Throws: `SpeakerIOError` if libopus cannot make an encoder.
    init(ssrc: UInt32) throws {
        self.ssrc = ssrc
        encoder = try OpusPacketEncoder(sampleRate: AnalysisFormat.sampleRate)
        frame = [Float](repeating: 0, count: encoder.frameSize)
        payload = [UInt8](repeating: 0, count: OpusPacketEncoder.maximumPacketBytes)
        packet = [UInt8](repeating: 0, count: RTPPacket.headerLength(withAudioLevel: false) + OpusPacketEncoder.maximumPacketBytes)
    }

    /// Adds one tick's mix (`hop`, 160 samples; clipped to ±1 here); every 20 ms calls `send` with a packet.
    /// - Complexity: O(hop), plus one Opus encoding every second call. Allocates nothing.
    mutating func add(_ hop: UnsafeBufferPointer<Float>, send: (UnsafeRawBufferPointer) -> Void) {
        precondition(filled + hop.count <= frame.count, "a hop is 10 ms")
        for i in hop.indices { frame[filled + i] = Swift.max(-1, Swift.min(1, hop[i])) }
        filled += hop.count
        guard filled == frame.count else { return }
        filled = 0
        let encoder = self.encoder, marker = packetsMade == 0, sequenceNumber = self.sequenceNumber, timestamp = self.timestamp
        let ssrc = self.ssrc
        let bytes = frame.withUnsafeBufferPointer { pcm in payload.withUnsafeMutableBytes { try? encoder.encode(pcm, into: $0) } } ?? 0
        guard bytes > 0 else { return }
        let length = payload.withUnsafeBytes { encoded in
            packet.withUnsafeMutableBytes { buffer in
                RTPPacket.write(
                    marker: marker, payloadType: 111, sequenceNumber: sequenceNumber, timestamp: timestamp, ssrc: ssrc,
                    payload: UnsafeRawBufferPointer(rebasing: encoded[..<bytes]), into: buffer)
            }
        }
        self.sequenceNumber &+= 1
        self.timestamp &+= 960
        packetsMade += 1
        packet.withUnsafeBytes { send(UnsafeRawBufferPointer(rebasing: $0[..<length])) }
    }
}
