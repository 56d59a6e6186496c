internal import CSndFile
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SpeakerIO

/// An audio file open for reading through libsndfile: WAV (8/16/24/32-bit integer, 32/64-bit float),
/// FLAC, Ogg Vorbis, Ogg Opus and the other formats libsndfile knows.
///
/// The file is opened once in `init` and closed in `deinit`. Samples come out as interleaved `Float`,
/// integer formats normalised to [-1, 1) (float files pass through unchanged and may exceed ±1).
///
/// `init` rejects a missing, empty, unrecognised or damaged file, a WAV file whose `data` chunk is shorter
/// than its header states, and a file with zero frames. Reading to the end throws `.truncated` if fewer frames
/// arrive than `frameCount` (e.g. a FLAC file cut short).
///
/// Not thread-safe: use one instance from one thread at a time.
public final class AudioFile {
    /// The path as given to `init`; error messages name the file by it.
    public let path: String
    /// Frames per second, as the file states it. For Ogg Opus, libsndfile decodes at the smallest Opus rate
    /// (8, 12, 16, 24, 48 kHz) not below the original rate in the header: 16 kHz for 16 kHz, 24 kHz for
    /// 22.05 kHz, 48 kHz for 44.1 kHz.
    public let sampleRate: Int
    /// Interleaved channels per frame (≥ 1).
    public let channelCount: Int
    /// Frames (samples per channel) as the header states; > 0.
    public let frameCount: Int
    /// Container and encoding, e.g. `WAV 16-bit PCM`, `WAV 32-bit float`, `FLAC`, `Ogg Opus`, `Ogg Vorbis`.
    public let formatDescription: String
    /// Frames read so far by `readFrames(into:)` and `readAllChannels()`.
    public private(set) var framesRead = 0

    private let handle: OpaquePointer
    /// For 16-bit WAV and FLAC, samples are read as 16-bit integers and scaled here (`Self.scaleShorts`): for
    /// WAV several times cheaper than libsndfile's float conversion, with the same values; nil otherwise.
    private let shorts: UnsafeMutableBufferPointer<Int16>?
    /// Frames `shorts` holds.
    private static let shortFrames = 2_048

    /// Opens `path` for reading and checks its header.
    ///
    /// - Parameter path: A file path; it is kept verbatim for error messages.
    /// - Throws: `SpeakerIOError` with subject `.file(path)` and kind `.noSuchFile`, `.cannotOpen`,
    ///   `.emptyFile`, `.notAudio`, `.unsupportedEncoding`, `.malformed`, `.truncated` or `.noAudioFrames`.
    public init(path: String) throws {
        try Self.checkRegularNonEmptyFile(path)
        var info = SF_INFO()
        let handle = try Self.open(path, info: &info)
        do {
            try Self.checkDataChunk(path: path, info: info)
            guard info.frames > 0, info.channels > 0, info.samplerate > 0 else {
                throw SpeakerIOError(.file(path), .noAudioFrames)
            }
        } catch {
            sf_close(handle)
            throw error
        }
        self.path = path
        self.handle = handle
        self.sampleRate = Int(info.samplerate)
        self.channelCount = Int(info.channels)
        self.frameCount = Int(info.frames)
        self.formatDescription = AudioFormatDescription.name(format: info.format)
        let major = Int(info.format) & SF_FORMAT_TYPEMASK
        if (major == SF_FORMAT_WAV || major == SF_FORMAT_WAVEX || major == SF_FORMAT_FLAC) && Int(info.format) & SF_FORMAT_SUBMASK == SF_FORMAT_PCM_16 {
            shorts = .allocate(capacity: Self.shortFrames * Int(info.channels))
        } else {
            shorts = nil
        }
    }

    deinit {
        shorts?.deallocate()
        sf_close(handle)
    }

    /// Reads the next frames, interleaved, into `buffer`.
    ///
    /// The corresponding C function is `sf_readf_float`.
    ///
    /// - Parameter buffer: Room for whole frames: `buffer.count` must be a positive multiple of `channelCount`.
    /// - Returns: Frames read (≤ `buffer.count / channelCount`); `0` only at the end of the file.
    /// - Throws: `.truncated` when the file ends before `frameCount` frames, `.readFailed` when libsndfile
    ///   reports a decoding error after all promised frames. Frames read before the error were already returned.
    /// - Complexity: O(frames read). Allocates nothing.
    public func readFrames(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        precondition(
            buffer.count >= channelCount && buffer.count % channelCount == 0,
            "buffer must hold a whole number of frames of \(channelCount) channels")
        let wanted = buffer.count / channelCount
        let got = shorts.map { readShortFrames(wanted, into: buffer, through: $0) }
            ?? Int(sf_readf_float(handle, buffer.baseAddress, sf_count_t(wanted)))
        framesRead += got
        if got > 0 { return got }
        let code = sf_error(handle)
        if code != 0 || framesRead < frameCount {
            let message = code != 0 ? String(cString: sf_strerror(handle)) : nil
            let kind: SpeakerIOError.Kind =
                framesRead < frameCount
                ? .truncated(expectedFrames: frameCount, readableFrames: framesRead)
                : .readFailed(afterFrames: framesRead)
            throw SpeakerIOError(
                .file(path), kind, library: message.map { _ in "libsndfile" },
                code: code != 0 ? Int(code) : nil, libraryMessage: message)
        }
        return 0
    }

