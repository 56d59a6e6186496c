/// The one error type of SpeakerIO: what failed, how, and what the C library said.
///
/// `description` is one line that starts with the thing that failed, e.g.
/// `alice.wav: not an audio file (libsndfile: Format not recognised.)`.
public struct SpeakerIOError: Error, CustomStringConvertible, Sendable, Hashable {
    /// The thing that failed.
    public enum Subject: Sendable, Hashable, CustomStringConvertible {
        /// An audio file, by the path the caller gave.
        case file(String)
        /// A capture device, by its ALSA name (e.g. `hw:0`).
        case device(String)
        /// A stream, by its id.
        case stream(String)
        /// A codec or resampler instance, e.g. `Opus decoder (16000 Hz)`.
        case processor(String)
        /// A network endpoint, as the caller wrote it (e.g. `127.0.0.1:5004`, `[::1]:5004`).
        case address(String)

        public var description: String {
            switch self {
            case .file(let path): path
            case .device(let name): "device \(name)"
            case .stream(let id): "stream \(id)"
            case .processor(let name): name
            case .address(let address): address
            }
        }
    }

    /// What went wrong.
    public enum Kind: Sendable, Hashable {
        /// The path does not exist.
        case noSuchFile
        /// The path exists but cannot be opened (permissions, a directory, …).
        case cannotOpen
        /// The file has zero bytes.
        case emptyFile
        /// The file is not in any format libsndfile recognises.
        case notAudio
        /// The container is known but its encoding is not supported.
        case unsupportedEncoding
        /// The format is recognised but the file is damaged.
        case malformed
        /// Fewer frames can be read than the header states.
        case truncated(expectedFrames: Int, readableFrames: Int)
        /// The file is valid but holds zero frames.
        case noAudioFrames
        /// Reading failed after this many frames (per channel) had been read.
        case readFailed(afterFrames: Int)
        /// The file cannot be created for writing.
        case cannotCreate
        /// Writing failed after this many frames had been written.
        case writeFailed(afterFrames: Int)
        /// Two inputs would produce the same stream id; `firstPath` already took it.
        case duplicateStreamID(id: String, firstPath: String)
        /// An Opus packet that libopus rejects.
        case invalidPacket
        /// A codec call failed; `operation` names the C function.
        case codecFailed(operation: String)
        /// A libsoxr call failed; `operation` names the C function.
        case resamplerFailed(operation: String)
        /// alsa-lib knows no device by this name (not a card, not defined in any configuration).
        case noSuchDevice
        /// The device exists but another program holds it.
        case deviceBusy
        /// An alsa-lib call failed; `operation` names the C function.
        case deviceFailed(operation: String)
        /// The device offers no format this program can read (a float or 16/24/32-bit integer PCM).
        case unsupportedDeviceFormat(String)
        /// A channel (from 1) that the device does not have.
        case noSuchChannel(channel: Int, channelCount: Int)
        /// The device went away while capturing (unplugged, driver gone).
        case deviceDisconnected
        /// The device delivered no audio for this many seconds.
        case deviceStalled(seconds: Double)
        /// A host and port that cannot be used (not `HOST:PORT`, unknown host, bad port).
        case invalidAddress(String)
        /// A socket call failed; `operation` names the C function.
        case socketFailed(operation: String)
    }

    /// The thing that failed.
    public var subject: Subject
    /// What went wrong.
    public var kind: Kind
    /// The C library that reported the failure (`libsndfile`, `libopus`, `libsoxr`, `alsa-lib`, `system`), if any.
    public var library: String?
    /// The library's numeric code (an `SF_ERR_*` value, an `OPUS_*` error, an `errno`), if it has one.
    public var code: Int?
    /// The library's own message, e.g. `Format not recognised.`.
    public var libraryMessage: String?

    /// Creates an error; `library`, `code` and `libraryMessage` describe the C-level cause if there is one.
    public init(
        _ subject: Subject, _ kind: Kind,
        library: String? = nil, code: Int? = nil, libraryMessage: String? = nil
    ) {
        self.subject = subject
        self.kind = kind
        self.library = library
        self.code = code
        self.libraryMessage = libraryMessage
    }

    /// One line: the subject, what is wrong, and the C library's message in parentheses.
    public var description: String {
        var line = "\(subject): \(kind.summary)"
        if let libraryMessage, !libraryMessage.isEmpty {
            line += " (\(library.map { "\($0): " } ?? "")\(libraryMessage))"
        }
        return line
    }
}

extension SpeakerIOError.Kind {
    /// The human-readable part of the one-line description.
    var summary: String {
        switch self {
        case .noSuchFile: "no such file"
        case .cannotOpen: "cannot open"
        case .emptyFile: "file is empty"
        case .notAudio: "not an audio file"
        case .unsupportedEncoding: "unsupported encoding"
        case .malformed: "malformed audio file"
        case .truncated(let expected, let readable):
            "truncated: header promises \(expected) frames, only \(readable) readable"
        case .noAudioFrames: "contains no audio frames"
        case .readFailed(let frames): "read failed after \(frames) frames"
        case .cannotCreate: "cannot create"
        case .writeFailed(let frames): "write failed after \(frames) frames"
        case .duplicateStreamID(let id, let firstPath): "stream id \"\(id)\" is already taken by \(firstPath)"
        case .invalidPacket: "invalid Opus packet"
        case .codecFailed(let operation): "\(operation) failed"
        case .resamplerFailed(let operation): "\(operation) failed"
        case .noSuchDevice: "no such device"
        case .deviceBusy: "device is busy (another program is using it)"
        case .deviceFailed(let operation): "\(operation) failed"
        case .unsupportedDeviceFormat(let detail): "unsupported format: \(detail)"
        case .noSuchChannel(let channel, let count):
            "has no channel \(channel) (it has \(count) \(count == 1 ? "channel" : "channels"))"
        case .deviceDisconnected: "device disconnected"
        case .deviceStalled(let seconds): "no audio from the device for \(seconds) s"
        case .invalidAddress(let detail): "invalid address: \(detail)"
        case .socketFailed(let operation): "\(operation) failed"
        }
    }
}
