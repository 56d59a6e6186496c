import Foundation
import SpeakerCore
import SpeakerFiles
import SpeakerIO

/// The audio FILEs of `detect` and `features`: opened and named, then decoded at the engine's rate, whole
/// (`decode`) or a block at a time as they play (`open`).
///
/// `-` is standard input (copied whole to a temporary file first: libsndfile needs to seek in WAV
/// and FLAC). A stream is named after its file (`talks/alice.wav` → `alice`; standard input →
/// `stdin`) unless a name is given; a multichannel file gives `<name>-ch1`, `<name>-ch2`, … Every file
/// is opened, and every name checked, before any is decoded, so a bad last file stops the run at once.
enum AudioInputs {
    /// The FILE argument that means standard input.
    static let standardInput = "-"

    /// How messages name standard input.
    static let standardInputName = "standard input"

    /// Decodes `paths` into streams at the engine's rate.
    /// - Parameters:
    ///   - paths: Audio files, at most one of them `-`.
    ///   - names: One stream name per path, in order, or nil to name streams after their files.
    ///   - downmix: Average the channels of a multichannel file into one stream.
    /// - Throws: `CommandError.failure` with one line naming the file (`standard input` for `-`);
    ///   for a file libsndfile cannot read that looks like MP4/M4A, MP3, AAC, …, the line names the
    ///   format and how to convert it. `.usage` if `-` is a terminal.
    static func decode(_ paths: [String], names: [String]? = nil, downmix: Bool) throws(CommandError) -> [DecodedStream] {
        try withSources(paths) { sources, shown in
            let ids = try streamIDs(paths: paths, sources: sources, names: names, downmix: downmix, shown: shown)
            var streams: [DecodedStream] = []
            for (index, source) in sources.enumerated() {
                let decoded = try loadStreams(paths: [source], sampleRate: AnalysisFormat.sampleRate, downmix: downmix)
                for (stream, id) in zip(decoded, ids[index]) {
                    var stream = stream
                    stream.id = id
                    stream.sourcePath = shown(source)
                    streams.append(stream)
                }
            }
            return streams
        }
    }

    /// Opens `paths` as streams read a block at a time at the engine's rate: `decode` in bounded memory.
    ///
    /// Every file is opened and checked (header, format, names) before this returns, so a bad file stops the run
    /// before any output; standard input is copied to a temporary file, opened and the copy deleted at once
    /// (the open file stays readable). A file that fails later, while it is read, throws from
    /// `FileStreamSource.read(into:)`; `AudioInputs.message(for:)` gives the one line to show for it.
    /// - Parameters: As `decode`.
    /// - Returns: One source per stream, in the order of `paths`, channels in order; each `sampleCount` samples
    ///   long and yielding exactly the samples `decode` gives.
    /// - Throws: As `decode`.
    static func open(_ paths: [String], names: [String]? = nil, downmix: Bool) throws(CommandError) -> [FileStreamSource] {
        try withSources(paths) { sources, shown in
            let ids = try streamIDs(paths: paths, sources: sources, names: names, downmix: downmix, shown: shown)
            var streams: [FileStreamSource] = []
            for (index, source) in sources.enumerated() {
                let reader = try FileStreamReader(path: source, sampleRate: AnalysisFormat.sampleRate, downmix: downmix)
                for (stream, id) in ids[index].enumerated() {
                    streams.append(FileStreamSource(id: id, reader: reader, stream: stream, shownPath: shown(source)))
                }
            }
            return streams
        }
    }

    /// The one line to show for an error a `FileStreamSource` threw while its file was read.
    static func message(for error: any Error, of source: FileStreamSource) -> String {
        guard var error = error as? SpeakerIOError else { return "\(source.shownPath): \(error)" }
        if case .file = error.subject { error.subject = .file(source.shownPath) }
        return error.description
    }

    /// Runs `body` on the paths to open (standard input replaced by a temporary copy, deleted afterwards) and a
    /// function naming a path as messages show it, mapping its `SpeakerIOError` to one line.
    private static func withSources<Result>(
        _ paths: [String], _ body: ([String], (String) -> String) throws -> Result
    ) throws(CommandError) -> Result {
        var sources = paths
        var copy: TemporaryCopy?
        defer { copy?.remove() }
        if let index = paths.firstIndex(of: standardInput) {
            copy = try TemporaryCopy(ofDescriptor: STDIN_FILENO)
            sources[index] = copy!.path
        }
        let copyPath = copy?.path
        func shown(_ source: String) -> String { source == copyPath ? standardInputName : source }
        do {
            return try body(sources, shown)
        } catch var error as SpeakerIOError {
            if case .file(let source) = error.subject {
                if case .notAudio = error.kind, let format = ForeignFormat(sniffing: source) {
                    throw .failure(format.message(shown: shown(source), isStandardInput: source == copyPath))
                }
                error.subject = .file(shown(source))
            }
            throw .failure(error.description)
        } catch {
            throw .failure("\(error)")
        }
    }

    /// Opens every file once to name its streams, checking that no name is taken twice.
    /// - Returns: Per path, the ids of its streams.
    private static func streamIDs(
        paths: [String], sources: [String], names: [String]?, downmix: Bool, shown: (String) -> String
    ) throws -> [[String]] {
        precondition(names == nil || names!.count == paths.count, "one name per path")
        var ids: [[String]] = []
        var owner: [String: String] = [:]
        for (index, source) in sources.enumerated() {
            let file = try AudioFile(path: source)
            let base = names?[index] ?? (paths[index] == standardInput ? "stdin" : streamBaseName(path: source))
            let fileIDs = downmix || file.channelCount == 1 ? [base] : (1...file.channelCount).map { "\(base)-ch\($0)" }
            for id in fileIDs {
                if let first = owner[id] {
                    throw SpeakerIOError(.file(shown(source)), .duplicateStreamID(id: id, firstPath: first))
                }
                owner[id] = shown(source)
            }
            ids.append(fileIDs)
        }
        return ids
    }