    /// Reads up to `wanted` frames of 16-bit PCM through `scratch` into `buffer` as floats, as
    /// `sf_readf_float` would: each sample × 2⁻¹⁵. Returns the frames read (fewer only at the end or an error).
    private func readShortFrames(
        _ wanted: Int, into buffer: UnsafeMutableBufferPointer<Float>, through scratch: UnsafeMutableBufferPointer<Int16>
    ) -> Int {
        var done = 0
        while done < wanted {
            let frames = min(wanted - done, Self.shortFrames)
            let got = Int(sf_readf_short(handle, scratch.baseAddress, sf_count_t(frames)))
            let samples = got * channelCount
            Self.scaleShorts(
                UnsafeBufferPointer(rebasing: scratch[..<samples]),
                into: UnsafeMutableBufferPointer(rebasing: buffer[done * channelCount..<done * channelCount + samples]))
            done += got
            if got < frames { break }
        }
        return done
    }

    /// `output[i] = Float(input[i]) / 32768`: libsndfile's normalisation of 16-bit samples (exact, so the
    /// values equal `sf_readf_float`'s).
    static func scaleShorts(_ input: UnsafeBufferPointer<Int16>, into output: UnsafeMutableBufferPointer<Float>) {
        precondition(input.count == output.count, "scaleShorts: counts differ")
        let scale: Float = 1 / 32_768
        for index in 0..<input.count { output[index] = Float(input[index]) * scale }
    }

    /// Reads every remaining frame and splits the channels.
    ///
    /// - Returns: `channelCount` arrays of equal length (normally `frameCount`), samples in [-1, 1).
    /// - Throws: As `readFrames(into:)`.
    /// - Complexity: O(frames × channels) time and memory.
    public func readAllChannels() throws -> [[Float]] {
        let remaining = max(frameCount - framesRead, 0)
        var channels = [[Float]](repeating: [], count: channelCount)
        for index in channels.indices { channels[index].reserveCapacity(remaining) }
        let framesPerChunk = 4096
        var interleaved = [Float](repeating: 0, count: framesPerChunk * channelCount)
        while true {
            let frames = try interleaved.withUnsafeMutableBufferPointer { try readFrames(into: $0) }
            if frames == 0 { break }
            for channel in 0..<channelCount {
                for frame in 0..<frames {
                    channels[channel].append(interleaved[frame * channelCount + channel])
                }
            }
        }
        return channels
    }
}

@available(*, unavailable, message: "AudioFile wraps one SNDFILE*, which libsndfile does not share between threads")
extension AudioFile: Sendable {}

extension AudioFile {
    /// `sf_open` reports failures of a NULL handle through a process-wide variable; this lock keeps the
    /// open and the read of its error code together when several threads open files.
    private static let openLock = Mutex(())

    private static func open(_ path: String, info: inout SF_INFO) throws -> OpaquePointer {
        let (handle, code, message): (OpaquePointer?, Int32, String) = openLock.withLock { _ in
            let handle = sf_open(path, Int32(SFM_READ), &info)
            return (handle, sf_error(handle), String(cString: sf_strerror(handle)))
        }
        if let handle { return handle }
        // Beyond the four public SF_ERR_* codes libsndfile returns private ones (e.g. 18 for an Ogg stream of an
        // unknown codec, "File contains data in an unimplemented format."); only their text tells them apart.
        let lowercased = message.lowercased()
        let kind: SpeakerIOError.Kind =
            switch Int(code) {
            case SF_ERR_UNRECOGNISED_FORMAT: .notAudio
            case SF_ERR_SYSTEM: .cannotOpen
            case SF_ERR_UNSUPPORTED_ENCODING: .unsupportedEncoding
            case _ where lowercased.contains("unimplemented") || lowercased.contains("unsupported"):
                .unsupportedEncoding
            default: .malformed
            }
        throw SpeakerIOError(.file(path), kind, library: "libsndfile", code: Int(code), libraryMessage: message)
    }

    /// Gives the clear errors libsndfile does not: a missing path, a directory, an empty file.
    private static func checkRegularNonEmptyFile(_ path: String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else {
            let number = errno
            let kind: SpeakerIOError.Kind = number == ENOENT ? .noSuchFile : .cannotOpen
            throw SpeakerIOError(
                .file(path), kind, library: "system", code: Int(number),
                libraryMessage: kind == .noSuchFile ? nil : String(cString: strerror(number)))
        }
        if status.st_mode & S_IFMT == S_IFDIR {
            throw SpeakerIOError(.file(path), .cannotOpen, library: "system", libraryMessage: "is a directory")
        }
        if status.st_mode & S_IFMT == S_IFREG && status.st_size == 0 {
            throw SpeakerIOError(.file(path), .emptyFile)
        }
    }

    /// Throws `.truncated` if a WAV header promises more frames than libsndfile found.
    private static func checkDataChunk(path: String, info: SF_INFO) throws {
        let major = Int(info.format) & SF_FORMAT_TYPEMASK
        guard major == SF_FORMAT_WAV || major == SF_FORMAT_WAVEX,
            let bytesPerFrame = WAVDataChunk.bytesPerFrame(
                subtype: Int(info.format) & SF_FORMAT_SUBMASK, channelCount: Int(info.channels)),
            let declaredBytes = WAVDataChunk.declaredByteCount(path: path)
        else { return }
        let declaredFrames = declaredBytes / bytesPerFrame
        if declaredFrames > Int(info.frames) {
            throw SpeakerIOError(
                .file(path), .truncated(expectedFrames: declaredFrames, readableFrames: Int(info.frames)))
        }
    }
}
