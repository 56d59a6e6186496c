/// Why a dataset, a reference or a system output cannot be evaluated.
///
/// `description` is one line that starts with the path at fault, e.g.
/// `data/m1: missing speech.rttm (the per-stream speech reference)`.
/// (`RTTM.ParseError`, kept for its callers, says which line of an RTTM text is bad; evaluation
/// wraps it in `.malformed` with the file's path.)
public struct EvaluationError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What went wrong.
    public enum Kind: Sendable, Equatable {
        /// The path does not exist.
        case noSuchPath
        /// The path is not a folder.
        case notAFolder
        /// The folder holds no meeting (no audio files and no `speech.rttm`, nor subfolders that do).
        case noMeetings
        /// A meeting folder lacks its speech reference.
        case missingSpeechReference
        /// A meeting folder has references but no audio files.
        case noAudio
        /// A file cannot be read.
        case unreadable
        /// A reference or system file is not valid RTTM or UEM; the detail says where.
        case malformed
        /// A reference or system file names a stream that the meeting does not have.
        case unknownStream(String)
        /// A scored-region (UEM) file has no region for this meeting.
        case notInUEM(meeting: String)
        /// A system output folder has no file for this meeting.
        case missingSystemOutput
    }

    /// The file or folder at fault, as the caller named it.
    public var path: String
    /// What went wrong.
    public var kind: Kind
    /// More about it (a line number, the expected layout), or empty.
    public var detail: String

    /// An error about `path`.
    public init(_ path: String, _ kind: Kind, detail: String = "") {
        self.path = path
        self.kind = kind
        self.detail = detail
    }

    /// One line: the path, what is wrong, and the detail.
    public var description: String {
        var line = "\(path): "
        switch kind {
        case .noSuchPath: line += "no such file or folder"
        case .notAFolder: line += "not a folder"
        case .noMeetings:
            line += "no meetings found (a meeting is a folder of audio files with speech.rttm; "
            line += "a dataset is a folder of meetings)"
        case .missingSpeechReference: line += "missing speech.rttm (the per-stream speech reference)"
        case .noAudio: line += "no audio files (*.flac, *.wav, *.ogg, *.opus)"
        case .unreadable: line += "cannot read"
        case .malformed: line += "malformed"
        case .unknownStream(let stream): line += "names stream '\(stream)', which has no audio file in the meeting"
        case .notInUEM(let meeting): line += "no scored region for meeting '\(meeting)'"
        case .missingSystemOutput: line += "missing system output"
        }
        if !detail.isEmpty { line += ": " + detail }
        return line
    }
}
