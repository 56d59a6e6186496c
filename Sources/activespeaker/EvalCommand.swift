import Foundation
import Synchronization
import SpeakerCore
import SpeakerEval
import SpeakerFiles
import SpeakerIO

/// `activespeaker eval`: scores the engine (and other systems) on labelled meetings.
struct EvalCommand: Command {
    static let name = "eval"
    static let summary = "Score voice activity and the dominant speaker on labelled meetings."
    static let synopsis = "eval [options] DATASET"

    static let overview = """
        DATASET is a folder of meetings, or one meeting folder. A meeting folder holds
        one audio file per participant (*.flac, *.wav, *.ogg, *.opus; the stream id
        is the file name without extension), speech.rttm (each participant's own
        speech, speaker = stream id) and, optionally, floor.rttm (the dominant
        speaker over time; without it the floor is not scored). See
        docs/evaluation.md for the format and the definition of every metric.

        Each meeting is played through the same causal engine as 'detect', once per
        policy. Voice activity is scored per stream against that participant's own
        speech (other participants' voices leaking into the microphone count as
        non-speech) in 10 ms frames, at collar 0 and +-0.25 s; the dominant speaker
        against floor.rttm. Results per meeting and pooled go to standard output as
        a table, or as one JSON document with --json.
        """

    static let options: [OptionSpec] = [
        .value("policy", "NAME", help: """
            Dominant-speaker policy: hysteresis (ours,
            the default), volfin-cohen, livekit, chime
            or loudest.
            """),
        .value("policies", "A,B,...", help: """
            Run several policies side by side, e.g.
            hysteresis,volfin-cohen,livekit,chime,loudest.
            """),
        .value("system-rttm", "DIR", repeatable: true, help: """
            Also score another system's output, read from
            DIR/<meeting>.rttm (speech, speaker = stream id)
            and, if present, DIR/<meeting>.floor.rttm (the
            floor). The system is named after DIR. With
            only --system-rttm, the engine is not run.
            Repeatable.
            """),
        .value("uem", "FILE", help: """
            Score only the regions of a NIST UEM file
            (<meeting> <channel> <start> <end> per line).
            """),
        .value("config", "FILE.json|KEY=VALUE", repeatable: true, help: """
            Override engine settings, as for 'detect'.
            """),
        .flag("json", help: "Write the results as one JSON document."),
        .value("plots", "DIR", help: """
            Write an SVG timeline per meeting to DIR
            (created if missing): speech and floor lanes,
            reference and systems, errors marked.
            """),
        .flag("per-stream", help: "Add a table row per stream under each meeting."),
        .value("jobs", "N", help: """
            Meetings evaluated at once, each on its own thread (default:
            the number of cores). The results do not depend on it.
            """),
        .value("skew", "MAX_MS", help: """
            Streams that arrive apart, as in a real call: delay
            each stream by 0...MAX_MS ms (drawn per meeting from
            --seed, digital silence before it) and its speech
            and floor references with it.
            """),
        .value("drift", "MS", help: """
            With --skew: each stream's delay also drifts by up
            to +-MS ms per minute (default 0).
            """),
        .value("seed", "N", help: "Seed of the --skew draw (default 1)."),
        .flag("aligned", help: """
            The streams are sample-aligned (one recorder):
            do not measure or wait for delays between them
            (the same as --config alignment.maxDelay=0).
            """),
    ]

    static let epilogue = """
        TABLE: P precision, R recall, F1, miss (P_miss), FA (P_fa), BA balanced
        accuracy, DCF detection cost 0.25 P_fa + 0.75 P_miss; leak FA: share of the
        frames where only other participants speak that the system marked as speech.
        Floor: accuracy over single-holder time and nobody accuracy over nobody time
        (+-0.5 s around reference changes not scored), switch latency median and p90
        (changes followed within 5 s), missed changes, false switches and switches
        per minute. Systems whose voice activity is identical share one VAD row.

        EXIT STATUS: 0 success; 1 unusable dataset, reference, audio or system file
        (one line on standard error, nothing on standard output, no plots); 64
        command-line error.

        EXAMPLES:
          activespeaker eval Fixtures/meetings
          activespeaker eval --skew 200 --seed 7 datasets-local/heldout
          activespeaker eval --policies hysteresis,volfin-cohen --plots out/plots \\
              datasets-local/dev
          activespeaker eval --json --system-rttm out/silero datasets-local/heldout
        """

