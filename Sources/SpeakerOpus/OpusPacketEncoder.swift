internal import COpus
import SpeakerIO

/// Encodes mono `Float` audio into Opus packets of 20 ms (for tests and RTP senders).
///
/// Uses `OPUS_APPLICATION_VOIP` (tuned for speech). One encoder per stream; not thread-safe.
public final class OpusPacketEncoder {
    /// Input samples per second: 8000, 12000, 16000, 24000 or 48000 (normally 16000 or 48000).
    public let sampleRate: Int
    /// Samples per packet: 20 ms at `sampleRate` (320 at 16 kHz, 960 at 48 kHz).
    public var frameSize: Int { sampleRate / 50 }
    /// Target bit rate in bits per second.
    public private(set) var bitrate: Int
    /// Encoder delay in samples at `sampleRate`: decoded audio lags the input by this much
    /// (6.5 ms: 104 samples at 16 kHz, 312 at 48 kHz).
    public let lookahead: Int

    /// The largest packet Opus produces for one 20 ms frame, in bytes.
    public static let maximumPacketBytes = 1275

    private let encoder: OpaquePointer

    /// Creates a mono speech encoder.
    ///
    /// The corresponding C function is `opus_encoder_create`.
    ///
    /// - Parameters:
    ///   - sampleRate: Input rate in Hz: 8000, 12000, 16000, 24000 or 48000 (a caller bug otherwise).
    ///   - bitrate: Bits per second, 500…512000; 32000 by default.
    /// - Throws: `.codecFailed` if libopus refuses the bit rate or cannot allocate.
    public init(sampleRate: Int = 48000, bitrate: Int = 32000) throws {
        precondition(OpusStatus.supportedRates.contains(sampleRate), "Opus encodes at 8, 12, 16, 24 or 48 kHz")
        self.sampleRate = sampleRate
        self.bitrate = bitrate
        var status: Int32 = 0
        let encoder = opus_encoder_create(Int32(sampleRate), 1, OPUS_APPLICATION_VOIP, &status)
        guard let encoder, status == OPUS_OK else {
            throw OpusStatus.error(
                status == OPUS_OK ? OPUS_ALLOC_FAIL : status, "opus_encoder_create",
                subject: .processor("Opus encoder (\(sampleRate) Hz)"))
        }
        self.encoder = encoder
        var lookahead: Int32 = 0
        _ = as_opus_encoder_get_lookahead(encoder, &lookahead)
        self.lookahead = Int(lookahead)
        try setBitrate(bitrate)
    }

    deinit {
        opus_encoder_destroy(encoder)
    }

    /// Changes the target bit rate from the next packet on.
    ///
    /// The corresponding C function is `opus_encoder_ctl(OPUS_SET_BITRATE)`.
    ///
    /// - Parameter bitsPerSecond: 500…512000.
    /// - Throws: `.codecFailed` (libopus "invalid argument") for a value it refuses; the old rate stays.
    public func setBitrate(_ bitsPerSecond: Int) throws {
        let status = as_opus_encoder_set_bitrate(encoder, Int32(clamping: bitsPerSecond))
        _ = try OpusStatus.check(status, "opus_encoder_ctl(OPUS_SET_BITRATE)", subject: subject)
        bitrate = bitsPerSecond
    }

    /// Makes every packet carry in-band FEC (SILK LBRR) for the packet before it, sized for the expected
    /// loss, so that a receiver can decode a lost packet from the next one (`OpusPacketDecoder.decodeFEC`).
    /// Costs bits: at 32 kbit/s speech, packets grow by about a fifth while the rate is held.
    ///
    /// The corresponding C functions are `opus_encoder_ctl(OPUS_SET_INBAND_FEC)` and
    /// `opus_encoder_ctl(OPUS_SET_PACKET_LOSS_PERC)`.
    ///
    /// - Parameter expectedLossPercent: 0…100; 0 turns FEC off. libopus sends FEC only for a loss above 0.
    /// - Throws: `.codecFailed` if libopus refuses a value.
    public func setInbandFEC(expectedLossPercent: Int) throws {
        precondition((0...100).contains(expectedLossPercent), "a loss percentage is 0…100")
        _ = try OpusStatus.check(
            as_opus_encoder_set_inband_fec(encoder, expectedLossPercent > 0 ? 1 : 0), "opus_encoder_ctl(OPUS_SET_INBAND_FEC)", subject: subject)
        _ = try OpusStatus.check(
            as_opus_encoder_set_packet_loss_perc(encoder, Int32(expectedLossPercent)), "opus_encoder_ctl(OPUS_SET_PACKET_LOSS_PERC)",
            subject: subject)
        self.expectedLossPercent = expectedLossPercent
    }

    /// The loss the in-band FEC is sized for, in percent; 0: no FEC (the default).
    public private(set) var expectedLossPercent = 0

    /// Encodes one 20 ms frame into a caller-owned buffer.
    ///
    /// The corresponding C function is `opus_encode_float`.
    ///
    /// - Parameters:
    ///   - pcm: Exactly `frameSize` samples, nominally in [-1, 1].
    ///   - packet: Receives the packet; `maximumPacketBytes` always suffices.
    /// - Returns: Bytes written (1 or 2 for digital silence or DTX-like frames).
    /// - Throws: `.codecFailed` (e.g. libopus "buffer too small").
    /// - Complexity: O(frameSize). Allocates nothing on success.
    public func encode(_ pcm: UnsafeBufferPointer<Float>, into packet: UnsafeMutableRawBufferPointer) throws -> Int {
        precondition(pcm.count == frameSize, "Opus packets here are 20 ms: \(frameSize) samples")
        precondition(!packet.isEmpty, "packet buffer is empty")
        let status = opus_encode_float(
            encoder, pcm.baseAddress!, Int32(frameSize),
            packet.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(clamping: packet.count))
        return try OpusStatus.check(status, "opus_encode_float", subject: subject)
    }

    /// Encodes one 20 ms frame and returns the packet (allocates it).
    ///
    /// The corresponding C function is `opus_encode_float`.
    ///
    /// - Parameter pcm: Exactly `frameSize` samples, nominally in [-1, 1].
    /// - Returns: The Opus packet, 1…1275 bytes.
    /// - Throws: `.codecFailed` if libopus fails.
    public func encode(_ pcm: UnsafeBufferPointer<Float>) throws -> [UInt8] {
        var packet = [UInt8](repeating: 0, count: Self.maximumPacketBytes)
        let count = try packet.withUnsafeMutableBytes { try encode(pcm, into: $0) }
        packet.removeLast(packet.count - count)
        return packet
    }

    private var subject: SpeakerIOError.Subject { .processor("Opus encoder (\(sampleRate) Hz)") }
}

@available(*, unavailable, message: "OpusPacketEncoder wraps one OpusEncoder, which libopus does not share between threads")
extension OpusPacketEncoder: Sendable {}
