import ConfigurationOverrides
import Foundation
import SpeakerCore
import SpeakerEval
import SpeakerFiles

/// `activespeaker detect`: who speaks when in the recordings of one room.
struct DetectCommand: Command {
    static let name = "detect"
    static let summary = "Detect speech and the dominant speaker in recordings of one room."
    static let synopsis = "detect [options] FILE..."

    static let overview = """
        Treats the FILEs as the participants of one room, all starting at t = 0, and
        runs the same causal engine a live call runs, 10 ms at a time. Each file is
        one stream named after the file without directory and extension (alice.wav ->
        alice), or by --id; a multichannel file gives one stream per channel
        (<name>-ch1, <name>-ch2, ...) unless --downmix. A FILE of - is standard input
        (WAV, FLAC or Ogg, read to its end; stream stdin). Files may differ in length:
        a stream leaves the room when its file ends. Events go to standard output as
        JSON Lines. WAV, FLAC, Ogg Vorbis and Ogg Opus are read; convert others
        first (ffmpeg -i talk.m4a talk.wav).
        """

    static let options: [OptionSpec] = [
        .value("rttm", "PATH", help: """
            Also write each stream's speech segments to PATH
            as NIST RTTM (speaker = stream id). Written
            whole, and only if the run succeeds.
            """),
        .value("name", "NAME", help: """
            Recording id in the RTTM file (default: the name
            of the folder holding the FILEs, as a meeting's
            reference RTTM names it; detect if they are in
            different folders or only - is given).
            """),
        .value("id", "NAME", repeatable: true, help: """
            Name the streams: one --id per FILE, in the
            order of the FILEs (a multichannel file gives
            NAME-ch1, ...). With --rttm a name, like a file
            name, must not contain a space (an RTTM field).
            """),
        .flag("summary", help: """
            After the events, write talk-time statistics:
            one JSON line, or a table on a terminal.
            """),
        .value("levels", "MS", help: """
            Every MS milliseconds (a multiple of 10), write
            each stream's level in dBov.
            """),
        .value("classes", "MS", help: """
            Every MS milliseconds (a multiple of 10), write
            the sound classifier's last probabilities of
            none, speech, music and sound per stream.
            """),
        .value("config", "FILE.json|KEY=VALUE", repeatable: true, help: """
            Override engine settings from a JSON file or
            one dotted key, e.g. vad.hangover=0.3.
            Repeatable; later ones win.
            """),
        .value("policy", "NAME", help: """
            Dominant-speaker policy: hysteresis (ours,
            the default), volfin-cohen, livekit, chime
            or loudest. Same as --config
            selection.policy=NAME, after any --config.
            """),
        .flag("print-config", help: """
            Print every setting as KEY=VALUE (the defaults
            with any --config applied) and exit.
            """),
        .flag("downmix", help: "Average the channels of a multichannel file."),
        .flag("aligned", help: """
            The files are sample-aligned (one recorder, or
            made together): do not measure or wait for
            delays between the streams (the same as
            --config alignment.maxDelay=0). By default the
            engine lines up streams up to 0.3 s apart.
            """),
        .value("jobs", "N", help: """
            Threads that share the engine's work (1-256; default: every core).
            Used only for many streams: one thread per 64 streams at most, since
            a thread costs a handshake every 10 ms. Decisions do not depend on it.
            """),
        .flag("quiet", short: "q", help: """
            Write no events or levels (for runs with --rttm
            or --summary).
            """),
    ]

    static let epilogue = """
        OUTPUT: one JSON object per line (the summary is wrapped here), ordered by t,
        keys in this order:
          {"t":1.230,"type":"speech","stream":"alice","active":true,"since":1.180}
          {"t":1.500,"type":"dominant","stream":"alice"}
          {"t":2.000,"type":"levels","levels":{"alice":-23.4,"bob":-58.1}}
          {"t":2.000,"type":"classes","classes":{"alice":{"none":0.01,"speech":0.95,
            "music":0.03,"sound":0.01},"bob":{...}}}
          {"t":3.450,"type":"speech","stream":"alice","active":false,"since":3.200}
          {"t":9.100,"type":"dominant","stream":null}
          {"type":"summary","duration":62.340,"streams":{"alice":{"speech":12.340,
            "utterances":7,"dominant":10.200,"turns":3}},"dominantChanges":12}
        t        Seconds from the start when the engine decided: the end of the 10 ms
                 hop whose audio completed the evidence (3 decimals).
        speech   A stream started (active true) or stopped (active false) speaking.
        since    When the change began: for a start, the beginning of the first speech
                 hop (since <= t); for a stop, the end of the last speech hop. An RTTM
                 segment runs from the since of a start to the since of its stop.
        dominant The room's dominant speaker is now stream; null means nobody.
        levels   Smoothed level per stream still present, dBov (0 = full scale,
                 -127 = silence), 0.1 dB steps.
        classes  The sound classifier's last answer per stream still present (it is
                 asked on frames that stand 3 dB above the stream's noise floor and
                 keeps its answer in between): probabilities, 2 decimals.
        summary  duration: seconds of audio (the longest file, in whole 10 ms hops);
                 speech: seconds inside utterances; utterances: count; dominant: seconds
                 as dominant speaker; turns: times the stream took the floor;
                 dominantChanges: number of dominant lines.
        Events of one tick keep the engine's order: speech events, then dominant. When a
        file ends, its stream leaves: an open utterance stops and a floor it held goes
        to nobody, at the time its audio ended.

        EXIT STATUS: 0 success; 1 unusable input file or unwritable output (one line
        on standard error, nothing on standard output, no RTTM file); 64 command-line
        error. Files are checked before any output, then decoded as they play: a file
        damaged partway (FLAC or Ogg cut short) also exits 1 with one line, when its
        audio is reached, after the events written so far (no RTTM file).
        """

