import SpeakerBase
import SpeakerIO
/// The mono streams of one audio file, decoded and resampled a block at a time: `loadStreams` in bounded memory.
///
/// The file gives one stream, or one per channel unless `downmix` averages them, exactly as `loadStreams` does;
/// each stream is `sampleCount` samples long, the length `loadStreams` gives (`round(frames × sampleRate /
/// sourceRate)`, from the frame count in the file's header), and its samples are the ones `loadStreams` gives,
/// bit for bit (libsoxr's output does not depend on how its input is split into blocks; `FileStreamReaderTests`
/// compares both for every format fixture).
///
/// Memory: a mono file at the output rate decodes each block straight into its one stream's buffer: one block
/// of `blockFrames` samples (8 KiB) besides libsndfile's own state. Other files: one block of interleaved frames,
/// one channel's block, one resampler per stream and each stream's samples decoded but not yet read (at most
/// about one resampled block when the streams are read in step).
///
/// Not thread-safe: use one instance from one thread at a time (debug builds stop on a read while another
/// thread is inside one: `ConfinementCheck`).
public final class FileStreamReader {
    /// The path as given; error messages name the file by it.
    public let path: String
    /// Samples per second of every stream.
    public let sampleRate: Int
    /// The file's own sample rate, in Hz.
    public let sourceRate: Int
    /// Channels in the file.
    public let channelCount: Int
    /// Streams the file gives: 1 when downmixed or mono, else `channelCount`.
    public let streamCount: Int
    /// Samples each stream holds in all, at `sampleRate`.
    public let sampleCount: Int
    /// Format, rate and channel of each stream's source, as `DecodedStream.sourceDescription` says it.
    public let sourceDescriptions: [String]

    /// Frames read from the file at a time. 2,048: `detect` over 512 one-minute mono files spent 10–20 % less
    /// CPU time than with 1,024 (fewer calls into libsndfile and the kernel), for 4 KiB more per stream.
    public static let blockFrames = 2048

    private let file: AudioFile
    private let downmix: Bool
    private let resamplers: [Resampler]
    private var interleaved: [Float]
    private var channel: [Float]
    private var resampled: [Float]
    // Unchecked exclusivity: read for every hop of every stream, and the reader is used by one thread at a
    // time (its documented contract), so the runtime's access checks would cost without guarding anything.
    /// Per stream: samples decoded and not yet read, from `pendingStart[stream]` on.
    @exclusivity(unchecked) private var pending: [[Float]]
    @exclusivity(unchecked) private var pendingStart: [Int]
    @exclusivity(unchecked) private var delivered: [Int]
    @exclusivity(unchecked) private var fileEnded = false
    /// Debug builds: stops on a read while another thread is inside the reader.
    let confinement = ConfinementCheck("FileStreamReader")

    /// Opens `path` and checks it as `AudioFile` does; reads no samples.
    /// - Parameters:
    ///   - path: An audio file (WAV, FLAC, Ogg Vorbis, Ogg Opus, …).
    ///   - sampleRate: Output samples per second, > 0.
    ///   - downmix: Average the channels of a multichannel file into one stream.
    /// - Throws: Anything `AudioFile.init` throws; `.resamplerFailed` naming the file if libsoxr refuses the rates.
    public init(path: String, sampleRate: Int = AnalysisFormat.sampleRate, downmix: Bool = false) throws {
        precondition(sampleRate > 0, "sampleRate must be positive")
        let file = try AudioFile(path: path)
        self.file = file
        self.path = path
        self.sampleRate = sampleRate
        self.downmix = downmix
        sourceRate = file.sampleRate
        channelCount = file.channelCount
        streamCount = downmix ? 1 : file.channelCount
        sampleCount =
            sourceRate == sampleRate
            ? file.frameCount
            : Int((Double(file.frameCount) * Double(sampleRate) / Double(sourceRate)).rounded(.toNearestOrEven))
        let source = "\(file.formatDescription), \(file.sampleRate) Hz"
        sourceDescriptions = (0..<streamCount).map { channel in
            file.channelCount == 1
                ? source
                : downmix
                    ? "\(source), \(file.channelCount) channels averaged"
                    : "\(source), channel \(channel + 1) of \(file.channelCount)"
        }
        do {
            resamplers =
                sourceRate == sampleRate
                ? [] : try (0..<streamCount).map { _ in try Resampler(inputRate: file.sampleRate, outputRate: sampleRate) }
        } catch var error as SpeakerIOError {
            error.subject = .file(path)
            throw error
        }
        // A mono file at the output rate decodes straight into its stream's pending samples (`decodeBlock`):
        // it needs neither buffer.
        let direct = file.channelCount == 1 && sourceRate == sampleRate
        interleaved = [Float](repeating: 0, count: direct ? 0 : Self.blockFrames * file.channelCount)
        channel = [Float](repeating: 0, count: direct ? 0 : Self.blockFrames)
        // Room for what one block gives after libsoxr's delay has built up; anything more stays inside libsoxr
        // and comes out with the next block or the flush, the same samples either way.
        resampled = [Float](
            repeating: 0, count: resamplers.first?.outputCapacity(forInputCount: Self.blockFrames) ?? 0)
        pending = Array(repeating: [], count: streamCount)
        pendingStart = Array(repeating: 0, count: streamCount)
        delivered = Array(repeating: 0, count: streamCount)
    }

