import Foundation
import SpeakerCore

/// `Benchmarks`: throughput of the engine on realistic meeting audio. Release builds only.
@main
enum BenchmarkTool {
    static func main() {
        do {
            let options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
            if let probe = options.memoryProbe {
                try MemoryScenario.probe(from: probe.from, to: probe.to, options: options)
                return
            }
            try run(options)
        } catch {
            FileHandle.standardError.write(Data("Benchmarks: \(error)\n".utf8))
            exit(1)
        }
    }

    static var buildConfiguration: String {
        #if DEBUG
        "debug"
        #else
        "release"
        #endif
    }

    static func run(_ options: Options) throws {
        #if DEBUG
        let warning = """
            ************************************************************************
            *  WARNING: this is a DEBUG build. Its figures are 10-100× too slow and *
            *  mean nothing. Run: swift run -c release Benchmarks                   *
            ************************************************************************

            """
        FileHandle.standardError.write(Data(warning.utf8))
        guard options.allowDebug else {
            FileHandle.standardError.write(Data("Benchmarks: refusing to run a debug build (--allow-debug to insist)\n".utf8))
            exit(2)
        }
        #endif
        guard let fixtures = options.fixtures ?? AudioPool.locateFixtures() else {
            throw BenchmarkError("cannot find Fixtures/meetings; run from the package directory or pass --fixtures DIR")
        }
        let machine = MachineInfo.current(build: buildConfiguration)
        var report = BenchmarkReport(machine: machine, options: options.summary)
        print("ActiveSpeaker benchmarks")
        print("machine: \(machine.cpu), \(machine.logicalCores) logical cores, \(machine.memoryGiB) GiB, \(machine.kernel)"
            + (machine.caches.map { "; caches \($0)" } ?? ""))
        print("date: \(machine.date)   build: \(machine.build), \(machine.compiler)"
            + (machine.revision.map { "   revision: \($0)" } ?? ""))
        print("runs: \(options.runs) measured per configuration after a warm-up\(options.quick ? " (--quick)" : "")")
        let pool = try AudioPool(fixtures: fixtures)
        print("audio: \(pool.tracks.count) fixture tracks, \(Format.number(pool.seconds)) s, from \(fixtures)")
        // Plans are made on first use: make them now, so the line says where they came from.
        FFTWisdom.prepare()
        print(FFTWisdom.description)

        let jsonPath = options.jsonPath ?? defaultJSONPath(fixtures: fixtures)
        for scenario in options.scenarios {
            print("")
            let started = Probe.wallNanoseconds()
            let load = loadAverage()
            var result: ScenarioResult
            switch scenario {
            case 1: result = try AnalysisScenario.run(pool: pool, options: options)
            case 2: result = try LevelScenario.run(pool: pool, options: options)
            case 3: result = try OpusScenario.run(pool: pool, options: options)
            case 4: result = try FilesScenario.run(pool: pool, options: options)
            case 5: result = try MemoryScenario.run(options: options, fixtures: fixtures)
            default: result = try ScalingScenario.run(pool: pool, options: options)
            }
            result.loadAverage = load
            result.seconds = Double(Probe.wallNanoseconds() - started) / 1e9
            print(render(result))
            report.scenarios.append(result)
            try write(report, to: jsonPath)
            if let markdownPath = options.markdownPath { try writeText(markdown(report), to: markdownPath) }
        }
        print("")
        print("JSON: \(jsonPath)")
        if let markdownPath = options.markdownPath { print("Markdown: \(markdownPath)") }
    }

    static func render(_ result: ScenarioResult) -> String {
        var lines = ["[\(result.id)] \(result.title)" + (result.status == "measured" ? "" : "  (\(result.status))")]
        if !result.table.isEmpty && result.table.count > 1 { lines.append(Format.table(result.table)) }
        lines += result.notes.map { "  " + $0 }
        var footer: [String] = []
        if let checksum = result.checksum { footer.append("checksum \(checksum)") }
        if let seconds = result.seconds { footer.append("\(Format.number(seconds, decimals: 1)) s") }
        if let load = result.loadAverage { footer.append("load average at start \(Format.number(load, decimals: 2))") }
        if !footer.isEmpty { lines.append("  " + footer.joined(separator: "; ")) }
        return lines.joined(separator: "\n")
    }

    /// The report as Markdown: the machine, then per scenario a heading, its table and notes.
    static func markdown(_ report: BenchmarkReport) -> String {
        let machine = report.machine
        var text = [
            "Machine: \(machine.cpu), \(machine.logicalCores) logical cores, \(machine.memoryGiB) GiB, \(machine.kernel)"
                + (machine.caches.map { " (caches \($0))" } ?? "") + "; "
                + "\(machine.date); \(machine.build) build, \(machine.compiler)"
                + (machine.revision.map { ", revision \($0)" } ?? "") + "; runs per configuration: \(report.options["runs"] ?? "?").",
            "",
        ]
        for result in report.scenarios {
            text.append("#### \(result.id). \(result.title)" + (result.status == "measured" ? "" : " (\(result.status))"))
            text.append("")
            if result.table.count > 1 {
                text.append(Format.markdown(result.table))
                text.append("")
            }
            for note in result.notes { text.append("- " + note) }
            var footer: [String] = []
            if let checksum = result.checksum { footer.append("checksum `\(checksum)`") }
            if let load = result.loadAverage { footer.append("load average at start \(Format.number(load, decimals: 2))") }
            if !footer.isEmpty { text.append("- " + footer.joined(separator: "; ")) }
            text.append("")
        }
        return text.joined(separator: "\n")
    }

    static func writeText(_ text: String, to path: String) throws {
        let temporary = path + ".partial"
        try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
        if rename(temporary, path) != 0 { throw BenchmarkError("cannot write \(path)") }
    }

    /// `.build/benchmarks.json` in the package (git ignores `.build/`), else the temporary directory.
    static func defaultJSONPath(fixtures: String) -> String {
        let root = ((fixtures as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent
        if FileManager.default.fileExists(atPath: root + "/Package.swift") { return root + "/.build/benchmarks.json" }
        return NSTemporaryDirectory() + "/activespeaker-benchmarks.json"
    }

    static func write(_ report: BenchmarkReport, to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        let data = try encoder.encode(report)
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        // Write beside and rename, so a reader never sees half a file.
        let temporary = path + ".partial"
        try data.write(to: URL(fileURLWithPath: temporary))
        if rename(temporary, path) != 0 { throw BenchmarkError("cannot write \(path)") }
    }
}
