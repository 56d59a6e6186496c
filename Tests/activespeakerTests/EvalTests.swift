import Foundation
import FoundationXML
import SpeakerEval
import Testing
import TestSupport

/// `activespeaker eval` end to end on the labelled meetings of `Fixtures/meetings/`.
@Suite struct EvalTests {
    static let meetings = FixturePaths.file("meetings")

    /// The JSON document of a run, parsed.
    static func report(_ arguments: [String]) throws -> [String: Any] {
        let result = try CLI.run(["eval", "--json"] + arguments)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    static func pooled(_ report: [String: Any], _ system: String) throws -> [String: Any] {
        let pooled = try #require(report["pooled"] as? [[String: Any]])
        return try #require(pooled.first { $0["system"] as? String == system })
    }

    static func vad(_ entry: [String: Any], collar index: Int = 0) throws -> [String: Any] {
        try #require((entry["vad"] as? [[String: Any]])?[index])
    }

    @Test func tableOnTheFixturesShowsEveryMeetingAndThePool() throws {
        let result = try CLI.run(["eval", Self.meetings])
        #expect(result.status == 0, "\(result.stderr)")
        let text = result.stdout
        for needle in ["Voice activity per stream", "collar 0", "collar ±0.25 s", "Dominant speaker", "leak FA"] {
            #expect(text.contains(needle), "\(needle)")
        }
        for meeting in ["m1-clean", "m2-noisy", "m3-music"] {
            #expect(result.lines.filter { $0.hasPrefix(meeting + " ") }.count == 2, "a VAD and a floor row for \(meeting)")
        }
        #expect(result.lines.filter { $0.hasPrefix("pooled ") }.count == 2)
    }

    @Test func jsonOnTheFixturesMatchesTheEngineFiguresMeasuredInTheLibrary() throws {
        let report = try Self.report([Self.meetings])
        #expect(report["systems"] as? [String] == ["hysteresis"])
        #expect((report["meetings"] as? [[String: Any]])?.count == 3)
        let pooled = try Self.pooled(report, "hysteresis")
        #expect(pooled["meetings"] as? Int == 3 && pooled["streams"] as? Int == 9)
        // The same causal engine as FixtureAccuracyTests, so the same floor (see its pooled minimum).
        let vad = try Self.vad(pooled)
        #expect(try #require(vad["f1"] as? Double) >= 0.91)
        // Every frame of every stream: 3 streams × 25 s, 4 × 25 s and 2 × 20 s of 10 ms frames.
        let frames = try #require(vad["frames"] as? Int)
        #expect(frames == 21_500)
        let collar = try Self.vad(pooled, collar: 1)
        #expect(collar["collar"] as? Double == 0.25)
        #expect(try #require(collar["f1"] as? Double) > (vad["f1"] as! Double))
        let floor = try #require(pooled["floor"] as? [String: Any])
        #expect(try #require(floor["accuracy"] as? Double) >= 0.94)
        #expect(floor["changes"] as? Int == 18)
    }

    @Test func policiesRunSideBySide() throws {
        let all = ["hysteresis", "volfin-cohen", "livekit", "chime", "loudest"]
        let report = try Self.report(["--policies", all.joined(separator: ","), FixturePaths.file("meetings/m3-music")])
        #expect(report["systems"] as? [String] == all)
        let floors = try all.map { try #require(try Self.pooled(report, $0)["floor"] as? [String: Any]) }
        // The floor policy does not change voice activity, only the floor.
        let f1s = try all.map { try Self.vad(try Self.pooled(report, $0))["f1"] as? Double }
        #expect(Set(f1s).count == 1)
        #expect(Set(floors.map { $0["switches"] as? Int }).count > 1, "the policies decide differently")
        // volfin-cohen never names nobody: it fails every nobody stretch (m3-music has 3.5 s of hold music).
        #expect(floors[1]["nobodyAccuracy"] as? Double == 0)
    }

    @Test func policyOptionSelectsOne() throws {
        let report = try Self.report(["--policy", "chime", FixturePaths.file("meetings/m3-music")])
        #expect(report["systems"] as? [String] == ["chime"])
    }

    @Test func systemRTTMEqualToTheReferenceScoresPerfectly() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let oracle = directory.path("oracle")
        try FileManager.default.createDirectory(atPath: oracle, withIntermediateDirectories: true)
        for meeting in ["m1-clean", "m2-noisy", "m3-music"] {
            let folder = FixturePaths.file("meetings/\(meeting)")
            try FileManager.default.copyItem(atPath: folder + "/speech.rttm", toPath: oracle + "/\(meeting).rttm")
            try FileManager.default.copyItem(atPath: folder + "/floor.rttm", toPath: oracle + "/\(meeting).floor.rttm")
        }
        let report = try Self.report(["--system-rttm", oracle, Self.meetings])
        #expect(report["systems"] as? [String] == ["oracle"], "only the given system: the engine is not run")
        let pooled = try Self.pooled(report, "oracle")
        let vad = try Self.vad(pooled)
        #expect(vad["f1"] as? Double == 1 && vad["falseAlarmRate"] as? Double == 0)
        #expect(vad["leakedFalseAlarms"] as? Int == 0)
        let floor = try #require(pooled["floor"] as? [String: Any])
        #expect(floor["accuracy"] as? Double == 1 && floor["nobodyAccuracy"] as? Double == 1)
        #expect(floor["missed"] as? Int == 0 && floor["falseSwitches"] as? Int == 0)
        #expect(floor["medianLatency"] as? Double == 0)
    }

    @Test func uemLimitsTheScoredTime() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let uem = directory.path("scored.uem")
        try Data("m3-music 1 0.00 10.00\nm3-music 1 15.00 20.00\n".utf8).write(to: URL(fileURLWithPath: uem))
        let report = try Self.report(["--uem", uem, FixturePaths.file("meetings/m3-music")])
        let meeting = try #require((report["meetings"] as? [[String: Any]])?.first)
        #expect(abs(try #require(meeting["duration"] as? Double) - 15) < 1e-9)
        let vad = try Self.vad(try Self.pooled(report, "hysteresis"))
        #expect(vad["frames"] as? Int == 2 * 1500)
    }

