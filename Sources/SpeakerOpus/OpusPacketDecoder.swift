internal import COpus
import SpeakerBase
import SpeakerIO

/// Decodes mono Opus packets (one per RTP payload, say) to `Float` samples at a chosen rate, with
/// packet-loss concealment.
///
/// The caller owns the output buffers, so decoding allocates nothing. One decoder per stream; not thread-safe.
public final class OpusPacketDecoder {
    /// Output samples per second: 8000, 12000, 16000, 24000 or 48000.
    public let sampleRate: Int
    /// The most samples one packet can decode to (120 ms): size output buffers with this.
    public var maximumPacketSamples: Int { sampleRate * 120 / 1000 }
    /// Samples in 2.5 ms, the step that concealment durations must be a multiple of.
    public var concealmentGranule: Int { sampleRate / 400 }

    private let decoder: OpaquePointer

    /// Creates a mono decoder.
    ///
    /// The corresponding C function is `opus_decoder_create`.
    ///
    /// - Parameter sampleRate: Output rate in Hz, one of 8000, 12000, 16000, 24000, 48000 (a caller bug otherwise).
    ///   Opus decodes to any of them whatever rate the sender encoded at.
    /// - Throws: `.codecFailed(operation: "opus_decoder_create")` if libopus fails (out of memory).
    public init(sampleRate: Int = AnalysisFormat.sampleRate) throws {
        precondition(OpusStatus.supportedRates.contains(sampleRate), "Opus decodes at 8, 12, 16, 24 or 48 kHz")
        self.sampleRate = sampleRate
        var status: Int32 = 0
        let decoder = opus_decoder_create(Int32(sampleRate), 1, &status)
        guard let decoder, status == OPUS_OK else {
            throw OpusStatus.error(
                status == OPUS_OK ? OPUS_ALLOC_FAIL : status, "opus_decoder_create",
                subject: .processor("Opus decoder (\(sampleRate) Hz)"))
        }
        self.decoder = decoder
    }

    deinit {
        opus_decoder_destroy(decoder)
    }

    /// Decodes one packet.
    ///
    /// The corresponding C function is `opus_decode_float`.
    ///
    /// - Parameters:
    ///   - packet: One complete Opus packet (1…1275 bytes per frame; up to 120 ms of audio).
    ///   - output: Receives the samples; at least the packet's duration (`maximumPacketSamples` always suffices).
    /// - Returns: Samples written (at `sampleRate`), e.g. 320 for a 20 ms packet at 16 kHz.
    /// - Throws: `.invalidPacket` for an empty or malformed packet, `.codecFailed` (libopus "buffer too small")
    ///   if `output` is shorter than the packet. The decoder stays usable.
    /// - Complexity: O(packet duration). Allocates nothing on success.
    public func decode(packet: UnsafeRawBufferPointer, into output: UnsafeMutableBufferPointer<Float>) throws -> Int {
        precondition(!output.isEmpty, "output buffer is empty")
        // libopus treats a zero-length packet as a lost one; here that is the caller's `concealLoss`.
        guard let bytes = packet.baseAddress, packet.count > 0, packet.count <= Int(Int32.max) else {
            throw OpusStatus.error(OPUS_INVALID_PACKET, "opus_decode_float", subject: subject)
        }
        let status = opus_decode_float(
            decoder, bytes.assumingMemoryBound(to: UInt8.self), Int32(packet.count),
            output.baseAddress!, Int32(clamping: output.count), 0)
        return try OpusStatus.check(status, "opus_decode_float", subject: subject)
    }

    /// Synthesises audio for lost packets (packet-loss concealment), continuing the last decoded signal.
    ///
    /// Pass the duration of the missing packets (e.g. `lastPacketDuration` per lost packet); libopus conceals in
    /// steps of at most 20 ms and fades towards silence over long gaps. Before any packet was decoded it gives silence.
    /// The corresponding C function is `opus_decode_float` with NULL data.
    ///
    /// - Parameters:
    ///   - samples: Samples to synthesise, > 0 and a multiple of `concealmentGranule` (2.5 ms).
    ///   - output: Receives them; at least `samples` long.
    /// - Returns: `samples`.
    /// - Throws: `.codecFailed` if libopus refuses.
    /// - Complexity: O(samples). Allocates nothing on success.
    public func concealLoss(samples: Int, into output: UnsafeMutableBufferPointer<Float>) throws -> Int {
        precondition(samples > 0 && samples % concealmentGranule == 0, "conceal a positive multiple of 2.5 ms")
        precondition(output.count >= samples, "output is shorter than the concealed duration")
        let status = opus_decode_float(decoder, nil, 0, output.baseAddress!, Int32(samples), 0)
        return try OpusStatus.check(status, "opus_decode_float", subject: subject)
    }