    let files: [String]
    /// The stream names of `--id`, one per file, or nil.
    let names: [String]?
    let rttmPath: String?
    let recordingName: String
    let summary: Bool
    /// Ticks (10 ms) between level lines, or nil for none.
    let levelTicks: Int?
    /// Ticks (10 ms) between classifier lines, or nil for none.
    let classTicks: Int?
    let configuration: EngineConfiguration
    let printConfiguration: Bool
    let downmix: Bool
    let quiet: Bool
    /// Threads the engine may use (--jobs).
    let jobs: Int

    init(_ options: ParsedOptions) throws(CommandError) {
        files = options.positionals
        if files.filter({ $0 == AudioInputs.standardInput }).count > 1 {
            throw .usage("- (standard input) given more than once")
        }
        let names = options.all("id")
        if !names.isEmpty {
            guard names.count == files.count else {
                throw .usage("\(names.count) --id for \(files.count) FILEs: give one --id per FILE, in order")
            }
            if let empty = names.first(where: \.isEmpty) { throw .usage("--id '\(empty)': a name cannot be empty") }
            if let twice = names.first(where: { name in names.filter { $0 == name }.count > 1 }) {
                throw .usage("--id \(twice) given twice")
            }
        }
        self.names = names.isEmpty ? nil : names
        rttmPath = options.value("rttm")
        recordingName = options.value("name") ?? Self.defaultRecordingName(files)
        guard !recordingName.isEmpty, !recordingName.contains(where: \.isWhitespace) else {
            throw .usage("--name must be a non-empty word without spaces (it is an RTTM field)")
        }
        summary = options.has("summary")
        levelTicks = try Self.ticks(of: "levels", in: options)
        classTicks = try Self.ticks(of: "classes", in: options)
        var configuration = try options.engineConfiguration()
        if let policy = options.value("policy") {
            configuration.selection.policy = try EvalCommand.policy(named: policy)
        }
        if options.has("aligned") { configuration.alignment.maxDelay = 0 }
        self.configuration = configuration
        printConfiguration = options.has("print-config")
        downmix = options.has("downmix")
        quiet = options.has("quiet")
        jobs = try options.jobs()
        if !printConfiguration && files.isEmpty { throw .usage("no audio files given") }
    }

    /// Streams per engine thread at least: below this a thread's per-tick handshake costs more than
    /// it saves.
    static let streamsPerWorker = 64

    /// The engine's threads for `streams` streams with at most `jobs`.
    static func workers(jobs: Int, streams: Int) -> Int {
        max(1, min(jobs, streams / streamsPerWorker))
    }

    func run() throws(CommandError) {
        if printConfiguration {
            try printSettings()
            return
        }
        let sources = try open()
        let rttmFile = try rttmPath.map { path throws(CommandError) in try AtomicFile(path: path) }
        let replay: RoomReplay
        do {
            replay = try RoomReplay(
                sources: sources, configuration: configuration, roomName: recordingName,
                workers: Self.workers(jobs: jobs, streams: sources.count), policies: .withBaselines)
        } catch {
            throw .usage(error.description)
        }
        let output = BufferedOutput()
        let writer = EventWriter(output: output)
        let tally = try play(replay, sources: sources, to: writer)
        if summary {
            let report = DetectSummary(
                duration: replay.duration,
                streams: sources.indices.map { (id: sources[$0].id, statistics: replay.statistics(of: $0)) },
                dominantChanges: tally.dominantChanges)
            if Console.outputIsTerminal {
                try output.write(report.table)
            } else {
                try writer.write(report.json)
            }
        }
        try writer.flush()
        try rttmFile?.commit(RTTM.format(tally.segments.sortedSegments, recording: recordingName))
    }