    @Test func plotsAreWrittenPerMeeting() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let plots = directory.path("plots/new")
        let result = try CLI.run(["eval", "--policies", "hysteresis,volfin-cohen", "--plots", plots, Self.meetings])
        #expect(result.status == 0, "\(result.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: plots).sorted()
        #expect(names == ["m1-clean.svg", "m2-noisy.svg", "m3-music.svg"])
        let svg = try String(contentsOfFile: plots + "/m2-noisy.svg", encoding: .utf8)
        #expect(XMLParser(data: Data(svg.utf8)).parse())
        for lane in ["alice", "bob", "carol", "dave", "reference", "hysteresis", "volfin-cohen", "floor (dominant speaker)"] {
            #expect(svg.contains(">\(lane)<") || svg.contains(lane), "\(lane)")
        }
    }

    @Test func helpFitsEightyColumns() throws {
        let result = try CLI.run(["eval", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("USAGE: activespeaker eval [options] DATASET"))
        for option in ["--policy NAME", "--policies", "--system-rttm DIR", "--uem FILE", "--json", "--plots DIR"] {
            #expect(result.stdout.contains(option), "documents \(option)")
        }
        let long = result.lines.filter { $0.count > 80 }
        #expect(long.isEmpty, "\(long)")
    }

    @Test func detectTakesAPolicy() throws {
        let files = ["alice", "bob"].map { FixturePaths.file("meetings/m3-music/\($0).flac") }
        let ours = try CLI.run(["detect"] + files)
        let loudest = try CLI.run(["detect", "--policy", "loudest"] + files)
        #expect(ours.status == 0 && loudest.status == 0)
        let dominant = { (result: CLI.Result) in result.lines.filter { $0.contains("\"type\":\"dominant\"") } }
        #expect(dominant(ours) != dominant(loudest))
        let speech = { (result: CLI.Result) in result.lines.filter { $0.contains("\"type\":\"speech\"") } }
        #expect(speech(ours) == speech(loudest), "the policy changes the floor only")
        let config = try CLI.run(["detect", "--config", "selection.policy=loudest"] + files)
        #expect(config.stdout == loudest.stdout)
    }
}

/// `activespeaker eval` refusing bad datasets (exit 1) and bad command lines (exit 64), with one clear
/// line on standard error and nothing on standard output.
@Suite struct EvalErrorTests {
    /// A dataset with one meeting `m` of two noise streams and a speech reference.
    static func dataset(in directory: TemporaryDirectory, speech: String? = "SPEAKER m 1 0.5 1.0 <NA> <NA> alice <NA> <NA>\n")
        throws -> (dataset: String, meeting: String)
    {
        let meeting = directory.url.appendingPathComponent("data/m")
        try FileManager.default.createDirectory(at: meeting, withIntermediateDirectories: true)
        for name in ["alice", "bob"] {
            try TestAudio.writeWAV(
                [Synthesis.noise(seconds: 2, levelDBFS: -50, seed: 3)], to: meeting.appendingPathComponent("\(name).wav").path)
        }
        if let speech { try Data(speech.utf8).write(to: meeting.appendingPathComponent("speech.rttm")) }
        return (directory.path("data"), meeting.path)
    }

    static func expectFailure(_ arguments: [String], status: Int32, mentions: String...) throws {
        let result = try CLI.run(["eval"] + arguments)
        #expect(result.status == status, "\(arguments): \(result.stderr)")
        #expect(result.stdout.isEmpty, "nothing on standard output")
        #expect(result.errorLines.count == 1, "one line: \(result.stderr)")
        for text in mentions { #expect(result.stderr.contains(text), "\(text) in: \(result.stderr)") }
    }

    @Test func aGoodSmallDatasetRunsWithoutFloor() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (dataset, _) = try Self.dataset(in: directory)
        let result = try CLI.run(["eval", dataset])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Voice activity"))
        #expect(!result.stdout.contains("Dominant speaker"), "no floor.rttm: no floor table")
    }

