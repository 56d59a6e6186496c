import Foundation
import SpeakerIO

/// Writes mono `Float` audio to an Ogg Opus file (RFC 7845) with its own Ogg pages, so that silence costs
/// next to nothing: `writeSilence` encodes a few silent frames and then repeats the last silent packet
/// instead of encoding every 20 ms of it. A recording that must hold an hour of silence (a participant
/// who joins a room an hour in, or unmutes after an hour) writes it in milliseconds, where encoding it
/// frame by frame (libsndfile's writer, `AudioFileWriter`) takes about 1/100 of its length.
///
/// The file is what libsndfile, opusfile and ffmpeg read: an `OpusHead` page (pre-skip = the encoder's
/// look-ahead), an `OpusTags` page, then audio pages of at most 50 packets (1 s) each; the last page
/// carries the end-of-stream flag and a granule position that trims the padding of the last frame, so
/// the file decodes to exactly the samples written. Every call ends with its full pages in the file: a
/// crash loses at most the last second.
///
/// Not thread-safe: one thread writes. Closed by `close()` or `deinit`.
public final class OggOpusWriter {
    public let path: String
    /// Input samples per second: 8, 12, 16, 24 or 48 kHz.
    public let sampleRate: Int
    /// Samples written so far (audio and silence), at `sampleRate`.
    public private(set) var framesWritten = 0
    /// 20 ms frames that went through the Opus encoder; the rest of any silence repeats a packet.
    public private(set) var framesEncoded = 0

    /// Silent frames encoded before the last one is repeated: by then the encoder's state is that of
    /// silence, so the repeated packet decodes to silence and the next real frame starts from the state
    /// the decoder has.
    static let silentFramesEncoded = 10
    /// Packets per page: 1 s of audio.
    static let packetsPerPage = 50

    private let encoder: OpusPacketEncoder
    private let file: FileHandle
    private let serial: UInt32
    /// Granule positions count 48 kHz samples whatever the input rate.
    private var granuleScale: Int { 48_000 / sampleRate }
    private var preSkip: Int { encoder.lookahead * granuleScale }
    /// The frame being filled (`frameSize` samples).
    private var frame: [Float]
    private var frameFill = 0
    private var packetBuffer = [UInt8](repeating: 0, count: OpusPacketEncoder.maximumPacketBytes)
    /// The page being filled: its packets' bytes and their lengths.
    private var pageData: [UInt8] = []
    private var pagePacketLengths: [Int] = []
    private var pageLacing = 0
    private var pageSequence: UInt32 = 0
    /// Pages not yet written to the file.
    private var output: [UInt8] = []
    /// 20 ms frames put into pages so far.
    private var framesPacketed = 0
    /// Consecutive silent frames encoded, and the last one's packet (repeated once there are enough).
    private var silentRun = 0
    private var silentPacket: [UInt8] = []
    private var closed = false

    /// Creates (or replaces) the file and writes its two header pages.
    /// - Parameters:
    ///   - sampleRate: 8000, 12000, 16000, 24000 or 48000 (a caller bug otherwise).
    ///   - bitrate: Bits per second for the encoder; 32,000 by default.
    /// - Throws: `SpeakerIOError` `.cannotCreate` (no such folder, no permission), or `.codecFailed`.
    public init(path: String, sampleRate: Int, bitrate: Int = 32_000) throws {
        precondition(OpusStatus.supportedRates.contains(sampleRate), "Opus encodes at 8, 12, 16, 24 or 48 kHz")
        self.path = path
        self.sampleRate = sampleRate
        encoder = try OpusPacketEncoder(sampleRate: sampleRate, bitrate: bitrate)
        frame = [Float](repeating: 0, count: encoder.frameSize)
        guard FileManager.default.createFile(atPath: path, contents: nil), let file = FileHandle(forWritingAtPath: path) else {
            throw SpeakerIOError(.file(path), .cannotCreate, libraryMessage: String(cString: strerror(errno)))
        }
        self.file = file
        var generator = SystemRandomNumberGenerator()
        serial = generator.next()
        try writePage(Self.opusHead(preSkip: preSkip, inputRate: sampleRate), packetLengths: nil, granule: 0, flags: Self.beginningOfStream)
        try writePage(Self.opusTags, packetLengths: nil, granule: 0, flags: 0)
        try flushOutput()
    }

    deinit {
        if !closed { try? finish() }
    }

