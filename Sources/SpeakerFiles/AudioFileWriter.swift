internal import CSndFile
import Synchronization
import SpeakerIO

/// Writes mono `Float` audio to a file through libsndfile: Ogg Opus (for recordings) or 16-bit WAV.
///
/// Not thread-safe: one thread writes. Closed by `close()` or `deinit`.
public final class AudioFileWriter {
    /// The container and encoding.
    public enum Format: Sendable, Equatable {
        /// Ogg Opus (RFC 7845), written by libsndfile itself. Rates 8, 12, 16, 24 or 48 kHz.
        case oggOpus
        /// RIFF WAV, 16-bit PCM.
        case wav16
    }

    public let path: String
    public let sampleRate: Int
    public let format: Format
    /// Frames written so far.
    public private(set) var framesWritten = 0
    private var handle: OpaquePointer?

    /// Creates (or replaces) the file.
    /// - Throws: `SpeakerIOError` `.cannotCreate` with libsndfile's message (no such folder, no
    ///   permission, a rate Ogg Opus does not take).
    public init(path: String, sampleRate: Int, format: Format) throws {
        self.path = path
        self.sampleRate = sampleRate
        self.format = format
        var info = SF_INFO()
        info.samplerate = Int32(sampleRate)
        info.channels = 1
        info.format = Int32(format == .oggOpus ? SF_FORMAT_OGG | SF_FORMAT_OPUS : SF_FORMAT_WAV | SF_FORMAT_PCM_16)
        let (handle, code, message): (OpaquePointer?, Int32, String) = Self.openLock.withLock { _ in
            let handle = sf_open(path, Int32(SFM_WRITE), &info)
            return (handle, sf_error(handle), String(cString: sf_strerror(handle)))
        }
        guard let handle else {
            throw SpeakerIOError(.file(path), .cannotCreate, library: "libsndfile", code: Int(code), libraryMessage: message)
        }
        self.handle = handle
    }

    deinit {
        if let handle { sf_close(handle) }
    }

    /// Appends samples (nominally in [-1, 1]).
    /// The corresponding C function is `sf_write_float`.
    /// - Throws: `SpeakerIOError` `.writeFailed` (disk full, …) or after `close()`.
    public func write(_ samples: UnsafeBufferPointer<Float>) throws {
        guard let handle else { throw SpeakerIOError(.file(path), .writeFailed(afterFrames: framesWritten), libraryMessage: "closed") }
        guard let base = samples.baseAddress, !samples.isEmpty else { return }
        let written = sf_write_float(handle, base, sf_count_t(samples.count))
        framesWritten += Int(max(written, 0))
        if written != sf_count_t(samples.count) {
            throw SpeakerIOError(
                .file(path), .writeFailed(afterFrames: framesWritten), library: "libsndfile", code: Int(sf_error(handle)),
                libraryMessage: String(cString: sf_strerror(handle)))
        }
    }

    /// Appends `count` samples of silence.
    public func writeSilence(_ count: Int) throws {
        let zeros = [Float](repeating: 0, count: min(count, 4800))
        var left = count
        while left > 0 {
            let chunk = min(left, zeros.count)
            try zeros.withUnsafeBufferPointer { try write(UnsafeBufferPointer(rebasing: $0[..<chunk])) }
            left -= chunk
        }
    }

    /// Finishes the file. Idempotent.
    public func close() {
        if let handle { sf_close(handle) }
        handle = nil
    }

    /// See `AudioFile`: `sf_open`'s error of a NULL handle is process-wide.
    private static let openLock = Mutex(())
}

@available(*, unavailable, message: "AudioFileWriter wraps one SNDFILE*, which libsndfile does not share between threads")
extension AudioFileWriter: Sendable {}