    let dataset: String
    /// Floor policy names, each one of `FloorPolicies.withBaselines`.
    let policies: [String]
    let systemFolders: [String]
    let uemPath: String?
    let configuration: EngineConfiguration
    let json: Bool
    let plotsFolder: String?
    let perStream: Bool
    let jobs: Int
    /// Largest per-stream delay (seconds), drift (seconds per second) and seed of `--skew`, or nil.
    let skew: (maxDelay: Double, maxDrift: Double, seed: UInt64)?

    init(_ options: ParsedOptions) throws(CommandError) {
        guard let dataset = options.positionals.first else { throw .usage("no DATASET given") }
        guard options.positionals.count == 1 else {
            throw .usage("one DATASET expected, got \(options.positionals.count) (a dataset is a folder of meetings)")
        }
        self.dataset = dataset
        systemFolders = options.all("system-rttm")
        if options.value("policy") != nil && options.value("policies") != nil {
            throw .usage("give --policy or --policies, not both")
        }
        var names: [String] = []
        if let one = options.value("policy") { names = [one] }
        if let several = options.value("policies") {
            names = several.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
        }
        if names.isEmpty && systemFolders.isEmpty { names = [SelectionConfiguration.hysteresis] }
        policies = try names.map { name throws(CommandError) in try Self.policy(named: name) }
        let systemNames = policies + systemFolders.map(Self.systemName(ofFolder:))
        if let duplicate = systemNames.first(where: { name in systemNames.filter { $0 == name }.count > 1 }) {
            throw .usage("system '\(duplicate)' given twice (a --system-rttm folder is named after its last component)")
        }
        uemPath = options.value("uem")
        var configuration = try options.engineConfiguration()
        if options.has("aligned") { configuration.alignment.maxDelay = 0 }
        self.configuration = configuration
        if let text = options.value("skew") {
            guard let milliseconds = Double(text), milliseconds >= 0, milliseconds <= 5000 else {
                throw .usage("--skew: expected milliseconds 0...5000, got '\(text)'")
            }
            var drift = 0.0
            if let text = options.value("drift") {
                guard let value = Double(text), value >= 0, value <= 1000 else {
                    throw .usage("--drift: expected milliseconds per minute 0...1000, got '\(text)'")
                }
                drift = value / 1000 / 60
            }
            var seed: UInt64 = 1
            if let text = options.value("seed") {
                guard let value = UInt64(text) else { throw .usage("--seed: expected a whole number, got '\(text)'") }
                seed = value
            }
            guard systemFolders.isEmpty else {
                throw .usage("--skew applies to the engine's runs; --system-rttm outputs were made on the files as they are")
            }
            skew = (milliseconds / 1000, drift, seed)
        } else {
            guard options.value("drift") == nil, options.value("seed") == nil else {
                throw .usage("--drift and --seed go with --skew")
            }
            skew = nil
        }
        json = options.has("json")
        plotsFolder = options.value("plots")
        perStream = options.has("per-stream")
        jobs = try options.jobs()
    }

    /// The policy called `name`.
    /// - Throws: `CommandError.usage` listing the names when there is none.
    static func policy(named name: String) throws(CommandError) -> String {
        guard FloorPolicies.withBaselines.contains(name) else {
            throw .usage("unknown policy '\(name)'; expected one of \(Self.policyNames.joined(separator: ", "))")
        }
        return name
    }

    /// Ours first, then the baselines, as the help lists them.
    static let policyNames = [SelectionConfiguration.hysteresis] + BaselinePolicy.allCases.map(\.rawValue)

    /// A system read from RTTM files is named after its folder.
    static func systemName(ofFolder folder: String) -> String {
        ((folder as NSString).standardizingPath as NSString).lastPathComponent
    }

    var systemNames: [String] { policies + systemFolders.map(Self.systemName(ofFolder:)) }

    func run() throws(CommandError) {
        let meetings = try checked(Dataset.meetings(at: dataset))
        let regions = try uemPath.map { path throws(CommandError) in try checked(UEM.read(path)) }
        if let regions, let uemPath, let missing = meetings.first(where: { regions[$0.name] == nil }) {
            throw .failure(EvaluationError(uemPath, .notInUEM(meeting: missing.name)).description)
        }
        for folder in systemFolders {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory) else {
                throw .failure(EvaluationError(folder, .noSuchPath).description)
            }
            guard isDirectory.boolValue else { throw .failure(EvaluationError(folder, .notAFolder).description) }
            for meeting in meetings where !FileManager.default.fileExists(atPath: systemFile(folder, meeting.name)) {
                throw .failure(EvaluationError(systemFile(folder, meeting.name), .missingSystemOutput).description)
            }
        }
        // Open every audio file and read every reference before the long part, so that a bad input
        // fails at once.
        for meeting in meetings {
            for file in meeting.audioFiles { try loading { _ = try AudioFile(path: file) } }
            _ = try checked(readRTTM(meeting.speechReference))
            if let floor = meeting.floorReference { _ = try checked(readRTTM(floor)) }
        }
        let plots = try plotsFolder.map { folder throws(CommandError) in try PlotFolder(path: folder) }