    /// Decodes a lost packet from the in-band FEC (LBRR) data of the packet that follows it.
    ///
    /// Call it when packet `n` is lost and packet `n + 1` has arrived, before decoding `n + 1` itself. Where
    /// `next` carries no FEC data (`hasInbandFEC` is false: a CELT-only packet, or a sender without FEC),
    /// libopus conceals instead. The corresponding C function is `opus_decode_float` with `decode_fec` = 1.
    ///
    /// - Parameters:
    ///   - next: The packet after the lost one.
    ///   - samples: The lost packet's duration, > 0 and a multiple of `concealmentGranule` (2.5 ms).
    ///   - output: Receives them; at least `samples` long.
    /// - Returns: `samples`.
    /// - Throws: `.invalidPacket` for a malformed `next`, `.codecFailed` if libopus refuses.
    /// - Complexity: O(samples). Allocates nothing on success.
    public func decodeFEC(from next: UnsafeRawBufferPointer, samples: Int, into output: UnsafeMutableBufferPointer<Float>) throws -> Int {
        precondition(samples > 0 && samples % concealmentGranule == 0, "recover a positive multiple of 2.5 ms")
        precondition(output.count >= samples, "output is shorter than the recovered duration")
        guard let bytes = next.baseAddress, next.count > 0, next.count <= Int(Int32.max) else {
            throw OpusStatus.error(OPUS_INVALID_PACKET, "opus_decode_float", subject: subject)
        }
        let status = opus_decode_float(
            decoder, bytes.assumingMemoryBound(to: UInt8.self), Int32(next.count), output.baseAddress!, Int32(samples), 1)
        return try OpusStatus.check(status, "opus_decode_float", subject: subject)
    }

    /// How many samples an Opus packet decodes to at `sampleRate`, read from its TOC byte(s) without decoding.
    /// - Returns: The samples per channel (at most 120 ms' worth), or nil when libopus cannot size the packet
    ///   (empty, or a malformed frame count).
    /// - Complexity: O(1). Allocates nothing. The corresponding C function is `opus_packet_get_nb_samples`.
    public static func samples(in packet: UnsafeRawBufferPointer, sampleRate: Int = AnalysisFormat.sampleRate) -> Int? {
        guard let bytes = packet.baseAddress?.assumingMemoryBound(to: UInt8.self), packet.count > 0 else { return nil }
        let samples = opus_packet_get_nb_samples(bytes, Int32(clamping: packet.count), Int32(sampleRate))
        return samples > 0 ? Int(samples) : nil
    }

    /// Whether an Opus packet carries in-band FEC (SILK LBRR) data for the packet before it.
    ///
    /// Only SILK and hybrid packets can (TOC configurations 0…15). The flag is the first range-coded
    /// symbol after the first frame's voice-activity flags (RFC 6716 §4.2.3: one VAD flag per 20 ms SILK
    /// frame, then the LBRR flag, each a bit of probability ½); this reads those bits with the range
    /// decoder of RFC 6716 §4.1, as libopus 1.5's `opus_packet_has_lbrr` does (1.3.1 lacks it).
    /// - Complexity: O(1). Allocates nothing.
    public static func hasInbandFEC(_ packet: UnsafeRawBufferPointer) -> Bool {
        guard let bytes = packet.baseAddress?.assumingMemoryBound(to: UInt8.self), packet.count > 1 else { return false }
        let config = bytes[0] >> 3
        guard config < 16 else { return false }
        var offset: Int32 = 0, size: Int32 = 0
        guard as_opus_first_frame(bytes, Int32(clamping: packet.count), &offset, &size) > 0, size > 0 else { return false }
        // SILK frames per Opus frame: 10 and 20 ms have one, 40 ms two, 60 ms three.
        let frameSamples = Int(opus_packet_get_samples_per_frame(bytes, 48000))
        let silkFrames = max(1, frameSamples / 960)
        var decoder = RangeDecoder(UnsafeBufferPointer(start: bytes + Int(offset), count: Int(size)))
        for _ in 0..<silkFrames { _ = decoder.bit() }
        return decoder.bit()
    }

    /// The start of RFC 6716's range decoder (§4.1), enough to read equiprobable bits.
    struct RangeDecoder {
        private let data: UnsafeBufferPointer<UInt8>
        private var offset = 0
        private var range: UInt32 = 128
        private var value: UInt32
        private var remainder: UInt32

        init(_ data: UnsafeBufferPointer<UInt8>) {
            self.data = data
            remainder = 0
            value = 0
            remainder = readByte()
            value = range - 1 - (remainder >> 1)
            normalize()
        }

        private mutating func readByte() -> UInt32 {
            guard offset < data.count else { return 0 }
            offset += 1
            return UInt32(data[offset - 1])
        }

        private mutating func normalize() {
            while range <= 1 << 23 {
                range <<= 8
                let previous = remainder
                remainder = readByte()
                let symbol = (previous << 8 | remainder) >> 1
                value = ((value << 8) &+ (255 & ~symbol)) & 0x7FFF_FFFF
            }
        }

        /// One bit of probability ½ (`ec_dec_bit_logp(dec, 1)`).
        mutating func bit() -> Bool {
            let half = range >> 1
            let result = value < half
            if !result { value -= half }
            range = result ? half : range - half
            normalize()
            return result
        }
    }

    /// Samples (at `sampleRate`) of the last decoded or concealed packet, 0 before the first.
    ///
    /// The corresponding C function is `opus_decoder_ctl(OPUS_GET_LAST_PACKET_DURATION)`.
    public var lastPacketDuration: Int {
        var samples: Int32 = 0
        _ = as_opus_decoder_last_packet_duration(decoder, &samples)
        return Int(samples)
    }

    /// Forgets the stream history (as for a new stream or after a long gap).
    ///
    /// The corresponding C function is `opus_decoder_ctl(OPUS_RESET_STATE)`.
    public func reset() {
        let status = as_opus_decoder_reset(decoder)
        precondition(status == OPUS_OK, "OPUS_RESET_STATE cannot fail on a valid decoder")
    }

    private var subject: SpeakerIOError.Subject { .processor("Opus decoder (\(sampleRate) Hz)") }
}

@available(*, unavailable, message: "OpusPacketDecoder wraps one OpusDecoder, which libopus does not share between threads")
extension OpusPacketDecoder: Sendable {}
