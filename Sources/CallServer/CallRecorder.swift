import CallProtocol
import Foundation
import SpeakerCore
import SpeakerEval
import SpeakerOpus
import Synchronization

/// Records calls: per room a folder with each participant's decoded audio (Ogg Opus, 16 kHz, aligned
/// on room time: silence where nothing was received), the room's events (`events.jsonl`), and the
/// engine's speech segments and floor (`speech.rttm`, `floor.rttm`), so that a recorded call is a
/// meeting `activespeaker eval` reads (the RTTMs are the system's output: correct them by hand to make
/// references).
///
/// Threads: the media thread hands over audio hops, speech and floor changes and room openings and
/// closings; any thread hands over events. None of them waits for a file: each call appends a job to
/// one queue of jobs (a `Mutex` held for at most a copy of 160 samples), and one serial writer
/// (`writer`) carries the jobs out in that order: it keeps every recording's state, encodes Opus and
/// writes the files. So the events of `events.jsonl` and the audio keep the order they were handed
/// over in, as they did when the callers wrote under one lock.
///
/// Hops wait in a pool of `hopCapacity` slots allocated once. A hop that finds no free slot (the
/// writer is that far behind: a slow disk) is dropped and counted (`droppedHops`, and per room in the
/// `recording-closed` log line); its place in the file becomes silence, so the file stays aligned on
/// room time. Events, speech and floor changes are never dropped.
///
/// Silence costs the writer next to nothing (`OggOpusWriter` repeats one silent packet): a participant
/// who joins a day-old room, or unmutes after an hour, has that time written as silence in one step
/// of milliseconds, so the file stays aligned on room time without holding up the other rooms' hops.
final class CallRecorder: @unchecked Sendable {
    // @unchecked Sendable: `recordings` (with its file writers, which are not Sendable) is touched only
    // by jobs on `writer` (checked by `dispatchPrecondition`); `jobs` is a Mutex; a slot of `pool` is
    // written by the thread that takes it from `jobs.freeSlots`, then read only by the writer until the
    // writer puts it back, both under that Mutex.
    private struct Track {
        let writer: OggOpusWriter
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

    /// What the writer does, in the order handed over.
    private enum Job {
        case open(room: String, tick: Int)
        /// A hop whose samples wait in `pool` at `slot`.
        case hop(room: String, participant: String, slot: Int, tick: Int)
        case speech(room: String, participant: String, active: Bool, time: Double)
        case floor(room: String, participant: String?, time: Double)
        case event(room: String, line: String)
        case close(room: String, tick: Int, droppedHops: Int)
        case finish(tick: Int, droppedHops: [String: Int])
    }

    private struct Jobs {
        var pending: [Job] = []
        var freeSlots: [Int]
        /// True from when a drain is scheduled on `writer` until it finds `pending` empty.
        var draining = false
        var droppedHops = 0
        /// Hops dropped per room since it was opened; reported when it closes.
        var droppedInRoom: [String: Int] = [:]

        /// Appends `job`; true when the caller must schedule a drain.
        mutating func append(_ job: Job) -> Bool {
            pending.append(job)
            defer { draining = true }
            return !draining
        }
    }

    let directory: String
    /// Hops that can wait for the writer (see the type's summary).
    let hopCapacity: Int
    /// The serial queue that owns the recordings and does all file work. Tests stall it to play a slow disk.
    let writer = DispatchQueue(label: "activespeaker-recorder")
    private let jobs: Mutex<Jobs>
    private let pool: UnsafeMutableBufferPointer<Float>
    private var recordings: [String: Recording] = [:]
    /// 20 ms frames the closed tracks sent through the Opus encoder (silence mostly repeats a packet);
    /// the writer's alone.
    private var framesEncoded = 0
    private let log: @Sendable (String) -> Void

    /// Room time of a tick, in seconds.
    private static func seconds(_ ticks: Int) -> Double { Double(ticks) * AnalysisFormat.hopDuration }

