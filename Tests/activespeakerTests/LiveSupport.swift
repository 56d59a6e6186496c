import Foundation
import Testing
import TestSupport

/// Runs `activespeaker live`/`listen` and real sender programs as a user would: with environment
/// variables, in the background, stopped by a signal, all bounded in time.
enum LiveRunner {
    /// A running `activespeaker` process whose output goes to files.
    final class Running: @unchecked Sendable {
        // @unchecked Sendable: the Process is only started, signalled and waited for.
        let process: Process
        let directory: TemporaryDirectory

        init(_ arguments: [String], environment: [String: String] = [:]) throws {
            let executable = try #require(CLI.executable, "activespeaker not found next to the test runner")
            directory = try TemporaryDirectory()
            _ = FileManager.default.createFile(atPath: directory.path("stdout"), contents: nil)
            _ = FileManager.default.createFile(atPath: directory.path("stderr"), contents: nil)
            process = Process()
            process.executableURL = executable
            process.arguments = arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: directory.path("stdout")))
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: directory.path("stderr")))
            try process.run()
        }

        /// Standard output so far.
        var stdout: String { (try? String(contentsOfFile: directory.path("stdout"), encoding: .utf8)) ?? "" }

        /// Waits until standard output contains `text`, at most `timeout` seconds; returns whether it did.
        func waitForOutput(_ text: String, timeout: Double) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if stdout.contains(text) { return true }
                if !process.isRunning { return stdout.contains(text) }
                Thread.sleep(forTimeInterval: 0.02)
            }
            return false
        }

        /// Standard error so far.
        var stderr: String { (try? String(contentsOfFile: directory.path("stderr"), encoding: .utf8)) ?? "" }

        /// The UDP addresses `listen` says it receives on (its first line on standard error), waiting
        /// for that line at most `timeout` seconds; empty if it did not come.
        func receivingAddresses(timeout: Double = Waiting.defaultTimeout) -> [String] {
            let prefix = "activespeaker: receiving RTP on "
            var line: Substring?
            _ = Waiting.until(timeout: timeout) {
                line = stderr.split(separator: "\n").first { $0.hasPrefix(prefix) }
                return line != nil || !process.isRunning
            }
            return line.map { $0.dropFirst(prefix.count).components(separatedBy: ", ") } ?? []
        }

        /// Sends SIGINT, as Ctrl-C does.
        func interrupt() { process.interrupt() }

        /// Waits for the process to end, at most `timeout` seconds (then kills it and fails).
        func finish(timeout: Double) throws -> CLI.Result {
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
            if process.isRunning {
                process.terminate()
                process.waitUntilExit()
                Issue.record("activespeaker did not stop within \(timeout) s")
            }
            process.waitUntilExit()
            defer { directory.remove() }
            return CLI.Result(
                status: process.terminationStatus,
                stdout: try String(contentsOfFile: directory.path("stdout"), encoding: .utf8),
                stderr: try String(contentsOfFile: directory.path("stderr"), encoding: .utf8))
        }
    }

    /// Runs to the end (bounded by `timeout`).
    static func run(_ arguments: [String], environment: [String: String] = [:], timeout: Double = 60) throws -> CLI.Result {
        try Running(arguments, environment: environment).finish(timeout: timeout)
    }

    /// Starts a helper program (a sender) found on PATH; it is killed if still running at `kill()`.
    final class Helper: @unchecked Sendable {
        // @unchecked Sendable: the Process is only started, waited for and terminated.
        let process = Process()

        init(_ tool: String, _ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [tool] + arguments
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
        }

        func wait(timeout: Double) -> Int32? {
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
            let timedOut = process.isRunning
            if timedOut { process.terminate() }
            // Always: Foundation's Process (swift-corelibs) keeps a run-loop source pointing at the
            // object until waitUntilExit clears it; releasing it earlier can leave that source behind.
            process.waitUntilExit()
            return timedOut ? nil : process.terminationStatus
        }
    }

    /// Runs curl (an HTTP request as a user makes it) and returns its `%{http_code}` (000 when nothing answered).
    static func httpStatus(_ arguments: [String]) throws -> String {
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        curl.arguments = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"] + arguments
        let out = Pipe()
        curl.standardOutput = out
        curl.standardError = FileHandle.nullDevice
        try curl.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        curl.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// The repository's `tools/` directory.
    static let tools: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("tools")

    /// True if `tool` is on PATH.
    /// Whether a test that needs `tools` on PATH runs: when they are there, or always under
    /// tools/test.sh (`ACTIVESPEAKER_ALL_TESTS=1`), where a missing tool must fail the test (its
    /// `#require`) rather than skip it. A plain `swift test` skips it with the trait's reason.
    static func canRun(needing tools: String...) -> Bool {
        runsEverything || tools.allSatisfy(has)
    }

    /// Set by tools/test.sh: every test runs, none is skipped for a missing tool or binary.
    static var runsEverything: Bool { ProcessInfo.processInfo.environment["ACTIVESPEAKER_ALL_TESTS"] == "1" }

    static func has(_ tool: String) -> Bool {
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)")
        }
    }
}

/// Lines of `live`/`listen` output: the detect schema (checked by `DetectOutput`) plus `device`,
/// `stream` and `stats` lines, checked here.
struct LiveOutputLines {
    var events: DetectOutput
    var device: [[String: Any]] = []
    var stream: [[String: Any]] = []
    var stats: [String: Any]?

    init(_ lines: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        var detect: [String] = []
        let time = #"-?\d+\.\d{3}"#
        let patterns = [
            "device": #"^\{"t":TIME,"type":"device","event":"(opened|added|removed|failed)","device":"[^"]*"(,.*)?\}$"#,
            "stream": #"^\{"t":TIME,"type":"stream",("event":"added","stream":"[^"]*","ssrc":"0x[0-9a-f]{8}"|"event":"removed","stream":"[^"]*","ssrc":"0x[0-9a-f]{8}","lastPacket":TIME)\}$"#,
            "stats": #"^\{"type":"stats",.*\}$"#,
        ].mapValues { try! NSRegularExpression(pattern: $0.replacingOccurrences(of: "TIME", with: time)) }
        for line in lines {
            let object = try #require(
                try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)",
                sourceLocation: sourceLocation)
            let type = object["type"] as? String ?? ""
            if let pattern = patterns[type] {
                try #require(
                    pattern.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil,
                    "line does not follow the \(type) schema: \(line)", sourceLocation: sourceLocation)
                switch type {
                case "device": device.append(object)
                case "stream": stream.append(object)
                default:
                    try #require(stats == nil, "two stats lines", sourceLocation: sourceLocation)
                    stats = object
                }
            } else {
                try #require(stats == nil, "a line after the stats line: \(line)", sourceLocation: sourceLocation)
                detect.append(line)
            }
        }
        events = try DetectOutput(lines: detect, sourceLocation: sourceLocation)
    }

    /// The non-null dominant speakers in order.
    var dominantSequence: [String] {
        events.dominantEvents.compactMap { if case .dominant(_, let stream) = $0 { stream } else { nil } }
    }
}