        let progress = EvalProgress(meetings: meetings.count, runsPerMeeting: policies.count)
        defer { progress.clear() }
        // Meetings are independent: `jobs` threads take them in order; the results keep that order,
        // and the first failure (in meeting order) is the one reported.
        let results = Mutex<[Int: Result<([MeetingScore], String?), CommandError>]>([:])
        let next = Atomic<Int>(0)
        let failed = Atomic<Bool>(false)
        DispatchQueue.concurrentPerform(iterations: min(jobs, meetings.count)) { _ in
            while !failed.load(ordering: .relaxed) {
                let number = next.add(1, ordering: .relaxed).oldValue
                guard number < meetings.count else { return }
                let meeting = meetings[number]
                let result: Result<([MeetingScore], String?), CommandError>
                do throws(CommandError) {
                    result = .success(try evaluate(meeting, number: number, regions: regions?[meeting.name], progress: progress))
                } catch {
                    result = .failure(error)
                    failed.store(true, ordering: .relaxed)
                }
                results.withLock { $0[number] = result }
            }
        }
        progress.clear()
        var scores: [[MeetingScore]] = []
        var pictures: [(name: String, svg: String)] = []
        let finished = results.withLock { $0 }
        for number in meetings.indices {
            guard let result = finished[number] else { continue }
            let (meetingScores, picture) = try result.get()
            scores.append(meetingScores)
            if let picture { pictures.append((meetings[number].name, picture)) }
        }

        let output = BufferedOutput()
        if json {
            try output.write(EvaluationReport(dataset: dataset, systems: systemNames, scores: scores).json())
        } else {
            try output.write(EvaluationTable(systems: systemNames, scores: scores, perStream: perStream).text)
        }
        try plots?.write(pictures)
        try output.flush()
    }

    /// Loads, runs and scores one meeting; returns one score per system and its plot if wanted.
    private func evaluate(
        _ meeting: MeetingFolder, number: Int, regions: ScoredRegions?, progress: EvalProgress
    ) throws(CommandError) -> ([MeetingScore], String?) {
        let decoded = try loading { try loadStreams(paths: meeting.audioFiles, sampleRate: AnalysisFormat.sampleRate) }
        var streams = decoded.map { ReplayStream(id: $0.id, samples: $0.samples) }
        let ids = streams.map(\.id)
        var reference = try checked(MeetingReference.load(meeting, streams: ids))
        if let skew {
            let length = Double(streams.map(\.samples.count).max() ?? 0) / Double(AnalysisFormat.sampleRate)
            let plan = SkewPlan.draw(
                streams: ids, maxDelay: skew.maxDelay, maxDrift: skew.maxDrift, duration: length, meeting: meeting.name,
                seed: skew.seed)
            streams = streams.map { ReplayStream(id: $0.id, samples: plan.skews[$0.id]!.apply(to: $0.samples)) }
            reference = plan.apply(to: reference)
        }
        let hops = streams.map(\.hopCount).max() ?? 0
        let duration = Double(hops) * AnalysisFormat.hopDuration

        var outputs: [(name: String, output: SystemOutput)] = []
        for (run, policy) in policies.enumerated() {
            var configuration = self.configuration
            configuration.selection.policy = policy
            progress.show(meeting: number, run: run, fraction: 0, label: "\(meeting.name) · \(policy)")
            let output: SystemOutput
            do {
                output = try EngineRun.run(streams, configuration: configuration) { fraction in
                    progress.show(meeting: number, run: run, fraction: fraction, label: "\(meeting.name) · \(policy)")
                }
            } catch {
                throw .usage(error.description)
            }
            outputs.append((policy, output))
        }
        for folder in systemFolders {
            let speech = try checked(readRTTM(systemFile(folder, meeting.name), streams: ids))
            let floorPath = systemFile(folder, meeting.name, floor: true)
            let floor = FileManager.default.fileExists(atPath: floorPath) ? try checked(readRTTM(floorPath, streams: ids)) : nil
            outputs.append((Self.systemName(ofFolder: folder), SystemOutput(speech: speech, floorSegments: floor)))
        }
        let scores = outputs.map { system in
            MeetingScore(
                meeting: meeting.name, system: system.name, streams: ids, reference: reference, output: system.output,
                duration: duration, regions: regions)
        }
        guard plotsFolder != nil else { return (scores, nil) }
        let captions = scores.map { score in
            var line = score.system.padding(toLength: max(14, score.system.count), withPad: " ", startingAt: 0)
            line += "  VAD F1 " + EvaluationTable.fraction(score.vad[0].counts.f1)
            line += ", leaked-speech FA " + (score.vad[0].leaked.falseAlarmRate.map(EvaluationTable.percent) ?? "-")
            if let floor = score.floor {
                line += "; floor accuracy " + EvaluationTable.percent(floor.accuracy)
                line += ", nobody " + EvaluationTable.percent(floor.nobodyAccuracy)
                line += ", median latency " + EvaluationTable.seconds(floor.medianLatency)
                line += ", \(floor.falseSwitches) false " + (floor.falseSwitches == 1 ? "switch" : "switches")
            }
            return line
        }
        let plot = TimelinePlot(
            meeting: meeting.name, duration: duration, streams: ids, reference: reference,
            systems: outputs.map { TimelinePlot.System(name: $0.name, output: $0.output) }, regions: regions,
            captions: captions)
        return (scores, plot.svg())
    }

    /// `DIR/<meeting>.rttm`, or `DIR/<meeting>.floor.rttm`.
    private func systemFile(_ folder: String, _ meeting: String, floor: Bool = false) -> String {
        (folder as NSString).appendingPathComponent(meeting + (floor ? ".floor.rttm" : ".rttm"))
    }

    /// The value, or a `CommandError.failure` with the evaluation error's one-line description.
    private func checked<T>(_ value: @autoclosure () throws(EvaluationError) -> T) throws(CommandError) -> T {
        do {
            return try value()
        } catch {
            throw .failure(error.description)
        }
    }

    /// Runs `body`, turning an audio error into a `CommandError.failure` naming the file.
    private func loading<T>(_ body: () throws -> T) throws(CommandError) -> T {
        do {
            return try body()
        } catch let error as SpeakerIOError {
            throw .failure(error.description)
        } catch {
            throw .failure("\(error)")
        }
    }
}