    /// - Parameters:
    ///   - hopCapacity: Hops that may wait for the writer; 8,192 (5 MiB) by default: 82 s of one
    ///     publisher's audio, 5 s of a room of 16.
    ///   - log: Receives one JSON line per failure (`recording-failed`) and per closed room
    ///     (`recording-closed`, with its folder and the hops it dropped); from the writer's queue.
    /// - Throws: `CocoaError` if the folder cannot be created.
    init(directory: String, hopCapacity: Int = 8192, log: @escaping @Sendable (String) -> Void) throws {
        precondition(hopCapacity > 0, "the recorder needs room for at least one hop")
        self.directory = directory
        self.hopCapacity = hopCapacity
        self.log = log
        pool = .allocate(capacity: hopCapacity * AnalysisFormat.hopSize)
        pool.initialize(repeating: 0)
        jobs = Mutex(Jobs(freeSlots: Array((0..<hopCapacity).reversed())))
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit {
        pool.deallocate()
    }

    /// 20 ms frames encoded by the tracks closed so far; waits for the writer (tests).
    var encodedFrames: Int { writer.sync { framesEncoded } }

    /// Hops dropped so far because the writer was `hopCapacity` hops behind.
    var droppedHops: Int { jobs.withLock { $0.droppedHops } }

    /// Starts a room's folder: `DIRECTORY/ROOM`, or `ROOM-2`, `ROOM-3`… if taken.
    func roomOpened(_ room: CallRoomID, tick: Int) {
        hand(.open(room: room.rawValue, tick: tick))
    }

    /// One 10 ms hop of a participant at `tick` (16 kHz); gaps since its last hop become silence.
    /// Copies the samples and returns: never waits for the writer. Real-time safe but for the `Mutex`.
    func hop(room id: CallRoomID, participant: ParticipantID, hop: UnsafeBufferPointer<Float>, tick: Int) {
        precondition(hop.count == AnalysisFormat.hopSize, "a hop is \(AnalysisFormat.hopSize) samples")
        let room = id.rawValue
        let drain = jobs.withLock { queue -> Bool in
            guard let slot = queue.freeSlots.popLast() else {
                queue.droppedHops += 1
                queue.droppedInRoom[room, default: 0] += 1
                return false
            }
            _ = UnsafeMutableBufferPointer(rebasing: pool[(slot * hop.count)..<((slot + 1) * hop.count)]).update(fromContentsOf: hop)
            return queue.append(.hop(room: room, participant: participant.rawValue, slot: slot, tick: tick))
        }
        if drain { scheduleDrain() }
    }

    /// A speech event of the engine (seconds of room time).
    func speech(room: CallRoomID, participant: ParticipantID, active: Bool, time: Double) {
        hand(.speech(room: room.rawValue, participant: participant.rawValue, active: active, time: time))
    }

    /// The floor changed (seconds of room time; nil: nobody).
    func floor(room: CallRoomID, participant: ParticipantID?, time: Double) {
        hand(.floor(room: room.rawValue, participant: participant?.rawValue, time: time))
    }

    /// Appends one JSON line to the room's `events.jsonl`.
    func event(room: CallRoomID, line: String) {
        hand(.event(room: room.rawValue, line: line))
    }

    /// Closes a room's files and writes its RTTMs; `tick` is the media loop's tick at the end.
    /// Returns at once; the writer finishes the files.
    func roomClosed(_ id: CallRoomID, tick: Int) {
        let room = id.rawValue
        hand { queue in .close(room: room, tick: tick, droppedHops: queue.droppedInRoom.removeValue(forKey: room) ?? 0) }
    }

    /// Closes every room (server stop) and returns once everything handed over before is written.
    func finish(tick: Int) {
        hand { queue in
            defer { queue.droppedInRoom.removeAll() }
            return .finish(tick: tick, droppedHops: queue.droppedInRoom)
        }
        // The drain scheduled for the job above, or the one running, goes on until no job is left.
        writer.sync {}
    }

    // MARK: Handing over

    private func hand(_ job: Job) {
        hand { _ in job }
    }

    private func hand(_ job: (inout Jobs) -> Job) {
        let drain = jobs.withLock { queue in
            let next = job(&queue)
            return queue.append(next)
        }
        if drain { scheduleDrain() }
    }

    private func scheduleDrain() {
        writer.async { [self] in drain() }
    }

    // MARK: The writer

    /// Carries out jobs until none is left.
    private func drain() {
        while true {
            let batch = jobs.withLock { queue -> [Job] in
                if queue.pending.isEmpty { queue.draining = false }
                defer { queue.pending.removeAll(keepingCapacity: true) }
                return queue.pending
            }
            if batch.isEmpty { return }
            for job in batch { perform(job) }
        }
    }

    private func perform(_ job: Job) {
        dispatchPrecondition(condition: .onQueue(writer))
        switch job {
        case .open(let room, let tick): open(room, tick: tick)
        case .hop(let room, let participant, let slot, let tick):
            let samples = UnsafeBufferPointer(rebasing: pool[(slot * AnalysisFormat.hopSize)..<((slot + 1) * AnalysisFormat.hopSize)])
            write(samples, room: room, participant: participant, tick: tick)
            jobs.withLock { $0.freeSlots.append(slot) }
        case .speech(let room, let participant, let active, let time):
            guard let recording = recordings[room] else { return }
            if active {
                recording.openSpeech[participant] = time
            } else if let start = recording.openSpeech.removeValue(forKey: participant), time > start {
                recording.speech.append(Segment(speaker: participant, start: start, duration: time - start))
            }
        case .floor(let room, let participant, let time):
            guard let recording = recordings[room] else { return }
            if let (holder, start) = recording.holder, time > start {
                recording.floor.append(Segment(speaker: holder, start: start, duration: time - start))
            }
            recording.holder = participant.map { ($0, time) }
        case .event(let room, let line):
            recordings[room]?.events?.write(Data((line + "\n").utf8))
        case .close(let room, let tick, let droppedHops):
            guard let recording = recordings.removeValue(forKey: room) else { return }
            close(recording, room: room, tick: tick, droppedHops: droppedHops)
        case .finish(let tick, let droppedHops):
            for (room, recording) in recordings { close(recording, room: room, tick: tick, droppedHops: droppedHops[room] ?? 0) }
            recordings.removeAll()
        }
    }

    private func open(_ room: String, tick: Int) {
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
            recordings[room] = recording
        } catch {
            failed("recording \(folder): \(error.localizedDescription)")
        }
    }

