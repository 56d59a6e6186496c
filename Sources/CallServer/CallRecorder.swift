import Foundation
import SpeakerCore
import SpeakerEval
import SpeakerIO

/// Records calls: per room a folder with each participant's decoded audio (Ogg Opus, 16 kHz, aligned
/// on room time: silence where nothing was received), the room's events (`events.jsonl`), and the
/// engine's speech segments and floor (`speech.rttm`, `floor.rttm`), so that a recorded call is a
/// meeting `activespeaker eval` reads (the RTTMs are the system's output: correct them by hand to make
/// references).
///
/// Audio and speech come from the media thread, events from any thread; one lock guards everything.
/// File writes happen on the caller's thread (libsndfile buffers them).
final class CallRecorder: @unchecked Sendable {
    // @unchecked Sendable: `state` (with its file writers, which are not Sendable) is touched only
    // inside `withState`, under `lock`.
    private struct Track {
        let writer: AudioFileWriter
        /// The tick the next hop written belongs to.
        var nextTick: Int
    }

    private final class Recording {
        let folder: String
        let name: String
        let openedAtTick: Int
        var tracks: [String: Track] = [:]
        var events: FileHandle?
        var speech: [Segment] = []
        var openSpeech: [String: Double] = [:]
        var floor: [Segment] = []
        var holder: (String, Double)?

        init(folder: String, name: String, openedAtTick: Int) {
            self.folder = folder
            self.name = name
            self.openedAtTick = openedAtTick
        }
    }

    private struct State {
        var recordings: [String: Recording] = [:]
        var failures: [String] = []
    }

    let directory: String
    private let lock = NSLock()
    private var state = State()

    private func withState<T>(_ body: (inout State) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
    private let onFailure: @Sendable (String) -> Void

    /// - Throws: `CocoaError` if the folder cannot be created.
    init(directory: String, onFailure: @escaping @Sendable (String) -> Void) throws {
        self.directory = directory
        self.onFailure = onFailure
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// Starts a room's folder: `DIRECTORY/ROOM`, or `ROOM-2`, `ROOM-3`… if taken.
    func roomOpened(_ room: String, tick: Int) {
        var folder = directory + "/" + room
        var suffix = 2
        while FileManager.default.fileExists(atPath: folder) {
            folder = directory + "/" + room + "-\(suffix)"
            suffix += 1
        }
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: folder + "/events.jsonl", contents: nil)
            let recording = Recording(folder: folder, name: URL(fileURLWithPath: folder).lastPathComponent, openedAtTick: tick)
            recording.events = FileHandle(forWritingAtPath: folder + "/events.jsonl")
            withState { $0.recordings[room] = recording }
        } catch {
            onFailure("recording \(folder): \(error.localizedDescription)")
        }
    }

    /// One 10 ms hop of a participant at `tick` (16 kHz); gaps since its last hop become silence.
    func hop(room: String, participant: String, hop: UnsafeBufferPointer<Float>, tick: Int) {
        let failure: String? = withState { state in
            guard let recording = state.recordings[room] else { return nil }
            do {
                var track: Track
                if let existing = recording.tracks[participant] {
                    track = existing
                } else {
                    let writer = try AudioFileWriter(
                        path: recording.folder + "/" + participant + ".opus", sampleRate: AnalysisFormat.sampleRate, format: .oggOpus)
                    track = Track(writer: writer, nextTick: recording.openedAtTick)
                }
                if tick > track.nextTick { try track.writer.writeSilence((tick - track.nextTick) * AnalysisFormat.hopSize) }
                try track.writer.write(hop)
                track.nextTick = tick + 1
                recording.tracks[participant] = track
                return nil
            } catch {
                // One failure per participant is reported; the track stops.
                recording.tracks[participant] = nil
                return "recording \(participant) in \(room): \(error)"
            }
        }
        if let failure { onFailure(failure) }
    }

    /// A speech event of the engine (seconds of room time).
    func speech(room: String, participant: String, active: Bool, time: Double) {
        withState { state in
            guard let recording = state.recordings[room] else { return }
            if active {
                recording.openSpeech[participant] = time
            } else if let start = recording.openSpeech.removeValue(forKey: participant), time > start {
                recording.speech.append(Segment(speaker: participant, start: start, duration: time - start))
            }
        }
    }

    /// The floor changed (seconds of room time; nil: nobody).
    func floor(room: String, participant: String?, time: Double) {
        withState { state in
            guard let recording = state.recordings[room] else { return }
            if let (holder, start) = recording.holder, time > start {
                recording.floor.append(Segment(speaker: holder, start: start, duration: time - start))
            }
            recording.holder = participant.map { ($0, time) }
        }
    }

    /// Appends one JSON line to the room's `events.jsonl`.
    func event(room: String, line: String) {
        withState { state in
            state.recordings[room]?.events?.write(Data((line + "\n").utf8))
        }
    }

    /// Closes a room's files and writes its RTTMs; `tick` is the media loop's tick at the end.
    func roomClosed(_ room: String, tick: Int) {
        guard let recording = withState({ $0.recordings.removeValue(forKey: room) }) else { return }
        close(recording, tick: tick)
    }

    /// Closes every room (server stop).
    func finish(tick: Int) {
        let all = withState { state in
            defer { state.recordings.removeAll() }
            return state.recordings
        }
        for recording in all.values { close(recording, tick: tick) }
    }

    private func close(_ recording: Recording, tick: Int) {
        let time = Double(tick - recording.openedAtTick) * AnalysisFormat.hopDuration
        for (participant, start) in recording.openSpeech where time > start {
            recording.speech.append(Segment(speaker: participant, start: start, duration: time - start))
        }
        if let (holder, start) = recording.holder, time > start {
            recording.floor.append(Segment(speaker: holder, start: start, duration: time - start))
        }
        for track in recording.tracks.values { track.writer.close() }
        try? recording.events?.close()
        let speech = recording.speech.sorted { ($0.start, $0.speaker) < ($1.start, $1.speaker) }
        do {
            try RTTM.format(speech, recording: recording.name).write(toFile: recording.folder + "/speech.rttm", atomically: true, encoding: .utf8)
            try RTTM.format(recording.floor, recording: recording.name).write(toFile: recording.folder + "/floor.rttm", atomically: true, encoding: .utf8)
        } catch {
            onFailure("recording \(recording.folder): \(error.localizedDescription)")
        }
    }
}