/// The folder that receives the SVG plots: made (if missing) before the run, so an unusable
/// destination fails early; written only after every meeting has been scored.
private struct PlotFolder {
    let path: String

    init(path: String) throws(CommandError) {
        self.path = path
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw .failure("\(path): not a folder (--plots needs a folder)") }
        } else {
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            } catch {
                throw .failure("\(path): cannot create the folder")
            }
        }
        guard FileManager.default.isWritableFile(atPath: path) else { throw .failure("\(path): not writable") }
    }

    /// Writes `<name>.svg` for each plot, each file whole or not at all.
    func write(_ plots: [(name: String, svg: String)]) throws(CommandError) {
        for (name, svg) in plots {
            let file = try AtomicFile(path: (path as NSString).appendingPathComponent(name + ".svg"))
            try file.commit(svg)
        }
    }
}

/// A progress bar on standard error while meetings are evaluated, drawn only on a terminal:
/// `eval [#########...........]  45%  dev-003 · chime`. Safe from the threads that evaluate meetings at
/// once: each reports its own run's fraction, and the bar shows the sum of all.
final class EvalProgress: Sendable {
    private let enabled = Console.errorIsTerminal
    private let total: Double
    private let runsPerMeeting: Int
    private struct State {
        var done: [Int: Double] = [:]
        var shown = ""
    }
    private let state = Mutex(State())

    init(meetings: Int, runsPerMeeting: Int) {
        self.runsPerMeeting = max(1, runsPerMeeting)
        total = Double(max(1, meetings * self.runsPerMeeting))
    }

    /// Shows run `run` of meeting `meeting` (both from 0) at `fraction` done.
    func show(meeting: Int, run: Int, fraction: Double, label: String) {
        guard enabled else { return }
        let line: String? = state.withLock { state in
            state.done[meeting] = Double(run) + min(max(fraction, 0), 1)
            let done = state.done.values.reduce(0, +) / total
            let width = 24
            let filled = Int((done * Double(width)).rounded(.down))
            let percent = Int((done * 100).rounded(.down))
            let line = "eval [" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
                + "] " + String(percent).leftPadded(to: 3) + "%  " + label
            guard line != state.shown else { return nil }
            state.shown = line
            return line
        }
        if let line { try? BufferedOutput.write("\r\u{1B}[2K" + line, to: STDERR_FILENO) }
    }

    /// Erases the bar.
    func clear() {
        guard enabled else { return }
        let wasShown = state.withLock { state in
            defer { state.shown = "" }
            return !state.shown.isEmpty
        }
        if wasShown { try? BufferedOutput.write("\r\u{1B}[2K", to: STDERR_FILENO) }
    }
}

extension String {
    /// The string with spaces before it up to `width` characters.
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