    /// The file name without directories and without its last extension: `a/b/alice.take2.wav` →
    /// `alice.take2`. A name that starts with its only dot (`.wav`) is kept whole.
    static func streamBaseName(path: String) -> String {
        let name = path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }
}

/// One stream of an audio file, read a hop at a time as a room replay plays it.
final class FileStreamSource: ReplaySource {
    let id: String
    /// The file as messages name it (`standard input` for `-`).
    let shownPath: String
    private let reader: FileStreamReader
    private let stream: Int

    init(id: String, reader: FileStreamReader, stream: Int, shownPath: String) {
        self.id = id
        self.reader = reader
        self.stream = stream
        self.shownPath = shownPath
    }

    var sampleCount: Int { reader.sampleCount }

    /// A file of one stream has its reader to itself: the engine's threads may read it in parallel with others.
    /// A multichannel file's streams share one reader, so they are read one after another on the runner's thread.
    var readsIndependently: Bool { reader.streamCount == 1 }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        try reader.read(stream: stream, into: buffer)
    }
}

/// A file in a fresh temporary folder holding everything read from a descriptor.
struct TemporaryCopy {
    /// The file's path.
    let path: String
    private let folder: String

    /// Reads `descriptor` to its end into `<tmp>/activespeaker-XXXXXX/stdin`.
    /// - Throws: `.usage` if the descriptor is a terminal (nothing would come), `.failure` if reading
    ///   or writing fails.
    init(ofDescriptor descriptor: Int32) throws(CommandError) {
        if isatty(descriptor) == 1 {
            throw .usage("- reads audio from standard input, which is a terminal; pipe a file into it")
        }
        var template = Array((NSTemporaryDirectory() + "/activespeaker-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw .failure("cannot make a temporary folder: \(String(cString: strerror(errno)))")
        }
        folder = String(cString: made)
        path = folder + "/stdin"
        let output = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard output >= 0 else {
            let reason = String(cString: strerror(errno))
            rmdir(folder)
            throw .failure("\(path): cannot create: \(reason)")
        }
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                remove()
                throw .failure("\(AudioInputs.standardInputName): read failed: \(reason)")
            }
            var offset = 0
            while offset < count {
                let written = buffer.withUnsafeBytes { Glibc.write(output, $0.baseAddress! + offset, count - offset) }
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else {
                    let reason = String(cString: strerror(errno))
                    remove()
                    throw .failure("\(path): cannot write the copy of standard input: \(reason)")
                }
                offset += written
            }
        }
    }

    /// Deletes the file and its folder.
    func remove() {
        unlink(path)
        rmdir(folder)
    }
}

/// An audio format libsndfile cannot read, recognised by its first bytes, so that the error can say
/// what the file is and how to convert it.
enum ForeignFormat: String {
    case mp4 = "MP4/M4A (AAC or ALAC) audio"
    case mp3 = "MP3 audio"
    case aac = "AAC (ADTS) audio"
    case matroska = "WebM/Matroska audio"
    case asf = "WMA/ASF audio"
    case amr = "AMR audio"
    case caf = "Core Audio (CAF) audio"

    /// Recognises the format of the file at `path` by its magic bytes, or nil.
    init?(sniffing path: String) {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 16) else { return nil }
        self.init(magic: [UInt8](data))
    }

    /// Recognises a format from the first bytes of a file (12 are enough), or nil.
    init?(magic bytes: [UInt8]) {
        func starts(_ text: String, at offset: Int = 0) -> Bool {
            let expected = Array(text.utf8)
            return bytes.count >= offset + expected.count && Array(bytes[offset..<offset + expected.count]) == expected
        }
        if starts("ftyp", at: 4) {
            self = .mp4
        } else if starts("ID3") {
            self = .mp3
        } else if bytes.count >= 2, bytes[0] == 0xFF, bytes[1] & 0xF6 == 0xF0 {
            // 12 sync bits, then MPEG version and layer 00: an ADTS header.
            self = .aac
        } else if bytes.count >= 2, bytes[0] == 0xFF, bytes[1] & 0xE0 == 0xE0, bytes[1] & 0x06 != 0 {
            // 11 sync bits and a layer (01, 10, 11): an MPEG audio frame.
            self = .mp3
        } else if bytes.starts(with: [0x1A, 0x45, 0xDF, 0xA3]) {
            self = .matroska
        } else if bytes.starts(with: [0x30, 0x26, 0xB2, 0x75, 0x8E, 0x66, 0xCF, 0x11]) {
            self = .asf
        } else if starts("#!AMR") {
            self = .amr
        } else if starts("caff") {
            self = .caf
        } else {
            return nil
        }
    }

    /// One line: what the input is, what can be read, and the ffmpeg command that converts it.
    func message(shown: String, isStandardInput: Bool) -> String {
        let readable = "\(rawValue) cannot be read (WAV, FLAC, Ogg Vorbis and Ogg Opus can)"
        if isStandardInput {
            return "\(shown): \(readable); convert it first, e.g. ffmpeg -i in.m4a -f wav - | activespeaker detect -"
        }
        let name = (shown as NSString).lastPathComponent
        let stem = AudioInputs.streamBaseName(path: name)
        let quoted = shown.contains(" ") ? "'\(shown)'" : shown
        let target = stem.contains(" ") ? "'\(stem).wav'" : "\(stem).wav"
        return "\(shown): \(readable); convert it first, e.g. ffmpeg -i \(quoted) \(target)"
    }
}