    private func write(_ hop: UnsafeBufferPointer<Float>, room: String, participant: String, tick: Int) {
        guard let recording = recordings[room] else { return }
        do {
            var track: Track
            if let existing = recording.tracks[participant] {
                track = existing
            } else {
                let writer = try OggOpusWriter(path: recording.folder + "/" + participant + ".opus", sampleRate: AnalysisFormat.sampleRate)
                track = Track(writer: writer, nextTick: recording.openedAtTick)
            }
            if tick > track.nextTick { try track.writer.writeSilence((tick - track.nextTick) * AnalysisFormat.hopSize) }
            try track.writer.write(hop)
            track.nextTick = tick + 1
            recording.tracks[participant] = track
        } catch {
            // One failure per participant is reported; the track stops.
            recording.tracks[participant] = nil
            failed("recording \(participant) in \(room): \(error)")
        }
    }

    private func close(_ recording: Recording, room: String, tick: Int, droppedHops: Int) {
        let time = Self.seconds(tick - recording.openedAtTick)
        for (participant, start) in recording.openSpeech where time > start {
            recording.speech.append(Segment(speaker: participant, start: start, duration: time - start))
        }
        if let (holder, start) = recording.holder, time > start {
            recording.floor.append(Segment(speaker: holder, start: start, duration: time - start))
        }
        for (participant, track) in recording.tracks {
            do {
                try track.writer.close()
            } catch {
                failed("recording \(participant) in \(room): \(error)")
            }
            framesEncoded += track.writer.framesEncoded
        }
        try? recording.events?.close()
        let speech = recording.speech.sorted { ($0.start, $0.speaker) < ($1.start, $1.speaker) }
        do {
            try RTTM.format(speech, recording: recording.name).write(toFile: recording.folder + "/speech.rttm", atomically: true, encoding: .utf8)
            try RTTM.format(recording.floor, recording: recording.name).write(toFile: recording.folder + "/floor.rttm", atomically: true, encoding: .utf8)
        } catch {
            failed("recording \(recording.folder): \(error.localizedDescription)")
        }
        log(JSON.text(ClosedLine(room: room, folder: recording.folder, droppedHops: droppedHops)))
    }

    private func failed(_ message: String) {
        log(JSON.text(FailedLine(message: message)))
    }

    /// The log line of a closed room's recording.
    private struct ClosedLine: Encodable {
        let type = "recording-closed"
        var room: String
        var folder: String
        /// Hops of the room dropped because the writer was behind.
        var droppedHops: Int
    }

    /// The log line of a recording that could not be written (a folder, a file, an RTTM).
    private struct FailedLine: Encodable {
        let type = "recording-failed"
        var message: String
    }
}
