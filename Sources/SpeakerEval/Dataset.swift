import Foundation

/// One meeting of a dataset: a folder of per-participant audio files and its references.
///
/// ```
/// meeting/
///   alice.flac  bob.wav  …   one file per participant; the stream id is the name without extension
///   speech.rttm              each stream's own speech (RTTM, speaker = stream id)        required
///   floor.rttm               the floor holder over time (RTTM, speaker = stream id)      optional
/// ```
public struct MeetingFolder: Sendable, Equatable {
    /// The folder's name, used as the meeting's name.
    public var name: String
    /// The folder, as found.
    public var path: String
    /// The audio files, sorted by name.
    public var audioFiles: [String]
    /// `speech.rttm`.
    public var speechReference: String
    /// `floor.rttm`, or nil when the meeting has none (then the floor is not scored).
    public var floorReference: String?

    /// A meeting from its parts; `Dataset.meetings(at:)` finds them in a folder.
    public init(name: String, path: String, audioFiles: [String], speechReference: String, floorReference: String?) {
        self.name = name
        self.path = path
        self.audioFiles = audioFiles
        self.speechReference = speechReference
        self.floorReference = floorReference
    }
}

/// Finds the meetings of a dataset.
public enum Dataset {
    /// Extensions of the audio files that make a meeting's streams.
    public static let audioExtensions: Set<String> = ["flac", "wav", "ogg", "opus"]
    /// The speech reference's file name.
    public static let speechReferenceName = "speech.rttm"
    /// The floor reference's file name.
    public static let floorReferenceName = "floor.rttm"

    /// The meetings at `path`: the folder itself if it holds audio files or `speech.rttm`, else each
    /// subfolder that does, sorted by name (hidden folders and folders holding neither are skipped).
    /// - Throws: `EvaluationError` for a missing path, a file, a folder with no meeting, or a meeting
    ///   without its speech reference or without audio.
    public static func meetings(at path: String) throws(EvaluationError) -> [MeetingFolder] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw EvaluationError(path, .noSuchPath)
        }
        guard isDirectory.boolValue else { throw EvaluationError(path, .notAFolder) }
        if let meeting = try meeting(at: path) { return [meeting] }
        var meetings: [MeetingFolder] = []
        for name in try entries(of: path) where !name.hasPrefix(".") {
            let child = (path as NSString).appendingPathComponent(name)
            var childIsDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: child, isDirectory: &childIsDirectory),
                childIsDirectory.boolValue
            else { continue }
            if let meeting = try meeting(at: child) { meetings.append(meeting) }
        }
        guard !meetings.isEmpty else { throw EvaluationError(path, .noMeetings) }
        return meetings
    }

    /// The meeting in folder `path`, or nil if the folder holds neither audio nor `speech.rttm`.
    static func meeting(at path: String) throws(EvaluationError) -> MeetingFolder? {
        let names = try entries(of: path)
        let audio = names.filter { name in
            !name.hasPrefix(".") && audioExtensions.contains((name as NSString).pathExtension.lowercased())
        }
        let hasSpeech = names.contains(speechReferenceName)
        guard !audio.isEmpty || hasSpeech else { return nil }
        guard hasSpeech else { throw EvaluationError(path, .missingSpeechReference) }
        guard !audio.isEmpty else { throw EvaluationError(path, .noAudio) }
        func inside(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }
        let name = ((path as NSString).standardizingPath as NSString).lastPathComponent
        return MeetingFolder(
            name: name, path: path, audioFiles: audio.map(inside), speechReference: inside(speechReferenceName),
            floorReference: names.contains(floorReferenceName) ? inside(floorReferenceName) : nil)
    }

    private static func entries(of path: String) throws(EvaluationError) -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        } catch {
            throw EvaluationError(path, .unreadable, detail: "cannot list the folder")
        }
    }
}

/// The references of one meeting, checked against its stream ids.
public struct MeetingReference: Sendable, Equatable {
    /// Every stream's own speech; speaker = stream id.
    public var speech: [Segment]
    /// The floor holder over time (speaker = holder; time outside is nobody), or nil if not given.
    public var floor: [Segment]?

    /// References from segments already read.
    public init(speech: [Segment], floor: [Segment]?) {
        self.speech = speech
        self.floor = floor
    }

    /// Reads the references of `meeting`.
    /// - Parameter streams: the meeting's stream ids; every speaker named must be one of them.
    /// - Throws: `EvaluationError` naming the file: unreadable, malformed, or naming an unknown stream.
    public static func load(_ meeting: MeetingFolder, streams: [String]) throws(EvaluationError) -> MeetingReference {
        let speech = try readRTTM(meeting.speechReference, streams: streams)
        let floor = try meeting.floorReference.map { path throws(EvaluationError) in
            try readRTTM(path, streams: streams)
        }
        return MeetingReference(speech: speech, floor: floor)
    }
}

/// Reads the `SPEAKER` segments of an RTTM file.
/// - Parameter streams: if given, every speaker must be one of these.
/// - Throws: `EvaluationError` naming the file.
public func readRTTM(_ path: String, streams: [String]? = nil) throws(EvaluationError) -> [Segment] {
    guard let data = FileManager.default.contents(atPath: path) else {
        throw EvaluationError(path, FileManager.default.fileExists(atPath: path) ? .unreadable : .noSuchPath)
    }
    let segments: [Segment]
    do {
        segments = try RTTM.parse(String(decoding: data, as: UTF8.self))
    } catch let error as RTTM.ParseError {
        throw EvaluationError(path, .malformed, detail: error.description)
    } catch {
        throw EvaluationError(path, .malformed, detail: "\(error)")
    }
    if let streams {
        let known = Set(streams)
        if let unknown = segments.first(where: { !known.contains($0.speaker) }) {
            throw EvaluationError(path, .unknownStream(unknown.speaker))
        }
    }
    return segments
}