    /// Reads the next samples of one stream.
    ///
    /// - Parameters:
    ///   - stream: The stream, from 0 (the file's channel, or 0 when downmixed).
    ///   - buffer: Receives the samples.
    /// - Returns: Samples written, `buffer.count` until the stream's last `sampleCount` samples; 0 at its end.
    /// - Throws: As `AudioFile.readFrames(into:)` (`.truncated`, `.readFailed`), naming the file.
    /// - Complexity: O(samples written), plus decoding a block when this stream has none left.
    public func read(stream: Int, into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        confinement.enter("read")
        defer { confinement.leave() }
        precondition(stream >= 0 && stream < streamCount, "no stream \(stream) in \(path)")
        let wanted = min(buffer.count, sampleCount - delivered[stream])
        var written = 0
        while written < wanted {
            let available = pending[stream].count - pendingStart[stream]
            if available == 0 {
                if fileEnded {
                    // The resampler delivered fewer than the promised length: zeros, as `loadStreams` pads.
                    buffer[written..<wanted].update(repeating: 0)
                    written = wanted
                    break
                }
                try decodeBlock()
                continue
            }
            let count = min(available, wanted - written)
            let start = pendingStart[stream]
            pending[stream].withUnsafeBufferPointer { source in
                _ = UnsafeMutableBufferPointer(rebasing: buffer[written..<written + count])
                    .initialize(fromContentsOf: UnsafeBufferPointer(rebasing: source[start..<start + count]))
            }
            pendingStart[stream] += count
            written += count
        }
        delivered[stream] += written
        return written
    }

    /// Decodes the next block of the file into every stream's pending samples; at the file's end flushes the
    /// resamplers and sets `fileEnded`.
    private func decodeBlock() throws {
        if channelCount == 1 && resamplers.isEmpty {
            // One stream, which asks for a block only when it has read all it had: decode into its buffer.
            pending[0].removeAll(keepingCapacity: true)
            pendingStart[0] = 0
            pending[0].append(contentsOf: repeatElement(0, count: Self.blockFrames))
            let frames = try pending[0].withUnsafeMutableBufferPointer { try file.readFrames(into: $0) }
            pending[0].removeLast(Self.blockFrames - frames)
            if frames == 0 { fileEnded = true }
            return
        }
        for index in pending.indices where pendingStart[index] > 0 {
            pending[index].removeFirst(pendingStart[index])
            pendingStart[index] = 0
        }
        let frames = try interleaved.withUnsafeMutableBufferPointer { try file.readFrames(into: $0) }
        if frames == 0 {
            fileEnded = true
            for (index, resampler) in resamplers.enumerated() {
                while true {
                    let count = resampled.withUnsafeMutableBufferPointer { resampler.flush(into: $0) }
                    if count == 0 { break }
                    pending[index] += resampled[..<count]
                }
            }
            return
        }
        for index in 0..<streamCount {
            // The same arithmetic as `loadStreams`: a downmix sums the channels in order from 0, then scales.
            if downmix && channelCount > 1 {
                let scale = 1 / Float(channelCount)
                for frame in 0..<frames {
                    var sum: Float = 0
                    for source in 0..<channelCount { sum += interleaved[frame * channelCount + source] }
                    channel[frame] = sum * scale
                }
            } else {
                for frame in 0..<frames { channel[frame] = interleaved[frame * channelCount + index] }
            }
            if resamplers.isEmpty {
                pending[index] += channel[..<frames]
            } else {
                let count = channel.withUnsafeBufferPointer { input in
                    resampled.withUnsafeMutableBufferPointer {
                        resamplers[index].process(UnsafeBufferPointer(rebasing: input[..<frames]), into: $0)
                    }
                }
                pending[index] += resampled[..<count]
            }
        }
    }
}

@available(*, unavailable, message: "FileStreamReader wraps an AudioFile and resamplers, none shared between threads")
extension FileStreamReader: Sendable {}