    /// Appends samples (nominally in [-1, 1]).
    /// - Throws: `SpeakerIOError` `.writeFailed` (disk full, …, or after `close()`) or `.codecFailed`.
    public func write(_ samples: UnsafeBufferPointer<Float>) throws {
        try checkOpen()
        var index = 0
        while index < samples.count {
            let count = min(samples.count - index, frame.count - frameFill)
            for offset in 0..<count { frame[frameFill + offset] = samples[index + offset] }
            frameFill += count
            index += count
            framesWritten += count
            if frameFill == frame.count { try encodeFrame() }
        }
        try flushOutput()
    }

    /// Appends `count` samples of silence: whole frames of it after the first few repeat one packet.
    /// - Complexity: O(count / frameSize) bytes written; at most `silentFramesEncoded` + 2 encoder calls.
    public func writeSilence(_ count: Int) throws {
        precondition(count >= 0, "a negative amount of silence")
        try checkOpen()
        var left = count
        // Finish the frame being filled, then encode silence until the encoder has settled.
        while left > 0, frameFill > 0 || silentRun < Self.silentFramesEncoded {
            let chunk = min(left, frame.count - frameFill)
            for offset in 0..<chunk { frame[frameFill + offset] = 0 }
            frameFill += chunk
            left -= chunk
            framesWritten += chunk
            if frameFill == frame.count { try encodeFrame() }
        }
        while left >= frame.count {
            try appendPacket(silentPacket)
            left -= frame.count
            framesWritten += frame.count
        }
        if left > 0 {
            for offset in 0..<left { frame[offset] = 0 }
            frameFill = left
            framesWritten += left
        }
        try flushOutput()
    }

    /// Finishes the file: encodes what is left (padded to flush the encoder's look-ahead) and writes the
    /// last page with the end-of-stream flag. Idempotent.
    /// - Throws: `SpeakerIOError` `.writeFailed` when the last page cannot be written.
    public func close() throws {
        guard !closed else { return }
        try finish()
    }

    private func finish() throws {
        closed = true
        defer { try? file.close() }
        // Frames until every written sample and the encoder's look-ahead behind it are encoded.
        let needed = (framesWritten + encoder.lookahead + frame.count - 1) / frame.count
        while framesPacketed < max(needed, 1) {
            for offset in frameFill..<frame.count { frame[offset] = 0 }
            frameFill = frame.count
            try encodeFrame()
        }
        try flushPage(flags: Self.endOfStream, granule: preSkip + framesWritten * granuleScale)
        try flushOutput()
    }

    // MARK: Packets and pages

    private func checkOpen() throws {
        if closed { throw SpeakerIOError(.file(path), .writeFailed(afterFrames: framesWritten), libraryMessage: "closed") }
    }

    private func encodeFrame() throws {
        let silent = frame.allSatisfy { $0 == 0 }
        let length = try frame.withUnsafeBufferPointer { pcm in
            try packetBuffer.withUnsafeMutableBytes { try encoder.encode(pcm, into: $0) }
        }
        framesEncoded += 1
        frameFill = 0
        if silent {
            silentRun += 1
            if silentRun == Self.silentFramesEncoded { silentPacket = Array(packetBuffer[..<length]) }
        } else {
            silentRun = 0
        }
        try packetBuffer.withUnsafeBufferPointer { try appendPacket(UnsafeBufferPointer(rebasing: $0[..<length])) }
    }

    private func appendPacket(_ packet: [UInt8]) throws {
        try packet.withUnsafeBufferPointer { try appendPacket($0) }
    }

    /// Adds a packet to the page being filled; a full page is written first (255 lacing values) or after
    /// (`packetsPerPage`, but not while finishing: the last page must hold a packet).
    private func appendPacket(_ packet: UnsafeBufferPointer<UInt8>) throws {
        if pageLacing + packet.count / 255 + 1 > 255 { try flushPage(flags: 0, granule: decodedGranule) }
        pageData.append(contentsOf: packet)
        pagePacketLengths.append(packet.count)
        pageLacing += packet.count / 255 + 1
        framesPacketed += 1
        if pagePacketLengths.count >= Self.packetsPerPage, !closed { try flushPage(flags: 0, granule: decodedGranule) }
    }

    /// The granule position after the packets so far: 48 kHz samples decoded, the pre-skip included.
    private var decodedGranule: Int { framesPacketed * frame.count * granuleScale }