    @Test func missingAndEmptyDatasets() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try Self.expectFailure([directory.path("nowhere")], status: 1, mentions: "nowhere: no such file or folder")
        try Self.expectFailure([directory.path(".")], status: 1, mentions: "no meetings found")
        try Data("x".utf8).write(to: URL(fileURLWithPath: directory.path("file.txt")))
        try Self.expectFailure([directory.path("file.txt")], status: 1, mentions: "file.txt: not a folder")
    }

    @Test func missingOrBadReferences() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (dataset, meeting) = try Self.dataset(in: directory, speech: nil)
        try Self.expectFailure([dataset], status: 1, mentions: "\(meeting): missing speech.rttm")
        try Data("SPEAKER m 1 0.5 <NA> <NA> <NA> alice <NA> <NA>\n".utf8).write(
            to: URL(fileURLWithPath: meeting + "/speech.rttm"))
        try Self.expectFailure([dataset], status: 1, mentions: "speech.rttm: malformed: line 1")
        try Data("SPEAKER m 1 0.5 1.0 <NA> <NA> carol <NA> <NA>\n".utf8).write(
            to: URL(fileURLWithPath: meeting + "/speech.rttm"))
        try Self.expectFailure([dataset], status: 1, mentions: "names stream 'carol'")
        try Data("SPEAKER m 1 0.5 1.0 <NA> <NA> alice <NA> <NA>\n".utf8).write(
            to: URL(fileURLWithPath: meeting + "/speech.rttm"))
        try Data("SPEAKER m 1 0.5 1.0 <NA> <NA> zed <NA> <NA>\n".utf8).write(to: URL(fileURLWithPath: meeting + "/floor.rttm"))
        try Self.expectFailure([dataset], status: 1, mentions: "floor.rttm: names stream 'zed'")
    }

    @Test func badAudioIsNamed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (dataset, meeting) = try Self.dataset(in: directory)
        try Data("not audio\n".utf8).write(to: URL(fileURLWithPath: meeting + "/carol.wav"))
        try Self.expectFailure([dataset, "--plots", directory.path("plots")], status: 1, mentions: "carol.wav: ")
        let plots = (try? FileManager.default.contentsOfDirectory(atPath: directory.path("plots"))) ?? []
        #expect(plots.isEmpty, "no plots")
    }

    @Test func systemOutputsAndRegionsMustCoverEveryMeeting() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (dataset, _) = try Self.dataset(in: directory)
        let system = directory.path("sys")
        try FileManager.default.createDirectory(atPath: system, withIntermediateDirectories: true)
        try Self.expectFailure(["--system-rttm", system, dataset], status: 1, mentions: "sys/m.rttm: missing system output")
        try Self.expectFailure(["--system-rttm", directory.path("none"), dataset], status: 1, mentions: "none: no such file")
        let uem = directory.path("x.uem")
        try Data("other 1 0 1\n".utf8).write(to: URL(fileURLWithPath: uem))
        try Self.expectFailure(["--uem", uem, dataset], status: 1, mentions: "x.uem: no scored region for meeting 'm'")
    }

    @Test func commandLineMistakes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (dataset, _) = try Self.dataset(in: directory)
        try Self.expectFailure([], status: 64, mentions: "no DATASET given")
        try Self.expectFailure([dataset, dataset], status: 64, mentions: "one DATASET expected")
        try Self.expectFailure(["--policy", "loudest", "--policies", "chime", dataset], status: 64, mentions: "not both")
        try Self.expectFailure(["--policy", "zoom", dataset], status: 64, mentions: "unknown policy 'zoom'", "volfin-cohen")
        try Self.expectFailure(["--policies", "chime,chime", dataset], status: 64, mentions: "given twice")
        try Self.expectFailure(["--config", "vad.nothing=1", dataset], status: 64, mentions: "unknown key")
        let detect = try CLI.run(["detect", "--policy", "zoom", "x.wav"])
        #expect(detect.status == 64 && detect.stderr.contains("unknown policy 'zoom'"))
    }
}

/// `eval --jobs`: meetings at once, same results.
@Suite struct EvalJobsTests {
    @Test func resultsDoNotDependOnTheJobs() throws {
        let meetings = FixturePaths.fixtures.appendingPathComponent("meetings").path
        let one = try CLI.run(["eval", "--jobs", "1", "--policies", "hysteresis,chime", "--json", meetings])
        let three = try CLI.run(["eval", "--jobs", "3", "--policies", "hysteresis,chime", "--json", meetings])
        #expect(one.status == 0 && three.status == 0, "\(one.stderr)\(three.stderr)")
        #expect(!one.stdout.isEmpty && one.stdout == three.stdout)
    }

    @Test(arguments: ["0", "x", "257"])
    func badJobsAreUsageErrors(jobs: String) throws {
        let result = try CLI.run(["eval", "--jobs", jobs, FixturePaths.fixtures.appendingPathComponent("meetings").path])
        #expect(result.status == 64 && result.stderr.contains("--jobs"), "\(result.stderr)")
    }
}