    /// What a run gathers besides the event lines.
    private struct Tally {
        var segments = SpeechSegmentRecorder()
        var dominantChanges = 0
    }

    /// Plays the replay to its end, writing events (unless quiet) and levels as they come.
    /// - Throws: `.failure` naming the file when one cannot be read to its end (after some output, perhaps).
    private func play(
        _ replay: RoomReplay, sources: [FileStreamSource], to writer: EventWriter
    ) throws(CommandError) -> Tally {
        let ids = replay.streamIDs
        let interactive = Console.outputIsTerminal
        // On a terminal that shows the events, they are progress enough.
        let progress = ProgressLine(label: "detect", enabled: replay.duration > 60 && (quiet || !interactive))
        defer { progress.clear() }
        var tally = Tally()
        var events: [RoomReplay.Event] = []

        func writeEvents() throws(CommandError) {
            events.removeAll(keepingCapacity: true)
            replay.consumeEvents { events.append($0) }
            for event in events {
                switch event {
                case .speech(let stream, let active, let time, let since):
                    tally.segments.record(stream: ids[stream], active: active, since: since)
                    if !quiet { try writer.speech(time: time, stream: ids[stream], active: active, since: since) }
                case .dominant(let stream, let time):
                    tally.dominantChanges += 1
                    if !quiet { try writer.dominant(time: time, stream: stream.map { ids[$0] }) }
                }
            }
        }

        while !replay.isAtEnd {
            replay.tick()
            if let failure = replay.sourceFailure {
                // The tick played zeros for the file that failed: none of its events are written.
                throw .failure(AudioInputs.message(for: failure.error, of: sources[failure.stream]))
            }
            try writeEvents()
            if let levelTicks, !quiet, replay.ticks % levelTicks == 0 {
                try writer.levels(time: replay.time, replay.presentStreams.map { (ids[$0], replay.level(of: $0)!) })
            }
            if let classTicks, !quiet, replay.ticks % classTicks == 0 {
                try writer.classes(
                    time: replay.time,
                    replay.presentStreams.map { (ids[$0], replay.engine.soundClasses(of: replay.handle(of: $0)!)) })
            }
            if interactive && !quiet { try writer.flush() }
            progress.update(Double(replay.ticks) / Double(replay.tickCount))
        }
        replay.finish()
        try writeEvents()
        return tally
    }

    /// The interval of a `--NAME MS` option in ticks (10 ms), or nil when it is not given.
    private static func ticks(of name: String, in options: ParsedOptions) throws(CommandError) -> Int? {
        guard let text = options.value(name) else { return nil }
        guard let milliseconds = Int(text), milliseconds > 0, milliseconds % 10 == 0 else {
            throw .usage("--\(name) \(text): expected a positive multiple of 10 milliseconds")
        }
        return milliseconds / 10
    }

    /// The RTTM recording id when `--name` is not given: the name of the folder that holds every FILE
    /// (the meeting folder, which names the meeting in its reference RTTM files), spaces made `_`;
    /// `detect` when the FILEs are in different folders or only standard input is read.
    static func defaultRecordingName(_ files: [String]) -> String {
        let folders = Set(files.filter { $0 != AudioInputs.standardInput }.map {
            URL(fileURLWithPath: $0).standardizedFileURL.deletingLastPathComponent().path
        })
        guard folders.count == 1, let folder = folders.first, folder != "/" else { return "detect" }
        let name = URL(fileURLWithPath: folder).lastPathComponent
        return String(name.map { $0.isWhitespace ? "_" : $0 })
    }

    /// Decodes every file at the engine's rate, mapping decoding errors to one-line failures.
    static func decode(_ paths: [String], names: [String]? = nil, downmix: Bool) throws(CommandError) -> [DecodedStream] {
        try AudioInputs.decode(paths, names: names, downmix: downmix)
    }

    /// Opens and checks every file before anything is written, so a bad file leaves no output at all; the
    /// samples are decoded as they play.
    private func open() throws(CommandError) -> [FileStreamSource] {
        let sources = try AudioInputs.open(files, names: names, downmix: downmix)
        if rttmPath != nil, let stream = sources.first(where: { $0.id.contains(where: \.isWhitespace) || $0.id.isEmpty }) {
            throw .failure(
                "\(stream.shownPath): stream id \"\(stream.id)\" cannot be an RTTM speaker (it contains a space); "
                    + "rename the file or name the stream with --id")
        }
        return sources
    }

    private func printSettings() throws(CommandError) {
        let settings: [(key: String, value: String)]
        do {
            settings = try configuration.flattened()
        } catch {
            throw .failure("cannot list the configuration: \(error)")
        }
        let output = BufferedOutput()
        for (key, value) in settings { try output.write("\(key)=\(value)\n") }
        try output.flush()
    }
}