    /// Writes the pending packets as one page (any flags even when none is pending, as the last page).
    private func flushPage(flags: UInt8, granule: Int) throws {
        guard !pagePacketLengths.isEmpty || flags & Self.endOfStream != 0 else { return }
        try writePage(pageData, packetLengths: pagePacketLengths, granule: granule, flags: flags)
        pageData.removeAll(keepingCapacity: true)
        pagePacketLengths.removeAll(keepingCapacity: true)
        pageLacing = 0
    }

    static let beginningOfStream: UInt8 = 0x02
    static let endOfStream: UInt8 = 0x04

    /// Appends one Ogg page (RFC 3533) to `output`: `data` holds whole packets of `packetLengths` (nil:
    /// one packet). Pages reach the file in `flushOutput`.
    private func writePage(_ data: [UInt8], packetLengths: [Int]?, granule: Int, flags: UInt8) throws {
        let start = output.count
        output.append(contentsOf: "OggS".utf8)
        output.append(contentsOf: [0, flags])
        Self.appendLittleEndian(UInt64(granule), bytes: 8, to: &output)
        Self.appendLittleEndian(UInt64(serial), bytes: 4, to: &output)
        Self.appendLittleEndian(UInt64(pageSequence), bytes: 4, to: &output)
        output.append(contentsOf: [0, 0, 0, 0])  // CRC, filled below
        let lacingCount = output.count
        output.append(0)
        for length in packetLengths ?? [data.count] {
            output.append(contentsOf: repeatElement(255, count: length / 255))
            output.append(UInt8(length % 255))
        }
        let lacing = output.count - lacingCount - 1
        precondition(lacing <= 255, "an Ogg page holds at most 255 lacing values")
        output[lacingCount] = UInt8(lacing)
        output.append(contentsOf: data)
        let crc = output.withUnsafeBufferPointer { OggCRC.checksum(UnsafeBufferPointer(rebasing: $0[start...])) }
        for index in 0..<4 { output[start + 22 + index] = UInt8(truncatingIfNeeded: crc >> (8 * index)) }
        pageSequence += 1
        if output.count >= Self.outputBytes { try flushOutput() }
    }

    /// Bytes of pages kept before a write to the file (64 KiB); whatever is left goes out at the end of
    /// every public call.
    static let outputBytes = 65_536

    private func flushOutput() throws {
        guard !output.isEmpty else { return }
        do {
            try file.write(contentsOf: output)
        } catch {
            throw SpeakerIOError(.file(path), .writeFailed(afterFrames: framesWritten), libraryMessage: "\(error.localizedDescription)")
        }
        output.removeAll(keepingCapacity: true)
    }

    private static func appendLittleEndian(_ value: UInt64, bytes: Int, to page: inout [UInt8]) {
        for index in 0..<bytes { page.append(UInt8(truncatingIfNeeded: value >> (8 * index))) }
    }

    /// The identification header (RFC 7845 §5.1): mono, channel mapping family 0.
    static func opusHead(preSkip: Int, inputRate: Int) -> [UInt8] {
        var head = Array("OpusHead".utf8) + [1, 1]
        appendLittleEndian(UInt64(preSkip), bytes: 2, to: &head)
        appendLittleEndian(UInt64(inputRate), bytes: 4, to: &head)
        head += [0, 0, 0]  // output gain 0 dB, mapping family 0
        return head
    }

    /// The comment header (RFC 7845 §5.2): a vendor string and no comments.
    static let opusTags: [UInt8] = {
        let vendor = Array("activespeaker".utf8)
        var tags = Array("OpusTags".utf8)
        appendLittleEndian(UInt64(vendor.count), bytes: 4, to: &tags)
        tags += vendor
        appendLittleEndian(0, bytes: 4, to: &tags)
        return tags
    }()
}

@available(*, unavailable, message: "OggOpusWriter holds one encoder and one file position: one thread writes")
extension OggOpusWriter: Sendable {}

/// The CRC-32 of Ogg pages (RFC 3533): polynomial 0x04C11DB7, initial value 0, not reflected.
enum OggCRC {
    static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index) << 24
        for _ in 0..<8 { value = value & 0x8000_0000 != 0 ? (value << 1) ^ 0x04C1_1DB7 : value << 1 }
        return value
    }

    static func checksum(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32 {
        table.withUnsafeBufferPointer { table in
            var crc: UInt32 = 0
            for byte in bytes { crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 24) ^ byte)] }
            return crc
        }
    }
}
